//! One live MCP connection: the handshake, request ids and correlation, concurrent
//! requests, per-request timeouts (reset by progress, with a hard cap), cancellation, and
//! answering the server's own requests. A session never reconnects: when its transport
//! ends, every waiting request fails at once with the cause and later requests are refused.
//!
//! A session speaks either a revision with `initialize` (`connect`) or the stateless
//! revision 2026-07-28 (`connect_modern`): `server/discover` instead of the handshake,
//! `_meta` on every request, server input asked for inside results (multi round-trip
//! requests), and — since its streams cannot be resumed — a request whose response stream
//! broke is asked again with a new id when that is safe (`policy::reissue`: it only reads,
//! or its tool declares `readOnlyHint` / `idempotentHint`), and fails `stream_lost` saying
//! why when it is not.

use crate::diagnostics::redact::{Redactor, cap};
use crate::error::{Error, ErrorKind, IoKind, Phase, Stage};
use crate::policy::reissue::{self, Reissue};
use crate::protocol::mcp::{
    self, ClientCapabilities, InitializeResult, ListToolsPage, Progress, Tool,
};
use crate::protocol::modern::{self, DiscoverResult};
use crate::protocol::{Message, RequestId, Response, RpcError};
use crate::transport::{Connection, Incoming, Transport};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;

/// Answers one kind of server→client request (elicitation, sampling).
pub type Handler = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, RpcError>> + Send + Sync>;

#[derive(Clone)]
pub struct SessionOptions {
    /// Per request; progress notifications restart it.
    pub request_timeout: Duration,
    /// No request outlives this, progress or not.
    pub max_request_timeout: Duration,
    /// Roots offered to `roots/list`; `None` answers method-not-found.
    pub roots: Option<Vec<Value>>,
    pub elicitation: Option<Handler>,
    pub sampling: Option<Handler>,
    /// A pinned revision (config `protocol`): offered in `initialize` and required of the
    /// answer. `None` offers the latest and accepts any revision we speak.
    pub protocol_version: Option<&'static str>,
    /// Seeds the jitter of the session's own waits (reopening the listen stream), so
    /// sessions of different servers disperse and a run can be replayed.
    pub jitter_seed: u64,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            request_timeout: Duration::from_secs(60),
            max_request_timeout: Duration::from_secs(600),
            roots: None,
            elicitation: None,
            sampling: None,
            protocol_version: None,
            jitter_seed: 0,
        }
    }
}

impl SessionOptions {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: self.roots.is_some(),
            sampling: self.sampling.is_some(),
            elicitation: self.elicitation.is_some(),
        }
    }
}

/// What the server told us that was not an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerNotification {
    ToolsListChanged,
    Log {
        level: String,
        logger: Option<String>,
        data: Value,
    },
    Progress {
        request: RequestId,
        progress: Progress,
    },
    Other {
        method: String,
        params: Option<Value>,
    },
}

/// Per-request choices.
#[derive(Default)]
pub struct RequestOptions {
    /// Overrides the session's request timeout.
    pub timeout: Option<Duration>,
    /// Receives this request's progress notifications.
    pub progress: Option<mpsc::UnboundedSender<Progress>>,
}

pub struct Session {
    shared: Arc<Shared>,
    reader: tokio::task::JoinHandle<()>,
}

/// Server notifications a subscriber may fall behind by before it sees `Lagged`. A
/// broadcast channel allocates every slot up front, so this is paid by every idle session
/// (256 slots were about 35 KB of each); the supervisor, the one subscriber, only looks
/// for `list_changed` and treats a lag as one.
const NOTIFICATION_CAPACITY: usize = 16;

struct Shared {
    transport: Transport,
    redactor: Redactor,
    options: SessionOptions,
    next_id: AtomicI64,
    pending: Mutex<HashMap<RequestId, Pending>>,
    closed: Mutex<Option<Error>>,
    /// Flips to the cause once, when the session ends, for whoever waits on `ended`.
    ended: tokio::sync::watch::Sender<Option<Error>>,
    notifications: broadcast::Sender<ServerNotification>,
    server: OnceLock<InitializeResult>,
    /// Set when speaking the stateless revision.
    modern: Option<Modern>,
    /// The `subscriptions/listen` loop (stateless revision), stopped with the session.
    listener: Mutex<Option<tokio::task::AbortHandle>>,
}

