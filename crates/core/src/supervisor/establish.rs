//! One attempt: a fresh transport and session, handshake, tool list — all inside one
//! establishment deadline. Each stage gets `min(its limit, what remains)`; a stage that
//! cannot fit fails at once with an error naming the deadline. Whatever the attempt
//! opened is closed before it reports a failure, so two processes never overlap.
//! It starts the fallback order at the step that worked last (`last_worked`); what that
//! holds for the next attempt, and when to doubt a stateless server's discovery, is
//! `state::after_walk`'s decision.

use super::SupervisorConfig;
use super::state::{AfterWalk, Walk, after_walk};
use crate::error::{Error, ErrorKind, Phase, Stage};
use crate::policy::Deadline;
use crate::policy::fallback::is_initialize_answer_to_stateless;
use crate::protocol::mcp::Tool;
use crate::session::negotiate::{self, Fallback, Step};
use crate::session::{RequestOptions, Session, SessionOptions};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Runs one attempt. `stage` hears each stage as it starts.
pub async fn establish(
    cfg: &SupervisorConfig,
    epoch: Instant,
    stage: &mpsc::UnboundedSender<Stage>,
) -> Result<(Arc<Session>, Vec<Tool>), Error> {
    // A supervisor run for one host waits (bounded) for it first (`HostSlot`).
    cfg.hosts.first_host().await;
    let now = || Instant::now() - epoch;
    let deadline = Deadline::starting_at(now(), cfg.establish);
    let first = cfg.first_stage;
    // Every step of the protocol fallback is a fresh attempt that starts by connecting.
    let open = || {
        let _ = stage.send(first);
        (cfg.connector)().map_err(|e| e.in_stage(Phase::Connect, Some(first)))
    };
    let legacy = cfg.fallback.as_ref().map(|f| {
        move || {
            let _ = stage.send(first);
            f().map_err(|e| e.in_stage(Phase::Connect, Some(first)))
        }
    });
    let fallback = Fallback {
        choice: cfg.protocol,
        open: &open,
        legacy: legacy.as_ref().map(|l| l as _),
        stateless_first: cfg.stateless_first,
    };
    let limit = std::sync::Mutex::new(cfg.request_timeout);
    // The attached hosts' capabilities as they are now: this attempt offers them upstream.
    let host_capabilities = cfg.hosts.offer();
    let mut options = |s: Stage| {
        let _ = stage.send(s);
        let l = stage_limit(&deadline, cfg.request_timeout, now(), s)?;
        *limit.lock().expect("lock") = l;
        Ok(SessionOptions {
            request_timeout: l,
            // The server's seed: its sessions' waits disperse from other servers' as its
            // retries do.
            jitter_seed: cfg.seed,
            relay: Some(cfg.hosts.clone()),
            host_capabilities: host_capabilities.clone(),
            ..cfg.session.clone()
        })
    };
    let cut = |e: Error, s: Stage| cut_by_deadline(e, *limit.lock().expect("lock"), cfg, s);
    // Start where the last attempt succeeded (`None`: the top of the fallback).
    let start = *cfg.last_worked.lock().expect("lock");
    let deadline = &deadline;
    let list = |session: Arc<Session>, _: Step| -> Checked<'_, Vec<Tool>> {
        let _ = stage.send(Stage::ListTools);
        let now = now();
        Box::pin(async move { list_tools(&session, deadline, cfg, now).await })
    };
    let (outcome, worked) = walk(&fallback, start, &cfg.name, &mut options, &cut, list).await;
    *cfg.last_worked.lock().expect("lock") = worked;
    outcome
}

/// What `walk`'s check of a new session answers.
pub type Checked<'s, T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 's>>;

