//! One host request, answered: `initialize` from the supervised server's own answer,
//! `ping` here, `tools/list` from the supervisor's registry, `tools/call` through the call
//! lane (progress and cancellation both ways), anything else through the request lane.
//! Every forwarded request first waits for ready (bounded by the request wait); a request
//! in flight when its generation is lost is sent again on the next one only when
//! `policy::reissue` says repeating it is safe, else it fails at once with the cause.

use super::errors;
use super::{Shared, Upstream, fingerprint};
use crate::error::Error;
use crate::events::Generation;
use crate::events::StateName;
use crate::policy::reissue::{self, Reissue};
use crate::protocol::mcp::{CLIENT_VERSION, Progress};
use crate::protocol::revision::Revision;
use crate::protocol::stateless::tool_is_repeatable;
use crate::protocol::{Message, Request, RequestId, Response, RpcError};
use crate::supervisor::CallOptions;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

/// Answers `r` unless the host cancelled it (then, as the spec asks, nothing is sent).
pub(super) async fn answer(shared: &Shared, r: Request, cancel: watch::Receiver<bool>) {
    let up = &shared.upstream();
    let outcome = match r.method.as_str() {
        "initialize" => {
            let answer = initialize(up, r.params.as_ref()).await;
            if let (Some(host), Ok(result)) = (&up.recorder, &answer) {
                let revision = result["protocolVersion"].as_str().unwrap_or_default();
                let generation = up.supervisor.snapshot().generation;
                host.initialized(r.params.as_ref(), revision, generation);
            }
            Some(answer)
        }
        "ping" => Some(Ok(json!({}))),
        "tools/list" => Some(tools_list(shared).await),
        "tools/call" => {
            let tool = r.params.as_ref().and_then(|p| p.get("name"));
            let guard = up
                .recorder
                .as_ref()
                .map(|h| h.call(tool.and_then(Value::as_str).unwrap_or_default()));
            let answer = call(shared, up, &r.id, r.params.clone(), cancel).await;
            if let (Some(guard), Some(answer)) = (guard, &answer) {
                let (outcome, kind) = errors::call_outcome(answer);
                guard.finish(outcome, kind, up.supervisor.snapshot().generation);
            }
            answer
        }
        method => {
            super::subs::before(up, method, r.params.as_ref());
            let forwarded = forward(shared, up, &r.id, method, r.params.clone());
            let outcome = tokio::select! {
                outcome = forwarded => Some(outcome),
                () = cancelled(cancel) => None,
            };
            if !matches!(outcome, Some(Ok(_))) {
                super::subs::failed(up, method, r.params.as_ref());
            }
            outcome
        }
    };
    if let Some(outcome) = outcome {
        shared.send(Message::Response(Response { id: r.id, outcome }));
    }
}

