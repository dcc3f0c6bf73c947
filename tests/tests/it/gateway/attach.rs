//! `lifeline connect NAME` attaching to a running app: a real `lifeline connect` process
//! (the bridge) against a stand-in for the app's local endpoint, made of the same core
//! pieces the app uses (`local_socket::Listener`, `gateway::attach`, `gateway::serve` on a
//! supervisor of the real fixture). The app itself needs a display; its side of attach is
//! tested in src-tauri/src/instance_tests.rs with a real `AppState`.

use super::config;
use crate::cli::lifeline_bin;
use crate::support::{TempDirGuard, stdio_fixture};
use lifeline_core::events::{EventBody, EventBus, HostMode};
use lifeline_core::gateway::attach::{Answer, Request};
use lifeline_core::gateway::hosts::Hosts;
use lifeline_core::gateway::{self, GatewayOptions};
use lifeline_core::local_socket::Listener;
use lifeline_core::supervisor::{Supervisor, SupervisorConfig};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const PATIENCE: Duration = Duration::from_secs(20);

/// The stand-in app: serves every `attach v1 fixture` on `dir`'s endpoint with one shared
/// supervisor; counts attachments. Aborting `task` drops every connection (the app quit).
struct App {
    bus: Arc<EventBus>,
    hosts: Hosts,
    attached: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
    _supervisor: Arc<Supervisor>,
}

fn app(dir: &Path, config_path: &Path) -> App {
    let config = lifeline_core::config::load(config_path).unwrap();
    let cfg = SupervisorConfig::from_server(config.server("fixture").unwrap(), 1).unwrap();
    let bus = Arc::new(EventBus::new(256));
    let hosts = Hosts::new(bus.clone(), HostMode::App);
    let supervisor = Arc::new(Supervisor::spawn(cfg, bus.clone()));
    let options = GatewayOptions {
        hosts: Some(hosts.clone()),
        ..GatewayOptions::default()
    };
    let mut listener = Listener::bind(dir).unwrap();
    let attached = Arc::new(AtomicUsize::new(0));
    let (count, shared) = (attached.clone(), supervisor.clone());
    let task = tokio::spawn(async move {
        let mut sessions = tokio::task::JoinSet::new();
        loop {
            let Ok(stream) = listener.accept().await else {
                continue;
            };
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            reader.read_line(&mut line).await.unwrap();
            let request = Request::parse(&line).expect("an attach request").unwrap();
            assert_eq!(request.name, "fixture");
            count.fetch_add(1, Ordering::SeqCst);
            reader
                .write_all(Answer::Ok.to_line().as_bytes())
                .await
                .unwrap();
            // The session runs on a pipe the connection is copied to, so aborting `task`
            // closes the connection at once, as the app's exit does.
            let (mut ours, theirs) = tokio::io::duplex(1 << 16);
            let (read, write) = tokio::io::split(theirs);
            tokio::spawn(gateway::serve(shared.clone(), read, write, options.clone()));
            sessions.spawn(async move {
                let _ = tokio::io::copy_bidirectional(&mut reader, &mut ours).await;
            });
        }
    });
    App {
        bus,
        hosts,
        attached,
        task,
        _supervisor: supervisor,
    }
}

struct Bridge {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

fn bridge(history_dir: &Path, args: &[&str]) -> Bridge {
    let mut child = Command::new(lifeline_bin())
        .arg("connect")
        .args(args)
        .env("LIFELINE_HISTORY", history_dir.join("history.db"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn lifeline connect");
    Bridge {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
        child,
        next_id: 0,
    }
}

impl Bridge {
    async fn rpc(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.stdin
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .unwrap();
        let answer = async {
            loop {
                let mut line = String::new();
                let n = self.stdout.read_line(&mut line).await.unwrap();
                assert!(n > 0, "the bridge closed stdout before answering {method}");
                let v: Value = serde_json::from_str(&line).expect("stdout is JSON-RPC only");
                if v["id"] == id {
                    return v;
                }
            }
        };
        tokio::time::timeout(PATIENCE, answer)
            .await
            .expect("an answer in time")
    }

    async fn initialize(&mut self) -> Value {
        self.rpc(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "it-host", "version": "1"}}),
        )
        .await
    }

    /// VmRSS of the bridge process, in kB (Linux).
    fn rss_kb(&self) -> Option<u64> {
        let pid = self.child.id()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }
}

fn fixture_config(dir: &TempDirGuard) -> (std::path::PathBuf, crate::support::StdioFixture) {
    let fx = stdio_fixture(&json!({}));
    let path = config(
        dir,
        json!({ "fixture": { "command": fx.program, "args": fx.args } }),
    );
    (path, fx)
}

