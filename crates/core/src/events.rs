//! The closed set of lifecycle events and their schema (docs/events.md). The CLI's
//! `watch --json`, the desktop UI and the diagnostic bundle all read this one shape.
//!
//! Architecture invariant: `seq` is gap-free per process and assigned under the same lock
//! that publishes, so a consumer that sees a gap knows it lost events and re-snapshots.
//! Nothing here carries a secret: failures are `FailureInfo`, built from allow-listed
//! `Error` context and an already-scrubbed message.

use crate::error::{Error, ExitStatus};
pub use crate::system::SystemChange;
use serde::Serialize;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};
use tokio::sync::broadcast;

pub const SCHEMA_VERSION: u32 = 1;

/// The most tool names one `tools` event carries. Every change sends the list to every
/// subscriber and into the history, so a server listing a million tools must not make
/// each event megabytes; a thousand is more than any person scrolls.
pub const MAX_TOOL_NAMES: usize = 1000;

/// Which connection of a server something belongs to: the supervisor counts from 1, one up
/// for each connection it opens (0 before the first). A reconnect count, never a protocol
/// version: that is a revision (`protocol::Revision`). On the wire a plain number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(transparent)]
pub struct Generation(pub u64);

impl Generation {
    /// The generation after this one.
    pub fn next(self) -> Generation {
        Generation(self.0.saturating_add(1))
    }
}

impl std::fmt::Display for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// One event. `at` is RFC 3339 with milliseconds, UTC.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Event {
    pub v: u32,
    pub seq: u64,
    pub at: String,
    pub server: String,
    pub generation: Generation,
    #[serde(flatten)]
    pub body: EventBody,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventBody {
    /// The supervisor's observable state changed.
    State(StateInfo),
    /// An attempt or a connection failed (also carried as `cause` of the state it led to).
    Failure { failure: FailureInfo },
    /// The tool list of a generation changed, or was marked stale or dropped. `count` is
    /// every tool hosts are shown; `names` the first `MAX_TOOL_NAMES` of them (fewer than
    /// `count` means the list was truncated; the full definitions are read from the
    /// supervisor). `held`: listed tools the pins hold for review; `new`: tools pinned on
    /// first sight, not yet looked at (docs/trust.md).
    Tools {
        count: usize,
        stale: bool,
        names: Vec<String>,
        held: usize,
        new: usize,
    },
    /// Trust (docs/trust.md): tools held out of the hosts' lists for review (a changed
    /// definition, a tool new to a pinned server, or a rejected one changed again). `count`
    /// is every tool; `tools` at most `MAX_TOOL_NAMES` of them. Told once per change.
    ToolChanged { tools: Vec<String>, count: usize },
    /// Held tools the user approved: hosts are shown them now.
    ToolApproved { tools: Vec<String>, count: usize },
    /// Held tools the user rejected: they stay out of the hosts' lists.
    ToolRejected { tools: Vec<String>, count: usize },
    /// The machine slept, woke, or its network went or came back (issue 29): each
    /// supervisor tells it on its own server's timeline. `slept_ms`: how long it slept, when
    /// known.
    System {
        change: SystemChange,
        slept_ms: Option<u64>,
    },
    /// A tool call through the supervisor finished.
    Call {
        tool: String,
        outcome: CallOutcome,
        duration_ms: u64,
        error: Option<FailureInfo>,
    },
    /// A health ping or a call completed: the last successful round trip.
    RoundTrip { round_trip_ms: u64 },
    /// A host (an AI client) initialized a gateway session on this server.
    HostAttached { host: HostInfo },
    /// A host's gateway session ended (it closed its side, or the app quit).
    HostDetached { host: HostInfo },
    /// A host's `tools/call` through the gateway was answered, as the host saw it: the
    /// duration includes any wait for ready; `error_kind` is the failure's kind, or the
    /// gateway's state word (`not_ready`, `halted`, `upstream_lost`) when it answered
    /// without the server. Never the arguments or the result.
    HostCall {
        host_id: u64,
        host: String,
        tool: String,
        outcome: CallOutcome,
        duration_ms: u64,
        error_kind: Option<String>,
    },
    /// OAuth (docs/auth.md): the server's sign-in changed. `auth` is the sign-in as it is
    /// now; `failure` says why a refresh failed. Never a token.
    Auth {
        change: AuthChange,
        auth: AuthStatus,
        failure: Option<FailureInfo>,
    },
}

fn scrub(text: &mut String) {
    let scrubbed = crate::redact::scrub_learned(text);
    if scrubbed != *text {
        *text = scrubbed;
    }
}

fn scrub_opt(text: &mut Option<String>) {
    if let Some(t) = text {
        scrub(t);
    }
}

