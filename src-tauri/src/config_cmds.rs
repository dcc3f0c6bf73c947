//! The commands that read and change the config (`config_get`, `server_add`, `server_edit`,
//! `server_remove`, `import_detect`, `import_apply`), one line each into `AppState`
//! (`state/config_live`), and the wiring that applies external edits and tells the UI: a
//! watcher on the config file, and a `config_changed` event (the new `AppInfo`) whenever the
//! servers or the notices changed, on which the UI takes a new snapshot.

use crate::config_edit::ServerForm;
use crate::error::ErrorView;
use crate::state::AppState;
use crate::state::config_live::{ConfigView, Detected, ImportChoice, ImportOutcome};
use tauri::{AppHandle, Emitter, Manager, Runtime};

type Result<T> = std::result::Result<T, ErrorView>;

/// The event the UI listens to; its payload is the new `AppInfo`.
pub const CONFIG_CHANGED: &str = "config_changed";

/// The file's servers as editor forms, every secret value masked.
pub async fn config_get(state: &AppState) -> Result<ConfigView> {
    state.config_get().await
}

pub async fn server_add(state: &AppState, server: ServerForm) -> Result<()> {
    state.server_add(server).await
}

/// `name` is the server as configured; `server.name` may rename it.
pub async fn server_edit(state: &AppState, name: String, server: ServerForm) -> Result<()> {
    state.server_edit(&name, server).await
}

pub async fn server_remove(state: &AppState, name: String) -> Result<()> {
    state.server_remove(&name).await
}

pub async fn import_detect(state: &AppState) -> Result<Vec<Detected>> {
    state.import_detect().await
}

pub async fn import_apply(state: &AppState, sources: Vec<ImportChoice>) -> Result<ImportOutcome> {
    state.import_apply(sources).await
}

/// Watches the config file and emits `config_changed` to every webview after each change
/// (the UI's own, or the file's). Call once the state is managed.
pub fn start<R: Runtime>(app: AppHandle<R>) {
    let watcher = app.clone();
    tauri::async_runtime::spawn(async move {
        let state = watcher.state::<AppState>();
        match state.watch_config() {
            Ok(watch) => watch.run(&state).await,
            Err(e) => tracing::warn!("config file not watched: {}", e.message),
        }
    });
    tauri::async_runtime::spawn(async move {
        let mut changes = app.state::<AppState>().changes();
        while changes.changed().await.is_ok() {
            let info = app.state::<AppState>().info();
            if let Err(e) = app.emit(CONFIG_CHANGED, info) {
                tracing::warn!("could not tell the UI the config changed: {e}");
            }
        }
    });
}
