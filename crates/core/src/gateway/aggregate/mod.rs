//! One host session over several servers: the aggregated endpoint (`lifeline connect
//! --all`). The host sees one MCP server, `lifeline`, whose tools and prompts are every
//! server's under host names (`server__tool`, shortened to the host's budget: `names/`),
//! and whose resources are every server's under `lifeline://server/…` URIs
//! (`names::uris`). Each request is routed back by name or URI (never by parsing a name)
//! to its server, and from there goes exactly as through a per-server session (`forward`):
//! the wait for ready, the reissue rule, progress, cancel, the state-to-error mapping naming
//! the server. Lists are gathered from every server without waiting on a sick one
//! (`lists.rs`); the tool list is the catalog (`catalog.rs`), and the host hears one
//! `tools/list_changed` per burst of changes across all servers (`changes.rs`).

mod catalog;
mod changes;
mod lists;
mod local;
mod members;
mod preview;
mod search_mode;

pub(crate) use catalog::Catalog;
pub(crate) use changes::watch_tools;
pub use local::{serve_profile, start_local, stop_local};
pub(crate) use members::follow;
pub use members::{Current, Members, Now};
pub use preview::{ProfilePreview, ToolPreview, estimate_tokens, preview};

use super::names::{ClientKind, Remembered, Separator, store};
use super::{Shared, Upstream, errors, forward};
use crate::config::{DEFAULT_PROFILE, Profile};
use crate::events::Generation;
use crate::protocol::mcp::CLIENT_VERSION;
use crate::protocol::revision::Revision;
use crate::protocol::{Message, Request, Response, RpcError};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How an aggregated session names and waits.
#[derive(Debug, Clone)]
pub struct AggregateOptions {
    /// Which servers' tools the host is shown (`lifeline.profiles`; `default`: all).
    pub profile: Profile,
    /// Between a server's name and its tool's (`__`; `lifeline.separator`).
    pub separator: Separator,
    /// The key of Lifeline's entry in the host's config: hosts put it in front of every
    /// tool name, so it counts against the name budget.
    pub entry: String,
    /// The host's kind when the caller knows it (`--client`); else it is read from the
    /// host's `initialize` (`clientInfo.name`).
    pub client: Option<ClientKind>,
    /// Where names are kept across restarts (`names::store`); `None` keeps them for the
    /// session only.
    pub names: Option<PathBuf>,
    /// How long `initialize` and a list wait for servers still connecting; one that is not
    /// ready by then is left out, and `list_changed` follows when it comes.
    pub list_wait: Duration,
    /// How long the tool set must be quiet before the host hears that it changed.
    pub debounce: Duration,
    /// Where the servers come from as the config changes (`members.rs`); `None`: the
    /// servers the session started with, for its life.
    pub members: Option<Members>,
    /// Where the session puts the name the host gives itself in `initialize`, for whoever
    /// shows who is attached (the app's Profiles view); the session holds it for its life.
    pub host: Option<HostName>,
}

/// The name a host gave itself (`clientInfo.name` and `version`, cleaned: `host_name`), set
/// once by its session's `initialize`.
pub type HostName = Arc<std::sync::OnceLock<String>>;

/// The most characters of a host's name kept for display.
const HOST_NAME_MAX: usize = 64;

/// A host's `clientInfo` in one line to show: its name and version, control characters
/// and surrounding space dropped, at most 64 characters; `None` when nothing is left. The
/// host says what it likes here, so this is for a person to read, never to decide by.
pub fn host_name(info: &Value) -> Option<String> {
    let part = |key: &str| info.get(key).and_then(Value::as_str).unwrap_or("");
    let joined = format!("{} {}", part("name"), part("version"));
    let clean: String = joined
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let cut: String = clean.chars().take(HOST_NAME_MAX).collect();
    (!part("name").trim().is_empty() && !cut.is_empty()).then_some(cut)
}

impl Default for AggregateOptions {
    fn default() -> Self {
        AggregateOptions {
            profile: Profile::everything(DEFAULT_PROFILE),
            separator: Separator::default(),
            entry: "lifeline".to_owned(),
            client: None,
            names: None,
            list_wait: Duration::from_secs(5),
            debounce: Duration::from_millis(250),
            members: None,
            host: None,
        }
    }
}

