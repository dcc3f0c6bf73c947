//! The open-files limit (`RLIMIT_NOFILE`) of a process that serves: `lifeline serve` and
//! the app's core process hold a socket per host connection and pipes per server, and the
//! usual soft limit (1024, 256 on macOS) runs out long before the endpoint's caps do.
//! `raise` lifts the soft limit to the hard one, capped at `CEILING` (macOS: `OPEN_MAX`);
//! the servers Lifeline starts get the original soft limit back (`original`, restored in
//! `transport::spawn`'s pre-exec hook), because `select()`-based programs break on
//! descriptors past 1024.

#[cfg(unix)]
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
#[cfg(unix)]
use std::sync::OnceLock;

/// The highest soft limit `raise` sets.
#[cfg(not(target_os = "macos"))]
pub const CEILING: u64 = 65536;
/// macOS refuses a soft limit above `OPEN_MAX` (10240) whatever the hard limit says.
#[cfg(target_os = "macos")]
pub const CEILING: u64 = 10240;

/// The limits before `raise`, once it raised them.
#[cfg(unix)]
static ORIGINAL: OnceLock<Rlimit> = OnceLock::new();

/// Raises this process's soft open-files limit to the hard one (at most `CEILING`) and
/// remembers the original for the processes it starts. The limits before and after, or
/// `None` where there are no such limits or the OS refused (logged); never lowers one.
#[cfg(unix)]
pub fn raise() -> Option<(u64, u64)> {
    // `None` is no limit (RLIM_INFINITY).
    let now = getrlimit(Resource::Nofile);
    let soft = now.current.unwrap_or(u64::MAX);
    let wanted = now.maximum.unwrap_or(u64::MAX).min(CEILING);
    if wanted <= soft {
        return Some((soft, soft));
    }
    let raised = Rlimit {
        current: Some(wanted),
        maximum: now.maximum,
    };
    // Remembered first: a server started from here on gets `now` back.
    let _ = ORIGINAL.set(now);
    if let Err(e) = setrlimit(Resource::Nofile, raised) {
        tracing::warn!("could not raise the open-files limit from {soft} to {wanted} ({e})");
        return None;
    }
    tracing::debug!("raised the open-files limit from {soft} to {wanted}");
    Some((soft, wanted))
}

/// Elsewhere there is no such limit to raise.
#[cfg(not(unix))]
pub fn raise() -> Option<(u64, u64)> {
    None
}

/// The limits before `raise` changed them, for a child to get back; `None` when they were
/// never changed.
#[cfg(unix)]
pub(crate) fn original() -> Option<Rlimit> {
    ORIGINAL.get().copied()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn soft() -> u64 {
        getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
    }

    /// Lowers this (test) process's soft limit, as a login session's 1024 would be.
    fn lower_soft_to(limit: u64) {
        let mut now = getrlimit(Resource::Nofile);
        now.current = Some(limit);
        setrlimit(Resource::Nofile, now).unwrap();
    }

    #[test]
    fn the_soft_limit_is_raised_and_the_original_kept() {
        lower_soft_to(200);
        let (before, after) = raise().expect("raised");
        assert_eq!(before, 200);
        assert!(after > 200 && after <= CEILING, "{after}");
        assert_eq!(soft(), after);
        assert_eq!(original().and_then(|r| r.current), Some(200));
        // Again: nothing lower, the original still the first one.
        assert_eq!(raise(), Some((after, after)));
        assert_eq!(original().and_then(|r| r.current), Some(200));
    }
}
