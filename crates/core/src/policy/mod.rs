//! Reconnect policy as pure decisions: how long to wait (`backoff`), what a failure means
//! (`classify`), how far a failing server is pushed back (`quarantine`), how much of the
//! establishment deadline is left (`deadline`), when a session's listen stream is opened
//! again (`listen`), whether a failed stateless request is asked again (`reissue`) and what a
//! wake changes (`wake`).
//! No tokio, no I/O, no clocks: time comes in as `now: Duration` since an epoch the caller
//! owns, randomness as an injected `Jitter`.
//!
//! Every value a person can configure is built by `try_new`, which names the config field,
//! the value and the bound it broke (`PolicyError`). Arithmetic saturates; every delay the
//! policy itself computes is capped.

pub mod backoff;
pub mod classify;
pub mod deadline;
pub mod fallback;
pub mod listen;
pub mod quarantine;
pub mod reissue;
pub mod rng;
pub mod wake;

pub use backoff::Backoff;
pub use classify::{Action, RetireReason, Verdict, classify};
pub use deadline::{Deadline, DeadlineExceeded};
pub use listen::ListenRetry;
pub use quarantine::{Escalation, Quarantine, QuarantineLevel};
pub use rng::{Jitter, NoJitter, SeededRng};

use std::time::Duration;

/// The longest duration any policy value may be configured to. A wait longer than a day is
/// indistinguishable from giving up, and the bound keeps `cap · 1.2` and friends far from
/// overflow.
pub const MAX_CONFIGURED: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest wait a server may ask for (Retry-After, in seconds or as an HTTP-date): the
/// same day as `MAX_CONFIGURED`. A longer one is clamped to it where it is parsed, so a
/// hostile or broken header (twenty digits, a date in year 9999) can neither overflow a
/// clock nor park a server for longer than anything a person could configure.
pub const MAX_SERVER_WAIT: Duration = MAX_CONFIGURED;

/// A configured policy value out of bounds: which field (its camelCase config name), the
/// value given, and the bound it broke. Displays as
/// `reconnect.initialDelayMs = 0 must be at least 1 ms`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value} {bound}")]
pub struct PolicyError {
    /// The config field, e.g. `reconnect.maxDelayMs`.
    pub field: &'static str,
    /// The value given, in the field's unit (milliseconds for `…Ms`).
    pub value: u64,
    /// The rule it broke, as the end of a sentence: `must be at least 1 ms`.
    pub bound: String,
}

impl From<PolicyError> for crate::Error {
    fn from(e: PolicyError) -> Self {
        crate::Error::config(e.to_string())
    }
}

/// Whole milliseconds, saturating: the unit every `…Ms` field is written in.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Checks a `…Ms` field: at least `min`, at most `MAX_CONFIGURED`.
pub(crate) fn check_ms(field: &'static str, d: Duration, min: Duration) -> Result<(), PolicyError> {
    let error = |bound: String| PolicyError {
        field,
        value: millis(d),
        bound,
    };
    if d < min {
        return Err(error(format!("must be at least {} ms", millis(min))));
    }
    if d > MAX_CONFIGURED {
        return Err(error(format!(
            "must be at most {} ms (1 d)",
            millis(MAX_CONFIGURED)
        )));
    }
    Ok(())
}

/// Checks that `field` is not below another field it is ordered after (a cap below its
/// start, a later quarantine step shorter than an earlier one).
pub(crate) fn check_not_below(
    field: &'static str,
    d: Duration,
    other: &'static str,
    min: Duration,
) -> Result<(), PolicyError> {
    if d < min {
        return Err(PolicyError {
            field,
            value: millis(d),
            bound: format!("must be at least {other} ({})", millis(min)),
        });
    }
    Ok(())
}

/// One millisecond: the smallest configurable duration. Config is written in whole
/// milliseconds, so anything shorter is a zero that would make a busy loop.
pub(crate) const ONE_MS: Duration = Duration::from_millis(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_field_the_value_and_the_bound() {
        let check = |r: Result<(), PolicyError>, expect: &str| {
            assert_eq!(r.map_err(|e| e.to_string()), Err(expect.to_owned()));
        };
        check(
            check_ms("reconnect.initialDelayMs", Duration::ZERO, ONE_MS),
            "reconnect.initialDelayMs = 0 must be at least 1 ms",
        );
        check(
            check_ms("timeouts.establishMs", Duration::from_secs(86_401), ONE_MS),
            "timeouts.establishMs = 86401000 must be at most 86400000 ms (1 d)",
        );
        check(
            check_not_below(
                "reconnect.maxDelayMs",
                Duration::from_millis(100),
                "reconnect.initialDelayMs",
                Duration::from_millis(500),
            ),
            "reconnect.maxDelayMs = 100 must be at least reconnect.initialDelayMs (500)",
        );
        assert_eq!(check_ms("x", Duration::from_secs(86_400), ONE_MS), Ok(()));
        assert_eq!(millis(Duration::MAX), u64::MAX);
        let e: crate::Error = PolicyError {
            field: "reconnect.maxAttempts",
            value: 0,
            bound: "must be at least 1".into(),
        }
        .into();
        assert_eq!(e.kind(), crate::ErrorKind::Config);
        assert_eq!(e.message(), "reconnect.maxAttempts = 0 must be at least 1");
    }
}
