//! Who uses a profile, and how each kind of host would be given it, for the Profiles view
//! (`profiles.rs`): the entries of the clients' config files that serve a profile
//! (`clients::profile::endpoints`), each known host's names, counts and limit where they
//! differ from the view's own (`HostPreview`), the aggregated sessions attached now by the
//! name each host gave (`Sessions`), and the names kept on disk at each budget.

use super::lock;
use lifeline_core::config::Separator;
use lifeline_core::config::clients::profile::{DEFAULT_ENTRY, Endpoint};
use lifeline_core::config::clients::{self, Client as ClientFile};
use lifeline_core::gateway::aggregate::{HostName, ProfilePreview};
use lifeline_core::gateway::names::{ClientKind, Remembered, store};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

/// A client's config entry that serves a profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ProfileClient {
    /// `claude-desktop`, `claude-code`, `cursor`, `vscode`.
    pub client: String,
    pub label: String,
    /// Where the entry is: `mcpServers.lifeline`.
    pub field: String,
    /// The client's file.
    pub path: String,
}

/// A profile as one kind of host would be given it, where that differs from the view's
/// `preview` (the names of a host Lifeline cannot identify).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct HostPreview {
    /// The kind (`claude-code`, …), as `--client` takes it.
    pub client: String,
    pub label: String,
    /// Lifeline's entry in that host's config, which its names make room for: the entry
    /// of a client file serving the profile, else `lifeline`.
    pub entry: String,
    pub budget: usize,
    pub listed: usize,
    pub tokens: usize,
    pub limit: Option<usize>,
    pub over_limit: Option<String>,
    /// The shown tools whose name at this host is not the one `preview` gives.
    pub renamed: Vec<Renamed>,
}

/// A tool's name at one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Renamed {
    pub server: String,
    pub tool: String,
    pub name: String,
    /// Why it is not `server` + separator + `tool`; `null` when it is.
    pub changed: Option<String>,
}

/// An entry of a client's file that serves a profile (`clients::endpoints`).
#[derive(Debug, Clone)]
pub(crate) struct Use {
    pub client: ClientFile,
    pub path: PathBuf,
    pub endpoint: Endpoint,
}

/// Lifeline's entry at host `kind` for `profile`: a client file's entry serving it, else
/// `lifeline`.
pub(crate) fn entry_at<'a>(uses: &'a [Use], profile: &str, kind: ClientKind) -> &'a str {
    (uses.iter())
        .find(|u| {
            u.endpoint.profile == profile && ClientKind::of_entry(&u.endpoint, u.client) == kind
        })
        .map_or(DEFAULT_ENTRY, |u| u.endpoint.entry.as_str())
}

/// `theirs` (the profile at host `kind`) as it differs from `base`.
pub(crate) fn host_preview(
    kind: ClientKind,
    entry: &str,
    base: &ProfilePreview,
    theirs: ProfilePreview,
) -> HostPreview {
    let renamed = (theirs.tools.into_iter().zip(&base.tools))
        .filter(|(t, b)| t.name.is_some() && t.name != b.name)
        .map(|(t, _)| Renamed {
            name: t.name.unwrap_or_default(),
            server: t.server,
            tool: t.tool,
            changed: t.changed,
        })
        .collect();
    HostPreview {
        client: kind.as_str().to_owned(),
        label: kind.label().to_owned(),
        entry: entry.to_owned(),
        budget: theirs.budget,
        listed: theirs.listed,
        tokens: theirs.tokens,
        limit: theirs.limit,
        over_limit: theirs.over_limit,
        renamed,
    }
}

/// Every entry of the clients' files (each client's first file found) that serves a
/// profile; a file that cannot be read or parsed serves none here (the Hosts view says why).
pub(crate) fn uses(files: &[(ClientFile, Vec<PathBuf>)]) -> Vec<Use> {
    let mut out = Vec::new();
    for (client, paths) in files {
        let Some(path) = paths.iter().find(|p| p.is_file()) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for endpoint in clients::profile::endpoints(*client, path, &text).unwrap_or_default() {
            out.push(Use {
                client: *client,
                path: path.clone(),
                endpoint,
            });
        }
    }
    out
}

/// The aggregated sessions the app serves, by profile: each session holds the slot of its
/// host's name for its life, so it is open while its slot is held.
#[derive(Default)]
pub(crate) struct Sessions(Mutex<Vec<(String, Weak<std::sync::OnceLock<String>>)>>);

impl Sessions {
    /// A session of `profile` opens; the slot its host's name goes in.
    pub(crate) fn opened(&self, profile: &str) -> HostName {
        let slot = HostName::default();
        lock(&self.0).push((profile.to_owned(), Arc::downgrade(&slot)));
        slot
    }

    /// The hosts of each profile's open sessions, by name; the ended ones are forgotten.
    pub(crate) fn open(&self) -> BTreeMap<String, Vec<Option<String>>> {
        let mut sessions = lock(&self.0);
        sessions.retain(|(_, slot)| slot.strong_count() > 0);
        let mut out: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
        for (profile, slot) in sessions.iter() {
            let name = slot.upgrade().and_then(|s| s.get().cloned());
            out.entry(profile.clone()).or_default().push(name);
        }
        out
    }
}

/// The names the app's aggregated sessions gave before (the names file beside the history)
/// at each budget the view fits names to; none when there is no such file. Blocking.
pub(crate) fn remembered(uses: &[Use], separator: &Separator) -> BTreeMap<usize, Remembered> {
    let Some(path) = store::default_path() else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    let entries = (uses.iter().map(|u| u.endpoint.entry.as_str())).chain([DEFAULT_ENTRY]);
    for entry in entries {
        for kind in ClientKind::ALL {
            let budget = kind.name_budget(entry);
            out.entry(budget)
                .or_insert_with(|| store::load(&path, store::List::Tools, budget, separator));
        }
    }
    out
}
