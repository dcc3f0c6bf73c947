//! The actor under paused tokio time, against in-process servers: each generation gets a
//! fresh memory transport whose server end a test script drives. Exact times, no sleeps.

use crate::error::{Error, ErrorKind, Stage};
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
    assert_eq!(snap.generation, 1);
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
    until_snapshot(&h, "generation 2", |s| s.generation == 2).await;
    assert_eq!(Instant::now() - ready_at, Duration::from_millis(83_534));
    let pings = h
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|m| *m == "ping")
        .count();
    assert_eq!(pings, 2);
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
async fn a_call_when_not_ready_fails_at_once_saying_the_state_and_the_wait() {
    let h = start(
        Arc::new(|_, _| Some(Err(Error::transport("refused")))),
        |_| {},
    );
    until(&h, StateName::Retrying).await;
    let err = h.supervisor.call("echo", json!({})).await.unwrap_err();
    let msg = err.message();
    assert!(msg.contains("is not ready: it is retrying"), "{msg}");
    assert!(
        msg.contains("attempt 1/10") && msg.contains("next attempt is in"),
        "{msg}"
    );
    assert!(msg.contains("was not sent"), "{msg}");
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_lost_with_its_connection_is_never_replayed() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let script: Script = Arc::new(move |method, params| match method {
        // The first call's connection dies under it; later generations are healthy.
        "tools/call" if c.fetch_add(1, Ordering::SeqCst) == 0 => Some(Err(Error::new(
            ErrorKind::ProcessExit,
            "the server process exited",
        ))),
        _ => healthy()(method, params),
    });
    let h = start(script, |_| {});
    until(&h, StateName::Ready).await;
    let err = h.supervisor.call("echo", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProcessExit);
    until_snapshot(&h, "a ready generation 2", |s| {
        s.generation == 2 && s.state.state == Some(StateName::Ready)
    })
    .await;
    let seen = h.seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().filter(|m| *m == "tools/call").count(),
        1,
        "{seen:?}"
    );
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_403_on_a_call_returns_to_the_caller_and_the_connection_stays() {
    let script: Script = Arc::new(|method, params| match method {
        "tools/call" => Some(Err(
            Error::new(ErrorKind::Permission, "forbidden").with(|c| c.status = Some(403))
        )),
        _ => healthy()(method, params),
    });
    let h = start(script, |_| {});
    until(&h, StateName::Ready).await;
    let err = h.supervisor.call("echo", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permission);
    let snap = h.supervisor.snapshot();
    assert_eq!(
        (snap.state.state, snap.generation),
        (Some(StateName::Ready), 1)
    );
    h.supervisor.stop().await;
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

/// A healthy server whose nth tool list is `["v{n}"]`, and the count of lists served.
fn counting_lists() -> (Script, Arc<AtomicUsize>) {
    let lists = Arc::new(AtomicUsize::new(0));
    let l = lists.clone();
    let script: Script = Arc::new(move |method, params| match method {
        "tools/list" => {
            let n = l.fetch_add(1, Ordering::SeqCst);
            Some(Ok(json!({"tools": [{"name": format!("v{n}")}]})))
        }
        _ => healthy()(method, params),
    });
    (script, lists)
}

#[tokio::test(start_paused = true)]
async fn list_changed_resyncs_and_swaps_the_tools() {
    let (script, lists) = counting_lists();
    let h = start(script, |_| {});
    until(&h, StateName::Ready).await;
    assert_eq!(h.supervisor.snapshot().tools, ["v0"]);
    // `notify` makes the in-process server announce a changed list twice, then answer.
    h.supervisor.call("notify", json!({})).await.unwrap();
    until_snapshot(&h, "the re-synced tools", |s| s.tools == ["v2"]).await;
    assert_eq!(
        lists.load(Ordering::SeqCst),
        3,
        "one re-sync per notification, one at a time"
    );
    assert_eq!(h.supervisor.snapshot().generation, 1);
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_list_changed_storm_re_lists_at_most_once_a_second() {
    let (script, lists) = counting_lists();
    let h = start(script, |_| {});
    until(&h, StateName::Ready).await;
    let stormed = Instant::now();
    // A notification every 10 ms: 1,000 in 10 s.
    h.supervisor.call("storm", json!({})).await.unwrap();
    h.supervisor.wait_for(|s| s.tools == ["v1"]).await;
    assert_eq!(
        Instant::now() - stormed,
        Duration::ZERO,
        "the first change lists at once"
    );
    h.supervisor.wait_for(|s| s.tools == ["v2"]).await;
    assert_eq!(
        Instant::now() - stormed,
        Duration::from_secs(1),
        "the rest coalesced"
    );
    tokio::time::sleep(Duration::from_millis(8_500)).await;
    // The listing of the handshake, then one at 0 s, 1 s, … 9 s.
    assert_eq!(lists.load(Ordering::SeqCst), 11);
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_tools_event_carries_a_capped_list_and_the_full_count() {
    let script: Script = Arc::new(|method, params| match method {
        "tools/list" => {
            let tools: Vec<Value> = (0..1500)
                .map(|i| json!({"name": format!("t{i}")}))
                .collect();
            Some(Ok(json!({ "tools": tools })))
        }
        _ => healthy()(method, params),
    });
    let h = start(script, |_| {});
    let mut events = h.bus.subscribe();
    until(&h, StateName::Ready).await;
    let (count, names) = loop {
        let e = events.recv().await.unwrap();
        if let crate::events::EventBody::Tools { count, names, .. } = e.body {
            break (count, names);
        }
    };
    assert_eq!(count, 1500);
    assert_eq!(names.len(), crate::events::MAX_TOOL_NAMES);
    assert_eq!((names[0].as_str(), names[999].as_str()), ("t0", "t999"));
    // Nothing is lost to callers: the supervisor still has every definition.
    assert_eq!(h.supervisor.tools().len(), 1500);
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_notification_flood_that_outruns_the_supervisor_re_syncs_the_tools() {
    // 40 log messages arrive before the supervisor reads any; it can no longer know whether
    // a `list_changed` was among those it missed, so it re-syncs once.
    let (script, lists) = counting_lists();
    let h = start(script, |_| {});
    until(&h, StateName::Ready).await;
    h.supervisor.call("flood", json!({})).await.unwrap();
    let resynced = tokio::time::timeout(
        Duration::from_secs(60),
        h.supervisor.wait_for(|s| s.tools == ["v1"]),
    )
    .await;
    assert!(resynced.is_ok(), "no re-sync within a minute of the lag");
    assert_eq!(lists.load(Ordering::SeqCst), 2);
    assert_eq!(h.supervisor.snapshot().generation, 1);
    h.supervisor.stop().await;
}

// # `protocol: "auto"`: the legacy fallback inside one establishment deadline

/// A POST refused the way an older server refuses Streamable HTTP.
fn refused(status: u16) -> Error {
    let kind = match status {
        401 => ErrorKind::Auth,
        _ => ErrorKind::Protocol,
    };
    Error::new(kind, format!("POST /sse: refused ({status})")).with(|c| {
        c.status = Some(status);
        c.method = Some("POST".into());
    })
}

/// A primary connector whose server refuses `initialize` with `status` after `after`, and a
/// fallback connector serving `fallback`; counts what each opened.
fn start_with_fallback(
    status: u16,
    after: Duration,
    fallback: Script,
    edit: impl FnOnce(&mut SupervisorConfig),
) -> (Harness, Arc<AtomicUsize>) {
    let fallbacks = Arc::new(AtomicUsize::new(0));
    let (f, seen) = (fallbacks.clone(), Arc::new(Mutex::new(Vec::new())));
    let h = start(Arc::new(|_, _| None), |c: &mut SupervisorConfig| {
        c.connector = Arc::new(move || {
            let (conn, mut end) = memory::pair();
            tokio::spawn(async move {
                while let Some(msg) = end.from_client.recv().await {
                    let Message::Request(r) = msg else { continue };
                    tokio::time::sleep(after).await;
                    let error = refused(status);
                    let failed = Incoming::RequestFailed { id: r.id, error };
                    let _ = end.to_client.send(failed).await;
                }
            });
            Ok(conn)
        });
        c.fallback = Some(Arc::new(move || {
            f.fetch_add(1, Ordering::SeqCst);
            let (conn, end) = memory::pair();
            tokio::spawn(serve(end, fallback.clone(), seen.clone()));
            Ok(conn)
        }));
        edit(c);
    });
    (h, fallbacks)
}

#[tokio::test(start_paused = true)]
async fn a_405_to_initialize_falls_back_to_a_fresh_connection_that_becomes_ready() {
    let (h, fallbacks) = start_with_fallback(405, Duration::ZERO, healthy(), |_| {});
    until(&h, StateName::Ready).await;
    assert_eq!(fallbacks.load(Ordering::SeqCst), 1);
    assert_eq!(h.supervisor.snapshot().tools, ["echo"]);
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_fallback_runs_in_what_is_left_of_the_same_deadline() {
    let (h, fallbacks) =
        start_with_fallback(404, Duration::from_secs(3), Arc::new(|_, _| None), |c| {
            c.establish = Duration::from_secs(5);
            c.request_timeout = Duration::from_secs(60);
        });
    let started = Instant::now();
    until(&h, StateName::Retrying).await;
    // 3 s for the refusal, then only the 2 s left for the legacy handshake.
    assert_eq!(Instant::now() - started, Duration::from_secs(5));
    assert_eq!(fallbacks.load(Ordering::SeqCst), 1);
    let cause = h.supervisor.snapshot().state.cause.unwrap();
    assert_eq!(cause.kind, "timeout");
    assert!(
        cause.message.contains("establishment deadline") && cause.message.contains("legacy"),
        "{}",
        cause.message
    );
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_auth_denial_never_falls_back() {
    let (h, fallbacks) = start_with_fallback(401, Duration::ZERO, healthy(), |_| {});
    until(&h, StateName::Retired).await;
    assert_eq!(fallbacks.load(Ordering::SeqCst), 0);
    h.supervisor.stop().await;
}

// # `protocol: "auto"` over Streamable HTTP: the stateless revision first, the era cached

#[tokio::test(start_paused = true)]
async fn an_initialize_era_server_is_asked_stateless_once_and_remembered() {
    let script: Script = Arc::new(|method, params| match method {
        "server/discover" => Some(Err(refused(400))),
        _ => healthy()(method, params),
    });
    let h = start(script, |c| c.stateless_first = true);
    until(&h, StateName::Ready).await;
    assert_eq!(
        h.opened.load(Ordering::SeqCst),
        2,
        "the fallback is a fresh connection"
    );
    assert_eq!(
        h.seen.lock().unwrap()[..3],
        ["server/discover", "initialize", "tools/list"]
    );
    assert_eq!(
        h.supervisor.snapshot().state.protocol_version.as_deref(),
        Some("2025-11-25")
    );
    // The next generation goes straight to what worked.
    h.supervisor.reconnect();
    until_snapshot(&h, "a ready generation 2", |s| {
        s.generation == 2 && s.state.state == Some(StateName::Ready)
    })
    .await;
    assert_eq!(h.opened.load(Ordering::SeqCst), 3);
    let seen = h.seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().filter(|m| *m == "server/discover").count(),
        1,
        "{seen:?}"
    );
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_stateless_server_is_ready_in_the_stateless_revision() {
    let script: Script = Arc::new(|method, params| match method {
        "server/discover" => Some(Ok(
            json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
        )),
        "initialize" => Some(Err(refused(400))),
        _ => healthy()(method, params),
    });
    let h = start(script, |c| c.stateless_first = true);
    until(&h, StateName::Ready).await;
    assert_eq!(h.opened.load(Ordering::SeqCst), 1);
    let snap = h.supervisor.snapshot();
    assert_eq!(snap.state.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(snap.tools, ["echo"]);
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_whose_discovery_lies_is_tried_with_initialize_once() {
    // server/discover lists 2026-07-28, but requests in that revision (they carry _meta)
    // are refused the way an older server refuses them.
    let script: Script = Arc::new(|method, params| {
        let stateless = params.as_ref().is_some_and(|p| {
            p.get("_meta")
                .is_some_and(|m| m.get("io.modelcontextprotocol/protocolVersion").is_some())
        });
        match method {
            "server/discover" => Some(Ok(
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {}}),
            )),
            "tools/list" if stateless => Some(Err(refused(400))),
            _ => healthy()(method, params),
        }
    });
    let h = start(script, |c| c.stateless_first = true);
    until(&h, StateName::Ready).await;
    assert_eq!(h.opened.load(Ordering::SeqCst), 2);
    assert_eq!(
        h.seen.lock().unwrap()[..4],
        ["server/discover", "tools/list", "initialize", "tools/list"]
    );
    assert_eq!(
        h.supervisor.snapshot().state.protocol_version.as_deref(),
        Some("2025-11-25")
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
    h.supervisor.wait_for(|s| s.generation == 2).await;
    h.supervisor.stop().await;
}
