//! The app's local Streamable HTTP endpoint (`lifeline_core::gateway::http`), for AI
//! clients that take a URL: when the config says `"lifeline": {"serve": {"enabled": true}}`
//! the app serves its own supervisors at `http://127.0.0.1:PORT/servers/NAME/mcp` (each host
//! session attached as `lifeline connect` bridges are: `AppState::attach`), with the tokens
//! of `lifeline serve token add`. Read at start; the "Serve over HTTP" dialog changes it
//! live (`gateway_set` writes the setting and restarts the listener) and manages the
//! tokens (`gateway_tokens`, `gateway_token_add`, `gateway_token_remove`). The URL is
//! logged and returned by the `gateway_endpoint` command. A token is only ever in the
//! answer of `gateway_token_add`: never in a log, an event or an error.

use crate::Core;
use crate::error::ErrorView;
use lifeline_core::config::ServeSettings;
use lifeline_core::gateway::attach::{Refusal, Request};
use lifeline_core::gateway::http::{self, Auth, Endpoint, Resolve, Tokens, tokens};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Weak;
use std::sync::{Arc, Mutex};

/// What the UI is told about the endpoint.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EndpointView {
    /// `lifeline.serve.enabled` in the config.
    pub enabled: bool,
    /// `http://127.0.0.1:PORT/servers/NAME/mcp` with NAME in it, once listening.
    pub url: Option<String>,
    pub port: Option<u16>,
    /// `lifeline.serve.port` in the config (0: any free port).
    pub configured_port: u16,
    /// Where the clients' tokens are (`lifeline serve token add CLIENT` makes one).
    pub tokens_file: Option<String>,
    /// Why it is not listening, when enabled.
    pub error: Option<String>,
}

/// The endpoint, held by the `Core`.
pub struct Served {
    view: Mutex<EndpointView>,
    endpoint: tokio::sync::Mutex<Option<Endpoint>>,
    tokens_file: Option<PathBuf>,
}

impl Served {
    /// Off, with the clients' tokens in `tokens_file`.
    pub fn new(tokens_file: Option<PathBuf>) -> Served {
        Served {
            view: Mutex::new(EndpointView {
                configured_port: ServeSettings::default().port,
                tokens_file: tokens_file.as_ref().map(|p| p.display().to_string()),
                ..EndpointView::default()
            }),
            endpoint: tokio::sync::Mutex::new(None),
            tokens_file,
        }
    }

    pub fn view(&self) -> EndpointView {
        self.view.lock().expect("view lock").clone()
    }

    /// Brings the endpoint to `settings`: stops the listener (its host sessions end) and
    /// listens again when they enable it. A listener already on the asked port is kept.
    pub async fn apply(&self, settings: ServeSettings, resolve: Resolve) {
        let mut endpoint = self.endpoint.lock().await;
        let keep = settings.enabled
            && settings.port != 0
            && endpoint
                .as_ref()
                .is_some_and(|e| e.addr().port() == settings.port);
        {
            let mut view = self.view.lock().expect("view lock");
            view.enabled = settings.enabled;
            view.configured_port = settings.port;
        }
        if keep {
            return;
        }
        if let Some(old) = endpoint.take() {
            old.stop().await;
            tracing::info!("stopped serving the servers over HTTP");
        }
        {
            let mut view = self.view.lock().expect("view lock");
            view.url = None;
            view.port = None;
            view.error = None;
        }
        if !settings.enabled {
            return;
        }
        let Some(tokens_file) = self.tokens_file.clone() else {
            self.view.lock().expect("view lock").error =
                Some("no data directory for the tokens file".into());
            return;
        };
        let port = settings.port;
        match Endpoint::bind(port, resolve, Auth::Tokens(Tokens::new(tokens_file))).await {
            Ok(bound) => {
                let port = bound.addr().port();
                let url = http::url(port, "NAME");
                tracing::info!("serving the servers over HTTP at {url}");
                {
                    let mut view = self.view.lock().expect("view lock");
                    view.url = Some(url);
                    view.port = Some(port);
                }
                *endpoint = Some(bound);
            }
            Err(e) => {
                let why = format!(
                    "cannot listen on 127.0.0.1:{port} ({e}); set another `lifeline.serve.port`"
                );
                tracing::warn!("the HTTP endpoint is off: {why}");
                self.view.lock().expect("view lock").error = Some(why);
            }
        }
    }

    /// Stops the endpoint (every host session ends), bounded; before the supervisors stop.
    pub async fn stop(&self) {
        if let Some(endpoint) = self.endpoint.lock().await.take() {
            endpoint.stop().await;
        }
    }

    fn tokens_file(&self) -> Result<&PathBuf, ErrorView> {
        self.tokens_file.as_ref().ok_or_else(|| {
            ErrorView::new("serve", "There is no data directory for the tokens file.")
        })
    }

    /// The port a new client's snippet names: the listener's, else the configured one.
    fn snippet_port(&self) -> u16 {
        let view = self.view();
        view.port.unwrap_or(match view.configured_port {
            0 => ServeSettings::default().port,
            p => p,
        })
    }
}

/// Starts the endpoint when `settings` enable it. Within a tokio runtime.
pub fn start(core: &Arc<Core>, settings: ServeSettings) {
    let served = core.served.clone();
    let resolve = resolver(Arc::downgrade(core));
    tokio::spawn(async move { served.apply(settings, resolve).await });
}

/// Each host session is attached to the app's supervisor as a `lifeline connect` bridge is.
pub fn resolver(core: Weak<Core>) -> Resolve {
    Arc::new(move |name: String| {
        let core = core.upgrade();
        Box::pin(async move {
            match core {
                Some(core) => core.state.attach(&Request { name, config: None }).await,
                None => Err((Refusal::Closing, "the app is stopping".into())),
            }
        })
    })
}

/// A client with a token, as the dialog lists it: never the token.
#[derive(Debug, Clone, Serialize)]
pub struct TokenClient {
    pub name: String,
    pub created: String,
}

/// A token just made: shown once by the dialog, with the hosts' snippets.
#[derive(Clone, Serialize)]
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
    let usage = tokens::usage(path, &client, &token, served.snippet_port());
    Ok(NewToken {
        client,
        token,
        usage,
    })
}

/// Removes `client`'s token; whether it had one. Its sessions are refused from now on.
pub fn gateway_token_remove(served: &Served, client: String) -> Result<bool, ErrorView> {
    let had = tokens::remove(served.tokens_file()?, &client).map_err(io_error)?;
    if had {
        tracing::info!("removed the token of the HTTP client `{client}`");
    }
    Ok(had)
}

#[cfg(test)]
#[path = "serve_tests.rs"]
mod served_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_endpoint_is_off_unless_the_config_turns_it_on() {
        let core = crate::test_support::core();
        crate::test_support::block_on(async { start(&core, ServeSettings::default()) });
        let view = crate::test_support::invoke(&core, "gateway_endpoint", json!({})).unwrap();
        assert_eq!(view["enabled"], false);
        assert_eq!(view["url"], serde_json::Value::Null);
    }
}
