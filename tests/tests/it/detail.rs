//! What the desktop app's detail panel reads from a supervisor, against a real stdio fixture
//! process: the full tool definitions, a call's progress, cancelling a call (the server is
//! told), and the stderr of the current and the previous generation across a crash.

use std::sync::Arc;

use lifeline_core::ErrorKind;
use lifeline_core::config;
use lifeline_core::events::{EventBus, StateName};
use lifeline_core::supervisor::{CallOptions, Snapshot, Supervisor, SupervisorConfig};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::support::{self, PATIENCE, StdioFixture};

const CANARY: &str = "hunter2-detail-canary";

/// A supervisor of `fixture`, with a secret env value and fast reconnects.
fn supervise(fixture: &StdioFixture) -> Supervisor {
    supervise_with(fixture, json!({}))
}

/// `supervise`, with `extra` keys in the server's entry.
fn supervise_with(fixture: &StdioFixture, extra: Value) -> Supervisor {
    let mut entry = json!({
        "command": fixture.program,
        "args": fixture.args,
        "env": {"API_TOKEN": CANARY},
        "reconnect": {"initialDelayMs": 20, "maxDelayMs": 100, "maxAttempts": 3}
    });
    if let (Some(e), Value::Object(extra)) = (entry.as_object_mut(), extra) {
        e.extend(extra);
    }
    let text = json!({"mcpServers": {"fx": entry}}).to_string();
    let config = config::parse(&text, None, &|_| None).expect("a valid config");
    let cfg = SupervisorConfig::from_server(config.server("fx").unwrap(), 7).unwrap();
    Supervisor::spawn(cfg, Arc::new(EventBus::new(1024)))
}

fn ready(generation: u64) -> impl FnMut(&Snapshot) -> bool {
    move |s| s.generation.0 == generation && s.state.state == Some(StateName::Ready)
}

async fn ready_supervisor(fixture: &StdioFixture) -> Supervisor {
    wait_ready(supervise(fixture)).await
}

async fn wait_ready(sup: Supervisor) -> Supervisor {
    tokio::time::timeout(PATIENCE, sup.wait_for(ready(1)))
        .await
        .expect("ready within PATIENCE");
    sup
}

/// Waits until `done` holds for the supervisor's stderr, woken each time the newest
/// process's stderr grows (the stderr reader takes in the pipe on its own task).
async fn stderr_until(sup: &Supervisor, done: impl Fn(&[String]) -> bool) -> Vec<Value> {
    let lines = || -> Vec<String> { sup.stderr().iter().flat_map(|g| g.lines.clone()).collect() };
    let mut grown = sup.stderr_grown().expect("a process has started");
    let wait = async { grown.wait_for(|_| done(&lines())).await.is_ok() };
    let seen = tokio::time::timeout(PATIENCE, wait).await;
    let all = sup.stderr();
    match seen {
        Ok(true) => {}
        Ok(false) => panic!("the server closed its stderr before it matched: {all:?}"),
        Err(_) => panic!("stderr never matched within {PATIENCE:?}: {all:?}"),
    }
    all.iter()
        .map(|g| serde_json::to_value(g).unwrap())
        .collect()
}

#[tokio::test]
async fn the_supervisor_keeps_each_tools_full_definition() {
    let fixture = support::stdio_fixture(&json!({}));
    let sup = ready_supervisor(&fixture).await;
    let tools = sup.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, sup.snapshot().tools);
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    assert!(add.description.as_deref().is_some_and(|d| !d.is_empty()));
    assert_eq!(add.input_schema["type"], "object");
    assert!(
        add.input_schema["properties"]["a"].is_object(),
        "{}",
        add.input_schema
    );
    sup.stop().await;
}

#[tokio::test]
async fn progress_reaches_the_caller_in_order_before_the_result() {
    let fixture = support::stdio_fixture(&json!({}));
    let sup = ready_supervisor(&fixture).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let opts = CallOptions {
        progress: Some(tx),
        ..Default::default()
    };
    let args = json!({"steps": 3, "interval_ms": 5});
    let result = sup.call_with("progress", args, opts).await.unwrap();
    assert_ne!(result["isError"], true, "{result}");
    let mut seen = Vec::new();
    while let Ok(p) = rx.try_recv() {
        seen.push((p.progress, p.total));
    }
    assert_eq!(seen, [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]);
    sup.stop().await;
}

