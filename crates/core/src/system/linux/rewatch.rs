//! What the Linux sources do when a part of the OS they follow is missing or goes away: wait
//! before looking again (`Backoff`, 1 s doubling to 60 s), and say so once (`Said`): one line
//! when a part is missing or lost, naming what Lifeline falls back to, one when it is back.
//! Never an error: a machine without a system bus (a container, CI) is a machine Lifeline
//! runs on. Pure.

use std::time::Duration;

/// The first wait before a part that went is looked for again.
pub const FIRST: Duration = Duration::from_secs(1);
/// The longest; a part that stayed this long resets the wait to `FIRST`.
pub const CAP: Duration = Duration::from_secs(60);

/// How long to wait before looking again for something that went: doubling from `FIRST` to
/// `CAP` while it keeps going soon after it came, so that a bus or a service that restarts in
/// a loop is not a loop here too.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { next: FIRST }
    }
}

impl Backoff {
    /// The wait after something that lasted `lasted` (since it was found) went.
    pub fn after(&mut self, lasted: Duration) -> Duration {
        if lasted >= CAP {
            self.next = FIRST;
        }
        let wait = self.next;
        self.next = self.next.saturating_mul(2).min(CAP);
        wait
    }
}

/// A part of the OS a Linux source follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Bus,
    Logind,
    NetworkManager,
    Netlink,
    /// logind's delay inhibitor (a policy may refuse it).
    Inhibitor,
}

impl Part {
    /// It, in a sentence that says it went or came back.
    fn subject(self) -> &'static str {
        match self {
            Part::Bus => "the D-Bus system bus",
            Part::Logind => "logind",
            Part::NetworkManager => "NetworkManager",
            Part::Netlink => "netlink",
            Part::Inhibitor => "logind's delay inhibitor", // its lines are its own
        }
    }

    /// It, missing.
    fn absent(self) -> &'static str {
        match self {
            Part::Bus => "no D-Bus system bus",
            Part::Logind => "no logind on the system bus",
            Part::NetworkManager => "no NetworkManager on the system bus",
            Part::Netlink => "no route changes from netlink",
            Part::Inhibitor => "logind gave no delay inhibitor",
        }
    }

    /// What Lifeline goes by without it.
    fn fallback(self) -> &'static str {
        match self {
            Part::Bus => {
                "Lifeline notices sleep by the clock-leap detector and follows the network by \
                 netlink's routes"
            }
            Part::Logind => "Lifeline notices sleep by the clock-leap detector",
            Part::NetworkManager => "Lifeline follows the network by netlink's routes",
            Part::Netlink => "Lifeline notices a lost network only when connections fail",
            Part::Inhibitor => "a sleep is told as it begins and not held back for the hooks",
        }
    }
}

/// What has been said about each part: `None` before the first look.
#[derive(Debug, Default)]
pub struct Said {
    bus: Option<bool>,
    logind: Option<bool>,
    network_manager: Option<bool>,
    netlink: Option<bool>,
    inhibitor: Option<bool>,
}

impl Said {
    fn slot(&mut self, part: Part) -> &mut Option<bool> {
        match part {
            Part::Bus => &mut self.bus,
            Part::Logind => &mut self.logind,
            Part::NetworkManager => &mut self.network_manager,
            Part::Netlink => &mut self.netlink,
            Part::Inhibitor => &mut self.inhibitor,
        }
    }

    /// `part` is there or not, as just seen: the line to log, if any.
    pub fn seen(&mut self, part: Part, there: bool) -> Option<String> {
        let before = self.slot(part).replace(there);
        let on = match part {
            Part::Logind | Part::NetworkManager => " on the system bus",
            Part::Bus | Part::Netlink | Part::Inhibitor => "",
        };
        match (before, there) {
            (None | Some(true), false) if part == Part::Inhibitor => {
                Some(format!("{}: {}", part.absent(), part.fallback()))
            }
            (Some(false), true) if part == Part::Inhibitor => {
                Some("logind gives a delay inhibitor again".to_owned())
            }
            (None, false) => Some(format!("{}: {}", part.absent(), part.fallback())),
            (Some(true), false) => Some(format!(
                "{} went away: {} until it is back",
                part.subject(),
                part.fallback()
            )),
            (Some(false), true) => Some(format!("{} is back{on}", part.subject())),
            (None, true) | (Some(true), true) | (Some(false), false) => None,
        }
    }

