//! What tests wait on (`test-support`): a server's snapshot, the recorder of recent events,
//! the restart count; each wait bounded by `PATIENCE`, failing with what it saw.

use super::{AppState, running, supervisor};
use lifeline_core::events::Event;
use std::time::Duration;

impl AppState {
    /// How long a test waits for the app to reach a state before it fails.
    const PATIENCE: Duration = Duration::from_secs(10);

    /// Resolves once `server`'s snapshot satisfies `done`; fails the test, showing the
    /// snapshot, if that takes longer than `PATIENCE`.
    pub async fn wait_for(
        &self,
        server: &str,
        done: impl FnMut(&lifeline_core::supervisor::Snapshot) -> bool,
    ) -> lifeline_core::supervisor::Snapshot {
        let fleet = self.fleet.read().await;
        let sup = supervisor(running(&fleet).expect("running"), server).expect("configured");
        tokio::time::timeout(Self::PATIENCE, sup.wait_for(done))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{server} did not reach the awaited state within {:?}: {:?}",
                    Self::PATIENCE,
                    sup.snapshot()
                )
            })
    }

    /// Resolves once the recorder of recent events (bundles, new subscribers), a task of
    /// its own, holds an event `done` accepts; woken by each event it records.
    pub async fn recorded(&self, mut done: impl FnMut(&Event) -> bool) {
        let mut recorded = self.bundle.recorded();
        let wait = recorded.wait_for(|_| self.bundle.recent(usize::MAX).iter().any(&mut done));
        match tokio::time::timeout(Self::PATIENCE, wait).await {
            Ok(Ok(_)) => {}
            Ok(Err(_)) => panic!("the event recorder ended without the awaited event"),
            Err(_) => panic!(
                "the awaited event was not recorded within {:?}; recorded: {:?}",
                Self::PATIENCE,
                self.bundle.recent(20)
            ),
        }
    }

    /// Resolves once the restart count has seen event `seq`.
    pub async fn tracked(&self, seq: u64) {
        let mut tracked = self.tracked.clone();
        let wait = tracked.wait_for(|s| *s >= seq);
        match tokio::time::timeout(Self::PATIENCE, wait).await {
            Ok(Ok(_)) => {}
            Ok(Err(_)) => panic!("the restart count stopped before event {seq}"),
            Err(_) => panic!(
                "the restart count did not see event {seq} within {:?} (it saw {})",
                Self::PATIENCE,
                *self.tracked.borrow()
            ),
        }
    }
}
