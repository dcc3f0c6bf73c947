//! The gateway over Streamable HTTP (MCP 2025-11-25 and older): the local endpoint
//! `http://127.0.0.1:PORT/servers/NAME/mcp` for hosts that take a URL, served by the app
//! and by `lifeline serve`. Each host session (`Mcp-Session-Id`, issued at `initialize`) is
//! a gateway session (`gateway::start`) on the supervisor for NAME, exactly as a stdio host
//! gets from `lifeline connect`; `session.rs` routes its messages to the right stream, and
//! every event carries an id (`streams.rs`) by which a host resumes a broken stream with a
//! GET and `Last-Event-ID` (`resume.rs`).
//!
//! Before anything else a request must pass `guard.rs`: bound to 127.0.0.1 only, a `Host`
//! naming the loopback and no foreign `Origin` (403: DNS rebinding), a client's bearer
//! token from `tokens.rs` (401), a known `MCP-Protocol-Version` (400). A token bound to a
//! profile opens that profile alone (`route.rs`; elsewhere 403).
//!
//! Under load it stays fair and bounded (`Limits`): at most `MAX_CONNECTIONS` connections
//! (`accept.rs`: past it 503, and a backoff when `accept` fails), `MAX_SESSIONS` sessions
//! of which one client holds at most `MAX_SESSIONS_PER_CLIENT` (a client's new session
//! evicts only its own idle ones), `STREAM_QUEUE` events queued per stream, and as many
//! kept per stream for a resume (at most `streams::RESUME_BYTES`, for
//! `streams::RESUME_WINDOW` once the stream's connection is gone). A client whose token is
//! removed or replaced has its sessions, and so its streams, ended within `TOKEN_CHECK`.

mod accept;
pub mod guard;
mod open;
mod reply;
mod resume;
mod route;
mod session;
mod streams;
pub mod tokens;

#[cfg(test)]
mod tests;

use super::attach::Refusal;
pub use super::{Served, Target};
use crate::protocol::{Message, RpcError};
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{ALLOW, HeaderValue};
use hyper::http::request::Parts;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use reply::{empty, json_response, refuse, request_stream, session_gone};
use serde_json::Value;
use session::{Answer, HttpSession};
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
pub use tokens::Tokens;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinHandle;

/// The port `lifeline serve` and the app listen on unless told otherwise.
pub const DEFAULT_PORT: u16 = crate::config::DEFAULT_SERVE_PORT;

/// The largest request body (a tool call's arguments included), as the stdio gateway.
const MAX_BODY: usize = super::MAX_LINE;

/// How often an idle event stream gets a comment, so a host that went away is noticed.
const KEEPALIVE: Duration = Duration::from_secs(25);

/// A session with no open stream and nothing in flight ends after this long unused (the
/// host then gets 404 and initializes again, as the spec has it).
const IDLE: Duration = Duration::from_secs(24 * 60 * 60);

/// At most this many host sessions at once; past it, the least recently used idle one of
/// the client asking ends, and without one a new `initialize` is refused (503).
pub const MAX_SESSIONS: usize = 256;

/// At most this many host sessions per client (per token); past it, the client's least
/// recently used idle one ends, and without one its `initialize` is refused (503). With
/// `Auth::Open` there is no telling clients apart and only `MAX_SESSIONS` holds.
pub const MAX_SESSIONS_PER_CLIENT: usize = 64;

/// At most this many connections at once (each session's GET stream and each POST in
/// flight holds one); past it a connection gets 503 with `Retry-After` and is closed.
pub const MAX_CONNECTIONS: usize = 512;

/// At most this many events wait on one stream for a host that is slow to read; a host
/// that stops reading has the stream's connection closed when it fills. As many are kept
/// per stream for a host that resumes it.
pub const STREAM_QUEUE: usize = 256;

/// How often the tokens file is checked for a removed token, whose sessions then end.
pub const TOKEN_CHECK: Duration = Duration::from_secs(1);

/// The endpoint's caps (see the constants); lowered in tests.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub connections: usize,
    pub sessions: usize,
    pub sessions_per_client: usize,
    /// Events queued per stream, and kept per stream for a resume.
    pub stream_queue: usize,
    /// Bytes of events kept per stream for a resume, besides its newest one.
    pub resume_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connections: MAX_CONNECTIONS,
            sessions: MAX_SESSIONS,
            sessions_per_client: MAX_SESSIONS_PER_CLIENT,
            stream_queue: STREAM_QUEUE,
            resume_bytes: streams::RESUME_BYTES,
        }
    }
}

