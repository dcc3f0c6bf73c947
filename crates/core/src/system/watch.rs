//! The process's watch on the machine (issue 29): a task that looks at the clocks every
//! `leap::LOOK_EVERY` and tells every supervisor when the machine slept, on one broadcast
//! channel. A process that supervises servers for hosts (the app, a bridge, `lifeline
//! serve`) starts it once (`start`), beside its tool pins; a supervisor in a process that
//! did not (a test, `lifeline watch`) hears nothing. The OS sources (logind, NetworkManager,
//! NSWorkspace, power broadcasts) will send on the same channel.

use super::SystemEvent;
use super::leap::{Clocks, LOOK_EVERY, Leap};
use std::sync::OnceLock;
use tokio::sync::broadcast;

/// Events a slow supervisor may fall behind by; a wake is one event.
const CAPACITY: usize = 16;

static SENDER: OnceLock<broadcast::Sender<SystemEvent>> = OnceLock::new();

/// What a supervisor listens to: `None` when this process does not watch the machine.
pub fn subscribe() -> Option<broadcast::Receiver<SystemEvent>> {
    SENDER.get().map(broadcast::Sender::subscribe)
}

/// Starts watching, once per process, on a task of the current runtime.
#[allow(clippy::disallowed_types)] // the leap detector reads the OS's clocks (`Clocks::now`)
pub fn start() {
    let mut first = false;
    let sender = SENDER.get_or_init(|| {
        first = true;
        broadcast::channel(CAPACITY).0
    });
    if !first {
        return;
    }
    let sender = sender.clone();
    tokio::spawn(async move {
        let origin = std::time::Instant::now();
        let mut leap = Leap::default();
        let mut tick = tokio::time::interval(LOOK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Some(slept) = leap.look(Clocks::now(origin)) {
                tracing::info!(
                    "the machine slept for {}; checking every server",
                    crate::fmt_duration(slept)
                );
                let _ = sender.send(SystemEvent::Awake { slept: Some(slept) });
            }
        }
    });
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_process_watches_once_and_its_supervisors_listen() {
        super::start();
        super::start();
        let mut rx = super::subscribe().expect("watching");
        assert!(rx.try_recv().is_err(), "nothing told between two looks");
    }
}
