//! The Profiles view (docs/config.md, "Profiles view"): for each profile of the config the
//! app runs, what a host would be shown on the one endpoint — the core's
//! `aggregate::preview` over the app's supervisors' tools now, with the names of a host
//! Lifeline cannot identify (the strictest, so they fit every host) and, for each host
//! Lifeline knows the limits of, the names and counts that host would get instead — and
//! who uses it: the clients whose config file has an entry serving it, the HTTP clients
//! whose token is bound to it, and the hosts attached to it through the app now, by the
//! name each gave itself. The switch that turns one tool on or off is the config's edit
//! path (`config/changes.rs`, `set_tool_shown`).

pub use super::profile_hosts::{HostPreview, ProfileClient, Renamed};
pub(crate) use super::profile_hosts::{Sessions, Use};

use super::profile_hosts::{entry_at, host_preview, remembered, uses};
use super::{AppState, running};
use crate::error::ErrorView;
use lifeline_core::config::Config;
use lifeline_core::config::clients::Client as ClientFile;
use lifeline_core::gateway::aggregate::{HostName, ProfilePreview, preview};
use lifeline_core::gateway::http::tokens::Client;
use lifeline_core::gateway::names::{ClientKind, Remembered};
use lifeline_core::protocol::mcp::Tool;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The host the view's names are fitted to: one Lifeline cannot identify gets the strictest
/// budget, so its names fit every host.
const CLIENT: ClientKind = ClientKind::Unknown;

/// What `profiles_get` answers.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct ProfilesView {
    /// Every profile, `default` first unless the file places it.
    pub profiles: Vec<ProfileView>,
    /// The HTTP clients whose token is bound to no profile: each may open any of them.
    pub unbound: Vec<String>,
    /// Why the clients' tokens could not be read, when they could not.
    pub tokens_problem: Option<String>,
}

/// One profile as a host would be given it, and who uses it.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct ProfileView {
    pub preview: ProfilePreview,
    /// Whether the file defines it (`default` otherwise is every enabled server).
    pub defined: bool,
    /// Its servers with no tools now (not connected yet, or listing none).
    pub no_tools: Vec<String>,
    /// The HTTP clients whose token is bound to it.
    pub tokens: Vec<String>,
    /// The clients whose config file has an entry serving it (`lifeline connect --profile`,
    /// or `--all` for `default`).
    pub clients: Vec<ProfileClient>,
    /// The hosts attached to it through the app now (bridges and HTTP sessions), by the
    /// name each gave itself; `null` for one that has not said it yet.
    pub attached: Vec<Option<String>>,
    /// What each host Lifeline knows the limits of would be given instead of `preview`'s
    /// names and counts, in `ClientKind`'s order.
    pub hosts: Vec<HostPreview>,
    /// The tools whose switch cannot turn them on or off, and why (none in search mode,
    /// where no switch can: `preview.search`).
    pub fixed: Vec<FixedTool>,
}

/// A tool of a profile that its switch cannot change (`config::fixed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct FixedTool {
    pub server: String,
    pub tool: String,
    pub why: String,
}

/// What the view is made of besides the config: each enabled server's tools now (in the
/// config's order), the clients' tokens, the clients' entries serving a profile, the hosts
/// attached per profile, the names kept (by budget).
pub(crate) struct Inputs<'a> {
    pub servers: &'a [(String, Vec<Tool>)],
    pub tokens: &'a Result<Vec<Client>, String>,
    pub uses: &'a [Use],
    pub attached: &'a BTreeMap<String, Vec<Option<String>>>,
    pub remembered: &'a BTreeMap<usize, Remembered>,
}