/// What a stateless-revision session adds.
struct Modern {
    /// Sent in every request's `params._meta`.
    meta: serde_json::Map<String, Value>,
    /// Tools whose call may be asked again after a lost response stream.
    repeatable: Mutex<HashSet<String>>,
    /// Whether the tools were ever listed (their annotations and headers known).
    listed: std::sync::atomic::AtomicBool,
}

/// Why `connect_modern` did not produce a session, and whether the answer showed the
/// server to be of the `initialize` era (so that `auto` may fall back to it).
#[derive(Debug)]
pub struct Refusal {
    pub error: Error,
    pub legacy: bool,
}

/// How many rounds of input a server may ask for in one request (multi round-trip).
const MAX_INPUT_ROUNDS: u32 = 8;

struct Pending {
    method: String,
    answer: oneshot::Sender<Result<Value, Error>>,
    progress: mpsc::UnboundedSender<Progress>,
}

impl Session {
    /// Starts a session on a transport without the handshake (see `connect`).
    pub fn start(conn: Connection, options: SessionOptions) -> Session {
        Session::start_with(conn, options, None)
    }

    /// Starts a stateless-revision session without discovery (see `connect_modern`).
    pub fn start_modern(conn: Connection, options: SessionOptions) -> Session {
        let version = modern::VERSION;
        conn.transport.set_modern(version);
        let modern = Modern {
            meta: modern::request_meta(version, &options.capabilities()),
            repeatable: Mutex::new(HashSet::new()),
            listed: std::sync::atomic::AtomicBool::new(false),
        };
        Session::start_with(conn, options, Some(modern))
    }

    fn start_with(conn: Connection, options: SessionOptions, modern: Option<Modern>) -> Session {
        let (notifications, _) = broadcast::channel(NOTIFICATION_CAPACITY);
        let shared = Arc::new(Shared {
            transport: conn.transport,
            redactor: conn.redactor,
            options,
            next_id: AtomicI64::new(1),
            pending: Mutex::new(HashMap::new()),
            closed: Mutex::new(None),
            ended: tokio::sync::watch::channel(None).0,
            notifications,
            server: OnceLock::new(),
            modern,
            listener: Mutex::new(None),
        });
        let reader = tokio::spawn(read_incoming(shared.clone(), conn.incoming));
        Session { shared, reader }
    }

    /// Starts a session and performs the handshake: `initialize` with version
    /// negotiation, then `notifications/initialized`, then opens the server's stream.
    pub async fn connect(conn: Connection, options: SessionOptions) -> Result<Session, Error> {
        let session = Session::start(conn, options);
        match session.handshake().await {
            Ok(()) => Ok(session),
            Err(e) => {
                session.close().await;
                Err(e)
            }
        }
    }

    /// Starts a stateless-revision (2026-07-28) session: `server/discover` instead of the
    /// handshake. A refusal says whether the server answered like one of the `initialize`
    /// era (`Refusal::legacy`), which is the only evidence `auto` falls back on.
    pub async fn connect_modern(
        conn: Connection,
        options: SessionOptions,
    ) -> Result<Session, Refusal> {
        let session = Session::start_modern(conn, options);
        match session.discover().await {
            Ok(()) => Ok(session),
            Err(r) => {
                session.close().await;
                Err(r)
            }
        }
    }

