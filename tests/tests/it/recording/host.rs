//! A host in the recording: Claude Desktop attached to `filesystem` through a real gateway
//! session (`gateway::start`, as the app serves a bridge), initializing and calling tools,
//! so the recording holds `host_attached` and `host_call` events the mock's Hosts section
//! and activity feed are built from.
//!
//! A call's latency is chosen, not measured: the fixture delays every `tools/call` by
//! `FIXTURE_DELAY_MS` of real time (the script `entry` gives `filesystem`), and while the
//! call is held there the driver moves the paused clock by the latency wanted, so the
//! `host_call` carries exactly that `duration_ms` on every run.

use std::sync::Arc;
use std::time::SystemTime;

use lifeline_core::events::{EventBody, HostMode};
use lifeline_core::gateway::hosts::Hosts;
use lifeline_core::gateway::{self, GatewayOptions, HostSession};
use lifeline_core::protocol::{Message, RequestId};
use lifeline_core::supervisor::Supervisor;
use serde_json::{Value, json};

use super::driver::Driver;

/// Real time the fixture holds a host's call: far longer than the driver needs to move
/// the clock once it sees the call in flight.
pub const FIXTURE_DELAY_MS: u64 = 400;

/// The server the host uses.
pub const SERVER: &str = "filesystem";

pub struct Host {
    hosts: Hosts,
    session: HostSession,
    next_id: i64,
}

impl Host {
    /// Starts the gateway session on `supervisor` and initializes it as Claude Desktop.
    pub async fn attach(d: &mut Driver, supervisor: Arc<Supervisor>) -> Host {
        let hosts = Hosts::new(d.bus.clone(), HostMode::App);
        let options = GatewayOptions {
            hosts: Some(hosts.clone()),
            ..GatewayOptions::default()
        };
        let mut host = Host {
            hosts,
            session: gateway::start(supervisor, options),
            next_id: 0,
        };
        let params = json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "Claude Desktop", "version": "1.2.0"}});
        host.request(d, "initialize", params).await;
        host.send(Message::notification("notifications/initialized", None));
        host
    }

    fn send(&self, msg: Message) {
        self.session
            .input
            .send(msg)
            .unwrap_or_else(|_| panic!("the host's gateway session ended"));
    }

    /// Sends a request and waits (real time) for its answer.
    async fn request(&mut self, d: &mut Driver, method: &str, params: Value) {
        self.next_id += 1;
        let id = RequestId::Number(self.next_id);
        self.send(Message::request(id.clone(), method, Some(params)));
        self.answer(d, &id).await
    }

    /// Waits for the answer to `id`, which must not be a JSON-RPC error (a tool's error is
    /// a result).
    async fn answer(&mut self, d: &mut Driver, id: &RequestId) {
        let output = &mut self.session.output;
        let mut answer = None;
        d.spin_until("the host's answer", |_| {
            while let Ok(out) = output.try_recv() {
                if let Message::Response(r) = out.message
                    && &r.id == id
                {
                    answer = Some(r.outcome.map_err(|e| e.message));
                }
            }
            answer.is_some()
        })
        .await;
        if let Some(Err(e)) = answer {
            panic!("the gateway answered the host with an error: {e}");
        }
    }

    /// Calls `tool`; the call takes `ms` of recorded time.
    pub async fn call(&mut self, d: &mut Driver, tool: &str, arguments: Value, ms: u64) {
        let calls = |d: &Driver| {
            d.events
                .iter()
                .filter(|e| matches!(e.event.body, EventBody::HostCall { .. }))
                .count()
        };
        let before = calls(d);
        self.next_id += 1;
        let id = RequestId::Number(self.next_id);
        let params = json!({"name": tool, "arguments": arguments});
        self.send(Message::request(id.clone(), "tools/call", Some(params)));
        let hosts = self.hosts.clone();
        d.spin_until("the host's call to be in flight", |_| {
            hosts.view(SERVER, SystemTime::now()).live_calls == 1
        })
        .await;
        d.advance_by(ms).await;
        self.answer(d, &id).await;
        d.spin_until("the host's call to be published", |d| calls(d) > before)
            .await;
    }

    /// Ends the session (after the recording is taken: its `host_detached` is not kept).
    pub async fn close(self) {
        let HostSession { input, done, .. } = self.session;
        drop(input);
        done.await.expect("the gateway session ended cleanly");
    }
}
