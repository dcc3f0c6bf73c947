//! The machine's own life as the supervisors need it (issue 29): it went to sleep, it woke,
//! the network went away or came back. Every source — logind and NetworkManager on Linux,
//! IOKit's power notifications and Network.framework's path monitor on macOS, the power
//! manager and the IP helper on Windows, and the fallback that needs nothing from the OS —
//! reports one `SystemEvent`, so that what the supervisors do about it stays one pure
//! decision, tested under paused time.
//!
//! The fallback source, `leap`, notices a suspend when a clock that counts it leaps ahead of
//! the monotonic clock, which does not; `watch` is the process's task that runs it and tells
//! every supervisor on one channel, which feeds `Input::Woke` to the pure step and publishes a
//! `system` event. The OS's own: on Linux, `linux` (logind and NetworkManager on the system
//! bus, netlink's routes where NetworkManager is not there); on macOS, `macos`; on Windows,
//! `windows`. What the last two's signals tell is `signals`, compiled everywhere so that its
//! tests run on Linux too. An OS source reports to a `Sink` that `watch` hands it, so that
//! the sources never name the watch.

pub mod leap;
#[cfg(target_os = "linux")]
#[cfg_attr(test, allow(dead_code))] // a unit test's process does not watch the machine's OS
mod linux;
#[cfg(target_os = "macos")]
#[cfg_attr(test, allow(dead_code))]
mod macos;
// macOS's source uses one part of it, Windows' another; it is compiled everywhere so that its
// tests run on Linux too.
#[cfg_attr(not(test), allow(dead_code))]
mod signals;
pub mod watch;
#[cfg(windows)]
#[cfg_attr(test, allow(dead_code))]
mod windows;

use futures_util::future::BoxFuture;
use serde::Serialize;
use std::time::Duration;
use tokio::sync::broadcast;

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

/// Where an OS source reports what it saw: the process's watch (`watch::start` hands over its
/// own functions), or another, so that a source is one function of its sink.
#[derive(Clone, Copy)]
pub(crate) struct Sink {
    /// One report (`watch::tell`).
    pub tell: fn(SystemEvent),
    /// The machine is about to sleep (`watch::going_to_sleep`): tells `Sleeping` and runs the
    /// process's hooks, bounded; a source that holds the sleep back lets it go after this.
    pub going_to_sleep: fn() -> BoxFuture<'static, ()>,
    /// What the supervisors hear (`watch::subscribe`): a wake takes the network for back, so
    /// a network source that still sees none says so again after one.
    pub subscribe: fn() -> Option<broadcast::Receiver<SystemEvent>>,
}