    async fn discover(&self) -> Result<(), Refusal> {
        let stage = |e: Error| in_handshake(e, Stage::Discover);
        let refuse = |error: Error, legacy: bool| Refusal {
            error: stage(error),
            legacy,
        };
        let ours = modern::VERSION;
        let value = match self
            .request("server/discover", None, RequestOptions::default())
            .await
        {
            Ok(v) => v,
            // A modern server without `server/discover` (it must have it, but the
            // revision lets a client go on without): speak it anyway.
            Err(e)
                if e.context().status == Some(404)
                    && e.context().rpc_code
                        == Some(crate::protocol::RpcError::METHOD_NOT_FOUND) =>
            {
                json!({ "supportedVersions": [ours] })
            }
            Err(e) => {
                let listed = e.context().supported_versions.clone();
                let legacy = match &listed {
                    // A modern refusal of our version: fall back only when what the server
                    // speaks instead is one of the `initialize` revisions we speak.
                    Some(list) => list
                        .iter()
                        .any(|v| mcp::SUPPORTED_PROTOCOL_VERSIONS.contains(&v.as_str())),
                    None => crate::policy::fallback::is_legacy_answer_to_modern(&e),
                };
                let error = match listed {
                    Some(list) => Error::protocol(format!(
                        "the server does not speak MCP {ours} (it lists {}); Lifeline speaks {ours} \
                         and {}",
                        if list.is_empty() { "no revision".to_owned() } else { list.join(", ") },
                        mcp::SUPPORTED_PROTOCOL_VERSIONS.join(", ")
                    ))
                    .with(|c| *c = e.context().clone())
                    .caused_by(e),
                    None => e,
                };
                return Err(refuse(error, legacy));
            }
        };
        let result: DiscoverResult = serde_json::from_value(value).map_err(|_| {
            refuse(
                Error::protocol(
                    "the server answered server/discover with something that is not a discovery \
                     result (no supportedVersions), so it does not speak the stateless revision \
                     (2026-07-28)",
                )
                .with(|c| c.method = Some("server/discover".into())),
                true,
            )
        })?;
        let versions = modern::clean_versions(&json!(result.supported_versions));
        if !versions.iter().any(|v| v == ours) {
            let legacy = versions
                .iter()
                .any(|v| mcp::SUPPORTED_PROTOCOL_VERSIONS.contains(&v.as_str()));
            return Err(refuse(
                Error::protocol(format!(
                    "the server's server/discover lists {} but not {ours}; Lifeline speaks {ours} \
                     and {}",
                    if versions.is_empty() {
                        "no revision".to_owned()
                    } else {
                        versions.join(", ")
                    },
                    mcp::SUPPORTED_PROTOCOL_VERSIONS.join(", ")
                ))
                .with(|c| {
                    c.method = Some("server/discover".into());
                    c.supported_versions = Some(versions.clone());
                }),
                legacy,
            ));
        }
        let _ = self.shared.server.set(InitializeResult {
            protocol_version: ours.to_owned(),
            capabilities: result.capabilities.clone(),
            server_info: result.server_info(),
            instructions: result.instructions.clone(),
        });
        if listen::wants_listen(&result.capabilities) {
            let handle = tokio::spawn(listen::listen(self.shared.clone())).abort_handle();
            *self.shared.listener.lock().expect("lock") = Some(handle);
        }
        Ok(())
    }

    async fn handshake(&self) -> Result<(), Error> {
        let mut params = mcp::initialize_params(&self.shared.options.capabilities());
        let pinned = self.shared.options.protocol_version;
        if let Some(v) = pinned {
            params["protocolVersion"] = Value::from(v);
        }
        let stage = |e: Error| in_handshake(e, Stage::Initialize);
        let value = self
            .request("initialize", Some(params), RequestOptions::default())
            .await
            .map_err(stage)?;
        let result: InitializeResult = serde_json::from_value(value).map_err(|e| {
            stage(Error::protocol(format!(
                "the server's initialize result is malformed ({e})"
            )))
        })?;
        let version =
            mcp::negotiate(&result.protocol_version).map_err(|m| stage(Error::protocol(m)))?;
        if let Some(want) = pinned
            && want != version
        {
            return Err(stage(Error::protocol(format!(
                "the server answered protocol version {version}, but this server is pinned to \
                 {want} (`protocol` in the config) and a pin is never changed silently; set \
                 `protocol` to \"auto\" or to \"{version}\""
            ))));
        }
        self.shared.transport.set_protocol_version(version);
        let _ = self.shared.server.set(result);
        self.notify("notifications/initialized", None)
            .await
            .map_err(stage)?;
        self.shared.transport.start_listening().await;
        Ok(())
    }

    /// The server's `initialize` result, once the handshake is done.
    pub fn server(&self) -> Option<&InitializeResult> {
        self.shared.server.get()
    }

