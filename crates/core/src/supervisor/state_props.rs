//! Properties of `step` over arbitrary input sequences (proptest): whatever a server, a
//! person or the clock feeds it — stale and future generations, timers that are not
//! armed, a Retry-After of any size (up to `Duration::MAX`), clock jumps to the end of
//! time, any valid policy — it never panics, `State::info` always renders, and a timer is
//! never armed in the past. `tests.rs` holds the exact sequences; this holds the bounds.

use super::state::{Effect, Input, Machine, Policy, State, step};
use crate::error::{ErrorKind, Stage};
use crate::events::FailureInfo;
use crate::events::Generation;
use crate::policy::{Action, Backoff, Quarantine, RetireReason, SeededRng, Verdict};
use proptest::prelude::*;
use std::time::Duration;

/// A generation as an input names it, relative to the state's current one.
#[derive(Debug, Clone)]
enum Gen {
    Current,
    Previous,
    Next,
    Any(u64),
}

/// An input before its generation or timer token is resolved against the state.
#[derive(Debug, Clone)]
enum Op {
    Start(bool),
    Stage(Gen, Stage),
    Established(Gen),
    AttemptFailed(Gen, Action),
    Lost(Gen, Action),
    /// `None`: the token armed last; `Some`: any token.
    Timer(Option<u64>),
    /// An input that names no generation or token: a person's action, the machine's.
    Plain(Box<Input>),
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (0u64..200_000).prop_map(Duration::from_millis),
        any::<u64>().prop_map(Duration::from_secs),
        any::<u64>().prop_map(Duration::from_nanos),
        Just(Duration::MAX),
    ]
}

fn generation() -> impl Strategy<Value = Gen> {
    prop_oneof![
        4 => Just(Gen::Current),
        1 => Just(Gen::Previous),
        1 => Just(Gen::Next),
        1 => any::<u64>().prop_map(Gen::Any),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        Just(Action::Retry),
        duration().prop_map(Action::RetryAfter),
        Just(Action::NewSession),
        prop_oneof![
            Just(RetireReason::Auth),
            Just(RetireReason::Permission),
            Just(RetireReason::Config),
        ]
        .prop_map(Action::Retire),
        Just(Action::ReturnToCaller),
        Just(Action::ReturnAndReconnect),
    ]
}

fn stage() -> impl Strategy<Value = Stage> {
    prop_oneof![
        Just(Stage::Spawn),
        Just(Stage::Connect),
        Just(Stage::Initialize),
        Just(Stage::ListTools),
    ]
}

fn machine() -> impl Strategy<Value = Machine> {
    prop_oneof![
        Just(Machine::Sleeping),
        prop::option::of(duration()).prop_map(|slept| Machine::Woke { slept }),
        Just(Machine::Offline),
        Just(Machine::Online),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => any::<bool>().prop_map(Op::Start),
        2 => (generation(), stage()).prop_map(|(g, s)| Op::Stage(g, s)),
        3 => generation().prop_map(Op::Established),
        4 => (generation(), action()).prop_map(|(g, a)| Op::AttemptFailed(g, a)),
        3 => (generation(), action()).prop_map(|(g, a)| Op::Lost(g, a)),
        4 => prop::option::of(any::<u64>()).prop_map(Op::Timer),
        5 => prop_oneof![
            Just(Input::ReconnectNow),
            Just(Input::Reset),
            Just(Input::Disable),
            Just(Input::Enable),
            Just(Input::Stop),
        ]
        .prop_map(|i| Op::Plain(Box::new(i))),
        3 => machine().prop_map(|m| Op::Plain(Box::new(Input::Machine(m)))),
    ]
}

/// Any policy the config could build (each value within its validated bounds).
fn policy() -> impl Strategy<Value = Policy> {
    let day = 86_400_000u64;
    (
        1..=day,
        1..=day,
        1u32..=1000,
        [1..=day, 1..=day, 1..=day],
        any::<bool>(),
    )
        .prop_map(|(a, b, attempts, mut q, reconnect)| {
            q.sort_unstable();
            let ms = Duration::from_millis;
            Policy {
                backoff: Backoff::try_new(ms(a.min(b)), ms(a.max(b)), attempts)
                    .expect("a valid backoff"),
                quarantine: Quarantine::try_new(q.map(ms)).expect("a valid ladder"),
                reconnect,
            }
        })
}

fn resolve(g: &Gen, state: &State) -> Generation {
    match g {
        Gen::Current => state.generation,
        Gen::Previous => Generation(state.generation.0.saturating_sub(1)),
        Gen::Next => state.generation.next(),
        Gen::Any(n) => Generation(*n),
    }
}

fn verdict(action: Action) -> Verdict {
    let retry_after = match action {
        Action::RetryAfter(d) => Some(d),
        _ => None,
    };
    Verdict {
        kind: ErrorKind::Transport,
        action,
        retry_after,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn no_input_sequence_panics(
        policy in policy(),
        seed in any::<u64>(),
        remote in any::<bool>(),
        ops in prop::collection::vec((op(), duration()), 1..80),
    ) {
        let mut state = State::starting_with(if remote { Stage::Connect } else { Stage::Spawn });
        let mut rng = SeededRng::new(seed);
        let mut now = Duration::ZERO;
        let mut armed: Option<u64> = None;
        for (op, advance) in ops {
            now = now.saturating_add(advance);
            let failure = FailureInfo::default();
            let input = match op {
                Op::Start(disabled) => Input::Start { disabled },
                Op::Stage(g, stage) => Input::Stage { generation: resolve(&g, &state), stage },
                Op::Established(g) => Input::Established { generation: resolve(&g, &state) },
                Op::AttemptFailed(g, a) => Input::AttemptFailed {
                    generation: resolve(&g, &state),
                    verdict: verdict(a),
                    failure,
                },
                Op::Lost(g, a) => Input::Lost {
                    generation: resolve(&g, &state),
                    verdict: verdict(a),
                    failure,
                },
                Op::Timer(token) => match token.or(armed) {
                    Some(token) => Input::Timer { token },
                    None => continue,
                },
                Op::Plain(input) => *input,
            };
            for effect in step(&mut state, input, now, &policy, &mut rng) {
                if let Effect::Arm { token, at } = effect {
                    prop_assert!(at >= now, "armed at {at:?}, before now {now:?}");
                    armed = Some(token);
                }
            }
            let info = state.info(now, &policy);
            prop_assert!(info.state.is_some());
        }
    }
}
