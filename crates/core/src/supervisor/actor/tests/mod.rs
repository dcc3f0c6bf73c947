//! The actor under paused tokio time, against in-process servers: each generation gets a
//! fresh memory transport whose server end a test script drives. Exact times, no sleeps.
//! This file holds the harness and the lifecycle (ready, pings, stop, retire, deadlines,
//! waits); `calls.rs`, `tools.rs` and `establish.rs` the rest, by concern.

use crate::error::{Error, ErrorKind, Stage};
use crate::events::Generation;
use crate::events::{EventBus, StateName};
use crate::protocol::{Message, Response};
use crate::supervisor::{Snapshot, Supervisor, SupervisorConfig};
use crate::transport::Incoming;
use crate::transport::memory::{self, ServerEnd};
use serde_json::{Value, json};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

mod calls;
mod establish;
mod tools;
mod trust;
mod wake;

/// What an in-process server does with each request: answer, or stay silent (None).
type Script = Arc<dyn Fn(&str, &Option<Value>) -> Option<Result<Value, Error>> + Send + Sync>;

struct Harness {
    supervisor: Supervisor,
    /// How many generations the connector opened.
    opened: Arc<AtomicUsize>,
    /// Every request method any generation received, in order.
    seen: Arc<Mutex<Vec<String>>>,
    bus: Arc<EventBus>,
}

impl Harness {
    /// How many `method` requests every generation received.
    fn received(&self, method: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|m| *m == method)
            .count()
    }
}

fn healthy() -> Script {
    Arc::new(|method, _| match method {
        "initialize" => Some(Ok(
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "mem", "version": "1"}}),
        )),
        "tools/list" => Some(Ok(json!({"tools": [{"name": "echo"}]}))),
        "tools/call" | "ping" => Some(Ok(json!({"content": []}))),
        _ => None,
    })
}

/// Serves one generation until the client closes it.
async fn serve(mut end: ServerEnd, script: Script, seen: Arc<Mutex<Vec<String>>>) {
    while let Some(msg) = end.from_client.recv().await {
        let Message::Request(r) = msg else { continue };
        seen.lock().unwrap().push(r.method.clone());
        if r.params.as_ref().and_then(|p| p.get("name")) == Some(&json!("notify")) {
            for _ in 0..2 {
                let note = Message::notification("notifications/tools/list_changed", None);
                let _ = end.to_client.send(Incoming::Message(note)).await;
            }
        }
        // `storm`: `list_changed` every 10 ms for as long as the connection lasts.
        if r.params.as_ref().and_then(|p| p.get("name")) == Some(&json!("storm")) {
            let to_client = end.to_client.clone();
            tokio::spawn(async move {
                loop {
                    let note = Message::notification("notifications/tools/list_changed", None);
                    if to_client.send(Incoming::Message(note)).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
        }
        // `flood`: more log messages at once than a session keeps for a slow subscriber.
        if r.params.as_ref().and_then(|p| p.get("name")) == Some(&json!("flood")) {
            for i in 0..40 {
                let params = json!({"level": "info", "data": i});
                let note = Message::notification("notifications/message", Some(params));
                let _ = end.to_client.send(Incoming::Message(note)).await;
            }
        }
        match script(&r.method, &r.params) {
            Some(Ok(v)) => {
                let reply = Incoming::Message(Message::Response(Response {
                    id: r.id,
                    outcome: Ok(v),
                }));
                let _ = end.to_client.send(reply).await;
            }
            Some(Err(error)) => {
                let _ = end
                    .to_client
                    .send(Incoming::RequestFailed { id: r.id, error })
                    .await;
            }
            None => {}
        }
    }
}

fn start(script: Script, edit: impl FnOnce(&mut SupervisorConfig)) -> Harness {
    let opened = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (o, s) = (opened.clone(), seen.clone());
    let connector = Arc::new(move || {
        o.fetch_add(1, Ordering::SeqCst);
        let (conn, end) = memory::pair();
        tokio::spawn(serve(end, script.clone(), s.clone()));
        Ok(conn)
    });
    let mut cfg = SupervisorConfig::new("mem", Stage::Connect, connector);
    edit(&mut cfg);
    let bus = Arc::new(EventBus::new(1024));
    let supervisor = Supervisor::spawn(cfg, bus.clone());
    Harness {
        supervisor,
        opened,
        seen,
        bus,
    }
}

/// How much paused time a wait may take before the test fails. It passes in an instant of
/// real time; without a bound, a snapshot that never comes would run the supervisor's
/// timers (pings, backoff) forward until the suite's timeout ended the test.
const PATIENCE: Duration = Duration::from_secs(3600);

/// The first snapshot satisfying `done`; fails the test, naming `what`, after `PATIENCE`.
async fn until_snapshot(h: &Harness, what: &str, done: impl FnMut(&Snapshot) -> bool) -> Snapshot {
    tokio::time::timeout(PATIENCE, h.supervisor.wait_for(done))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "no {what} within {PATIENCE:?} of paused time: {:?}",
                h.supervisor.snapshot()
            )
        })
}