#[tokio::test]
async fn a_cancelled_call_ends_cancelled_and_the_server_is_sent_notifications_cancelled() {
    let fixture = support::stdio_fixture(&json!({}));
    let sup = ready_supervisor(&fixture).await;
    let (cancel, cancel_rx) = oneshot::channel();
    let opts = CallOptions {
        cancel: Some(cancel_rx),
        ..Default::default()
    };
    let call = sup.call_with("slow", json!({"ms": 60_000}), opts);
    let cancel_once_sent = async {
        let sent = fixture
            .wait_for_log("the slow call", |e| {
                e["event"] == "received" && e["rpc_method"] == "tools/call"
            })
            .await;
        cancel.send(()).unwrap();
        sent
    };
    let (result, sent) =
        tokio::time::timeout(PATIENCE, async { tokio::join!(call, cancel_once_sent) })
            .await
            .expect("the cancelled call ends at once");
    let error = result.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error}");
    assert!(
        error.message().contains("notifications/cancelled"),
        "{error}"
    );

    let note = fixture
        .wait_for_log("notifications/cancelled", |e| {
            e["event"] == "received" && e["rpc_method"] == "notifications/cancelled"
        })
        .await;
    let id = sent["rpc_id"].clone();
    assert!(!id.is_null(), "the fixture logs the request: {sent}");
    assert_eq!(note["params"]["requestId"], id, "{note}");
    // Still ready: a cancel is the caller's choice, not a connection failure.
    assert_eq!(sup.snapshot().state.state, Some(StateName::Ready));
    sup.stop().await;
}

#[tokio::test]
async fn stderr_of_the_current_and_the_previous_generation_survives_a_crash_scrubbed() {
    let fixture = support::stdio_fixture(&json!({}));
    let sup = ready_supervisor(&fixture).await;
    let first = format!("first words with {CANARY}");
    sup.call("stderr", json!({"text": first})).await.unwrap();
    stderr_until(&sup, |l| l.iter().any(|l| l.contains("first words"))).await;

    let crashed = sup.call("crash", json!({"code": 3})).await;
    assert!(crashed.is_err(), "{crashed:?}");
    tokio::time::timeout(PATIENCE, sup.wait_for(ready(2)))
        .await
        .expect("a second generation");
    sup.call("stderr", json!({"text": "second generation here"}))
        .await
        .unwrap();
    let shown = stderr_until(&sup, |l| l.iter().any(|l| l.contains("second generation"))).await;

    let generations: Vec<&Value> = shown.iter().map(|g| &g["generation"]).collect();
    assert_eq!(generations, [&json!(1), &json!(2)]);
    let first_lines = shown[0]["lines"].to_string();
    assert!(
        first_lines.contains("first words with ***"),
        "{first_lines}"
    );
    assert!(!shown[1]["lines"].to_string().contains("first words"));
    assert_eq!(shown[0]["truncated"], false);
    assert!(!serde_json::to_string(&shown).unwrap().contains(CANARY));
    sup.stop().await;
}

#[tokio::test]
async fn a_call_cancelled_while_queued_is_never_sent() {
    let fixture = support::stdio_fixture(&json!({}));
    let sup = wait_ready(supervise_with(&fixture, json!({"maxConcurrentCalls": 1}))).await;
    let (first_cancel, first_rx) = oneshot::channel();
    let (queued_cancel, queued_rx) = oneshot::channel();
    let first = sup.call_with(
        "slow",
        json!({"ms": 60_000}),
        CallOptions {
            cancel: Some(first_rx),
            ..Default::default()
        },
    );
    let queued = sup.call_with(
        "echo",
        json!({"text": "never"}),
        CallOptions {
            cancel: Some(queued_rx),
            ..Default::default()
        },
    );
    // Calls are sent when first polled, in the order `join!` polls them; the first one is
    // cancelled only once the queued one has ended, so its slot cannot go to the queued one.
    let (ended_tx, ended_rx) = oneshot::channel();
    let queued = async {
        let result = queued.await;
        let _ = ended_tx.send(());
        result
    };
    let drive = async {
        fixture
            .wait_for_log("the slow call", |e| {
                e["event"] == "received" && e["params"]["name"] == "slow"
            })
            .await;
        queued_cancel.send(()).unwrap();
        ended_rx.await.unwrap();
        first_cancel.send(()).unwrap();
    };
    let (first, queued, ()) =
        tokio::time::timeout(PATIENCE, async { tokio::join!(first, queued, drive) })
            .await
            .expect("both calls end at once");
    let error = queued.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error}");
    assert!(error.message().contains("never sent"), "{error}");
    assert_eq!(first.unwrap_err().kind(), ErrorKind::Cancelled);
    fixture
        .wait_for_log("notifications/cancelled", |e| {
            e["event"] == "received" && e["rpc_method"] == "notifications/cancelled"
        })
        .await;
    let calls = support::received(&fixture.log_entries(), "tools/call");
    assert_eq!(calls.len(), 1, "only the slow call was sent: {calls:?}");
    sup.stop().await;
}