    /// The bus is there, with logind and NetworkManager or without: one line for the three.
    pub fn connected(&mut self, logind: bool, network_manager: bool) -> Option<String> {
        let bus = self.seen(Part::Bus, true);
        let mut missing = Vec::new();
        for (part, there) in [
            (Part::Logind, logind),
            (Part::NetworkManager, network_manager),
        ] {
            let before = self.slot(part).replace(there);
            // Missing, and not yet said on this bus: a bus that is back says it again.
            if !there && (before != Some(false) || bus.is_some()) {
                missing.push(part);
            }
        }
        let (names, fallback) = match missing.as_slice() {
            [] => return bus,
            [one] => (one.subject().to_owned(), one.fallback()),
            _ => (
                "logind and no NetworkManager".to_owned(),
                Part::Bus.fallback(),
            ),
        };
        Some(match bus {
            None => format!("the system bus has no {names}: {fallback}"),
            Some(_) => format!("the D-Bus system bus is back, with no {names}: {fallback}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_to_a_minute_and_starts_again_after_a_minute_up() {
        let mut backoff = Backoff::default();
        // (how long it lasted, in seconds; the wait before looking again)
        let table = [
            (0, 1),
            (0, 2),
            (3, 4),
            (0, 8),
            (0, 16),
            (0, 32),
            (0, 60),
            (59, 60), // capped
            (60, 1),  // it stayed a minute: a new trouble
            (0, 2),
        ];
        for (i, (lasted, wait)) in table.into_iter().enumerate() {
            assert_eq!(
                backoff.after(Duration::from_secs(lasted)),
                Duration::from_secs(wait),
                "row {i}: lasted {lasted} s"
            );
        }
    }

    #[test]
    fn each_part_is_said_once_when_missing_or_lost_and_once_when_back() {
        use Part::*;
        enum Step {
            Seen(Part, bool),
            Connected(bool, bool),
        }
        use Step::*;
        let table: &[(Step, Option<&str>)] = &[
            (
                Seen(Bus, false),
                Some(
                    "no D-Bus system bus: Lifeline notices sleep by the clock-leap detector \
                     and follows the network by netlink's routes",
                ),
            ),
            (Seen(Bus, false), None), // every retry: nothing
            (
                Connected(true, false),
                Some(
                    "the D-Bus system bus is back, with no NetworkManager: Lifeline follows \
                     the network by netlink's routes",
                ),
            ),
            (Seen(NetworkManager, false), None),
            (
                Seen(NetworkManager, true),
                Some("NetworkManager is back on the system bus"),
            ),
            (
                Seen(Logind, false),
                Some(
                    "logind went away: Lifeline notices sleep by the clock-leap detector \
                     until it is back",
                ),
            ),
            (Seen(Logind, true), Some("logind is back on the system bus")),
            (
                Seen(Bus, false),
                Some(
                    "the D-Bus system bus went away: Lifeline notices sleep by the clock-leap \
                     detector and follows the network by netlink's routes until it is back",
                ),
            ),
            (Connected(true, true), Some("the D-Bus system bus is back")),
            (Connected(true, true), None),
            (Seen(Inhibitor, true), None),
            (
                Seen(Inhibitor, false),
                Some(
                    "logind gave no delay inhibitor: a sleep is told as it begins and not held \
                     back for the hooks",
                ),
            ),
            (Seen(Inhibitor, false), None),
            (
                Seen(Inhibitor, true),
                Some("logind gives a delay inhibitor again"),
            ),
            (Seen(Netlink, true), None),
            (
                Seen(Netlink, false),
                Some(
                    "netlink went away: Lifeline notices a lost network only when connections \
                     fail until it is back",
                ),
            ),
        ];
        let mut said = Said::default();
        for (i, (step, want)) in table.iter().enumerate() {
            let got = match *step {
                Seen(part, there) => said.seen(part, there),
                Connected(logind, nm) => said.connected(logind, nm),
            };
            assert_eq!(got.as_deref(), *want, "row {i}");
        }
    }

    #[test]
    fn a_bus_without_the_services_is_one_line() {
        let mut said = Said::default();
        assert_eq!(
            said.connected(false, false).as_deref(),
            Some(
                "the system bus has no logind and no NetworkManager: Lifeline notices sleep by \
                 the clock-leap detector and follows the network by netlink's routes"
            )
        );
        assert_eq!(
            said.connected(false, false),
            None,
            "a reconnect says it once"
        );
        assert_eq!(said.seen(Part::Logind, false), None);
    }
}
