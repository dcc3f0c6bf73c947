//! Who uses a server through the gateway: the hosts attached (clientInfo and protocol
//! revision from their `initialize`, how they reach it), their calls in flight, and the
//! per-tool statistics of the last hour (`stats.rs`). One `Hosts` per process (the app's
//! for every attached bridge, or a `lifeline connect`'s own), shared by its gateway
//! sessions; it publishes `host_attached`, `host_detached` and `host_call` on the bus, so
//! the activity feed and the history see them, and the history's `host_call` events of the
//! last hour are replayed into it at start (`replay`), so a restart keeps the hour.
//!
//! Nothing a host sends is kept as it came: its name and version are capped and scrubbed,
//! a tool's name too, and a call is kept as tool, duration and outcome only.

use super::stats::{ServerStats, ToolStats};
use crate::events::{CallOutcome, EventBody, EventBus, Generation, HostInfo, HostMode, rfc3339};
use crate::redact::{Redactor, cap};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

/// The longest host name, version or tool name kept.
const MAX_NAME: usize = 128;

/// A host attached to a server now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AttachedHost {
    #[serde(flatten)]
    pub host: HostInfo,
    /// When its `initialize` was answered.
    pub attached_at: String,
    /// Its `tools/call`s not answered yet.
    pub live_calls: u32,
}

/// A server's Hosts section.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HostsView {
    pub hosts: Vec<AttachedHost>,
    /// Every attached host's calls in flight.
    pub live_calls: u32,
    /// The last hour's calls by tool, every host together.
    pub tools: Vec<ToolStats>,
}

/// The process's hosts; cheap to clone.
#[derive(Clone)]
pub struct Hosts {
    inner: Arc<Inner>,
}