/// The Profiles view of `config`. Pure.
pub(crate) fn view(config: &Config, inputs: &Inputs<'_>) -> ProfilesView {
    let profiles = config
        .profile_names()
        .into_iter()
        .filter_map(|name| config.profile(name))
        .map(|profile| {
            let at = |kind: ClientKind| {
                let entry = entry_at(inputs.uses, &profile.name, kind);
                let remembered = inputs.remembered.get(&kind.name_budget(entry));
                let empty = Remembered::new();
                let remembered = remembered.unwrap_or(&empty);
                let servers = inputs.servers;
                (
                    entry,
                    preview(
                        &profile,
                        &config.separator,
                        kind,
                        entry,
                        servers,
                        remembered,
                    ),
                )
            };
            let (_, preview) = at(CLIENT);
            let hosts = (ClientKind::ALL.into_iter())
                .filter(|k| *k != CLIENT)
                .map(|kind| {
                    let (entry, theirs) = at(kind);
                    host_preview(kind, entry, &preview, theirs)
                })
                .collect();
            // In search mode no switch works: the view says so once, not per tool.
            let listed = if profile.search() {
                &[][..]
            } else {
                &preview.tools[..]
            };
            let fixed = (listed.iter())
                .filter_map(|t| {
                    let why = super::config::fixed(&profile, &t.server, &t.tool, !t.shown)?;
                    Some(FixedTool {
                        server: t.server.clone(),
                        tool: t.tool.clone(),
                        why,
                    })
                })
                .collect();
            let bound = |c: &&Client| c.profile.as_deref() == Some(profile.name.as_str());
            ProfileView {
                defined: config.profiles.iter().any(|p| p.name == profile.name),
                no_tools: (inputs.servers.iter())
                    .filter(|(s, tools)| tools.is_empty() && profile.serves(s))
                    .map(|(s, _)| s.clone())
                    .collect(),
                tokens: names(inputs.tokens.iter().flatten().filter(bound)),
                clients: (inputs.uses.iter())
                    .filter(|u| u.endpoint.profile == profile.name)
                    .map(|u| ProfileClient {
                        client: u.client.id().to_owned(),
                        label: super::clients::label(u.client).to_owned(),
                        field: u.endpoint.field.clone(),
                        path: u.path.display().to_string(),
                    })
                    .collect(),
                attached: (inputs.attached.get(&profile.name).cloned()).unwrap_or_default(),
                hosts,
                fixed,
                preview,
            }
        })
        .collect();
    let tokens = inputs.tokens.iter().flatten();
    ProfilesView {
        profiles,
        unbound: names(tokens.filter(|c| c.profile.is_none())),
        tokens_problem: inputs.tokens.as_ref().err().cloned(),
    }
}

fn names<'a>(clients: impl Iterator<Item = &'a Client>) -> Vec<String> {
    clients.map(|c| c.name.clone()).collect()
}

impl AppState {
    /// The Profiles view now; `tokens` are the HTTP clients' tokens (the endpoint's file),
    /// or why they could not be read; `files` the clients' config files (`ClientsEnv`).
    pub async fn profiles(
        &self,
        tokens: Result<Vec<Client>, String>,
        files: Vec<(ClientFile, Vec<PathBuf>)>,
    ) -> Result<ProfilesView, ErrorView> {
        let config = self.live_config().await;
        let servers: Vec<(String, Vec<Tool>)> = {
            let fleet = self.fleet.read().await;
            let fleet = running(&fleet)?;
            (config.servers.iter())
                .filter(|s| !s.disabled)
                .map(|s| {
                    (
                        s.name.clone(),
                        fleet.get(&s.name).map_or_else(Vec::new, |s| s.tools()),
                    )
                })
                .collect()
        };
        let separator = config.separator.clone();
        let (uses, remembered) = tokio::task::spawn_blocking(move || {
            let uses = uses(&files);
            let remembered = remembered(&uses, &separator);
            (uses, remembered)
        })
        .await
        .unwrap_or_default();
        let inputs = Inputs {
            servers: &servers,
            tokens: &tokens,
            uses: &uses,
            attached: &self.profile_sessions.open(),
            remembered: &remembered,
        };
        Ok(view(&config, &inputs))
    }

    /// A new aggregated session of `profile`: the slot of its host's name, which the
    /// session holds for its life (`AggregateOptions::host`).
    pub(crate) fn profile_session(&self, profile: &str) -> HostName {
        self.profile_sessions.opened(profile)
    }
}

#[cfg(test)]
#[path = "profiles_tests.rs"]
mod tests;