/// How long a client may take to send a request's headers.
const HEADER_WAIT: Duration = Duration::from_secs(30);

/// How long `Endpoint::stop` lets the sessions cancel their calls.
const STOP_WAIT: Duration = Duration::from_secs(5);

pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What serving a target needs: its supervisors (shared handles) and the gateway's options,
/// or why it cannot be served (`Unknown` is a 404, `Closing` a 503).
pub type Resolved = Result<Served, (Refusal, String)>;

/// Finds what a host asked for (a server, or a profile), at its `initialize`.
pub type Resolve =
    Arc<dyn Fn(Target) -> Pin<Box<dyn Future<Output = Resolved> + Send>> + Send + Sync>;

/// Who may call.
pub enum Auth {
    /// A request must carry a client's token from this file.
    Tokens(Tokens),
    /// Anyone on this machine (`lifeline serve --no-auth`, for test suites).
    Open,
}

struct State {
    resolve: Resolve,
    auth: Auth,
    /// The port it listens on, for the URLs its answers name.
    port: u16,
    limits: Limits,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
}

/// The running endpoint.
pub struct Endpoint {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
    /// Ends the sessions of clients whose token was removed (`TOKEN_CHECK`).
    revoke: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Listens on 127.0.0.1:`port` (0: a free port) and serves until `stop`.
    pub async fn bind(port: u16, resolve: Resolve, auth: Auth) -> io::Result<Endpoint> {
        Endpoint::bind_with(port, resolve, auth, Limits::default()).await
    }

    /// `bind` with other caps than the default ones.
    pub async fn bind_with(
        port: u16,
        resolve: Resolve,
        auth: Auth,
        limits: Limits,
    ) -> io::Result<Endpoint> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            resolve,
            auth,
            port: addr.port(),
            limits,
            sessions: Mutex::default(),
        });
        let accept = tokio::spawn(accept::accept_loop(listener, state.clone()));
        let revoke = matches!(state.auth, Auth::Tokens(_)).then(|| {
            let state = state.clone();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(TOKEN_CHECK);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    every.tick().await;
                    end_revoked(&state);
                }
            })
        });
        Ok(Endpoint {
            addr,
            state,
            accept,
            revoke,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL a host uses for the server `name`.
    pub fn url(&self, name: &str) -> String {
        url(self.addr.port(), name)
    }

    /// How many host sessions are open.
    pub fn sessions(&self) -> usize {
        self.state.sessions.lock().expect("sessions lock").len()
    }

    /// Stops listening and ends every session (their calls in flight are cancelled
    /// upstream), bounded; the supervisors are left running.
    pub async fn stop(self) {
        if let Some(revoke) = self.revoke {
            revoke.abort();
        }
        self.accept.abort();
        let _ = self.accept.await;
        let sessions: Vec<_> = self
            .state
            .sessions
            .lock()
            .expect("sessions lock")
            .drain()
            .map(|(_, s)| s)
            .collect();
        let ends: Vec<_> = sessions.iter().map(|s| tokio::spawn(s.end())).collect();
        let _ = tokio::time::timeout(STOP_WAIT, async {
            for end in ends {
                let _ = end.await;
            }
        })
        .await;
    }
}

/// Why the endpoint cannot listen on 127.0.0.1:`port`, in one line that says what to do;
/// `change` says how to pick another port (`--port`, `lifeline.serve.port`).
pub fn bind_problem(port: u16, e: &io::Error, change: &str) -> String {
    if e.kind() == io::ErrorKind::AddrInUse {
        format!(
            "port 127.0.0.1:{port} is in use by another program: {change}, or quit that program"
        )
    } else {
        format!("cannot listen on 127.0.0.1:{port} ({e}): {change}")
    }
}

/// `http://127.0.0.1:PORT/servers/NAME/mcp`.
pub fn url(port: u16, name: &str) -> String {
    format!("http://127.0.0.1:{port}/servers/{name}/mcp")
}

/// The aggregated endpoint's URL: `http://127.0.0.1:PORT/mcp` for `default`, else
/// `http://127.0.0.1:PORT/profiles/P/mcp`.
pub fn profile_url(port: u16, profile: &str) -> String {
    if profile == crate::config::DEFAULT_PROFILE {
        format!("http://127.0.0.1:{port}/mcp")
    } else {
        format!("http://127.0.0.1:{port}/profiles/{profile}/mcp")
    }
}

/// Serves one accepted connection; `permit` is its place under `Limits::connections`.
async fn serve(state: Arc<State>, stream: TcpStream, permit: OwnedSemaphorePermit) {
    let service = service_fn(move |req: Request<Incoming>| {
        let state = state.clone();
        async move { Ok::<_, Infallible>(handle(state, req).await) }
    });
    // A client that opens a connection and never finishes its headers is dropped.
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_WAIT)
        .serve_connection(TokioIo::new(stream), service)
        .await;
    drop(permit);
}

