//! The store against real files in a temporary directory: what goes in comes out of the next
//! run, retention by count and by age, and the files that must not stop the app (garbage,
//! a failed integrity check, a foreign schema version, a file another connection is writing).

use super::*;
use crate::events::Generation;
use crate::events::{EventBody, EventBus, FailureInfo, StateInfo, StateName};
use rusqlite::Connection;
use std::path::PathBuf;

fn options() -> Options {
    Options {
        busy_timeout: Some(Duration::from_millis(100)),
        ..Default::default()
    }
}

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("history.db")
}

fn query(limit: u32) -> Query {
    Query {
        limit,
        ..Default::default()
    }
}

fn failure(kind: &str, message: &str) -> EventBody {
    EventBody::Failure {
        failure: FailureInfo {
            kind: kind.into(),
            message: message.into(),
            generation: Generation(1),
            ..Default::default()
        },
    }
}

fn ready() -> EventBody {
    EventBody::State(StateInfo {
        state: Some(StateName::Ready),
        ..Default::default()
    })
}

fn call(server: &str, outcome: CallOutcome, error_kind: Option<&str>) -> CallRecord {
    CallRecord {
        server: server.into(),
        tool: "echo".into(),
        started_at: UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        duration: Duration::from_millis(42),
        outcome,
        error_kind: error_kind.map(str::to_owned),
    }
}

/// One run that records `bodies` for `server` and closes.
fn run_once(path: &Path, options: Options, events: &[(&str, EventBody)]) -> Run {
    let (history, notice) = History::open(path, options);
    assert_eq!(notice, None);
    let bus = EventBus::new(16);
    for (server, body) in events {
        history.record(&bus.emit(server, Generation(1), body.clone()));
    }
    history.close();
    history.run().clone()
}

#[test]
fn events_failures_and_calls_of_a_run_are_read_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let (history, notice) = History::open(&path, options());
    assert_eq!(notice, None);
    let bus = EventBus::new(16);
    history.record(&bus.emit("a", Generation(1), ready()));
    history.record(&bus.emit("a", Generation(1), failure("timeout", "no answer in 60 s")));
    history.record(&bus.emit("b", Generation(2), ready()));
    history.record_call(call("a", CallOutcome::Ok, None));
    history.record_call(call("a", CallOutcome::Error, Some("timeout")));
    history.flush();
    // The current run is not history yet.
    assert!(history.events(&query(10)).unwrap().is_empty());
    let first = history.run().clone();
    history.close();

    let (history, notice) = History::open(&path, options());
    assert_eq!(notice, None);
    assert!(history.run().id > first.id);
    let events = history.events(&query(10)).unwrap();
    let types: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            (
                e.event["server"].as_str().unwrap(),
                e.event["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(types, [("b", "state"), ("a", "failure"), ("a", "state")]);
    assert!(events.iter().all(|e| e.run == first.id));
    assert_eq!(events[0].run_started_at, first.started_at);
    assert_eq!(events[1].event["failure"]["message"], "no answer in 60 s");
    assert_eq!(events[2].event["seq"], 1);

    let only_a = Query {
        server: Some("a".into()),
        limit: 10,
        ..Default::default()
    };
    assert_eq!(history.events(&only_a).unwrap().len(), 2);
    let failures = history.failures(&only_a).unwrap();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].failure["kind"], "timeout");
    assert_eq!(failures[0].server, "a");

    let calls = history.calls(&only_a).unwrap();
    let shown: Vec<(&str, Option<&str>, i64)> = calls
        .iter()
        .map(|c| (c.outcome.as_str(), c.error_kind.as_deref(), c.duration_ms))
        .collect();
    assert_eq!(shown, [("error", Some("timeout"), 42), ("ok", None, 42)]);
    assert_eq!(calls[0].started_at, "2027-01-15T08:00:00.000Z");
}

