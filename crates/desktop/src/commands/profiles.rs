//! The Profiles view's commands: `profiles_get` (each profile as a host would be shown it,
//! and who uses it) and `profile_tool_set` (one tool of a profile on or off, in the config
//! file), each handing over to `AppState` (`state/profiles.rs`, `state/config/`) with the
//! HTTP clients' tokens of the endpoint's file.

use crate::Core;
use crate::error::ErrorView;
use crate::state::profiles::ProfilesView;
use lifeline_core::gateway::http::tokens;
use std::sync::Arc;

/// Every profile of the config the app runs, with its tools now and who uses it.
pub async fn profiles_get(core: &Arc<Core>) -> Result<ProfilesView, ErrorView> {
    let clients = match core.served.tokens_file() {
        Ok(path) => tokens::list(path).map_err(|e| format!("{e}")),
        Err(e) => Err(e.message),
    };
    let files = core.state.clients_env().files;
    core.state.profiles(clients, files).await
}

/// Shows or hides `tool` of `server` in `profile`; the view after.
pub async fn profile_tool_set(
    core: &Arc<Core>,
    profile: String,
    server: String,
    tool: String,
    shown: bool,
) -> Result<ProfilesView, ErrorView> {
    (core.state)
        .profile_tool_set(&profile, &server, &tool, shown)
        .await?;
    profiles_get(core).await
}
