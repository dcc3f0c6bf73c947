//! One attempt: a fresh transport and session, handshake, tool list — all inside one
//! establishment deadline. Each stage gets `min(its limit, what remains)`; a stage that
//! cannot fit fails at once with an error naming the deadline. Whatever the attempt
//! opened is closed before it reports a failure, so two processes never overlap.

use super::SupervisorConfig;
use crate::error::{Error, ErrorKind, Phase, Stage};
use crate::policy::Deadline;
use crate::policy::fallback::{both_failed, is_older_protocol_signal};
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
    let session = match Session::connect(conn, options).await {
        Ok(session) => session,
        Err(e) => match &cfg.fallback {
            Some(fallback) if is_older_protocol_signal(&e) => {
                fall_back(cfg, fallback, e, &deadline, now, stage).await?
            }
            _ => return Err(cut_by_deadline(e, limit, cfg, Stage::Initialize)),
        },
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

/// The spec's backward-compatibility step: the server refused Streamable HTTP's
/// `initialize` as an older server would, so a fresh legacy HTTP+SSE connection is tried
/// inside what is left of the same deadline. When that fails too, the error says both.
async fn fall_back(
    cfg: &SupervisorConfig,
    fallback: &super::Connector,
    refused: Error,
    deadline: &Deadline,
    now: impl Fn() -> Duration,
    stage: &mpsc::UnboundedSender<Stage>,
) -> Result<Session, Error> {
    tracing::info!(server = %cfg.name, error = %refused, "Streamable HTTP refused; trying the legacy HTTP+SSE transport (2024-11-05)");
    let _ = stage.send(cfg.first_stage);
    let conn = fallback().map_err(|e| e.in_stage(Phase::Connect, Some(cfg.first_stage)))?;
    let _ = stage.send(Stage::Initialize);
    let limit = stage_limit(deadline, cfg.request_timeout, now(), Stage::Initialize)?;
    let options = SessionOptions {
        request_timeout: limit,
        ..cfg.session.clone()
    };
    Session::connect(conn, options).await.map_err(|e| {
        let e = cut_by_deadline(e, limit, cfg, Stage::Initialize);
        both_failed(&refused, e)
    })
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
