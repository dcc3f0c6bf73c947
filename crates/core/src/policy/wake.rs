//! What a wake changes (issue 29): after the machine slept, or the network came back, a ready
//! connection is looked at once, soon, each server at its own moment within `PROBE_SPREAD` so
//! that twenty servers do not probe at one instant; and a wait that was running is what is
//! left of it once the sleep is taken off, since the monotonic clock the timers count stopped
//! while the machine slept. Pure.

use super::rng::Jitter;
use std::time::Duration;

/// Ready connections are probed within this much of a wake.
pub const PROBE_SPREAD: Duration = Duration::from_secs(2);

/// After a wake, or the network back, a remote server's failures spend nothing for this
/// long: Wi-Fi associates, DHCP answers and a VPN comes up within it, and until then a
/// failure says nothing about the server.
pub const WAKE_GRACE: Duration = Duration::from_secs(30);

/// While the network is gone, a remote server tries again this often, spending nothing: a
/// source may be wrong about the network, and a server on loopback does not need it.
pub const OFFLINE_RECHECK: Duration = Duration::from_secs(30);

/// When, after a wake, one server's probe goes: uniform over `[0, PROBE_SPREAD]`.
pub fn probe_delay(rng: &mut impl Jitter) -> Duration {
    let span = PROBE_SPREAD.as_nanos() + 1;
    let nanos = (span * u128::from(rng.next_u64())) >> 64;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// What is left of a wait that ends at `until` (monotonic) at `now`, once `slept` is taken
/// off; a wake whose sleep is not known (the network came back) leaves nothing: the wait
/// was for a network that is back.
pub fn left_after_sleep(until: Duration, now: Duration, slept: Option<Duration>) -> Duration {
    match slept {
        Some(slept) => until.saturating_sub(now).saturating_sub(slept),
        None => Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::rng::SeededRng;

    #[test]
    fn probes_spread_over_two_seconds() {
        let mut rng = SeededRng::new(7);
        let delays: Vec<Duration> = (0..1000).map(|_| probe_delay(&mut rng)).collect();
        assert!(delays.iter().all(|d| *d <= PROBE_SPREAD));
        let early = delays.iter().filter(|d| **d < PROBE_SPREAD / 2).count();
        assert!(
            (400..600).contains(&early),
            "uniform: {early} of 1000 in the first second"
        );
    }

    #[test]
    fn a_wait_loses_the_time_slept() {
        let s = Duration::from_secs;
        // (until, now, slept) → left
        let table = [
            ((30, 10, Some(5)), 15),  // 20 s left, 5 s of it slept through
            ((30, 10, Some(20)), 0),  // slept through all of it: now
            ((30, 10, Some(600)), 0), // and far past it
            ((30, 10, None), 0),      // the network is back: now
            ((30, 40, Some(1)), 0),   // already due
        ];
        for ((until, now, slept), left) in table {
            assert_eq!(
                left_after_sleep(s(until), s(now), slept.map(s)),
                s(left),
                "until {until}, now {now}, slept {slept:?}"
            );
        }
    }
}
