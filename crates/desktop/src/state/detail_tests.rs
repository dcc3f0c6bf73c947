//! The detail panel's `AppState` methods against a real stdio fixture server
//! (target/debug/lifeline-fixture, which `make test` builds before the tests) and real
//! supervisors: tool definitions, calls with progress and cancel, stderr, the resolved
//! command and the masked config. No secret value may come out of any of them.

use super::super::AppState;
use super::*;
use crate::source::Source;
use crate::test_support::fixture;
use lifeline_core::config;
use lifeline_core::events::Generation;
use lifeline_core::events::StateName;
use serde_json::json;
use std::path::PathBuf;
use tokio::sync::mpsc;

const CANARY: &str = "hunter2-app-canary";

/// How long a wait on the fixture may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// A temp directory for one test's fixture log, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "lifeline-app-detail-{}-{label}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `fx` is a stdio fixture logging to `log`, with a secret env value; `sh` has a token
/// argument;
/// `web` is a disabled HTTP server with secrets in its URL and headers.
fn start(log: &std::path::Path) -> AppState {
    let text = json!({"mcpServers": {
        "fx": {
            "command": fixture(),
            "args": ["stdio", "--log", log],
            "env": {"API_TOKEN": CANARY}
        },
        "sh": {"command": "sh", "args": ["-c", "exit 0", "--token=tok-value-123"], "disabled": true,
               "reconnect": {"maxAttempts": 3, "quarantineMs": [1000, 2000, 4000]},
               "timeouts": {"pingIntervalMs": 0}},
        "web": {
            "type": "http",
            "url": format!("http://user:{CANARY}@127.0.0.1:9/mcp?key=q-secret-1"),
            "headers": {"Authorization": format!("Bearer {CANARY}")},
            "disabled": true
        }
    }})
    .to_string();
    let config = config::parse(&text, None, &|_| None).unwrap();
    AppState::start(Source {
        config,
        info: crate::test_support::app_info(),
        fixtures: Vec::new(),
    })
}

async fn ready(state: &AppState) {
    let wait = state.wait_for("fx", |s| s.state.state == Some(StateName::Ready));
    tokio::time::timeout(PATIENCE, wait)
        .await
        .expect("fx ready within PATIENCE");
}

/// Waits for the fixture to log a message it received with `method` and, if given, a
/// `params.name` (the tool of a `tools/call`). Each write to the log's directory wakes the
/// wait (inotify), so it waits on the fixture's write, not on a clock.
async fn logged(log: &std::path::Path, method: &str, name: Option<&str>) -> Value {
    use notify::Watcher;
    let find = || {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| {
                e["event"] == "received"
                    && e["rpc_method"] == method
                    && name.is_none_or(|n| e["params"]["name"] == n)
            })
    };
    let dir = log.parent().expect("the log is in a test's directory");
    let (tx, mut written) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
        let _ = tx.send(());
    })
    .expect("an inotify watcher");
    // Watching starts before the first read, so no write is missed between a read and the
    // wait.
    watcher
        .watch(dir, notify::RecursiveMode::NonRecursive)
        .expect("watching the log's directory");
    let found = async {
        loop {
            if let Some(entry) = find() {
                return entry;
            }
            written.recv().await.expect("the watcher outlives the wait");
        }
    };
    tokio::time::timeout(PATIENCE, found)
        .await
        .unwrap_or_else(|_| {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            panic!("the fixture never logged {method} within {PATIENCE:?}:\n{text}")
        })
}

