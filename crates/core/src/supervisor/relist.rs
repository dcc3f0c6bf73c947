//! Pacing of tool re-lists after `notifications/tools/list_changed`: one at a time, at
//! most one started per `MIN_INTERVAL` per server, and any number of notifications in
//! between coalesced into one more. A server that storms `list_changed` (or answers every
//! `tools/list` with another) costs one listing a second, not one per notification.
//! The actor owns the clock and the timer; this holds only the decisions.

use std::time::Duration;
use tokio::time::Instant;

/// The shortest time between the starts of two re-lists of one server. A person cannot
/// tell a tool list a second old from a fresh one; a server can send thousands of
/// notifications in that time.
pub(super) const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// Where the re-lists of the live generation stand.
#[derive(Debug, Default)]
pub(super) struct Relist {
    /// A re-list is in flight.
    running: bool,
    /// A change was announced since the last re-list started.
    pending: bool,
    last_start: Option<Instant>,
}

impl Relist {
    /// A change was announced: true when a re-list should start now (else it is due at
    /// `due`, or after the running one).
    pub(super) fn changed(&mut self, now: Instant) -> bool {
        self.pending = true;
        self.start(now)
    }

    /// The running re-list finished: true when another should start now.
    pub(super) fn finished(&mut self, now: Instant) -> bool {
        self.running = false;
        self.start(now)
    }

    /// When a pending re-list may start, for the actor's timer; `None` when none waits
    /// on the clock.
    pub(super) fn due(&self) -> Option<Instant> {
        if !self.pending || self.running {
            return None;
        }
        self.last_start.map(|t| t + MIN_INTERVAL)
    }

    /// Starts the pending re-list if it may start at `now` (true: the caller lists).
    pub(super) fn start(&mut self, now: Instant) -> bool {
        let paced = self.last_start.is_some_and(|t| now < t + MIN_INTERVAL);
        if !self.pending || self.running || paced {
            return false;
        }
        self.pending = false;
        self.running = true;
        self.last_start = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_storm_is_one_re_list_now_and_one_a_second_after() {
        let t0 = Instant::now();
        let mut r = Relist::default();
        assert!(r.changed(t0), "the first change lists at once");
        for _ in 0..1000 {
            assert!(!r.changed(t0), "one at a time");
        }
        assert_eq!(r.due(), None, "waiting for the running one");
        assert!(!r.finished(t0), "paced: not before a second has passed");
        assert_eq!(r.due(), Some(t0 + MIN_INTERVAL));
        assert!(!r.start(t0 + MIN_INTERVAL - Duration::from_millis(1)));
        assert!(r.start(t0 + MIN_INTERVAL), "the coalesced one");
        assert!(!r.finished(t0 + MIN_INTERVAL), "nothing more was announced");
        assert_eq!(r.due(), None);
        // A change long after the last re-list lists at once.
        assert!(r.changed(t0 + MIN_INTERVAL * 5));
    }
}
