//! The step's part of the machine's life (issue 29): going to sleep, waking, the network
//! going and coming back. Pure, like the rest of `step`.
//!
//! - A wake probes every ready connection once, spread (`Effect::Probe`), and takes the sleep
//!   off a wait or a quarantine cooldown: one the sleep ran out is attempted now.
//! - The network back probes every ready remote connection and ends a remote server's wait
//!   at once, unless the server itself asked for the time (Retry-After).
//! - A remote server's failure while the machine sleeps or the network is gone, or within
//!   `WAKE_GRACE` of a wake, spends nothing: no attempt is counted, the ladder does not move,
//!   and the wait says why (`offline`). While offline the wait is `OFFLINE_RECHECK`, so a
//!   source that was wrong about the network (or a server on loopback) costs one cheap try
//!   every so often, never the budget. A connection lost within the grace is reconnected at
//!   once: the probes already spread the servers.
//! - stdio servers are untouched by the network; a wake checks their children like any
//!   ready connection.

use super::{Effect, Policy, State, Status};
use crate::error::Stage;
use crate::policy::rng::Jitter;
use crate::policy::wake::{OFFLINE_RECHECK, WAKE_GRACE, left_after_sleep, probe_delay};
use std::time::Duration;

/// What the machine did, as the step takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Machine {
    Sleeping,
    /// `slept`: how long, when the source knows; a wake of unknown length ends every wait.
    Woke {
        slept: Option<Duration>,
    },
    Offline,
    Online,
}

impl State {
    /// An HTTP server, which needs the network; a stdio one does not.
    pub(super) fn remote(&self) -> bool {
        self.first_stage == Stage::Connect
    }

    /// The network is gone (or the machine is asleep) as far as this server is concerned.
    pub(super) fn cut_off(&self) -> bool {
        self.remote() && (self.offline || self.asleep)
    }

    /// Whether a failure now spends nothing (see the module's doc).
    pub(super) fn spares(&self, now: Duration) -> bool {
        self.cut_off() || (self.remote() && now < self.spare_until)
    }
}

pub(super) fn machine(
    state: &mut State,
    event: Machine,
    now: Duration,
    rng: &mut impl Jitter,
    fx: &mut Vec<Effect>,
) {
    match event {
        Machine::Sleeping => state.asleep = true,
        Machine::Offline => {
            let was = state.cut_off();
            state.offline = true;
            if !was && state.cut_off() && matches!(state.status, Status::Waiting { .. }) {
                fx.push(Effect::EmitState); // its reason is `offline` now
            }
        }
        Machine::Woke { slept } => {
            let was = state.cut_off();
            state.asleep = false;
            state.offline = false;
            state.spare_until = now.saturating_add(WAKE_GRACE);
            match state.status {
                Status::Ready { .. } => probe(state, rng, fx),
                // Waiting for the machine or the network, which is back as far as it is known.
                Status::Waiting { .. } if was => state.attempt(false, fx),
                Status::Waiting { outage, until } => {
                    let left = left_after_sleep(until, now, slept);
                    wait_left(state, left, now, false, fx, |until| Status::Waiting {
                        outage,
                        until,
                    });
                }
                Status::Quarantined { until } => {
                    let left = left_after_sleep(until, now, slept);
                    wait_left(state, left, now, true, fx, |until| Status::Quarantined {
                        until,
                    });
                }
                _ if was => fx.push(Effect::EmitState),
                _ => {}
            }
        }
        Machine::Online => {
            let was = state.cut_off();
            state.offline = false;
            if !state.remote() || state.asleep {
                return;
            }
            state.spare_until = now.saturating_add(WAKE_GRACE);
            let asked = state
                .cause
                .as_ref()
                .is_some_and(|c| c.retry_after_ms.is_some());
            match state.status {
                Status::Ready { .. } => probe(state, rng, fx),
                Status::Waiting { .. } if !asked => state.attempt(false, fx),
                Status::Waiting { .. } if was => fx.push(Effect::EmitState),
                _ => {}
            }
        }
    }
}

/// A failure that spends nothing (`State::spares`): a wait, `OFFLINE_RECHECK` while cut
/// off, else the round's own backoff for the spared tries so far (never shorter than what
/// the server asked for).
pub(super) fn spare(
    state: &mut State,
    server_delay: Option<Duration>,
    now: Duration,
    policy: &Policy,
    rng: &mut impl Jitter,
    fx: &mut Vec<Effect>,
) {
    state.spared = state.spared.saturating_add(1);
    let delay = if state.cut_off() {
        OFFLINE_RECHECK
    } else {
        policy.backoff.delay(state.spared, rng)
    };
    super::wait(state, server_delay.map_or(delay, |d| d.max(delay)), now, fx);
}

fn probe(state: &State, rng: &mut impl Jitter, fx: &mut Vec<Effect>) {
    fx.push(Effect::Probe {
        generation: state.generation,
        after: probe_delay(rng),
    });
}

/// A wait with `left` of it after a wake: the attempt now when nothing is left, else the
/// wait re-armed to end sooner.
fn wait_left(
    state: &mut State,
    left: Duration,
    now: Duration,
    probe: bool,
    fx: &mut Vec<Effect>,
    status: impl FnOnce(Duration) -> Status,
) {
    if left.is_zero() {
        state.attempt(probe, fx);
    } else {
        let until = now.saturating_add(left);
        state.status = status(until);
        state.arm(until, fx);
        fx.push(Effect::EmitState);
    }
}
