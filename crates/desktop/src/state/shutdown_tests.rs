//! Shutdown against a real history file and real supervisors (servers whose command does not
//! exist retire at once): the last event of the run reaches the file with no wait on the
//! drain's bound, and a file that takes nothing more costs the bound and a warning that
//! counts what it lacks.

use super::*;
use crate::source::Source;
use lifeline_core::config;
use lifeline_core::events::StateName;
use lifeline_core::history::{History, Options};
use lifeline_core::supervisor::Snapshot;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast::error::TryRecvError;

const CONFIG: &str = r#"{"mcpServers": {
    "gone": {"command": "/nonexistent/lifeline-app-test"},
    "web": {"url": "http://127.0.0.1:9/mcp", "disabled": true}
}}"#;

/// The app of `CONFIG`, recording into the file at `path`; its writes wait `busy` for
/// another connection's lock.
fn start(path: &Path, busy: Duration) -> AppState {
    let config = config::parse(CONFIG, None, &|_| None).unwrap();
    let path = path.to_owned();
    let source = Source {
        config,
        info: crate::test_support::app_info(),
        fixtures: Vec::new(),
    };
    AppState::start_with_history(source, move |options| {
        let options = Options {
            busy_timeout: Some(busy),
            ..options
        };
        let (history, notice) = History::open(&path, options);
        assert_eq!(notice, None, "the history file opens");
        (history, None)
    })
}

fn retired(s: &Snapshot) -> bool {
    s.state.state == Some(StateName::Retired)
}

/// What this thread logs (the test's runtime runs the shutdown on it), as text.
#[derive(Clone, Default)]
struct Logged(Arc<Mutex<Vec<u8>>>);

impl Write for Logged {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logged {
    type Writer = Logged;
    fn make_writer(&'a self) -> Logged {
        self.clone()
    }
}

impl Logged {
    fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(self.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// The last event on `events` before the bus ended; fails if it has not ended.
fn last_seq(events: &mut tokio::sync::broadcast::Receiver<lifeline_core::events::Event>) -> u64 {
    let mut last = 0;
    loop {
        match events.try_recv() {
            Ok(event) => last = event.seq,
            Err(TryRecvError::Lagged(_)) => {}
            Err(TryRecvError::Closed) => return last,
            Err(TryRecvError::Empty) => panic!("the bus is still open after the shutdown"),
        }
    }
}

/// This run's events in the file, oldest first: (seq, the event's JSON).
fn file_events(path: &PathBuf, run: i64) -> Vec<(u64, serde_json::Value)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut rows = conn
        .prepare("SELECT seq, json FROM events WHERE run = ?1 ORDER BY id")
        .unwrap();
    rows.query_map([run], |r| Ok((r.get::<_, u64>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|row| {
            let (seq, json) = row.unwrap();
            (seq, serde_json::from_str(&json).unwrap())
        })
        .collect()
}

/// The quit the tray's Quit and SIGTERM take (`Core::stop` ends here): every event of the
/// run, the servers' `stopping` last, is in the file, and the shutdown did not wait out
/// `RECORDER_DRAIN` (which would log the warning) — it used to, on every quit, because the
/// hosts keep the bus open after the fleet is gone.
#[tokio::test]
async fn a_quit_records_every_event_to_the_last_without_waiting_for_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let state = start(&path, Duration::from_secs(2));
    state.wait_for("gone", retired).await;
    let mut events = state.events().await.unwrap();
    let logged = Logged::default();
    let _log = logged.capture();

    state.shutdown().await;

    let said = logged.text();
    assert!(
        !said.contains("history:"),
        "the quit waited out the drain: {said}"
    );
    let last = last_seq(&mut events);
    let run = state.history().run().id;
    let recorded = file_events(&path, run);
    let seqs: Vec<u64> = recorded.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(
        seqs,
        (1..=last).collect::<Vec<_>>(),
        "every event, in order"
    );
    let stopping: Vec<&str> = recorded
        .iter()
        .filter(|(_, e)| e["type"] == "state" && e["state"] == "stopping")
        .map(|(_, e)| e["server"].as_str().unwrap())
        .collect();
    assert_eq!(stopping.len(), 2, "each server's stopping: {recorded:?}");
    let (_, final_event) = recorded.last().unwrap();
    assert_eq!(
        (&final_event["type"], &final_event["state"]),
        (&"state".into(), &"stopping".into()),
        "the run's last event: {final_event}"
    );
}

/// A history file that takes nothing more (another connection holds its write lock): the
/// quit ends at `RECORDER_DRAIN` (paused time: no test waits it out), and the warning says
/// how many of the last events the file lacks, counted against the file itself.
#[tokio::test]
async fn a_stuck_history_costs_the_bound_and_the_warning_counts_the_events_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let state = start(&path, Duration::from_secs(3600));
    state.wait_for("gone", retired).await;
    let history = state.history();
    tokio::task::spawn_blocking(move || history.flush())
        .await
        .unwrap();
    let mut events = state.events().await.unwrap();
    let lock = rusqlite::Connection::open(&path).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let logged = Logged::default();
    let _log = logged.capture();

    tokio::time::pause();
    state.shutdown().await;

    let last = last_seq(&mut events);
    let run = state.history().run().id;
    let in_file: u64 = lock
        .query_row(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE run = ?1",
            [run],
            |r| r.get(0),
        )
        .unwrap();
    lock.execute_batch("ROLLBACK").unwrap();
    let lost = last - in_file;
    assert!(
        lost >= 2,
        "both servers' stopping at least: {last} vs {in_file}"
    );
    let said = logged.text();
    let line = format!(
        "history: the last {lost} events (#{}-#{last}) were not recorded: the history file \
         did not take them within 2s",
        in_file + 1
    );
    assert!(said.contains(&line), "wanted {line:?} in: {said}");
}

#[test]
fn the_warning_counts_what_the_file_lacks() {
    let check = |last, written, expect: &str| {
        assert_eq!(unrecorded(last, written, RECORDER_DRAIN), expect);
    };
    check(
        9,
        6,
        "history: the last 3 events (#7-#9) were not recorded: the history file did not \
         take them within 2s",
    );
    check(
        9,
        8,
        "history: the last event (#9) was not recorded: the history file did not take it \
         within 2s",
    );
    check(
        9,
        9,
        "history: every event was recorded, but the file was not closed within 2s",
    );
}