    pub fn transport(&self) -> &Transport {
        &self.shared.transport
    }

    pub fn subscribe(&self) -> broadcast::Receiver<ServerNotification> {
        self.shared.notifications.subscribe()
    }

    /// Resolves when the session ends (the transport closed, or `close` was called), with
    /// the cause.
    pub async fn ended(&self) -> Error {
        let mut rx = self.shared.ended.subscribe();
        match rx.wait_for(Option::is_some).await {
            Ok(e) => e.clone().expect("checked is_some"),
            Err(_) => Error::cancelled("the session was dropped"),
        }
    }

    /// Why the session ended, if it has.
    pub fn closed(&self) -> Option<Error> {
        self.shared.closed.lock().expect("lock").clone()
    }

    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        self.check_open()?;
        self.shared
            .transport
            .send(&Message::notification(method, params))
            .await
    }

    /// A round trip: `ping`, or in the stateless revision (which has none) `server/discover`.
    pub async fn ping(&self) -> Result<(), Error> {
        let method = if self.is_modern() {
            "server/discover"
        } else {
            "ping"
        };
        self.request(method, None, RequestOptions::default())
            .await
            .map(|_| ())
    }

    /// True when speaking the stateless revision (2026-07-28).
    pub fn is_modern(&self) -> bool {
        self.shared.modern.is_some()
    }

    /// Every tool, following `nextCursor` until the last page.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        self.list_tools_with(RequestOptions::default()).await
    }

    /// `list_tools` with per-page request options (a timeout inside a deadline).
    pub async fn list_tools_with(&self, opts: RequestOptions) -> Result<Vec<Tool>, Error> {
        let mut tools = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let page_opts = RequestOptions {
                timeout: opts.timeout,
                progress: None,
            };
            let value = self.request("tools/list", params, page_opts).await?;
            let page: ListToolsPage = serde_json::from_value(value).map_err(|e| {
                Error::protocol(format!("the server's tools/list result is malformed ({e})"))
            })?;
            tools.extend(page.tools);
            match page.next_cursor {
                None => return Ok(self.took_tools(tools)),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(Error::protocol(
                        "the server's tools/list pagination repeats a cursor; stopped instead of looping forever",
                    ));
                }
                Some(next) => cursor = Some(next),
            }
        }
    }

    /// Stateless revision: learns which tools may be asked again after a lost stream and,
    /// over HTTP, which arguments go into headers; a tool whose `x-mcp-header` annotations
    /// are invalid is left out, as the revision requires, with a warning naming it.
    fn took_tools(&self, tools: Vec<Tool>) -> Vec<Tool> {
        let Some(m) = &self.shared.modern else {
            return tools;
        };
        let transport = &self.shared.transport;
        let mut headers = HashMap::new();
        let mut kept = Vec::with_capacity(tools.len());
        for tool in tools {
            if transport.mirrors_headers() {
                match modern::param_headers(&tool.input_schema) {
                    Ok(h) if h.is_empty() => {}
                    Ok(h) => {
                        headers.insert(tool.name.clone(), h);
                    }
                    Err(why) => {
                        tracing::warn!(tool = %cap(&self.shared.redactor.scrub(&tool.name), 100), %why, "left out a tool whose x-mcp-header annotation is invalid");
                        continue;
                    }
                }
            }
            kept.push(tool);
        }
        m.listed.store(true, Ordering::Relaxed);
        *m.repeatable.lock().expect("lock") = kept
            .iter()
            .filter(|t| modern::tool_is_repeatable(t.annotations.as_ref()))
            .map(|t| t.name.clone())
            .collect();
        transport.set_tool_headers(headers);
        kept
    }

    /// Calls a tool. A result with `isError: true` is still `Ok`: the tool ran and failed,
    /// which the caller reports; `Err` means the call itself did not complete.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        opts: RequestOptions,
    ) -> Result<Value, Error> {
        let params = json!({ "name": name, "arguments": arguments });
        self.request("tools/call", Some(params), opts)
            .await
            .map_err(|e| e.in_stage(Phase::Call, None))
    }

    /// Sends a request and waits for its answer, its timeout, or the end of the session.
    /// Dropping the future cancels the request (`notifications/cancelled` is sent, or in
    /// the stateless revision over HTTP, its response stream is closed).
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RequestOptions,
    ) -> Result<Value, Error> {
        let Some(m) = &self.shared.modern else {
            return self.request_once(method, params, &opts).await;
        };
        // The params with the input the server asked for, once it asked (multi round-trip).
        let mut with_input: Option<Value> = None;
        let mut reissued = 0;
        let mut rounds = 0;
        let mut version_retried = false;
        let mut relisted = false;
        // Over HTTP, a call mirrors arguments its tool annotates with `x-mcp-header`, so
        // the tool definitions must be known before the first call.
        if method == "tools/call"
            && self.shared.transport.mirrors_headers()
            && !m.listed.load(Ordering::Relaxed)
        {
            let _ = Box::pin(self.list_tools()).await;
        }
        loop {
            let base = with_input.clone().or_else(|| params.clone());
            let with_meta = Some(modern::with_meta(base, &m.meta));
            match self.request_once(method, with_meta, &opts).await {
                // The server refused the revision but lists it as supported (a server
                // that was switching versions, say): the spec's answer is to ask again
                // with a listed one, which is ours. Once.
                Err(e)
                    if !version_retried
                        && e.context().rpc_code == Some(modern::UNSUPPORTED_PROTOCOL_VERSION)
                        && e.context()
                            .supported_versions
                            .as_ref()
                            .is_some_and(|l| l.iter().any(|v| v == modern::VERSION)) =>
                {
                    version_retried = true;
                    tracing::info!(
                        method,
                        "the server refused the revision it lists as supported; asking once more"
                    );
                }
                // The server says the mirrored headers do not match the body: the tool's
                // definition may have changed. The spec's answer: list the tools again
                // (which updates the headers), then ask once more.
                Err(e)
                    if method == "tools/call"
                        && !relisted
                        && e.context().rpc_code == Some(modern::HEADER_MISMATCH) =>
                {
                    relisted = true;
                    tracing::info!(
                        "header mismatch on tools/call; listing the tools again before asking once more"
                    );
                    Box::pin(self.list_tools()).await?;
                }
                Err(e) if e.kind() == ErrorKind::StreamLost && self.closed().is_none() => {
                    // A call to a tool whose annotations were never listed: learn them first
                    // (listing only reads), so that the decision rests on what it declares.
                    if method == "tools/call" && !m.listed.load(Ordering::Relaxed) {
                        let _ = Box::pin(self.list_tools()).await;
                    }
                    let name = params.as_ref().and_then(|p| p["name"].as_str());
                    let name = name.unwrap_or("");
                    let tool_repeatable = m.repeatable.lock().expect("lock").contains(name);
                    let why = match reissue::after_lost_stream(method, tool_repeatable, reissued) {
                        Reissue::Again => {
                            reissued += 1;
                            tracing::info!(
                                method,
                                reissued,
                                "a response stream broke before the answer; asking again with a new id"
                            );
                            continue;
                        }
                        Reissue::Exhausted => {
                            return Err(e.restated(format!(
                                "{method}: the response stream broke before the answer again, \
                                 after asking {reissued} more times with a new id; gave up"
                            )));
                        }
                        Reissue::NotARead => format!("{method} is not a request that only reads"),
                        Reissue::ToolNotRepeatable => {
                            let shown = cap(&self.shared.redactor.scrub(name), 100);
                            format!(
                                "the tool {shown:?} does not declare readOnlyHint or idempotentHint (true)"
                            )
                        }
                    };
                    return Err(e.restated(format!(
                        "{method}: the response stream broke before the answer; it was \
                         not asked again because {why}, so it may have run on the server"
                    )));
                }
                Ok(v) if modern::is_input_required(&v) && takes_input(method) => {
                    rounds += 1;
                    if rounds > MAX_INPUT_ROUNDS {
                        return Err(Error::protocol(format!(
                            "{method}: the server asked for input {MAX_INPUT_ROUNDS} times without \
                             finishing; stopped instead of looping"
                        ))
                        .with(|c| c.method = Some(method.to_owned())));
                    }
                    with_input = Some(self.with_input(method, params.clone(), &v).await?);
                }
                other => return other,
            }
        }
    }

    /// The original request's params with the answers to what the server asked for
    /// (`inputResponses`) and its `requestState`, if it gave one.
    async fn with_input(
        &self,
        method: &str,
        params: Option<Value>,
        asked: &Value,
    ) -> Result<Value, Error> {
        let mut responses = serde_json::Map::new();
        if let Some(requests) = asked.get("inputRequests").and_then(Value::as_object) {
            for (key, req) in requests {
                let what = req["method"].as_str().unwrap_or("");
                let answer = server_request(&self.shared.options, what, req.get("params").cloned())
                    .await
                    .map_err(|e| {
                        Error::protocol(format!(
                            "{method}: the server asked for {} input, which this client cannot give ({})",
                            cap(what, 60),
                            cap(&self.shared.redactor.scrub(&e.message), 200)
                        ))
                        .with(|c| c.method = Some(method.to_owned()))
                    })?;
                responses.insert(key.clone(), answer);
            }
        }
        let mut params = match params {
            Some(Value::Object(o)) => o,
            _ => serde_json::Map::new(),
        };
        params.insert("inputResponses".into(), Value::Object(responses));
        if let Some(state) = asked.get("requestState").filter(|s| s.is_string()) {
            params.insert("requestState".into(), state.clone());
        }
        Ok(Value::Object(params))
    }

    /// One request with one id: sent, then waited for (see `request`).
    async fn request_once(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Value, Error> {
        self.check_open()?;
        let shared = &self.shared;
        let id = RequestId::Number(shared.next_id.fetch_add(1, Ordering::Relaxed));
        let params = with_progress_token(method, params, &id);
        let (answer_tx, mut answer) = oneshot::channel();
        let (progress_tx, mut progress) = mpsc::unbounded_channel();
        shared.pending.lock().expect("lock").insert(
            id.clone(),
            Pending {
                method: method.to_owned(),
                answer: answer_tx,
                progress: progress_tx,
            },
        );
        let mut guard = CancelOnDrop {
            shared: shared.clone(),
            id: Some(id.clone()),
            initialize: method == "initialize",
        };

        let timeout = opts.timeout.unwrap_or(shared.options.request_timeout);
        let hard = Instant::now() + shared.options.max_request_timeout.max(timeout);
        let mut deadline = (Instant::now() + timeout).min(hard);
        let msg = Message::request(id.clone(), method, params);
        let send = shared.transport.send(&msg);
        tokio::pin!(send);
        let mut sent = false;
        loop {
            tokio::select! {
                r = &mut send, if !sent => {
                    sent = true;
                    if let Err(e) = r {
                        shared.pending.lock().expect("lock").remove(&id);
                        guard.id = None;
                        return Err(e);
                    }
                }
                r = &mut answer => {
                    guard.id = None;
                    // Progress that arrived before the answer reaches the caller first.
                    while let Ok(p) = progress.try_recv() {
                        if let Some(user) = &opts.progress {
                            let _ = user.send(p);
                        }
                    }
                    return r.unwrap_or_else(|_| Err(Error::cancelled("the session ended before the answer")));
                }
                Some(p) = progress.recv() => {
                    deadline = (Instant::now() + timeout).min(hard);
                    if let Some(user) = &opts.progress {
                        let _ = user.send(p);
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    let capped = deadline >= hard;
                    // Sent before returning, so that a caller who closes the session next
                    // cannot overtake the notification.
                    let cancelled = match guard.take_cancellation("timed out") {
                        Some(msg) => {
                            let limit = shared.options.request_timeout.min(CANCEL_SEND_TIMEOUT);
                            let sent = tokio::time::timeout(limit, shared.transport.send(&msg)).await;
                            matches!(sent, Ok(Ok(())))
                        }
                        None => false,
                    };
                    let limit = if capped { shared.options.max_request_timeout.max(timeout) } else { timeout };
                    return Err(Error::timeout(format!(
                        "{method} got no answer within {}{}{}",
                        crate::fmt_duration(limit),
                        if capped { " (the hard cap, even with progress)" } else { " (the request timeout; progress restarts it)" },
                        if cancelled { "; sent notifications/cancelled" } else { "" },
                    )).with(|c| c.method = Some(method.to_owned())));
                }
            }
        }
    }

    fn check_open(&self) -> Result<(), Error> {
        match self.shared.closed.lock().expect("lock").as_ref() {
            Some(cause) => Err(Error::closed_because(cause)),
            None => Ok(()),
        }
    }

    /// Closes the transport (bounded) and fails every waiting request as cancelled.
    pub async fn close(&self) {
        if let Some(l) = self.shared.listener.lock().expect("lock").take() {
            l.abort();
        }
        let cause = Error::cancelled("the connection was closed by Lifeline");
        close_with(&self.shared, cause);
        self.shared.transport.close().await;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.reader.abort();
        if let Some(l) = self.shared.listener.lock().expect("lock").take() {
            l.abort();
        }
    }
}

/// A handshake failure stamped with its stage: `Connect` when it never reached MCP (the
/// transport could not connect), else `stage`.
fn in_handshake(e: Error, stage: Stage) -> Error {
    let connect_level = e.kind() == ErrorKind::Transport
        && matches!(
            e.context().io,
            Some(IoKind::Connect | IoKind::Dns | IoKind::Tls)
        );
    let s = if connect_level { Stage::Connect } else { stage };
    e.in_stage(Phase::Connect, Some(s))
}

/// Requests a server may answer with "input required" (multi round-trip requests).
fn takes_input(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// Removes a request that its caller stopped waiting for, and tells the server.
struct CancelOnDrop {
    shared: Arc<Shared>,
    id: Option<RequestId>,
    initialize: bool,
}

impl CancelOnDrop {
    /// Stops waiting for the request and returns the `notifications/cancelled` to send, if
    /// one should be (never for `initialize`, which the spec forbids cancelling, and not on
    /// a closed connection). Where closing the response stream is the cancellation
    /// (stateless revision over HTTP), that is done instead.
    fn take_cancellation(&mut self, reason: &str) -> Option<Message> {
        let id = self.id.take()?;
        self.shared.pending.lock().expect("lock").remove(&id);
        if self.shared.transport.cancels_by_closing() {
            self.shared.transport.cancel(&id);
            return None;
        }
        if self.initialize || self.shared.closed.lock().expect("lock").is_some() {
            return None;
        }
        Some(Message::notification(
            "notifications/cancelled",
            Some(json!({ "requestId": id, "reason": reason })),
        ))
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.id.is_none() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if let Some(msg) = self.take_cancellation("cancelled by the caller") {
            let shared = self.shared.clone();
            tokio::spawn(async move {
                let _ = shared.transport.send(&msg).await;
            });
        }
    }
}

/// The longest a timed-out request waits to deliver its `notifications/cancelled`.
const CANCEL_SEND_TIMEOUT: Duration = Duration::from_secs(5);

fn with_progress_token(method: &str, params: Option<Value>, id: &RequestId) -> Option<Value> {
    if method != "tools/call" {
        return params;
    }
    let mut params = params.unwrap_or_else(|| json!({}));
    if let Some(obj) = params.as_object_mut() {
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                "progressToken".into(),
                serde_json::to_value(id).unwrap_or(Value::Null),
            );
        }
    }
    Some(params)
}

