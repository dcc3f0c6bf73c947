//! A suspend the OS did not announce (a container, no logind, a source that went away):
//! between two looks, a clock that keeps counting while the machine sleeps moved further than
//! the monotonic clock, which stops. On Linux that clock is CLOCK_BOOTTIME, which nothing sets;
//! elsewhere it is the wall clock, which a person or NTP can set: a step back is no sleep (the
//! look starts afresh from it), and a step forward past the threshold reads as one, which costs
//! one round of checks and nothing else. Pure but for `Clocks::now`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often a watcher looks at the clocks.
pub const LOOK_EVERY: Duration = Duration::from_secs(2);
/// How much more the counting clock must move than the monotonic one to be a sleep: more
/// than a busy machine delays a look, less than any sleep worth noticing.
pub const THRESHOLD: Duration = Duration::from_secs(4);

/// Two readings taken together: the monotonic clock, which stops while the machine sleeps,
/// and one that keeps counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clocks {
    pub monotonic: Duration,
    pub counting: Duration,
}

impl Clocks {
    /// The clocks now: CLOCK_MONOTONIC and CLOCK_BOOTTIME on Linux; elsewhere the time since
    /// `origin` and the wall clock. The OS's monotonic clock, not tokio's: a paused test
    /// clock beside the real wall clock would read as a sleep.
    #[allow(clippy::disallowed_types)]
    pub fn now(origin: std::time::Instant) -> Clocks {
        #[cfg(target_os = "linux")]
        {
            use rustix::time::{ClockId, clock_gettime};
            let d = |t: rustix::time::Timespec| {
                Duration::new(
                    t.tv_sec.max(0) as u64,
                    t.tv_nsec.clamp(0, 999_999_999) as u32,
                )
            };
            let _ = origin;
            Clocks {
                monotonic: d(clock_gettime(ClockId::Monotonic)),
                counting: d(clock_gettime(ClockId::Boottime)),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Clocks {
                monotonic: origin.elapsed(),
                counting: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default(),
            }
        }
    }
}

/// The detector: the last reading, and how much leap is a sleep.
#[derive(Debug, Clone)]
pub struct Leap {
    last: Option<Clocks>,
    threshold: Duration,
}

impl Default for Leap {
    fn default() -> Self {
        Leap::new(THRESHOLD)
    }
}

impl Leap {
    pub fn new(threshold: Duration) -> Leap {
        Leap {
            last: None,
            threshold,
        }
    }

    /// Takes a reading; how long the machine slept since the last one, if it did. The first
    /// reading only starts the count; a counting clock that went back starts it again.
    pub fn look(&mut self, now: Clocks) -> Option<Duration> {
        let last = self.last.replace(now)?;
        let ran = now.monotonic.saturating_sub(last.monotonic);
        let counted = now.counting.checked_sub(last.counting)?;
        let slept = counted.saturating_sub(ran);
        (slept >= self.threshold).then_some(slept)
    }
}

/// How long the machine slept between two readings taken either side of a sleep an OS source
/// announced: what the clock that counts a suspend moved past the one that does not.
pub fn slept(before: Clocks, after: Clocks) -> Duration {
    let ran = after.monotonic.saturating_sub(before.monotonic);
    after
        .counting
        .saturating_sub(before.counting)
        .saturating_sub(ran)
}

/// The wall clock as a `counting` reading, for a test or a source that has only it.
pub fn wall() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(monotonic: u64, counting: u64) -> Clocks {
        Clocks {
            monotonic: Duration::from_secs(monotonic),
            counting: Duration::from_secs(counting),
        }
    }

    #[test]
    fn a_sleep_is_the_counting_clock_leaping_past_the_monotonic_one() {
        let mut leap = Leap::default();
        // (monotonic, counting) readings and what each look says.
        let table: [((u64, u64), Option<u64>); 8] = [
            ((100, 5000), None),    // the first reading starts the count
            ((102, 5002), None),    // both moved 2 s: awake
            ((104, 5005), None),    // a late look, 1 s of drift: under the threshold
            ((106, 5011), Some(4)), // 6 s counted in 2 s: asleep 4 s, the threshold
            ((108, 5013), None),    // told once: the next look starts from the wake
            ((110, 4000), None),    // the wall clock set back: no sleep, the count starts again
            ((112, 4002), None),
            ((114, 7602), Some(3598)), // an hour's sleep
        ];
        for ((m, c), want) in table {
            assert_eq!(
                leap.look(at(m, c)),
                want.map(Duration::from_secs),
                "reading ({m}, {c})"
            );
        }
    }

    #[test]
    fn the_sleep_is_what_the_counting_clock_moved_past_the_monotonic_one() {
        let at = |monotonic: u64, counting: u64| Clocks {
            monotonic: Duration::from_millis(monotonic),
            counting: Duration::from_millis(counting),
        };
        // (before, after, slept), milliseconds
        let table = [
            ((1_000, 5_000), (1_300, 5_300), 0), // a suspend that failed at once
            ((1_000, 5_000), (1_400, 3_605_400), 3_600_000), // an hour
            ((1_000, 5_000), (1_400, 5_100), 0), // a clock that went back: none
        ];
        for (before, after, want) in table {
            assert_eq!(
                slept(at(before.0, before.1), at(after.0, after.1)),
                Duration::from_millis(want),
                "{before:?} → {after:?}"
            );
        }
    }

    #[test]
    #[allow(clippy::disallowed_types)] // `Clocks::now` reads the OS's clocks
    fn the_clocks_read_now_move_together_while_awake() {
        let origin = std::time::Instant::now();
        let mut leap = Leap::default();
        assert_eq!(leap.look(Clocks::now(origin)), None);
        assert_eq!(
            leap.look(Clocks::now(origin)),
            None,
            "no sleep between two looks"
        );
        assert!(wall() > Duration::from_secs(1_700_000_000));
    }
}