impl FailureInfo {
    fn scrub_learned(&mut self) {
        scrub(&mut self.message);
        scrub_opt(&mut self.reason);
        scrub_opt(&mut self.method);
        scrub_opt(&mut self.url_path);
    }
}

impl EventBody {
    /// Every string a server could have shaped, with the learned secrets masked.
    fn scrub_learned(&mut self) {
        match self {
            EventBody::State(info) => {
                scrub_opt(&mut info.reason);
                if let Some(cause) = &mut info.cause {
                    cause.scrub_learned();
                }
            }
            EventBody::Failure { failure } => failure.scrub_learned(),
            EventBody::Tools { names, .. }
            | EventBody::ToolChanged { tools: names, .. }
            | EventBody::ToolApproved { tools: names, .. }
            | EventBody::ToolRejected { tools: names, .. } => names.iter_mut().for_each(scrub),
            EventBody::Call { tool, error, .. } => {
                scrub(tool);
                if let Some(e) = error {
                    e.scrub_learned();
                }
            }
            EventBody::RoundTrip { .. } | EventBody::System { .. } => {}
            EventBody::HostAttached { host } | EventBody::HostDetached { host } => {
                scrub(&mut host.name);
                scrub(&mut host.version);
            }
            EventBody::HostCall {
                host,
                tool,
                error_kind,
                ..
            } => {
                scrub(host);
                scrub(tool);
                scrub_opt(error_kind);
            }
            EventBody::Auth { auth, failure, .. } => {
                scrub_opt(&mut auth.issuer);
                auth.scopes.iter_mut().for_each(scrub);
                if let Some(f) = failure {
                    f.scrub_learned();
                }
            }
        }
    }
}

/// What happened to a server's OAuth sign-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum AuthChange {
    /// Lifeline holds no usable token: a person must sign in (`lifeline login`, Sign in).
    SignInNeeded,
    /// A sign-in finished, here or in another Lifeline process.
    SignedIn,
    /// The access token was refreshed (by this server, or another sharing its sign-in).
    Refreshed,
    /// A refresh failed: transient ones are retried with backoff; a refused one
    /// (`invalid_grant`) is followed by `sign_in_needed`.
    RefreshFailed,
    /// The sign-in was forgotten (Sign out, `lifeline logout`).
    SignedOut,
}

/// A server's OAuth sign-in as the UI and `lifeline check` show it: no token, only who
/// granted it, for what, until when, and how its last refresh went.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AuthStatus {
    /// Lifeline holds an access token for this server.
    pub signed_in: bool,
    /// A person must sign in before the server can be reached.
    pub needs_sign_in: bool,
    /// The authorization server: its issuer URL, once known. (Not named
    /// `authorization_server`: output scrubbing masks any field whose name says
    /// "authorization".)
    pub issuer: Option<String>,
    /// The scopes granted (else those asked for).
    pub scopes: Vec<String>,
    /// When the access token expires, if the authorization server said (RFC 3339).
    pub expires_at: Option<String>,
    pub signed_in_at: Option<String>,
    pub last_refresh_at: Option<String>,
    /// Whether the last refresh worked; null before the first.
    pub last_refresh_ok: Option<bool>,
}

/// How a host reaches the gateway: through the running app (`lifeline connect` attached
/// to it over the local socket) or a supervisor in the `lifeline connect` process itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum HostMode {
    App,
    InProcess,
}

/// A host as its `initialize` named itself (clientInfo, scrubbed and capped) and the
/// gateway session that serves it (`id`, unique in this process).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HostInfo {
    pub id: u64,
    pub name: String,
    pub version: String,
    pub protocol_version: String,
    pub mode: HostMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    Ok,
    ToolError,
    Error,
}

/// The state vocabulary of DESIGN.md, exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum StateName {
    Connecting,
    Ready,
    Retrying,
    Reconnecting,
    Quarantined,
    GaveUp,
    Retired,
    Disabled,
    Stopping,
}

