//! Reading earlier runs: events, failures and calls, newest first, by server, a page at a
//! time (`before` is the `id` of the oldest row already shown). The current run is left out:
//! its events reach the UI live.

use rusqlite::{Connection, Row, params};
use serde::Serialize;
use serde_json::Value;

/// Most rows one query returns.
pub const MAX_LIMIT: u32 = 1000;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// Only this server's rows.
    pub server: Option<String>,
    /// Only rows with an `id` below this one (the next page).
    pub before: Option<i64>,
    /// 1 to `MAX_LIMIT`.
    pub limit: u32,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    #[error("limit must be between 1 and {max}, got {0}", max = MAX_LIMIT)]
    Limit(u32),
    #[error("the history could not be read: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error(
        "the history file has schema version {0}; this build reads version {v} (use the Lifeline that wrote it)",
        v = super::SCHEMA_VERSION
    )]
    Schema(i32),
}

/// One event of an earlier run, exactly as the bus published it (already scrubbed).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PastEvent {
    pub id: i64,
    pub run: i64,
    pub run_started_at: String,
    #[cfg_attr(feature = "ts", ts(as = "crate::events::Event"))]
    pub event: Value,
}

/// One failure of an earlier run: the `FailureInfo` of a failure event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PastFailure {
    pub id: i64,
    pub run: i64,
    pub run_started_at: String,
    pub at: String,
    pub server: String,
    #[cfg_attr(feature = "ts", ts(as = "crate::events::FailureInfo"))]
    pub failure: Value,
}

/// One tool call of an earlier run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PastCall {
    pub id: i64,
    pub run: i64,
    pub run_started_at: String,
    pub server: String,
    pub tool: String,
    pub started_at: String,
    pub duration_ms: i64,
    /// `ok`, `tool_error` or `error`.
    #[cfg_attr(feature = "ts", ts(as = "crate::events::CallOutcome"))]
    pub outcome: String,
    pub error_kind: Option<String>,
}

fn checked(query: &Query) -> Result<(), QueryError> {
    if query.limit == 0 || query.limit > MAX_LIMIT {
        return Err(QueryError::Limit(query.limit));
    }
    Ok(())
}

/// `{table} t JOIN runs r` filtered to earlier runs, a server and a page, newest first.
fn select(columns: &str, table: &str) -> String {
    format!(
        "SELECT t.id, t.run, coalesce(r.started_at, ''), {columns}
           FROM {table} t LEFT JOIN runs r ON r.id = t.run
          WHERE t.run <> ?1
            AND (?2 IS NULL OR t.server = ?2)
            AND (?3 IS NULL OR t.id < ?3)
          ORDER BY t.id DESC
          LIMIT ?4"
    )
}

fn rows<T>(
    conn: &Connection,
    sql: &str,
    current_run: i64,
    query: &Query,
    map: impl FnMut(&Row) -> rusqlite::Result<T>,
) -> Result<Vec<T>, QueryError> {
    checked(query)?;
    let mut stmt = conn.prepare_cached(sql)?;
    let found = stmt.query_map(
        params![current_run, query.server, query.before, query.limit],
        map,
    )?;
    Ok(found.collect::<Result<_, _>>()?)
}

/// A stored row as it may be shown: rows are scrubbed when written, but a secret learned
/// after that (`redact::scrub_learned`) is masked on the way out too.
fn json(text: String) -> Value {
    scrubbed(serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn scrubbed(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(crate::redact::scrub_learned(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(scrubbed).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (crate::redact::scrub_learned(&k), scrubbed(v)))
                .collect(),
        ),
        other => other,
    }
}

pub(super) fn events(
    conn: &Connection,
    current_run: i64,
    query: &Query,
) -> Result<Vec<PastEvent>, QueryError> {
    rows(conn, &select("t.json", "events"), current_run, query, |r| {
        Ok(PastEvent {
            id: r.get(0)?,
            run: r.get(1)?,
            run_started_at: r.get(2)?,
            event: json(r.get(3)?),
        })
    })
}

pub(super) fn failures(
    conn: &Connection,
    current_run: i64,
    query: &Query,
) -> Result<Vec<PastFailure>, QueryError> {
    let sql = select("t.at, t.server, t.json", "failures");
    rows(conn, &sql, current_run, query, |r| {
        Ok(PastFailure {
            id: r.get(0)?,
            run: r.get(1)?,
            run_started_at: r.get(2)?,
            at: r.get(3)?,
            server: r.get(4)?,
            failure: json(r.get(5)?),
        })
    })
}

pub(super) fn calls(
    conn: &Connection,
    current_run: i64,
    query: &Query,
) -> Result<Vec<PastCall>, QueryError> {
    let columns = "t.server, t.tool, t.started_at, t.duration_ms, t.outcome, t.error_kind";
    rows(conn, &select(columns, "calls"), current_run, query, |r| {
        Ok(PastCall {
            id: r.get(0)?,
            run: r.get(1)?,
            run_started_at: r.get(2)?,
            server: r.get(3)?,
            tool: r.get(4)?,
            started_at: r.get(5)?,
            duration_ms: r.get(6)?,
            outcome: r.get(7)?,
            error_kind: r.get(8)?,
        })
    })
}

/// A host's call through the gateway (a `host_call` event) of any run: what the Hosts
/// section's statistics are rebuilt from at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastHostCall {
    pub server: String,
    /// When it was answered, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub tool: String,
    pub duration_ms: u64,
    /// Whether its outcome was `ok`.
    pub ok: bool,
}

/// Every `host_call` event at or after `since_ms`, oldest first.
pub(super) fn host_calls(
    conn: &Connection,
    since_ms: i64,
) -> Result<Vec<PastHostCall>, QueryError> {
    let mut stmt = conn.prepare_cached(
        "SELECT server, at_ms, json FROM events
          WHERE type = 'host_call' AND at_ms >= ?1
          ORDER BY at_ms, id",
    )?;
    let found = stmt.query_map(params![since_ms], |r| {
        let body = json(r.get(2)?);
        Ok(PastHostCall {
            server: r.get(0)?,
            at_ms: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
            tool: body["tool"].as_str().unwrap_or("?").to_owned(),
            duration_ms: body["duration_ms"].as_u64().unwrap_or(0),
            ok: body["outcome"] == "ok",
        })
    })?;
    Ok(found.collect::<Result<_, _>>()?)
}
