//! Which step of the fallback order a supervisor remembers as the one that worked last,
//! after an attempt's walk of it (`after_walk`): pure, and re-exported by `state`.

use crate::session::negotiate::Step;

/// How one attempt's walk of the fallback order went, as far as the step that worked last
/// (`SupervisorConfig::last_worked`) is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// No step of the fallback connected.
    NotConnected,
    /// Connected on this step and listed the tools.
    Listed(Step),
    /// Connected on `step`, but tools/list failed. `legacy_answer`: the way an older server
    /// answers a stateless request (`policy::fallback`); `doubted`: this attempt already
    /// tried `initialize` after such an answer; `initialize_allowed`: the fallback order has it.
    ListFailed {
        step: Step,
        legacy_answer: bool,
        doubted: bool,
        initialize_allowed: bool,
    },
}

/// What an attempt does after `Walk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterWalk {
    /// The attempt ends, and `last_worked` holds this: the step that connected and listed,
    /// or nothing after a failure, so the next attempt walks the fallback order from its top
    /// (the spec: cache the revision per server, probe again when the assumption fails).
    Remember(Option<Step>),
    /// A server whose discovery listed the stateless revision answered tools/list the way
    /// older servers answer (it lied, or sits behind something that does not speak the
    /// revision): try `initialize` once, in what is left of the same deadline.
    TryInitialize,
}

/// What `last_worked` holds after an attempt's walk (`establish` keeps it).
pub fn after_walk(walk: Walk) -> AfterWalk {
    match walk {
        Walk::Listed(step) => AfterWalk::Remember(Some(step)),
        Walk::ListFailed {
            step: Step::Stateless,
            legacy_answer: true,
            doubted: false,
            initialize_allowed: true,
        } => AfterWalk::TryInitialize,
        Walk::NotConnected | Walk::ListFailed { .. } => AfterWalk::Remember(None),
    }
}
