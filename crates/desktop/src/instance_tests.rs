//! Attaching to the app: a real `AppState` supervising the real stdio fixture, the instance
//! guard serving its local endpoint, and a real local-socket client doing what
//! `lifeline connect` does — `attach v1 fixture`, then initialize, tools/list and
//! tools/call through the app's own supervisor (the call shows on the app's event bus).

use super::*;
use crate::state::AppState;
use crate::test_support::{call_event, fixture_config, start};
use lifeline_core::events::{HostMode, StateName};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How long a step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// The app's state on the fixture, as the first instance at `dir` serving attaches there;
/// its config file (`config.json` in `dir`) is returned beside it.
fn serving(dir: &Path) -> (Arc<AppState>, PathBuf) {
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, "{}").unwrap();
    let Claim::First(guard) = claim(dir) else {
        panic!("the first claim must win");
    };
    let state = Arc::new(start(fixture_config(), Some(&config_path)));
    guard.serve(
        || {},
        on_attach(&state),
        Arc::new(|_, _| Box::pin(async {})),
    );
    (state, config_path)
}

fn on_attach(state: &Arc<AppState>) -> OnAttach {
    let state = state.clone();
    Arc::new(move |request| {
        let state = state.clone();
        Box::pin(async move { state.attach(&request).await })
    })
}

/// One line from the app, bounded.
async fn line(reader: &mut BufReader<Stream>) -> String {
    let mut line = String::new();
    tokio::time::timeout(PATIENCE, reader.read_line(&mut line))
        .await
        .expect("an answer within PATIENCE")
        .expect("reading the socket");
    line
}

/// Sends a request and returns its response (skipping notifications).
async fn rpc(reader: &mut BufReader<Stream>, id: u64, method: &str, params: Value) -> Value {
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let text = format!("{msg}\n");
    reader.get_mut().write_all(text.as_bytes()).await.unwrap();
    loop {
        let answer: Value = serde_json::from_str(&line(reader).await).expect("a JSON-RPC line");
        if answer["id"] == id {
            return answer;
        }
    }
}

async fn attach(dir: &Path, request: &str) -> (BufReader<Stream>, String) {
    let stream = local_socket::connect(dir).await.expect("the app listens");
    let mut reader = BufReader::new(stream);
    reader
        .get_mut()
        .write_all(request.as_bytes())
        .await
        .unwrap();
    let answer = line(&mut reader).await;
    (reader, answer)
}

#[test]
fn a_bridge_attaches_to_the_apps_supervisor_and_its_calls_reach_the_apps_feed() {
    let _runtime = crate::test_support::runtime().enter();
    let dir = tempfile::tempdir().unwrap();
    let (state, _) = serving(dir.path());
    crate::test_support::block_on(async {
        let mut events = state.events().await.unwrap();
        let (mut app, answer) = attach(dir.path(), "attach v1 fixture\n").await;
        assert_eq!(answer, "ok\n");
        let init = rpc(
            &mut app,
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "test-host", "version": "1"}}),
        )
        .await;
        assert_eq!(
            init["result"]["serverInfo"]["name"], "lifeline-fixture",
            "{init}"
        );
        let tools = rpc(&mut app, 2, "tools/list", json!({})).await;
        let names: Vec<&str> = tools["result"]["tools"]
            .as_array()
            .expect("a tool list")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(names.contains(&"echo"), "{tools}");
        let call = rpc(
            &mut app,
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "through the app"}}),
        )
        .await;
        assert_eq!(
            call["result"]["content"][0]["text"], "through the app",
            "{call}"
        );
        // The call ran on the app's supervisor: its event is on the app's bus.
        let event = call_event(&mut events, "echo").await;
        assert_eq!(event.server, "fixture");
        // The host is the app's to show: attached through it, and its call counted.
        let hosts = state.server_hosts("fixture");
        assert_eq!(hosts.hosts.len(), 1, "{hosts:?}");
        let host = &hosts.hosts[0].host;
        assert_eq!(
            (host.name.as_str(), host.mode),
            ("test-host", HostMode::App)
        );
        assert_eq!(
            (hosts.tools[0].tool.as_str(), hosts.tools[0].calls),
            ("echo", 1)
        );
        // The supervisor is the app's: still ready after the host leaves.
        drop(app);
        let snapshot = state.snapshots().await.unwrap();
        assert_eq!(snapshot[0].state.state, Some(StateName::Ready));
        state.shutdown().await;
    });
}

#[test]
fn an_unknown_server_another_config_or_revision_is_refused_with_a_reason() {
    let _runtime = crate::test_support::runtime().enter();
    let dir = tempfile::tempdir().unwrap();
    let (state, config_path) = serving(dir.path());
    crate::test_support::block_on(async {
        let (_, answer) = attach(dir.path(), "attach v1 nope\n").await;
        assert!(answer.starts_with("error unknown "), "{answer}");
        let other = format!(
            "attach v1 fixture {}\n",
            dir.path().join("other.json").display()
        );
        let (_, answer) = attach(dir.path(), &other).await;
        assert!(answer.starts_with("error config "), "{answer}");
        let same = format!("attach v1 fixture {}\n", config_path.display());
        let (_, answer) = attach(dir.path(), &same).await;
        assert_eq!(answer, "ok\n");
        let (_, answer) = attach(dir.path(), "attach v9 fixture\n").await;
        assert!(answer.starts_with("error version "), "{answer}");
        state.shutdown().await;
    });
}