/// Walks `fallback` from `start` and hands the session to `check` (the supervisor lists the
/// tools there). A stateless server whose answer to `check` is the way older servers answer
/// gets one `initialize` walk (`state::after_walk` decides), and that walk's error says why
/// it was tried. A session `check` failed is closed. Returns the outcome and what
/// `last_worked` holds next. `name` names the server in the log.
pub async fn walk<'c, T>(
    fallback: &Fallback<'_>,
    mut start: Option<Step>,
    name: &str,
    mut options: impl FnMut(Stage) -> Result<SessionOptions, Error>,
    cut: impl Fn(Error, Stage) -> Error,
    mut check: impl FnMut(Arc<Session>, Step) -> Checked<'c, T>,
) -> (Result<(Arc<Session>, T), Error>, Option<Step>) {
    // The check's failure that made this walk doubt a stateless server's discovery.
    let mut doubted: Option<Error> = None;
    loop {
        let (walk, outcome) = match negotiate::connect(fallback, start, &mut options, &cut).await {
            Err(e) => (Walk::NotConnected, Err(e)),
            Ok((session, step)) => {
                let session = Arc::new(session);
                match check(session.clone(), step).await {
                    Ok(checked) => (Walk::Listed(step), Ok((session, checked))),
                    Err(e) => {
                        session.close().await;
                        let walk = Walk::ListFailed {
                            step,
                            legacy_answer: is_initialize_answer_to_stateless(&e),
                            doubted: doubted.is_some(),
                            initialize_allowed: fallback.steps().contains(&Step::Initialize),
                        };
                        (walk, Err(e))
                    }
                }
            }
        };
        match (after_walk(walk), outcome) {
            (AfterWalk::TryInitialize, Err(e)) => {
                tracing::info!(server = %name, error = %e, "discovery said stateless, but tools/list was answered the way older servers answer; trying initialize");
                doubted = Some(e);
                start = Some(Step::Initialize);
            }
            (step, outcome) => {
                let worked = match step {
                    AfterWalk::Remember(worked) => worked,
                    AfterWalk::TryInitialize => None,
                };
                let outcome = outcome.map_err(|e| match &doubted {
                    Some(first) => after_doubt(first, e),
                    None => e,
                });
                return (outcome, worked);
            }
        }
    }
}

/// Connects to a server once, the way `lifeline call` and `lifeline tools` do: the walk of
/// `establish` with `options` for every step and no deadline, where only a stateless
/// server's session is checked (its tools/list), and only for the answer that sends the
/// walk on to `initialize`; any other failure of that check is left to the caller's own
/// request.
pub async fn connect_once(
    fallback: &Fallback<'_>,
    options: SessionOptions,
) -> Result<Arc<Session>, Error> {
    let doubtable = fallback.steps().contains(&Step::Initialize);
    let check = |session: Arc<Session>, step: Step| -> Checked<'static, ()> {
        Box::pin(async move {
            if step != Step::Stateless || !doubtable {
                return Ok(());
            }
            match session.list_tools().await {
                Err(e) if is_initialize_answer_to_stateless(&e) => Err(e),
                _ => Ok(()),
            }
        })
    };
    let opts = |_| Ok(options.clone());
    let (outcome, _) = walk(fallback, None, "", opts, |e, _| e, check).await;
    outcome.map(|(session, ())| session)
}

/// The new session's tools/list, in what is left of the deadline.
async fn list_tools(
    session: &Session,
    deadline: &Deadline,
    cfg: &SupervisorConfig,
    now: Duration,
) -> Result<Vec<Tool>, Error> {
    let limit = stage_limit(deadline, cfg.request_timeout, now, Stage::ListTools)?;
    session
        .list_tools_with(RequestOptions {
            timeout: Some(limit),
            ..Default::default()
        })
        .await
        .map_err(|e| cut_by_deadline(e, limit, cfg, Stage::ListTools))
}

/// The error of the `initialize` attempt that followed a stateless server's old-style
/// answer to tools/list, saying so.
fn after_doubt(first: &Error, error: Error) -> Error {
    let message = format!(
        "{}; `initialize` was tried because the server, though its server/discover lists \
         2026-07-28, answered tools/list the way older servers answer ({})",
        error.message(),
        first.message()
    );
    error.restated(message)
}

fn stage_limit(
    deadline: &Deadline,
    limit: Duration,
    now: Duration,
    stage: Stage,
) -> Result<Duration, Error> {
    deadline
        .stage_limit(limit, now)
        .map_err(|e| Error::from(e).in_stage(Phase::Connect, Some(stage)))
}

/// A timeout that the deadline (not the request timeout) imposed says so.
fn cut_by_deadline(e: Error, limit: Duration, cfg: &SupervisorConfig, stage: Stage) -> Error {
    let e = e.in_stage(Phase::Connect, Some(stage));
    if e.kind() == ErrorKind::Timeout && limit < cfg.request_timeout {
        let message = format!(
            "{} did not finish within the {} establishment deadline (timeouts.establishMs)",
            stage.as_str(),
            crate::fmt_duration(cfg.establish)
        );
        let context = e.context().clone();
        return Error::timeout(message).with(|c| *c = context);
    }
    e
}