fn close_with(shared: &Shared, cause: Error) {
    let first = shared
        .closed
        .lock()
        .expect("lock")
        .get_or_insert(cause.clone())
        .clone();
    shared.ended.send_if_modified(|e| {
        let changed = e.is_none();
        e.get_or_insert(first);
        changed
    });
    let pending: Vec<Pending> = shared
        .pending
        .lock()
        .expect("lock")
        .drain()
        .map(|(_, p)| p)
        .collect();
    for p in pending {
        let _ = p.answer.send(Err(cause.clone().with(|c| {
            c.method.get_or_insert(p.method.clone());
        })));
    }
}

async fn read_incoming(shared: Arc<Shared>, mut incoming: mpsc::Receiver<Incoming>) {
    while let Some(item) = incoming.recv().await {
        if let Incoming::Message(m) = &item {
            tracing::trace!(method = m.method(), "received a message");
        }
        match item {
            Incoming::Message(Message::Response(r)) => answer(&shared, r),
            Incoming::Message(Message::Notification(n)) => {
                notification(&shared, &n.method, n.params)
            }
            Incoming::Message(Message::Request(r)) => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let outcome = server_request(&shared.options, &r.method, r.params).await;
                    let reply = Message::Response(Response { id: r.id, outcome });
                    if let Err(e) = shared.transport.send(&reply).await {
                        tracing::warn!(error = %e, method = %r.method, "could not answer the server's request");
                    }
                });
            }
            Incoming::RequestFailed { id, error } => {
                if let Some(p) = shared.pending.lock().expect("lock").remove(&id) {
                    let _ = p.answer.send(Err(error));
                }
            }
            Incoming::Closed(cause) => {
                close_with(&shared, cause);
                return;
            }
        }
    }
    close_with(&shared, Error::transport("the connection ended"));
}

