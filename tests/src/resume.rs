//! The `sse_close` fault and its resumption: a POST answered as SSE whose stream closes
//! gracefully after the priming event, and the GETs that quote its `Last-Event-ID`.
//!
//! The answer keeps running after the close; its messages are kept for a resume that the
//! script lets `deliver` them. Every priming event this fault sends gets a fresh id registered
//! to the same pending answer, so a client may resume from whichever stream it saw last.
//! `sse_closed` is logged just before each close, so a client that saw the end finds it logged.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper::Response;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::http::{self, Body, Http};
use crate::mcp::Request;
use crate::script::{Resume, SseClose};
use crate::sse;

/// One answer whose stream was cut, waiting for resumes.
#[derive(Debug)]
pub struct Resumable {
    spec: SseClose,
    rpc_id: Value,
    /// Resume GETs seen so far; picks the entry of `spec.resume` for the next one.
    resumes: AtomicUsize,
    /// Every message of the answer, result last, once it is complete.
    messages: watch::Receiver<Option<Vec<Value>>>,
}

pub fn post(http: &Arc<Http>, req: Request, spec: SseClose) -> Response<Body> {
    let rpc_id = req.id.clone();
    let mut answer = http.server.answer(req, None);
    let (done, messages) = watch::channel(None);
    tokio::spawn(async move {
        let mut all = Vec::new();
        while let Some(out) = answer.recv().await {
            all.push(out.message().clone());
        }
        let _ = done.send(Some(all));
    });
    let entry = Arc::new(Resumable {
        spec,
        rpc_id,
        resumes: AtomicUsize::new(0),
        messages,
    });
    close_after_priming(http, &entry, "post", 0)
}

pub async fn get(http: &Arc<Http>, entry: Arc<Resumable>) -> Response<Body> {
    let attempt = entry.resumes.fetch_add(1, Ordering::Relaxed) + 1;
    let script = &entry.spec.resume;
    let mode = script
        .get(attempt - 1)
        .or(script.last())
        .copied()
        .unwrap_or(Resume::Deliver);
    let fields = json!({"rpc_id": entry.rpc_id, "attempt": attempt, "mode": mode.name()});
    http.server.log.event("resume", fields);
    match mode {
        Resume::NotFound => http::full(404, Some("text/plain"), "stream not found"),
        Resume::Hang => http::hang(http, "resume").await,
        Resume::Close => close_after_priming(http, &entry, "resume", attempt),
        Resume::Deliver => deliver(http, entry),
    }
}

fn retry<'a>(http: &'a Http, entry: &'a Resumable) -> Option<&'a str> {
    entry
        .spec
        .retry
        .as_deref()
        .or(http.server.script.http.sse.retry.as_deref())
}

/// Priming event (id registered to `entry`, scripted retry), then a graceful close after
/// `after_ms`, without the result.
fn close_after_priming(
    http: &Arc<Http>,
    entry: &Arc<Resumable>,
    stream: &'static str,
    attempt: usize,
) -> Response<Body> {
    let (writer, response) = http::sse_response(http);
    let event_id = http.register(entry);
    // `http.sse.priming: false` makes a stream that ends with no event id to resume from.
    if http.server.script.http.sse.priming {
        writer.priming(event_id, retry(http, entry));
    }
    let http = Arc::clone(http);
    let entry = Arc::clone(entry);
    tokio::spawn(async move {
        let sse = &http.server.script.http.sse;
        let wait = tokio::time::sleep(Duration::from_millis(entry.spec.after_ms));
        let reason = match sse::with_keepalive(sse, &writer, wait).await {
            Some(()) => "fault",
            None => "client_gone",
        };
        let fields = json!({
            "stream": stream, "rpc_id": entry.rpc_id, "event_id": event_id,
            "attempt": attempt, "reason": reason,
        });
        http.server.log.event("sse_closed", fields);
        drop(writer);
    });
    response
}

/// Priming event, then every message of the answer once it is complete, then a graceful close.
fn deliver(http: &Arc<Http>, entry: Arc<Resumable>) -> Response<Body> {
    let (writer, response) = http::sse_response(http);
    writer.priming(http.register(&entry), retry(http, &entry));
    let http = Arc::clone(http);
    tokio::spawn(async move {
        let mut messages = entry.messages.clone();
        let complete = async {
            messages
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|m| m.clone())
        };
        let sse = &http.server.script.http.sse;
        let (mut reason, all) = match sse::with_keepalive(sse, &writer, complete).await {
            Some(all) => ("complete", all.unwrap_or_default()),
            None => ("client_gone", Vec::new()),
        };
        for message in &all {
            if !writer.message(http.next_event_id(), message) {
                reason = "client_gone";
                break;
            }
        }
        let fields = json!({"stream": "resume", "rpc_id": entry.rpc_id, "reason": reason});
        http.server.log.event("sse_closed", fields);
        drop(writer);
    });
    response
}
