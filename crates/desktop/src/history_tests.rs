//! The history through `AppState` with real files: what one run recorded is what the next
//! run's commands return; a file another instance holds is a notice, not a failure.

use super::*;
use crate::source::Source;
use crate::state::AppState;
use lifeline_core::config;
use lifeline_core::events::Generation;
use lifeline_core::events::StateName;
use lifeline_core::supervisor::Snapshot;
use rusqlite::Connection;
use serde_json::json;
use std::path::Path;

const GONE: &str = r#"{"mcpServers": {
    "gone": {"command": "/nonexistent/lifeline-app-test"},
    "web": {"url": "http://127.0.0.1:9/mcp", "disabled": true}
}}"#;

fn source() -> Source {
    Source {
        config: config::parse(GONE, None, &|_| None).unwrap(),
        info: crate::test_support::app_info(),
        fixtures: Vec::new(),
    }
}

fn start(path: &Path) -> AppState {
    let path = path.to_owned();
    AppState::start_with_history(source(), move |options| open(Some(path), options))
}

fn retired(s: &Snapshot) -> bool {
    s.state.state == Some(StateName::Retired)
}

#[tokio::test]
async fn what_one_run_records_the_next_run_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let first = start(&path);
    assert_eq!(first.info().notices, []);
    first.wait_for("gone", retired).await;
    first
        .wait_for("web", |s| s.state.state == Some(StateName::Disabled))
        .await;
    let e = first
        .call_tool("web", "echo", json!({"text": "not kept"}))
        .await;
    assert_eq!(e.unwrap_err().kind, "transport");
    // Nothing of the running session is "history".
    let own = events(first.history(), None, None, 100).await.unwrap();
    assert_eq!(own, []);
    let first_run = first.history().run().clone();
    first.shutdown().await;

    let second = start(&path);
    let past = events(second.history(), Some("gone".into()), None, 100)
        .await
        .unwrap();
    assert!(
        past.iter()
            .all(|e| e.run == first_run.id && e.run_started_at == first_run.started_at)
    );
    let states: Vec<&str> = past
        .iter()
        .filter(|e| e.event["type"] == "state")
        .filter_map(|e| e.event["state"].as_str())
        .collect();
    // Newest first, down to the shutdown's own event: the recorder drained the bus.
    assert_eq!(states, ["stopping", "retired", "connecting"]);
    let failures = failures(second.history(), Some("gone".into()), 10)
        .await
        .unwrap();
    assert_eq!(failures[0].failure["kind"], "spawn");
    assert!(
        failures[0].failure["message"]
            .as_str()
            .unwrap()
            .contains("lifeline-app-test")
    );

    let calls = calls(second.history(), None, 10).await.unwrap();
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(
        (
            call.server.as_str(),
            call.tool.as_str(),
            call.outcome.as_str(),
            call.error_kind.as_deref()
        ),
        ("web", "echo", "error", Some("transport"))
    );
    // Only what the call was, never what it carried.
    let bytes = std::fs::read(&path).unwrap();
    assert!(!bytes.windows(8).any(|w| w == b"not kept"));
    second.shutdown().await;
}

#[tokio::test]
async fn a_history_file_held_by_another_instance_is_a_notice_and_the_app_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let held = History::open(&path, Options::default()).0;
    held.close();
    let other = Connection::open(&path).unwrap();
    other
        .execute_batch(
            "BEGIN IMMEDIATE; INSERT INTO runs (started_at, started_ms) VALUES ('x', 0);",
        )
        .unwrap();

    let state = start(&path);
    let notices = state.info().notices;
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].kind, "history_locked");
    assert!(notices[0].message.contains(&path.display().to_string()));
    state.wait_for("gone", retired).await;
    assert_eq!(events(state.history(), None, None, 10).await.unwrap(), []);
    state.shutdown().await;
    other.execute_batch("ROLLBACK").unwrap();
}

#[tokio::test]
async fn no_data_directory_is_a_notice() {
    let (_history, notice) = open(None, Options::default());
    let notice = notice.unwrap();
    assert_eq!(notice.kind, "history_unavailable");
    assert!(notice.message.contains(HISTORY_ENV));
}

#[test]
fn the_commands_answer_over_ipc_and_refuse_a_bad_limit() {
    let core = crate::test_support::core();
    let invoke = crate::test_support::invoke;
    assert_eq!(
        invoke(&core, "history_events", json!({"limit": 5})),
        Ok(json!([]))
    );
    assert_eq!(
        invoke(&core, "history_calls", json!({"server": "web", "limit": 5})),
        Ok(json!([]))
    );
    assert_eq!(
        invoke(&core, "history_failures", json!({"limit": 5})),
        Ok(json!([]))
    );
    let e = invoke(&core, "history_events", json!({"limit": 0})).unwrap_err();
    assert_eq!(
        e,
        json!({"kind": "bad_query", "message": "limit must be between 1 and 1000, got 0"})
    );
}

#[tokio::test]
async fn the_hosts_last_hour_survives_a_restart() {
    use lifeline_core::events::{CallOutcome, EventBody, EventBus};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let first = start(&path);
    // A host's call as the gateway publishes it, recorded like every event of the run.
    let bus = EventBus::new(4);
    let call = bus.emit(
        "gone",
        Generation(1),
        EventBody::HostCall {
            host_id: 1,
            host: "cursor".into(),
            tool: "read".into(),
            outcome: CallOutcome::ToolError,
            duration_ms: 42,
            error_kind: None,
        },
    );
    first.history().record(&call);
    first.shutdown().await;

    let second = start(&path);
    let hosts = second.server_hosts("gone");
    assert_eq!(hosts.hosts, [], "a past host is not attached");
    let row = &hosts.tools[0];
    assert_eq!(
        (row.tool.as_str(), row.calls, row.errors, row.p50_ms),
        ("read", 1, 1, Some(42))
    );
    second.shutdown().await;
}
