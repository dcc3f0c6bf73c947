//! One attempt: a fresh transport and session, handshake, tool list — all inside one
//! establishment deadline. Each stage gets `min(its limit, what remains)`; a stage that
//! cannot fit fails at once with an error naming the deadline. Whatever the attempt
//! opened is closed before it reports a failure, so two processes never overlap.

use super::SupervisorConfig;
use crate::error::{Error, ErrorKind, Phase, Stage};
use crate::policy::Deadline;
use crate::protocol::mcp::Tool;
use crate::session::negotiate::{self, Ladder};
use crate::session::{RequestOptions, Session, SessionOptions};
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
    let now = || Instant::now() - epoch;
    let deadline = Deadline::starting_at(now(), cfg.establish);
    let first = cfg.first_stage;
    // Every step of the protocol ladder is a fresh attempt that starts by connecting.
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
    let ladder = Ladder {
        choice: cfg.protocol,
        open: &open,
        legacy: legacy.as_ref().map(|l| l as _),
        stateless_first: cfg.stateless_first,
    };
    let limit = std::sync::Mutex::new(cfg.request_timeout);
    let options = |s: Stage| {
        let _ = stage.send(s);
        let l = stage_limit(&deadline, cfg.request_timeout, now(), s)?;
        *limit.lock().expect("lock") = l;
        Ok(SessionOptions {
            request_timeout: l,
            ..cfg.session.clone()
        })
    };
    let cut = |e: Error, s: Stage| cut_by_deadline(e, *limit.lock().expect("lock"), cfg, s);
    let known = *cfg.era.lock().expect("lock");
    let session = match negotiate::connect(&ladder, known, options, cut).await {
        Ok((session, rung)) => {
            *cfg.era.lock().expect("lock") = Some(rung);
            session
        }
        Err(e) => {
            // The remembered way failed: find the way again next time.
            *cfg.era.lock().expect("lock") = None;
            return Err(e);
        }
    };
    let session = Arc::new(session);

    let _ = stage.send(Stage::ListTools);
    let listed = match stage_limit(&deadline, cfg.request_timeout, now(), Stage::ListTools) {
        Ok(limit) => session
            .list_tools_with(RequestOptions {
                timeout: Some(limit),
                ..Default::default()
            })
            .await
            .map_err(|e| cut_by_deadline(e, limit, cfg, Stage::ListTools)),
        Err(e) => Err(e),
    };
    match listed {
        Ok(tools) => Ok((session, tools)),
        Err(e) => {
            session.close().await;
            Err(e)
        }
    }
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