#[test]
fn pages_go_back_from_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let bodies: Vec<(&str, EventBody)> = (0..5).map(|_| ("a", ready())).collect();
    run_once(&path, options(), &bodies);
    let (history, _) = History::open(&path, options());
    let page = history.events(&query(2)).unwrap();
    let seqs = |p: &[PastEvent]| -> Vec<u64> {
        p.iter().map(|e| e.event["seq"].as_u64().unwrap()).collect()
    };
    assert_eq!(seqs(&page), [5, 4]);
    let next = Query {
        before: Some(page[1].id),
        limit: 10,
        ..Default::default()
    };
    assert_eq!(seqs(&history.events(&next).unwrap()), [3, 2, 1]);
}

#[test]
fn a_bad_limit_is_refused_with_its_bounds() {
    let history = History::in_memory(options());
    for limit in [0, MAX_LIMIT_PLUS_ONE] {
        let e = history.events(&query(limit)).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("limit must be between 1 and 1000, got {limit}")
        );
    }
}
const MAX_LIMIT_PLUS_ONE: u32 = query::MAX_LIMIT + 1;

#[test]
fn retention_keeps_the_newest_rows_up_to_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let small = Options {
        retention: Retention {
            max_age: MAX_AGE,
            max_rows: 3,
        },
        ..options()
    };
    let bodies: Vec<(&str, EventBody)> = (0..5)
        .map(|n| ("a", failure("transport", &format!("failure {n}"))))
        .collect();
    run_once(&path, small.clone(), &bodies);
    // Pruned when the next run opens the file.
    let (history, _) = History::open(&path, small);
    let messages: Vec<String> = history
        .failures(&query(10))
        .unwrap()
        .iter()
        .map(|f| f.failure["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(messages, ["failure 4", "failure 3", "failure 2"]);
    assert_eq!(history.events(&query(10)).unwrap().len(), 3);
}

#[test]
fn rows_older_than_the_age_limit_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let now = SystemTime::now();
    let old = now - MAX_AGE - Duration::from_secs(60);
    let recent = now - MAX_AGE + Duration::from_secs(3600);
    let (history, _) = History::open(&path, options());
    for (at, seq) in [(old, 1), (recent, 2)] {
        history.record(&Event {
            v: 1,
            seq,
            at: rfc3339(at),
            server: "a".into(),
            generation: Generation(1),
            body: failure("timeout", "late"),
        });
        history.record_call(CallRecord {
            started_at: at,
            ..call("a", CallOutcome::Ok, None)
        });
    }
    history.close();

    let (history, _) = History::open(&path, options());
    let events = history.events(&query(10)).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event["seq"], 2);
    assert_eq!(history.failures(&query(10)).unwrap().len(), 1);
    let calls = history.calls(&query(10)).unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].started_at, rfc3339(recent));

    // The periodic prune, as of a later day, removes the rest.
    history
        .prune(&Retention::default(), now + Duration::from_secs(2 * 3600))
        .unwrap();
    assert!(history.events(&query(10)).unwrap().is_empty());
    assert!(history.calls(&query(10)).unwrap().is_empty());
}

fn assert_moved_aside(dir: &tempfile::TempDir, notice: &Notice, why: &str) {
    assert_eq!(notice.kind, NoticeKind::Corrupt);
    assert!(notice.message.contains(why), "{}", notice.message);
    assert!(notice.message.contains("moved to"), "{}", notice.message);
    let aside: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("history.db.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(notice.message.contains(&aside[0]), "{}", notice.message);
}

#[test]
fn a_file_that_is_not_sqlite_is_moved_aside_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let garbage = b"this is not a database, it is a shopping list: eggs, milk\n".repeat(100);
    std::fs::write(&path, &garbage).unwrap();
    let (history, notice) = History::open(&path, options());
    assert_moved_aside(&dir, &notice.unwrap(), "not a database");
    // The new file works and the old bytes are kept for the curious.
    history.record(&EventBus::new(1).emit("a", Generation(1), ready()));
    history.close();
    let (history, notice) = History::open(&path, options());
    assert_eq!(notice, None);
    assert_eq!(history.events(&query(10)).unwrap().len(), 1);
    let aside = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(".corrupt-"))
        .unwrap();
    assert_eq!(std::fs::read(aside).unwrap(), garbage);
}

