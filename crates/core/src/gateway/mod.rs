//! The gateway's host-facing side: an MCP server over newline-delimited JSON-RPC (the stdio
//! framing of MCP 2025-11-25 and older) that a host — Claude Desktop, Cursor, an SDK client
//! — talks to instead of the real server, backed by that server's `Supervisor`. The host's
//! session outlives the upstream's generations: `ping` is answered here, a request waits
//! for ready (bounded), a request in flight when a generation dies fails at once with the
//! cause and is sent again only when `policy::reissue` says repeating it is safe, and the
//! host hears `notifications/tools/list_changed` when the tool set changes.
//!
//! This file is the session loop (`start`: dispatch, cancellation, the tools watcher,
//! transport-free) and its stdio framing (`serve_lines`); `http/` serves sessions over
//! Streamable HTTP;
//! `forward.rs` answers one request; `notes.rs` passes the upstream's notifications on;
//! `subs.rs` keeps the host's resource subscriptions across generations;
//! `host_requests.rs` relays the upstream's requests to the host (sampling, elicitation,
//! roots); `hosts.rs` and `stats.rs` keep who is attached and the last hour's calls for the
//! dashboard;
//! `errors.rs` is the state-to-error mapping
//! (docs/gateway.md). `attach.rs` is the handshake a bridge uses to reach the running app's
//! supervisor over `local_socket`.

pub mod aggregate;
pub mod attach;
mod errors;
mod forward;
pub(crate) mod host_requests;
pub mod hosts;
pub mod http;
pub mod names;
mod notes;
pub mod search;
pub mod stats;
mod subs;

#[cfg(test)]
mod tests;

pub use errors::{HALTED, NOT_READY, UPSTREAM_LOST};

use crate::lines::{LineRead, fmt_bytes, read_line_capped};
use crate::protocol::{Message, RequestId};
use crate::redact::Redactor;
use crate::supervisor::Supervisor;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

/// How a gateway session waits.
#[derive(Clone)]
pub struct GatewayOptions {
    /// How long `initialize` waits for the server's first ready before answering with
    /// Lifeline's own serverInfo.
    pub initialize_wait: Duration,
    /// How long a request waits for ready (the server's request timeout).
    pub request_wait: Duration,
    /// Scrubs the server's configured secrets from every message to the host.
    pub redactor: Redactor,
    /// Where the host is recorded (attached, its calls); `None` records nothing.
    pub hosts: Option<hosts::Hosts>,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            initialize_wait: Duration::from_secs(10),
            request_wait: Duration::from_secs(60),
            redactor: Redactor::default(),
            hosts: None,
        }
    }
}

impl GatewayOptions {
    /// The options for serving `server`: its request timeout, and its secrets scrubbed.
    pub fn for_server(server: &crate::config::ServerConfig) -> GatewayOptions {
        let mut options = GatewayOptions {
            redactor: Redactor::new(server.secrets()),
            ..GatewayOptions::default()
        };
        if let Ok(cfg) = crate::supervisor::SupervisorConfig::from_server(server, 0) {
            options.request_wait = cfg.request_timeout;
            options.initialize_wait = cfg.request_timeout.min(Duration::from_secs(10));
        }
        options
    }
}

/// The longest line a host may send (a tool call's arguments included); a longer one
/// closes its session, and is never buffered whole (`crate::lines`).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// A message for the host, with the host request it goes with (a call's progress): a
/// transport that has a stream per request (Streamable HTTP) sends it there; stdio ignores
/// `related`. Responses go with their own id.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub message: Message,
    pub related: Option<RequestId>,
}

/// One server a session serves: its supervisor, how long to wait on it, what the host
/// subscribed to on it, and the host as its `HostSlot` sees it.
pub(crate) struct Upstream {
    pub(crate) supervisor: Arc<Supervisor>,
    pub(crate) options: GatewayOptions,
    /// The URIs the host subscribed to on this server (`subs.rs`).
    pub(crate) subscriptions: Mutex<std::collections::BTreeSet<String>>,
    /// This host as the supervisor's `HostSlot` sees it (`host_requests.rs`).
    pub(crate) host: Arc<host_requests::HostLink>,
    /// This session's host as the dashboard sees it, when the options record hosts.
    pub(crate) recorder: Option<hosts::HostRecorder>,
    /// Its tasks in the session (`spawn_tasks`), ended with the session or when the server
    /// leaves it.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Upstream {
    fn new(
        supervisor: Arc<Supervisor>,
        options: GatewayOptions,
        out: &mpsc::UnboundedSender<Outgoing>,
        asked: &Arc<host_requests::Asked>,
    ) -> Upstream {
        let host = Arc::new(host_requests::HostLink::new(
            out.clone(),
            asked.clone(),
            options.request_wait,
            options.redactor.clone(),
        ));
        let recorder = options
            .hosts
            .as_ref()
            .map(|h| h.recorder(supervisor.name(), options.redactor.clone()));
        Upstream {
            supervisor,
            options,
            subscriptions: Mutex::default(),
            host,
            recorder,
            tasks: Mutex::default(),
        }
    }

