//! The call lane: how a tool call reaches the live session. While the server is ready the
//! actor publishes the session (the gate) and a call runs in the caller's task (or one task
//! of its own) without a hop through the mailbox; otherwise the actor answers it, saying
//! the state and when the next attempt is. Either way the call is admitted against the
//! concurrency cap and the queue, never replayed, and reported back as `CallDone`.

use super::{Actor, Internal};
use crate::error::{Error, ErrorKind, Phase};
use crate::events::{CallOutcome, EventBody, FailureInfo, Generation, millis};
use crate::policy::{Action, classify};
use crate::session::{RequestOptions, Session};
use crate::supervisor::CallOptions;
use crate::supervisor::state::Status;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tokio::time::Instant;

/// What a call needs while the server is ready, shared by the actor so that a call runs in
/// the caller's task (or one task of its own) instead of hopping through the actor's
/// mailbox: the live session, the concurrency cap, and the way back to the actor.
#[derive(Clone)]
pub(super) struct CallLane {
    /// The live session while the state is `ready`; `None` sends calls through the actor,
    /// which answers with the state and when the next attempt is.
    gate: watch::Receiver<Option<Gate>>,
    calls: Arc<Semaphore>,
    queued: Arc<AtomicUsize>,
    internal_tx: mpsc::UnboundedSender<Internal>,
    name: String,
    max_concurrent: usize,
    max_queued: usize,
    timeout: Duration,
}

#[derive(Clone)]
pub(super) struct Gate {
    pub(super) session: Arc<Session>,
    pub(super) generation: Generation,
}

impl CallLane {
    /// The live session and its generation while the server is ready (`requests.rs`).
    pub(super) fn live(&self) -> Option<Gate> {
        self.gate.borrow().clone()
    }

    /// The per-request timeout of the server's config.
    pub(super) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The call on the live session, if the server is ready: refused at once when the cap
    /// and the queue are full, otherwise run by whoever polls the future.
    pub(super) fn direct(
        &self,
        tool: &str,
        args: Value,
        opts: CallOptions,
    ) -> Result<impl Future<Output = Result<Value, Error>> + Send + 'static, (Value, CallOptions)>
    {
        let Some(gate) = self.gate.borrow().clone() else {
            return Err((args, opts));
        };
        if let Err(e) = admit(
            &self.queued,
            &self.name,
            self.max_concurrent,
            self.max_queued,
        ) {
            return Ok(futures_util::future::Either::Left(std::future::ready(Err(
                e,
            ))));
        }
        let run = run_call(
            gate,
            self.calls.clone(),
            self.queued.clone(),
            self.internal_tx.clone(),
            self.timeout,
            tool.to_owned(),
            args,
            opts,
        );
        Ok(futures_util::future::Either::Right(run))
    }
}

/// Takes a place among the running and queued calls, or says why there is none.
fn admit(
    queued: &AtomicUsize,
    name: &str,
    max_concurrent: usize,
    max_queued: usize,
) -> Result<(), Error> {
    let limit = max_concurrent + max_queued;
    if queued.fetch_add(1, Ordering::Relaxed) >= limit {
        queued.fetch_sub(1, Ordering::Relaxed);
        return Err(Error::new(
            ErrorKind::RateLimited,
            format!(
                "`{name}` already has {limit} calls running or waiting (maxConcurrentCalls = {max_concurrent}, and {max_queued} may wait); try again when some finish"
            ),
        ));
    }
    Ok(())
}

/// One admitted call on `gate`'s session: waits for a slot (or the cancel), calls, tells
/// the actor how it went (`CallDone`), and frees its place.
#[allow(clippy::too_many_arguments)]
async fn run_call(
    gate: Gate,
    permits: Arc<Semaphore>,
    queued: Arc<AtomicUsize>,
    tx: mpsc::UnboundedSender<Internal>,
    timeout: Duration,
    tool: String,
    args: Value,
    opts: CallOptions,
) -> Result<Value, Error> {
    let Gate {
        session,
        generation,
    } = gate;
    let CallOptions {
        progress,
        cancel,
        meta,
    } = opts;
    let cancelled = cancelled(cancel);
    tokio::pin!(cancelled);
    // A call beyond the cap waits its turn, for at most its own timeout.
    let permit = tokio::select! {
        permit = permits.acquire_owned() => permit
            .map_err(|_| Error::cancelled("the supervisor is stopping")),
        () = &mut cancelled => Err(Error::cancelled(
            "the call was cancelled while it waited for a free slot; it was never sent",
        )),
        () = tokio::time::sleep(timeout) => Err(Error::timeout(format!(
            "the call waited {} for one of the server's slots (maxConcurrentCalls), all \
             taken by calls still running; it was never sent",
            crate::fmt_duration(timeout)
        ))
        .with(|c| c.method = Some("tools/call".to_owned()))),
    };
    let result = match permit {
        Ok(_permit) => {
            let started = Instant::now();
            let opts = RequestOptions {
                timeout: Some(timeout),
                progress,
            };
            // Dropping the call's future on cancel is what sends the server
            // `notifications/cancelled` (the session's cancel-on-drop).
            let result = tokio::select! {
                result = session.call_tool_with_meta(&tool, args, meta.map(|m| *m), opts) => result,
                () = &mut cancelled => Err(Error::cancelled(
                    "the call was cancelled; the server was sent notifications/cancelled",
                )
                .with(|c| {
                    c.phase = Some(Phase::Call);
                    c.method = Some("tools/call".to_owned());
                })),
            };
            let _ = tx.send(Internal::CallDone {
                generation,
                tool,
                elapsed: started.elapsed(),
                result: match &result {
                    Ok(v) => Ok(v.get("isError").and_then(Value::as_bool) == Some(true)),
                    Err(e) => Err(e.clone()),
                },
            });
            result
        }
        Err(e) => Err(e),
    };
    queued.fetch_sub(1, Ordering::Relaxed);
    result
}

