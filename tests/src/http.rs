//! The Streamable HTTP transport on 127.0.0.1, endpoint `/mcp`: the POST/GET/DELETE routes
//! and the HTTP side of each fault.
//!
//! Built on hyper directly because faults need byte-level control: withholding response
//! headers forever, ending SSE streams mid-answer, sending arbitrary statuses and bodies.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::http::request::Parts;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::log::Received;
use crate::mcp::{self, Message, Outbound, Request, RpcError, Server};
use crate::script::{Action, DeleteMode, GetMode, HttpStatus, ResponseMode};
use crate::session::{Refusal, Sessions};
use crate::{process, resume, sse};

pub type Body = UnsyncBoxBody<Bytes, sse::Aborted>;

const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

/// State shared by every connection of one fixture run.
#[derive(Debug)]
pub struct Http {
    pub server: Arc<Server>,
    sessions: Sessions,
    /// SSE event ids are unique across all streams, so a `Last-Event-ID` names one stream.
    next_event_id: AtomicU64,
    /// Streams closed by an `sse_close` fault, by the event ids a resume may quote.
    resumes: Mutex<HashMap<String, Arc<resume::Resumable>>>,
}

impl Http {
    pub fn new(server: Arc<Server>) -> Arc<Http> {
        Arc::new(Http {
            server,
            sessions: Sessions::default(),
            next_event_id: AtomicU64::new(1),
            resumes: Mutex::default(),
        })
    }

    pub fn next_event_id(&self) -> u64 {
        self.next_event_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A fresh event id that a later `Last-Event-ID` resolves to `entry`.
    pub fn register(&self, entry: &Arc<resume::Resumable>) -> u64 {
        let id = self.next_event_id();
        lock(&self.resumes).insert(id.to_string(), Arc::clone(entry));
        id
    }

    /// `Ok(session id)` when the request may proceed (`None` when sessions are off).
    fn check_session(&self, parts: &Parts) -> Result<Option<String>, Refusal> {
        if !self.server.script.http.sessions {
            return Ok(None);
        }
        self.sessions
            .check(header(parts, "mcp-session-id"))
            .map(Some)
    }

    /// Counts a request against its session, which may expire it.
    fn count_request(&self, session: &str) {
        let limit = self.server.script.http.session_expires_after;
        if self.sessions.count(session, limit) {
            let fields = json!({"session_id": session});
            self.server.log.event("session_expired", fields);
        }
    }
}

/// 400 or 404, with a JSON-RPC error body as the spec's examples show.
fn refusal(refusal: Refusal) -> Response<Body> {
    match refusal {
        Refusal::Missing => rpc_error(400, -32000, "Bad Request: missing Mcp-Session-Id"),
        Refusal::Unknown => rpc_error(404, -32001, "Session not found"),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub async fn serve(server: Arc<Server>, port: u16) -> std::io::Result<()> {
    let listener = listen(&server, "http", "/mcp", port).await?;
    let http = Http::new(server);
    accept_loop(listener, http, route).await
}

/// Starts the fixture process (`mode` in the log), binds 127.0.0.1:`port` and announces
/// the URL (`path` on that port): logged, and printed as the `LISTENING <url>` line tests
/// wait for.
pub async fn listen(
    server: &Arc<Server>,
    mode: &str,
    path: &str,
    port: u16,
) -> std::io::Result<TcpListener> {
    process::start(server, mode)?;
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let url = format!("http://127.0.0.1:{}{path}", listener.local_addr()?.port());
    server.log.event("listening", json!({"url": url}));
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "LISTENING {url}")?;
    stdout.flush()?;
    Ok(listener)
}

/// Serves every connection on `listener` (HTTP/1.1), one task each: `route` gets each
/// request's head and, for a POST, its whole body.
pub async fn accept_loop<S, F, Fut>(
    listener: TcpListener,
    state: Arc<S>,
    route: F,
) -> std::io::Result<()>
where
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, Parts, Bytes) -> Fut + Copy + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    loop {
        let (stream, _) = listener.accept().await?;
        // As real servers do (Node's http server, hyper users): the benchmark's direct
        // figures would otherwise measure this fixture's delayed-ACK waits.
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let state = Arc::clone(&state);
            async move {
                let (parts, body) = req.into_parts();
                let bytes = if parts.method == Method::POST {
                    body.collect()
                        .await
                        .map(|c| c.to_bytes())
                        .unwrap_or_default()
                } else {
                    Bytes::new()
                };
                Ok::<_, Infallible>(route(state, parts, bytes).await)
            }
        });
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn header<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

