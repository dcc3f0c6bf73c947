//! What the app does when a `lifeline connect NAME` bridge attaches over the local endpoint
//! (`instance.rs` reads the request, `lifeline_core::gateway::attach` is the handshake):
//! it hands out a shared handle on its own supervisor for NAME and the gateway options for
//! it, so the host's calls run on the app's call lane and show in its activity feed.

use super::{AppState, lock};
use lifeline_core::gateway::aggregate;
use lifeline_core::gateway::attach::{Refusal, Request};
use lifeline_core::gateway::{GatewayOptions, Served, Target};
use lifeline_core::redact::Redactor;
use lifeline_core::supervisor::SupervisorConfig;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The longest `initialize` waits for the server's first ready (as `lifeline connect`).
const INITIALIZE_WAIT: Duration = Duration::from_secs(10);

impl AppState {
    /// What serves the host a bridge asked for: the app's supervisor for a server, shared,
    /// and how its gateway session waits; or a profile's supervisors behind the aggregated
    /// endpoint; or why not. A disabled server is attached all the same (the host is told it
    /// is disabled on each request, and enabling it in the app serves it).
    pub async fn attach(&self, request: &Request) -> Result<Served, (Refusal, String)> {
        if let Some(theirs) = &request.config {
            let ours = lock(&self.info).config_path.clone();
            if !ours
                .as_deref()
                .is_some_and(|o| same_file(Path::new(o), theirs))
            {
                return Err((
                    Refusal::Config,
                    format!(
                        "the app runs {}, not {}",
                        ours.as_deref().unwrap_or("the demo"),
                        theirs.display()
                    ),
                ));
            }
        }
        if *self.stopping.borrow() {
            return Err((Refusal::Closing, "the app is closing".into()));
        }
        let name = match &request.target {
            Target::Server(name) => name,
            Target::Profile(profile) => {
                let mut served = self.attach_profile(profile).await?;
                // A new session: the Profiles view shows its host while it lasts.
                if let Served::Aggregate(_, options) = &mut served {
                    options.host = Some(self.profile_session(profile));
                }
                return Ok(served);
            }
        };
        let fleet = self.fleet.read().await;
        let Some(fleet) = fleet.as_ref() else {
            return Err((Refusal::Closing, "the app is closing".into()));
        };
        let Some(supervisor) = fleet.get(name) else {
            return Err((
                Refusal::Unknown,
                format!("the app runs no server named `{name}`"),
            ));
        };
        let server = lock(&self.detail.servers)
            .iter()
            .find(|s| s.name == *name)
            .cloned();
        let mut options = GatewayOptions {
            hosts: Some(self.hosts.clone()),
            ..GatewayOptions::default()
        };
        if let Some(server) = server {
            options.redactor = Redactor::new(server.secrets());
            if let Ok(cfg) = SupervisorConfig::from_server(&server, 0) {
                options.request_wait = cfg.request_timeout;
                options.initialize_wait = cfg.request_timeout.min(INITIALIZE_WAIT);
            }
        }
        Ok(Served::Server(Arc::new(supervisor.share()), options))
    }

    /// Profile `profile` now and its servers (none when it is gone, or the app is closing):
    /// what an aggregated session attached to the app follows as the config changes.
    pub async fn profile_now(&self, profile: &str) -> aggregate::Now {
        match self.attach_profile(profile).await {
            Ok(Served::Aggregate(servers, options)) => aggregate::Now {
                servers,
                profile: Some(options.profile),
            },
            _ => aggregate::Now {
                servers: Vec::new(),
                profile: None,
            },
        }
    }

    /// The app's supervisors of profile `profile` of the config it runs, behind one
    /// aggregated session.
    async fn attach_profile(&self, profile: &str) -> Result<Served, (Refusal, String)> {
        let config = self.live_config().await;
        let fleet = self.fleet.read().await;
        let Some(fleet) = fleet.as_ref() else {
            return Err((Refusal::Closing, "the app is closing".into()));
        };
        let share = |name: &str| fleet.get(name).map(|s| Arc::new(s.share()));
        aggregate::serve_profile(&config, profile, share, Some(&self.hosts))
    }
}

/// Whether two paths name one file (as written when either cannot be resolved).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
