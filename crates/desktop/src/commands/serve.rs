//! The "Serve over HTTP" dialog's commands: the local HTTP endpoint (`serve.rs`) on or off
//! and its port, and the clients' tokens. A token is only ever in the answer of
//! `gateway_token_add`: never in a log, an event or an error.

use crate::Core;
use crate::error::ErrorView;
use crate::serve::{EndpointView, Served, resolver};
use lifeline_core::config::ServeSettings;
use lifeline_core::gateway::http::tokens;
use serde::Serialize;
use std::sync::Arc;

/// A client with a token, as the dialog lists it: never the token.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct TokenClient {
    pub name: String,
    pub created: String,
}

/// A token just made: shown once by the dialog, with the hosts' snippets. The only answer
/// that holds a token.
#[derive(Clone, Serialize, ts_rs::TS)]
pub struct NewToken {
    pub client: String,
    pub token: String,
    /// What `lifeline serve token add` prints: URL, header, Claude Code / VS Code / Cursor.
    pub usage: String,
}

fn io_error(e: std::io::Error) -> ErrorView {
    ErrorView::new(
        "serve",
        format!("The tokens file could not be changed: {e}."),
    )
}

/// The local HTTP endpoint: whether it is on, its URL, where the tokens are.
pub fn gateway_endpoint(served: &Served) -> EndpointView {
    served.view()
}

/// Turns the endpoint on or off and sets its port: writes `lifeline.serve` to the config
/// file (text kept, as every edit from the app) and applies it now.
pub async fn gateway_set(
    core: &Arc<Core>,
    enabled: bool,
    port: u16,
) -> Result<EndpointView, ErrorView> {
    let settings = ServeSettings { enabled, port };
    core.state.serve_set(settings).await?;
    core.served
        .apply(settings, resolver(Arc::downgrade(core)))
        .await;
    Ok(core.served.view())
}

/// The clients that have a token, by name.
pub fn gateway_tokens(served: &Served) -> Result<Vec<TokenClient>, ErrorView> {
    let clients = tokens::list(served.tokens_file()?).map_err(io_error)?;
    Ok(clients
        .into_iter()
        .map(|c| TokenClient {
            name: c.name,
            created: c.created,
        })
        .collect())
}

/// Makes a token for `client` (replacing any it had); the only answer that holds one.
pub fn gateway_token_add(served: &Served, client: String) -> Result<NewToken, ErrorView> {
    let path = served.tokens_file()?;
    tokens::check_client(&client).map_err(|m| ErrorView::new("serve", m))?;
    let token = tokens::add(path, &client).map_err(io_error)?;
    tracing::info!("made a token for the HTTP client `{client}`");
    let usage = tokens::usage(path, &client, &token, None, served.snippet_port());
    Ok(NewToken {
        client,
        token,
        usage,
    })
}

/// Removes `client`'s token; whether it had one. Its requests are refused from now on
/// and the endpoint ends its open sessions within `http::TOKEN_CHECK`.
pub fn gateway_token_remove(served: &Served, client: String) -> Result<bool, ErrorView> {
    let had = tokens::remove(served.tokens_file()?, &client).map_err(io_error)?;
    if had {
        tracing::info!("removed the token of the HTTP client `{client}`");
    }
    Ok(had)
}
