//! Builds a supervisor's settings from a validated `config::ServerConfig`.

use super::state::Policy;
use super::{Connector, SupervisorConfig};
use crate::config::{ServerConfig, TransportConfig};
use crate::error::{Error, Stage};
use crate::policy::{Backoff, Quarantine};
use crate::transport::{http, stdio};
use std::sync::Arc;

impl SupervisorConfig {
    /// `seed` feeds the jitter; give each server its own so that they disperse.
    pub fn from_server(server: &ServerConfig, seed: u64) -> Result<SupervisorConfig, Error> {
        let r = &server.policy.reconnect;
        let policy = Policy {
            backoff: Backoff::try_new(r.initial_delay, r.max_delay, r.max_attempts)?,
            quarantine: Quarantine::try_new(r.quarantine)?,
            reconnect: r.enabled,
        };
        let (first_stage, connector): (Stage, Connector) = match &server.transport {
            TransportConfig::Stdio { .. } => {
                let config = server.stdio_config().expect("a stdio server");
                (Stage::Spawn, Arc::new(move || stdio::spawn(&config)))
            }
            TransportConfig::Http { .. } => {
                let mut config = server.http_config().expect("an http server");
                config.request_timeout = config.request_timeout.min(server.policy.timeouts.request);
                (Stage::Connect, Arc::new(move || http::connect(&config)))
            }
            TransportConfig::Sse { .. } => {
                let name = server.name.clone();
                let connector: Connector = Arc::new(move || {
                    Err(Error::config(format!(
                        "`{name}` uses the legacy HTTP+SSE transport (type \"sse\"), which this \
                         version of Lifeline does not speak yet; use the server's Streamable HTTP \
                         endpoint (type \"http\") if it has one"
                    )))
                });
                (Stage::Connect, connector)
            }
        };
        // Values expanded into args or a URL are secrets too; the transport only knows
        // its env and header values, so every connection also scrubs the server's own.
        let secrets = crate::diagnostics::redact::Redactor::new(server.secrets());
        let open = connector;
        let connector: Connector = Arc::new(move || {
            let mut conn = open()?;
            conn.redactor.add(&secrets);
            Ok(conn)
        });
        let t = &server.policy.timeouts;
        let mut cfg = SupervisorConfig::new(server.name.clone(), first_stage, connector);
        cfg.policy = policy;
        cfg.establish = t.establish;
        cfg.request_timeout = t.request;
        cfg.ping_interval = t.ping_interval;
        cfg.ping_timeout = t.ping_timeout;
        cfg.max_concurrent_calls = server.policy.max_concurrent_calls as usize;
        cfg.seed = seed;
        cfg.disabled = server.disabled;
        Ok(cfg)
    }
}
