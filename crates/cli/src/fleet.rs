//! Running the configured servers' supervisors from the command line: load the config,
//! start one supervisor per server on one event bus, wait for a signal or a duration,
//! and dispose of everything.

use lifeline_core::config::{self, Config};
use lifeline_core::events::EventBus;
use lifeline_core::supervisor::{Supervisor, SupervisorConfig};
use lifeline_core::{Error, ErrorKind};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Loads the config named by `--config`, `LIFELINE_CONFIG` or the default location.
pub fn load(path: Option<&Path>) -> Result<Config, Error> {
    let path = config::resolve_path(path).map_err(Error::from)?;
    config::load(&path).map_err(Error::from)
}

/// Starts a supervisor per server (disabled ones too: they report `disabled`). Each gets
/// its own jitter seed so that servers failing together do not retry together.
pub fn spawn_all(config: &Config, bus: &Arc<EventBus>) -> Result<Vec<Supervisor>, Error> {
    let base = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    config
        .servers
        .iter()
        .enumerate()
        .map(|(i, server)| {
            let seed = base ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let cfg = SupervisorConfig::from_server(server, seed)?;
            Ok(Supervisor::spawn(cfg, bus.clone()))
        })
        .collect()
}

/// Stops every supervisor at once (each is bounded) and waits for all of them.
pub async fn stop_all(supervisors: Vec<Supervisor>) {
    let stops: Vec<_> = supervisors
        .into_iter()
        .map(|s| tokio::spawn(s.stop()))
        .collect();
    for s in stops {
        let _ = s.await;
    }
}

/// Resolves on SIGINT or SIGTERM, or after `limit` if given.
pub async fn until_stopped(limit: Option<Duration>) {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    let timer = async {
        match limit {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
        _ = timer => {}
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
