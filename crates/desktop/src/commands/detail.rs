//! The detail panel's commands (src-tauri/README.md lists their shapes): tool definitions,
//! cancelling a named call, a server's stderr, resolved command and masked config. Each is
//! one line handing over to `AppState` (state/detail.rs), as is `call_tool`, with its
//! `call_id` and progress Channel.

use crate::error::ErrorView;
use crate::state::AppState;
use crate::state::detail::{CommandView, PolicyView, ProgressView};
use lifeline_core::gateway::hosts::HostsView;
use lifeline_core::pins::report::ServerReview;
use lifeline_core::supervisor::GenerationStderr;
use serde_json::Value;

type Result<T> = std::result::Result<T, ErrorView>;

/// The full tool definitions: `[{name, title?, description?, inputSchema, annotations?}]`.
pub async fn tool_list(state: &AppState, server: String) -> Result<Vec<Value>> {
    state.tool_list(&server).await
}

/// True when the call was in flight and is now cancelled.
pub async fn cancel_call(state: &AppState, call_id: String) -> Result<bool> {
    Ok(state.cancel_call(&call_id))
}

/// `[{generation, lines, truncated}]`, oldest first: the current and the previous generation.
pub async fn server_stderr(state: &AppState, server: String) -> Result<Vec<GenerationStderr>> {
    state.server_stderr(&server).await
}

/// The resolved command of a stdio server; `null` for an HTTP server.
pub async fn server_command(state: &AppState, server: String) -> Result<Option<CommandView>> {
    state.server_command(&server)
}

/// The reconnect policy and timeouts the server runs with (config over defaults).
pub async fn server_policy(state: &AppState, server: String) -> Result<PolicyView> {
    state.server_policy(&server)
}

/// The server's Hosts section: `{hosts, live_calls, tools}` (HostsView).
pub async fn server_hosts(state: &AppState, server: String) -> Result<HostsView> {
    Ok(state.server_hosts(&server))
}

/// What the tool pins hold of the server for review (docs/trust.md): `ServerReview`.
pub async fn tool_review(state: &AppState, server: String) -> Result<ServerReview> {
    state.tool_review(&server).await
}

/// `decision` (`approve` or `reject`) on `tools` of the server, or on every one waiting
/// when `tools` is null: the tools decided.
pub async fn tool_decide(
    state: &AppState,
    server: String,
    decision: String,
    tools: Option<Vec<String>>,
) -> Result<Vec<String>> {
    let decision = crate::state::trust::decision(&decision)?;
    state.tool_decide(&server, decision, tools).await
}

/// The server's config entry, read-only, every secret value masked.
pub async fn server_config(state: &AppState, server: String) -> Result<Value> {
    state.server_config(&server)
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
