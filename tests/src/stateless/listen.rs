//! `subscriptions/listen`: a response stream that opens with
//! `notifications/subscriptions/acknowledged`, stays open with keep-alive comments, and carries
//! `notifications/tools/list_changed` (scripted by time, or sent by the `list_changed` tool) to
//! the streams that asked for `toolsListChanged`.
//!
//! Every message on the stream carries the subscription id (the request's JSON-RPC id) in
//! `_meta`. A scripted end sends the completion result, or `notifications/cancelled`, or
//! nothing (a graceful close or a failed connection: an unexpected disconnect).

use std::sync::Arc;
use std::time::Duration;

use hyper::Response;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use super::Stateless;
use crate::http::Body;
use crate::mcp::Request;
use crate::script::ListenEnd;
use crate::sse::SseWriter;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// One open listen stream that asked for tools list changes.
#[derive(Debug)]
pub struct Listener {
    id: Value,
    tx: mpsc::UnboundedSender<Value>,
}

fn notification(method: &str, id: &Value, mut params: Value) -> Value {
    params["_meta"] = json!({SUBSCRIPTION_ID: id});
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn list_changed(id: &Value) -> Value {
    notification("notifications/tools/list_changed", id, json!({}))
}

/// Sends `notifications/tools/list_changed` on every listen stream that asked for it; returns
/// how many streams got it.
pub fn broadcast_list_changed(stateless: &Stateless) -> usize {
    let mut listeners = super::lock(&stateless.listeners);
    listeners.retain(|l| l.tx.send(list_changed(&l.id)).is_ok());
    listeners.len()
}

pub fn open(stateless: &Arc<Stateless>, req: &Request) -> Response<Body> {
    let asked = req
        .params
        .pointer("/notifications/toolsListChanged")
        .and_then(Value::as_bool)
        == Some(true);
    // Only tools list changes are honoured; the acknowledgment omits everything else.
    let honoured = if asked {
        json!({"toolsListChanged": true})
    } else {
        json!({})
    };
    let (writer, response) = stateless.sse_response();
    let (tx, rx) = mpsc::unbounded_channel();
    if asked {
        super::lock(&stateless.listeners).push(Listener {
            id: req.id.clone(),
            tx: tx.clone(),
        });
    }
    let fields = json!({"rpc_id": req.id, "notifications": honoured});
    stateless.server.log.event("listen_opened", fields);
    let ack = notification(
        "notifications/subscriptions/acknowledged",
        &req.id,
        json!({"notifications": honoured}),
    );
    let stream = Stream {
        stateless: Arc::clone(stateless),
        writer,
        id: req.id.clone(),
        asked,
        tx,
    };
    tokio::spawn(stream.run(ack, rx));
    response
}

struct Stream {
    stateless: Arc<Stateless>,
    writer: SseWriter,
    id: Value,
    asked: bool,
    /// This stream's sender: keeps the channel open when the stream is not registered as a
    /// listener, and finds its registration when it is.
    tx: mpsc::UnboundedSender<Value>,
}

impl Stream {
    async fn run(self, ack: Value, mut rx: mpsc::UnboundedReceiver<Value>) {
        let script = &self.stateless.server.script;
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut scheduled: Vec<Instant> = script
            .stateless
            .list_changed_after_ms
            .iter()
            .map(|&ms| at(ms))
            .collect();
        scheduled.sort();
        let mut scheduled = scheduled.into_iter().peekable();
        let end_at = script.stateless.listen_end_after_ms.map(at);
        let period = Duration::from_millis(script.stateless.listen_keepalive_ms.max(1));
        let mut keepalive = tokio::time::interval_at(start + period, period);
        let comment = &script.http.sse.keepalive_comment;
        let reason = 'stream: {
            if !self.send(&ack) {
                break 'stream "client_gone";
            }
            loop {
                let next_change = scheduled.peek().copied();
                tokio::select! {
                    Some(message) = rx.recv() => {
                        if !self.send(&message) {
                            break 'stream "client_gone";
                        }
                    }
                    () = wait(next_change) => {
                        scheduled.next();
                        if self.asked && !self.send(&list_changed(&self.id)) {
                            break 'stream "client_gone";
                        }
                    }
                    () = wait(end_at) => break 'stream self.end(script.stateless.listen_end),
                    () = self.writer.closed() => break 'stream "client_gone",
                    _ = keepalive.tick() => {
                        if !self.writer.comment(comment) {
                            break 'stream "client_gone";
                        }
                    }
                }
            }
        };
        super::lock(&self.stateless.listeners).retain(|l| !l.tx.same_channel(&self.tx));
        let fields = json!({"stream": "listen", "rpc_id": self.id, "reason": reason});
        self.stateless.server.log.event("sse_closed", fields);
        if reason == "abort" {
            self.writer.abort();
        }
    }

    /// The last message of a stream the server ends; the reason to log.
    fn end(&self, how: ListenEnd) -> &'static str {
        match how {
            ListenEnd::Result => {
                let done = json!({"jsonrpc": "2.0", "id": self.id, "result": {
                    "resultType": "complete", "_meta": {SUBSCRIPTION_ID: self.id},
                }});
                self.send(&done);
                "complete"
            }
            ListenEnd::Cancelled => {
                let params = json!({"requestId": self.id, "reason": "lifeline-fixture ends it"});
                self.send(&notification("notifications/cancelled", &self.id, params));
                "cancelled"
            }
            ListenEnd::Close => "fault",
            ListenEnd::Abort => "abort",
        }
    }

    fn send(&self, message: &Value) -> bool {
        let method = message.get("method").cloned().unwrap_or(Value::Null);
        let sent = self.writer.message(self.stateless.next_event_id(), message);
        if sent && method != Value::Null {
            let fields = json!({"rpc_id": self.id, "method": method});
            self.stateless.server.log.event("listen_sent", fields);
        }
        sent
    }
}

async fn wait(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}
