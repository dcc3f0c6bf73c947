//! The machine's own life as the supervisors need it (issue 29): it went to sleep, it woke,
//! the network went away or came back. Every source — logind and NetworkManager on Linux,
//! NSWorkspace on macOS, power broadcasts on Windows, and the fallback that needs nothing from
//! the OS — reports one `SystemEvent`, so that what the supervisors do about it stays one pure
//! decision, tested under paused time.
//!
//! Built so far: the fallback source, `leap`, which notices a suspend when a clock that
//! counts it leaps ahead of the monotonic clock, which does not; `watch`, the process's task
//! that runs it and tells every supervisor on one channel, which feeds `Input::Woke` to the
//! pure step and publishes a `system` event. The OS sources are the next slices.

pub mod leap;
pub mod watch;

use serde::Serialize;
use std::time::Duration;

/// What happened to the machine, as a `system` event says it (`events::EventBody::System`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum SystemChange {
    Sleeping,
    Awake,
    Offline,
    Online,
}

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
