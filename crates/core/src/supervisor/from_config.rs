//! Builds a supervisor's settings from a validated `config::ServerConfig`.

use super::state::Policy;
use super::{Connector, SupervisorConfig};
use crate::config::{ServerConfig, TransportConfig, Trust};
use crate::error::{Error, Stage};
use crate::policy::{Backoff, Quarantine};
use crate::protocol::revision::Revision;
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
        // Values expanded into args or a URL are secrets too; the transport only knows
        // its env and header values, so every connection also scrubs the server's own.
        // So are the OAuth tokens held when a connection opens.
        let secrets = crate::redact::Redactor::new(server.secrets());
        let http_config = server.http_config();
        let auth = http_config.as_ref().and_then(|c| c.auth.clone());
        let scrubbing = |open: Connector| -> Connector {
            let secrets = secrets.clone();
            let auth = auth.clone();
            Arc::new(move || {
                let mut conn = open()?;
                conn.redactor.add(&secrets);
                if let Some(auth) = &auth {
                    conn.redactor
                        .add(&crate::redact::Redactor::new(auth.secrets()));
                }
                Ok(conn)
            })
        };
        let pinned = server.protocol.pinned();
        let mut stateless_first = false;
        let (first_stage, connector, fallback) = match &server.transport {
            TransportConfig::Stdio { .. } => {
                let config = server.stdio_config().expect("a stdio server");
                let open: Connector = Arc::new(move || stdio::spawn(&config));
                (Stage::Spawn, open, None)
            }
            TransportConfig::Http { .. } | TransportConfig::Sse { .. } => {
                // One authorizer for both transports and the supervisor.
                let mut config = http_config.expect("an http server");
                config.request_timeout = config.request_timeout.min(server.policy.timeouts.request);
                let forced_legacy = matches!(server.transport, TransportConfig::Sse { .. })
                    || pinned == Some(Revision::LEGACY_SSE);
                let legacy_config = config.clone();
                let legacy: Connector = Arc::new(move || http::legacy::connect(&legacy_config));
                if forced_legacy {
                    (Stage::Connect, legacy, None)
                } else {
                    let streamable: Connector = Arc::new(move || http::connect(&config));
                    // Only `auto` may fall back; a pinned revision is never changed.
                    let fallback = server.protocol.pinned().is_none().then_some(legacy);
                    stateless_first = true;
                    (Stage::Connect, streamable, fallback)
                }
            }
        };
        let connector = scrubbing(connector);
        let fallback = fallback.map(scrubbing);
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
        cfg.fallback = fallback;
        cfg.session.pinned = pinned;
        cfg.protocol = server.protocol;
        cfg.stateless_first = stateless_first;
        cfg.auth = auth;
        cfg.pins = match server.policy.trust {
            Trust::Pin => crate::pins::book::shared(),
            Trust::Off => None,
        };
        Ok(cfg)
    }
}