#[test]
fn a_damaged_database_fails_its_integrity_check_and_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let bodies: Vec<(&str, EventBody)> = (0..200).map(|_| ("a", ready())).collect();
    run_once(&path, options(), &bodies);
    // Fold the WAL into the file, then overwrite the pages after the header and schema.
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;")
        .unwrap();
    drop(conn);
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 3 * 4096, "{} bytes", bytes.len());
    for b in &mut bytes[2 * 4096..] {
        *b = 0x5a;
    }
    std::fs::write(&path, &bytes).unwrap();
    let (history, notice) = History::open(&path, options());
    let notice = notice.unwrap();
    assert_eq!(notice.kind, NoticeKind::Corrupt, "{}", notice.message);
    assert!(history.events(&query(10)).unwrap().is_empty());
}

#[test]
fn a_schema_version_this_build_cannot_read_is_moved_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE events (id INTEGER PRIMARY KEY); PRAGMA user_version = 99;")
        .unwrap();
    drop(conn);
    let (_history, notice) = History::open(&path, options());
    assert_moved_aside(
        &dir,
        &notice.unwrap(),
        "schema version is 99; this build reads version 1",
    );
}

#[test]
fn a_file_another_connection_is_writing_leaves_this_run_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    run_once(&path, options(), &[("a", ready())]);
    let other = Connection::open(&path).unwrap();
    other
        .execute_batch(
            "BEGIN IMMEDIATE; INSERT INTO runs (started_at, started_ms) VALUES ('x', 0);",
        )
        .unwrap();

    let (history, notice) = History::open(&path, options());
    let notice = notice.unwrap();
    assert_eq!(notice.kind, NoticeKind::Locked);
    assert!(
        notice
            .message
            .contains("in use by another Lifeline instance")
    );
    assert!(notice.message.contains(&path.display().to_string()));
    // It works, in memory: nothing of the file's earlier run, this run's rows are kept.
    assert!(history.events(&query(10)).unwrap().is_empty());
    history.record(&EventBus::new(1).emit("b", Generation(1), ready()));
    history.flush();
    history.close();

    // The file was not touched and is not moved aside.
    other.execute_batch("ROLLBACK").unwrap();
    drop(other);
    assert_eq!(
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains("corrupt")
            })
            .count(),
        0
    );
    let (history, notice) = History::open(&path, options());
    assert_eq!(notice, None);
    let servers: Vec<String> = history
        .events(&query(10))
        .unwrap()
        .iter()
        .map(|e| e.event["server"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(servers, ["a"]);
}

/// `written_seq` says what is in the file, not what was queued: a batch the file refused
/// (another connection holds the write lock past the busy timeout) leaves it where it was.
#[test]
fn written_seq_counts_only_what_the_file_took() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let (history, notice) = History::open(&path, options());
    assert_eq!(notice, None);
    assert_eq!(history.written_seq(), 0);
    let bus = EventBus::new(16);
    history.record(&bus.emit("a", Generation(1), ready()));
    history.record(&bus.emit("a", Generation(1), ready()));
    history.flush();
    assert_eq!(history.written_seq(), 2);

    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    history.record(&bus.emit("a", Generation(1), ready()));
    history.flush();
    assert_eq!(history.written_seq(), 2, "the refused batch is not counted");
    other.execute_batch("ROLLBACK").unwrap();
    history.record(&bus.emit("a", Generation(1), ready()));
    history.flush();
    assert_eq!(history.written_seq(), 4);
    history.close();
}

