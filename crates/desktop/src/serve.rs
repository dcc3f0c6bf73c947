//! The app's local Streamable HTTP endpoint (`lifeline_core::gateway::http`), for AI
//! clients that take a URL: when the config says `"lifeline": {"serve": {"enabled": true}}`
//! the app serves its own supervisors at `http://127.0.0.1:PORT/servers/NAME/mcp` (each host
//! session attached as `lifeline connect` bridges are: `AppState::attach`), with the tokens
//! of `lifeline serve token add`. Read at start; the "Serve over HTTP" dialog changes it
//! live (`gateway_set` writes the setting and restarts the listener) and manages the
//! tokens (`gateway_tokens`, `gateway_token_add`, `gateway_token_remove`; the commands are
//! commands/serve.rs). The URL is logged and returned by the `gateway_endpoint` command. A token is only ever in the
//! answer of `gateway_token_add`: never in a log, an event or an error.

use crate::Core;
use crate::error::ErrorView;
use lifeline_core::config::ServeSettings;
use lifeline_core::gateway::aggregate;
use lifeline_core::gateway::attach::{Refusal, Request};
use lifeline_core::gateway::http::{self, Auth, Endpoint, Resolve, Tokens};
use lifeline_core::gateway::{self, Target};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Weak;
use std::sync::{Arc, Mutex};

/// What the UI is told about the endpoint (`gateway_endpoint`, `gateway_set`).
#[derive(Debug, Clone, Default, Serialize, ts_rs::TS)]
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
    /// Why it is not listening, when enabled: `port_in_use` when another program holds
    /// the port, `serve` otherwise.
    pub error: Option<ErrorView>,
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
            self.view.lock().expect("view lock").error = Some(ErrorView::new(
                "serve",
                "There is no data directory for the tokens file.",
            ));
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
                let why = http::bind_problem(
                    port,
                    &e,
                    "change `lifeline.serve.port` (here, or in the config)",
                );
                tracing::warn!("the HTTP endpoint is off: {why}");
                let kind = match e.kind() {
                    std::io::ErrorKind::AddrInUse => "port_in_use",
                    _ => "serve",
                };
                self.view.lock().expect("view lock").error = Some(ErrorView::new(kind, why));
            }
        }
    }

    /// Stops the endpoint (every host session ends), bounded; before the supervisors stop.
    pub async fn stop(&self) {
        if let Some(endpoint) = self.endpoint.lock().await.take() {
            endpoint.stop().await;
        }
    }

    pub(crate) fn tokens_file(&self) -> Result<&PathBuf, ErrorView> {
        self.tokens_file.as_ref().ok_or_else(|| {
            ErrorView::new("serve", "There is no data directory for the tokens file.")
        })
    }

    /// The port a new client's snippet names: the listener's, else the configured one.
    pub(crate) fn snippet_port(&self) -> u16 {
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
    Arc::new(move |target: Target| {
        let core = core.clone();
        Box::pin(async move {
            let request = Request {
                target,
                config: None,
            };
            attach(&core, &request).await
        })
    })
}

/// What serves a bridge's or an HTTP host's request from the app (`AppState::attach`); an
/// aggregated session follows the app's config (a server added to the profile joins it,
/// one removed leaves it). Holds the core weakly.
pub async fn attach(
    core: &Weak<Core>,
    request: &Request,
) -> Result<gateway::Served, (Refusal, String)> {
    let Some(strong) = core.upgrade() else {
        return Err((Refusal::Closing, "the app is stopping".into()));
    };
    let mut served = strong.state.attach(request).await?;
    if let (gateway::Served::Aggregate(_, options), Target::Profile(profile)) =
        (&mut served, &request.target)
    {
        let (weak, profile) = (core.clone(), profile.clone());
        let current: aggregate::Current = Arc::new(move || {
            let (weak, profile) = (weak.clone(), profile.clone());
            Box::pin(async move {
                match weak.upgrade() {
                    Some(core) => core.state.profile_now(&profile).await,
                    None => aggregate::Now {
                        servers: Vec::new(),
                        profile: None,
                    },
                }
            })
        });
        options.members = Some(aggregate::Members {
            changed: strong.state.changes(),
            current,
        });
    }
    Ok(served)
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
