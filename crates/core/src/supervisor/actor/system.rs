//! What happened to the machine (issue 29, `crate::system`): each event is told on this
//! server's timeline and goes to the pure step (`Input::Machine`, `state/wake.rs`), whose
//! `Effect::Probe` comes back here as one ping of the ready connection, for which one miss
//! is a loss. Going to sleep, every request in flight on the live session fails with a cause
//! that says so (`Error::slept`): its answer would never come, and the connection is not
//! to blame for it.

use super::Actor;
use crate::events::{EventBody, Generation, SystemChange, millis};
use crate::supervisor::state::{Input, Machine, Status};
use crate::system::SystemEvent;

impl Actor {
    /// After a wake, the ready connection of `generation` is pinged once; one miss is then
    /// enough to call it lost: a connection silent after the machine slept is most likely
    /// gone, and the host should not wait out a second ping for it.
    pub(super) fn wake_probe(&mut self, generation: Generation) {
        let live = self.live.as_ref().map(|l| l.generation) == Some(generation);
        if live && !self.pinging && matches!(self.state.status, Status::Ready { .. }) {
            self.ping_misses = self.ping_misses.max(1);
            self.ping();
        }
    }

    /// What happened to the machine: told on this server's timeline, and to the step.
    pub(super) fn system(&mut self, event: SystemEvent) {
        let (change, slept, input) = match event {
            SystemEvent::Sleeping => (SystemChange::Sleeping, None, Machine::Sleeping),
            SystemEvent::Awake { slept } => (SystemChange::Awake, slept, Machine::Woke { slept }),
            SystemEvent::Offline => (SystemChange::Offline, None, Machine::Offline),
            SystemEvent::Online => (SystemChange::Online, None, Machine::Online),
        };
        let body = EventBody::System {
            change,
            slept_ms: slept.map(millis),
        };
        self.bus.emit(&self.cfg.name, self.state.generation, body);
        if change == SystemChange::Sleeping
            && let Some(live) = &self.live
        {
            let n = live.session.interrupt_for_sleep();
            if n > 0 {
                tracing::info!(
                    "{}: {n} request(s) in flight ended by the machine's sleep",
                    self.cfg.name
                );
            }
        }
        self.feed(Input::Machine(input));
    }
}

/// The machine's next event (`system::watch`); pending forever in a process that does not
/// watch it. A supervisor that fell behind takes the events it still has.
pub(super) async fn told(
    system: &mut Option<tokio::sync::broadcast::Receiver<crate::system::SystemEvent>>,
) -> Option<crate::system::SystemEvent> {
    use tokio::sync::broadcast::error::RecvError;
    if let Some(rx) = system {
        loop {
            match rx.recv().await {
                Ok(event) => return Some(event),
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => break,
            }
        }
    }
    *system = None;
    std::future::pending().await
}
