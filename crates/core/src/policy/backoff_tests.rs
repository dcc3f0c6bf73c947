//! The backoff curve with exact values, its jitter bounds (fixed seeds, every seed, and
//! properties), validation, server-mandated delays and the dispersion of many supervisors.

use super::*;
use crate::policy::rng::{NoJitter, SeededRng};
use proptest::prelude::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn the_unjittered_curve_doubles_to_the_cap() {
    let b = Backoff::default();
    let check = |n: u32, expect_ms: u64| {
        assert_eq!(b.base_delay(n), MS(expect_ms), "after {n} failures");
        assert_eq!(
            b.delay(n, &mut NoJitter),
            MS(expect_ms),
            "after {n} failures"
        );
    };
    check(0, 500);
    check(1, 500);
    check(2, 1_000);
    check(3, 2_000);
    check(4, 4_000);
    check(5, 8_000);
    check(6, 16_000);
    check(7, 30_000);
    check(10, 30_000);
    check(64, 30_000);
    check(u32::MAX, 30_000);
    assert_eq!(b.max_attempts(), 10);
    assert_eq!(b.cap(), MS(30_000));
    assert_eq!(b.stability_window(), MS(30_000));
    assert_eq!(b.initial(), MS(500));
}

#[test]
fn a_fixed_seed_gives_a_fixed_schedule() {
    // Pinned so a change to the jitter arithmetic is a visible, reviewed change.
    let b = Backoff::default();
    let mut rng = SeededRng::new(42);
    let got: Vec<u128> = (1..=10).map(|n| b.delay(n, &mut rng).as_millis()).collect();
    assert_eq!(
        got,
        [
            548, 863, 1822, 3750, 6521, 18_356, 26_620, 33_607, 28_079, 31_421
        ]
    );
}

#[test]
fn every_seed_stays_within_twenty_percent() {
    let b = Backoff::default();
    for seed in 0..200 {
        let mut rng = SeededRng::new(seed);
        for n in [1, 2, 3, 7, 10, 1_000, u32::MAX] {
            let base = b.base_delay(n).as_nanos();
            let d = b.delay(n, &mut rng).as_nanos();
            assert!(
                10 * d >= 8 * base && 10 * d <= 12 * base,
                "seed {seed}, n {n}"
            );
            assert!(d <= b.cap().as_nanos() * 12 / 10);
        }
    }
}

#[test]
fn the_extremes_of_the_jitter_source_are_the_extremes_of_the_range() {
    struct Fixed(u64);
    impl Jitter for Fixed {
        fn next_u64(&mut self) -> u64 {
            self.0
        }
    }
    let b = Backoff::default();
    let check = |r: u64, n: u32, expect_ms: u64| {
        assert_eq!(b.delay(n, &mut Fixed(r)), MS(expect_ms), "r {r}, n {n}");
    };
    check(0, 1, 400);
    check(u64::MAX, 1, 600);
    check(0, u32::MAX, 24_000);
    check(u64::MAX, u32::MAX, 36_000);
}

#[test]
fn bad_values_name_the_field_the_value_and_the_bound() {
    let check = |initial: u64, cap: u64, attempts: u32, expect: &str| {
        let got = Backoff::try_new(MS(initial), MS(cap), attempts).map_err(|e| e.to_string());
        assert_eq!(got, Err(expect.to_owned()));
    };
    check(
        0,
        30_000,
        10,
        "reconnect.initialDelayMs = 0 must be at least 1 ms",
    );
    check(
        86_400_001,
        86_400_001,
        10,
        "reconnect.initialDelayMs = 86400001 must be at most 86400000 ms (1 d)",
    );
    check(
        500,
        100,
        10,
        "reconnect.maxDelayMs = 100 must be at least reconnect.initialDelayMs (500)",
    );
    check(
        500,
        86_400_001,
        10,
        "reconnect.maxDelayMs = 86400001 must be at most 86400000 ms (1 d)",
    );
    check(
        500,
        30_000,
        0,
        "reconnect.maxAttempts = 0 must be at least 1",
    );
    check(
        500,
        30_000,
        1001,
        "reconnect.maxAttempts = 1001 must be at most 1000",
    );
    let ok = Backoff::try_new(MS(1), MS(1), 1).expect("smallest valid");
    assert_eq!(ok.delay(u32::MAX, &mut NoJitter), MS(1));
    assert_eq!(
        Backoff::try_new(MS(500), MS(30_000), 10),
        Ok(Backoff::default())
    );
}

#[test]
fn a_server_mandated_delay_is_used_exactly_when_it_is_longer() {
    let b = Backoff::default();
    let check = |backoff: u64, server: Option<u64>, expect: u64| {
        assert_eq!(b.server_mandated(MS(backoff), server.map(MS)), MS(expect));
    };
    check(500, None, 500);
    check(500, Some(2_000), 2_000);
    check(2_000, Some(500), 2_000);
    check(500, Some(0), 500);
    check(30_000, Some(3_600_000), 3_600_000);
}