fn answer(shared: &Shared, r: Response) {
    let Some(p) = shared.pending.lock().expect("lock").remove(&r.id) else {
        // A late answer to a request that timed out or was cancelled: ignored, as the
        // spec asks.
        tracing::debug!(id = %r.id, "ignored a response to a request no longer waiting");
        return;
    };
    let outcome = r
        .outcome
        .map_err(|e| rpc_error(&shared.redactor, &p.method, &e));
    let _ = p.answer.send(outcome);
}

/// A JSON-RPC error answer as a typed error. Codes in the JSON-RPC reserved range say the
/// request was wrong (protocol); anything else is the server's own failure.
fn rpc_error(redactor: &Redactor, method: &str, e: &RpcError) -> Error {
    let kind = match e.code {
        -32700..=-32600 => ErrorKind::Protocol,
        c if modern::is_modern_error_code(c) => ErrorKind::Protocol,
        _ => ErrorKind::Server,
    };
    Error::new(
        kind,
        format!(
            "the server answered {method} with error {}: {}",
            e.code,
            cap(&redactor.scrub(&e.message), 500)
        ),
    )
    .with(|c| {
        c.rpc_code = Some(e.code);
        c.method = Some(method.to_owned());
        c.supported_versions = crate::transport::http::errors::supported_versions(e);
    })
}

