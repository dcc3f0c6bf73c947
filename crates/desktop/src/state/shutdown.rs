//! Stopping the app without losing its last events: the fleet stops, the bus is closed (it
//! has owners besides the fleet, so it would never end by itself), the recorder hands the
//! history what is left and the history writes it and closes — all within
//! `RECORDER_DRAIN`, past which the app ends anyway and says how many events the file lacks.

use super::{AppState, lock};
use std::time::Duration;

/// How long shutdown waits for the last events to reach the history file.
pub(super) const RECORDER_DRAIN: Duration = Duration::from_secs(2);

impl AppState {
    /// Stops every supervisor (bounded by the core), ends the subscriptions and kills the
    /// demo's fixtures. Safe to call twice.
    pub async fn shutdown(&self) {
        self.stopping.send_replace(true);
        for (_, task) in lock(&self.subscriptions).drain() {
            task.abort();
        }
        let fleet = self.fleet.write().await.take();
        if let Some(fleet) = fleet {
            fleet.stop().await;
        }
        // Every server has said `stopping`. Nothing else is worth recording: the bus ends
        // here, and every reader (the recorder first) gets what is left, then the end.
        let last = self.bus.close();
        self.finish_history(last).await;
        let fixtures = std::mem::take(&mut *lock(&self.fixtures));
        for mut child in fixtures {
            let _ = child.kill().await;
        }
    }

    /// Waits, at most `RECORDER_DRAIN`, for the recorder to hand the history the last
    /// event (`seq` `last`) and for the history to write it and close; past that, says how
    /// many of the last events the file does not have, and lets the app end without them.
    async fn finish_history(&self, last: u64) {
        let recorder = lock(&self.recorder).take();
        let history = self.history.clone();
        let finished = async move {
            if let Some(recorder) = recorder {
                let _ = recorder.await;
            }
            // `close` blocks on SQLite. On a thread of its own, not the blocking pool: the
            // runtime's end waits for that pool, and a file that never takes the last rows
            // must not keep the app from exiting.
            let (closed, done) = tokio::sync::oneshot::channel();
            let closing = std::thread::Builder::new()
                .name("lifeline-history-close".into())
                .spawn(move || {
                    history.close();
                    let _ = closed.send(());
                });
            match closing {
                Ok(_) => {
                    let _ = done.await;
                }
                Err(e) => tracing::warn!("history: not closed (no thread for it: {e})"),
            }
        };
        if tokio::time::timeout(RECORDER_DRAIN, finished)
            .await
            .is_err()
        {
            tracing::warn!(
                "{}",
                unrecorded(last, self.history.written_seq(), RECORDER_DRAIN)
            );
        }
    }
}

/// The warning of a shutdown that could not wait for the history: how many of the last
/// events (up to `last`) are not in the file, which holds them up to `written`.
fn unrecorded(last: u64, written: u64, waited: Duration) -> String {
    match last.saturating_sub(written) {
        0 => format!(
            "history: every event was recorded, but the file was not closed within {waited:?}"
        ),
        1 => format!(
            "history: the last event (#{last}) was not recorded: the history file did not \
             take it within {waited:?}"
        ),
        n => format!(
            "history: the last {n} events (#{}-#{last}) were not recorded: the history file \
             did not take them within {waited:?}",
            written + 1
        ),
    }
}

#[cfg(test)]
#[path = "shutdown_tests.rs"]
mod tests;
