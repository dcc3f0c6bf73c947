//! `AppState` against real supervisors: servers whose command does not exist retire at
//! once, so every test runs without a server and without sleeping.

use super::*;
use lifeline_core::config;
use lifeline_core::events::Generation;
use lifeline_core::events::{EventBody, StateInfo, StateName};
use serde_json::json;
use std::time::Duration;
use tokio::sync::mpsc;

fn start(config: &str) -> AppState {
    let config = config::parse(config, None, &|_| None).unwrap();
    AppState::start(Source {
        config,
        info: crate::test_support::app_info(),
        fixtures: Vec::new(),
    })
}

const GONE: &str = r#"{"mcpServers": {
    "gone": {"command": "/nonexistent/lifeline-app-test"},
    "web": {"url": "http://127.0.0.1:9/mcp", "disabled": true}
}}"#;

fn retired(generation: Generation) -> impl FnMut(&lifeline_core::supervisor::Snapshot) -> bool {
    move |s| s.generation == generation && s.state.state == Some(StateName::Retired)
}

/// How long a test waits for an event before it fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// The next event a subscriber was handed; fails the test after `PATIENCE`.
async fn next(events: &mut mpsc::UnboundedReceiver<Event>) -> Event {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .unwrap_or_else(|_| panic!("no event within {PATIENCE:?}"))
        .expect("the subscription ended early")
}

fn is_state(event: &Event, generation: Generation, state: StateName) -> bool {
    event.generation == generation
        && matches!(&event.body, EventBody::State(StateInfo { state: Some(s), .. }) if *s == state)
}

#[tokio::test]
async fn subscribers_get_every_event_in_order_and_restarts_are_counted() {
    let state = start(GONE);
    let (tx, mut events) = mpsc::unbounded_channel();
    let views = state
        .subscribe("main", move |e| tx.send(e).is_ok())
        .await
        .unwrap();
    let shown: Vec<(&str, &str)> = views
        .iter()
        .map(|v| (v.snapshot.server.as_str(), v.transport))
        .collect();
    assert_eq!(shown, [("gone", "stdio"), ("web", "http")]);

    state.wait_for("gone", retired(Generation(1))).await;
    state.act("gone", Supervisor::reconnect).await.unwrap();
    state.wait_for("gone", retired(Generation(2))).await;

    let mut seqs = Vec::new();
    let last = loop {
        let event = next(&mut events).await;
        seqs.push(event.seq);
        if is_state(&event, Generation(2), StateName::Retired) {
            break event;
        }
    };
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "gap-free: {seqs:?}"
    );

    state.tracked(last.seq).await;
    let views = state.views().await.unwrap();
    let gone = &views[0];
    assert_eq!(
        (gone.snapshot.generation, gone.restarts),
        (Generation(2), 1)
    );
    assert!(gone.last_restart_at.is_some());
    let web = &views[1];
    assert_eq!(web.snapshot.state.state, Some(StateName::Disabled));
    assert_eq!((web.restarts, web.last_restart_at.as_deref()), (0, None));
    state.shutdown().await;
}

#[tokio::test]
async fn a_late_subscriber_first_gets_what_already_happened() {
    let state = start(GONE);
    state.wait_for("gone", retired(Generation(1))).await;
    state
        .recorded(|e| is_state(e, Generation(1), StateName::Retired))
        .await;
    let (tx, mut events) = mpsc::unbounded_channel();
    state
        .subscribe("main", move |e| tx.send(e).is_ok())
        .await
        .unwrap();
    let mut seqs = Vec::new();
    loop {
        let event = next(&mut events).await;
        seqs.push(event.seq);
        if is_state(&event, Generation(1), StateName::Retired) {
            break;
        }
    }
    assert_eq!(seqs[0], 1, "from the first event of the run: {seqs:?}");
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "in order: {seqs:?}"
    );
    state.shutdown().await;
}

#[tokio::test]
async fn subscribing_again_from_the_same_webview_ends_the_old_subscription() {
    let state = start(GONE);
    let (tx1, mut first) = mpsc::unbounded_channel::<Event>();
    state
        .subscribe("main", move |e| tx1.send(e).is_ok())
        .await
        .unwrap();
    let (tx2, _second) = mpsc::unbounded_channel::<Event>();
    state
        .subscribe("main", move |e| tx2.send(e).is_ok())
        .await
        .unwrap();
    // The first forwarder was aborted, dropping its sink: its stream ends.
    let ended = async { while first.recv().await.is_some() {} };
    tokio::time::timeout(PATIENCE, ended)
        .await
        .unwrap_or_else(|_| panic!("the first subscription still runs after {PATIENCE:?}"));
    state.shutdown().await;
}

#[tokio::test]
async fn unknown_servers_and_calls_to_servers_that_are_not_ready_are_error_views() {
    let state = start(GONE);
    let e = state.act("nope", Supervisor::reset).await.unwrap_err();
    assert_eq!(e.kind, "unknown_server");
    assert_eq!(
        e.message,
        "there is no server named `nope` (configured: gone, web)"
    );

    state
        .wait_for("web", |s| s.state.state == Some(StateName::Disabled))
        .await;
    let e = state.call_tool("web", "echo", json!({})).await.unwrap_err();
    assert_eq!(e.kind, "transport");
    assert!(
        e.message.contains("not ready: it is disabled"),
        "{}",
        e.message
    );
    state.shutdown().await;
}

#[tokio::test]
async fn after_shutdown_every_command_says_the_app_is_closing() {
    let state = start(GONE);
    state.shutdown().await;
    state.shutdown().await;
    let e = state.views().await.unwrap_err();
    assert_eq!(e.kind, "cancelled");
    let e = state.reconnect_all_failed().await.unwrap_err();
    assert_eq!(e.kind, "cancelled");
}

#[tokio::test]
async fn a_lagging_reader_gets_the_next_events_in_order_with_the_gap_in_seq() {
    let bus = Arc::new(EventBus::new(2));
    let events = bus.subscribe();
    for _ in 0..5 {
        bus.emit(
            "a",
            Generation(1),
            EventBody::RoundTrip { round_trip_ms: 1 },
        );
    }
    drop(bus);
    let mut seen = Vec::new();
    forward(events, |e| {
        seen.push(e.seq);
        true
    })
    .await;
    assert_eq!(seen, [4, 5]);
}

#[tokio::test]
async fn a_sink_that_refuses_ends_the_forwarding() {
    let bus = Arc::new(EventBus::new(8));
    let events = bus.subscribe();
    for _ in 0..3 {
        bus.emit(
            "a",
            Generation(1),
            EventBody::RoundTrip { round_trip_ms: 1 },
        );
    }
    let mut seen = Vec::new();
    // The bus is still open: only the refusal can end this.
    let forwarding = forward(events, |e| {
        seen.push(e.seq);
        false
    });
    tokio::time::timeout(PATIENCE, forwarding)
        .await
        .unwrap_or_else(|_| panic!("forwarding went on after the sink refused"));
    assert_eq!(seen, [1]);
}

#[test]
fn tool_results_are_scrubbed_string_by_string() {
    let redactor = Redactor::new(["canary-s3cret"]);
    let result = json!({
        "content": [{"type": "text", "text": "token canary-s3cret here"}],
        "isError": false,
        "structuredContent": {"n": 3, "nested": ["canary-s3cret"]}
    });
    assert_eq!(
        redactor.scrub_value(&result),
        json!({
            "content": [{"type": "text", "text": "token *** here"}],
            "isError": false,
            "structuredContent": {"n": 3, "nested": ["***"]}
        })
    );
}
