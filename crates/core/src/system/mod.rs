//! The machine's own life as the supervisors need it (issue 29): it went to sleep, it woke,
//! the network went away or came back. Every source — logind and NetworkManager on Linux,
//! NSWorkspace on macOS, power broadcasts on Windows, and the fallback that needs nothing from
//! the OS — reports one `SystemEvent`, so that what the supervisors do about it stays one pure
//! decision, tested under paused time.
//!
//! Built so far: the fallback source, `leap`, which notices a suspend when a clock that
//! counts it leaps ahead of the monotonic clock, which does not. The OS sources, the input to
//! `supervisor::state::step` and the events are the next slices.

pub mod leap;

use std::time::Duration;

/// What happened to the machine, whichever source told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemEvent {
    /// It is about to sleep (only an OS source can say so beforehand).
    Sleeping,
    /// It woke; `slept` is how long, when the source knows.
    Awake { slept: Option<Duration> },
    /// The network went away.
    Offline,
    /// The network is back.
    Online,
}
