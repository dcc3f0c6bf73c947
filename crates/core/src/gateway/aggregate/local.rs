//! The aggregated endpoint served from this process: a supervisor for each enabled server
//! of a config, for one host (`lifeline connect --all` when no app serves it). Each server
//! holds its first attempt for the host's `initialize` (bounded), so it is initialized with
//! the host's client capabilities the first time, as `lifeline connect NAME` does.

use super::AggregateOptions;
use crate::config::{Config, Profile};
use crate::error::Error;
use crate::events::EventBus;
use crate::gateway::attach::Refusal;
use crate::gateway::hosts::Hosts;
use crate::gateway::names::store;
use crate::gateway::{GatewayOptions, Served};
use crate::supervisor::{Supervisor, fleet};
use std::sync::Arc;
use std::time::Duration;

/// Starts a supervisor for each enabled server of `config` that `profile` serves, on
/// `bus`, each with its gateway options (its waits, its secrets scrubbed, recorded in
/// `hosts`). A disabled server is left out; a server whose settings do not build is an
/// error before anything starts.
pub fn start_local(
    config: &Config,
    profile: &Profile,
    bus: &Arc<EventBus>,
    hosts: Option<&Hosts>,
    hold: Duration,
) -> Result<Vec<(Arc<Supervisor>, GatewayOptions)>, Error> {
    let servers: Vec<_> = config
        .servers
        .iter()
        .filter(|s| !s.disabled && profile.serves(&s.name))
        .collect();
    let configs = fleet::configs(servers.iter().copied())?;
    Ok(servers
        .into_iter()
        .zip(configs)
        .map(|(server, cfg)| {
            let options = GatewayOptions {
                hosts: hosts.cloned(),
                ..GatewayOptions::for_server(server)
            };
            cfg.hosts.hold_first_attempt(hold);
            (Arc::new(Supervisor::spawn(cfg, bus.clone())), options)
        })
        .collect())
}

/// Stops the servers of a session that ended, all at once, each within `limit`. One still
/// held elsewhere (a request that outlived the session) is left to the process's exit.
pub async fn stop_local(servers: Vec<Arc<Supervisor>>, limit: Duration) {
    let stops = servers.into_iter().map(|s| async move {
        let name = s.name().to_owned();
        match Arc::try_unwrap(s) {
            Ok(s) => {
                let _ = tokio::time::timeout(limit, s.stop()).await;
            }
            Err(_) => tracing::warn!("a request still held `{name}`; leaving it to the exit"),
        }
    });
    futures_util::future::join_all(stops).await;
}

/// What serves profile `name` of `config` with supervisors already running (the app's
/// fleet, `lifeline serve`'s): every enabled server the profile serves that `share` gives a
/// handle on, each with its gateway options, recorded in `hosts`. Names are kept in the
/// store beside the history. An unknown profile is refused, naming the profiles there are.
pub fn serve_profile(
    config: &Config,
    name: &str,
    share: impl Fn(&str) -> Option<Arc<Supervisor>>,
    hosts: Option<&Hosts>,
) -> Result<Served, (Refusal, String)> {
    let Some(profile) = config.profile(name) else {
        let known = config.profile_names().join(", ");
        return Err((
            Refusal::Unknown,
            format!("there is no profile `{name}` in the config; its profiles are: {known}"),
        ));
    };
    let servers = config
        .servers
        .iter()
        .filter(|s| !s.disabled && profile.serves(&s.name))
        .filter_map(|server| {
            let options = GatewayOptions {
                hosts: hosts.cloned(),
                ..GatewayOptions::for_server(server)
            };
            Some((share(&server.name)?, options))
        })
        .collect();
    let options = AggregateOptions {
        profile,
        separator: config.separator.clone(),
        names: store::default_path(),
        ..AggregateOptions::default()
    };
    Ok(Served::Aggregate(servers, options))
}