async fn route(http: Arc<Http>, parts: Parts, bytes: Bytes) -> Response<Body> {
    handle(&http, &parts, &bytes).await
}

/// One HTTP request whose body has been read; the `stateless` mode's dual-revision option hands its
/// legacy requests here.
pub async fn handle(http: &Arc<Http>, parts: &Parts, bytes: &Bytes) -> Response<Body> {
    let message: Option<Value> = serde_json::from_slice(bytes).ok();
    http.server
        .log
        .received(&Received::http("http", parts, bytes, message.as_ref()));
    if parts.uri.path() != "/mcp" {
        return full(404, Some("text/plain"), "not found");
    }
    match parts.method {
        Method::POST => post(http, parts, message).await,
        Method::GET => get(http, parts).await,
        Method::DELETE => delete(http, parts),
        _ => full(405, Some("text/plain"), "method not allowed"),
    }
}

async fn post(http: &Arc<Http>, parts: &Parts, message: Option<Value>) -> Response<Body> {
    let Some(message) = message else {
        return rpc_error(400, mcp::PARSE_ERROR, "Parse error");
    };
    let req = match mcp::classify(&message) {
        Message::Request(req) => req,
        Message::Invalid => return rpc_error(400, mcp::INVALID_REQUEST, "Invalid Request"),
        Message::Notification { .. } | Message::Response { .. } => {
            if let Err(refused) = http.check_session(parts) {
                return refusal(refused);
            }
            http.server.accept_response(&message);
            return full(202, None, Bytes::new());
        }
    };
    let session = if req.method == "initialize" {
        http.server
            .script
            .http
            .sessions
            .then(|| http.sessions.open())
    } else {
        match http.check_session(parts) {
            Ok(session) => session,
            Err(refused) => {
                if let Some(action) = http.server.gateway(&req) {
                    return answer(http, req, Some(action), Vec::new()).await;
                }
                return refusal(refused);
            }
        }
    };
    if let Some(session) = &session {
        http.count_request(session);
    }
    let headers: Vec<(HeaderName, String)> = match session {
        Some(id) if req.method == "initialize" => vec![(SESSION_HEADER, id)],
        _ => Vec::new(),
    };
    let action = http.server.decide(&req);
    answer(http, req, action, headers).await
}

/// The HTTP side of each fault, or a normal answer.
async fn answer(
    http: &Arc<Http>,
    req: Request,
    action: Option<Action>,
    headers: Vec<(HeaderName, String)>,
) -> Response<Body> {
    let mode = http.server.script.http.response;
    match action {
        Some(Action::Crash { code }) => process::crash(&http.server.log, code),
        Some(Action::NeverAnswer) if mode == ResponseMode::Json => hang(http, "post").await,
        Some(Action::NeverAnswer) => stream(http, None, None, &headers, "post", req.id),
        Some(Action::HttpStatus(status)) => http_status(&status),
        Some(Action::Garbage { text, .. }) => full(200, Some("application/json"), text),
        Some(Action::Oversized { bytes, .. }) => full(
            200,
            Some("application/json"),
            mcp::padded_notification(bytes),
        ),
        Some(Action::WrongContentType { content_type }) => {
            let mut rx = http.server.answer(req, None);
            while let Some(out) = rx.recv().await {
                if let Outbound::Final(response) = out {
                    return with_headers(
                        full(200, Some(&content_type), response.to_string()),
                        &headers,
                    );
                }
            }
            full(500, Some("text/plain"), "answer dropped")
        }
        Some(Action::SseClose(spec)) => resume::post(http, req, spec),
        other => {
            let id = req.id.clone();
            let mut rx = http.server.answer(req, other);
            if mode == ResponseMode::Sse {
                return stream(http, None, Some(rx), &headers, "post", id);
            }
            match rx.recv().await {
                Some(Outbound::Final(response)) => with_headers(
                    full(200, Some("application/json"), response.to_string()),
                    &headers,
                ),
                // The answer sends messages before its result, which only SSE can carry.
                first @ Some(Outbound::Related(_)) => {
                    stream(http, first, Some(rx), &headers, "post", id)
                }
                None => full(500, Some("text/plain"), "answer dropped"),
            }
        }
    }
}