    /// Starts its tasks in `shared`'s session: its notifications to the host, and its
    /// subscriptions made again on each new generation.
    pub(crate) fn spawn_tasks(self: &Arc<Self>, shared: &Arc<Shared>) {
        let notes = tokio::spawn(notes::pass_on(shared.clone(), self.clone()));
        let subs = tokio::spawn(subs::resubscribe(self.clone()));
        self.tasks.lock().expect("tasks lock").extend([notes, subs]);
    }

    /// Ends its tasks, and waits until they are gone (with them their handles on the
    /// supervisor).
    pub(crate) async fn stop_tasks(&self) {
        let tasks: Vec<_> = self.tasks.lock().expect("tasks lock").drain(..).collect();
        for task in tasks {
            task.abort();
            let _ = task.await;
        }
    }
}

/// What a session serves its host: one server as itself, or several as one.
pub(crate) enum View {
    Server,
    Aggregate(Box<aggregate::Aggregate>),
}

/// What the session's tasks share.
pub(crate) struct Shared {
    /// The servers this session serves (an aggregated session's change with the config:
    /// `aggregate::follow`).
    upstreams: std::sync::RwLock<Arc<Vec<Arc<Upstream>>>>,
    /// Bumped when `upstreams` changed.
    pub(crate) membership: watch::Sender<u64>,
    pub(crate) view: View,
    pub(crate) out: mpsc::UnboundedSender<Outgoing>,
    /// The tool set the host was last given (`tools/list`), and whether it was already
    /// told that it changed since.
    pub(crate) known: Mutex<Option<(ToolSet, bool)>>,
    /// The requests sent to the host, whichever server asked (`host_requests.rs`).
    pub(crate) asked: Arc<host_requests::Asked>,
    /// The client capabilities of the host's `initialize`, once it sent one.
    pub(crate) host_capabilities: Mutex<Option<Value>>,
}

impl Shared {
    pub(crate) fn send(&self, message: Message) {
        let _ = self.out.send(Outgoing {
            message,
            related: None,
        });
    }

    /// Sends `message` as part of the answer to the host's request `id`.
    pub(crate) fn send_for(&self, id: &RequestId, message: Message) {
        let _ = self.out.send(Outgoing {
            message,
            related: Some(id.clone()),
        });
    }

    /// The servers this session serves now.
    pub(crate) fn upstreams(&self) -> Arc<Vec<Arc<Upstream>>> {
        self.upstreams.read().expect("upstreams lock").clone()
    }

    /// Replaces the servers this session serves, telling whoever follows them.
    pub(crate) fn set_upstreams(&self, upstreams: Vec<Arc<Upstream>>) {
        *self.upstreams.write().expect("upstreams lock") = Arc::new(upstreams);
        self.membership.send_modify(|n| *n += 1);
    }

    /// The one server of a per-server session.
    pub(crate) fn upstream(&self) -> Arc<Upstream> {
        self.upstreams()[0].clone()
    }
}

/// The tool set as the host sees it: each name and the tool's whole entry (shared, not
/// copied: compared by pointer first), by name. A description alone changing is a change.
pub(crate) type ToolSet = Vec<(String, Arc<Value>)>;

/// The one server's tool set now (`ToolSet`).
pub(crate) fn fingerprint(shared: &Shared) -> ToolSet {
    let mut tools: Vec<_> = shared
        .upstream()
        .supervisor
        .tools()
        .into_iter()
        .map(|t| (t.name.clone(), t.shared_json()))
        .collect();
    tools.sort_by(|a, b| a.0.cmp(&b.0));
    tools
}

/// What a host asked to be served: one server (`lifeline connect NAME`,
/// `/servers/NAME/mcp`), or a profile's servers behind one endpoint (`lifeline connect
/// --profile P`, `/profiles/P/mcp`, `/mcp` for `default`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    Server(String),
    Profile(String),
}

impl Target {
    /// The target in words, for a log line or a message: `` `github` `` or `profile
    /// `coding``.
    pub fn shown(&self) -> String {
        match self {
            Target::Server(name) => format!("`{name}`"),
            Target::Profile(name) => format!("profile `{name}`"),
        }
    }
}

/// What serves a host: one server's supervisor, or several behind the aggregated endpoint,
/// each with its gateway options.
pub enum Served {
    Server(Arc<Supervisor>, GatewayOptions),
    Aggregate(
        Vec<(Arc<Supervisor>, GatewayOptions)>,
        aggregate::AggregateOptions,
    ),
}

