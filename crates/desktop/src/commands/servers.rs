//! The fleet's servers: the snapshot and its live events, and the manual actions of the
//! server list (reconnect, reset, disable, enable, reconnect every failed one). Each is one
//! line that hands over to `AppState`.

use crate::error::ErrorView;
use crate::state::AppState;
use crate::view::ServerView;
use lifeline_core::events::Event;
use lifeline_core::supervisor::Supervisor;

type Result<T> = std::result::Result<T, ErrorView>;

/// Every configured server, in config order.
pub async fn snapshot(state: &AppState) -> Result<Vec<ServerView>> {
    state.views().await
}

/// The snapshot, then every event through `sink` (the UI's `channel`) in `seq` order, until
/// it returns false. Calling it again with the same `key` (the webview's: a reload) ends the
/// previous subscription.
pub async fn subscribe(
    state: &AppState,
    key: &str,
    sink: impl FnMut(Event) -> bool + Send + 'static,
) -> Result<Vec<ServerView>> {
    state.subscribe(key, sink).await
}

pub async fn reconnect(state: &AppState, server: String) -> Result<()> {
    state.act(&server, Supervisor::reconnect).await
}

pub async fn reset(state: &AppState, server: String) -> Result<()> {
    state.act(&server, Supervisor::reset).await
}

pub async fn disable(state: &AppState, server: String) -> Result<()> {
    state.act(&server, Supervisor::disable).await
}

pub async fn enable(state: &AppState, server: String) -> Result<()> {
    state.act(&server, Supervisor::enable).await
}

/// The names of the servers that were quarantined, gave up or retired, now reconnecting.
pub async fn reconnect_all_failed(state: &AppState) -> Result<Vec<String>> {
    state.reconnect_all_failed().await
}
