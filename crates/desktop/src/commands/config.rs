//! The commands that read and change the config (`config_get`, `server_add`, `server_edit`,
//! `server_remove`, `import_detect`, `import_apply`), one line each into `AppState`
//! (`state/config`), and the wiring that applies external edits and tells the UI: a
//! watcher on the config file, and a `config_changed` event (the new `AppInfo`) whenever the
//! servers or the notices changed, on which the UI takes a new snapshot.

use crate::Core;
use crate::error::ErrorView;
use crate::state::AppState;
use crate::state::config::edit::ServerForm;
use crate::state::config::{ConfigView, Detected, ImportChoice, ImportOutcome};
use std::sync::Arc;

type Result<T> = std::result::Result<T, ErrorView>;

/// The event the UI listens to (the window process emits it); its payload is the new
/// `AppInfo`.
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

/// Watches the config file and applies each change; the window process hears of every
/// change (the UI's own, or the file's) over its link (window.rs), as `config_changed`.
/// Within a tokio runtime.
pub fn start(core: Arc<Core>) {
    tokio::spawn(async move {
        match core.state.watch_config() {
            Ok(watch) => watch.run(&core.state).await,
            Err(e) => tracing::warn!("config file not watched: {}", e.message),
        }
    });
}
