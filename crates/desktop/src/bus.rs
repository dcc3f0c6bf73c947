//! Reading the core's event bus in the shell: every event in order, a lag logged and
//! skipped (the consumer sees the gap in `seq`).

use lifeline_core::events::Event;
use tokio::sync::broadcast::{self, error::RecvError};

/// Hands every event to `sink` in order. A reader that fell behind the bus skips what it
/// lost and goes on; the consumer sees the gap in `seq` and takes a new snapshot.
pub async fn forward(mut events: broadcast::Receiver<Event>, mut sink: impl FnMut(Event) -> bool) {
    loop {
        match events.recv().await {
            Ok(event) => {
                if !sink(event) {
                    return;
                }
            }
            Err(RecvError::Lagged(n)) => {
                tracing::warn!("a UI subscriber fell {n} events behind; it sees the gap in seq")
            }
            Err(RecvError::Closed) => return,
        }
    }
}