/// The stderr the panel shows for `server` once a line of it contains `text`, woken each
/// time the server's stderr grows; fails the test after `PATIENCE`.
async fn stderr_with(state: &AppState, server: &str, text: &str) -> Vec<GenerationStderr> {
    let mut grown = {
        let fleet = state.fleet.read().await;
        let fleet = fleet.as_ref().expect("running");
        let sup = fleet.get(server).expect("configured");
        sup.stderr_grown().expect("a process has started")
    };
    let has =
        |all: &[GenerationStderr]| all.iter().any(|g| g.lines.iter().any(|l| l.contains(text)));
    let wait = async {
        loop {
            let shown = state.server_stderr(server).await.unwrap();
            if has(&shown) {
                return shown;
            }
            // A change since the last look (or since `grown` was taken) returns at once.
            if grown.changed().await.is_err() {
                let shown = state.server_stderr(server).await.unwrap();
                assert!(
                    has(&shown),
                    "{server} closed its stderr without {text:?}: {shown:?}"
                );
                return shown;
            }
        }
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .unwrap_or_else(|_| panic!("{server}'s stderr had no {text:?} within {PATIENCE:?}"))
}

#[tokio::test]
async fn tool_definitions_calls_with_progress_and_a_cancel_by_call_id() {
    let dir = TempDir::new("calls");
    let log = dir.0.join("fixture.log");
    let state = start(&log);
    ready(&state).await;

    let tools = state.tool_list("fx").await.unwrap();
    let add = tools.iter().find(|t| t["name"] == "add").unwrap();
    assert_eq!(add["inputSchema"]["type"], "object", "{add}");

    let (tx, mut progress) = mpsc::unbounded_channel();
    let args = json!({"steps": 2, "interval_ms": 5});
    let sink = move |p| {
        let _ = tx.send(p);
    };
    let id = Some("p1".to_owned());
    let result = state.call_tool_with("fx", "progress", args, id, sink).await;
    assert_ne!(result.unwrap()["isError"], true);
    let mut seen = Vec::new();
    while let Ok(p) = progress.try_recv() {
        seen.push(p);
    }
    let expect = |n: f64| ProgressView {
        call_id: Some("p1".into()),
        progress: n,
        total: Some(2.0),
        message: None,
    };
    assert_eq!(seen, [expect(1.0), expect(2.0)]);

    let call = state.call_tool_with(
        "fx",
        "slow",
        json!({"ms": 60_000}),
        Some("s1".into()),
        |_| {},
    );
    let cancel = async {
        logged(&log, "tools/call", Some("slow")).await;
        let twice = state
            .call_tool_with(
                "fx",
                "echo",
                json!({"text": "x"}),
                Some("s1".into()),
                |_| {},
            )
            .await
            .unwrap_err();
        assert_eq!(twice.kind, CALL_ID_IN_USE);
        assert!(state.cancel_call("s1"));
    };
    let (result, ()) = tokio::time::timeout(PATIENCE, async { tokio::join!(call, cancel) })
        .await
        .expect("the cancelled call ends at once");
    let e = result.unwrap_err();
    assert_eq!(e.kind, "cancelled", "{e:?}");
    assert!(!state.cancel_call("s1"), "the finished call is forgotten");
    logged(&log, "notifications/cancelled", None).await;
    state.shutdown().await;
}

#[tokio::test]
async fn stderr_command_and_config_are_shown_without_secrets() {
    let dir = TempDir::new("shown");
    let log = dir.0.join("fixture.log");
    let state = start(&log);
    ready(&state).await;

    let text = format!("warning: key {CANARY} rejected");
    state
        .call_tool_with("fx", "stderr", json!({"text": text}), None, |_| {})
        .await
        .unwrap();
    let stderr = stderr_with(&state, "fx", "rejected").await;
    assert_eq!(stderr[0].generation, Generation(1));
    assert!(
        stderr[0]
            .lines
            .iter()
            .any(|l| l == "warning: key *** rejected"),
        "{stderr:?}"
    );
    assert_eq!(state.server_stderr("web").await.unwrap(), []);

    let command = state.server_command("fx").unwrap().expect("a stdio server");
    assert_eq!(
        command.program.as_deref(),
        Some(fixture().to_str().unwrap())
    );
    assert_eq!(command.env_names, ["API_TOKEN"]);
    assert_eq!(command.problem, None);
    let sh = state.server_command("sh").unwrap().expect("a stdio server");
    assert_eq!(sh.args, ["-c", "exit 0", "--token=***"]);
    assert!(sh.program.as_ref().is_some_and(|p| p.starts_with('/')));
    assert_eq!(sh.path_source, "app");
    assert!(state.server_command("web").unwrap().is_none());
    assert_eq!(
        state.server_command("nope").unwrap_err().kind,
        "unknown_server"
    );

    let fx = state.server_config("fx").unwrap();
    assert_eq!(fx["type"], "stdio");
    assert_eq!(fx["env"], json!({"API_TOKEN": "***"}));
    assert_eq!(fx["timeouts"]["requestMs"], 60_000);
    let web = state.server_config("web").unwrap();
    assert_eq!(web["url"], "http://127.0.0.1:9/mcp?key=***");
    assert_eq!(web["headers"], json!({"Authorization": "***"}));
    assert_eq!(web["disabled"], true);

    assert_eq!(state.server_config("sh").unwrap()["args"][2], "--token=***");

    let everything = format!("{stderr:?} {command:?} {sh:?} {fx} {web}");
    for secret in [CANARY, "tok-value-123", "q-secret-1"] {
        assert!(
            !everything.contains(secret),
            "{secret} leaked: {everything}"
        );
    }
    state.shutdown().await;
}

#[tokio::test]
async fn the_policy_shown_is_the_configs_over_the_defaults() {
    let dir = TempDir::new("policy");
    let state = start(&dir.0.join("fixture.log"));
    let defaults = state.server_policy("fx").unwrap();
    assert_eq!(
        serde_json::to_value(&defaults).unwrap(),
        json!({"reconnect": true, "initial_delay_ms": 500, "max_delay_ms": 30000,
               "jitter_percent": 20, "max_attempts": 10,
               "quarantine_ms": [30000, 60000, 120000], "establish_ms": 60000,
               "request_ms": 60000, "ping_interval_ms": 30000, "ping_timeout_ms": 10000,
               "max_concurrent_calls": 4})
    );
    let sh = state.server_policy("sh").unwrap();
    assert_eq!(
        (sh.max_attempts, sh.quarantine_ms, sh.ping_interval_ms),
        (3, [1000, 2000, 4000], None)
    );
    assert_eq!(sh.initial_delay_ms, defaults.initial_delay_ms);
    assert_eq!(
        state.server_policy("nope").unwrap_err().kind,
        crate::error::UNKNOWN_SERVER
    );
    state.shutdown().await;
}
