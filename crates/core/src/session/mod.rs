//! One live MCP connection: the handshake, request ids and correlation, concurrent
//! requests, per-request timeouts (reset by progress, with a hard cap), cancellation, and
//! answering the server's own requests. A session never reconnects: when its transport
//! ends, every waiting request fails at once with the cause and later requests are refused.

use crate::diagnostics::redact::{Redactor, cap};
use crate::error::{Error, ErrorKind, IoKind, Phase, Stage};
use crate::protocol::mcp::{
    self, ClientCapabilities, InitializeResult, ListToolsPage, Progress, Tool,
};
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
}

struct Pending {
    method: String,
    answer: oneshot::Sender<Result<Value, Error>>,
    progress: mpsc::UnboundedSender<Progress>,
}

impl Session {
    /// Starts a session on a transport without the handshake (see `connect`).
    pub fn start(conn: Connection, options: SessionOptions) -> Session {
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

    async fn handshake(&self) -> Result<(), Error> {
        let mut params = mcp::initialize_params(&self.shared.options.capabilities());
        let pinned = self.shared.options.protocol_version;
        if let Some(v) = pinned {
            params["protocolVersion"] = Value::from(v);
        }
        let stage = |e: Error| {
            let s = if e.kind() == ErrorKind::Transport
                && matches!(
                    e.context().io,
                    Some(IoKind::Connect | IoKind::Dns | IoKind::Tls)
                ) {
                Stage::Connect
            } else {
                Stage::Initialize
            };
            e.in_stage(Phase::Connect, Some(s))
        };
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

    pub async fn ping(&self) -> Result<(), Error> {
        self.request("ping", None, RequestOptions::default())
            .await
            .map(|_| ())
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
                None => return Ok(tools),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(Error::protocol(
                        "the server's tools/list pagination repeats a cursor; stopped instead of looping forever",
                    ));
                }
                Some(next) => cursor = Some(next),
            }
        }
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
    /// Dropping the future cancels the request (`notifications/cancelled` is sent).
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RequestOptions,
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
        let cause = Error::cancelled("the connection was closed by Lifeline");
        close_with(&self.shared, cause);
        self.shared.transport.close().await;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.reader.abort();
    }
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
    /// a closed connection).
    fn take_cancellation(&mut self, reason: &str) -> Option<Message> {
        let id = self.id.take()?;
        self.shared.pending.lock().expect("lock").remove(&id);
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

#[cfg(test)]
mod tests;
