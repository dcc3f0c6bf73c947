//! The establishment deadline: one limit over every stage and attempt of bringing a server
//! up (spawn or connect, the legacy `endpoint` event, discovery, initialize, tools/list, and
//! the waits between attempts). Every stage gets `min(stage limit, remaining)`, and a wait
//! that would cross the deadline fails at once instead of sleeping past it. The limit itself
//! (`timeouts.establishMs`) is validated where the config is read (`config::validate`).

use crate::error::{Error, ErrorKind, Phase};
use std::fmt;
use std::time::Duration;

/// One establishment's deadline, fixed when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    started_at: Duration,
    limit: Duration,
}

impl Deadline {
    /// 60 s (DESIGN.md): a cold `npx` download plus initialize fits; a hang is noticed
    /// within a minute.
    pub const DEFAULT_LIMIT: Duration = Duration::from_secs(60);

    /// `now` is time since the caller's epoch; `limit` is the establish limit
    /// (`timeouts.establishMs`, `DEFAULT_LIMIT` unless configured).
    pub fn starting_at(now: Duration, limit: Duration) -> Self {
        Deadline {
            started_at: now,
            limit,
        }
    }

    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// When the deadline passes, on the caller's clock (saturating).
    pub fn expires_at(&self) -> Duration {
        self.started_at.saturating_add(self.limit)
    }

    /// Time left; never more than the limit, even for a `now` before the start.
    pub fn remaining(&self, now: Duration) -> Duration {
        self.expires_at().saturating_sub(now).min(self.limit)
    }

    /// How long a stage may take: `min(stage_limit, remaining)`, or an error when nothing
    /// remains.
    pub fn stage_limit(
        &self,
        stage_limit: Duration,
        now: Duration,
    ) -> Result<Duration, DeadlineExceeded> {
        let remaining = self.remaining(now);
        if remaining.is_zero() {
            return Err(self.exceeded(remaining, None));
        }
        Ok(stage_limit.min(remaining))
    }

    /// Whether a wait of `delay` starting at `now` leaves time for the attempt after it. A
    /// wait that ends exactly at the deadline is refused: the attempt would get no time.
    pub fn admits_wait(&self, delay: Duration, now: Duration) -> bool {
        delay < self.remaining(now)
    }

    /// `admits_wait` with the error to fail with at once when it does not.
    pub fn admit_wait(&self, delay: Duration, now: Duration) -> Result<(), DeadlineExceeded> {
        let remaining = self.remaining(now);
        if delay < remaining {
            return Ok(());
        }
        Err(self.exceeded(remaining, Some(delay)))
    }

    fn exceeded(&self, remaining: Duration, wait: Option<Duration>) -> DeadlineExceeded {
        DeadlineExceeded {
            limit: self.limit,
            remaining,
            wait,
        }
    }
}

/// The establishment deadline passed, or a wait would have crossed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineExceeded {
    /// The deadline's full length, which the message names.
    pub limit: Duration,
    /// What was left when the check was made.
    pub remaining: Duration,
    /// The wait that was refused, if this was one.
    pub wait: Option<Duration>,
}

/// A duration exactly, as the config writes it: "60 s", "1500 ms". The deadline error
/// names its values precisely, which `fmt_duration`'s rounding ("1 min" for 90 s) would not.
fn exact(d: Duration) -> String {
    let ms = super::millis(d);
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

impl fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let limit = exact(self.limit);
        match self.wait {
            None => write!(
                f,
                "the establishment deadline of {limit} passed before the connection was ready"
            ),
            Some(wait) => write!(
                f,
                "waiting {} would cross the establishment deadline of {limit} ({} left), so \
                 the attempt fails now",
                exact(wait),
                exact(self.remaining)
            ),
        }
    }
}

impl std::error::Error for DeadlineExceeded {}

impl From<DeadlineExceeded> for Error {
    fn from(e: DeadlineExceeded) -> Self {
        Error::new(ErrorKind::Timeout, e.to_string()).with(|c| c.phase = Some(Phase::Connect))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn stages_get_the_smaller_of_their_limit_and_what_remains() {
        let d = Deadline::starting_at(S(100), Deadline::DEFAULT_LIMIT);
        let check = |stage: u64, now: u64, expect: Result<u64, ()>| {
            let got = d
                .stage_limit(S(stage), S(now))
                .map(|l| l.as_secs())
                .map_err(|_| ());
            assert_eq!(got, expect, "stage {stage} at {now}");
        };
        check(30, 100, Ok(30));
        check(30, 140, Ok(20));
        check(30, 159, Ok(1));
        check(30, 160, Err(()));
        check(30, 1_000, Err(()));
        check(90, 50, Ok(60));
        assert_eq!(d.expires_at(), S(160));
        assert_eq!(d.remaining(S(130)), S(30));
        assert_eq!(d.remaining(S(0)), S(60));
        assert_eq!(d.limit(), S(60));
    }

    #[test]
    fn a_wait_that_would_cross_the_deadline_is_refused() {
        let d = Deadline::starting_at(S(0), S(60));
        let check = |delay: u64, now: u64, expect: bool| {
            assert_eq!(
                d.admits_wait(S(delay), S(now)),
                expect,
                "wait {delay} at {now}"
            );
            assert_eq!(d.admit_wait(S(delay), S(now)).is_ok(), expect);
        };
        check(0, 0, true);
        check(59, 0, true);
        check(60, 0, false);
        check(10, 49, true);
        check(11, 49, false);
        check(0, 60, false);
        check(u64::MAX, 0, false);
    }

    #[test]
    fn the_error_names_the_deadline_and_its_value() {
        let d = Deadline::starting_at(S(0), S(60));
        let check = |e: DeadlineExceeded, expect: &str| {
            let e = Error::from(e);
            assert_eq!(e.kind(), ErrorKind::Timeout);
            assert_eq!(e.context().phase, Some(Phase::Connect));
            assert_eq!(e.message(), expect);
        };
        check(
            d.stage_limit(S(30), S(61)).unwrap_err(),
            "the establishment deadline of 60 s passed before the connection was ready",
        );
        check(
            d.admit_wait(S(90), S(40)).unwrap_err(),
            "waiting 90 s would cross the establishment deadline of 60 s (20 s left), so the \
             attempt fails now",
        );
        check(
            Deadline::starting_at(S(0), Duration::from_millis(1500))
                .admit_wait(Duration::from_millis(1499), Duration::from_millis(1))
                .unwrap_err(),
            "waiting 1499 ms would cross the establishment deadline of 1500 ms (1499 ms left), \
             so the attempt fails now",
        );
    }

    proptest! {
        #[test]
        fn no_stage_outlives_the_limit_or_what_remains(
            start in 0u64..=u64::MAX / 4,
            limit in 1u64..=86_400_000,
            now in 0u64..=u64::MAX / 4,
            stage in 0u64..=86_400_000,
            delay in 0u64..=u64::MAX / 4,
        ) {
            let ms = Duration::from_millis;
            let d = Deadline::starting_at(ms(start), ms(limit));
            let remaining = d.remaining(ms(now));
            prop_assert!(remaining <= ms(limit));
            prop_assert!(ms(now) + remaining <= d.expires_at().max(ms(now)));
            match d.stage_limit(ms(stage), ms(now)) {
                Ok(l) => prop_assert!(l <= ms(stage) && l <= remaining),
                Err(e) => prop_assert!(remaining.is_zero() && e.limit == ms(limit)),
            }
            if d.admits_wait(ms(delay), ms(now)) {
                prop_assert!(ms(now) + ms(delay) < d.expires_at());
            }
        }
    }
}