/// Resolves once the host cancelled the request.
pub(super) async fn cancelled(mut cancel: watch::Receiver<bool>) {
    if cancel.wait_for(|c| *c).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Waits until the server is ready on a generation after `after` (`Generation(0)`: any), up to
/// `deadline`. A state a person must act on fails at once.
pub(super) async fn ready(
    up: &Upstream,
    after: Generation,
    deadline: Instant,
    wait: Duration,
) -> Result<Generation, RpcError> {
    let sup = &up.supervisor;
    let redactor = &up.options.redactor;
    let mut rx = sup.watch();
    loop {
        let snap = rx.borrow_and_update().clone();
        if snap.state.state == Some(StateName::Ready) && snap.generation > after {
            return Ok(snap.generation);
        }
        if errors::is_halted(snap.state.state) {
            return Err(errors::halted(sup.name(), &snap.state, redactor));
        }
        match tokio::time::timeout_at(deadline, rx.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return Err(errors::halted(sup.name(), &snap.state, redactor)),
            Err(_) => return Err(errors::not_ready(sup.name(), &snap.state, wait, redactor)),
        }
    }
}

/// The host's `initialize`: the server's capabilities, serverInfo and instructions when it
/// is ready within the initialize wait, else Lifeline's own (no cause, no secret).
async fn initialize(up: &Upstream, params: Option<&Value>) -> Result<Value, RpcError> {
    let asked = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .and_then(Revision::parse_initialize)
        .unwrap_or(Revision::LATEST_INITIALIZE);
    let sup = &up.supervisor;
    let wait = up.options.initialize_wait;
    let _ = ready(up, Generation(0), Instant::now() + wait, wait).await;
    super::host_requests::reinitialize(up).await;
    let mut result = match sup.server_info() {
        Some((_, info)) => {
            let mut caps = info.capabilities.clone();
            if !caps.is_object() {
                caps = json!({});
            }
            // Lifeline tells the host when the tool set changes across generations.
            caps["tools"] = json!({ "listChanged": true });
            let mut r = json!({
                "capabilities": caps,
                "serverInfo": info.server_info.map(|i| serde_json::to_value(i).unwrap_or_default())
                    .unwrap_or_else(|| json!({ "name": sup.name(), "version": "unknown" })),
            });
            if let Some(text) = info.instructions {
                r["instructions"] = Value::from(text);
            }
            r
        }
        None => {
            let state = sup
                .snapshot()
                .state
                .state
                .map(StateName::as_str)
                .unwrap_or("connecting");
            json!({
                "capabilities": {
                    "tools": { "listChanged": true },
                    "resources": {}, "prompts": {}, "completions": {}, "logging": {},
                },
                "serverInfo": { "name": format!("lifeline:{}", sup.name()), "version": CLIENT_VERSION },
                "instructions": format!(
                    "Lifeline serves `{}` here; it is {state} right now. Its tools appear (a \
                     tools/list_changed notification follows) once it is ready.",
                    sup.name()
                ),
            })
        }
    };
    result["protocolVersion"] = Value::from(asked.as_str());
    Ok(result)
}

/// The supervisor's tool list (stale while reconnecting, which is what the host wants);
/// an empty one waits for ready first.
async fn tools_list(shared: &Shared) -> Result<Value, RpcError> {
    let up = &shared.upstream();
    let sup = &up.supervisor;
    if sup.tools().is_empty() {
        let wait = up.options.request_wait;
        ready(up, Generation(0), Instant::now() + wait, wait).await?;
    }
    let tools: Vec<Value> = sup.tools().iter().map(|t| t.raw_json()).collect();
    *shared.known.lock().expect("known lock") = Some((fingerprint(shared), false));
    Ok(json!({ "tools": tools }))
}

/// True when a failure says the connection is gone (not an answer, not a timeout, not
/// the host's own cancel): the request may have been lost with it.
fn lost_connection(e: &Error) -> bool {
    reissue::lost_connection(e.kind(), e.context().rpc_code)
}

fn why_not(decision: Reissue, method: &str) -> String {
    match decision {
        Reissue::NotARead => format!("{method} is not a request that only reads"),
        Reissue::ToolNotRepeatable => {
            "the tool does not declare readOnlyHint or idempotentHint (true)".to_owned()
        }
        Reissue::Exhausted => format!("it was already sent again {} times", reissue::MAX_REISSUES),
        Reissue::Again => "of nothing".to_owned(),
    }
}

/// The host's progress token on this request, if it asked for progress.
fn progress_token(params: Option<&Value>) -> Option<Value> {
    params?.get("_meta")?.get("progressToken").cloned()
}

/// The host's `_meta` on a call, without its `progressToken` (the session sets its own and
/// the gateway maps the progress back to the host's token).
fn host_meta(params: Option<&Value>) -> Option<Box<serde_json::Map<String, Value>>> {
    let mut meta = params?.get("_meta")?.as_object()?.clone();
    meta.remove("progressToken");
    Some(Box::new(meta))
}

/// The upstream's progress for one request, on its way to the host under the host's token.
type Relay = Option<(Value, mpsc::UnboundedReceiver<Progress>)>;

/// A progress channel for one attempt when the host asked for progress.
fn progress_channel(token: Option<&Value>) -> (Option<mpsc::UnboundedSender<Progress>>, Relay) {
    match token {
        Some(token) => {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some((token.clone(), rx)))
        }
        None => (None, None),
    }
}

/// Runs `fut`, passing its progress to the host as it comes (as part of the answer to
/// `id`); what is left when it ends is passed on before this returns, so the host sees
/// every progress before the answer.
async fn relay<F: Future>(shared: &Shared, id: &RequestId, relay: Relay, fut: F) -> F::Output {
    let Some((token, mut rx)) = relay else {
        return fut.await;
    };
    let send = |p: Progress| {
        let mut params = json!({ "progressToken": token, "progress": p.progress });
        if let Some(t) = p.total {
            params["total"] = Value::from(t);
        }
        if let Some(m) = p.message {
            params["message"] = Value::from(m);
        }
        shared.send_for(
            id,
            Message::notification("notifications/progress", Some(params)),
        );
    };
    tokio::pin!(fut);
    loop {
        tokio::select! {
            biased;
            Some(p) = rx.recv() => send(p),
            out = &mut fut => {
                while let Ok(p) = rx.try_recv() {
                    send(p);
                }
                return out;
            }
        }
    }
}