/// An aggregated session's own state.
pub(crate) struct Aggregate {
    pub(crate) options: AggregateOptions,
    /// The host's kind: the options', or what its `initialize` said.
    client: Mutex<ClientKind>,
    /// Every tool name given in this session (and those kept on disk), so that a name does
    /// not change while the host holds it.
    remembered: Mutex<Remembered>,
    /// The same for prompts.
    prompts: Mutex<Remembered>,
    /// The catalog the host was last given (calls are routed by it).
    given: Mutex<Option<Arc<Catalog>>>,
    /// Whether the log was told that the profile shows none of its servers' tools.
    warned_empty: std::sync::atomic::AtomicBool,
    /// The profile now: the options', or the config's since (`members.rs`).
    profile: Mutex<Profile>,
    /// The catalog last built, and what it was built from (`current`).
    cached: Mutex<Option<Cached>>,
}

/// A catalog and what it was built from: it stands while none of that changed.
struct Cached {
    catalog: Arc<Catalog>,
    /// Each server's state, seen when it was built: a change (tools relisted, a state the
    /// list depends on) marks one changed.
    watches: Vec<watch::Receiver<crate::supervisor::Snapshot>>,
    membership: u64,
    profile: Profile,
    budget: usize,
}

impl Aggregate {
    pub(crate) fn new(options: AggregateOptions) -> Aggregate {
        Aggregate {
            client: Mutex::new(options.client.unwrap_or(ClientKind::Unknown)),
            profile: Mutex::new(options.profile.clone()),
            options,
            remembered: Mutex::default(),
            prompts: Mutex::default(),
            given: Mutex::default(),
            warned_empty: Default::default(),
            cached: Mutex::default(),
        }
    }

    /// The profile the host is served now.
    pub(crate) fn profile(&self) -> Profile {
        self.profile.lock().expect("profile lock").clone()
    }

    /// The names of `list` this session gave (`catalog::remembered`, `catalog::keep`).
    fn kept(&self, list: store::List) -> &Mutex<Remembered> {
        match list {
            store::List::Prompts => &self.prompts,
            store::List::Tools | store::List::ResourceTemplates => &self.remembered,
        }
    }

    /// The budget of the host's names.
    fn budget(&self) -> usize {
        let kind = *self.client.lock().expect("client lock");
        kind.name_budget(&self.options.entry)
    }
}

/// The server of `shared` called `name`.
fn upstream(shared: &Shared, name: &str) -> Option<Arc<Upstream>> {
    shared
        .upstreams()
        .iter()
        .find(|u| u.supervisor.name() == name)
        .cloned()
}

/// Answers `r` on the aggregated endpoint unless the host cancelled it.
pub(crate) async fn answer(
    shared: &Shared,
    agg: &Aggregate,
    r: Request,
    cancel: watch::Receiver<bool>,
) {
    let params = r.params.as_ref();
    let outcome = match r.method.as_str() {
        "initialize" => Some(initialize(shared, agg, params).await),
        "ping" => Some(Ok(json!({}))),
        "tools/list" => Some(Ok(tools_list(shared, agg).await)),
        "tools/call" => call(shared, agg, &r, cancel).await,
        "prompts/list" => Some(lists::prompts(shared, agg, &r.id).await),
        "resources/list" => Some(lists::resources(shared, agg, &r.id).await),
        "resources/templates/list" => Some(lists::templates(shared, agg, &r.id).await),
        "prompts/get" => lists::prompt_get(shared, agg, &r, cancel).await,
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            lists::by_uri(shared, &r, cancel).await
        }
        "completion/complete" => lists::complete(shared, agg, &r, cancel).await,
        "logging/setLevel" => Some(lists::set_level(shared, &r.id, params).await),
        method => Some(Err(RpcError {
            code: RpcError::METHOD_NOT_FOUND,
            message: format!(
                "Lifeline's aggregated endpoint does not route {method}: connect to one \
                 server (`lifeline connect NAME`) for it"
            ),
            data: None,
        })),
    };
    if let Some(outcome) = outcome {
        shared.send(Message::Response(Response { id: r.id, outcome }));
    }
}