struct Inner {
    bus: Arc<EventBus>,
    mode: HostMode,
    next_id: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// By session id.
    attached: BTreeMap<u64, (String, AttachedHost)>,
    stats: HashMap<String, ServerStats>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn epoch_ms(t: SystemTime) -> u64 {
    u64::try_from(t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(0)
}

/// A string a host sent, as it may be shown: scrubbed, capped, never empty.
fn shown(redactor: &Redactor, text: &str, empty: &str) -> String {
    let text = cap(&redactor.scrub(text.trim()), MAX_NAME);
    if text.is_empty() {
        empty.to_owned()
    } else {
        text
    }
}

impl Hosts {
    /// Hosts reaching servers by `mode`, published on `bus`.
    pub fn new(bus: Arc<EventBus>, mode: HostMode) -> Hosts {
        Hosts {
            inner: Arc::new(Inner {
                bus,
                mode,
                next_id: AtomicU64::new(1),
                state: Mutex::default(),
            }),
        }
    }

    /// A host session for `server` began: its recorder, which makes it a host once it
    /// initializes.
    pub fn recorder(&self, server: &str, redactor: Redactor) -> HostRecorder {
        HostRecorder {
            hosts: self.clone(),
            server: server.to_owned(),
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            redactor,
            info: Mutex::new(None),
            generation: AtomicU64::new(0),
        }
    }

    /// `server`'s Hosts section as of `now`.
    pub fn view(&self, server: &str, now: SystemTime) -> HostsView {
        let mut state = lock(&self.inner.state);
        let hosts: Vec<AttachedHost> = state
            .attached
            .values()
            .filter(|(s, _)| s == server)
            .map(|(_, h)| h.clone())
            .collect();
        let tools = state
            .stats
            .get_mut(server)
            .map(|s| s.view(epoch_ms(now)))
            .unwrap_or_default();
        HostsView {
            live_calls: hosts.iter().map(|h| h.live_calls).sum(),
            hosts,
            tools,
        }
    }

    /// Counts a past host call (the history's `host_call` events, `PastHostCall`) in the
    /// statistics at its own time; the window drops what is older than an hour.
    pub fn replay(&self, call: &crate::history::PastHostCall) {
        lock(&self.inner.state)
            .stats
            .entry(call.server.clone())
            .or_default()
            .record(&call.tool, call.at_ms, call.duration_ms, call.ok);
    }

    /// Counts the last hour of hosts' calls from `history` (earlier runs, `replay`), so a
    /// restart keeps the statistics; a history that cannot be read is logged and skipped.
    pub fn replay_history(&self, history: &crate::history::History) {
        let since = SystemTime::now() - super::stats::WINDOW;
        match history.host_calls_since(since) {
            Ok(calls) => calls.iter().for_each(|c| self.replay(c)),
            Err(e) => tracing::warn!("history: the hosts' last hour could not be read: {e}"),
        }
    }

    fn emit(&self, server: &str, generation: Generation, body: EventBody) {
        self.inner.bus.emit(server, generation, body);
    }
}

/// Records one host session's host: what its `initialize` said, and its calls.
pub struct HostRecorder {
    hosts: Hosts,
    server: String,
    id: u64,
    redactor: Redactor,
    info: Mutex<Option<HostInfo>>,
    /// The generation of its latest answer, for `host_detached`.
    generation: AtomicU64,
}

impl HostRecorder {
    /// The host's `initialize` was answered with `protocol_version`: it is attached.
    pub fn initialized(
        &self,
        params: Option<&Value>,
        protocol_version: &str,
        generation: Generation,
    ) {
        let client = params.and_then(|p| p.get("clientInfo"));
        let field = |k: &str| client.and_then(|c| c.get(k)).and_then(Value::as_str);
        let info = HostInfo {
            id: self.id,
            name: shown(&self.redactor, field("name").unwrap_or(""), "unknown host"),
            version: shown(&self.redactor, field("version").unwrap_or(""), "?"),
            protocol_version: protocol_version.to_owned(),
            mode: self.hosts.inner.mode,
        };
        *self.info.lock().unwrap_or_else(PoisonError::into_inner) = Some(info.clone());
        self.generation.store(generation.0, Ordering::Relaxed);
        {
            let mut state = lock(&self.hosts.inner.state);
            let live = state
                .attached
                .get(&self.id)
                .map_or(0, |(_, h)| h.live_calls);
            let host = AttachedHost {
                host: info.clone(),
                attached_at: rfc3339(SystemTime::now()),
                live_calls: live,
            };
            state.attached.insert(self.id, (self.server.clone(), host));
        }
        self.hosts.emit(
            &self.server,
            generation,
            EventBody::HostAttached { host: info },
        );
    }

    fn info(&self) -> Option<HostInfo> {
        self.info
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn add_live(&self, delta: i32) {
        let mut state = lock(&self.hosts.inner.state);
        if let Some((_, h)) = state.attached.get_mut(&self.id) {
            h.live_calls = h.live_calls.saturating_add_signed(delta);
        }
    }

    /// A `tools/call` of `tool` began; finish the guard when it is answered. Dropped
    /// unfinished (the host cancelled), it only leaves the live calls.
    pub fn call(&self, tool: &str) -> CallGuard<'_> {
        self.add_live(1);
        CallGuard {
            session: self,
            tool: shown(&self.redactor, tool, "?"),
            started: tokio::time::Instant::now(),
        }
    }

    /// The session ended: a host that had initialized is detached.
    fn detach(&self) {
        let removed = lock(&self.hosts.inner.state).attached.remove(&self.id);
        if let (Some(host), Some(_)) = (self.info(), removed) {
            let generation = Generation(self.generation.load(Ordering::Relaxed));
            self.hosts
                .emit(&self.server, generation, EventBody::HostDetached { host });
        }
    }
}

impl Drop for HostRecorder {
    fn drop(&mut self) {
        self.detach();
    }
}

/// A host's call in flight.
pub struct CallGuard<'a> {
    session: &'a HostRecorder,
    tool: String,
    started: tokio::time::Instant,
}

impl CallGuard<'_> {
    /// The call was answered: counted in the statistics and published as `host_call`.
    pub fn finish(self, outcome: CallOutcome, error_kind: Option<String>, generation: Generation) {
        let s = self.session;
        let duration_ms = crate::events::millis(self.started.elapsed());
        let host = s.info();
        s.generation.store(generation.0, Ordering::Relaxed);
        lock(&s.hosts.inner.state)
            .stats
            .entry(s.server.clone())
            .or_default()
            .record(
                &self.tool,
                epoch_ms(SystemTime::now()),
                duration_ms,
                outcome == CallOutcome::Ok,
            );
        let body = EventBody::HostCall {
            host_id: s.id,
            host: host.map_or_else(|| "unknown host".to_owned(), |h| h.name),
            tool: self.tool.clone(),
            outcome,
            duration_ms,
            error_kind,
        };
        s.hosts.emit(&s.server, generation, body);
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.session.add_live(-1);
    }
}

#[cfg(test)]
#[path = "hosts_tests.rs"]
mod tests;