#[test]
fn a_directory_that_cannot_be_created_leaves_this_run_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let (history, notice) = History::open(&file.join("history.db"), options());
    let notice = notice.unwrap();
    assert_eq!(notice.kind, NoticeKind::Unavailable);
    assert!(
        notice.message.contains("LIFELINE_HISTORY"),
        "{}",
        notice.message
    );
    history.record(&EventBus::new(1).emit("a", Generation(1), ready()));
    history.flush();
}

#[test]
fn configured_secrets_never_reach_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let canary = "hunter2-history-canary";
    let options = Options {
        redactor: Redactor::new([canary]),
        ..options()
    };
    run_once(
        &path,
        options.clone(),
        &[(
            "a",
            failure("process_exit", &format!("stderr: token={canary}")),
        )],
    );
    let (history, _) = History::open(&path, options);
    history.record_call(CallRecord {
        tool: format!("tool-{canary}"),
        error_kind: Some(canary.into()),
        ..call("a", CallOutcome::Error, None)
    });
    history.close();
    let failures = history.failures(&query(10)).unwrap();
    assert_eq!(failures[0].failure["message"], "stderr: token=***");
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!bytes.windows(canary.len()).any(|w| w == canary.as_bytes()));
    }
}

#[test]
fn secrets_added_later_are_scrubbed_from_then_on_and_the_old_ones_still_are() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let (old, new) = ("old-history-canary", "new-history-canary");
    let with_old = Options {
        redactor: Redactor::new([old]),
        ..options()
    };
    let (history, _) = History::open(&path, with_old);
    let bus = EventBus::new(16);
    // A config edit brings a new secret.
    history.add_secrets(&Redactor::new([new]));
    let message = format!("stderr: a={old} b={new}");
    history.record(&bus.emit("a", Generation(1), failure("process_exit", &message)));
    history.close();
    // The next run reads it back (a run's own rows are not "past").
    let (next, _) = History::open(&path, options());
    let failures = next.failures(&query(10)).unwrap();
    assert_eq!(failures[0].failure["message"], "stderr: a=*** b=***");
    next.close();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for canary in [old, new] {
            assert!(
                !bytes.windows(canary.len()).any(|w| w == canary.as_bytes()),
                "{canary}"
            );
        }
    }
}

