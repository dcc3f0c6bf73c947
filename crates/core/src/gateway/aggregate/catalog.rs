//! The aggregated tool list: every listed server's tools under host names. A server is
//! listed unless it gave up, was retired or disabled, or is stopping (its tools leave the
//! list, and come back with it); one reconnecting or quarantined keeps its last tools, so a
//! flap is no list change. Names come from `names::Names` at the host's budget, seeded with
//! every name given before (this session's, and the store's), so they do not move.

use super::{Aggregate, search_mode};
use crate::events::{Generation, StateName};
use crate::gateway::names::{Change, Names, Remembered, Separator, store};
use crate::gateway::search::Index;
use crate::gateway::{Shared, ToolSet, Upstream, errors, forward};
use crate::protocol::mcp::Tool;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::SystemTime;
use tokio::time::Instant;

/// The tool list as one host is given it, and the map its calls are routed by.
pub(crate) struct Catalog {
    pub(crate) names: Names,
    /// The tools as the host is sent them: each server's own JSON under its host name.
    pub(crate) tools: Vec<Value>,
    /// What the host is shown, as names and entries, sorted: what a change of is a list
    /// change (in search mode, the meta-tools: never).
    pub(crate) fingerprint: ToolSet,
    /// Search mode's index of `tools`.
    pub(crate) index: Option<Index>,
}

impl Catalog {
    /// The tool the host knows as `name` (case ignored, as routing ignores it).
    pub(crate) fn tool(&self, name: &str) -> Option<&Value> {
        let (server, own) = self.names.route(name)?;
        let host = self.names.host_name(server, own)?;
        self.tools.iter().find(|t| t["name"] == host)
    }
}

/// Whether `up`'s tools are in the list: not when it will not come back on its own soon.
pub(crate) fn listed(up: &Upstream) -> bool {
    let state = up.supervisor.snapshot().state.state;
    !matches!(
        state,
        Some(StateName::GaveUp | StateName::Retired | StateName::Disabled | StateName::Stopping)
    )
}

/// Each listed server, the tools of it the profile shows, in the session's order, and the
/// ones of them the pins hold for review (named, so that a host calling one is told why,
/// and its name does not move when it is approved; not listed).
fn gathered(shared: &Shared, agg: &Aggregate) -> Vec<(Arc<Upstream>, Vec<Tool>, Vec<String>)> {
    let profile = &agg.profile();
    let mut offered = 0;
    let servers: Vec<_> = shared
        .upstreams()
        .iter()
        .filter(|up| listed(up) && profile.serves(up.supervisor.name()))
        .map(|up| {
            let name = up.supervisor.name();
            let mut tools = up.supervisor.tools();
            offered += tools.len();
            tools.retain(|t| profile.shows(name, &t.name));
            let mut held = up.supervisor.held_tools();
            held.retain(|t| profile.shows(name, t));
            (up.clone(), tools, held)
        })
        .collect();
    let shown: usize = servers.iter().map(|(_, t, _)| t.len()).sum();
    if offered > 0 && shown == 0 && !agg.warned_empty.swap(true, Ordering::SeqCst) {
        tracing::warn!(
            "profile `{}` shows none of the {offered} tools of its servers; check its `tools` \
             filters in the config",
            profile.name
        );
    }
    servers
}

impl Catalog {
    /// The catalog of the servers' tools now. Loads the names kept on disk the first time
    /// (per budget), and keeps the names given in the store (off the runtime's threads).
    pub(crate) async fn build(shared: &Shared, agg: &Aggregate) -> Catalog {
        let budget = agg.budget();
        let remembered = remembered(agg, store::List::Tools, budget).await;
        let gathered = gathered(shared, agg);
        let servers: Vec<(&str, Vec<Tool>)> = gathered
            .iter()
            .map(|(up, tools, _)| (up.supervisor.name(), tools.clone()))
            .collect();
        let held: Vec<(&str, &str)> = (gathered.iter())
            .flat_map(|(up, _, held)| held.iter().map(|t| (up.supervisor.name(), t.as_str())))
            .collect();
        let catalog = assemble(
            &servers,
            &held,
            budget,
            &agg.options.separator,
            &remembered,
            agg.profile().search(),
        );
        keep(agg, store::List::Tools, &catalog.names).await;
        catalog
    }
}

