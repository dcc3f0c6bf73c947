//! `lifeline connect --all` and `--profile P`: every enabled server (of the profile) behind
//! one stdio MCP server, the aggregated endpoint (`lifeline_core::gateway::aggregate`),
//! supervised in this process.
//! Tool names are `server__tool`, fitted to the host's name budget (`--client`, else what
//! its `initialize` says it is; `--entry`, the key of Lifeline's entry in the host's
//! config) and kept across runs beside the history. Ends when the host closes stdin,
//! stopping every server (bounded). docs/gateway.md, "One endpoint".

use crate::fleet;
use crate::output::{EXIT_OK, Out};
use lifeline_core::events::{EventBus, HostMode};
use lifeline_core::gateway::aggregate::{self, AggregateOptions};
use lifeline_core::gateway::hosts::Hosts;
use lifeline_core::gateway::names::{ClientKind, store};
use lifeline_core::gateway::{self};
use lifeline_core::redact::Redactor;
use lifeline_core::{Error, ErrorKind};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long the servers wait for the host's `initialize` before their first attempt.
const HOST_HOLD: Duration = Duration::from_secs(5);

/// How long stopping the servers may take on the way out.
const STOP_LIMIT: Duration = Duration::from_secs(15);

pub async fn run(
    config: Option<&Path>,
    profile: &str,
    client: Option<&str>,
    entry: Option<&str>,
) -> i32 {
    let out = Out {
        json: false,
        redactor: Redactor::default(),
    };
    let config = match fleet::load(config) {
        Ok(config) => config,
        Err(e) => return out.error(&e),
    };
    let Some(profile) = config.profile(profile) else {
        let known = config.profile_names().join(", ");
        let why =
            format!("there is no profile `{profile}` in the config; its profiles are: {known}");
        return out.error(&Error::new(ErrorKind::Config, why));
    };
    let client = match client.map(str::parse::<ClientKind>).transpose() {
        Ok(client) => client,
        Err(e) => return out.error(&Error::new(ErrorKind::Config, format!("--client: {e}"))),
    };
    let bus = Arc::new(EventBus::new(256));
    crate::connect::log_events(&bus);
    let hosts = Hosts::new(bus.clone(), HostMode::InProcess);
    let servers = match aggregate::start_local(&config, &profile, &bus, Some(&hosts), HOST_HOLD) {
        Ok(servers) => servers,
        Err(e) => return out.error(&e),
    };
    let supervisors: Vec<_> = servers.iter().map(|(s, _)| s.clone()).collect();
    let options = AggregateOptions {
        profile,
        separator: config.separator.clone(),
        client,
        entry: entry.unwrap_or("lifeline").to_owned(),
        names: store::default_path(),
        ..AggregateOptions::default()
    };
    let host = crate::host_stdio::open();
    gateway::serve_session(
        gateway::start_aggregate(servers, options),
        host.read,
        host.write,
    )
    .await;
    tracing::info!(
        "the host closed stdin; stopping {} servers",
        supervisors.len()
    );
    aggregate::stop_local(supervisors, STOP_LIMIT).await;
    EXIT_OK
}
