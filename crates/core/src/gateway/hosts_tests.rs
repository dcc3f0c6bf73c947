//! The hosts registry: attach and detach events, live calls, a call's event and its
//! statistics, the history's calls replayed, and nothing a host sent kept unscrubbed.

use super::*;
use crate::events::Event;
use crate::events::Generation;
use std::time::Duration;

fn hosts() -> (Hosts, tokio::sync::broadcast::Receiver<Event>) {
    let bus = Arc::new(EventBus::new(64));
    let rx = bus.subscribe();
    (Hosts::new(bus, HostMode::App), rx)
}

fn init(name: &str, version: &str) -> Value {
    serde_json::json!({
        "protocolVersion": "2025-06-18",
        "clientInfo": { "name": name, "version": version },
    })
}

#[tokio::test(start_paused = true)]
async fn a_host_attaches_calls_and_detaches() {
    let (hosts, mut rx) = hosts();
    let session = hosts.recorder("fs", Redactor::default());
    // Not a host until it initialized.
    assert_eq!(hosts.view("fs", SystemTime::now()).hosts, vec![]);
    session.initialized(
        Some(&init("claude-code", "2.0.1")),
        "2025-06-18",
        Generation(3),
    );
    let e = rx.try_recv().unwrap();
    assert_eq!((e.server.as_str(), e.generation), ("fs", Generation(3)));
    let EventBody::HostAttached { host } = e.body else {
        panic!("{e:?}")
    };
    assert_eq!(
        (host.name.as_str(), host.version.as_str(), host.mode),
        ("claude-code", "2.0.1", HostMode::App)
    );
    assert_eq!(host.protocol_version, "2025-06-18");

    let slow = session.call("search");
    let fast = session.call("search");
    let view = hosts.view("fs", SystemTime::now());
    assert_eq!((view.live_calls, view.hosts[0].live_calls), (2, 2));
    tokio::time::advance(Duration::from_millis(40)).await;
    fast.finish(CallOutcome::Ok, None, Generation(3));
    tokio::time::advance(Duration::from_millis(60)).await;
    slow.finish(CallOutcome::Error, Some("not_ready".into()), Generation(4));
    let e = rx.try_recv().unwrap();
    assert_eq!(
        e.body,
        EventBody::HostCall {
            host_id: host.id,
            host: "claude-code".into(),
            tool: "search".into(),
            outcome: CallOutcome::Ok,
            duration_ms: 40,
            error_kind: None,
        }
    );
    let EventBody::HostCall { duration_ms, .. } = rx.try_recv().unwrap().body else {
        panic!()
    };
    assert_eq!(duration_ms, 100);
    let view = hosts.view("fs", SystemTime::now());
    assert_eq!(view.live_calls, 0);
    assert_eq!(
        view.tools,
        vec![ToolStats {
            tool: "search".into(),
            calls: 2,
            errors: 1,
            p50_ms: Some(40),
            p95_ms: Some(100),
        }]
    );
    // Another server's section is its own.
    assert_eq!(hosts.view("other", SystemTime::now()), HostsView::default());

    // A cancelled call (the guard dropped unfinished) only leaves the live calls.
    drop(session.call("search"));
    assert_eq!(hosts.view("fs", SystemTime::now()).tools[0].calls, 2);

    drop(session);
    let e = rx.try_recv().unwrap();
    assert_eq!(e.generation, Generation(4));
    assert!(matches!(e.body, EventBody::HostDetached { host } if host.id == 1));
    assert_eq!(hosts.view("fs", SystemTime::now()).hosts, vec![]);
    assert!(rx.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn a_session_that_never_initialized_says_nothing() {
    let (hosts, mut rx) = hosts();
    drop(hosts.recorder("fs", Redactor::default()));
    assert!(rx.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn what_a_host_sent_is_scrubbed_and_capped() {
    let (hosts, mut rx) = hosts();
    let session = hosts.recorder("fs", Redactor::new(["hunter2"]));
    let long = "x".repeat(1000);
    session.initialized(
        Some(&init("hunter2-client", &long)),
        "2025-11-25",
        Generation(1),
    );
    let EventBody::HostAttached { host } = rx.try_recv().unwrap().body else {
        panic!()
    };
    assert!(!host.name.contains("hunter2"), "{}", host.name);
    assert!(
        host.version.len() <= MAX_NAME + 32,
        "{}",
        host.version.len()
    );
    session
        .call("hunter2")
        .finish(CallOutcome::Ok, None, Generation(1));
    let EventBody::HostCall { tool, .. } = rx.try_recv().unwrap().body else {
        panic!()
    };
    assert!(!tool.contains("hunter2"), "{tool}");
    // No clientInfo at all still makes a host.
    let bare = hosts.recorder("fs", Redactor::default());
    bare.initialized(None, "2025-11-25", Generation(1));
    let EventBody::HostAttached { host } = rx.try_recv().unwrap().body else {
        panic!()
    };
    assert_eq!(
        (host.name.as_str(), host.version.as_str()),
        ("unknown host", "?")
    );
}

#[test]
fn the_history_s_last_hour_is_replayed() {
    use crate::history::{History, Options};
    let (hosts, _rx) = hosts();
    let bus = EventBus::new(8);
    let history = History::in_memory(Options::default());
    let now = SystemTime::now();
    let call = |ago_min: u64, ms: u64, outcome| {
        let mut e = bus.emit(
            "fs",
            Generation(1),
            EventBody::HostCall {
                host_id: 1,
                host: "cursor".into(),
                tool: "read".into(),
                outcome,
                duration_ms: ms,
                error_kind: None,
            },
        );
        e.at = rfc3339(now - Duration::from_secs(ago_min * 60));
        history.record(&e);
    };
    call(90, 999, CallOutcome::Ok); // older than the hour
    call(30, 20, CallOutcome::ToolError);
    call(1, 10, CallOutcome::Ok);
    history.record(&bus.emit(
        "fs",
        Generation(1),
        EventBody::RoundTrip { round_trip_ms: 5 },
    ));
    history.flush();
    let past = history
        .host_calls_since(now - Duration::from_secs(3600))
        .unwrap();
    assert_eq!(past.len(), 2, "{past:?}");
    for call in &past {
        hosts.replay(call);
    }
    let view = hosts.view("fs", now);
    assert_eq!(
        view.tools,
        vec![ToolStats {
            tool: "read".into(),
            calls: 2,
            errors: 1,
            p50_ms: Some(10),
            p95_ms: Some(20),
        }]
    );
    // Replayed calls are statistics only: no host is attached by them.
    assert_eq!(view.hosts, vec![]);
}
