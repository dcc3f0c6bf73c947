//! The hosts attached to one supervisor through the gateway (`gateway::serve_lines`, one per
//! host: the in-process bridge has one, the app may have several), shared by the
//! supervisor's attempts and the gateway sessions. Each attempt reads the hosts' client
//! capabilities (`offer`) and initializes the upstream with them; the upstream's
//! `roots/list`, `sampling/createMessage` and `elicitation/create` go to a host that
//! declared the capability (`Relay`), else the session answers as configured. Routing: a
//! host with a call in flight (the most recently active of them), else the most recently
//! active host. A supervisor run for one host (`lifeline connect` in process) holds its
//! first attempt until that host has attached (`hold_first_attempt`), so its first
//! generation already offers the host's capabilities and is not reconnected for them.

use crate::protocol::RpcError;
use crate::protocol::mcp::RELAYED_CAPABILITIES;
use crate::session::Relay;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// One attached host, as the gateway session serving it exposes it.
pub trait Host: Send + Sync {
    /// The client capabilities from the host's `initialize` (a JSON object).
    fn capabilities(&self) -> Value;
    /// True while one of the host's requests is in flight upstream.
    fn busy(&self) -> bool;
    /// When the host last sent a request (`HostSlot::tick`); higher is more recent.
    fn last_active(&self) -> u64;
    /// Sends `method` to the host and waits for its answer (bounded by the gateway).
    /// Dropping the future cancels it at the host.
    fn request(&self, method: &str, params: Value) -> BoxFuture<'static, Result<Value, RpcError>>;
}

/// The supervisor's attached hosts (`SupervisorConfig::hosts`, `Supervisor::hosts`).
#[derive(Default)]
pub struct HostSlot {
    hosts: Mutex<Vec<(u64, Arc<dyn Host>)>>,
    next: AtomicU64,
    clock: AtomicU64,
    /// What the latest attempt offered upstream (`offer`).
    offered: Mutex<Value>,
    /// How long the first attempt waits for a host (`hold_first_attempt`), taken by it.
    hold: Mutex<Option<Duration>>,
    arrived: Notify,
}

/// The capability key a server→client request needs.
fn capability_of(method: &str) -> Option<&'static str> {
    match method {
        "roots/list" => Some("roots"),
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        _ => None,
    }
}

impl HostSlot {
    /// Attaches a host; the key detaches it.
    pub fn attach(&self, host: Arc<dyn Host>) -> u64 {
        let key = self.next.fetch_add(1, Ordering::SeqCst);
        self.hosts.lock().expect("hosts lock").push((key, host));
        self.arrived.notify_one();
        key
    }

    /// Makes the supervisor's first attempt wait, up to `limit`, for a host to attach
    /// before it connects (set before `Supervisor::spawn`).
    pub fn hold_first_attempt(&self, limit: Duration) {
        *self.hold.lock().expect("hold lock") = Some(limit);
    }

    /// For an attempt: the first one waits for a host as `hold_first_attempt` asked.
    pub(crate) async fn first_host(&self) {
        let Some(limit) = self.hold.lock().expect("hold lock").take() else {
            return;
        };
        if self.hosts.lock().expect("hosts lock").is_empty() {
            let _ = tokio::time::timeout(limit, self.arrived.notified()).await;
        }
    }

    pub fn detach(&self, key: u64) {
        self.hosts
            .lock()
            .expect("hosts lock")
            .retain(|(k, _)| *k != key);
    }

    /// A fresh activity stamp (`Host::last_active`).
    pub fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The hosts, most recently active first.
    fn by_recency(&self) -> Vec<Arc<dyn Host>> {
        let mut hosts: Vec<_> = self
            .hosts
            .lock()
            .expect("hosts lock")
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        hosts.sort_by_key(|h| std::cmp::Reverse(h.last_active()));
        hosts
    }

    /// The relayed capabilities the attached hosts declare, each key from the most
    /// recently active host declaring it; an empty object with no host.
    pub fn capabilities(&self) -> Value {
        let mut caps = Map::new();
        for host in self.by_recency() {
            let declared = host.capabilities();
            for key in RELAYED_CAPABILITIES {
                if let Some(v) = declared.get(key)
                    && !caps.contains_key(key)
                {
                    caps.insert(key.to_owned(), v.clone());
                }
            }
        }
        Value::Object(caps)
    }

