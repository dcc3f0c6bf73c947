//! MCP message handling shared by both transports: classify what arrived, decide the fault,
//! and produce the answer as a stream of outbound messages ending in the final response.
//!
//! Transports own the bytes; this module owns the JSON-RPC. An answer runs as its own task so a
//! slow tool never blocks the reader, and server→client requests (`ask`) are matched to the
//! client's later responses through `Server::accept_response`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::faults::Faults;
use crate::log::Log;
use crate::script::{Action, Script};
use crate::tools;

pub const LATEST: &str = "2025-11-25";
pub const SUPPORTED: [&str; 3] = [LATEST, "2025-06-18", "2025-03-26"];

pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;

#[derive(Debug, Clone)]
pub struct Request {
    pub id: Value,
    pub method: String,
    /// `Value::Null` when absent.
    pub params: Value,
}

#[derive(Debug, Clone)]
pub enum Message {
    Request(Request),
    Notification { method: String },
    Response { id: Value },
    Invalid,
}

/// One message the answer task wants sent, in order.
#[derive(Debug, Clone)]
pub enum Outbound {
    /// A notification or server→client request related to the request being answered.
    Related(Value),
    /// The response; nothing follows it.
    Final(Value),
}

impl Outbound {
    pub fn message(&self) -> &Value {
        match self {
            Outbound::Related(v) | Outbound::Final(v) => v,
        }
    }
}

pub type Sink = mpsc::UnboundedSender<Outbound>;

/// A JSON-RPC error object, as tools and handlers return it.
#[derive(Debug, Clone)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

pub fn classify(v: &Value) -> Message {
    let method = v.get("method").and_then(Value::as_str);
    let id = v.get("id").filter(|id| id.is_string() || id.is_number());
    match (method, id) {
        (Some(method), Some(id)) => Message::Request(Request {
            id: id.clone(),
            method: method.to_owned(),
            params: v.get("params").cloned().unwrap_or(Value::Null),
        }),
        (Some(method), None) => Message::Notification {
            method: method.to_owned(),
        },
        (None, Some(id)) if v.get("result").is_some() || v.get("error").is_some() => {
            Message::Response { id: id.clone() }
        }
        _ => Message::Invalid,
    }
}

/// The log's `kind` field for a received JSON value.
pub fn kind_name(v: &Value) -> &'static str {
    match classify(v) {
        Message::Request(_) => "request",
        Message::Notification { .. } => "notification",
        Message::Response { .. } => "response",
        Message::Invalid => "invalid",
    }
}

