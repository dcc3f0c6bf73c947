//! History that survives restarts (docs/history.md): every event of the bus, the failures
//! among them, and tool calls (server, tool, start, duration, outcome — never arguments or
//! results), in one SQLite file with retention. The app writes it; the CLI and the
//! diagnostic bundle can read it.
//!
//! Architecture invariant: recording never blocks the caller. `record` and `record_call`
//! hand the row to one writer thread over an unbounded channel; the writer batches rows into
//! transactions and prunes. Everything is scrubbed with the configured `Redactor` before it is
//! written, so the file holds nothing that events may not carry.

mod query;
mod schema;
mod writer;

#[cfg(test)]
mod tests;

pub use query::{PastCall, PastEvent, PastFailure, PastHostCall, Query, QueryError};
pub use schema::SCHEMA_VERSION;

use crate::events::{CallOutcome, Event, rfc3339};
use crate::redact::Redactor;
use rusqlite::Connection;
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::broadcast::{self, error::RecvError};

/// Rows older than this are deleted.
pub const MAX_AGE: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// At most this many rows per table; the oldest go first.
pub const MAX_ROWS: u64 = 100_000;
/// How long opening waits for another connection's write lock before it gives up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// The environment variable that points at another history file (tests, a second profile).
pub const HISTORY_ENV: &str = "LIFELINE_HISTORY";

/// `LIFELINE_HISTORY` when set and non-empty, else `<data dir>/lifeline/history.db`
/// (`~/.local/share/lifeline/history.db` on Linux); `None` when the platform has no data dir.
pub fn resolve_path() -> Option<PathBuf> {
    resolve(
        std::env::var_os(HISTORY_ENV),
        dirs::data_dir().map(|d| d.join("lifeline").join("history.db")),
    )
}

fn resolve(env: Option<OsString>, default: Option<PathBuf>) -> Option<PathBuf> {
    env.filter(|p| !p.is_empty()).map(PathBuf::from).or(default)
}

/// How much history is kept: whichever limit is reached first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub max_age: Duration,
    pub max_rows: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_age: MAX_AGE,
            max_rows: MAX_ROWS,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub retention: Retention,
    /// Scrubs every string before it is written (the config's secrets, token shapes).
    pub redactor: Redactor,
    /// `BUSY_TIMEOUT` when `None`.
    pub busy_timeout: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// The file was damaged and moved aside; a new one was started.
    Corrupt,
    /// Another instance holds the file; history is in memory for this run.
    Locked,
    /// The file could not be opened or created; history is in memory for this run.
    Unavailable,
}

impl NoticeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Corrupt => "history_corrupt",
            NoticeKind::Locked => "history_locked",
            NoticeKind::Unavailable => "history_unavailable",
        }
    }
}

/// Something the user should be told about the history file, in a sentence that says what
/// happened and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub kind: NoticeKind,
    pub message: String,
}

/// A finished tool call as the caller saw it. Never the arguments or the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    pub server: String,
    pub tool: String,
    pub started_at: SystemTime,
    pub duration: Duration,
    pub outcome: CallOutcome,
    /// The error's kind (`timeout`, `transport`, …) when `outcome` is `Error`.
    pub error_kind: Option<String>,
}

impl CallRecord {
    /// What the history keeps of a call that answered `result`: its outcome (a result
    /// with `isError` is a tool error) and, for an error, its kind; never the arguments or
    /// the result.
    pub fn of(
        server: &str,
        tool: &str,
        started_at: SystemTime,
        duration: Duration,
        result: &Result<serde_json::Value, crate::Error>,
    ) -> CallRecord {
        let (outcome, error_kind) = match result {
            Ok(v) if v.get("isError").and_then(serde_json::Value::as_bool) == Some(true) => {
                (CallOutcome::ToolError, None)
            }
            Ok(_) => (CallOutcome::Ok, None),
            Err(e) => (CallOutcome::Error, Some(e.kind().as_str().to_owned())),
        };
        CallRecord {
            server: server.to_owned(),
            tool: tool.to_owned(),
            started_at,
            duration,
            outcome,
            error_kind,
        }
    }
}

/// This process's run: its id in the file and when it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Run {
    pub id: i64,
    pub started_at: String,
}

/// A handle on the history; cheap to clone. Queries block on SQLite: call them from
/// `spawn_blocking` in async code.
#[derive(Clone)]
pub struct History {
    shared: Arc<Shared>,
}

struct Shared {
    conn: Arc<Mutex<Connection>>,
    run: Run,
    tx: Mutex<Option<mpsc::Sender<writer::Message>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The highest `seq` of an event the writer has committed (0 before the first), so a
    /// shutdown that cannot wait longer can say how many of the last events are not in the
    /// file.
    written: Arc<AtomicU64>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn epoch_ms(t: SystemTime) -> i64 {
    let ms = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis();
    i64::try_from(ms).unwrap_or(i64::MAX)
}

impl History {
    /// Opens (or creates) the file at `path`, prunes it and starts a run. A corrupt file is
    /// moved aside; a locked or unusable one leaves this run's history in memory. The notice
    /// says which.
    pub fn open(path: &Path, options: Options) -> (History, Option<Notice>) {
        let now = SystemTime::now();
        let busy = options.busy_timeout.unwrap_or(BUSY_TIMEOUT);
        let (conn, notice) = schema::open_or_recover(path, busy, now);
        (History::start(conn, options, now), notice)
    }

