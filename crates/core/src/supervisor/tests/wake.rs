//! The machine's life in the step (issue 29, `state/wake.rs`): sleep, wake, the network
//! going and coming back, on the same exact clock as the rest of `tests.rs`.

use super::*;
use crate::policy::wake::{OFFLINE_RECHECK, WAKE_GRACE};
use crate::supervisor::state::Machine;

fn woke(slept: Option<Duration>) -> Input {
    Input::Machine(Machine::Woke { slept })
}

fn told(event: Machine) -> Input {
    Input::Machine(event)
}

impl Run {
    /// A supervisor of an HTTP server, which needs the network.
    fn remote() -> Self {
        let mut run = Run {
            state: State::starting_with(Stage::Connect),
            policy: Policy::default(),
            now: Duration::ZERO,
            fx: vec![],
        };
        run.feed(Input::Start { disabled: false });
        run
    }

    fn reason(&self) -> Option<String> {
        self.state.info(self.now, &self.policy).reason
    }

    fn attempt(&self) -> Option<u32> {
        self.state.info(self.now, &self.policy).attempt
    }
}

#[test]
fn a_wake_probes_a_ready_connection_and_takes_the_sleep_off_a_wait() {
    // Ready: one probe, spread (1 s without jitter); nothing else changes.
    let mut run = Run::new();
    run.establish();
    let generation = run.generation();
    let fx = run.feed(woke(Some(600 * S)));
    assert_eq!(
        fx,
        [Effect::Probe {
            generation,
            after: S
        }]
    );
    assert_eq!(run.name(), StateName::Ready);

    // Waiting 30 s from 0 (the server asked), woken at 10 s after 5 s asleep: 15 s left.
    let mut run = Run::new();
    run.fail(Action::RetryAfter(30 * S));
    run.now = 10 * S;
    run.feed(woke(Some(5 * S)));
    assert_eq!(run.wait(), 15 * S);
    assert_eq!(run.name(), StateName::Retrying);
    // Asleep past the rest of it: the next attempt now, one generation on.
    let before = run.generation();
    let fx = run.feed(woke(Some(60 * S)));
    assert!(
        fx.contains(&Effect::Attempt {
            generation: Generation(before.0 + 1)
        }),
        "{fx:?}"
    );
    assert!(matches!(
        run.state.status,
        Status::Connecting { probe: false, .. }
    ));

    // A wake of unknown length: the wait ends now.
    let mut run = Run::new();
    run.fail(Action::RetryAfter(30 * S));
    run.feed(woke(None));
    assert!(matches!(run.state.status, Status::Connecting { .. }));

    // Quarantined through the sleep: the probe now.
    let mut run = Run::new();
    run.quarantine();
    assert_eq!(run.name(), StateName::Quarantined);
    run.feed(woke(Some(3600 * S)));
    assert!(matches!(
        run.state.status,
        Status::Connecting { probe: true, .. }
    ));

    // Nothing to wake while connecting or disabled.
    let mut run = Run::new();
    assert!(run.feed(woke(None)).is_empty());
    run.feed(Input::Disable);
    assert!(run.feed(woke(None)).is_empty());
}

#[test]
fn offline_a_remote_server_waits_for_the_network_spending_nothing() {
    let mut run = Run::remote();
    run.feed(told(Machine::Offline));
    for _ in 0..20 {
        run.fail(Action::Retry);
        assert_eq!(run.name(), StateName::Retrying);
        assert_eq!(run.reason().as_deref(), Some("offline"));
        assert_eq!(run.wait(), OFFLINE_RECHECK, "one cheap try every so often");
        assert_eq!(run.attempt(), None, "no attempt counted");
        run.fire();
    }
    assert_eq!(run.state.failures, 0);
    assert_eq!(
        run.state.level,
        QuarantineLevel::NONE,
        "the ladder did not move"
    );
    // The network back: the attempt now, and its failure is the grace's, still free.
    run.fail(Action::Retry);
    let fx = run.feed(told(Machine::Online)).to_vec();
    assert!(
        fx.iter().any(|e| matches!(e, Effect::Attempt { .. })),
        "{fx:?}"
    );
    run.fail(Action::Retry);
    assert_eq!((run.state.failures, run.reason()), (0, None));
    // Past the grace, a failure counts again.
    run.fire();
    run.now += WAKE_GRACE;
    run.fail(Action::Retry);
    assert_eq!(run.state.failures, 1);
    assert_eq!(run.attempt(), Some(1));
}

