//! Stderr tails: each generation that starts a process has its stderr tail recorded
//! (bounded by the transport, scrubbed with the connection's redactor when read), and the
//! last `STDERR_GENERATIONS` are kept past their processes for the detail panel and the
//! diagnostic bundle.

use super::Details;
use crate::events::Generation;
use crate::supervisor::Connector;
use serde::Serialize;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// The stderr a generation's process wrote, as kept (bounded, scrubbed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct GenerationStderr {
    pub generation: Generation,
    pub lines: Vec<String>,
    pub truncated: bool,
}

/// Generations whose stderr is kept: the current one and the four before it (the panel
/// shows two, the diagnostic bundle all).
const STDERR_GENERATIONS: usize = 5;

impl Details {
    /// The kept tails as text, oldest first, each read through its connection's redactor.
    pub(super) fn stderr_shown(&self) -> Vec<GenerationStderr> {
        self.stderr
            .iter()
            .map(|(generation, tail, redactor)| {
                let shown = tail.lines(redactor);
                GenerationStderr {
                    generation: *generation,
                    lines: shown.lines,
                    truncated: shown.truncated,
                }
            })
            .collect()
    }

    /// Changes whenever the newest process's stderr grows; `None` before any process.
    pub(super) fn stderr_grown(&self) -> Option<watch::Receiver<u64>> {
        self.stderr.back().map(|(_, tail, _)| tail.grown())
    }
}

/// Wraps a connector so that each process it starts has its stderr tail recorded under
/// `generation`, with the connection's redactor; only the last `STDERR_GENERATIONS` are
/// kept.
pub(super) fn keep_stderr(
    open: Connector,
    generation: Generation,
    details: Arc<Mutex<Details>>,
) -> Connector {
    Arc::new(move || {
        let conn = open()?;
        if let Some(tail) = conn.transport.stderr() {
            let mut details = details.lock().expect("details lock");
            details.stderr.retain(|(g, _, _)| *g != generation);
            details
                .stderr
                .push_back((generation, tail, conn.redactor.clone()));
            while details.stderr.len() > STDERR_GENERATIONS {
                details.stderr.pop_front();
            }
        }
        Ok(conn)
    })
}
