//! The supervisor's decisions as a pure function: `step(state, input, now) -> effects`.
//! No tokio, no I/O: the actor feeds inputs (attempt outcomes, timers, user actions, a
//! wake) and performs the effects (start an attempt, close a generation, arm the one timer,
//! probe, emit). Beside it, `after_walk` (`walk.rs`): which step of the fallback order the
//! supervisor remembers as the one that worked last, after an attempt's walk of it.
//!
//! Architecture invariant: a generation is fenced. Inputs that name another generation
//! than the current one change nothing (a late success is only disposed), and a timer
//! whose token is not the armed one is ignored, so stale signals can never schedule a
//! second retry.

mod wake;

pub use super::walk::{AfterWalk, Walk, after_walk};
use crate::error::Stage;
use crate::events::{FailureInfo, Generation, StateInfo, StateName, millis};
use crate::policy::backoff::Backoff;
use crate::policy::classify::{Action, RetireReason, Verdict};
use crate::policy::quarantine::{Escalation, Quarantine, QuarantineLevel};
use crate::policy::rng::Jitter;
use std::time::Duration;
pub use wake::Machine;

/// The numbers a supervisor runs by (validated by the policy types).
#[derive(Debug, Clone)]
pub struct Policy {
    pub backoff: Backoff,
    pub quarantine: Quarantine,
    /// `reconnect.enabled`: when false, the first failure gives up.
    pub reconnect: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            backoff: Backoff::default(),
            quarantine: Quarantine::default(),
            reconnect: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// No connection has been established in this outage ("connection failed").
    Retrying,
    /// An established connection ended ("connection lost").
    Reconnecting,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Idle,
    Connecting {
        stage: Stage,
        probe: bool,
    },
    /// `probe`: reached by a quarantine probe; until the stability window is served, a
    /// loss is that probe failing, not the start of a fresh round.
    Ready {
        since: Duration,
        probe: bool,
    },
    Waiting {
        outage: Outage,
        until: Duration,
    },
    Quarantined {
        until: Duration,
    },
    GaveUp,
    Retired(RetireReason),
    Disabled,
    Stopping,
}

#[derive(Debug, Clone)]
pub struct State {
    pub status: Status,
    pub generation: Generation,
    /// Failed attempts in this outage: the budget a round spends.
    pub failures: u32,
    /// 0 = not quarantined; 1..=3 the ladder.
    pub level: QuarantineLevel,
    /// Whether this outage follows an established connection (one made since the last
    /// stable period, or a stable one that was lost): its waits are then "reconnecting".
    pub established: bool,
    /// The failure that led to the current state, if any.
    pub cause: Option<FailureInfo>,
    /// What an attempt does first: spawn (stdio) or connect (HTTP).
    pub first_stage: Stage,
    /// The machine sleeps, or the network is gone, as the OS told (`Input::Machine`).
    asleep: bool,
    offline: bool,
    /// Until when a remote server's failures spend nothing after a wake (`state/wake.rs`).
    spare_until: Duration,
    /// Failures spared since the last connection, for the wait between them.
    spared: u32,
    timer: Option<u64>,
    next_token: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The supervisor starts; `disabled`: the config says `disabled`, so it does not connect.
    Start {
        disabled: bool,
    },
    Stage {
        generation: Generation,
        stage: Stage,
    },
    Established {
        generation: Generation,
    },
    AttemptFailed {
        generation: Generation,
        verdict: Verdict,
        failure: FailureInfo,
    },
    Lost {
        generation: Generation,
        verdict: Verdict,
        failure: FailureInfo,
    },
    Timer {
        token: u64,
    },
    ReconnectNow,
    Reset,
    Disable,
    Enable,
    Stop,
    /// The machine sleeps, woke, or lost or found the network (issue 29, `state/wake.rs`).
    Machine(Machine),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Start generation `generation` (after the previous one is fully closed).
    Attempt {
        generation: Generation,
    },
    /// Dispose of a generation: its session, its process.
    Close {
        generation: Generation,
    },
    /// Arm the one timer (replacing any other) to fire `Input::Timer { token }` at `at`.
    Arm {
        token: u64,
        at: Duration,
    },
    Disarm,
    /// Keep the last tool list but mark it stale / drop it.
    ToolsStale,
    DropTools,
    /// Look at the ready connection of `generation` once, `after` from now: it may have died
    /// while the machine slept, and nothing says so until the next request.
    Probe {
        generation: Generation,
        after: Duration,
    },
    /// Publish the state (the actor renders `State::info`).
    EmitState,
    EmitFailure(FailureInfo),
}