#[tokio::test]
async fn gateway_attach_serves_the_host_with_the_apps_supervisor() {
    let dir = TempDirGuard::new("gateway-attach");
    let (path, _fx) = fixture_config(&dir);
    let app = app(dir.path(), &path);
    let mut events = app.bus.subscribe();
    // No --config: the running app's config is the one.
    let mut host = bridge(dir.path(), &["fixture"]);
    let init = host.initialize().await;
    assert_eq!(init["result"]["serverInfo"]["name"], "lifeline-fixture");
    let call = host
        .rpc(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "via the app"}}),
        )
        .await;
    assert_eq!(
        call["result"]["content"][0]["text"], "via the app",
        "{call}"
    );
    assert_eq!(app.attached.load(Ordering::SeqCst), 1);
    // The call ran on the app's supervisor: its event is on the app's bus.
    let seen = async {
        loop {
            let e = events.recv().await.unwrap();
            if matches!(&e.body, EventBody::Call { tool, .. } if tool == "echo") {
                return;
            }
        }
    };
    tokio::time::timeout(PATIENCE, seen)
        .await
        .expect("the call event");
    if let Some(kb) = host.rss_kb() {
        eprintln!("lifeline connect (attached, idle after one call): VmRSS {kb} kB");
    }
    // The host closes stdin: the bridge ends cleanly.
    drop(host.stdin);
    let status = tokio::time::timeout(PATIENCE, host.child.wait())
        .await
        .expect("the bridge exits")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    app.task.abort();
}

#[tokio::test]
async fn gateway_attach_the_app_quitting_ends_the_bridge_with_a_clear_line() {
    let dir = TempDirGuard::new("gateway-attach");
    let (path, _fx) = fixture_config(&dir);
    let app = app(dir.path(), &path);
    let mut host = bridge(dir.path(), &["fixture"]);
    host.initialize().await;
    app.task.abort();
    let _ = app.task.await;
    let out = tokio::time::timeout(PATIENCE, host.child.wait_with_output())
        .await
        .expect("the bridge exits when the app goes")
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the Lifeline app closed the connection to `fixture`"),
        "{stderr}"
    );
}

#[tokio::test]
async fn gateway_attach_no_attach_runs_in_process() {
    let dir = TempDirGuard::new("gateway-attach");
    let (path, _fx) = fixture_config(&dir);
    let app = app(dir.path(), &path);
    let config_arg = path.display().to_string();
    let mut host = bridge(
        dir.path(),
        &["fixture", "--no-attach", "--config", &config_arg],
    );
    let init = host.initialize().await;
    assert_eq!(init["result"]["serverInfo"]["name"], "lifeline-fixture");
    assert_eq!(
        app.attached.load(Ordering::SeqCst),
        0,
        "it never asked the app"
    );
    drop(host.stdin);
    let status = tokio::time::timeout(PATIENCE, host.child.wait())
        .await
        .expect("the bridge exits")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    app.task.abort();
}

/// A real host (the TypeScript SDK client, `tests/peers/gateway_host.mjs`) through a real
/// bridge attached to the app: the app's bus says which host attached, each of its calls
/// and when it left; the Hosts section counts its calls.
#[tokio::test]
async fn gateway_attach_records_the_host_and_its_calls() {
    use crate::peers::{repo, require};
    let dir = TempDirGuard::new("gateway-attach-hosts");
    let (path, _fx) = fixture_config(&dir);
    let script = require(
        repo().join("tests/peers/gateway_host.mjs"),
        "the gateway host script",
    );
    require(
        repo().join("tests/peers/node_modules/@modelcontextprotocol/sdk/package.json"),
        "@modelcontextprotocol/sdk",
    );
    let app = app(dir.path(), &path);
    let mut events = app.bus.subscribe();
    let run = Command::new("node")
        .arg(&script)
        .arg(lifeline_bin())
        .arg(&path)
        .arg("fixture")
        .env("LIFELINE_HISTORY", dir.path().join("history.db"))
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the SDK host finished within 120 s")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(app.attached.load(Ordering::SeqCst), 1, "it attached");
    let mut seen = Vec::new();
    let detached = async {
        loop {
            let e = events.recv().await.unwrap();
            match e.body {
                EventBody::HostAttached { host } => seen.push(format!(
                    "attached {} {} {:?} {}",
                    host.name, host.version, host.mode, host.protocol_version
                )),
                EventBody::HostCall {
                    host,
                    tool,
                    outcome,
                    error_kind,
                    ..
                } => seen.push(format!("{host} {tool} {outcome:?} {error_kind:?}")),
                EventBody::HostDetached { host } => {
                    seen.push(format!("detached {}", host.name));
                    return;
                }
                _ => {}
            }
        }
    };
    tokio::time::timeout(PATIENCE, detached)
        .await
        .expect("the host detached");
    let host = "lifeline-gateway-test-host";
    assert_eq!(
        seen,
        [
            format!("attached {host} 1.0.0 App 2025-11-25"),
            format!("{host} echo Ok None"),
            format!("{host} crash Error Some(\"upstream_lost\")"),
            format!("{host} echo Ok None"),
            format!("detached {host}"),
        ]
    );
    let view = app.hosts.view("fixture", std::time::SystemTime::now());
    assert_eq!(view.hosts, vec![]);
    let echo = view.tools.iter().find(|t| t.tool == "echo").unwrap();
    assert_eq!((echo.calls, echo.errors), (2, 0));
    assert!(echo.p50_ms.is_some() && echo.p95_ms >= echo.p50_ms);
    let crash = view.tools.iter().find(|t| t.tool == "crash").unwrap();
    assert_eq!((crash.calls, crash.errors), (1, 1));
    app.task.abort();
}
