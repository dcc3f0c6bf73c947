//! The database file: its schema, and opening it so that a bad file never stops the app. A
//! corrupt file (not SQLite, a failed integrity check, a schema version this build cannot
//! migrate) is moved aside and replaced; a file another instance is writing is left alone
//! and the caller runs on an in-memory database. Every outcome other than a clean open comes
//! with a `Notice` that says what happened and what to do.

use super::{Notice, NoticeKind};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// `PRAGMA user_version` of the schema below. A file with a higher version was written by a
/// newer Lifeline; one with a version this build does not know how to migrate is moved aside.
pub const SCHEMA_VERSION: i32 = 1;

/// Times are stored twice: as the RFC 3339 text every consumer reads, and as milliseconds
/// since the Unix epoch for retention and ordering.
const SCHEMA: &str = "
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,
    started_ms INTEGER NOT NULL
);
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    at TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    server TEXT NOT NULL,
    generation INTEGER NOT NULL,
    type TEXT NOT NULL,
    json TEXT NOT NULL
);
CREATE INDEX events_by_server ON events (server, id);
CREATE INDEX events_by_time ON events (at_ms);
CREATE TABLE failures (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    at TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    server TEXT NOT NULL,
    generation INTEGER NOT NULL,
    kind TEXT NOT NULL,
    json TEXT NOT NULL
);
CREATE INDEX failures_by_server ON failures (server, id);
CREATE INDEX failures_by_time ON failures (at_ms);
CREATE TABLE calls (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    error_kind TEXT
);
CREATE INDEX calls_by_server ON calls (server, id);
CREATE INDEX calls_by_time ON calls (at_ms);
";

/// Why a file could not be used.
#[derive(Debug)]
pub(super) enum OpenError {
    /// Not a database, damaged, or a schema this build cannot read: move it aside.
    Corrupt(String),
    /// Another connection holds the write lock past the busy timeout.
    Locked,
    /// Anything else (no permission, no disk): leave the file, run in memory.
    Unusable(String),
}

impl From<rusqlite::Error> for OpenError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                OpenError::Corrupt(e.to_string())
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => OpenError::Locked,
            _ => OpenError::Unusable(e.to_string()),
        }
    }
}

/// Opens `path`, checks it and brings its schema to `SCHEMA_VERSION`.
pub(super) fn open_file(path: &Path, busy_timeout: Duration) -> Result<Connection, OpenError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    // Created 0600 before SQLite opens it (its WAL and shared-memory files take the same
    // mode); a file an older build left readable by others is tightened.
    private_file(path).map_err(|e| OpenError::Unusable(e.to_string()))?;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(busy_timeout)?;
    // Reading the header is the first thing that fails on a file that is not SQLite.
    let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if check != "ok" {
        return Err(OpenError::Corrupt(format!("integrity check: {check}")));
    }
    // WAL lets a reader (the CLI, a bundle) read while the app writes.
    let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    migrate(&conn)?;
    Ok(conn)
}

/// `path` as it is, read-only; a schema other than `SCHEMA_VERSION` is refused.
pub(super) fn open_read_only(
    path: &Path,
    busy_timeout: Duration,
) -> Result<Connection, super::QueryError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(busy_timeout)?;
    let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version != SCHEMA_VERSION {
        return Err(super::QueryError::Schema(version));
    }
    Ok(conn)
}

fn private_file(path: &Path) -> std::io::Result<()> {
    drop(crate::private::open_append(path)?);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    for suffix in ["-wal", "-shm"] {
        let side = path.with_file_name(format!("{name}{suffix}"));
        if side.exists() {
            crate::private::restrict(&side, 0o600)?;
        }
    }
    Ok(())
}

/// A fresh in-memory database with the schema.
pub(super) fn open_memory() -> Connection {
    let conn = Connection::open_in_memory().expect("SQLite can always open an in-memory database");
    migrate(&conn).expect("the schema applies to an empty in-memory database");
    conn
}

