//! What a failure means for the connection: retry, wait as told, start a new session,
//! retire, or hand it back to the caller. Walks the whole source chain — our `Error`s,
//! `reqwest::Error`s, `std::io::Error`s (into what they wrap), rustls errors — and keeps the
//! most specific finding: sign-in > auth > permission > config > rate limit > server > session
//! expired > protocol > timeout > transport > cancelled. It reads kinds, statuses and
//! Retry-After; it never parses a message.

use crate::error::{Error, ErrorKind, Phase};
use std::error::Error as StdError;
use std::io;
use std::time::Duration;

/// Why a server was retired: a failure that waiting cannot fix; only a person restarts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetireReason {
    Auth,
    /// An OAuth server with no usable token: a person must sign in.
    SignIn,
    Permission,
    Config,
}

impl RetireReason {
    /// The spelling the `retired` state shows (DESIGN.md).
    pub fn as_str(self) -> &'static str {
        match self {
            RetireReason::Auth => "auth",
            RetireReason::SignIn => "sign_in",
            RetireReason::Permission => "permission",
            RetireReason::Config => "config",
        }
    }
}

/// What the supervisor does with a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Try again after the backoff delay (with jitter); counts against the round.
    Retry,
    /// Try again after exactly this long (Retry-After); counts as an attempt.
    RetryAfter(Duration),
    /// The server forgot the session: start a new generation at once.
    NewSession,
    /// Stop and show why.
    Retire(RetireReason),
    /// The call fails; the connection is fine and stays.
    ReturnToCaller,
    /// The call fails and is never replayed; the connection is suspect: reconnect.
    ReturnAndReconnect,
}

/// A classified failure: the kind to report, the action, and the wait the server asked for
/// (for `Backoff::server_mandated`, and for a caller told to come back later).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Verdict {
    pub kind: ErrorKind,
    pub action: Action,
    pub retry_after: Option<Duration>,
}

/// What a failure is, most specific first: the derived order is the precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    SignIn,
    Auth,
    Permission,
    Config,
    RateLimit,
    Server,
    SessionExpired,
    /// Another 4xx, a JSON-RPC error, or a protocol violation: the server answered no.
    Rejected,
    Timeout,
    Transport,
    Cancelled,
}

impl Class {
    fn kind(self) -> ErrorKind {
        match self {
            Class::SignIn => ErrorKind::SignIn,
            Class::Auth => ErrorKind::Auth,
            Class::Permission => ErrorKind::Permission,
            Class::Config => ErrorKind::Config,
            Class::RateLimit => ErrorKind::RateLimited,
            Class::Server => ErrorKind::Server,
            Class::SessionExpired => ErrorKind::SessionExpired,
            Class::Rejected => ErrorKind::Protocol,
            Class::Timeout => ErrorKind::Timeout,
            Class::Transport => ErrorKind::Transport,
            Class::Cancelled => ErrorKind::Cancelled,
        }
    }
}

/// What one error in the chain says.
#[derive(Debug, Clone, Copy)]
struct Finding {
    class: Class,
    kind: ErrorKind,
    retry_after: Option<Duration>,
    /// Found in a lifeline `Error`, whose kind the layer that built it chose.
    ours: bool,
}

impl Finding {
    fn of(class: Class) -> Self {
        Finding {
            class,
            kind: class.kind(),
            retry_after: None,
            ours: false,
        }
    }
}

/// Source chains are short; the bound only guards against a pathological one.
const MAX_DEPTH: usize = 64;