/// The most of `times` that fall in any window a tenth of their spread (max − min) wide.
fn densest_tenth(times: &[Duration]) -> usize {
    let mut sorted: Vec<u128> = times.iter().map(Duration::as_nanos).collect();
    sorted.sort_unstable();
    let window = (sorted[sorted.len() - 1] - sorted[0]) / 10;
    (0..sorted.len())
        .map(|i| sorted[i..].partition_point(|&t| t <= sorted[i] + window))
        .max()
        .unwrap_or(0)
}

#[test]
fn supervisors_that_fail_together_disperse() {
    // gRPC: "connection backoffs started at the same time disperse". 1,000 supervisors
    // fail at t = 0 and keep failing. For every attempt of the round, no window of 10 %
    // of the spread of their attempt times holds more than 25 % of them (a sum of
    // uniform waits bunches toward its middle: attempt 10 measures 241 with these
    // seeds); each single wait is spread near-uniformly (≤ 15 %); and the mean stays
    // within 2 % of nominal, so together they do not attempt more often than the curve.
    let b = Backoff::default();
    let mut rngs: Vec<SeededRng> = (0..1000).map(SeededRng::new).collect();
    let mut at = vec![Duration::ZERO; 1000];
    let mut nominal = Duration::ZERO;
    for n in 1..=b.max_attempts() {
        nominal += b.base_delay(n);
        let waits: Vec<Duration> = rngs.iter_mut().map(|rng| b.delay(n, rng)).collect();
        for (t, wait) in at.iter_mut().zip(&waits) {
            *t += *wait;
        }
        let (attempts, single) = (densest_tenth(&at), densest_tenth(&waits));
        assert!(
            attempts <= 250,
            "attempt {n}: {attempts} of 1000 in one window"
        );
        assert!(single <= 150, "wait {n}: {single} of 1000 in one window");
        let mean = at.iter().sum::<Duration>() / 1000;
        let off = mean.abs_diff(nominal);
        assert!(
            off * 50 <= nominal,
            "attempt {n}: mean {mean:?}, nominal {nominal:?}"
        );
    }
}

proptest! {
    #[test]
    fn delay_is_within_twenty_percent_of_the_capped_base(
        initial_ms in 1u64..=86_400_000,
        extra_ms in 0u64..=86_400_000,
        n in any::<u32>(),
        seed in any::<u64>(),
    ) {
        let cap_ms = (initial_ms + extra_ms).min(86_400_000);
        let b = Backoff::try_new(MS(initial_ms), MS(cap_ms), 10).unwrap();
        // An independent statement of the curve: double, clamp, at most 64 times.
        let base = (1..n).take(64).fold(MS(initial_ms), |d, _| (d * 2).min(MS(cap_ms)));
        let (base, d) = (base.as_nanos(), b.delay(n, &mut SeededRng::new(seed)).as_nanos());
        prop_assert!(10 * d >= 8 * base, "{d} < 0.8 · {base}");
        prop_assert!(10 * d <= 12 * base, "{d} > 1.2 · {base}");
        prop_assert!(10 * d <= 12 * MS(cap_ms).as_nanos());
    }

    #[test]
    fn a_server_mandated_delay_is_never_shortened(
        backoff_ms in 0u64..=u64::MAX / 2_000_000,
        server_ms in proptest::option::of(0u64..=u64::MAX / 2_000_000),
    ) {
        let got = Backoff::default().server_mandated(MS(backoff_ms), server_ms.map(MS));
        prop_assert!(got >= MS(backoff_ms));
        if let Some(server) = server_ms.map(MS) {
            prop_assert!(got >= server);
            prop_assert!(got == server || got == MS(backoff_ms));
        }
    }
}

#[test]
fn the_first_reconnect_after_a_stable_loss_is_spread_over_eight_initial_delays_at_most_the_cap() {
    let check = |initial: u64, cap: u64, spread: u64| {
        let b = Backoff::try_new(MS(initial), MS(cap), 10).unwrap();
        assert_eq!(b.reconnect_spread(), MS(spread), "{initial} ms to {cap} ms");
        // Full jitter: the extremes of the source are 0 and the whole spread, the
        // midpoint exactly half of it.
        struct Fixed(u64);
        impl Jitter for Fixed {
            fn next_u64(&mut self) -> u64 {
                self.0
            }
        }
        assert_eq!(b.first_reconnect_delay(&mut Fixed(0)), Duration::ZERO);
        assert_eq!(b.first_reconnect_delay(&mut Fixed(u64::MAX)), MS(spread));
        assert_eq!(b.first_reconnect_delay(&mut NoJitter), MS(spread) / 2);
    };
    check(500, 30_000, 4000);
    check(1000, 60_000, 8000);
    check(500, 1000, 1000);
    check(1, 1, 1);
}