impl Served {
    /// Starts the host's session on what serves it.
    pub fn start(self) -> HostSession {
        match self {
            Served::Server(supervisor, options) => start(supervisor, options),
            Served::Aggregate(servers, options) => start_aggregate(servers, options),
        }
    }
}

/// One host's gateway session without its transport: the host's messages go in on
/// `input`, the messages for the host come out of `output`. Dropping `input` ends the
/// session: its requests in flight are cancelled, and `done` resolves once every task of
/// the session is gone (then the caller holds the only `Arc<Supervisor>` it gave).
pub struct HostSession {
    pub input: Input,
    pub output: mpsc::UnboundedReceiver<Outgoing>,
    pub done: tokio::task::JoinHandle<()>,
}

/// The host's side of a session: what the host sends goes in here.
pub struct Input {
    tx: mpsc::UnboundedSender<Message>,
    shared: Arc<Shared>,
}

impl Input {
    /// Passes a message of the host's to the session; `Err` when the session has ended. The host's `initialize` attaches it to the supervisor's hosts at once, before
    /// the session task runs, so a first attempt that starts meanwhile already offers the
    /// host's client capabilities (`host_requests.rs`).
    pub fn send(&self, msg: Message) -> Result<(), Ended> {
        if let Message::Request(r) = &msg
            && r.method == "initialize"
        {
            host_requests::attach(&self.shared, r.params.as_ref());
        }
        self.tx.send(msg).map_err(|_| Ended)
    }
}

/// The session a message was sent to has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended;

/// Starts a gateway session for one host on `supervisor` (a stdio host: `serve_lines`; a
/// Streamable HTTP host: `http`).
pub fn start(supervisor: Arc<Supervisor>, options: GatewayOptions) -> HostSession {
    start_with(vec![(supervisor, options)], View::Server)
}

/// Starts a gateway session for one host on several servers at once, each under its own
/// options: the aggregated endpoint (`aggregate`).
pub fn start_aggregate(
    servers: Vec<(Arc<Supervisor>, GatewayOptions)>,
    options: aggregate::AggregateOptions,
) -> HostSession {
    start_with(
        servers,
        View::Aggregate(Box::new(aggregate::Aggregate::new(options))),
    )
}

fn start_with(servers: Vec<(Arc<Supervisor>, GatewayOptions)>, view: View) -> HostSession {
    let (out, output) = mpsc::unbounded_channel();
    let (tx, input_rx) = mpsc::unbounded_channel();
    let asked = Arc::new(host_requests::Asked::default());
    let upstreams = servers
        .into_iter()
        .map(|(supervisor, options)| Arc::new(Upstream::new(supervisor, options, &out, &asked)))
        .collect();
    let shared = Arc::new(Shared {
        upstreams: std::sync::RwLock::new(Arc::new(upstreams)),
        membership: watch::channel(0).0,
        view,
        out,
        known: Mutex::new(None),
        asked,
        host_capabilities: Mutex::new(None),
    });
    let input = Input {
        tx,
        shared: shared.clone(),
    };
    let done = tokio::spawn(run(shared, input_rx));
    HostSession {
        input,
        output,
        done,
    }
}

/// The session loop: dispatches the host's messages until `input` closes, then cancels
/// what is in flight (bounded) and ends every task of the session.
async fn run(shared: Arc<Shared>, mut input: mpsc::UnboundedReceiver<Message>) {
    // The session's own tasks: the tools watcher (and an aggregate's following of its
    // servers); each server's notifications and subscriptions are its own (`spawn_tasks`).
    let mut tasks: JoinSet<()> = JoinSet::new();
    match shared.view {
        View::Server => {
            tasks.spawn(watch_tools(shared.clone()));
        }
        View::Aggregate(_) => {
            tasks.spawn(aggregate::watch_tools(shared.clone()));
            tasks.spawn(aggregate::follow(shared.clone()));
        }
    };
    for up in shared.upstreams().iter() {
        up.spawn_tasks(&shared);
    }
    let mut requests: JoinSet<()> = JoinSet::new();
    let mut cancels: HashMap<RequestId, watch::Sender<bool>> = HashMap::new();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<RequestId>();
    loop {
        let msg = tokio::select! {
            msg = input.recv() => match msg {
                Some(msg) => msg,
                None => break,
            },
            Some(id) = done_rx.recv() => {
                cancels.remove(&id);
                continue;
            }
            _ = requests.join_next(), if !requests.is_empty() => continue,
        };
        match msg {
            Message::Request(r) => {
                let (cancel_tx, cancel_rx) = watch::channel(false);
                cancels.insert(r.id.clone(), cancel_tx);
                let shared = shared.clone();
                let done = done_tx.clone();
                requests.spawn(async move {
                    let id = r.id.clone();
                    match &shared.view {
                        View::Server => {
                            let _busy = host_requests::busy(&shared.upstream());
                            forward::answer(&shared, r, cancel_rx).await;
                        }
                        // Marks busy the server the request is routed to.
                        View::Aggregate(agg) => aggregate::answer(&shared, agg, r, cancel_rx).await,
                    }
                    let _ = done.send(id);
                });
            }
            Message::Notification(n) => {
                if n.method == "notifications/cancelled" {
                    let id = n
                        .params
                        .as_ref()
                        .and_then(|p| p.get("requestId"))
                        .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
                    if let Some(tx) = id.and_then(|id| cancels.remove(&id)) {
                        let _ = tx.send(true);
                    }
                } else {
                    host_requests::notification(&shared, &n.method, n.params);
                }
            }
            Message::Response(r) => host_requests::answered(&shared, r),
        }
    }
    for tx in cancels.values() {
        let _ = tx.send(true);
    }
    // Give cancelled calls a moment to tell the server, bounded.
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while requests.join_next().await.is_some() {}
    })
    .await;
    requests.abort_all();
    while requests.join_next().await.is_some() {}
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    for up in shared.upstreams().iter() {
        up.stop_tasks().await;
    }
    host_requests::detach(&shared);
    // Every clone of `shared` is gone with this, so the caller holds the only
    // `Arc<Supervisor>` it gave and can stop it.
    drop(shared);
}