#[test]
fn offline_changes_nothing_for_a_stdio_server() {
    let mut run = Run::new();
    assert!(run.feed(told(Machine::Offline)).is_empty());
    run.fail(Action::Retry);
    assert_eq!((run.state.failures, run.reason()), (1, None));
    run.fire();
    run.establish();
    assert!(
        run.feed(told(Machine::Online)).is_empty(),
        "not probed: no network used"
    );
}

#[test]
fn the_network_going_shows_on_a_waiting_server_and_its_return_ends_the_wait() {
    let mut run = Run::remote();
    run.fail(Action::Retry);
    assert_eq!(run.state.failures, 1);
    assert_eq!(run.feed(told(Machine::Offline)), [Effect::EmitState]);
    assert_eq!(run.reason().as_deref(), Some("offline"));
    assert!(run.feed(told(Machine::Offline)).is_empty(), "told once");
    let before = run.generation();
    run.feed(told(Machine::Online));
    assert_eq!(run.generation(), before.next(), "the attempt now");

    // What the server asked for is kept: Retry-After is not the network's.
    let mut run = Run::remote();
    let asked = FailureInfo {
        retry_after_ms: Some(30_000),
        ..failure()
    };
    let generation = run.generation();
    run.feed(Input::AttemptFailed {
        generation,
        verdict: verdict(Action::RetryAfter(30 * S)),
        failure: asked,
    });
    run.feed(told(Machine::Offline));
    assert_eq!(
        run.feed(told(Machine::Online)),
        [Effect::EmitState],
        "no longer offline"
    );
    assert_eq!(run.name(), StateName::Retrying);
}

#[test]
fn a_connection_found_dead_after_a_wake_reconnects_at_once_for_free() {
    let mut run = Run::remote();
    run.establish();
    run.now = 3600 * S;
    run.feed(told(Machine::Sleeping));
    // Lost while asleep (the interface went down): waiting for the wake, nothing spent.
    run.lose(Action::ReturnAndReconnect);
    assert_eq!(run.reason().as_deref(), Some("offline"));
    assert_eq!(run.state.failures, 0);
    // The wake ends the wait at once, however short the sleep was.
    let before = run.generation();
    run.feed(woke(Some(S)));
    assert_eq!(run.generation(), before.next());
    run.establish();
    assert_eq!(run.state.failures, 0);

    // Ready through the sleep: the probe, and a loss it finds is an attempt now (the probes
    // were spread already), inside the stability window or not.
    let mut run = Run::remote();
    run.establish();
    run.feed(woke(Some(60 * S)));
    let before = run.generation();
    run.lose(Action::ReturnAndReconnect);
    assert_eq!(run.generation(), before.next());
    assert!(matches!(
        run.state.status,
        Status::Connecting { probe: false, .. }
    ));
    // The network not back yet: spared, on the round's own backoff.
    run.fail(Action::Retry);
    assert_eq!(run.state.failures, 0);
    assert_eq!(run.wait(), run.policy.backoff.delay(1, &mut NoJitter));
    run.fire();
    run.fail(Action::Retry);
    assert_eq!(run.wait(), run.policy.backoff.delay(2, &mut NoJitter));
}

#[test]
fn a_quarantine_probe_failing_offline_does_not_climb_the_ladder() {
    let mut run = Run::remote();
    run.quarantine();
    let level = run.state.level;
    let (token, at) = run.armed().expect("the cooldown");
    run.feed(told(Machine::Offline));
    run.now = at;
    run.feed(Input::Timer { token });
    assert!(matches!(
        run.state.status,
        Status::Connecting { probe: true, .. }
    ));
    run.fail(Action::Retry);
    assert_eq!(run.state.level, level);
    assert_eq!(run.reason().as_deref(), Some("offline"));
}
