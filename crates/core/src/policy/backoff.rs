//! The reconnect curve: how long to wait after the n-th failure of an outage, with ±20 %
//! jitter from an injected source, capped; and how a server-mandated delay (Retry-After,
//! SSE `retry:`) combines with it — never shortened, never jittered.

use super::{ONE_MS, PolicyError, check_ms, check_not_below};
use crate::policy::rng::Jitter;
use std::time::Duration;

/// The longest round a person may configure. At the default 30 s cap, 1,000 attempts is
/// over 8 hours without reaching quarantine; more would mean "never quarantine", which is
/// what disabling the server is for.
const MAX_ATTEMPTS: u32 = 1000;

/// Exponential backoff, doubling from `initial` to `cap`, with a budget of `max_attempts`
/// attempts per round (a round exhausted moves the server to quarantine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    cap: Duration,
    max_attempts: u32,
}

impl Default for Backoff {
    /// 500 ms doubling to 30 s, 10 attempts (DESIGN.md). 500 ms: a local server that
    /// crashed once is usually back within a second, so the first retry should not make a
    /// person wait. 30 s: long enough that a dead remote is not hammered, short enough that
    /// recovery is noticed within half a minute. 10 attempts: 0.5+1+2+4+8+16+30·4 s ≈ 2.5 min
    /// of outage before quarantine, inside the 2–4 min that gRPC and client-go budgets span.
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(500),
            cap: Duration::from_secs(30),
            max_attempts: 10,
        }
    }
}

impl Backoff {
    /// `initial` is `reconnect.initialDelayMs`, `cap` is `reconnect.maxDelayMs`,
    /// `max_attempts` is `reconnect.maxAttempts`.
    pub fn try_new(
        initial: Duration,
        cap: Duration,
        max_attempts: u32,
    ) -> Result<Self, PolicyError> {
        check_ms("reconnect.initialDelayMs", initial, ONE_MS)?;
        check_not_below(
            "reconnect.maxDelayMs",
            cap,
            "reconnect.initialDelayMs",
            initial,
        )?;
        check_ms("reconnect.maxDelayMs", cap, ONE_MS)?;
        let attempts = |bound: String| PolicyError {
            field: "reconnect.maxAttempts",
            value: u64::from(max_attempts),
            bound,
        };
        if max_attempts < 1 {
            return Err(attempts("must be at least 1".into()));
        }
        if max_attempts > MAX_ATTEMPTS {
            return Err(attempts(format!("must be at most {MAX_ATTEMPTS}")));
        }
        Ok(Backoff {
            initial,
            cap,
            max_attempts,
        })
    }

    pub fn initial(&self) -> Duration {
        self.initial
    }

    /// The longest unjittered wait; a jittered one is at most `cap · 1.2`.
    pub fn cap(&self) -> Duration {
        self.cap
    }

    /// Attempts in one round before quarantine.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// How long a connection must stay up to count as recovered: it resets the attempt
    /// budget and lowers the quarantine level by one. Equal to the cap (DESIGN.md), so a
    /// crash loop whose connects briefly succeed cannot launder its budget: it would have to
    /// stay up longer than the longest wait it is spared.
    pub fn stability_window(&self) -> Duration {
        self.cap
    }

    /// The unjittered wait after `failed_attempts` failures in this outage:
    /// `min(initial · 2^(failed_attempts − 1), cap)`. Zero failures read as one: the policy
    /// never asks for an immediate retry; a caller that wants one skips the wait itself.
    pub fn base_delay(&self, failed_attempts: u32) -> Duration {
        let doublings = failed_attempts.saturating_sub(1);
        let cap = self.cap.as_nanos();
        // Past 63 doublings any valid initial (≥ 1 ms) is far beyond any valid cap (≤ 1 d).
        let base = if doublings < 64 {
            self.initial.as_nanos().saturating_mul(1 << doublings)
        } else {
            cap
        };
        nanos(base.min(cap))
    }

    /// The wait before the next attempt after `failed_attempts` failures in this outage: the
    /// base delay with uniform ±20 % jitter (gRPC's connection-backoff spread, which makes
    /// supervisors that failed together disperse). Always within `[0.8·base, 1.2·base]`, so
    /// never above `cap · 1.2`.
    pub fn delay(&self, failed_attempts: u32, rng: &mut impl Jitter) -> Duration {
        jittered(self.base_delay(failed_attempts), rng)
    }

    /// How widely the first reconnect after the loss of a *stable* connection is spread:
    /// `min(8 · initial, cap)`, 4 s by default. Such a loss is often shared (a server
    /// restart ends every client's stream at the same instant), and 1,000 supervisors
    /// reconnecting at once were 8–19 % of the attempts in one 100 ms window (issue 6).
    /// Keeping every 100 ms under 5 % needs at least 2 s of uniform spread, and 1,000 random
    /// draws clump to about 1.6 times their mean in the busiest window, so 4 s (about 4 %).
    /// Derived from the curve rather than a new tunable, like the stability window: it is
    /// the fourth step of the curve (0.5, 1, 2, 4 s), never longer than the cap, and a
    /// lone loss still reconnects in 2 s on average, sooner than a browser's EventSource
    /// (Chrome waits 3 s) or the first retry after a failure at that point of the curve.
    pub fn reconnect_spread(&self) -> Duration {
        nanos(
            self.initial
                .as_nanos()
                .saturating_mul(8)
                .min(self.cap.as_nanos()),
        )
    }

    /// The wait before the first reconnect after a stable connection was lost: full jitter
    /// (AWS's "full jitter", gRPC's retry policy), uniform in `[0, reconnect_spread]`, so
    /// supervisors that lost their connections together reconnect spread over the window.
    /// The midpoint of the jitter source (NoJitter) maps to exactly half the spread.
    pub fn first_reconnect_delay(&self, rng: &mut impl Jitter) -> Duration {
        let span = self.reconnect_spread().as_nanos() + 1;
        nanos((span * u128::from(rng.next_u64())) >> 64)
    }

    /// The wait when the server asked for one (Retry-After, SSE `retry:`): the longer of the
    /// two. A server's value is never shortened and, when it wins, used exactly: jitter
    /// never pulls a wait below what the server asked for. It is not capped either; the
    /// establishment deadline bounds a long one (`Deadline::admits_wait`).
    pub fn server_mandated(&self, backoff: Duration, server: Option<Duration>) -> Duration {
        match server {
            Some(server) if server >= backoff => server,
            _ => backoff,
        }
    }
}

/// `base` with uniform ±20 % jitter: within `[0.8·base, 1.2·base]`, and exactly `base` for
/// the midpoint of the jitter source (NoJitter). Every jittered wait of the policy is this.
pub(crate) fn jittered(base: Duration, rng: &mut impl Jitter) -> Duration {
    let base = base.as_nanos();
    let fifth = base / 5;
    let low = base - fifth;
    // 2·fifth + 1 values, so the midpoint maps to exactly `base`; multiply-shift keeps the
    // spread uniform without modulo bias.
    let span = 2 * fifth + 1;
    let offset = (span * u128::from(rng.next_u64())) >> 64;
    nanos(low + offset)
}

fn nanos(n: u128) -> Duration {
    Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX))
}

#[cfg(test)]
#[path = "backoff_tests.rs"]
mod tests;
