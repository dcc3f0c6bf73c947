//! The legacy HTTP+SSE transport (MCP 2024-11-05) on 127.0.0.1: `GET /sse` opens a session's
//! event stream, whose first event is `endpoint` (`/messages?sessionId=N`); `POST` to that
//! endpoint is acknowledged with 202 and answered on the stream. Any other method on `/sse`
//! is 405, as an old server answers a Streamable HTTP client's POST.
//!
//! Faults: `sse_close` ends the session's stream instead of answering (the client must
//! treat the connection as lost), `http_status` answers the POST with that status,
//! `never_answer` acknowledges and never answers, `crash` exits; `http.legacy_endpoint`
//! replaces the endpoint event's data verbatim.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use hyper::Method;
use hyper::http::request::Parts;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::http::{self, Body, full};
use crate::log::Received;
use crate::mcp::{self, Message, Outbound, Server};
use crate::script::Action;
use crate::{process, sse};

/// What a legacy server answers `initialize` with unless the script forces another.
pub const PROTOCOL_VERSION: &str = "2024-11-05";

/// One open `GET /sse`: where its session's messages go. Dropping the sender ends the
/// stream.
type Streams = Mutex<HashMap<String, mpsc::UnboundedSender<Value>>>;

#[derive(Debug)]
struct Legacy {
    server: Arc<Server>,
    streams: Streams,
    next_session: AtomicU64,
    next_event_id: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub async fn serve(server: Arc<Server>, port: u16) -> std::io::Result<()> {
    let listener = http::listen(&server, "sse", "/sse", port).await?;
    let legacy = Arc::new(Legacy {
        server,
        streams: Mutex::default(),
        next_session: AtomicU64::new(1),
        next_event_id: AtomicU64::new(1),
    });
    http::accept_loop(listener, legacy, route).await
}

async fn route(legacy: Arc<Legacy>, parts: Parts, bytes: Bytes) -> hyper::Response<Body> {
    let message: Option<Value> = serde_json::from_slice(&bytes).ok();
    let session = session_of(parts.uri.query());
    legacy.server.log.received(&Received {
        // This revision names the session in the endpoint's query, not in a header.
        session_id: session.as_deref(),
        ..Received::http("sse", &parts, &bytes, message.as_ref())
    });
    match (parts.uri.path(), &parts.method) {
        ("/sse", &Method::GET) => open(&legacy),
        ("/sse", _) => full(405, Some("text/plain"), "method not allowed"),
        ("/messages", &Method::POST) => post(&legacy, session_of(parts.uri.query()), message).await,
        _ => full(404, Some("text/plain"), "not found"),
    }
}

fn session_of(query: Option<&str>) -> Option<String> {
    query?
        .split('&')
        .find_map(|kv| kv.strip_prefix("sessionId="))
        .map(str::to_owned)
}

/// Opens a session's stream: the `endpoint` event, then every message for the session.
fn open(legacy: &Arc<Legacy>) -> hyper::Response<Body> {
    let session = legacy
        .next_session
        .fetch_add(1, Ordering::Relaxed)
        .to_string();
    let (writer, response) = sse::response(false, &[]);
    let endpoint = legacy
        .server
        .script
        .http
        .legacy_endpoint
        .clone()
        .unwrap_or_else(|| format!("/messages?sessionId={session}"));
    writer.event("endpoint", &endpoint);
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    lock(&legacy.streams).insert(session.clone(), tx);
    legacy
        .server
        .log
        .event("legacy_stream_opened", json!({"session_id": session}));
    let legacy = Arc::clone(legacy);
    tokio::spawn(async move {
        let reason = loop {
            match rx.recv().await {
                None => break "closed",
                Some(message) => {
                    let id = legacy.next_event_id.fetch_add(1, Ordering::Relaxed);
                    if !writer.message(id, &message) {
                        break "client_gone";
                    }
                }
            }
        };
        lock(&legacy.streams).remove(&session);
        let fields = json!({"stream": "legacy", "session_id": session, "reason": reason});
        legacy.server.log.event("sse_closed", fields);
        drop(writer);
    });
    response
}

/// Acknowledges a message with 202 and answers it on the session's stream (or, with
/// `http.legacy_answer_in_body`, answers it in the POST's own body, as some servers do).
async fn post(
    legacy: &Arc<Legacy>,
    session: Option<String>,
    message: Option<Value>,
) -> hyper::Response<Body> {
    let stream = session.and_then(|s| lock(&legacy.streams).get(&s).cloned().map(|tx| (s, tx)));
    let Some((session, stream)) = stream else {
        return full(404, Some("text/plain"), "unknown sessionId");
    };
    let Some(message) = message else {
        return full(400, Some("text/plain"), "invalid JSON");
    };
    let req = match mcp::classify(&message) {
        Message::Request(req) => req,
        Message::Invalid => return full(400, Some("text/plain"), "invalid JSON-RPC"),
        Message::Notification { .. } | Message::Response { .. } => {
            legacy.server.accept_response(&message);
            return full(202, Some("text/plain"), "Accepted");
        }
    };
    let action = legacy.server.decide(&req);
    match action {
        Some(Action::Crash { code }) => process::crash(&legacy.server.log, code),
        Some(Action::HttpStatus(s)) => {
            let body = s.body.clone().unwrap_or_default();
            return full(s.status, Some("text/plain"), body);
        }
        Some(Action::NeverAnswer) => {}
        Some(Action::SseClose(_)) => {
            // Dropping the only sender ends the stream: the connection is lost mid-request.
            lock(&legacy.streams).remove(&session);
            legacy
                .server
                .log
                .event("legacy_stream_closing", json!({"session_id": session}));
        }
        other if legacy.server.script.http.legacy_answer_in_body => {
            let mut rx = legacy.server.answer(req, other);
            while let Some(out) = rx.recv().await {
                if let Outbound::Final(response) = out {
                    return full(200, Some("application/json"), response.to_string());
                }
            }
        }
        other => {
            let mut rx = legacy.server.answer(req, other);
            tokio::spawn(async move {
                while let Some(out) = rx.recv().await {
                    let last = matches!(out, Outbound::Final(_));
                    if stream.send(out.message().clone()).is_err() || last {
                        break;
                    }
                }
            });
        }
    }
    full(202, Some("text/plain"), "Accepted")
}