/// Serves one host on `read`/`write` (newline-delimited JSON-RPC, the stdio framing) until
/// the host closes its side (EOF) or stops reading. In-flight requests are cancelled on
/// the way out; the supervisor is left running (its owner stops it).
pub async fn serve_lines<R, W>(
    supervisor: Arc<Supervisor>,
    read: R,
    write: W,
    options: GatewayOptions,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_session(start(supervisor, options), read, write).await;
}

/// Serves `session` to one host on `read`/`write` (newline-delimited JSON-RPC), as
/// `serve_lines` does: the aggregated endpoint's stdio framing.
pub async fn serve_session<R, W>(session: HostSession, read: R, write: W)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let HostSession {
        input,
        output,
        done,
    } = session;
    // The framing's own answers (to a line that is not JSON-RPC) beside the session's.
    let (local, local_rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_all(write, output, local_rx));
    let mut lines = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_capped(&mut lines, &mut line, MAX_LINE).await {
            Ok(LineRead::Eof) | Err(_) => break,
            Ok(LineRead::Line) => {}
            Ok(LineRead::TooLong) => {
                tracing::warn!(
                    "the host sent a line over {}; closing its session",
                    fmt_bytes(MAX_LINE)
                );
                break;
            }
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let msg = serde_json::from_str::<Value>(text)
            .map_err(|e| e.to_string())
            .and_then(|v| Message::from_value(v).map_err(|e| e.0));
        match msg {
            Err(why) => {
                tracing::warn!("the host sent a line that is not JSON-RPC: {why}");
                let _ = local.send(Outgoing {
                    message: host_requests::not_json_rpc(text, &why),
                    related: None,
                });
            }
            Ok(msg) => {
                if input.send(msg).is_err() {
                    break;
                }
            }
        }
    }
    drop(input);
    drop(local);
    let _ = done.await;
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
}

/// Writes each message, the session's and the framing's own, as one line, flushed; ends
/// when every sender is gone or the host stopped reading.
async fn write_all<W: AsyncWrite + Unpin>(
    mut write: W,
    mut session: mpsc::UnboundedReceiver<Outgoing>,
    mut local: mpsc::UnboundedReceiver<Outgoing>,
) {
    loop {
        let out = tokio::select! {
            Some(out) = session.recv() => out,
            Some(out) = local.recv() => out,
            else => return,
        };
        let mut line = out.message.to_json();
        line.push('\n');
        if write.write_all(line.as_bytes()).await.is_err() || write.flush().await.is_err() {
            return;
        }
    }
}

/// Tells the host `notifications/tools/list_changed` once whenever the tool set (`ToolSet`)
/// differs from what it was last given.
async fn watch_tools(shared: Arc<Shared>) {
    let mut rx = shared.upstream().supervisor.watch();
    while rx.changed().await.is_ok() {
        tell_if_changed(&shared, fingerprint(&shared));
    }
}

/// Tells the host `notifications/tools/list_changed` when `now` differs from the tool set
/// it was last given, once until it lists again.
pub(crate) fn tell_if_changed(shared: &Shared, now: ToolSet) {
    let tell = {
        let mut known = shared.known.lock().expect("known lock");
        match known.as_mut() {
            Some((given, told)) if !*told && *given != now => {
                *told = true;
                true
            }
            _ => false,
        }
    };
    if tell {
        shared.send(Message::notification(
            "notifications/tools/list_changed",
            None,
        ));
    }
}