fn notification(shared: &Shared, method: &str, params: Option<Value>) {
    let event = match method {
        "notifications/progress" => {
            let Some(p) = params.as_ref() else { return };
            let Ok(token) = serde_json::from_value::<RequestId>(p["progressToken"].clone()) else {
                return;
            };
            let Ok(progress) = serde_json::from_value::<Progress>(p.clone()) else {
                return;
            };
            if let Some(pending) = shared.pending.lock().expect("lock").get(&token) {
                let _ = pending.progress.send(progress.clone());
            }
            ServerNotification::Progress {
                request: token,
                progress,
            }
        }
        "notifications/tools/list_changed" => ServerNotification::ToolsListChanged,
        "notifications/message" => {
            let p = params.unwrap_or_default();
            ServerNotification::Log {
                level: p["level"].as_str().unwrap_or("info").to_owned(),
                logger: p["logger"].as_str().map(str::to_owned),
                data: p["data"].clone(),
            }
        }
        _ => ServerNotification::Other {
            method: method.to_owned(),
            params,
        },
    };
    let _ = shared.notifications.send(event);
}

/// Answers a request the server sent us. Only what the embedder opted into is offered.
async fn server_request(
    options: &SessionOptions,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    let params = params.unwrap_or_else(|| json!({}));
    match method {
        "ping" => Ok(json!({})),
        "roots/list" => match &options.roots {
            Some(roots) => Ok(json!({ "roots": roots })),
            None => Err(RpcError::method_not_found(method)),
        },
        "elicitation/create" => match &options.elicitation {
            Some(h) => h(params).await,
            None => Err(RpcError::method_not_found(method)),
        },
        "sampling/createMessage" => match &options.sampling {
            Some(h) => h(params).await,
            None => Err(RpcError::method_not_found(method)),
        },
        _ => Err(RpcError::method_not_found(method)),
    }
}

mod listen;
pub mod negotiate;

#[cfg(test)]
mod modern_tests;
#[cfg(test)]
mod tests;
