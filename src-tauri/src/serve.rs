//! The app's local Streamable HTTP endpoint (`lifeline_core::gateway::http`), for AI
//! clients that take a URL: when the config says `"lifeline": {"serve": {"enabled": true}}`
//! the app serves its own supervisors at `http://127.0.0.1:PORT/servers/NAME/mcp` (each host
//! session attached as `lifeline connect` bridges are: `AppState::attach`), with the tokens
//! of `lifeline serve token add`. Read at start (restart the app to change it); the URL is
//! logged and returned by the `gateway_endpoint` command.

use crate::state::AppState;
use lifeline_core::config::ServeSettings;
use lifeline_core::gateway::attach::{Refusal, Request};
use lifeline_core::gateway::http::{self, Auth, Endpoint, Resolve, Tokens, tokens};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tauri::{AppHandle, Manager, Runtime};

/// What the UI is told about the endpoint.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EndpointView {
    /// `lifeline.serve.enabled` in the config.
    pub enabled: bool,
    /// `http://127.0.0.1:PORT/servers/NAME/mcp` with NAME in it, once listening.
    pub url: Option<String>,
    pub port: Option<u16>,
    /// Where the clients' tokens are (`lifeline serve token add CLIENT` makes one).
    pub tokens_file: Option<String>,
    /// Why it is not listening, when enabled.
    pub error: Option<String>,
}

/// The endpoint, managed as Tauri state.
#[derive(Default)]
pub struct Served {
    view: Mutex<EndpointView>,
    endpoint: tokio::sync::Mutex<Option<Endpoint>>,
}

impl Served {
    pub fn view(&self) -> EndpointView {
        self.view.lock().expect("view lock").clone()
    }

    /// Stops the endpoint (every host session ends), bounded; before the supervisors stop.
    pub async fn stop(&self) {
        if let Some(endpoint) = self.endpoint.lock().await.take() {
            endpoint.stop().await;
        }
    }
}

/// Starts the endpoint when `settings` enable it; always manages `Served`.
pub fn start<R: Runtime>(app: &AppHandle<R>, settings: ServeSettings) {
    let served = Arc::new(Served::default());
    app.manage(served.clone());
    if settings.enabled {
        let resolve = resolver(app.clone());
        let tokens_file = tokens::default_path();
        tauri::async_runtime::spawn(listen(served, settings.port, resolve, tokens_file));
    }
}

/// Each host session is attached to the app's supervisor as a `lifeline connect` bridge is.
pub fn resolver<R: Runtime>(app: AppHandle<R>) -> Resolve {
    Arc::new(move |name: String| {
        let app = app.clone();
        Box::pin(async move {
            match app.try_state::<AppState>() {
                Some(state) => state.attach(&Request { name, config: None }).await,
                None => Err((
                    Refusal::Closing,
                    "the app is not running its servers yet".into(),
                )),
            }
        })
    })
}

/// Listens on 127.0.0.1:`port` with the tokens of `tokens_file`, and says so in `served`.
pub async fn listen(
    served: Arc<Served>,
    port: u16,
    resolve: Resolve,
    tokens_file: Option<PathBuf>,
) {
    {
        let mut view = served.view.lock().expect("view lock");
        view.enabled = true;
        view.tokens_file = tokens_file.as_ref().map(|p| p.display().to_string());
    }
    let Some(tokens_file) = tokens_file else {
        served.view.lock().expect("view lock").error =
            Some("no data directory for the tokens file".into());
        return;
    };
    match Endpoint::bind(port, resolve, Auth::Tokens(Tokens::new(tokens_file))).await {
        Ok(endpoint) => {
            let port = endpoint.addr().port();
            let url = http::url(port, "NAME");
            tracing::info!("serving the servers over HTTP at {url}");
            {
                let mut view = served.view.lock().expect("view lock");
                view.url = Some(url);
                view.port = Some(port);
            }
            *served.endpoint.lock().await = Some(endpoint);
        }
        Err(e) => {
            let why = format!(
                "cannot listen on 127.0.0.1:{port} ({e}); set another `lifeline.serve.port`"
            );
            tracing::warn!("the HTTP endpoint is off: {why}");
            served.view.lock().expect("view lock").error = Some(why);
        }
    }
}

/// The local HTTP endpoint: whether it is on, its URL, where the tokens are.
#[tauri::command]
pub fn gateway_endpoint(served: tauri::State<'_, Arc<Served>>) -> EndpointView {
    served.view()
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
        let (app, webview) = crate::ipc_tests::app();
        start(app.handle(), ServeSettings::default());
        let view = crate::ipc_tests::invoke(&webview, "gateway_endpoint", json!({})).unwrap();
        assert_eq!(view["enabled"], false);
        assert_eq!(view["url"], serde_json::Value::Null);
    }
}