/// Ends the sessions of the clients whose token was removed, replaced or bound anew: their
/// streams close and their calls in flight are cancelled upstream.
fn end_revoked(state: &State) {
    let Auth::Tokens(tokens) = &state.auth else {
        return;
    };
    let revoked = tokens.take_revoked();
    if revoked.is_empty() {
        return;
    }
    let ended: Vec<_> = {
        let mut sessions = state.sessions.lock().expect("sessions lock");
        let ids: Vec<_> = sessions
            .iter()
            .filter(|(_, s)| s.client.as_ref().is_some_and(|c| revoked.contains(c)))
            .map(|(id, _)| id.clone())
            .collect();
        ids.iter().filter_map(|id| sessions.remove(id)).collect()
    };
    for client in &revoked {
        let n = ended
            .iter()
            .filter(|s| s.client.as_ref() == Some(client))
            .count();
        tracing::info!(
            "gateway: `{client}`'s token was removed or changed; ending its {n} sessions"
        );
    }
    for s in ended {
        tokio::spawn(s.end());
    }
}

fn header<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

/// Every `Accept` header's media ranges, lowercased; `None` when there is none.
fn accept(parts: &Parts) -> Option<String> {
    let all: Vec<_> = parts
        .headers
        .get_all("accept")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!all.is_empty()).then(|| all.join(", ").to_ascii_lowercase())
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let host = header(&parts, "host").unwrap_or("");
    if !guard::loopback_host(host) {
        tracing::info!(
            "gateway: refused a request for Host {:?}",
            guard::shown(host)
        );
        return refuse(
            StatusCode::FORBIDDEN,
            -32000,
            format!(
                "Host {:?} is not this machine's loopback address: Lifeline's endpoint answers \
                 only requests for 127.0.0.1, localhost or [::1] (DNS rebinding protection)",
                guard::shown(host)
            ),
        );
    }
    if let Some(origin) = header(&parts, "origin")
        && !guard::loopback_origin(origin)
    {
        tracing::info!(
            "gateway: refused a request from Origin {:?}",
            guard::shown(origin)
        );
        return refuse(
            StatusCode::FORBIDDEN,
            -32000,
            format!(
                "Origin {:?} is not allowed: Lifeline's endpoint takes requests from local \
                 programs, not from web pages",
                guard::shown(origin)
            ),
        );
    }
    let path = parts.uri.path();
    let Some(target) = route::target(path) else {
        return refuse(
            StatusCode::NOT_FOUND,
            -32000,
            format!(
                "no endpoint at {:?}: Lifeline serves each server at /servers/NAME/mcp, every \
                 server at /mcp and a profile's at /profiles/P/mcp",
                guard::shown(path)
            ),
        );
    };
    let caller = match route::caller(&state, &parts) {
        Ok(caller) => caller,
        Err(r) => return *r,
    };
    let name = match route::opens(path, target, caller.as_ref(), state.port) {
        Ok(name) => name,
        Err(r) => return *r,
    };
    let client = caller.map(|c| c.client);
    match parts.method {
        Method::POST => post(&state, &parts, body, name, client).await,
        Method::GET => resume::get(&state, &parts, &name, client.as_deref()),
        Method::DELETE => delete(&state, &parts, &name, client.as_deref()),
        _ => {
            let mut r = refuse(
                StatusCode::METHOD_NOT_ALLOWED,
                -32000,
                "the MCP endpoint takes POST, GET and DELETE",
            );
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            r
        }
    }
}