/// The host's `initialize`: Lifeline's own serverInfo, what every server can do, and each
/// server's instructions under its name. Waits (bounded by the list wait) for the servers
/// to be ready or halted, so the first `tools/list` has their tools.
async fn initialize(
    shared: &Shared,
    agg: &Aggregate,
    params: Option<&Value>,
) -> Result<Value, RpcError> {
    let asked = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .and_then(Revision::parse_initialize)
        .unwrap_or(Revision::LATEST_INITIALIZE);
    let info = params.and_then(|p| p.get("clientInfo"));
    if agg.options.client.is_none()
        && let Some(name) = info.and_then(|c| c.get("name")).and_then(Value::as_str)
    {
        *agg.client.lock().expect("client lock") = ClientKind::from_client_info(name);
    }
    if let (Some(slot), Some(name)) = (&agg.options.host, info.and_then(host_name)) {
        let _ = slot.set(name);
    }
    let wait = agg.options.list_wait;
    let deadline = Instant::now() + wait;
    let upstreams = shared.upstreams();
    futures_util::future::join_all(upstreams.iter().map(|up| async move {
        let _ = forward::ready(up, Generation(0), deadline, wait).await;
        super::host_requests::reinitialize(up).await;
    }))
    .await;
    let mut instructions = String::new();
    for up in upstreams.iter() {
        if let Some(text) = up
            .supervisor
            .server_info()
            .and_then(|(_, i)| i.instructions)
        {
            let text = up.options.redactor.scrub(&text);
            instructions.push_str(&format!("[{}] {}\n", up.supervisor.name(), text.trim()));
        }
        if let Some(host) = &up.recorder {
            let generation = up.supervisor.snapshot().generation;
            host.initialized(params, asked.as_str(), generation);
        }
    }
    let mut result = json!({
        "protocolVersion": asked.as_str(),
        "capabilities": {
            "tools": { "listChanged": true },
            "prompts": { "listChanged": true },
            "resources": { "subscribe": true, "listChanged": true },
            "completions": {},
            "logging": {},
        },
        "serverInfo": { "name": "lifeline", "version": CLIENT_VERSION },
    });
    if !instructions.is_empty() {
        result["instructions"] = Value::from(cap(instructions, MAX_INSTRUCTIONS));
    }
    Ok(result)
}

/// The most the servers' instructions may take in the host's context together.
const MAX_INSTRUCTIONS: usize = 8 * 1024;

/// `text` cut to at most `max` bytes on a character boundary, saying so.
fn cap(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str("\n[the servers' instructions were cut here]");
    text
}

/// The catalog now: the one last built while nothing it was built from changed (a list of
/// hundreds of tools is not built again for every `tools/list`), else a new one.
pub(crate) async fn current(shared: &Shared, agg: &Aggregate) -> Arc<Catalog> {
    let membership = *shared.membership.borrow();
    let (profile, budget) = (agg.profile(), agg.budget());
    if let Some(c) = agg.cached.lock().expect("cached lock").as_ref()
        && c.membership == membership
        && c.profile == profile
        && c.budget == budget
        && c.watches
            .iter()
            .all(|w| matches!(w.has_changed(), Ok(false)))
    {
        return c.catalog.clone();
    }
    // Marked seen before the build: a change while it runs is a change next time.
    let mut watches: Vec<_> = shared
        .upstreams()
        .iter()
        .map(|up| up.supervisor.watch())
        .collect();
    for w in &mut watches {
        w.borrow_and_update();
    }
    let catalog = Arc::new(Catalog::build(shared, agg).await);
    *agg.cached.lock().expect("cached lock") = Some(Cached {
        catalog: catalog.clone(),
        watches,
        membership,
        profile,
        budget,
    });
    catalog
}

