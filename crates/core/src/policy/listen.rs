//! When the stateless revision's `subscriptions/listen` stream is opened again after it
//! ended: 1 s doubling to 60 s while it keeps ending quickly, back to 1 s once one stayed
//! open a minute, each wait with ±20 % jitter from a seeded source. The session sleeps
//! exactly what `ListenRetry::after_end` returns; it decides nothing itself.

use super::backoff::jittered;
use super::rng::Jitter;
use std::time::Duration;

/// The first wait after the stream ended. A stream that ends once (a proxy's idle timeout,
/// a server restart) is back within about a second; the connection itself is fine, only
/// change notifications pause.
pub const FIRST: Duration = Duration::from_secs(1);

/// The longest wait, and how long a stream must stay open for the next end to count as a
/// first one again. A server that closes every stream at once costs one request a minute;
/// change notifications are a convenience (a health ping still watches the connection),
/// so a minute late is acceptable, while a tighter loop would be a request storm.
pub const MAX: Duration = Duration::from_secs(60);

/// The retry schedule of one session's listen stream: how many times in a row it ended
/// before it had been open `MAX`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenRetry {
    quick_ends: u32,
}

impl ListenRetry {
    pub fn new() -> Self {
        ListenRetry::default()
    }

    /// The stream ended after it had been open `open_for`: the wait before opening it
    /// again. The n-th end in a row waits `min(FIRST · 2^(n−1), MAX)` with ±20 % jitter
    /// (the supervisor's spread, so sessions that lost their streams together do not all
    /// ask again at once); a stream that was open `MAX` or longer starts the count over.
    pub fn after_end(&mut self, open_for: Duration, rng: &mut impl Jitter) -> Duration {
        if open_for >= MAX {
            self.quick_ends = 0;
        }
        self.quick_ends = self.quick_ends.saturating_add(1);
        jittered(base_delay(self.quick_ends), rng)
    }
}

/// The unjittered wait after the n-th quick end in a row (n ≥ 1; 0 reads as 1).
pub fn base_delay(quick_ends: u32) -> Duration {
    // 2^6 s is past the cap already; fewer doublings keep the multiplication small.
    let doublings = quick_ends.saturating_sub(1).min(6);
    (FIRST * (1 << doublings)).min(MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::rng::{NoJitter, SeededRng};

    const S: fn(u64) -> Duration = Duration::from_secs;

    /// The waits after streams that were open for `open_for` each, in order.
    fn schedule(open_for: &[Duration], rng: &mut impl Jitter) -> Vec<Duration> {
        let mut retry = ListenRetry::new();
        open_for.iter().map(|&o| retry.after_end(o, rng)).collect()
    }

    #[test]
    fn the_curve_doubles_from_one_second_to_a_minute() {
        let check = |n: u32, secs: u64| assert_eq!(base_delay(n), S(secs), "end {n}");
        check(0, 1);
        check(1, 1);
        check(2, 2);
        check(3, 4);
        check(6, 32);
        check(7, 60);
        check(8, 60);
        check(u32::MAX, 60);
        let quick = [Duration::ZERO; 9];
        assert_eq!(
            schedule(&quick, &mut NoJitter),
            [1, 2, 4, 8, 16, 32, 60, 60, 60].map(S)
        );
    }

    #[test]
    fn a_stream_open_a_minute_starts_the_count_over() {
        let ends = [S(0), S(0), S(0), S(59), S(60), S(5), S(3600)];
        assert_eq!(
            schedule(&ends, &mut NoJitter),
            [1, 2, 4, 8, 1, 2, 1].map(S),
            "59 s is still quick; 60 s and more is not"
        );
    }

    #[test]
    fn a_fixed_seed_gives_an_exact_jittered_schedule() {
        let quick = [Duration::ZERO; 8];
        let got = schedule(&quick, &mut SeededRng::new(42));
        let expect = [
            1_096_625_952,
            1_727_928_314,
            3_645_761_808,
            7_501_410_293,
            13_043_393_078,
            36_713_319_380,
            53_241_724_649,
            67_215_165_041,
        ];
        assert_eq!(got, expect.map(Duration::from_nanos));
        for (d, base) in got.iter().zip([1, 2, 4, 8, 16, 32, 60, 60].map(S)) {
            assert!(
                *d >= base * 4 / 5 && *d <= base * 6 / 5,
                "{d:?} vs {base:?}"
            );
        }
        assert_eq!(got, schedule(&quick, &mut SeededRng::new(42)));
        assert_ne!(got, schedule(&quick, &mut SeededRng::new(43)));
    }

    #[test]
    fn sessions_that_lose_their_streams_together_spread_out() {
        // 1,000 sessions (seeds 1..=1000) whose streams ended at once: the first reopen
        // spans most of [0.8 s, 1.2 s] and no 10 ms holds more than 5 % of them.
        let mut at: Vec<u128> = (1..=1000)
            .map(|seed| {
                ListenRetry::new()
                    .after_end(Duration::ZERO, &mut SeededRng::new(seed))
                    .as_millis()
            })
            .collect();
        at.sort_unstable();
        assert!(at[0] >= 800 && at[999] <= 1200, "{} {}", at[0], at[999]);
        assert!(at[0] < 810 && at[999] > 1190, "{} {}", at[0], at[999]);
        let busiest = (0..at.len())
            .map(|i| at[i..].iter().take_while(|&&t| t < at[i] + 10).count())
            .max()
            .unwrap_or(0);
        assert!(busiest <= 50, "{busiest}");
    }
}
