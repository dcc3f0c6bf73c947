//! The one thread that writes: it takes what is queued, writes it in one transaction, and
//! prunes every `PRUNE_EVERY` rows or `PRUNE_INTERVAL`, whichever comes first. A write that
//! fails is logged and dropped; history is never worth stopping the app for.

use super::{CallRecord, Options, Retention, epoch_ms, lock};
use crate::events::{CallOutcome, Event, EventBody, rfc3339};
use crate::redact::Redactor;
use rusqlite::{Connection, Transaction};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, SystemTime};

/// Rows written in one transaction at most.
const BATCH: usize = 512;
const PRUNE_EVERY: u64 = 1000;
const PRUNE_INTERVAL: Duration = Duration::from_secs(60 * 60);

pub(super) enum Message {
    Event(Box<Event>),
    Call(CallRecord),
    Flush(mpsc::Sender<()>),
    /// More secrets to scrub from now on (a config edit added some); never fewer.
    Secrets(Redactor),
}

pub(super) fn spawn(
    conn: Arc<Mutex<Connection>>,
    run: i64,
    options: Options,
    written: Arc<AtomicU64>,
) -> (mpsc::Sender<Message>, Option<std::thread::JoinHandle<()>>) {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("lifeline-history".into())
        .spawn(move || write_loop(&conn, run, &options, &rx, &written));
    match thread {
        Ok(handle) => (tx, Some(handle)),
        Err(e) => {
            tracing::warn!("history: no writer thread ({e}); nothing is recorded");
            (tx, None)
        }
    }
}

fn write_loop(
    conn: &Mutex<Connection>,
    run: i64,
    options: &Options,
    rx: &mpsc::Receiver<Message>,
    written: &AtomicU64,
) {
    let mut redactor = options.redactor.clone();
    // Secrets this process learned before this writer started are rewritten too: rows of
    // an earlier run may hold them.
    let mut learned = 0usize;
    let mut since_prune = 0u64;
    let mut last_prune = SystemTime::now();
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(m) => batch.push(m),
                Err(_) => break,
            }
        }
        // New secrets apply to the whole batch: scrubbing more than needed is harmless.
        for m in &batch {
            if let Message::Secrets(more) = m {
                redactor.add(more);
            }
        }
        let mut flushes = Vec::new();
        let last_seq = batch
            .iter()
            .filter_map(|m| match m {
                Message::Event(e) => Some(e.seq),
                _ => None,
            })
            .max();
        let mut conn = lock(conn);
        match write_batch(&mut conn, run, &redactor, batch, &mut flushes) {
            Ok(n) => {
                since_prune += n;
                if let Some(seq) = last_seq {
                    written.fetch_max(seq, Ordering::Release);
                }
            }
            Err(e) => tracing::warn!("history: a batch was not written: {e}"),
        }
        let (forms, now_learned) = crate::redact::json_forms_since(learned);
        if !forms.is_empty() {
            match rewrite_learned(&mut conn, &forms) {
                Ok(()) => learned = now_learned,
                Err(e) => tracing::warn!("history: stored rows were not rescrubbed: {e}"),
            }
        }
        let now = SystemTime::now();
        let overdue = now.duration_since(last_prune).unwrap_or_default() >= PRUNE_INTERVAL;
        if since_prune >= PRUNE_EVERY || overdue {
            if let Err(e) = prune(&conn, &options.retention, now) {
                tracing::warn!("history: pruning failed: {e}");
            }
            since_prune = 0;
            last_prune = now;
        }
        drop(conn);
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// Masks secrets learned since the rows were written (`redact::learned`), in every run's
/// rows, in one transaction: the file must not keep in clear a value the process now
/// knows to be a secret. `forms` are the values as they stand inside JSON text, so the
/// rows stay valid JSON.
fn rewrite_learned(conn: &mut Connection, forms: &[String]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    for form in forms {
        for sql in [
            "UPDATE events SET json = replace(json, ?1, '***') WHERE instr(json, ?1) > 0",
            "UPDATE failures SET json = replace(json, ?1, '***') WHERE instr(json, ?1) > 0",
            "UPDATE calls SET tool = replace(tool, ?1, '***') WHERE instr(tool, ?1) > 0",
            "UPDATE calls SET error_kind = replace(error_kind, ?1, '***')
              WHERE instr(error_kind, ?1) > 0",
        ] {
            tx.execute(sql, [form])?;
        }
    }
    tx.commit()
}

