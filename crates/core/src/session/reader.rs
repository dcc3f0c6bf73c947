//! The session's reader: one task per session that takes what the transport delivers and
//! dispatches it — answers to their waiters (a JSON-RPC error becomes a typed `Error`),
//! progress to its request's caller, notifications to subscribers, the server's own
//! requests to `server_requests` — and ends the session when the transport closes.

use super::engine::close_with;
use super::{ServerNotification, Shared, server_requests};
use crate::error::{Error, ErrorKind};
use crate::protocol::mcp::Progress;
use crate::protocol::stateless;
use crate::protocol::{Message, RequestId, Response, RpcError};
use crate::redact::{Redactor, cap};
use crate::transport::Incoming;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Routes everything the transport delivers until it closes, then ends the session with
/// the transport's cause.
pub(super) async fn read_incoming(shared: Arc<Shared>, mut incoming: mpsc::Receiver<Incoming>) {
    let server_requests = server_requests::ServerRequests::new(&shared);
    while let Some(item) = incoming.recv().await {
        if let Incoming::Message(m) = &item {
            tracing::trace!(method = m.method(), "received a message");
        }
        match item {
            Incoming::Message(Message::Response(r)) => answer(&shared, r),
            Incoming::Message(Message::Notification(n)) => {
                if n.method == "notifications/cancelled" {
                    server_requests.cancelled(n.params.as_ref());
                }
                notification(&shared, &n.method, n.params)
            }
            Incoming::Message(Message::Request(r)) => server_requests.handle(&shared, r),
            Incoming::RequestFailed { id, error } => {
                if let Some(p) = shared.take_pending(&id) {
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
    let Some(p) = shared.take_pending(&r.id) else {
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
        c if stateless::is_stateless_error_code(c) => ErrorKind::Protocol,
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
        c.rpc_data = e.data.clone().map(crate::error::RpcData);
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
