//! The upstream's requests to the host (`roots/list`, `sampling/createMessage`,
//! `elicitation/create`), sent to the host this gateway session serves and its answer
//! relayed back. The session's `HostLink` is attached to the supervisor's `HostSlot` once
//! the host's `initialize` says what it can do; each generation is initialized upstream
//! with those capabilities, and a live generation initialized without one the host
//! declares is reconnected once (`reinitialize`). The requests the gateway sent the host
//! wait in its own pending map, each bounded by the request timeout; one the upstream
//! cancels (or that times out) is cancelled at the host with `notifications/cancelled`.
//! The host's `notifications/roots/list_changed` goes upstream.

use super::{Outgoing, Shared, Upstream};
use crate::events::StateName;
use crate::protocol::{Message, RequestId, Response, RpcError};
use crate::redact::Redactor;
use crate::supervisor::Host;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The requests a session sent its host, whichever of its servers asked: by the gateway's
/// id (unique in the session), each waiting for the host's answer. The answer goes to the
/// one waiting, so it reaches the server that asked.
#[derive(Default)]
pub(crate) struct Asked {
    waiting: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, RpcError>>>>,
    next_id: AtomicI64,
}

impl Asked {
    fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::SeqCst) + 1)
    }
}

/// One gateway session's host, as one server's `HostSlot` sees it.
pub(crate) struct HostLink {
    out: mpsc::UnboundedSender<Outgoing>,
    asked: Arc<Asked>,
    /// How long the host may take to answer (the server's request timeout).
    wait: Duration,
    /// Scrubs the server's configured secrets from what it asks the host.
    redactor: Redactor,
    /// The client capabilities of the host's `initialize`.
    capabilities: Mutex<Value>,
    in_flight: AtomicUsize,
    last_active: AtomicU64,
    /// The key in the supervisor's `HostSlot` once attached.
    key: Mutex<Option<u64>>,
}

impl HostLink {
    pub(crate) fn new(
        out: mpsc::UnboundedSender<Outgoing>,
        asked: Arc<Asked>,
        wait: Duration,
        redactor: Redactor,
    ) -> Self {
        HostLink {
            out,
            asked,
            wait,
            redactor,
            capabilities: Mutex::new(json!({})),
            in_flight: AtomicUsize::new(0),
            last_active: AtomicU64::new(0),
            key: Mutex::new(None),
        }
    }
}

impl Host for HostLink {
    fn capabilities(&self) -> Value {
        self.capabilities.lock().expect("caps lock").clone()
    }

    fn busy(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) > 0
    }

    fn last_active(&self) -> u64 {
        self.last_active.load(Ordering::SeqCst)
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<'static, Result<Value, RpcError>> {
        let id = self.asked.next_id();
        let (tx, rx) = oneshot::channel();
        self.asked
            .waiting
            .lock()
            .expect("waiting lock")
            .insert(id.clone(), tx);
        let params = self.redactor.scrub_value(&params);
        let _ = self.out.send(Outgoing {
            message: Message::request(id.clone(), method, Some(params)),
            related: None,
        });
        let mut outstanding = Outstanding {
            id,
            asked: self.asked.clone(),
            out: self.out.clone(),
            reason: "the server cancelled the request",
        };
        let wait = self.wait;
        let method = method.to_owned();
        Box::pin(async move {
            match tokio::time::timeout(wait, rx).await {
                Ok(Ok(outcome)) => {
                    outstanding.settle("");
                    outcome
                }
                Ok(Err(_)) => {
                    outstanding.settle("");
                    Err(RpcError {
                        code: RpcError::INTERNAL_ERROR,
                        message: format!("the host went away before it answered {method}"),
                        data: None,
                    })
                }
                Err(_) => {
                    outstanding.settle("timed out");
                    Err(RpcError {
                        code: RpcError::INTERNAL_ERROR,
                        message: format!(
                            "the host did not answer {method} within {}",
                            crate::fmt_duration(wait)
                        ),
                        data: None,
                    })
                }
            }
        })
    }
}

/// A request sent to the host that has not been answered: when it ends without an answer
/// (timed out, or dropped because the server cancelled it), the host is told
/// `notifications/cancelled`.
struct Outstanding {
    id: RequestId,
    asked: Arc<Asked>,
    out: mpsc::UnboundedSender<Outgoing>,
    /// Empty once answered.
    reason: &'static str,
}

impl Outstanding {
    /// How it ended: empty when the host answered, else the reason the host is told.
    fn settle(&mut self, reason: &'static str) {
        self.reason = reason;
    }
}

impl Drop for Outstanding {
    fn drop(&mut self) {
        let was_waiting = self
            .asked
            .waiting
            .lock()
            .expect("waiting lock")
            .remove(&self.id)
            .is_some();
        if was_waiting && !self.reason.is_empty() {
            let params = json!({ "requestId": self.id, "reason": self.reason });
            let _ = self.out.send(Outgoing {
                message: Message::notification("notifications/cancelled", Some(params)),
                related: None,
            });
        }
    }
}