impl State {
    pub fn new() -> Self {
        State {
            status: Status::Idle,
            generation: Generation(0),
            failures: 0,
            level: QuarantineLevel::NONE,
            established: false,
            cause: None,
            first_stage: Stage::Spawn,
            asleep: false,
            offline: false,
            spare_until: Duration::ZERO,
            spared: 0,
            timer: None,
            next_token: 1,
        }
    }

    /// A new state whose attempts begin with `stage`.
    pub fn starting_with(stage: Stage) -> Self {
        State {
            first_stage: stage,
            ..State::new()
        }
    }

    pub fn name(&self) -> StateName {
        match self.status {
            Status::Idle | Status::Connecting { .. } => StateName::Connecting,
            Status::Ready { .. } => StateName::Ready,
            Status::Waiting {
                outage: Outage::Retrying,
                ..
            } => StateName::Retrying,
            Status::Waiting {
                outage: Outage::Reconnecting,
                ..
            } => StateName::Reconnecting,
            Status::Quarantined { .. } => StateName::Quarantined,
            Status::GaveUp => StateName::GaveUp,
            Status::Retired(_) => StateName::Retired,
            Status::Disabled => StateName::Disabled,
            Status::Stopping => StateName::Stopping,
        }
    }

    /// The state as the event schema shows it; `delay_ms` counts from `now`.
    pub fn info(&self, now: Duration, policy: &Policy) -> StateInfo {
        let until = match self.status {
            Status::Waiting { until, .. } | Status::Quarantined { until } => Some(until),
            _ => None,
        };
        let attempt = match self.status {
            Status::Connecting { .. } => Some(self.failures.saturating_add(1)),
            // Waiting to reconnect a stable connection spends no attempt yet: no count.
            Status::Waiting { .. } if self.failures > 0 => Some(self.failures),
            _ => None,
        };
        StateInfo {
            state: Some(self.name()),
            stage: match self.status {
                Status::Connecting { stage, .. } => Some(stage.as_str()),
                Status::Idle => Some(self.first_stage.as_str()),
                _ => None,
            },
            attempt,
            max_attempts: attempt.map(|_| policy.backoff.max_attempts()),
            delay_ms: until.map(|u| millis(u.saturating_sub(now))),
            next_attempt_at: None,
            quarantine_level: self.level.get(),
            reason: match self.status {
                Status::Retired(r) => Some(r.as_str().to_owned()),
                Status::Connecting { probe: true, .. } => Some("probe".to_owned()),
                Status::Waiting { .. } if self.cut_off() => Some("offline".to_owned()),
                _ => None,
            },
            cause: match self.status {
                Status::Ready { .. } | Status::Disabled => None,
                _ => self.cause.clone(),
            },
            // Only the actor knows the live session; it fills this in.
            protocol_version: None,
        }
    }

    fn arm(&mut self, at: Duration, fx: &mut Vec<Effect>) {
        let token = self.next_token;
        self.next_token = self.next_token.wrapping_add(1);
        self.timer = Some(token);
        fx.push(Effect::Arm { token, at });
    }

    fn disarm(&mut self, fx: &mut Vec<Effect>) {
        if self.timer.take().is_some() {
            fx.push(Effect::Disarm);
        }
    }

    fn attempt(&mut self, probe: bool, fx: &mut Vec<Effect>) {
        self.disarm(fx);
        self.generation = self.generation.next();
        // An HTTP attempt begins with `connect`, not `spawn`.
        self.status = Status::Connecting {
            stage: self.first_stage,
            probe,
        };
        fx.push(Effect::Attempt {
            generation: self.generation,
        });
        fx.push(Effect::EmitState);
    }

    fn close_current(&self, fx: &mut Vec<Effect>) {
        if self.generation > Generation(0) {
            fx.push(Effect::Close {
                generation: self.generation,
            });
        }
    }

    fn is_current(&self, generation: Generation) -> bool {
        generation == self.generation
    }
}

impl Default for State {
    fn default() -> Self {
        State::new()
    }
}

