//! One supervisor per configured server: it owns the generations, the live tool list and
//! the reconnect loop. `state` decides (pure), `actor` performs (the only place that
//! sleeps or spawns), `establish` runs one attempt.

mod actor;
mod establish;
pub use establish::connect_once;
pub(crate) mod fleet;
mod from_config;
pub mod hosts;
mod relist;
pub mod state;
mod walk;

#[cfg(test)]
mod state_props;
#[cfg(test)]
mod tests;

pub use actor::{CallOptions, GenerationStderr, Held, ReviewedTool, Sent, Snapshot, Supervisor};
pub use fleet::Fleet;
pub use hosts::{Host, HostSlot};

use crate::error::{Error, Stage};
use crate::protocol::revision::ProtocolChoice;
use crate::session::SessionOptions;
use crate::session::negotiate::Step;
use crate::transport::Connection;
use state::Policy;
use std::sync::Arc;
use std::time::Duration;

/// Opens a fresh transport for each generation (spawns the process, or builds the HTTP
/// client). Errors are `spawn`/`config` kinds with a message that says what to fix.
pub type Connector = Arc<dyn Fn() -> Result<Connection, Error> + Send + Sync>;

/// How many calls may wait for a slot beyond a server's concurrency cap: a host that sends 64
/// at once gets 64 answers, and memory stays bounded by what that many waiting calls hold
/// (their arguments) when a host sends without end.
pub const MAX_WAITING_CALLS: usize = 256;

#[derive(Clone)]
pub struct SupervisorConfig {
    pub name: String,
    pub connector: Connector,
    /// Tried when `connector`'s handshake fails with the spec's sign of an older server
    /// (`policy::fallback`): the legacy HTTP+SSE transport under `protocol: "auto"`.
    pub fallback: Option<Connector>,
    /// `Stage::Spawn` for stdio, `Stage::Connect` for HTTP.
    pub first_stage: Stage,
    pub policy: Policy,
    /// The establishment deadline over every stage of one attempt.
    pub establish: Duration,
    /// Per request, and the most any one establishment stage may take.
    pub request_timeout: Duration,
    /// Health ping after this much idle time; `None` turns pings off.
    pub ping_interval: Option<Duration>,
    pub ping_timeout: Duration,
    pub max_concurrent_calls: usize,
    /// Calls waiting for a slot beyond the concurrency cap, each for at most its request
    /// timeout; more are refused at once (`MAX_WAITING_CALLS`).
    pub max_queued_calls: usize,
    /// Seeds the jitter, so runs can be replayed.
    pub seed: u64,
    pub disabled: bool,
    pub session: SessionOptions,
    /// `auto` or a pinned revision (config `protocol`).
    pub protocol: ProtocolChoice,
    /// Under `auto`, ask in the stateless revision (2026-07-28) first: Streamable HTTP.
    pub stateless_first: bool,
    /// The step of the fallback order that worked last, tried first next time (the spec:
    /// cache the revision per server, probe again when the assumption fails). What it holds
    /// after an attempt is `state::after_walk`'s decision.
    pub last_worked: Arc<std::sync::Mutex<Option<Step>>>,
    /// The hosts attached through the gateway: each attempt offers their client
    /// capabilities upstream and relays the server's requests to them (`hosts.rs`).
    pub hosts: Arc<HostSlot>,
    /// The OAuth sign-in of an HTTP server (the transport's `HttpConfig::auth`): the
    /// supervisor turns its changes into `auth` events and signs in or out on request.
    pub auth: Option<Arc<crate::auth::Authorizer>>,
    /// The process's tool pins (`trust: "pin"`, docs/trust.md): each list is judged
    /// against them and hosts are shown only approved definitions. `None` shows every
    /// tool as listed (`trust: "off"`, or a process that put no hosts in front of servers).
    pub pins: Option<Arc<crate::pins::book::Book>>,
}

impl SupervisorConfig {
    /// The DESIGN.md defaults around a connector.
    pub fn new(name: impl Into<String>, first_stage: Stage, connector: Connector) -> Self {
        SupervisorConfig {
            name: name.into(),
            connector,
            fallback: None,
            first_stage,
            policy: Policy::default(),
            establish: Duration::from_secs(60),
            request_timeout: Duration::from_secs(60),
            ping_interval: Some(Duration::from_secs(30)),
            ping_timeout: Duration::from_secs(10),
            max_concurrent_calls: 4,
            max_queued_calls: MAX_WAITING_CALLS,
            seed: 0,
            disabled: false,
            session: SessionOptions::default(),
            protocol: ProtocolChoice::Auto,
            stateless_first: false,
            last_worked: Arc::default(),
            hosts: Arc::default(),
            auth: None,
            pins: None,
        }
    }
}