/// The catalog now, given to the host (calls are routed by it from now on); in search mode
/// the host is shown the meta-tools instead.
async fn tools_list(shared: &Shared, agg: &Aggregate) -> Value {
    catalog::wait_for_first_tools(shared, agg).await;
    let catalog = current(shared, agg).await;
    *shared.known.lock().expect("known lock") = Some((catalog.fingerprint.clone(), false));
    let tools = if agg.profile().search() {
        search_mode::meta_tools()
    } else {
        catalog.tools.clone()
    };
    *agg.given.lock().expect("given lock") = Some(catalog);
    let mut answer = serde_json::Map::new();
    answer.insert("tools".to_owned(), Value::Array(tools));
    Value::Object(answer)
}

/// The catalog to search: the latest built, else one built now.
async fn searched(shared: &Shared, agg: &Aggregate) -> Arc<Catalog> {
    if let Some(given) = agg.given.lock().expect("given lock").clone() {
        return given;
    }
    catalog::wait_for_first_tools(shared, agg).await;
    let catalog = current(shared, agg).await;
    *agg.given.lock().expect("given lock") = Some(catalog.clone());
    catalog
}

/// The server and tool's own name a host name stands for: by the catalog the host was
/// given, else by one built now, once the servers have had their chance to connect (a host
/// may call by a name it kept from an earlier session, or one that appeared since it
/// listed: after a takeover, say).
async fn route(shared: &Shared, agg: &Aggregate, name: &str) -> Option<(String, String)> {
    let given = agg.given.lock().expect("given lock").clone();
    if let Some((server, tool)) = given.as_ref().and_then(|c| c.names.route(name)) {
        return Some((server.to_owned(), tool.to_owned()));
    }
    catalog::wait_for_first_tools(shared, agg).await;
    let fresh = current(shared, agg).await;
    let (server, tool) = fresh.names.route(name)?;
    Some((server.to_owned(), tool.to_owned()))
}

/// The error for a name that is not in the endpoint's list.
pub(crate) fn unknown(what: &str, name: &str) -> RpcError {
    RpcError {
        code: RpcError::INVALID_PARAMS,
        message: format!(
            "Unknown {what} `{name}`: it is not in the list Lifeline gives this host (the list \
             may have changed; list again)"
        ),
        data: None,
    }
}

/// `tools/call`, routed to its server under the tool's own name; `None` when cancelled.
async fn call(
    shared: &Shared,
    agg: &Aggregate,
    r: &Request,
    cancel: watch::Receiver<bool>,
) -> Option<Result<Value, RpcError>> {
    let Some(name) = r
        .params
        .as_ref()
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
    else {
        return Some(Err(RpcError {
            code: RpcError::INVALID_PARAMS,
            message: "tools/call needs params.name, the tool's name".to_owned(),
            data: None,
        }));
    };
    let mut params = r.params.clone().unwrap_or_else(|| json!({}));
    let mut name = name.to_owned();
    if search_mode::is_meta(agg, &name) {
        let args = params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let catalog = searched(shared, agg).await;
        match name.as_str() {
            search_mode::FIND => {
                let empty = crate::gateway::search::Index::default();
                let index = catalog.index.as_ref().unwrap_or(&empty);
                return Some(search_mode::find(&catalog, index, &args));
            }
            search_mode::DESCRIBE => return Some(search_mode::describe(&catalog, &args)),
            _ => match search_mode::call_target(&args) {
                Ok((target, arguments)) => {
                    name = target;
                    params["arguments"] = arguments;
                }
                Err(e) => return Some(Err(e)),
            },
        }
    }
    let Some((server, tool)) = route(shared, agg, &name).await else {
        return Some(Err(unknown("tool", &name)));
    };
    let Some(up) = upstream(shared, &server) else {
        return Some(Err(unknown("tool", &name)));
    };
    params["name"] = Value::from(tool.as_str());
    let _busy = super::host_requests::busy(&up);
    let guard = up.recorder.as_ref().map(|h| h.call(&tool));
    let answer = forward::call(shared, &up, &r.id, Some(params), cancel).await;
    if let (Some(guard), Some(answer)) = (guard, &answer) {
        let (outcome, kind) = errors::call_outcome(answer);
        guard.finish(outcome, kind, up.supervisor.snapshot().generation);
    }
    answer.map(|a| a.map(|v| lists::uris_to_host(up.supervisor.name(), v)))
}

#[cfg(test)]
mod tests;
