//! One attempt: a fresh transport and session, handshake, tool list — all inside one
//! establishment deadline. Each stage gets `min(its limit, what remains)`; a stage that
//! cannot fit fails at once with an error naming the deadline. Whatever the attempt
//! opened is closed before it reports a failure, so two processes never overlap.

use super::SupervisorConfig;
use crate::error::{Error, ErrorKind, Phase, Stage};
use crate::policy::Deadline;
use crate::protocol::mcp::Tool;
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
    let _ = stage.send(first);
    let conn = (cfg.connector)().map_err(|e| e.in_stage(Phase::Connect, Some(first)))?;

    let _ = stage.send(Stage::Initialize);
    let limit = stage_limit(&deadline, cfg.request_timeout, now(), Stage::Initialize)?;
    let options = SessionOptions {
        request_timeout: limit,
        ..cfg.session.clone()
    };
    let session = Session::connect(conn, options)
        .await
        .map_err(|e| cut_by_deadline(e, limit, cfg, Stage::Initialize))?;
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