/// Advances the state by one input and returns what to do.
pub fn step(
    state: &mut State,
    input: Input,
    now: Duration,
    policy: &Policy,
    rng: &mut impl Jitter,
) -> Vec<Effect> {
    let mut fx = Vec::new();
    match input {
        // ## Start => (Connecting | Disabled) ; Enable => Connecting
        Input::Start { disabled } => {
            if matches!(state.status, Status::Idle) {
                if disabled {
                    state.status = Status::Disabled;
                    fx.push(Effect::EmitState);
                } else {
                    state.attempt(false, &mut fx);
                }
            }
        }
        Input::Enable => {
            if matches!(state.status, Status::Disabled) {
                state.failures = 0;
                state.level = QuarantineLevel::NONE;
                state.established = false;
                state.cause = None;
                state.attempt(false, &mut fx);
            }
        }
        // ## Stage => Connecting (same generation only)
        Input::Stage { generation, stage } => {
            if let Status::Connecting { probe, stage: was } = state.status
                && state.is_current(generation)
                && was != stage
            {
                state.status = Status::Connecting { stage, probe };
                fx.push(Effect::EmitState);
            }
        }
        // ## Established => Ready, or a late success disposed
        Input::Established { generation } => {
            if let Status::Connecting { probe, .. } = state.status
                && state.is_current(generation)
            {
                state.status = Status::Ready { since: now, probe };
                state.established = true;
                state.spared = 0;
                state.arm(
                    now.saturating_add(policy.backoff.stability_window()),
                    &mut fx,
                );
                fx.push(Effect::EmitState);
            } else {
                fx.push(Effect::Close { generation });
            }
        }
        // ## AttemptFailed => (Retrying | Quarantined | GaveUp | Retired)
        Input::AttemptFailed {
            generation,
            verdict,
            failure,
        } => {
            if state.is_current(generation) && matches!(state.status, Status::Connecting { .. }) {
                let probe = matches!(state.status, Status::Connecting { probe: true, .. });
                fx.push(Effect::Close { generation });
                fx.push(Effect::EmitFailure(failure.clone()));
                state.cause = Some(failure);
                fail(state, &verdict, probe, now, policy, rng, &mut fx);
            }
        }
        // ## Lost => (Reconnecting | Connecting | Quarantined | Retired)
        Input::Lost {
            generation,
            verdict,
            failure,
        } => {
            if let Status::Ready { since, probe } = state.status
                && state.is_current(generation)
            {
                fx.push(Effect::Close { generation });
                fx.push(Effect::EmitFailure(failure.clone()));
                state.cause = Some(failure);
                state.disarm(&mut fx);
                fx.push(Effect::ToolsStale);
                let stable = now.saturating_sub(since) >= policy.backoff.stability_window();
                if let Action::Retire(reason) = verdict.action {
                    retire(state, reason, &mut fx);
                } else if state.spares(now) {
                    // Lost to the sleep or the network: reconnected at once after a wake
                    // (its probe was already spread), else when the network is back.
                    state.established = true;
                    if state.cut_off() {
                        wake::spare(state, None, now, policy, rng, &mut fx);
                    } else {
                        state.attempt(false, &mut fx);
                    }
                } else if stable {
                    // The stability timer already reset the budget, so this is not a failed
                    // attempt; but a loss like this is often shared (a server restart ends
                    // every client's stream at once), so the first reconnect is spread over
                    // a short window (full jitter) instead of made at once by everyone.
                    // What follows is recovery of an established connection: "reconnecting".
                    state.established = true;
                    let until = now.saturating_add(policy.backoff.first_reconnect_delay(rng));
                    state.status = Status::Waiting {
                        outage: Outage::Reconnecting,
                        until,
                    };
                    state.arm(until, &mut fx);
                    fx.push(Effect::EmitState);
                } else {
                    // Up shorter than the window: a crash loop must not launder its budget,
                    // and a probe that briefly succeeded is a failed probe (the next level
                    // or gave_up), not a fresh round.
                    fail(state, &verdict, probe, now, policy, rng, &mut fx);
                    if let Status::Waiting { until, .. } = state.status {
                        state.status = Status::Waiting {
                            outage: Outage::Reconnecting,
                            until,
                        };
                    }
                }
            }
        }
        // ## Timer => (Connecting | Ready)
        Input::Timer { token } => {
            if state.timer != Some(token) {
                return fx;
            }
            state.timer = None;
            match state.status {
                Status::Waiting { .. } => state.attempt(false, &mut fx),
                Status::Quarantined { .. } => state.attempt(true, &mut fx),
                Status::Ready { .. } => {
                    // Stable: the outage is over; the ladder steps down one level.
                    state.failures = 0;
                    state.established = false;
                    state.cause = None;
                    let level = policy.quarantine.relax(state.level);
                    if level != state.level {
                        state.level = level;
                        fx.push(Effect::EmitState);
                    }
                }
                _ => {}
            }
        }
        // ## ReconnectNow => Connecting
        Input::ReconnectNow => match state.status {
            Status::Waiting { .. } => state.attempt(false, &mut fx),
            Status::Quarantined { .. } => state.attempt(true, &mut fx),
            Status::GaveUp | Status::Retired(_) => {
                state.failures = 0;
                state.established = false;
                state.attempt(false, &mut fx);
            }
            Status::Ready { .. } => {
                state.close_current(&mut fx);
                fx.push(Effect::ToolsStale);
                state.attempt(false, &mut fx);
            }
            Status::Idle => state.attempt(false, &mut fx),
            Status::Connecting { .. } | Status::Disabled | Status::Stopping => {}
        },
        // ## Reset => Connecting (budget and ladder cleared, like `systemctl reset-failed`)
        Input::Reset => match state.status {
            Status::Disabled | Status::Stopping | Status::Connecting { .. } => {}
            Status::Ready { since, .. } => {
                // Cleared, so a loss inside the window starts a round, not the ladder.
                state.status = Status::Ready {
                    since,
                    probe: false,
                };
                state.failures = 0;
                state.level = QuarantineLevel::NONE;
                fx.push(Effect::EmitState);
            }
            _ => {
                state.failures = 0;
                state.level = QuarantineLevel::NONE;
                state.established = false;
                state.attempt(false, &mut fx);
            }
        },
        // ## Disable => Disabled
        Input::Disable => {
            if !matches!(state.status, Status::Disabled | Status::Stopping) {
                state.disarm(&mut fx);
                state.close_current(&mut fx);
                fx.push(Effect::DropTools);
                state.status = Status::Disabled;
                fx.push(Effect::EmitState);
            }
        }
        // ## Machine => a probe of a ready connection; a wait the sleep ran out fires now
        Input::Machine(event) => wake::machine(state, event, now, rng, &mut fx),
        // ## Stop => Stopping
        Input::Stop => {
            if !matches!(state.status, Status::Stopping) {
                state.disarm(&mut fx);
                state.close_current(&mut fx);
                state.status = Status::Stopping;
                fx.push(Effect::EmitState);
            }
        }
    }
    fx
}

