//! Running the configured servers from the command line: load the config, wait for a
//! signal or a duration, name an unknown server helpfully.

use crate::output::Out;
use lifeline_core::config::{self, Config};
use lifeline_core::diagnostics::redact::Redactor;
use lifeline_core::{Error, ErrorKind};
use std::path::Path;
use std::time::Duration;

/// Loads the config named by `--config`, `LIFELINE_CONFIG` or the default location.
pub fn load(path: Option<&Path>) -> Result<Config, Error> {
    let path = config::resolve_path(path).map_err(Error::from)?;
    config::load(&path).map_err(Error::from)
}

/// Loads the config and an output whose redactor knows every secret in it; on failure,
/// reports and returns the exit code.
pub fn load_for_output(path: Option<&Path>, json: bool) -> Result<(Config, Out), i32> {
    let mut out = Out {
        json,
        redactor: Redactor::default(),
    };
    let config = load(path).map_err(|e| out.error(&e))?;
    out.redactor = Redactor::new(config.secrets());
    Ok((config, out))
}

/// Resolves on SIGINT or SIGTERM, or after `limit` if given. The signal handlers are
/// installed by this call, not when the future is first polled: a signal that arrived in
/// between would take the default action and kill the process without disposal, leaving
/// stdio servers (each in its own process group) running.
pub fn until_stopped(limit: Option<Duration>) -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    async fn recv(s: Option<&mut tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    async move {
        let timer = async {
            match limit {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = recv(int.as_mut()) => {}
            _ = recv(term.as_mut()) => {}
            _ = timer => {}
        }
    }
}

/// The error for a server name that is not in the config, listing the names that are.
pub fn unknown_server(config: &Config, name: &str) -> Error {
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    let known = if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    };
    let path = config
        .path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    Error::new(
        ErrorKind::Config,
        format!(
            "no server named `{name}` in {path} (configured: {known}); TARGET may also be an http(s):// URL or stdio:COMMAND"
        ),
    )
}
