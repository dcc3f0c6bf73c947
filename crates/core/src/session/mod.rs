//! One live MCP connection: the handshake, request ids and correlation, concurrent
//! requests, per-request timeouts (reset by progress, with a hard cap), cancellation, and
//! answering the server's own requests. A session never reconnects: when its transport
//! ends, every waiting request fails at once with the cause and later requests are refused.
//!
//! A session speaks either a revision with `initialize` (`connect`) or the stateless
//! revision 2026-07-28 (`connect_stateless`, in `stateless.rs`).
//!
//! This file holds the session's face: its options, its state, the handshake and the
//! public calls. The parts: `engine.rs` (ids, the pending map, timeouts, cancellation),
//! `reader.rs` (what the transport delivers, dispatched), `server_requests.rs` (the
//! server's own requests, answered under a cap), `stateless.rs` (discovery, `_meta`,
//! multi round-trip input, asking again after a lost stream), `listen.rs` (the stateless
//! revision's `subscriptions/listen` loop), `tools.rs` (`tools/list` paging) and
//! `negotiate.rs` (which revision to speak, tried in order).

use crate::error::{Error, ErrorKind, IoKind, Phase, Stage};
use crate::protocol::mcp::{self, ClientCapabilities, InitializeResult, Progress, Tool};
use crate::protocol::revision::Revision;
use crate::protocol::{Message, RequestId, RpcError};
use crate::redact::Redactor;
use crate::transport::{Connection, Transport};
use engine::Pending;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use stateless::Stateless;
use std::collections::HashMap;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// Answers one kind of server→client request (elicitation, sampling).
pub type Handler = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, RpcError>> + Send + Sync>;

/// Passes a server→client request (`roots/list`, `sampling/createMessage`,
/// `elicitation/create`) to someone else before the session answers it itself: the
/// gateway's attached host (`supervisor::HostSlot`). `None`: nobody takes it, and the
/// session answers from its options as it would without. Dropping the future (the server
/// cancelled the request) abandons it.
pub trait Relay: Send + Sync {
    fn relay(
        &self,
        method: &str,
        params: &Value,
    ) -> Option<BoxFuture<'static, Result<Value, RpcError>>>;
}

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
    /// Tried before `roots`, `elicitation` and `sampling` (the gateway's hosts).
    pub relay: Option<Arc<dyn Relay>>,
    /// The capabilities the relay's hosts declared, offered in place of ours for the keys
    /// they name (`ClientCapabilities::host`); set per attempt by the supervisor.
    pub host_capabilities: Option<Value>,
    /// A pinned revision (config `protocol`): offered in `initialize` and required of the
    /// answer. `None` offers the latest and accepts any revision we speak.
    pub pinned: Option<Revision>,
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
            relay: None,
            host_capabilities: None,
            pinned: None,
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
            host: self.host_capabilities.clone(),
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
    stateless: Option<Stateless>,
    /// The `subscriptions/listen` loop (stateless revision), stopped with the session.
    listener: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Session {
    /// Starts a session on a transport without the handshake (see `connect`).
    pub fn start(conn: Connection, options: SessionOptions) -> Session {
        Session::start_with(conn, options, None)
    }

    fn start_with(
        conn: Connection,
        options: SessionOptions,
        stateless: Option<Stateless>,
    ) -> Session {
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
            stateless,
            listener: Mutex::new(None),
        });
        let reader = tokio::spawn(reader::read_incoming(shared.clone(), conn.incoming));
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
        let pinned = self.shared.options.pinned;
        if let Some(r) = pinned {
            params["protocolVersion"] = Value::from(r.as_str());
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
        let revision =
            mcp::negotiate(&result.protocol_version).map_err(|m| stage(Error::protocol(m)))?;
        if let Some(want) = pinned
            && want != revision
        {
            return Err(stage(Error::protocol(format!(
                "the server answered protocol version {revision}, but this server is pinned to \
                 {want} (`protocol` in the config) and a pin is never changed silently; set \
                 `protocol` to \"auto\" or to \"{revision}\""
            ))));
        }
        self.shared.transport.set_revision(revision);
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
        self.shared.check_open()?;
        self.shared
            .transport
            .send(&Message::notification(method, params))
            .await
    }

    /// A round trip: `ping`, or in the stateless revision (which has none) `server/discover`.
    pub async fn ping(&self) -> Result<(), Error> {
        let method = if self.is_stateless() {
            "server/discover"
        } else {
            "ping"
        };
        self.request(method, None, RequestOptions::default())
            .await
            .map(|_| ())
    }

    /// True when speaking the stateless revision (2026-07-28).
    pub fn is_stateless(&self) -> bool {
        self.shared.stateless.is_some()
    }

    /// Every tool, following `nextCursor` until the last page.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        self.list_tools_with(RequestOptions::default()).await
    }

    /// Calls a tool. A result with `isError: true` is still `Ok`: the tool ran and failed,
    /// which the caller reports; `Err` means the call itself did not complete.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        opts: RequestOptions,
    ) -> Result<Value, Error> {
        self.call_tool_with_meta(name, arguments, None, opts).await
    }

    /// `call_tool` with the call's `params._meta` (its `progressToken` is replaced by the
    /// session's own request id).
    pub async fn call_tool_with_meta(
        &self,
        name: &str,
        arguments: Value,
        meta: Option<serde_json::Map<String, Value>>,
        opts: RequestOptions,
    ) -> Result<Value, Error> {
        let mut params = json!({ "name": name, "arguments": arguments });
        if let Some(meta) = meta.filter(|m| !m.is_empty()) {
            params["_meta"] = Value::Object(meta);
        }
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
        match &self.shared.stateless {
            Some(m) => self.request_stateless(m, method, params, opts).await,
            None => self.request_once(method, params, &opts).await,
        }
    }

    /// Closes the transport (bounded) and fails every waiting request as cancelled.
    /// Fails every request in flight with `Error::slept`, leaving the session open: the
    /// machine is going to sleep, and their answers would come (if ever) to a caller who
    /// gave up long ago. How many there were.
    pub fn interrupt_for_sleep(&self) -> usize {
        let pending = self.shared.take_all_pending();
        let n = pending.len();
        for p in pending {
            let _ = p.answer.send(Err(Error::slept(&p.method)));
        }
        n
    }

    pub async fn close(&self) {
        if let Some(l) = self.shared.listener.lock().expect("lock").take() {
            l.abort();
        }
        let cause = Error::cancelled("the connection was closed by Lifeline");
        engine::close_with(&self.shared, cause);
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

mod engine;
mod listen;
pub mod negotiate;
mod reader;
mod server_requests;
mod stateless;
mod tools;

pub use stateless::Refusal;

#[cfg(test)]
mod stateless_tests;
#[cfg(test)]
mod tests;