/// The host's answer to one of the gateway's requests.
pub(super) fn answered(shared: &Shared, r: Response) {
    let tx = shared
        .asked
        .waiting
        .lock()
        .expect("waiting lock")
        .remove(&r.id);
    match tx {
        Some(tx) => {
            let _ = tx.send(r.outcome);
        }
        None => tracing::debug!(id = %r.id, "the host answered a request no longer waiting"),
    }
}

/// Marks one host request in flight (for routing the upstream's requests to the host
/// whose call caused them) until dropped.
pub(super) struct Busy(Arc<HostLink>);

pub(super) fn busy(up: &Upstream) -> Busy {
    let link = &up.host;
    link.in_flight.fetch_add(1, Ordering::SeqCst);
    let now = up.supervisor.hosts().tick();
    link.last_active.store(now, Ordering::SeqCst);
    Busy(link.clone())
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The host's `initialize`: its client capabilities, and its link attached to each
/// server's hosts (once; a second `initialize` updates the capabilities).
pub(super) fn attach(shared: &Shared, params: Option<&Value>) {
    let caps = params
        .and_then(|p| p.get("capabilities"))
        .filter(|c| c.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    *shared.host_capabilities.lock().expect("caps lock") = Some(caps);
    for up in shared.upstreams().iter() {
        attach_one(shared, up);
    }
}

/// Attaches the host to one server with the capabilities its `initialize` declared (a
/// server that joins an aggregated session later); nothing before the host initialized.
pub(crate) fn attach_one(shared: &Shared, up: &Upstream) {
    let Some(caps) = shared.host_capabilities.lock().expect("caps lock").clone() else {
        return;
    };
    *up.host.capabilities.lock().expect("caps lock") = caps;
    let mut key = up.host.key.lock().expect("key lock");
    if key.is_none() {
        let link: Arc<dyn Host> = up.host.clone();
        *key = Some(up.supervisor.hosts().attach(link));
    }
}

/// Detaches the host when its session ends; the servers' requests still waiting for it
/// fail at once ("the host went away").
pub(super) fn detach(shared: &Shared) {
    for up in shared.upstreams().iter() {
        detach_one(up);
    }
    shared.asked.waiting.lock().expect("waiting lock").clear();
}

/// Detaches the host from one server (one that left an aggregated session).
pub(crate) fn detach_one(up: &Upstream) {
    if let Some(key) = up.host.key.lock().expect("key lock").take() {
        up.supervisor.hosts().detach(key);
    }
}

/// After the host's `initialize` found the server ready: when the live generation was
/// initialized without a capability a host declares (it began before the host said what
/// it can do), reconnects once so the next generation offers it, and waits (up to the
/// initialize wait) for that generation. Not while another host has a request in flight:
/// its request would be lost with the generation; the next generation offers it anyway.
pub(super) async fn reinitialize(up: &Upstream) {
    let sup = &up.supervisor;
    let hosts = sup.hosts();
    let snap = sup.snapshot();
    if snap.state.state != Some(StateName::Ready) || !hosts.lacks_capability() {
        return;
    }
    // This host's own initialize counts as in flight.
    if hosts.busy_besides(up.host.key.lock().expect("key lock").unwrap_or(u64::MAX)) {
        tracing::info!(server = %sup.name(), "the host declares client capabilities the live connection was not initialized with; another host's request is in flight, so it is not reconnected now");
        return;
    }
    tracing::info!(server = %sup.name(), "reconnecting once so the server is initialized with the host's client capabilities (roots, sampling, elicitation)");
    let after = snap.generation;
    sup.reconnect();
    let _ = tokio::time::timeout(
        up.options.initialize_wait,
        sup.wait_for(|s| s.generation > after && s.state.state == Some(StateName::Ready)),
    )
    .await;
}

/// A notification from the host other than `cancelled`: `roots/list_changed` goes to
/// every server (one that asks for roots again gets the host's new list).
pub(super) fn notification(shared: &Shared, method: &str, params: Option<Value>) {
    if method == "notifications/roots/list_changed" {
        for up in shared.upstreams().iter() {
            let supervisor = up.supervisor.clone();
            let (method, params) = (method.to_owned(), params.clone());
            tokio::spawn(async move {
                supervisor.send_notification(&method, params).await;
            });
        }
    }
}

/// The answer to a line that is not JSON-RPC: JSON-RPC 2.0 answers unparsable JSON with
/// -32700 and other JSON with -32600, both with `id: null` (never a number, so a host whose
/// ids start at 0 cannot take it for an answer to its request 0).
pub(super) fn not_json_rpc(text: &str, why: &str) -> Message {
    let (code, message) = if serde_json::from_str::<Value>(text).is_err() {
        (RpcError::PARSE_ERROR, "Parse error")
    } else {
        (RpcError::INVALID_REQUEST, "Invalid Request")
    };
    Message::Response(Response {
        id: RequestId::Null,
        outcome: Err(RpcError {
            code,
            message: format!("{message}: {why}"),
            data: None,
        }),
    })
}

#[cfg(test)]
#[path = "host_requests_tests.rs"]
mod tests;
