//! Requests the server sends us (`ping`, `roots/list`, `elicitation/create`,
//! `sampling/createMessage`), answered under a small concurrency cap. A server that floods
//! them — and worse, never reads our answers, so every answer blocks on its send — gets the
//! ones beyond the cap refused with a JSON-RPC error, and once even the refusals are backed
//! up, dropped: the work and memory held for one server's requests stay bounded (16 tasks,
//! one sender, 256 queued ids) whatever it sends. Only what the embedder opted into is offered; everything else is
//! method-not-found. A request the server cancels (`notifications/cancelled`) is
//! abandoned and not answered, as the spec asks; a relayed one is cancelled at the host.

use super::{SessionOptions, Shared};
use crate::protocol::{Message, Request, RequestId, Response, RpcError};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::AbortHandle;

/// Server requests answered at once. A client's answers are quick (`ping`, `roots/list`)
/// or wait for a person (elicitation), and no server needs more than a handful in flight;
/// 16 is the session's call queue (docs/policy.md), and bounds what a flood can hold.
pub(super) const MAX_IN_FLIGHT: usize = 16;

/// Refusals waiting to be sent (only their ids are kept). One task sends them in order; a
/// server that reads gets every one, and one that does not leaves them queued, so beyond
/// this a further request is dropped instead (and logged).
pub(super) const MAX_REFUSALS_QUEUED: usize = 256;

/// The JSON-RPC error code of a refusal: the implementation-defined server-error range.
pub(super) const TOO_MANY_REQUESTS: i64 = -32000;

/// The session reader's side: one per session, dropped with the reader (which ends the
/// refusal sender).
pub(super) struct ServerRequests {
    answering: Arc<Semaphore>,
    refusals: mpsc::Sender<RequestId>,
    /// The requests being answered, to abandon one the server cancels.
    running: Arc<Mutex<HashMap<RequestId, AbortHandle>>>,
}

impl ServerRequests {
    pub(super) fn new(shared: &Arc<Shared>) -> Self {
        let (refusals, queued) = mpsc::channel(MAX_REFUSALS_QUEUED);
        tokio::spawn(send_refusals(shared.clone(), queued));
        ServerRequests {
            answering: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            refusals,
            running: Arc::default(),
        }
    }

    /// Answers `r` in a task of its own when a slot is free, queues its refusal when none
    /// is, and drops it when the refusals are backed up too. Never waits: the reader goes
    /// on routing our own answers whatever the server floods.
    pub(super) fn handle(&self, shared: &Arc<Shared>, r: Request) {
        if let Ok(permit) = self.answering.clone().try_acquire_owned() {
            let shared = shared.clone();
            let running = self.running.clone();
            // Held across the spawn, so the task's own removal comes after the insert.
            let mut map = self.running.lock().expect("running lock");
            let id = r.id.clone();
            let task = tokio::spawn(async move {
                let outcome = answer(&shared.options, &r.method, r.params).await;
                running.lock().expect("running lock").remove(&r.id);
                reply(&shared, r.id, outcome).await;
                drop(permit);
            });
            map.insert(id, task.abort_handle());
            return;
        }
        if self.refusals.try_send(r.id).is_err() {
            tracing::debug!(method = %r.method, "dropped a server request: too many in flight and the server is not reading the refusals");
        }
    }
}

impl ServerRequests {
    /// The server's `notifications/cancelled` for one of its requests: abandoned, never
    /// answered (a relayed request's future is dropped, which cancels it at the host).
    pub(super) fn cancelled(&self, params: Option<&Value>) {
        let Some(id) = params
            .and_then(|p| p.get("requestId"))
            .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok())
        else {
            return;
        };
        if let Some(task) = self.running.lock().expect("running lock").remove(&id) {
            task.abort();
        }
    }
}

/// Sends the queued refusals, in order, until the reader is gone.
async fn send_refusals(shared: Arc<Shared>, mut queued: mpsc::Receiver<RequestId>) {
    while let Some(id) = queued.recv().await {
        let refusal = RpcError {
            code: TOO_MANY_REQUESTS,
            message: format!(
                "too many requests from the server in flight (at most {MAX_IN_FLIGHT}); refused, \
                 ask again later"
            ),
            data: None,
        };
        reply(&shared, id, Err(refusal)).await;
    }
}

async fn reply(shared: &Shared, id: RequestId, outcome: Result<Value, RpcError>) {
    let reply = Message::Response(Response { id, outcome });
    if let Err(e) = shared.transport.send(&reply).await {
        tracing::warn!(error = %e, "could not answer the server's request");
    }
}

/// Answers a request the server sent us (or asked for inside a result, in the stateless
/// revision). Only what the embedder opted into is offered.
pub(super) async fn answer(
    options: &SessionOptions,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    let params = params.unwrap_or_else(|| json!({}));
    if let Some(relayed) = options
        .relay
        .as_ref()
        .and_then(|r| r.relay(method, &params))
    {
        return relayed.await;
    }
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
#[path = "server_requests_tests.rs"]
mod tests;