/// The catalog of `servers`' tools (the ones shown, in order) under names at `budget`,
/// seeded with `remembered`; in search mode with its index. `held` (server, tool) pairs
/// are named and routed but not listed. Pure.
pub(crate) fn assemble(
    servers: &[(&str, Vec<Tool>)],
    held: &[(&str, &str)],
    budget: usize,
    separator: &Separator,
    remembered: &Remembered,
    search: bool,
) -> Catalog {
    let pairs = servers
        .iter()
        .flat_map(|(server, tools)| tools.iter().map(move |t| (*server, t.name.as_str())))
        .chain(held.iter().copied());
    let names = Names::assign(pairs, budget, separator, remembered);
    let mut tools = Vec::new();
    let mut fingerprint = ToolSet::new();
    for (server, list) in servers {
        for tool in list {
            let Some(entry) = names.entry(server, &tool.name) else {
                continue;
            };
            let mut json = tool.raw_json();
            json["name"] = Value::from(entry.name.as_str());
            if matches!(entry.change, Change::Shortened(_)) && tool.title.is_none() {
                // People still see the tool's own name.
                json["title"] = Value::from(tool.name.as_str());
            }
            tools.push(json);
            fingerprint.push((entry.name.clone(), tool.shared_json()));
        }
    }
    fingerprint.sort_by(|a, b| a.0.cmp(&b.0));
    let index = search.then(|| {
        Index::build(
            tools
                .iter()
                .map(|t| (t["name"].as_str().unwrap_or_default(), t)),
        )
    });
    if search {
        fingerprint = search_mode::fingerprint();
    }
    Catalog {
        names,
        tools,
        fingerprint,
        index,
    }
}

/// The names of `list` given before at `budget`: this session's, else the store's.
pub(super) async fn remembered(agg: &Aggregate, list: store::List, budget: usize) -> Remembered {
    let mine = agg.kept(list).lock().expect("remembered lock").clone();
    if !mine.is_empty() {
        return mine;
    }
    let Some(path) = agg.options.names.clone() else {
        return mine;
    };
    let separator = agg.options.separator.clone();
    tokio::task::spawn_blocking(move || store::load(&path, list, budget, &separator))
        .await
        .unwrap_or_default()
}

/// Adds `names` to the session's of `list`, and to the store when any is new.
pub(super) async fn keep(agg: &Aggregate, list: store::List, names: &Names) {
    let fresh = {
        let mut mine = agg.kept(list).lock().expect("remembered lock");
        let before = mine.len();
        let changed = names
            .entries()
            .iter()
            .any(|e| mine.get(&(e.server.clone(), e.tool.clone())) != Some(&e.name));
        mine.extend(names.remembered());
        changed || mine.len() != before
    };
    let Some(path) = agg.options.names.clone().filter(|_| fresh) else {
        return;
    };
    let names = names.clone();
    let kept =
        tokio::task::spawn_blocking(move || store::record(&path, list, &names, SystemTime::now()))
            .await;
    if let Ok(Err(e)) = kept {
        tracing::warn!("gateway: could not keep the {} names: {e}", list.noun());
    }
}

/// Before the first list: waits (in parallel, bounded by the list wait) for each listed
/// server that has no tools yet to be ready, so a host that lists at once gets them.
pub(crate) async fn wait_for_first_tools(shared: &Shared, agg: &Aggregate) {
    let wait = agg.options.list_wait;
    let deadline = Instant::now() + wait;
    let upstreams = shared.upstreams();
    let waiting = upstreams
        .iter()
        .filter(|up| listed(up) && !up.supervisor.has_tools())
        .filter(|up| !errors::is_halted(up.supervisor.snapshot().state.state))
        .map(|up| forward::ready(up, Generation(0), deadline, wait));
    futures_util::future::join_all(waiting).await;
}