/// Classifies `err`, which happened in `phase`; `sent_session` says whether the failed
/// request carried a session id (a 404 to it means the session expired).
pub fn classify(err: &(dyn StdError + 'static), phase: Phase, sent_session: bool) -> Verdict {
    let mut best: Option<Finding> = None;
    let mut chain_retry_after = None;
    let mut transport_closed = false;
    let mut cur = Some(err);
    for _ in 0..MAX_DEPTH {
        let Some(e) = cur else { break };
        if let Some(ours) = e.downcast_ref::<Error>() {
            transport_closed |= ours.is_transport_closed();
        }
        if let Some(found) = finding(e, sent_session) {
            chain_retry_after = chain_retry_after.or(found.retry_after);
            // On a tie our own error's kind wins over a foreign error's (which is a guess),
            // and otherwise the outermost: the layer with the most context named it.
            if best.is_none_or(|b| (found.class, !found.ours) < (b.class, !b.ours)) {
                best = Some(found);
            }
        }
        // An io::Error's `source()` skips the error it wraps; walk into that one instead.
        cur = match e.downcast_ref::<io::Error>().and_then(io::Error::get_ref) {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => e.source(),
        };
    }
    // An error that says nothing we can read is treated as a transport failure: retried
    // with backoff, never a reason to retire.
    let best = best.unwrap_or(Finding::of(Class::Transport));
    // Clamped here too, for an error built anywhere but the HTTP transport's parser.
    let retry_after = best
        .retry_after
        .or(chain_retry_after)
        .map(|d| d.min(super::MAX_SERVER_WAIT));
    Verdict {
        kind: best.kind,
        action: action(best.class, phase, retry_after, transport_closed),
        retry_after,
    }
}

/// The DESIGN.md table. In the call phase, a failure whose connection has already closed
/// (`Error::is_transport_closed`) cannot leave the connection standing, so "return to the
/// caller" becomes "return and reconnect" — except for a cancellation, which is on purpose.
fn action(class: Class, phase: Phase, retry_after: Option<Duration>, closed: bool) -> Action {
    use Action::*;
    match (phase, class) {
        (_, Class::SignIn) => Retire(RetireReason::SignIn),
        (_, Class::Auth) => Retire(RetireReason::Auth),
        (_, Class::Cancelled) => ReturnToCaller,
        (Phase::Connect, Class::Permission) => Retire(RetireReason::Permission),
        (Phase::Connect, Class::Config) => Retire(RetireReason::Config),
        (Phase::Connect, Class::RateLimit) => retry_after.map_or(Retry, RetryAfter),
        (Phase::Connect, Class::SessionExpired) => NewSession,
        (Phase::Connect, Class::Server | Class::Rejected | Class::Timeout | Class::Transport) => {
            Retry
        }
        (Phase::Call, Class::Permission | Class::Config | Class::RateLimit | Class::Rejected) => {
            if closed {
                ReturnAndReconnect
            } else {
                ReturnToCaller
            }
        }
        (
            Phase::Call,
            Class::Server | Class::SessionExpired | Class::Timeout | Class::Transport,
        ) => ReturnAndReconnect,
    }
}

fn finding(e: &(dyn StdError + 'static), sent_session: bool) -> Option<Finding> {
    if let Some(ours) = e.downcast_ref::<Error>() {
        return Some(ours_finding(ours, sent_session));
    }
    if let Some(r) = e.downcast_ref::<reqwest::Error>() {
        let class = match r.status() {
            Some(s) => status_class(s.as_u16(), None, sent_session).unwrap_or(Class::Rejected),
            // An invalid URL is reported as a builder error.
            None if r.is_builder() => Class::Config,
            None if r.is_timeout() => Class::Timeout,
            None => Class::Transport,
        };
        return Some(Finding::of(class));
    }
    if let Some(io) = e.downcast_ref::<io::Error>() {
        return Some(Finding::of(match io.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Class::Timeout,
            _ => Class::Transport,
        }));
    }
    e.downcast_ref::<rustls::Error>()
        .map(|_| Finding::of(Class::Transport))
}

/// Our error: the more specific of what its kind and its HTTP status say. The error keeps
/// its own kind unless the status says something more specific (a 503 with Retry-After is
/// a rate limit whatever the transport called it).
fn ours_finding(e: &Error, sent_session: bool) -> Finding {
    let c = e.context();
    let by_kind = match e.kind() {
        ErrorKind::SignIn => Class::SignIn,
        ErrorKind::Auth => Class::Auth,
        ErrorKind::Permission => Class::Permission,
        ErrorKind::RateLimited => Class::RateLimit,
        ErrorKind::Spawn | ErrorKind::Config => Class::Config,
        ErrorKind::Server if c.rpc_code.is_some() => Class::Rejected,
        ErrorKind::Server => Class::Server,
        ErrorKind::SessionExpired => Class::SessionExpired,
        ErrorKind::Protocol => Class::Rejected,
        ErrorKind::Timeout => Class::Timeout,
        ErrorKind::Transport | ErrorKind::StreamLost | ErrorKind::ProcessExit => Class::Transport,
        ErrorKind::Cancelled => Class::Cancelled,
    };
    let by_status = c
        .status
        .and_then(|s| status_class(s, c.retry_after, sent_session));
    let (class, kind) = match by_status {
        Some(s) if s < by_kind => (s, s.kind()),
        _ => (by_kind, e.kind()),
    };
    Finding {
        class,
        kind,
        retry_after: c.retry_after,
        ours: true,
    }
}

fn status_class(status: u16, retry_after: Option<Duration>, sent_session: bool) -> Option<Class> {
    Some(match status {
        401 => Class::Auth,
        403 => Class::Permission,
        429 => Class::RateLimit,
        503 if retry_after.is_some() => Class::RateLimit,
        404 if sent_session => Class::SessionExpired,
        500..=599 => Class::Server,
        400..=499 => Class::Rejected,
        _ => return None,
    })
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
