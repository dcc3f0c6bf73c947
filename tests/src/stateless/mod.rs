//! The 2026-07-28 ("stateless", stateless) revision of Streamable HTTP on 127.0.0.1, endpoint
//! `/mcp`: POST only, no sessions, no resumption; every request carries its protocol version,
//! method and name in headers and its version, client info and capabilities in `_meta`.
//!
//! `metadata` checks what a request must carry, `tools` adds the tools the client's re-issue
//! and header rules need, `listen` serves `subscriptions/listen`. Faults are the script's rules,
//! as in the `http` mode, plus `stream_break`; a dual-revision option hands `initialize` (and
//! anything with a session) to the `http` mode's code.

pub mod listen;
pub mod metadata;
pub mod tools;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use hyper::header::{ALLOW, HeaderName, HeaderValue};
use hyper::http::request::Parts;
use hyper::{Method, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::http::{self, Body, Http, full};
use crate::log::Received;
use crate::mcp::{self, Message, Outbound, Request, RpcError, Server, Sink};
use crate::script::{Action, InitializeMode, ResponseMode};
use crate::{process, sse};
use metadata::Rejection;

/// The methods a stateless request may name; anything else is 404 with -32601.
/// (`ping` and `logging/setLevel` are gone in this revision.)
const METHODS: &[&str] = &[
    "server/discover",
    "tools/list",
    "tools/call",
    "subscriptions/listen",
];

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// State shared by every connection of one fixture run.
#[derive(Debug)]
pub struct Stateless {
    pub server: Arc<Server>,
    /// The `http` mode's state, serving the `initialize` requests of a dual-revision server.
    sessions: Arc<Http>,
    next_event_id: AtomicU64,
    listeners: Mutex<Vec<listen::Listener>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Stateless {
    fn next_event_id(&self) -> u64 {
        self.next_event_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A 200 `text/event-stream` response that asks proxies not to buffer it.
    fn sse_response(&self) -> (sse::SseWriter, Response<Body>) {
        let no_buffering = (
            HeaderName::from_static("x-accel-buffering"),
            "no".to_owned(),
        );
        sse::response(self.server.script.http.sse.crlf, &[no_buffering])
    }

    /// Dual-revision: `initialize`, and anything quoting a session, is served by the `http` mode.
    fn is_session_request(&self, parts: &Parts, message: Option<&Value>) -> bool {
        self.server.script.stateless.initialize == InitializeMode::Serve
            && (parts.headers.contains_key("mcp-session-id")
                || message.and_then(|m| m.get("method")) == Some(&json!("initialize")))
    }

    fn server_info() -> Value {
        json!({"name": "lifeline-fixture", "version": env!("CARGO_PKG_VERSION")})
    }
}

pub async fn serve(server: Arc<Server>, port: u16) -> std::io::Result<()> {
    let listener = http::listen(&server, "stateless", "/mcp", port).await?;
    let stateless = Arc::new(Stateless {
        sessions: Http::new(Arc::clone(&server)),
        server,
        next_event_id: AtomicU64::new(1),
        listeners: Mutex::default(),
    });
    http::accept_loop(listener, stateless, route).await
}

async fn route(stateless: Arc<Stateless>, parts: Parts, bytes: Bytes) -> Response<Body> {
    let message: Option<Value> = serde_json::from_slice(&bytes).ok();
    if stateless.is_session_request(&parts, message.as_ref()) {
        return http::handle(&stateless.sessions, &parts, &bytes).await;
    }
    stateless.server.log.received(&Received::http(
        "stateless",
        &parts,
        &bytes,
        message.as_ref(),
    ));
    if parts.uri.path() != "/mcp" {
        return full(404, Some("text/plain"), "not found");
    }
    if parts.method != Method::POST {
        // No GET stream and no sessions to DELETE in this revision.
        let mut response = full(405, Some("text/plain"), "method not allowed");
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    post(&stateless, &parts, message).await
}

fn error(status: u16, id: &Value, e: &RpcError) -> Response<Body> {
    let body = mcp::error_response(id, e);
    full(status, Some("application/json"), body.to_string())
}

async fn post(stateless: &Arc<Stateless>, parts: &Parts, message: Option<Value>) -> Response<Body> {
    let Some(message) = message else {
        return http::rpc_error(400, mcp::PARSE_ERROR, "Parse error");
    };
    let req = match mcp::classify(&message) {
        Message::Request(req) => req,
        Message::Invalid => return http::rpc_error(400, mcp::INVALID_REQUEST, "Invalid Request"),
        Message::Notification { .. } | Message::Response { .. } => {
            return full(202, None, Bytes::new());
        }
    };
    let script = &stateless.server.script.stateless;
    if req.method == "initialize" {
        // A client of the `initialize` revisions has no way forward; the error is its only diagnostic, so it names
        // what this server does speak.
        let versions = script.supported_versions.join(", ");
        let mut e = RpcError::new(
            mcp::METHOD_NOT_FOUND,
            format!(
                "Method not found: initialize. This server speaks only the stateless MCP \
                 revision (supported versions: {versions}), which has no initialize handshake"
            ),
        );
        e.data = Some(json!({"supported": script.supported_versions}));
        return error(404, &req.id, &e);
    }
    if script.stateless_only_discover && req.method != "server/discover" {
        return http::rpc_error(400, -32000, "Bad Request: missing Mcp-Session-Id");
    }
    let checked = metadata::check(
        &parts.headers,
        &req.method,
        &req.params,
        &script.supported_versions,
        script.require_client_info,
    )
    .and_then(|()| check_params(stateless, parts, &req));
    if let Err(Rejection(e)) = checked {
        stateless.server.log.event(
            "rejected",
            json!({"rpc_id": req.id, "code": e.code, "message": e.message}),
        );
        return error(400, &req.id, &e);
    }
    if !METHODS.contains(&req.method.as_str()) {
        let e = RpcError::new(
            mcp::METHOD_NOT_FOUND,
            format!("Method not found: {}", req.method),
        );
        return error(404, &req.id, &e);
    }
    let action = stateless.server.decide(&req);
    if req.method == "subscriptions/listen" && matches!(action, None | Some(Action::Delay { .. })) {
        return listen::open(stateless, &req);
    }
    answer(stateless, req, action).await
}

/// The `Mcp-Param-*` headers of a `tools/call` of a listed tool.
fn check_params(stateless: &Stateless, parts: &Parts, req: &Request) -> Result<(), Rejection> {
    if req.method != "tools/call" {
        return Ok(());
    }
    let name = req
        .params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(schema) = tools::schema(&stateless.server.script, name) else {
        return Ok(());
    };
    let arguments = req.params.get("arguments").cloned().unwrap_or(Value::Null);
    metadata::check_params(&parts.headers, &schema, &arguments)
}

/// The HTTP side of each fault, or a normal answer.
async fn answer(
    stateless: &Arc<Stateless>,
    req: Request,
    action: Option<Action>,
) -> Response<Body> {
    let mode = stateless.server.script.http.response;
    let id = req.id.clone();
    match action {
        Some(Action::Crash { code }) => process::crash(&stateless.server.log, code),
        Some(Action::NeverAnswer) if mode == ResponseMode::Json => {
            http::hang(&stateless.sessions, "post").await
        }
        Some(Action::NeverAnswer) => stream(stateless, None, None, id, None),
        Some(Action::HttpStatus(status)) => http::http_status(&status),
        Some(Action::Garbage { text, .. }) => full(200, Some("application/json"), text),
        Some(Action::Oversized { bytes, .. }) => full(
            200,
            Some("application/json"),
            mcp::padded_notification(bytes),
        ),
        Some(Action::WrongContentType { content_type }) => {
            let mut rx = respond(stateless, req, None);
            while let Some(out) = rx.recv().await {
                if let Outbound::Final(response) = out {
                    return full(200, Some(&content_type), response.to_string());
                }
            }
            full(500, Some("text/plain"), "answer dropped")
        }
        // Streams are not resumable in this revision: a closed stream is a broken one.
        Some(Action::SseClose(_)) => {
            let rx = respond(stateless, req, None);
            let cut = Cut {
                after: 0,
                abort: false,
            };
            stream(stateless, None, Some(rx), id, Some(cut))
        }
        Some(Action::StreamBreak { after, abort }) => {
            let rx = respond(stateless, req, None);
            stream(stateless, None, Some(rx), id, Some(Cut { after, abort }))
        }
        other => {
            let mut rx = respond(stateless, req, other);
            if mode == ResponseMode::Sse {
                return stream(stateless, None, Some(rx), id, None);
            }
            match rx.recv().await {
                Some(Outbound::Final(response)) => {
                    full(200, Some("application/json"), response.to_string())
                }
                // The answer sends messages before its result, which only SSE can carry.
                first @ Some(Outbound::Related(_)) => stream(stateless, first, Some(rx), id, None),
                None => full(500, Some("text/plain"), "answer dropped"),
            }
        }
    }
}

/// Answers `req` on a task: the scripted delay or error, else the method.
fn respond(
    stateless: &Arc<Stateless>,
    req: Request,
    action: Option<Action>,
) -> mpsc::UnboundedReceiver<Outbound> {
    let (tx, rx) = mpsc::unbounded_channel();
    let stateless = Arc::clone(stateless);
    tokio::spawn(async move {
        let response = match stateless.server.prelude(&req, action.as_ref()).await {
            Some(error) => error,
            None => dispatch(&stateless, &req, &tx).await,
        };
        let _ = tx.send(Outbound::Final(response));
    });
    rx
}

async fn dispatch(stateless: &Stateless, req: &Request, sink: &Sink) -> Value {
    let script = &stateless.server.script;
    let name = req.params.get("name").and_then(Value::as_str);
    let result = match req.method.as_str() {
        "server/discover" => match &script.stateless.discover_result {
            // A lying server's result goes out exactly as scripted.
            Some(verbatim) => return json!({"jsonrpc": "2.0", "id": req.id, "result": verbatim}),
            None => Ok(json!({
                "supportedVersions": script.stateless.supported_versions,
                "capabilities": {"tools": {"listChanged": true}},
                "instructions": "lifeline-fixture: a scriptable MCP server for Lifeline's tests.",
                "ttlMs": 0,
                "cacheScope": "private",
            })),
        },
        "tools/list" => {
            let all = tools::definitions(script);
            crate::tools::page(&all, script.page_size, &req.params).map(|mut page| {
                page["ttlMs"] = json!(0);
                page["cacheScope"] = json!("private");
                page
            })
        }
        "tools/call" if name == Some("list_changed") => {
            let n = listen::broadcast_list_changed(stateless);
            Ok(crate::tools::text(format!("sent to {n} listen stream(s)")))
        }
        "tools/call" => tools::call(&stateless.server, &script.stateless, &req.params, sink).await,
        // A listen request that a fault kept from becoming a stream.
        _ => Ok(json!({})),
    };
    match result {
        Ok(mut result) => {
            result["resultType"] = json!("complete");
            result["_meta"] = json!({SERVER_INFO: Stateless::server_info()});
            json!({"jsonrpc": "2.0", "id": req.id, "result": result})
        }
        Err(e) => mcp::error_response(&req.id, &e),
    }
}

/// A `stream_break`: the stream ends without the result once `after` messages went out.
#[derive(Debug, Clone, Copy)]
struct Cut {
    after: usize,
    /// Fail the connection instead of ending the body gracefully.
    abort: bool,
}

/// Starts an SSE response and pumps `first` and `rx` into it on a task.
fn stream(
    stateless: &Arc<Stateless>,
    first: Option<Outbound>,
    rx: Option<mpsc::UnboundedReceiver<Outbound>>,
    rpc_id: Value,
    cut: Option<Cut>,
) -> Response<Body> {
    let (writer, response) = stateless.sse_response();
    tokio::spawn(pump(Arc::clone(stateless), writer, first, rx, rpc_id, cut));
    response
}

async fn pump(
    stateless: Arc<Stateless>,
    writer: sse::SseWriter,
    mut first: Option<Outbound>,
    mut rx: Option<mpsc::UnboundedReceiver<Outbound>>,
    rpc_id: Value,
    cut: Option<Cut>,
) {
    let script = &stateless.server.script.http.sse;
    let mut keepalive = sse::keepalive(script);
    let mut sent = 0;
    let reason = loop {
        if cut.is_some_and(|c| c.after == sent) {
            break "fault";
        }
        let next = match first.take() {
            Some(out) => Some(out),
            None => tokio::select! {
                out = sse::recv(&mut rx) => out,
                // Closing the response stream is how a client cancels (2026-07-28).
                () = writer.closed() => break "client_gone",
                () = sse::tick(&mut keepalive) => {
                    if !writer.comment(&script.keepalive_comment) {
                        break "client_gone";
                    }
                    continue;
                }
            },
        };
        let Some(out) = next else {
            break "answer_dropped";
        };
        let last = matches!(out, Outbound::Final(_));
        if last && cut.is_some() {
            break "fault";
        }
        if !writer.message(stateless.next_event_id(), out.message()) {
            break "client_gone";
        }
        sent += 1;
        if last {
            break "complete";
        }
    };
    let abort = reason == "fault" && cut.is_some_and(|c| c.abort);
    if reason == "fault" {
        let fields = json!({"rpc_id": rpc_id, "sent": sent, "abort": abort});
        stateless.server.log.event("stream_broken", fields);
    }
    // Logged before the close, so a client that saw the end of the stream finds it logged.
    let fields = json!({"stream": "post", "rpc_id": rpc_id, "reason": reason});
    stateless.server.log.event("sse_closed", fields);
    if abort {
        writer.abort();
    }
}