fn retire(state: &mut State, reason: RetireReason, fx: &mut Vec<Effect>) {
    state.disarm(fx);
    state.status = Status::Retired(reason);
    fx.push(Effect::DropTools);
    fx.push(Effect::EmitState);
}

/// A failed attempt (or a connection that died inside the stability window): spend the
/// budget, then wait, quarantine or give up.
fn fail(
    state: &mut State,
    verdict: &Verdict,
    probe: bool,
    now: Duration,
    policy: &Policy,
    rng: &mut impl Jitter,
    fx: &mut Vec<Effect>,
) {
    let server_delay = match verdict.action {
        Action::Retire(reason) => return retire(state, reason, fx),
        Action::RetryAfter(d) => Some(d),
        // The server forgot the session: a new generation at once (it still counts).
        Action::NewSession => Some(Duration::ZERO),
        _ => None,
    };
    if state.spares(now) {
        return wake::spare(state, server_delay, now, policy, rng, fx);
    }
    state.failures = state.failures.saturating_add(1);
    if !policy.reconnect {
        state.disarm(fx);
        state.status = Status::GaveUp;
        fx.push(Effect::DropTools);
        fx.push(Effect::EmitState);
        return;
    }
    if probe || state.failures >= policy.backoff.max_attempts() {
        match policy.quarantine.escalate(state.level) {
            Escalation::Quarantine { level, cooldown } => {
                state.level = level;
                state.failures = 0;
                let until = now.saturating_add(server_delay.map_or(cooldown, |d| d.max(cooldown)));
                state.status = Status::Quarantined { until };
                state.arm(until, fx);
            }
            Escalation::GaveUp => {
                state.disarm(fx);
                state.status = Status::GaveUp;
                fx.push(Effect::DropTools);
            }
        }
        fx.push(Effect::EmitState);
        return;
    }
    let backoff = policy.backoff.delay(state.failures, rng);
    // A server-mandated wait is honoured exactly: never shortened, never jittered.
    wait(state, server_delay.unwrap_or(backoff), now, fx);
}

/// Waits `delay` before the next attempt of this outage: "reconnecting" when it follows an
/// established connection, "retrying" otherwise.
fn wait(state: &mut State, delay: Duration, now: Duration, fx: &mut Vec<Effect>) {
    let outage = if state.established {
        Outage::Reconnecting
    } else {
        Outage::Retrying
    };
    let until = now.saturating_add(delay);
    state.status = Status::Waiting { outage, until };
    state.arm(until, fx);
    fx.push(Effect::EmitState);
}
