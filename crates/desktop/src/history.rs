//! The app's history file (docs/history.md) and the queries that read earlier runs from it
//! (the commands `history_events`, `history_failures`, `history_calls`: commands/history.rs). The store itself is
//! `lifeline_core::history` (which also says where the file is); this module opens it with a
//! notice the UI can show and turns its answers into what the UI receives. Queries block on
//! SQLite, so they run on the blocking pool.

use crate::error::ErrorView;
use lifeline_core::history::{
    HISTORY_ENV, History, Notice, Options, PastCall, PastEvent, PastFailure, Query, QueryError,
};
use std::path::PathBuf;

/// A query the store refuses (a limit out of bounds).
pub const BAD_QUERY: &str = "bad_query";

/// Opens the history at `path`, or in memory with a notice when there is no data directory.
pub fn open(path: Option<PathBuf>, options: Options) -> (History, Option<ErrorView>) {
    match path {
        Some(path) => {
            let (history, notice) = History::open(&path, options);
            (history, notice.map(notice_view))
        }
        None => (
            History::in_memory(options),
            Some(ErrorView::new(
                "history_unavailable",
                format!(
                    "There is no data directory for the history file, so this session's \
                     history is kept in memory only. Set {HISTORY_ENV} to a file to keep it."
                ),
            )),
        ),
    }
}

pub fn notice_view(notice: Notice) -> ErrorView {
    ErrorView::new(notice.kind.as_str(), notice.message)
}

fn query_error(e: QueryError) -> ErrorView {
    match e {
        QueryError::Limit(_) => ErrorView::new(BAD_QUERY, e.to_string()),
        _ => ErrorView::new("history", e.to_string()),
    }
}

/// Runs `read` on the blocking pool: SQLite must not hold up the runtime.
async fn read<T: Send + 'static>(
    history: History,
    read: impl FnOnce(&History) -> Result<T, QueryError> + Send + 'static,
) -> Result<T, ErrorView> {
    tokio::task::spawn_blocking(move || read(&history))
        .await
        .map_err(|e| ErrorView::new("history", format!("the history query stopped: {e}")))?
        .map_err(query_error)
}

pub async fn events(
    history: History,
    server: Option<String>,
    before: Option<i64>,
    limit: u32,
) -> Result<Vec<PastEvent>, ErrorView> {
    let query = Query {
        server,
        before,
        limit,
    };
    read(history, move |h| h.events(&query)).await
}

pub async fn failures(
    history: History,
    server: Option<String>,
    limit: u32,
) -> Result<Vec<PastFailure>, ErrorView> {
    let query = Query {
        server,
        before: None,
        limit,
    };
    read(history, move |h| h.failures(&query)).await
}

pub async fn calls(
    history: History,
    server: Option<String>,
    limit: u32,
) -> Result<Vec<PastCall>, ErrorView> {
    let query = Query {
        server,
        before: None,
        limit,
    };
    read(history, move |h| h.calls(&query)).await
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