#[test]
fn the_writer_prunes_as_it_goes_not_only_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let small = Options {
        retention: Retention {
            max_age: MAX_AGE,
            max_rows: 10,
        },
        ..options()
    };
    let (history, _) = History::open(&path, small);
    let bus = EventBus::new(1);
    for _ in 0..1000 {
        history.record(&bus.emit("a", Generation(1), ready()));
    }
    // The flush is answered after the batch that reached 1000 rows, and its prune.
    history.flush();
    history.close();
    // Opened with room for everything: only the writer can have trimmed the table.
    let (history, _) = History::open(&path, options());
    let seqs: Vec<u64> = history
        .events(&query(1000))
        .unwrap()
        .iter()
        .map(|e| e.event["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (991..=1000).rev().collect::<Vec<_>>());
}

#[test]
fn the_env_names_the_file_unless_empty() {
    let default = Some(PathBuf::from("/data/lifeline/history.db"));
    let check = |env: Option<&str>, expect: Option<&str>| {
        assert_eq!(
            resolve(env.map(OsString::from), default.clone()),
            expect.map(PathBuf::from)
        );
    };
    check(Some("/tmp/h.db"), Some("/tmp/h.db"));
    check(Some(""), Some("/data/lifeline/history.db"));
    check(None, Some("/data/lifeline/history.db"));
    assert_eq!(resolve(None, None), None);
}

#[test]
fn a_reader_sees_every_run_while_the_app_writes_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let first = run_once(&path, options(), &[("a", ready())]);
    let (app, _) = History::open(&path, options());
    app.record(&EventBus::new(1).emit("b", Generation(1), failure("timeout", "slow")));
    app.record_call(call("b", CallOutcome::Ok, None));
    app.flush();

    let reader = History::open_read_only(&path).unwrap();
    let runs: Vec<(i64, String)> = reader
        .events(&query(10))
        .unwrap()
        .iter()
        .map(|e| (e.run, e.event["server"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(runs, [(app.run().id, "b".into()), (first.id, "a".into())]);
    assert_eq!(reader.calls(&query(10)).unwrap().len(), 1);
    reader.record(&EventBus::new(1).emit("c", Generation(1), ready()));
    reader.flush();
    app.close();
    assert_eq!(
        History::open_read_only(&path)
            .unwrap()
            .events(&query(10))
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn a_reader_refuses_what_it_cannot_read_and_leaves_it_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    assert!(matches!(
        History::open_read_only(&path),
        Err(QueryError::Sqlite(_))
    ));
    std::fs::write(&path, b"not a database at all".repeat(50)).unwrap();
    let e = History::open_read_only(&path).err().unwrap();
    assert!(e.to_string().contains("not a database"), "{e}");
    let conn = Connection::open(path.with_file_name("newer.db")).unwrap();
    conn.execute_batch("PRAGMA user_version = 2;").unwrap();
    drop(conn);
    let e = History::open_read_only(&path.with_file_name("newer.db"))
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "the history file has schema version 2; this build reads version 1 (use the Lifeline that wrote it)"
    );
    assert!(path.exists());
}

#[cfg(unix)]
#[test]
fn the_file_and_a_new_directory_are_private_and_an_old_file_is_tightened() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new").join("history.db");
    run_once(&path, options(), &[("a", ready())]);
    assert_eq!(mode(&dir.path().join("new")), 0o700);
    assert_eq!(mode(&path), 0o600);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (history, _) = History::open(&path, options());
    assert_eq!(mode(&path), 0o600);
    history.record(&EventBus::new(4).emit("a", Generation(1), ready()));
    history.flush();
    for side in ["history.db-wal", "history.db-shm"] {
        let side = dir.path().join("new").join(side);
        if side.exists() {
            assert_eq!(mode(&side), 0o600, "{}", side.display());
        }
    }
    history.close();
}

/// A row written before its secret was learned (the server printed its password later):
/// read back masked, and rewritten in the file by the next batch the writer writes.
#[test]
fn a_secret_learned_after_a_row_was_stored_is_masked_on_read_and_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let canary = "Lrnhist4pwQz";
    run_once(
        &path,
        options(),
        &[(
            "a",
            failure("process_exit", &format!("started with {canary}")),
        )],
    );
    crate::redact::learn_from(&format!("{{\"password\":\"{canary}\"}}"));
    let (history, _) = History::open(&path, options());
    let failures = history.failures(&query(10)).unwrap();
    assert_eq!(failures[0].failure["message"], "started with ***");
    let events = history.events(&query(10)).unwrap();
    assert_eq!(events[0].event["failure"]["message"], "started with ***");
    // Written after learning: masked on the way in.
    let bus = EventBus::new(16);
    history.record(&bus.emit("a", Generation(1), ready()));
    history.record_call(CallRecord {
        tool: format!("tool-{canary}"),
        ..call("a", CallOutcome::Ok, None)
    });
    history.close();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !bytes.windows(canary.len()).any(|w| w == canary.as_bytes()),
            "{canary} is still in the file"
        );
    }
}

#[test]
fn a_checkpoint_puts_everything_written_in_the_file_itself() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let (history, notice) = History::open(&path, options());
    assert_eq!(notice, None);
    let bus = EventBus::new(16);
    for _ in 0..50 {
        history.record(&bus.emit("a", Generation(1), ready()));
    }
    history.checkpoint();
    let wal = dir.path().join("history.db-wal");
    let left = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert_eq!(left, 0, "the WAL was folded into the file");
    // The file alone, as a power loss would leave it, holds every event.
    let copy = dir.path().join("copy.db");
    std::fs::copy(&path, &copy).unwrap();
    let conn = Connection::open(&copy).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 50);
    history.close();
}