/// Creates the schema in an empty file; accepts the current version; refuses any other.
/// `BEGIN IMMEDIATE` takes the write lock first, so another instance's open transaction shows
/// up here as `Locked` (after the busy timeout) rather than at the first write.
fn migrate(conn: &Connection) -> Result<(), OpenError> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| {
        let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let tables: i64 = conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )?;
        match (version, tables) {
            (0, 0) => {
                conn.execute_batch(SCHEMA)?;
                conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
                Ok(())
            }
            (SCHEMA_VERSION, _) => Ok(()),
            (0, _) => Err(OpenError::Corrupt(
                "it holds tables but no Lifeline schema version".into(),
            )),
            (v, _) => Err(OpenError::Corrupt(format!(
                "its schema version is {v}; this build reads version {SCHEMA_VERSION}"
            ))),
        }
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT")?,
        Err(_) => {
            let _ = conn.execute_batch("ROLLBACK");
        }
    }
    result
}

/// Opens `path`, replacing a corrupt file; falls back to memory when the file is locked or
/// unusable. Never fails.
pub(super) fn open_or_recover(
    path: &Path,
    busy_timeout: Duration,
    now: SystemTime,
) -> (Connection, Option<Notice>) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = crate::private::create_dir(dir)
    {
        return memory_with(unusable(path, &e.to_string()));
    }
    match open_file(path, busy_timeout) {
        Ok(conn) => (conn, None),
        Err(OpenError::Locked) => memory_with(Notice {
            kind: NoticeKind::Locked,
            message: format!(
                "The history file {} is in use by another Lifeline instance, so this session's \
                 history is kept in memory only and earlier runs are not shown. Close the other \
                 instance and restart to keep history again.",
                path.display()
            ),
        }),
        Err(OpenError::Unusable(why)) => memory_with(unusable(path, &why)),
        Err(OpenError::Corrupt(why)) => {
            let aside = match move_aside(path, now) {
                Ok(aside) => aside,
                Err(e) => {
                    return memory_with(unusable(
                        path,
                        &format!("it is damaged ({why}) and could not be moved aside: {e}"),
                    ));
                }
            };
            let notice = Notice {
                kind: NoticeKind::Corrupt,
                message: format!(
                    "The history file {} could not be read ({why}). It was moved to {} and a \
                     new, empty history was started; earlier runs are not shown.",
                    path.display(),
                    aside.display()
                ),
            };
            match open_file(path, busy_timeout) {
                Ok(conn) => (conn, Some(notice)),
                Err(e) => {
                    let why = match e {
                        OpenError::Corrupt(w) | OpenError::Unusable(w) => w,
                        OpenError::Locked => "it is locked".into(),
                    };
                    memory_with(unusable(path, &why))
                }
            }
        }
    }
}

fn memory_with(notice: Notice) -> (Connection, Option<Notice>) {
    (open_memory(), Some(notice))
}

fn unusable(path: &Path, why: &str) -> Notice {
    Notice {
        kind: NoticeKind::Unavailable,
        message: format!(
            "The history file {} cannot be used ({why}), so this session's history is kept in \
             memory only. Check that the directory is writable, or set LIFELINE_HISTORY to \
             another file.",
            path.display()
        ),
    }
}

/// Renames `path` (and its WAL files) to `<path>.corrupt-<UTC time>`; never overwrites.
fn move_aside(path: &Path, now: SystemTime) -> std::io::Result<PathBuf> {
    // Colons are not allowed in Windows file names: 2026-11-29T19-51-30Z.
    let stamp = humantime::format_rfc3339_seconds(now)
        .to_string()
        .replace(':', "-");
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut aside = path.with_file_name(format!("{name}.corrupt-{stamp}"));
    let mut n = 1;
    while aside.exists() {
        aside = path.with_file_name(format!("{name}.corrupt-{stamp}-{n}"));
        n += 1;
    }
    std::fs::rename(path, &aside)?;
    for suffix in ["-wal", "-shm"] {
        let side = path.with_file_name(format!("{name}{suffix}"));
        if side.exists() {
            let to = aside.with_file_name(format!(
                "{}{suffix}",
                aside.file_name().unwrap_or_default().to_string_lossy()
            ));
            let _ = std::fs::rename(&side, &to);
        }
    }
    Ok(aside)
}