    /// For an attempt: the capabilities to offer upstream, remembered as offered.
    pub(crate) fn offer(&self) -> Option<Value> {
        let caps = self.capabilities();
        *self.offered.lock().expect("offered lock") = caps.clone();
        caps.as_object()
            .is_some_and(|c| !c.is_empty())
            .then_some(caps)
    }

    /// True when a host declares a capability the live generation was not initialized
    /// with (it would answer the server's request with a refusal): reconnecting would
    /// offer it.
    pub fn lacks_capability(&self) -> bool {
        let offered = self.offered.lock().expect("offered lock").clone();
        let wanted = self.capabilities();
        RELAYED_CAPABILITIES
            .iter()
            .any(|k| wanted.get(k).is_some() && offered.get(k).is_none())
    }

    /// True when a host other than `key` has a request in flight upstream.
    pub fn busy_besides(&self, key: u64) -> bool {
        self.hosts
            .lock()
            .expect("hosts lock")
            .iter()
            .any(|(k, h)| *k != key && h.busy())
    }

    /// The host a server request needing `key` goes to: one with a call in flight, else
    /// the most recently active; only hosts that declared `key`.
    fn pick(&self, key: &str) -> Option<Arc<dyn Host>> {
        let able: Vec<_> = self
            .by_recency()
            .into_iter()
            .filter(|h| h.capabilities().get(key).is_some())
            .collect();
        able.iter()
            .find(|h| h.busy())
            .or_else(|| able.first())
            .cloned()
    }
}

impl Relay for HostSlot {
    fn relay(
        &self,
        method: &str,
        params: &Value,
    ) -> Option<BoxFuture<'static, Result<Value, RpcError>>> {
        let host = self.pick(capability_of(method)?)?;
        Some(host.request(method, params.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Fake {
        caps: Value,
        busy: bool,
        last: u64,
        name: &'static str,
    }

    impl Host for Fake {
        fn capabilities(&self) -> Value {
            self.caps.clone()
        }
        fn busy(&self) -> bool {
            self.busy
        }
        fn last_active(&self) -> u64 {
            self.last
        }
        fn request(&self, _: &str, _: Value) -> BoxFuture<'static, Result<Value, RpcError>> {
            let name = self.name;
            Box::pin(async move { Ok(json!(name)) })
        }
    }

    fn host(name: &'static str, caps: Value, busy: bool, last: u64) -> Arc<dyn Host> {
        Arc::new(Fake {
            caps,
            busy,
            last,
            name,
        })
    }

    async fn routed(slot: &HostSlot, method: &str) -> Option<Value> {
        match slot.relay(method, &json!({})) {
            Some(f) => Some(f.await.unwrap()),
            None => None,
        }
    }

    #[tokio::test]
    async fn routes_to_the_busy_host_else_the_most_recent_one_that_can() {
        let slot = HostSlot::default();
        assert_eq!(routed(&slot, "roots/list").await, None, "no host");
        let a = slot.attach(host("a", json!({"roots": {}, "sampling": {}}), false, 1));
        slot.attach(host("b", json!({"roots": {"listChanged": true}}), false, 2));
        assert_eq!(routed(&slot, "roots/list").await, Some(json!("b")));
        assert_eq!(
            routed(&slot, "sampling/createMessage").await,
            Some(json!("a"))
        );
        assert_eq!(
            routed(&slot, "elicitation/create").await,
            None,
            "nobody can"
        );
        assert_eq!(routed(&slot, "ping").await, None, "not relayed");
        slot.attach(host("c", json!({"roots": {}}), true, 0));
        assert_eq!(routed(&slot, "roots/list").await, Some(json!("c")), "busy");
        assert_eq!(
            slot.capabilities(),
            json!({"roots": {"listChanged": true}, "sampling": {}})
        );
        slot.detach(a);
        assert_eq!(routed(&slot, "sampling/createMessage").await, None);
    }

    #[test]
    fn lacks_a_capability_only_when_a_host_declares_one_not_offered() {
        let slot = HostSlot::default();
        assert_eq!(slot.offer(), None);
        assert!(!slot.lacks_capability());
        let key = slot.attach(host("a", json!({"sampling": {}}), false, 1));
        assert!(slot.lacks_capability());
        assert_eq!(slot.offer(), Some(json!({"sampling": {}})));
        assert!(!slot.lacks_capability());
        slot.detach(key);
        assert!(
            !slot.lacks_capability(),
            "a host leaving needs no reconnect"
        );
    }
}