/// The session a request names, or the HTTP error the spec prescribes: 400 without one,
/// 404 for one that is not (or no longer) open for this server and client.
fn session_of(
    state: &State,
    parts: &Parts,
    name: &Target,
    client: Option<&str>,
) -> Result<Arc<HttpSession>, Box<Response<Body>>> {
    if let Err(why) = guard::protocol_version(header(parts, "mcp-protocol-version")) {
        return Err(Box::new(refuse(StatusCode::BAD_REQUEST, -32000, why)));
    }
    let Some(id) = header(parts, "mcp-session-id") else {
        return Err(Box::new(refuse(
            StatusCode::BAD_REQUEST,
            -32000,
            "Mcp-Session-Id is missing: send `initialize` first and use the session id it returns",
        )));
    };
    let sessions = state.sessions.lock().expect("sessions lock");
    match sessions.get(id) {
        Some(s) if s.target == *name && s.client.as_deref() == client => Ok(s.clone()),
        _ => Err(Box::new(session_gone())),
    }
}

async fn post(
    state: &Arc<State>,
    parts: &Parts,
    body: Incoming,
    name: Target,
    client: Option<String>,
) -> Response<Body> {
    let json_body = header(parts, "content-type").is_some_and(|c| {
        c.trim()
            .to_ascii_lowercase()
            .starts_with("application/json")
    });
    if !json_body {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32000,
            "the body must be one JSON-RPC message, Content-Type: application/json",
        );
    }
    let accept = header(parts, "accept")
        .unwrap_or("*/*")
        .to_ascii_lowercase();
    let stream_ok = accept.contains("text/event-stream");
    let json_ok = ["application/json", "application/*", "*/*"]
        .iter()
        .any(|t| accept.contains(t));
    if !stream_ok && !json_ok {
        return refuse(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Accept must allow application/json and text/event-stream",
        );
    }
    let bytes = match Limited::new(body, MAX_BODY).collect().await {
        Ok(c) => c.to_bytes(),
        Err(_) => {
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                RpcError::INVALID_REQUEST,
                format!("the body is over {MAX_BODY} bytes, or it was cut short"),
            );
        }
    };
    let value = match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                RpcError::PARSE_ERROR,
                format!("the body is not JSON ({e})"),
            );
        }
    };
    if value.is_array() {
        return refuse(
            StatusCode::BAD_REQUEST,
            RpcError::INVALID_REQUEST,
            "batches are not taken (MCP 2025-06-18 removed them): send one message per POST",
        );
    }
    let msg = match Message::from_value(value) {
        Ok(m) => m,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                RpcError::INVALID_REQUEST,
                format!("not a JSON-RPC message ({})", e.0),
            );
        }
    };
    if let Message::Request(r) = &msg
        && r.method == "initialize"
    {
        return open::initialize(state, msg, name, client, !json_ok).await;
    }
    let session = match session_of(state, parts, &name, client.as_deref()) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    match msg {
        Message::Request(r) => answer(&session, r.id.clone(), Message::Request(r), stream_ok).await,
        other => match session.deliver(other) {
            Ok(()) => empty(StatusCode::ACCEPTED),
            Err(_) => session_gone(),
        },
    }
}

/// Passes a request on and answers the POST with its response: as one JSON body, or as an
/// event stream that carries the request's progress first.
async fn answer(
    session: &HttpSession,
    id: crate::protocol::RequestId,
    msg: Message,
    stream: bool,
) -> Response<Body> {
    match session.request(msg, id.clone(), stream) {
        Err(session::Refusal::Ended) => session_gone(),
        Err(session::Refusal::DuplicateId) => refuse(
            StatusCode::BAD_REQUEST,
            RpcError::INVALID_REQUEST,
            format!("request id {id} is already in use by an unanswered request of this session"),
        ),
        Ok(Answer::Stream { priming, events }) => request_stream(priming, events).await,
        Ok(Answer::Json(rx)) => match rx.await {
            Ok(msg) => json_response(StatusCode::OK, msg.to_json()),
            Err(_) => session_gone(),
        },
    }
}

/// Ends a session: its calls in flight are cancelled upstream.
fn delete(state: &State, parts: &Parts, name: &Target, client: Option<&str>) -> Response<Body> {
    let session = match session_of(state, parts, name, client) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    state
        .sessions
        .lock()
        .expect("sessions lock")
        .remove(&session.id);
    tracing::info!("gateway: a host ended its session on {}", name.shown());
    tokio::spawn(session.end());
    empty(StatusCode::OK)
}