impl StateName {
    pub fn as_str(self) -> &'static str {
        match self {
            StateName::Connecting => "connecting",
            StateName::Ready => "ready",
            StateName::Retrying => "retrying",
            StateName::Reconnecting => "reconnecting",
            StateName::Quarantined => "quarantined",
            StateName::GaveUp => "gave_up",
            StateName::Retired => "retired",
            StateName::Disabled => "disabled",
            StateName::Stopping => "stopping",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct StateInfo {
    pub state: Option<StateName>,
    /// connecting: spawn | connect | discover | initialize | list_tools
    #[cfg_attr(feature = "ts", ts(as = "Option<crate::error::Stage>"))]
    pub stage: Option<&'static str>,
    /// The attempt in this outage (1-based) and the round's budget.
    pub attempt: Option<u32>,
    pub max_attempts: Option<u32>,
    /// Retrying, reconnecting, quarantined: the wait and when it ends (absolute, so
    /// consumers count down locally).
    pub delay_ms: Option<u64>,
    pub next_attempt_at: Option<String>,
    pub quarantine_level: u8,
    /// retired: auth | permission | config; otherwise a short reason.
    pub reason: Option<String>,
    pub cause: Option<FailureInfo>,
    /// The MCP revision the live session negotiated (a revision, not a transport: over HTTP
    /// `2024-11-05` is legacy HTTP+SSE, over stdio it is only the oldest revision); null
    /// while there is no live session.
    pub protocol_version: Option<String>,
}

/// A failure as it may leave the process: allow-listed fields and a scrubbed message.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FailureInfo {
    /// An `ErrorKind`; typed for TypeScript as one or any string, because history written by a
    /// newer Lifeline may hold a kind this release does not know, and the UI still renders it.
    #[cfg_attr(feature = "ts", ts(type = "ErrorKind | (string & {})"))]
    pub kind: String,
    #[cfg_attr(feature = "ts", ts(as = "Option<crate::error::Phase>"))]
    pub phase: Option<&'static str>,
    #[cfg_attr(feature = "ts", ts(as = "Option<crate::error::Stage>"))]
    pub stage: Option<&'static str>,
    pub status: Option<u16>,
    pub reason: Option<String>,
    pub retry_after_ms: Option<u64>,
    pub method: Option<String>,
    pub url_path: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub attempt: Option<u32>,
    pub generation: Generation,
    pub message: String,
}

impl FailureInfo {
    /// `message` is capped; the error's message is already scrubbed by the layer that made it.
    pub fn from_error(e: &Error, generation: Generation, attempt: Option<u32>) -> Self {
        let c = e.context();
        FailureInfo {
            kind: e.kind().as_str().to_owned(),
            phase: c.phase.map(|p| p.as_str()),
            stage: c.stage.map(|s| s.as_str()),
            status: c.status,
            reason: c.reason.clone(),
            retry_after_ms: c.retry_after.map(millis),
            method: c.method.clone(),
            url_path: c.url_path.clone(),
            exit_code: match c.exit {
                Some(ExitStatus::Code(n)) => Some(n),
                _ => None,
            },
            signal: match c.exit {
                Some(ExitStatus::Signal(n)) => Some(n),
                _ => None,
            },
            attempt,
            generation,
            message: crate::redact::cap(e.message(), 2000),
        }
    }
}

pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// RFC 3339 with milliseconds, UTC: "2026-11-29T17:05:20.123Z". A time the format cannot
/// hold is clamped into it (before 1970 reads as 1970, after year 9999 as its last
/// millisecond), so no wait a server asked for can make rendering panic.
pub fn rfc3339(t: SystemTime) -> String {
    let t = t.clamp(SystemTime::UNIX_EPOCH, latest_rfc3339());
    humantime::format_rfc3339_millis(t).to_string()
}

/// `now + d`, saturating at the latest time `rfc3339` can show.
pub fn later(now: SystemTime, d: Duration) -> SystemTime {
    now.checked_add(d)
        .unwrap_or_else(latest_rfc3339)
        .min(latest_rfc3339())
}

/// 9999-12-31T23:59:59.999Z.
fn latest_rfc3339() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(253_402_300_799_999)
}

/// Assigns `seq` and publishes, under one lock, to every subscriber.
///
/// Its owners are many (the fleet, the hosts of the gateway, every host session), so the
/// bus cannot end by being dropped at a known moment: whoever stops the app `close`s it,
/// and every subscriber then gets what was sent before, then the end.
pub struct EventBus {
    /// The next `seq`, and the sender (`None` once closed).
    open: Mutex<Open>,
}

struct Open {
    next_seq: u64,
    tx: Option<broadcast::Sender<Event>>,
}