pub fn error_response(id: &Value, e: &RpcError) -> Value {
    let mut error = json!({"code": e.code, "message": e.message});
    if let Some(data) = &e.data {
        error["data"] = data.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// A valid `notifications/message` padded with `x` to exactly `bytes` bytes (when `bytes` is
/// at least the unpadded size), so the only thing wrong with it is its length.
pub fn padded_notification(bytes: usize) -> Vec<u8> {
    let head =
        br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":""#;
    let tail = br#""}}"#;
    let pad = bytes.saturating_sub(head.len() + tail.len());
    let mut line = Vec::with_capacity(head.len() + pad + tail.len());
    line.extend_from_slice(head);
    line.resize(head.len() + pad, b'x');
    line.extend_from_slice(tail);
    line
}

#[derive(Debug)]
pub struct Server {
    pub script: Script,
    pub log: Log,
    faults: Faults,
    /// Server→client requests awaiting the client's response, by JSON-RPC id.
    asks: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    next_ask: AtomicU64,
    /// `tools/call` requests answered so far (the script's `redescribe` counts them).
    calls: AtomicU64,
}

impl Server {
    pub fn new(script: Script, log: Log) -> Arc<Server> {
        let faults = Faults::new(script.rules.clone());
        Arc::new(Server {
            script,
            log,
            faults,
            asks: Mutex::default(),
            next_ask: AtomicU64::new(1),
            calls: AtomicU64::new(0),
        })
    }

    /// The fault this request triggers, if any (counts it against every rule).
    pub fn decide(&self, req: &Request) -> Option<Action> {
        let tool = (req.method == "tools/call")
            .then(|| req.params.get("name").and_then(Value::as_str))
            .flatten();
        self.faults.decide(&req.method, tool)
    }

    /// An `http_status` rule (without `nth`) that refuses this request before any session
    /// check, as a gateway would (see `Faults::gateway`).
    pub fn gateway(&self, req: &Request) -> Option<Action> {
        let tool = (req.method == "tools/call")
            .then(|| req.params.get("name").and_then(Value::as_str))
            .flatten();
        self.faults.gateway(&req.method, tool)
    }

    /// Hands a client's response to the `ask` waiting for it; unknown ids are only logged.
    pub fn accept_response(&self, response: &Value) {
        let key = response.get("id").map(Value::to_string).unwrap_or_default();
        let waiter = self
            .asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        if let Some(waiter) = waiter {
            let _ = waiter.send(response.clone());
        }
    }

    /// Answers `req` on a task; `action` may be `Delay` or `RpcError`, other actions are the
    /// transport's business and ignored here. The receiver ends after `Outbound::Final`.
    pub fn answer(
        self: &Arc<Self>,
        req: Request,
        action: Option<Action>,
    ) -> mpsc::UnboundedReceiver<Outbound> {
        let (tx, rx) = mpsc::unbounded_channel();
        let server = Arc::clone(self);
        tokio::spawn(async move {
            let response = server.respond(&req, action.as_ref(), &tx).await;
            let _ = tx.send(Outbound::Final(response));
        });
        rx
    }

    /// The part of every answer that comes before the method: the scripted delays, then the
    /// scripted JSON-RPC error response if `action` is `RpcError`.
    pub async fn prelude(&self, req: &Request, action: Option<&Action>) -> Option<Value> {
        let mut delay_ms = self.script.delay_ms;
        if let Some(Action::Delay { ms }) = action {
            delay_ms = delay_ms.saturating_add(*ms);
        }
        if delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        }
        if let Some(Action::RpcError {
            code,
            message,
            data,
        }) = action
        {
            let e = RpcError {
                code: *code,
                message: message.clone(),
                data: data.clone(),
            };
            return Some(error_response(&req.id, &e));
        }
        None
    }

    async fn respond(&self, req: &Request, action: Option<&Action>, sink: &Sink) -> Value {
        if let Some(error) = self.prelude(req, action).await {
            return error;
        }
        let result = match req.method.as_str() {
            "initialize" => Ok(self.initialize(&req.params)),
            "ping" | "logging/setLevel" => Ok(json!({})),
            "tools/list" => {
                let calls = self.calls.load(std::sync::atomic::Ordering::SeqCst);
                tools::list_after(&self.script, calls, &req.params)
            }
            "tools/call" => {
                let answer = tools::call(self, &req.params, sink).await;
                self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                answer
            }
            other => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            )),
        };
        match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": req.id, "result": result}),
            Err(e) => error_response(&req.id, &e),
        }
    }

    pub fn initialize(&self, params: &Value) -> Value {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = match (&self.script.protocol_version, requested) {
            (Some(forced), _) => forced.as_str(),
            (None, Some(v)) if SUPPORTED.contains(&v) => v,
            (None, _) => LATEST,
        };
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": true}, "logging": {}},
            "serverInfo": {"name": "lifeline-fixture", "version": env!("CARGO_PKG_VERSION")},
        })
    }

    /// Sends a server→client request and waits for the client's whole response message.
    pub async fn ask(&self, method: &str, params: Option<Value>, sink: &Sink) -> Value {
        let n = self.next_ask.fetch_add(1, Ordering::Relaxed);
        let id = Value::String(format!("fixture-ask-{n}"));
        let (tx, rx) = oneshot::channel();
        self.asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string(), tx);
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            request["params"] = params;
        }
        let _ = sink.send(Outbound::Related(request));
        rx.await.unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(message: Value, expect: &str) {
        assert_eq!(kind_name(&message), expect, "{message}");
    }

    #[test]
    fn kinds() {
        check(
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            "request",
        );
        check(
            json!({"jsonrpc": "2.0", "id": "a", "method": "ping"}),
            "request",
        );
        check(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            "notification",
        );
        check(
            json!({"jsonrpc": "2.0", "id": null, "method": "x"}),
            "notification",
        );
        check(json!({"jsonrpc": "2.0", "id": 1, "result": {}}), "response");
        check(
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1}}),
            "response",
        );
        check(json!({"jsonrpc": "2.0", "id": 1}), "invalid");
        check(json!([1, 2]), "invalid");
    }

    fn negotiate(forced: Option<&str>, requested: Option<&str>, expect: &str) {
        let script = Script {
            protocol_version: forced.map(str::to_owned),
            ..Script::default()
        };
        let server = Server::new(script, Log::open(None).unwrap());
        let params = json!({"protocolVersion": requested});
        assert_eq!(server.initialize(&params)["protocolVersion"], expect);
    }

    fn padded(bytes: usize, expect_len: usize) {
        let line = padded_notification(bytes);
        assert_eq!(line.len(), expect_len);
        let parsed: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(parsed["method"], "notifications/message");
    }

    #[test]
    fn padded_notifications_are_valid_json_of_exact_size() {
        padded(1000, 1000);
        padded(17 * 1024 * 1024, 17 * 1024 * 1024);
        padded(0, 86);
    }

    #[tokio::test]
    async fn negotiation() {
        negotiate(None, Some("2025-06-18"), "2025-06-18");
        negotiate(None, Some("2025-03-26"), "2025-03-26");
        negotiate(None, Some("2024-11-05"), LATEST);
        negotiate(None, None, LATEST);
        negotiate(Some("1999-01-01"), Some("2025-06-18"), "1999-01-01");
    }
}
