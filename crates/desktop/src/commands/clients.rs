//! The "Connect a client" dialog's commands (src-tauri/README.md lists their shapes): the
//! clients found, the masked preview, connect, restore. Each is one line into
//! `state/clients.rs`, which calls `lifeline_core::config::clients` as `lifeline clients` does.

use crate::error::ErrorView;
use crate::state::AppState;
use crate::state::clients::{self, ClientView, ConnectPreview, Connected, Restored};

type Result<T> = std::result::Result<T, ErrorView>;

/// Every client (Claude Desktop, Claude Code, Cursor, VS Code), found or not, with its servers.
pub async fn clients_list(state: &AppState) -> Result<Vec<ClientView>> {
    Ok(clients::list(&state.clients_env()))
}

/// What routing `servers` of `client` through Lifeline would change: the masked diff.
pub async fn clients_preview(
    state: &AppState,
    client: String,
    servers: Vec<String>,
) -> Result<ConnectPreview> {
    clients::preview(&state.clients_env(), &client, servers)
}

/// Routes them: imports, backs the file up, rewrites it.
pub async fn clients_connect(
    state: &AppState,
    client: String,
    servers: Vec<String>,
) -> Result<Connected> {
    clients::connect(&state.clients_env(), &client, servers)
}

/// Puts the backup back; kind `changed_since` when the client changed the file and `force`
/// is false.
pub async fn clients_restore(state: &AppState, client: String, force: bool) -> Result<Restored> {
    clients::restore(&state.clients_env(), &client, force)
}
