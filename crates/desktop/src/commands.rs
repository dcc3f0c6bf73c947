//! The IPC surface the UI calls (`invoke("snapshot")`, …). Each command is one line that
//! hands over to `AppState`; every failure is an `ErrorView` (`{kind, message}`). The
//! shapes are listed in src-tauri/README.md; `dispatch.rs` is the table that maps a command's
//! name and JSON arguments to these functions, in the core process.

use crate::bundle_cmds::{BundlePreview, Exported};
use crate::error::ErrorView;
use crate::source::AppInfo;
use crate::state::AppState;
use crate::state::detail::ProgressView;
use crate::view::ServerView;
use lifeline_core::events::Event;
use lifeline_core::supervisor::Supervisor;
use serde_json::Value;

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

/// `args` defaults to `{}`. `call_id` names the call for `cancel_call`; `progress` receives
/// its `notifications/progress`.
pub async fn call_tool(
    state: &AppState,
    server: String,
    tool: String,
    args: Option<Value>,
    call_id: Option<String>,
    progress: impl FnMut(ProgressView) + Send + 'static,
) -> Result<Value> {
    let args = args.unwrap_or_else(|| Value::Object(Default::default()));
    state
        .call_tool_with(&server, &tool, args, call_id, progress)
        .await
}

/// Demo or config mode, the config path, the log directory, notices for a banner.
pub async fn app_info(state: &AppState) -> Result<AppInfo> {
    Ok(state.info())
}

/// The UI's first frame is on screen: logs, once, how long after the process started (the
/// benchmark's cold start to first paint, bench/METHOD.md).
pub fn ui_painted() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let ms = crate::STARTED.get().map_or(0, |t| t.elapsed().as_millis());
        tracing::info!("first paint {ms} ms after start");
    });
}

/// Builds the diagnostic bundle and returns every file with its exact content; kept for
/// `bundle_export`.
pub async fn bundle_preview(state: &AppState) -> Result<BundlePreview> {
    state.bundle_preview().await
}

/// Writes the previewed bundle to `path` (absolute).
pub async fn bundle_export(state: &AppState, path: String) -> Result<Exported> {
    state.bundle_export(&path).await
}
