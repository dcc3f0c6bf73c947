//! The request engine: request ids, the pending map that correlates each answer with its
//! waiter, the per-request timeout (restarted by progress, under a hard cap), and
//! cancellation — `notifications/cancelled`, or closing the response stream where that is
//! the cancellation — when a request times out or its caller stops waiting. When the
//! session ends, every waiter fails at once with the cause (`close_with`).

use super::{RequestOptions, Session, Shared};
use crate::error::Error;
use crate::protocol::mcp::Progress;
use crate::protocol::{Message, RequestId};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// A request waiting for its answer.
pub(super) struct Pending {
    pub(super) method: String,
    pub(super) answer: oneshot::Sender<Result<Value, Error>>,
    pub(super) progress: mpsc::UnboundedSender<Progress>,
}

/// A request entered in the pending map: its id, and where its answer and its progress
/// notifications arrive.
pub(super) struct Registered {
    pub(super) id: RequestId,
    pub(super) answer: oneshot::Receiver<Result<Value, Error>>,
    pub(super) progress: mpsc::UnboundedReceiver<Progress>,
}

impl Shared {
    /// Gives a new request of `method` a fresh id and a waiter in the pending map.
    pub(super) fn register(&self, method: &str) -> Registered {
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (answer_tx, answer) = oneshot::channel();
        let (progress_tx, progress) = mpsc::unbounded_channel();
        self.pending.lock().expect("lock").insert(
            id.clone(),
            Pending {
                method: method.to_owned(),
                answer: answer_tx,
                progress: progress_tx,
            },
        );
        Registered {
            id,
            answer,
            progress,
        }
    }

    /// Takes a request out of the pending map (answered, failed or given up on).
    pub(super) fn take_pending(&self, id: &RequestId) -> Option<Pending> {
        self.pending.lock().expect("lock").remove(id)
    }

    /// Takes every request out of the pending map, to fail them all.
    pub(super) fn take_all_pending(&self) -> Vec<Pending> {
        let mut pending = self.pending.lock().expect("lock");
        pending.drain().map(|(_, p)| p).collect()
    }

    /// Refuses a new request once the session has ended, with the cause.
    pub(super) fn check_open(&self) -> Result<(), Error> {
        match self.closed.lock().expect("lock").as_ref() {
            Some(cause) => Err(Error::closed_because(cause)),
            None => Ok(()),
        }
    }
}

impl Session {
    /// One request with one id: sent, then waited for (see `request`).
    pub(super) async fn request_once(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Value, Error> {
        let shared = &self.shared;
        shared.check_open()?;
        let Registered {
            id,
            mut answer,
            mut progress,
        } = shared.register(method);
        let params = with_progress_token(method, params, &id);
        let mut guard = CancelOnDrop {
            shared: shared.clone(),
            id: Some(id.clone()),
            initialize: method == "initialize",
        };

        let timeout = opts.timeout.unwrap_or(shared.options.request_timeout);
        let hard = Instant::now() + shared.options.max_request_timeout.max(timeout);
        let mut deadline = (Instant::now() + timeout).min(hard);
        let msg = Message::request(id.clone(), method, params);
        let send = shared.transport.send(&msg);
        tokio::pin!(send);
        let mut sent = false;
        loop {
            tokio::select! {
                r = &mut send, if !sent => {
                    sent = true;
                    if let Err(e) = r {
                        shared.take_pending(&id);
                        guard.id = None;
                        return Err(e);
                    }
                }
                r = &mut answer => {
                    guard.id = None;
                    // Progress that arrived before the answer reaches the caller first.
                    while let Ok(p) = progress.try_recv() {
                        if let Some(user) = &opts.progress {
                            let _ = user.send(p);
                        }
                    }
                    return r.unwrap_or_else(|_| Err(Error::cancelled("the session ended before the answer")));
                }
                Some(p) = progress.recv() => {
                    deadline = (Instant::now() + timeout).min(hard);
                    if let Some(user) = &opts.progress {
                        let _ = user.send(p);
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    let capped = deadline >= hard;
                    // Sent before returning, so that a caller who closes the session next
                    // cannot overtake the notification.
                    let cancelled = match guard.take_cancellation("timed out") {
                        Some(msg) => {
                            let limit = shared.options.request_timeout.min(CANCEL_SEND_TIMEOUT);
                            let sent = tokio::time::timeout(limit, shared.transport.send(&msg)).await;
                            matches!(sent, Ok(Ok(())))
                        }
                        None => false,
                    };
                    let limit = if capped { shared.options.max_request_timeout.max(timeout) } else { timeout };
                    return Err(Error::timeout(format!(
                        "{method} got no answer within {}{}{}",
                        crate::fmt_duration(limit),
                        if capped { " (the hard cap, even with progress)" } else { " (the request timeout; progress restarts it)" },
                        if cancelled { "; sent notifications/cancelled" } else { "" },
                    )).with(|c| c.method = Some(method.to_owned())));
                }
            }
        }
    }
}

/// Removes a request that its caller stopped waiting for, and tells the server.
struct CancelOnDrop {
    shared: Arc<Shared>,
    id: Option<RequestId>,
    initialize: bool,
}

impl CancelOnDrop {
    /// Stops waiting for the request and returns the `notifications/cancelled` to send, if
    /// one should be (never for `initialize`, which the spec forbids cancelling, and not on
    /// a closed connection). Where closing the response stream is the cancellation
    /// (stateless revision over HTTP), that is done instead.
    fn take_cancellation(&mut self, reason: &str) -> Option<Message> {
        let id = self.id.take()?;
        self.shared.take_pending(&id);
        if self.shared.transport.cancels_by_closing() {
            self.shared.transport.cancel(&id);
            return None;
        }
        if self.initialize || self.shared.closed.lock().expect("lock").is_some() {
            return None;
        }
        Some(Message::notification(
            "notifications/cancelled",
            Some(json!({ "requestId": id, "reason": reason })),
        ))
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.id.is_none() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if let Some(msg) = self.take_cancellation("cancelled by the caller") {
            let shared = self.shared.clone();
            tokio::spawn(async move {
                let _ = shared.transport.send(&msg).await;
            });
        }
    }
}

/// The longest a timed-out request waits to deliver its `notifications/cancelled`.
const CANCEL_SEND_TIMEOUT: Duration = Duration::from_secs(5);

fn with_progress_token(method: &str, params: Option<Value>, id: &RequestId) -> Option<Value> {
    if method != "tools/call" {
        return params;
    }
    let mut params = params.unwrap_or_else(|| json!({}));
    if let Some(obj) = params.as_object_mut() {
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                "progressToken".into(),
                serde_json::to_value(id).unwrap_or(Value::Null),
            );
        }
    }
    Some(params)
}

/// Ends the session with `cause` (only the first cause is kept): later requests are
/// refused, `ended` resolves, and every waiting request fails with it.
pub(super) fn close_with(shared: &Shared, cause: Error) {
    let first = shared
        .closed
        .lock()
        .expect("lock")
        .get_or_insert(cause.clone())
        .clone();
    shared.ended.send_if_modified(|e| {
        let changed = e.is_none();
        e.get_or_insert(first);
        changed
    });
    for p in shared.take_all_pending() {
        let _ = p.answer.send(Err(cause.clone().with(|c| {
            c.method.get_or_insert(p.method.clone());
        })));
    }
}