impl EventBus {
    /// `capacity` events are buffered per subscriber; a slower one sees a gap in `seq`.
    pub fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity.max(1));
        EventBus {
            open: Mutex::new(Open {
                next_seq: 1,
                tx: Some(tx),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every event from now on; after `close`, a receiver that has ended.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        match &self.lock().tx {
            Some(tx) => tx.subscribe(),
            None => broadcast::channel(1).1,
        }
    }

    /// The `seq` of the latest event emitted (0 before the first): every event emitted
    /// after this call has a higher one.
    pub fn last_seq(&self) -> u64 {
        self.lock().next_seq - 1
    }

    /// Publishes `body`, its free text scrubbed once more of every secret learned so far
    /// (`redact::scrub_learned`): a message scrubbed before a server printed its password
    /// on stderr must not carry that password out after.
    pub fn emit(&self, server: &str, generation: Generation, mut body: EventBody) -> Event {
        body.scrub_learned();
        let mut open = self.lock();
        let event = Event {
            v: SCHEMA_VERSION,
            seq: open.next_seq,
            at: rfc3339(SystemTime::now()),
            server: server.to_owned(),
            generation,
            body,
        };
        if let Some(tx) = &open.tx {
            let _ = tx.send(event.clone());
            open.next_seq += 1;
        }
        event
    }

    /// Ends the bus: each subscriber receives what was emitted before, then `Closed`; what
    /// is emitted afterwards reaches no one (and takes no `seq`, so none is missed). Returns
    /// the `seq` of the last event published. Safe to call twice.
    pub fn close(&self) -> u64 {
        let mut open = self.lock();
        open.tx = None;
        open.next_seq - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn seq_is_gap_free_and_events_serialize_flat() {
        let bus = EventBus::new(16);
        let mut rx = bus.subscribe();
        let info = StateInfo {
            state: Some(StateName::Ready),
            ..Default::default()
        };
        bus.emit("a", Generation(1), EventBody::State(info));
        bus.emit(
            "b",
            Generation(2),
            EventBody::RoundTrip { round_trip_ms: 3 },
        );
        let e1 = rx.try_recv().unwrap();
        let e2 = rx.try_recv().unwrap();
        assert_eq!((e1.seq, e2.seq), (1, 2));
        let v = serde_json::to_value(&e1).unwrap();
        assert_eq!(v["type"], "state");
        assert_eq!(v["state"], "ready");
        assert_eq!(v["v"], 1);
        assert_eq!(v["server"], "a");
        let v = serde_json::to_value(&e2).unwrap();
        assert_eq!(v["type"], "round_trip");
        assert_eq!(v["round_trip_ms"], json!(3));
    }

    /// A message made before its secret was learned leaves scrubbed all the same.
    #[test]
    fn events_are_published_without_learned_secrets() {
        let bus = EventBus::new(16);
        let mut rx = bus.subscribe();
        crate::redact::learn_from("x-api-key: EvtKey5Wq2Lm");
        let failure = FailureInfo {
            kind: "process_exit".into(),
            message: "started with EvtKey5Wq2Lm".into(),
            reason: Some("EvtKey5Wq2Lm".into()),
            ..Default::default()
        };
        bus.emit(
            "a",
            Generation(1),
            EventBody::Failure {
                failure: failure.clone(),
            },
        );
        bus.emit(
            "a",
            Generation(1),
            EventBody::State(StateInfo {
                cause: Some(failure),
                ..Default::default()
            }),
        );
        for _ in 0..2 {
            let shown = serde_json::to_string(&rx.try_recv().unwrap()).unwrap();
            assert!(!shown.contains("EvtKey5Wq2Lm"), "{shown}");
            assert!(shown.contains("started with ***"), "{shown}");
        }
    }

    #[test]
    fn a_closed_bus_hands_over_what_it_had_then_ends_every_subscriber() {
        let bus = EventBus::new(16);
        let mut rx = bus.subscribe();
        bus.emit(
            "a",
            Generation(1),
            EventBody::RoundTrip { round_trip_ms: 1 },
        );
        bus.emit(
            "a",
            Generation(1),
            EventBody::RoundTrip { round_trip_ms: 2 },
        );
        assert_eq!(bus.close(), 2);
        // Emitted after the close: reaches no one, and takes no seq.
        bus.emit(
            "a",
            Generation(1),
            EventBody::RoundTrip { round_trip_ms: 3 },
        );
        assert_eq!((bus.last_seq(), bus.close()), (2, 2));
        let seqs = [rx.try_recv().unwrap().seq, rx.try_recv().unwrap().seq];
        assert_eq!(seqs, [1, 2]);
        assert_eq!(rx.try_recv(), Err(broadcast::error::TryRecvError::Closed));
        let mut late = bus.subscribe();
        assert_eq!(late.try_recv(), Err(broadcast::error::TryRecvError::Closed));
    }

    #[test]
    fn timestamps_are_rfc3339_with_milliseconds() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn times_past_year_9999_or_before_1970_are_clamped_not_a_panic() {
        let end = "9999-12-31T23:59:59.999Z";
        let epoch = SystemTime::UNIX_EPOCH;
        let far = epoch + Duration::from_secs(400_000_000_000);
        assert_eq!(rfc3339(far), end);
        assert_eq!(rfc3339(later(SystemTime::now(), Duration::MAX)), end);
        assert_eq!(rfc3339(later(far, Duration::from_secs(1))), end);
        assert_eq!(
            rfc3339(epoch - Duration::from_secs(1)),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339(later(epoch, Duration::from_millis(5))),
            "1970-01-01T00:00:00.005Z"
        );
    }
}
