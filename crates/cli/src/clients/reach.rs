//! The tools of the servers a client's profiles serve, for `lifeline clients show`: each
//! server connected once with its own settings (`Target::from_server`, as `lifeline tools
//! NAME` connects), at most `AT_ONCE` at a time, each within the time given. A server that
//! cannot be reached is reported with why, and never holds the others up.

use crate::target::Target;
use lifeline_core::config::ServerConfig;
use lifeline_core::protocol::mcp::Tool;
use lifeline_core::protocol::revision::ProtocolChoice;
use lifeline_core::{Error, ErrorKind, SessionOptions, fmt_duration};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::{Instant, timeout, timeout_at};

/// How many servers are connected at once: each may be a process to start.
const AT_ONCE: usize = 4;

/// How long closing a session may take once its tools are in (a stdio server's shutdown
/// sequence is about 4 s).
const CLOSE_LIMIT: Duration = Duration::from_secs(6);

/// One server's tools, or why they are not known.
pub struct Reached {
    pub server: String,
    pub tools: Result<Vec<Tool>, Error>,
}

/// Each of `servers`' tools, in their order, each server given `limit` to connect and list.
pub async fn reach(servers: &[&ServerConfig], limit: Duration) -> Vec<Reached> {
    let gate = Arc::new(Semaphore::new(AT_ONCE));
    let mut set = JoinSet::new();
    for (i, server) in servers.iter().enumerate() {
        let target = Target::from_server(server);
        let protocol = server.protocol;
        let gate = gate.clone();
        set.spawn(async move {
            // The gate is never closed, so a turn always comes.
            let _turn = gate.acquire_owned().await;
            (i, list_once(target, protocol, limit).await)
        });
    }
    let mut found: Vec<Option<Result<Vec<Tool>, Error>>> = servers.iter().map(|_| None).collect();
    while let Some(done) = set.join_next().await {
        if let Ok((i, tools)) = done {
            found[i] = Some(tools);
        }
    }
    servers
        .iter()
        .zip(found)
        .map(|(server, tools)| Reached {
            server: server.name.clone(),
            tools: tools.unwrap_or_else(|| {
                Err(Error::new(
                    ErrorKind::Cancelled,
                    "the check of this server stopped before it answered",
                ))
            }),
        })
        .collect()
}

/// Connects to one server, lists its tools and closes, all of it before `limit` but the
/// close (bounded on its own).
async fn list_once(
    mut target: Target,
    protocol: ProtocolChoice,
    limit: Duration,
) -> Result<Vec<Tool>, Error> {
    let deadline = Instant::now() + limit;
    let late = || {
        Error::new(
            ErrorKind::Timeout,
            format!("no tool list within {}", fmt_duration(limit)),
        )
    };
    target.set_http_request_timeout(limit);
    let options = SessionOptions {
        request_timeout: limit,
        pinned: protocol.pinned(),
        ..SessionOptions::default()
    };
    let session = timeout_at(deadline, target.connect(protocol, options))
        .await
        .map_err(|_| late())??;
    let tools = timeout_at(deadline, session.list_tools())
        .await
        .unwrap_or_else(|_| Err(late()));
    let _ = timeout(CLOSE_LIMIT, session.close()).await;
    tools
}