/// Writes the batch in one transaction; returns the number of rows written.
fn write_batch(
    conn: &mut Connection,
    run: i64,
    redactor: &Redactor,
    batch: Vec<Message>,
    flushes: &mut Vec<mpsc::Sender<()>>,
) -> rusqlite::Result<u64> {
    let tx = conn.transaction()?;
    let mut rows = 0;
    for message in batch {
        match message {
            Message::Event(event) => rows += insert_event(&tx, run, redactor, &event)?,
            Message::Call(call) => rows += insert_call(&tx, run, redactor, &call)?,
            Message::Flush(done) => flushes.push(done),
            Message::Secrets(_) => {}
        }
    }
    tx.commit()?;
    Ok(rows)
}

/// Writes `event` to `events` and, a failure, to `failures` too: the same stamp (run, seq,
/// time, server, generation) on both rows, each with its own kind and JSON. The rows written.
fn insert_event(
    tx: &Transaction,
    run: i64,
    redactor: &Redactor,
    event: &Event,
) -> rusqlite::Result<u64> {
    let json = scrubbed_json(redactor, event);
    let at_ms = at_ms(&event.at);
    let server = redactor.scrub(&event.server);
    let seq = i64::try_from(event.seq).unwrap_or(i64::MAX);
    let generation = i64::try_from(event.generation.0).unwrap_or(i64::MAX);
    let kind = json["type"].as_str().unwrap_or("unknown").to_owned();
    let mut rows = vec![(
        "INSERT INTO events (run, seq, at, at_ms, server, generation, type, json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        kind,
        json.to_string(),
    )];
    if let EventBody::Failure { failure } = &event.body {
        rows.push((
            "INSERT INTO failures (run, seq, at, at_ms, server, generation, kind, json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            redactor.scrub(&failure.kind),
            json["failure"].to_string(),
        ));
    }
    for (sql, kind, json) in &rows {
        tx.execute(
            sql,
            (run, seq, &event.at, at_ms, &server, generation, kind, json),
        )?;
    }
    Ok(rows.len() as u64)
}

fn insert_call(
    tx: &Transaction,
    run: i64,
    redactor: &Redactor,
    call: &CallRecord,
) -> rusqlite::Result<u64> {
    let outcome = match call.outcome {
        CallOutcome::Ok => "ok",
        CallOutcome::ToolError => "tool_error",
        CallOutcome::Error => "error",
    };
    let duration = i64::try_from(call.duration.as_millis()).unwrap_or(i64::MAX);
    tx.execute(
        "INSERT INTO calls (run, started_at, at_ms, server, tool, duration_ms, outcome, error_kind)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        (
            run,
            rfc3339(call.started_at),
            epoch_ms(call.started_at),
            redactor.scrub(&call.server),
            redactor.scrub(&call.tool),
            duration,
            outcome,
            call.error_kind.as_deref().map(|k| redactor.scrub(k)),
        ),
    )?;
    Ok(1)
}

/// The event as JSON with every string scrubbed; keys and structure untouched.
fn scrubbed_json(redactor: &Redactor, event: &Event) -> Value {
    fn scrub(redactor: &Redactor, value: Value) -> Value {
        match value {
            Value::String(s) => Value::String(redactor.scrub(&s)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| scrub(redactor, v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, scrub(redactor, v)))
                    .collect(),
            ),
            other => other,
        }
    }
    scrub(redactor, serde_json::to_value(event).unwrap_or(Value::Null))
}

/// An event's `at` in epoch milliseconds; now when it does not parse (it always should).
fn at_ms(at: &str) -> i64 {
    humantime::parse_rfc3339_weak(at)
        .map(epoch_ms)
        .unwrap_or_else(|_| epoch_ms(SystemTime::now()))
}

/// Deletes rows older than `max_age` and, per table, all but the newest `max_rows`; then
/// the runs nothing refers to any more (except runs younger than `max_age`).
pub(super) fn prune(
    conn: &Connection,
    retention: &Retention,
    now: SystemTime,
) -> rusqlite::Result<()> {
    let cutoff = epoch_ms(
        now.checked_sub(retention.max_age)
            .unwrap_or(SystemTime::UNIX_EPOCH),
    );
    let keep = i64::try_from(retention.max_rows).unwrap_or(i64::MAX);
    for table in ["events", "failures", "calls"] {
        conn.execute(&format!("DELETE FROM {table} WHERE at_ms < ?1"), [cutoff])?;
        conn.execute(
            &format!(
                "DELETE FROM {table} WHERE id <= (SELECT id FROM {table} ORDER BY id DESC LIMIT 1 OFFSET ?1)"
            ),
            [keep],
        )?;
    }
    conn.execute(
        "DELETE FROM runs WHERE started_ms < ?1
           AND id NOT IN (SELECT run FROM events UNION SELECT run FROM failures UNION SELECT run FROM calls)",
        [cutoff],
    )?;
    Ok(())
}
