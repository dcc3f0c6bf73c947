//! The history panel's commands: events, failures and tool calls of earlier runs, read from
//! the app's history file (`history.rs`, docs/history.md).

use crate::error::ErrorView;
use crate::history::{calls, events, failures};
use crate::state::AppState;
use lifeline_core::history::{PastCall, PastEvent, PastFailure};

/// Events of earlier runs, newest first; `before` is the `id` of the oldest one shown.
pub async fn history_events(
    state: &AppState,
    server: Option<String>,
    before: Option<i64>,
    limit: u32,
) -> Result<Vec<PastEvent>, ErrorView> {
    events(state.history(), server, before, limit).await
}

/// Failures of earlier runs, newest first.
pub async fn history_failures(
    state: &AppState,
    server: Option<String>,
    limit: u32,
) -> Result<Vec<PastFailure>, ErrorView> {
    failures(state.history(), server, limit).await
}

/// Tool calls of earlier runs, newest first (never their arguments or results).
pub async fn history_calls(
    state: &AppState,
    server: Option<String>,
    limit: u32,
) -> Result<Vec<PastCall>, ErrorView> {
    calls(state.history(), server, limit).await
}