async fn get(http: &Arc<Http>, parts: &Parts) -> Response<Body> {
    let resumable =
        header(parts, "last-event-id").and_then(|id| lock(&http.resumes).get(id).cloned());
    if let Some(entry) = resumable {
        if let Err(refused) = http.check_session(parts) {
            return refusal(refused);
        }
        return resume::get(http, entry).await;
    }
    match http.server.script.http.get {
        GetMode::MethodNotAllowed => {
            let mut response = full(405, Some("text/plain"), "method not allowed");
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST, DELETE"));
            response
        }
        GetMode::NotFound => full(404, Some("text/plain"), "not found"),
        GetMode::Hang => hang(http, "get").await,
        GetMode::Sse => match http.check_session(parts) {
            Err(refused) => refusal(refused),
            Ok(_) => stream(http, None, None, &[], "get", Value::Null),
        },
    }
}

fn delete(http: &Http, parts: &Parts) -> Response<Body> {
    if http.server.script.http.delete == DeleteMode::MethodNotAllowed {
        return full(405, Some("text/plain"), "method not allowed");
    }
    match http.check_session(parts) {
        Err(refused) => refusal(refused),
        Ok(session) => {
            if let Some(session) = session {
                http.sessions.close(&session);
                http.server
                    .log
                    .event("session_deleted", json!({"session_id": session}));
            }
            full(200, None, Bytes::new())
        }
    }
}

/// Starts an SSE response and pumps `first` and `rx` into it on a task.
fn stream(
    http: &Arc<Http>,
    first: Option<Outbound>,
    rx: Option<tokio::sync::mpsc::UnboundedReceiver<Outbound>>,
    headers: &[(HeaderName, String)],
    name: &'static str,
    rpc_id: Value,
) -> Response<Body> {
    let (writer, response) = sse::response(http.server.script.http.sse.crlf, headers);
    tokio::spawn(sse::pump(Arc::clone(http), writer, first, rx, name, rpc_id));
    response
}

/// A bare SSE response in the scripted line-ending style.
pub fn sse_response(http: &Http) -> (sse::SseWriter, Response<Body>) {
    sse::response(http.server.script.http.sse.crlf, &[])
}

/// Accepts the request and never sends response headers.
pub async fn hang(http: &Http, stream: &str) -> Response<Body> {
    http.server
        .log
        .event("withholding_headers", json!({"stream": stream}));
    std::future::pending().await
}

pub fn http_status(s: &HttpStatus) -> Response<Body> {
    let body = s.body.clone().unwrap_or_default();
    let content_type = s.content_type.clone().or_else(|| {
        let is_json = serde_json::from_str::<Value>(&body).is_ok();
        (!body.is_empty()).then(|| {
            if is_json {
                "application/json"
            } else {
                "text/plain"
            }
            .to_owned()
        })
    });
    let mut response = full(s.status, content_type.as_deref(), body);
    let headers = [
        (RETRY_AFTER, &s.retry_after),
        (WWW_AUTHENTICATE, &s.www_authenticate),
    ];
    for (name, value) in headers {
        if let Some(value) = value.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

pub fn full(status: u16, content_type: Option<&str>, body: impl Into<Bytes>) -> Response<Body> {
    let body = body.into();
    let body = if body.is_empty() {
        Empty::new().map_err(|never| match never {}).boxed_unsync()
    } else {
        Full::new(body)
            .map_err(|never| match never {})
            .boxed_unsync()
    };
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(value) = content_type.and_then(|c| HeaderValue::from_str(c).ok()) {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    response
}

fn with_headers(mut response: Response<Body>, headers: &[(HeaderName, String)]) -> Response<Body> {
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            response.headers_mut().insert(name.clone(), value);
        }
    }
    response
}

pub fn rpc_error(status: u16, code: i64, message: &str) -> Response<Body> {
    let body = mcp::error_response(&Value::Null, &RpcError::new(code, message));
    full(status, Some("application/json"), body.to_string())
}
