//! The quarantine ladder: a server that exhausted a round of attempts is left alone for a
//! cooldown, then probed once; each failed probe climbs a level (30 s → 60 s → 120 s) and a
//! failed probe at the top is `gave_up`. A connection that stays up a stability window
//! steps down one level (Envoy's gradual decay), so one bad hour does not stick for days.

use super::{ONE_MS, PolicyError, check_ms, check_not_below};
use std::time::Duration;

/// How far a server has been pushed back: 0 (not quarantined) to 3.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QuarantineLevel(u8);

impl QuarantineLevel {
    pub const NONE: QuarantineLevel = QuarantineLevel(0);
    pub const MAX: QuarantineLevel = QuarantineLevel(3);

    /// `None` above 3.
    pub fn new(level: u8) -> Option<Self> {
        (level <= Self::MAX.0).then_some(QuarantineLevel(level))
    }

    pub fn get(self) -> u8 {
        self.0
    }
}

/// What a failure at some level leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escalation {
    /// Wait exactly `cooldown`, then probe once.
    Quarantine {
        level: QuarantineLevel,
        cooldown: Duration,
    },
    /// The top level's probe failed: only a person restarts the server.
    GaveUp,
}

/// The cooldown of each quarantine level, 1 to 3 (`reconnect.quarantineMs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quarantine {
    cooldowns: [Duration; 3],
}

impl Default for Quarantine {
    /// 30 s, 60 s, 120 s (DESIGN.md, from the seeds' 30 → 60 → 120 → permanent): the first
    /// step equals the backoff cap, so quarantine never probes sooner than the round would
    /// have retried; each step doubles, so a server that is down for good costs three
    /// probes in 3.5 minutes and then stops. Envoy ejects for 30 s × n; we stop instead of
    /// probing forever, and say so.
    fn default() -> Self {
        Quarantine {
            cooldowns: [30, 60, 120].map(Duration::from_secs),
        }
    }
}

const FIELDS: [&str; 3] = [
    "reconnect.quarantineMs[0]",
    "reconnect.quarantineMs[1]",
    "reconnect.quarantineMs[2]",
];

impl Quarantine {
    /// Each cooldown is at least 1 ms, and no level's is shorter than the one below it: a
    /// server that failed more should never be probed sooner.
    pub fn try_new(cooldowns: [Duration; 3]) -> Result<Self, PolicyError> {
        for (i, &cooldown) in cooldowns.iter().enumerate() {
            check_ms(FIELDS[i], cooldown, ONE_MS)?;
            if i > 0 {
                check_not_below(FIELDS[i], cooldown, FIELDS[i - 1], cooldowns[i - 1])?;
            }
        }
        Ok(Quarantine { cooldowns })
    }

    /// The cooldown of `level`; `None` for level 0, which is not a quarantine.
    pub fn cooldown(&self, level: QuarantineLevel) -> Option<Duration> {
        let i = usize::from(level.0).checked_sub(1)?;
        self.cooldowns.get(i).copied()
    }

    /// What follows a failure at `level`: exhausting a round at level 0, or a failed probe
    /// at levels 1–3. Cooldowns are exact, never jittered: a person reads "next probe at"
    /// and it must be true.
    pub fn escalate(&self, level: QuarantineLevel) -> Escalation {
        match QuarantineLevel::new(level.0 + 1) {
            Some(next) => Escalation::Quarantine {
                level: next,
                cooldown: self.cooldowns[usize::from(next.0) - 1],
            },
            None => Escalation::GaveUp,
        }
    }

    /// The level after a connection stayed up a full stability window: one step down.
    pub fn relax(&self, level: QuarantineLevel) -> QuarantineLevel {
        QuarantineLevel(level.0.saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn level(n: u8) -> QuarantineLevel {
        QuarantineLevel::new(n).expect("a valid level")
    }

    #[test]
    fn the_ladder_climbs_then_gives_up() {
        let q = Quarantine::default();
        let check = |from: u8, expect: Option<(u8, u64)>| {
            let expect = match expect {
                Some((l, secs)) => Escalation::Quarantine {
                    level: level(l),
                    cooldown: S(secs),
                },
                None => Escalation::GaveUp,
            };
            assert_eq!(q.escalate(level(from)), expect, "from level {from}");
        };
        check(0, Some((1, 30)));
        check(1, Some((2, 60)));
        check(2, Some((3, 120)));
        check(3, None);
    }

    #[test]
    fn a_stable_connection_steps_down_one_level() {
        let q = Quarantine::default();
        let check = |from: u8, to: u8| assert_eq!(q.relax(level(from)), level(to), "{from}");
        check(3, 2);
        check(2, 1);
        check(1, 0);
        check(0, 0);
    }

    #[test]
    fn levels_and_cooldowns() {
        let q = Quarantine::try_new([S(1), S(2), S(2)]).expect("valid");
        let check = |l: u8, expect: Option<u64>| assert_eq!(q.cooldown(level(l)), expect.map(S));
        check(0, None);
        check(1, Some(1));
        check(2, Some(2));
        check(3, Some(2));
        assert_eq!(QuarantineLevel::new(4), None);
        assert_eq!(QuarantineLevel::default(), QuarantineLevel::NONE);
        assert_eq!(QuarantineLevel::MAX.get(), 3);
        assert!(level(1) < level(2));
    }

    #[test]
    fn bad_cooldowns_name_the_step_and_the_bound() {
        let check = |ms: [u64; 3], expect: &str| {
            let got = Quarantine::try_new(ms.map(Duration::from_millis)).map_err(|e| e.to_string());
            assert_eq!(got, Err(expect.to_owned()));
        };
        check(
            [0, 60_000, 120_000],
            "reconnect.quarantineMs[0] = 0 must be at least 1 ms",
        );
        check(
            [30_000, 10_000, 120_000],
            "reconnect.quarantineMs[1] = 10000 must be at least reconnect.quarantineMs[0] (30000)",
        );
        check(
            [30_000, 60_000, 86_400_001],
            "reconnect.quarantineMs[2] = 86400001 must be at most 86400000 ms (1 d)",
        );
        assert_eq!(
            Quarantine::try_new([30, 60, 120].map(S)),
            Ok(Quarantine::default())
        );
    }
}