/// Any request other than the ones answered here, through the request lane.
pub(super) async fn forward(
    shared: &Shared,
    up: &Upstream,
    id: &RequestId,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    let sup = &up.supervisor;
    let wait = up.options.request_wait;
    let deadline = Instant::now() + wait;
    let token = progress_token(params.as_ref());
    let mut after = Generation(0);
    let mut reissued = 0;
    loop {
        ready(up, after, deadline, wait).await?;
        let (progress, relayed) = progress_channel(token.as_ref());
        let request = sup.send_request(method, params.clone(), progress);
        let sent = relay(shared, id, relayed, request).await;
        if sent.generation == Generation(0) {
            // The state changed between the wait and the send: nothing was sent.
            tokio::task::yield_now().await;
            continue;
        }
        match sent.result {
            Ok(v) => return Ok(v),
            // Refused unrun (its connection had closed, or its session was gone): sending
            // it on the next generation is not a repetition.
            Err(e) if e.never_ran() => after = sent.generation,
            Err(e) if e.by_sleep() => {
                let info = sup.snapshot().state;
                return Err(errors::slept(sup.name(), &info, &e, sent.generation));
            }
            Err(e) if lost_connection(&e) => {
                let decision = reissue::after_lost_stream(method, false, reissued);
                if decision == Reissue::Again {
                    reissued += 1;
                    after = sent.generation;
                    continue;
                }
                let info = sup.snapshot().state;
                return Err(errors::lost(
                    sup.name(),
                    method,
                    &info,
                    &e,
                    sent.generation,
                    &why_not(decision, method),
                    &up.options.redactor,
                ));
            }
            Err(e) => {
                let info = sup.snapshot().state;
                return Err(errors::answered(
                    sup.name(),
                    &info,
                    &e,
                    sent.generation,
                    &up.options.redactor,
                ));
            }
        }
    }
}

/// `tools/call` through the call lane; `None` when the host cancelled it.
pub(super) async fn call(
    shared: &Shared,
    up: &Upstream,
    id: &RequestId,
    params: Option<Value>,
    cancel: watch::Receiver<bool>,
) -> Option<Result<Value, RpcError>> {
    let sup = &up.supervisor;
    let redactor = &up.options.redactor;
    let Some(tool) = params
        .as_ref()
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Some(Err(RpcError {
            code: RpcError::INVALID_PARAMS,
            message: "tools/call needs params.name, the tool's name".to_owned(),
            data: None,
        }));
    };
    if let Some(why) = sup.held(&tool) {
        return Some(Err(errors::held(sup.name(), &tool, why)));
    }
    let args = params
        .as_ref()
        .and_then(|p| p.get("arguments"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    let token = progress_token(params.as_ref());
    let wait = up.options.request_wait;
    let deadline = Instant::now() + wait;
    let mut after = Generation(0);
    let mut reissued = 0;
    loop {
        let generation = tokio::select! {
            r = ready(up, after, deadline, wait) => match r {
                Ok(g) => g,
                Err(e) => return Some(Err(e)),
            },
            () = cancelled(cancel.clone()) => return None,
        };
        let repeatable = sup
            .tools()
            .iter()
            .find(|t| t.name == tool)
            .is_some_and(|t| tool_is_repeatable(t.annotations.as_ref()));
        let (cancel_tx, cancel_rx) = oneshot::channel();
        let (progress, relayed) = progress_channel(token.as_ref());
        let opts = CallOptions {
            progress,
            cancel: Some(cancel_rx),
            meta: host_meta(params.as_ref()),
        };
        let run = relay(
            shared,
            id,
            relayed,
            sup.call_with(&tool, args.clone(), opts),
        );
        tokio::pin!(run);
        let result = tokio::select! {
            r = &mut run => r,
            () = cancelled(cancel.clone()) => {
                let _ = cancel_tx.send(());
                let _ = run.await;
                return None;
            }
        };
        match result {
            Ok(v) => return Some(Ok(v)),
            // Refused unrun: sent on the next generation, not a repetition.
            Err(e) if e.never_ran() => after = generation,
            Err(e) if e.by_sleep() => {
                let info = sup.snapshot().state;
                return Some(Err(errors::slept(sup.name(), &info, &e, generation)));
            }
            Err(e) if lost_connection(&e) => {
                let decision = reissue::after_lost_stream("tools/call", repeatable, reissued);
                if decision == Reissue::Again {
                    reissued += 1;
                    after = generation;
                    continue;
                }
                let info = sup.snapshot().state;
                return Some(Err(errors::lost(
                    sup.name(),
                    "tools/call",
                    &info,
                    &e,
                    generation,
                    &why_not(decision, "tools/call"),
                    redactor,
                )));
            }
            Err(e) => {
                let info = sup.snapshot().state;
                return Some(Err(errors::answered(
                    sup.name(),
                    &info,
                    &e,
                    generation,
                    redactor,
                )));
            }
        }
    }
}
