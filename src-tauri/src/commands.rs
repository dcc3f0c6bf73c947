//! The IPC surface the UI calls (`invoke("snapshot")`, …). Each command is one line that
//! hands over to `AppState`; every failure is an `ErrorView` (`{kind, message}`). The
//! shapes are listed in src-tauri/README.md.

use crate::bundle_cmds::{BundlePreview, Exported};
use crate::detail_cmds::OptionalChannel;
use crate::error::ErrorView;
use crate::source::AppInfo;
use crate::state::AppState;
use crate::state::detail::ProgressView;
use crate::view::ServerView;
use lifeline_core::events::Event;
use lifeline_core::supervisor::Supervisor;
use serde_json::Value;
use tauri::ipc::Channel;
use tauri::{Runtime, State, Webview};

type Result<T> = std::result::Result<T, ErrorView>;

/// Every configured server, in config order.
#[tauri::command]
pub async fn snapshot(state: State<'_, AppState>) -> Result<Vec<ServerView>> {
    state.views().await
}

/// The snapshot, then every event on `channel` in `seq` order. Calling it again from the
/// same webview (a reload) ends the previous subscription.
#[tauri::command]
pub async fn subscribe<R: Runtime>(
    webview: Webview<R>,
    state: State<'_, AppState>,
    channel: Channel<Event>,
) -> Result<Vec<ServerView>> {
    let sink = move |event| channel.send(event).is_ok();
    state.subscribe(webview.label(), sink).await
}

#[tauri::command]
pub async fn reconnect(state: State<'_, AppState>, server: String) -> Result<()> {
    state.act(&server, Supervisor::reconnect).await
}

#[tauri::command]
pub async fn reset(state: State<'_, AppState>, server: String) -> Result<()> {
    state.act(&server, Supervisor::reset).await
}

#[tauri::command]
pub async fn disable(state: State<'_, AppState>, server: String) -> Result<()> {
    state.act(&server, Supervisor::disable).await
}

#[tauri::command]
pub async fn enable(state: State<'_, AppState>, server: String) -> Result<()> {
    state.act(&server, Supervisor::enable).await
}

/// The names of the servers that were quarantined, gave up or retired, now reconnecting.
#[tauri::command]
pub async fn reconnect_all_failed(state: State<'_, AppState>) -> Result<Vec<String>> {
    state.reconnect_all_failed().await
}

/// `args` defaults to `{}`. `call_id` names the call for `cancel_call`; `progress` receives
/// its `notifications/progress`.
#[tauri::command]
pub async fn call_tool(
    state: State<'_, AppState>,
    server: String,
    tool: String,
    args: Option<Value>,
    call_id: Option<String>,
    progress: OptionalChannel<ProgressView>,
) -> Result<Value> {
    let args = args.unwrap_or_else(|| Value::Object(Default::default()));
    let sink = move |p| {
        if let Some(channel) = &progress.0 {
            let _ = channel.send(p);
        }
    };
    state
        .call_tool_with(&server, &tool, args, call_id, sink)
        .await
}

/// Demo or config mode, the config path, the log directory, notices for a banner.
#[tauri::command]
pub async fn app_info(state: State<'_, AppState>) -> Result<AppInfo> {
    Ok(state.info())
}

/// The UI's first frame is on screen: logs, once, how long after the process started (the
/// benchmark's cold start to first paint, bench/METHOD.md).
#[tauri::command]
pub fn ui_painted() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let ms = crate::STARTED.get().map_or(0, |t| t.elapsed().as_millis());
        tracing::info!("first paint {ms} ms after start");
    });
}

/// Builds the diagnostic bundle and returns every file with its exact content; kept for
/// `bundle_export`.
#[tauri::command]
pub async fn bundle_preview(state: State<'_, AppState>) -> Result<BundlePreview> {
    state.bundle_preview().await
}

/// Writes the previewed bundle to `path` (absolute).
#[tauri::command]
pub async fn bundle_export(state: State<'_, AppState>, path: String) -> Result<Exported> {
    state.bundle_export(&path).await
}