async fn until(h: &Harness, state: StateName) {
    until_snapshot(h, state.as_str(), |s| s.state.state == Some(state)).await;
}

#[tokio::test(start_paused = true)]
async fn a_healthy_server_is_ready_with_its_tools() {
    let h = start(healthy(), |_| {});
    until(&h, StateName::Ready).await;
    let snap = h.supervisor.snapshot();
    assert_eq!(snap.tools, ["echo"]);
    assert_eq!(snap.generation, Generation(1));
    let r = h.supervisor.call("echo", json!({})).await.unwrap();
    assert_eq!(r, json!({"content": []}));
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn two_missed_pings_are_a_lost_connection_at_exactly_80_s() {
    let script: Script = Arc::new(|method, params| match method {
        "ping" => None,
        _ => healthy()(method, params),
    });
    let h = start(script, |_| {});
    until(&h, StateName::Ready).await;
    let ready_at = Instant::now();
    // Pings at 30 s and 70 s (30 s idle after the first miss), each given 10 s.
    until(&h, StateName::Reconnecting).await;
    assert_eq!(Instant::now() - ready_at, Duration::from_secs(80));
    // Up past the stability window: the first reconnect is spread by full jitter, which
    // seed 0 (the default) puts 3.534 s later (tokio's timers fire on whole milliseconds).
    until_snapshot(&h, "generation 2", |s| s.generation == Generation(2)).await;
    assert_eq!(Instant::now() - ready_at, Duration::from_millis(83_534));
    assert_eq!(h.received("ping"), 2);
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn stopping_cancels_a_pending_backoff() {
    let h = start(
        Arc::new(|_, _| Some(Err(Error::transport("refused")))),
        |_| {},
    );
    until(&h, StateName::Retrying).await;
    let started = Instant::now();
    h.supervisor.stop().await;
    assert_eq!(
        Instant::now(),
        started,
        "disposal did not wait for the backoff"
    );
    assert_eq!(h.opened.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_401_at_connect_retires_after_one_attempt() {
    let h = start(
        Arc::new(|_, _| {
            Some(Err(
                Error::new(ErrorKind::Auth, "unauthorized").with(|c| c.status = Some(401))
            ))
        }),
        |_| {},
    );
    until(&h, StateName::Retired).await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(h.opened.load(Ordering::SeqCst), 1);
    assert_eq!(
        h.supervisor.snapshot().state.reason.as_deref(),
        Some("auth")
    );
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_stalled_handshake_ends_at_the_establishment_deadline() {
    let h = start(Arc::new(|_, _| None), |c| {
        c.establish = Duration::from_secs(5);
        c.request_timeout = Duration::from_secs(60);
    });
    let started = Instant::now();
    until(&h, StateName::Retrying).await;
    assert_eq!(Instant::now() - started, Duration::from_secs(5));
    let cause = h.supervisor.snapshot().state.cause.unwrap();
    assert_eq!(cause.kind, "timeout");
    assert!(
        cause.message.contains("establishment deadline"),
        "{}",
        cause.message
    );
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_of_any_size_is_waited_clamped_and_the_actor_lives_on() {
    let script: Script = Arc::new(|method, params| match method {
        "initialize" => Some(Err(Error::new(ErrorKind::RateLimited, "slow down")
            .with(|c| c.retry_after = Some(Duration::MAX)))),
        _ => healthy()(method, params),
    });
    let h = start(script, |_| {});
    let snap = h
        .supervisor
        .wait_for(|s| s.state.state == Some(StateName::Retrying))
        .await;
    // Clamped to the policy's bound (1 d), and still rendered as a time.
    assert_eq!(snap.state.delay_ms, Some(86_400_000));
    assert!(snap.state.next_attempt_at.is_some());
    // The actor is alive: a person can still ask for an attempt now.
    h.supervisor.reconnect();
    h.supervisor
        .wait_for(|s| s.generation == Generation(2))
        .await;
    h.supervisor.stop().await;
}