impl Actor {
    /// The handle's side of the calls: the live session as it changes, the cap, the way
    /// back here.
    pub(super) fn lane(&self) -> CallLane {
        CallLane {
            gate: self.gate.subscribe(),
            calls: self.calls.clone(),
            queued: self.queued.clone(),
            internal_tx: self.internal_tx.clone(),
            name: self.cfg.name.clone(),
            max_concurrent: self.cfg.max_concurrent_calls,
            max_queued: self.cfg.max_queued_calls,
            timeout: self.cfg.request_timeout,
        }
    }

    pub(super) fn call(
        &mut self,
        tool: String,
        args: Value,
        opts: CallOptions,
        reply: oneshot::Sender<Result<Value, Error>>,
    ) {
        let gate = match (&self.state.status, &self.live) {
            (Status::Ready { .. }, Some(live)) => Gate {
                session: live.session.clone(),
                generation: live.generation,
            },
            _ => {
                let _ = reply.send(Err(self.not_ready()));
                return;
            }
        };
        let c = &self.cfg;
        if let Err(e) = admit(
            &self.queued,
            &c.name,
            c.max_concurrent_calls,
            c.max_queued_calls,
        ) {
            let _ = reply.send(Err(e));
            return;
        }
        let run = run_call(
            gate,
            self.calls.clone(),
            self.queued.clone(),
            self.internal_tx.clone(),
            c.request_timeout,
            tool,
            args,
            opts,
        );
        tokio::spawn(async move {
            let _ = reply.send(run.await);
        });
    }

    /// The error a call gets when the server is not ready: the state, and when the next
    /// attempt is, in words.
    pub(super) fn not_ready(&self) -> Error {
        let info = self.state.info(self.now(), &self.cfg.policy);
        let state = info.state.map(|s| s.as_str()).unwrap_or("starting");
        let mut what = format!("`{}` is not ready: it is {state}", self.cfg.name);
        if let Some(stage) = info.stage {
            what.push_str(&format!(" ({stage})"));
        }
        if let (Some(a), Some(m)) = (info.attempt, info.max_attempts) {
            what.push_str(&format!(", attempt {a}/{m}"));
        }
        if let Some(ms) = info.delay_ms {
            what.push_str(&format!(
                "; the next attempt is in {}",
                crate::fmt_duration(Duration::from_millis(ms))
            ));
        }
        if let Some(reason) = &info.reason {
            what.push_str(&format!(" ({reason})"));
        }
        if let Some(cause) = &info.cause {
            what.push_str(&format!("; last failure: {}", cause.message));
        }
        what.push_str(". The call was not sent.");
        Error::new(ErrorKind::Transport, what).with(|c| {
            c.phase = Some(Phase::Call);
            c.retry_after = info.delay_ms.map(Duration::from_millis);
        })
    }

    /// A call ended (`CallDone`): the call event, and a failure that shows the connection
    /// is gone ends the generation.
    pub(super) fn call_done(
        &mut self,
        generation: Generation,
        tool: String,
        elapsed: Duration,
        result: Result<bool, Error>,
    ) {
        let (outcome, error) = match &result {
            Ok(true) => (CallOutcome::ToolError, None),
            Ok(false) => (CallOutcome::Ok, None),
            Err(e) => (
                CallOutcome::Error,
                Some(FailureInfo::from_error(e, generation, None)),
            ),
        };
        let body = EventBody::Call {
            tool,
            outcome,
            duration_ms: millis(elapsed),
            error,
        };
        self.bus.emit(&self.cfg.name, generation, body);
        match result {
            Ok(_) => self.last_activity = Instant::now(),
            // Ended by the machine's sleep, not by the connection: the wake probes it.
            Err(e) if e.by_sleep() => {}
            Err(e) => {
                let verdict = classify(&e, Phase::Call, false);
                if matches!(
                    verdict.action,
                    Action::ReturnAndReconnect | Action::Retire(_)
                ) {
                    self.lost(generation, &e);
                }
            }
        }
    }

    /// Publishes the live session for the lane while ready; `None` otherwise.
    pub(super) fn publish_gate(&self) {
        let gate = match (&self.state.status, &self.live) {
            (Status::Ready { .. }, Some(live)) => Some(Gate {
                session: live.session.clone(),
                generation: live.generation,
            }),
            _ => None,
        };
        self.gate.send_if_modified(|g| {
            let same = match (&*g, &gate) {
                (Some(a), Some(b)) => {
                    a.generation == b.generation && Arc::ptr_eq(&a.session, &b.session)
                }
                (None, None) => true,
                _ => false,
            };
            if !same {
                *g = gate;
            }
            !same
        });
    }
}

/// Resolves when `cancel` fires; never when there is none or its sender was dropped.
async fn cancelled(cancel: Option<oneshot::Receiver<()>>) {
    let fired = match cancel {
        Some(rx) => rx.await.is_ok(),
        None => false,
    };
    if !fired {
        std::future::pending::<()>().await;
    }
}
