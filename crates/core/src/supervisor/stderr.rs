//! What each recent generation of a stdio server wrote to stderr, kept after its process
//! is gone: a server that crashes while starting says why only there. Bounded to the last
//! few generations, each tail already bounded by the transport.

use super::Connector;
use crate::transport::stdio::StderrTail;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// How many generations' tails are kept.
pub const KEPT_GENERATIONS: usize = 5;

/// Shared by a supervisor's actor (which records) and its handle (which reads).
#[derive(Clone, Default)]
pub(crate) struct StderrLog(Arc<Mutex<VecDeque<(u64, StderrTail)>>>);

impl StderrLog {
    /// Wraps a connector so that each connection it opens for `generation` has its stderr
    /// tail recorded.
    pub fn recording(&self, generation: u64, connector: Connector) -> Connector {
        let log = self.clone();
        Arc::new(move || {
            let conn = connector()?;
            if let Some(tail) = conn.transport.stderr_handle() {
                log.record(generation, tail);
            }
            Ok(conn)
        })
    }

    fn record(&self, generation: u64, tail: StderrTail) {
        let mut kept = self.0.lock().expect("stderr log lock");
        kept.retain(|(g, _)| *g != generation);
        kept.push_back((generation, tail));
        while kept.len() > KEPT_GENERATIONS {
            kept.pop_front();
        }
    }

    /// `(generation, scrubbed text)`, oldest generation first; empty tails are left out.
    pub fn tails(&self) -> Vec<(u64, String)> {
        let kept: Vec<(u64, StderrTail)> = self
            .0
            .lock()
            .expect("stderr log lock")
            .iter()
            .cloned()
            .collect();
        kept.into_iter()
            .map(|(g, t)| (g, t.text()))
            .filter(|(_, text)| !text.is_empty())
            .collect()
    }
}
