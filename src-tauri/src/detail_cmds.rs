//! The detail panel's commands (src-tauri/README.md lists their shapes): tool definitions,
//! cancelling a named call, a server's stderr, resolved command and masked config. Each is
//! one line handing over to `AppState` (state/detail.rs). `call_tool` itself, with its
//! `call_id` and progress Channel, stays in commands.rs.

use crate::error::ErrorView;
use crate::state::AppState;
use crate::state::detail::{CommandView, PolicyView};
use lifeline_core::gateway::hosts::HostsView;
use lifeline_core::supervisor::GenerationStderr;
use serde::Deserialize;
use serde_json::Value;
use std::str::FromStr;
use tauri::ipc::{Channel, CommandArg, CommandItem, InvokeError, JavaScriptChannelId};
use tauri::{Runtime, State};

type Result<T> = std::result::Result<T, ErrorView>;

/// The full tool definitions: `[{name, title?, description?, inputSchema, annotations?}]`.
#[tauri::command]
pub async fn tool_list(state: State<'_, AppState>, server: String) -> Result<Vec<Value>> {
    state.tool_list(&server).await
}

/// True when the call was in flight and is now cancelled.
#[tauri::command]
pub async fn cancel_call(state: State<'_, AppState>, call_id: String) -> Result<bool> {
    Ok(state.cancel_call(&call_id))
}

/// `[{generation, lines, truncated}]`, oldest first: the current and the previous generation.
#[tauri::command]
pub async fn server_stderr(
    state: State<'_, AppState>,
    server: String,
) -> Result<Vec<GenerationStderr>> {
    state.server_stderr(&server).await
}

/// The resolved command of a stdio server; `null` for an HTTP server.
#[tauri::command]
pub async fn server_command(
    state: State<'_, AppState>,
    server: String,
) -> Result<Option<CommandView>> {
    state.server_command(&server)
}

/// The reconnect policy and timeouts the server runs with (config over defaults).
#[tauri::command]
pub async fn server_policy(state: State<'_, AppState>, server: String) -> Result<PolicyView> {
    state.server_policy(&server)
}

/// The server's Hosts section: `{hosts, live_calls, tools}` (HostsView).
#[tauri::command]
pub async fn server_hosts(state: State<'_, AppState>, server: String) -> Result<HostsView> {
    Ok(state.server_hosts(&server))
}

/// The server's config entry, read-only, every secret value masked.
#[tauri::command]
pub async fn server_config(state: State<'_, AppState>, server: String) -> Result<Value> {
    state.server_config(&server)
}

/// A Channel argument the UI may leave out (tauri's `Channel` is a command argument of its
/// own, not `Deserialize`, so `Option<Channel<T>>` is not one).
pub struct OptionalChannel<T>(pub Option<Channel<T>>);

impl<'de, R: Runtime, T> CommandArg<'de, R> for OptionalChannel<T> {
    fn from_command(command: CommandItem<'de, R>) -> std::result::Result<Self, InvokeError> {
        let (name, key) = (command.name, command.key);
        let webview = command.message.webview();
        let value: Option<String> = Deserialize::deserialize(command)
            .map_err(|e| InvokeError::from(format!("`{name}`: `{key}` is invalid ({e})")))?;
        let Some(value) = value else {
            return Ok(OptionalChannel(None));
        };
        let id = JavaScriptChannelId::from_str(&value).map_err(|_| {
            InvokeError::from(format!(
                "`{name}`: `{key}` is not a Channel; pass a `new Channel()` from @tauri-apps/api/core"
            ))
        })?;
        Ok(OptionalChannel(Some(id.channel_on(webview))))
    }
}