    /// Opens an existing file only to read it, while the app may be writing it (the CLI, the
    /// diagnostic bundle): no run is started, nothing is pruned or moved aside, records are
    /// ignored, and every run in the file counts as earlier (`run().id` is 0).
    pub fn open_read_only(path: &Path) -> Result<History, QueryError> {
        let conn = schema::open_read_only(path, BUSY_TIMEOUT)?;
        Ok(History {
            shared: Arc::new(Shared {
                conn: Arc::new(Mutex::new(conn)),
                run: Run {
                    id: 0,
                    started_at: String::new(),
                },
                tx: Mutex::new(None),
                writer: Mutex::new(None),
                written: Arc::default(),
            }),
        })
    }

    /// History that lasts as long as the process (tests, and the fallback above).
    pub fn in_memory(options: Options) -> History {
        History::start(schema::open_memory(), options, SystemTime::now())
    }

    fn start(conn: Connection, options: Options, now: SystemTime) -> History {
        if let Err(e) = writer::prune(&conn, &options.retention, now) {
            tracing::warn!("history: pruning at open failed: {e}");
        }
        let started_at = rfc3339(now);
        let id = conn
            .execute(
                "INSERT INTO runs (started_at, started_ms) VALUES (?1, ?2)",
                (&started_at, epoch_ms(now)),
            )
            .map(|_| conn.last_insert_rowid())
            .unwrap_or_else(|e| {
                tracing::warn!("history: the run could not be recorded: {e}");
                0
            });
        let run = Run { id, started_at };
        let conn = Arc::new(Mutex::new(conn));
        let written = Arc::new(AtomicU64::new(0));
        let (tx, writer) = writer::spawn(conn.clone(), run.id, options, written.clone());
        History {
            shared: Arc::new(Shared {
                conn,
                run,
                tx: Mutex::new(Some(tx)),
                writer: Mutex::new(writer),
                written,
            }),
        }
    }

    pub fn run(&self) -> &Run {
        &self.shared.run
    }

    /// Queues `event` (and, for a failure, its failure row). Never blocks.
    pub fn record(&self, event: &Event) {
        self.send(writer::Message::Event(Box::new(event.clone())));
    }

    /// Queues one finished tool call. Never blocks.
    pub fn record_call(&self, call: CallRecord) {
        self.send(writer::Message::Call(call));
    }

    /// Scrubs `more`'s secrets too from everything written from now on (the config was
    /// edited and may hold new ones). Secrets are only ever added.
    pub fn add_secrets(&self, more: &Redactor) {
        self.send(writer::Message::Secrets(more.clone()));
    }

    fn send(&self, message: writer::Message) {
        if let Some(tx) = lock(&self.shared.tx).as_ref() {
            let _ = tx.send(message);
        }
    }

    /// The highest `seq` of this run's events that is in the file (0 before the first).
    pub fn written_seq(&self) -> u64 {
        self.shared.written.load(Ordering::Acquire)
    }

    /// Blocks until everything queued before it is written.
    pub fn flush(&self) {
        let (done, wait) = mpsc::channel();
        self.send(writer::Message::Flush(done));
        let _ = wait.recv();
    }

    /// Writes what is queued, then folds the WAL into the file, syncing it: a power loss
    /// after this (the machine went to sleep and its battery ran out) loses nothing written
    /// before. Blocks; the writer goes on.
    pub fn checkpoint(&self) {
        self.flush();
        let done =
            lock(&self.shared.conn).query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        match done {
            Ok(()) => tracing::debug!("history: checkpointed"),
            Err(e) => tracing::warn!("history: no checkpoint: {e}"),
        }
    }

    /// Writes what is queued and stops the writer; later records are dropped. The WAL is
    /// folded into the file, so a copy of `history.db` alone holds everything. Blocks;
    /// queries still work afterwards.
    pub fn close(&self) {
        let tx = lock(&self.shared.tx).take();
        drop(tx);
        if let Some(writer) = lock(&self.shared.writer).take() {
            let _ = writer.join();
        }
        let checkpoint =
            lock(&self.shared.conn).query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        if let Err(e) = checkpoint {
            tracing::debug!("history: no checkpoint at close: {e}");
        }
    }

    /// Deletes what the retention no longer keeps, as of `now`. Blocks.
    pub fn prune(&self, retention: &Retention, now: SystemTime) -> Result<(), QueryError> {
        writer::prune(&lock(&self.shared.conn), retention, now).map_err(QueryError::from)
    }

    /// Events of earlier runs, newest first.
    pub fn events(&self, query: &Query) -> Result<Vec<PastEvent>, QueryError> {
        query::events(&lock(&self.shared.conn), self.shared.run.id, query)
    }

    /// Failures of earlier runs, newest first.
    pub fn failures(&self, query: &Query) -> Result<Vec<PastFailure>, QueryError> {
        query::failures(&lock(&self.shared.conn), self.shared.run.id, query)
    }

    /// Tool calls of earlier runs, newest first.
    pub fn calls(&self, query: &Query) -> Result<Vec<PastCall>, QueryError> {
        query::calls(&lock(&self.shared.conn), self.shared.run.id, query)
    }

    /// Hosts' calls through the gateway (`host_call` events) of every run since `since`,
    /// oldest first: the Hosts section's last hour, rebuilt at start.
    pub fn host_calls_since(&self, since: SystemTime) -> Result<Vec<PastHostCall>, QueryError> {
        query::host_calls(&lock(&self.shared.conn), epoch_ms(since))
    }

    /// Records every event of `events` until the bus closes. Subscribe before the fleet
    /// starts, so the first events are kept. A recorder that fell behind logs the loss.
    pub async fn record_from(self, mut events: broadcast::Receiver<Event>) {
        loop {
            match events.recv().await {
                Ok(event) => self.record(&event),
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!("history: {n} events were not recorded (the recorder lagged)")
                }
                Err(RecvError::Closed) => return,
            }
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        drop(lock(&self.tx).take());
        if let Some(writer) = lock(&self.writer).take() {
            let _ = writer.join();
        }
    }
}
