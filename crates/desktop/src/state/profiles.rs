//! The Profiles view (docs/config.md, "Profiles view"): for each profile of the config the
//! app runs, what a host would be shown on the one endpoint — the core's
//! `aggregate::preview` over the app's supervisors' tools now, with the names of a host
//! Lifeline cannot identify (the strictest, so they fit every host) and the entry
//! `lifeline` — and who uses it: the HTTP clients whose token is bound to it, and the hosts
//! attached to it through the app now. The switch that turns one tool on or off is the
//! config's edit path (`config/changes.rs`, `set_tool_shown`).

use super::{AppState, lock, running};
use crate::error::ErrorView;
use lifeline_core::config::Config;
use lifeline_core::gateway::GatewayOptions;
use lifeline_core::gateway::aggregate::{ProfilePreview, preview};
use lifeline_core::gateway::http::tokens::Client;
use lifeline_core::gateway::names::{ClientKind, Remembered, store};
use lifeline_core::protocol::mcp::Tool;
use lifeline_core::supervisor::Supervisor;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

/// The host the view's names are fitted to: one Lifeline cannot identify gets the strictest
/// budget, so its names fit every host.
const CLIENT: ClientKind = ClientKind::Unknown;
/// Lifeline's entry in a host's config, which the host puts in front of every tool name.
const ENTRY: &str = "lifeline";

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
    /// The hosts attached to it through the app now (bridges and HTTP sessions).
    pub attached: u32,
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
/// config's order), the clients' tokens, the hosts attached per profile, the names kept.
pub(crate) struct Inputs<'a> {
    pub servers: &'a [(String, Vec<Tool>)],
    pub tokens: &'a Result<Vec<Client>, String>,
    pub attached: &'a BTreeMap<String, u32>,
    pub remembered: &'a Remembered,
}

/// The Profiles view of `config`. Pure.
pub(crate) fn view(config: &Config, inputs: &Inputs<'_>) -> ProfilesView {
    let profiles = config
        .profile_names()
        .into_iter()
        .filter_map(|name| config.profile(name))
        .map(|profile| {
            let preview = preview(
                &profile,
                &config.separator,
                CLIENT,
                ENTRY,
                inputs.servers,
                inputs.remembered,
            );
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
                attached: inputs.attached.get(&profile.name).copied().unwrap_or(0),
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

/// The aggregated sessions the app serves, by profile: a session holds the supervisors it
/// was given while it lasts (unless the config took them out of the profile since), so it
/// is open while one of them is held.
#[derive(Default)]
pub(crate) struct Sessions(Mutex<Vec<(String, Vec<Weak<Supervisor>>)>>);

impl Sessions {
    /// A session of `profile` was handed `servers`.
    pub(crate) fn opened(&self, profile: &str, servers: Vec<Weak<Supervisor>>) {
        lock(&self.0).push((profile.to_owned(), servers));
    }

    /// How many sessions of each profile are open now; the ended ones are forgotten.
    pub(crate) fn open(&self) -> BTreeMap<String, u32> {
        let mut sessions = lock(&self.0);
        sessions.retain(|(_, servers)| servers.iter().any(|s| s.strong_count() > 0));
        let mut out = BTreeMap::new();
        for (profile, _) in sessions.iter() {
            *out.entry(profile.clone()).or_insert(0) += 1;
        }
        out
    }
}

impl AppState {
    /// The Profiles view now; `tokens` are the HTTP clients' tokens (the endpoint's file),
    /// or why they could not be read.
    pub async fn profiles(
        &self,
        tokens: Result<Vec<Client>, String>,
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
        let remembered = remembered(&config).await;
        let inputs = Inputs {
            servers: &servers,
            tokens: &tokens,
            attached: &self.profile_sessions.open(),
            remembered: &remembered,
        };
        Ok(view(&config, &inputs))
    }

    /// Counts a new session of `profile` open while it holds one of the `servers` it was
    /// given (a session that follows the config may let go of them all and not be counted).
    pub(crate) fn profile_session(
        &self,
        profile: &str,
        servers: &[(Arc<Supervisor>, GatewayOptions)],
    ) {
        let held = servers.iter().map(|(s, _)| Arc::downgrade(s)).collect();
        self.profile_sessions.opened(profile, held);
    }
}

/// The names the app's aggregated sessions gave before at the view's budget (the names file
/// beside the history), read off the runtime's threads; none when there is no such file.
async fn remembered(config: &Config) -> Remembered {
    let Some(path) = store::default_path() else {
        return Remembered::new();
    };
    let separator = config.separator.clone();
    let budget = CLIENT.name_budget(ENTRY);
    tokio::task::spawn_blocking(move || store::load(&path, store::List::Tools, budget, &separator))
        .await
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "profiles_tests.rs"]
mod tests;
