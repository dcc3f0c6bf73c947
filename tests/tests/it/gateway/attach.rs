//! `lifeline connect NAME` attaching to a running app: a real `lifeline connect` process
//! (the bridge) against a stand-in for the app's local endpoint, made of the same core
//! pieces the app uses (`local_socket::Listener`, `gateway::attach`, `gateway::serve_lines` on a
//! supervisor of the real fixture). The app itself needs a display; its side of attach is
//! tested in crates/desktop/src/instance_tests.rs with a real `AppState`. Two bridges on one
//! supervisor are two hosts: the server's requests go to the host whose call caused them.
//! When the app quits, the bridge takes the host's session over (crates/cli/src/takeover.rs).

use super::{calls_of, config};
use crate::cli::lifeline_bin;
use crate::support::{TempDirGuard, stdio_fixture, wait_for_log};
use lifeline_core::events::{EventBody, EventBus, HostMode};
use lifeline_core::gateway::aggregate;
use lifeline_core::gateway::attach::{Answer, Request};
use lifeline_core::gateway::hosts::Hosts;
use lifeline_core::gateway::{self, GatewayOptions, Served, Target};
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
    supervisor: Arc<Supervisor>,
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
    let app_hosts = hosts.clone();
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
            count.fetch_add(1, Ordering::SeqCst);
            reader
                .write_all(Answer::Ok.to_line().as_bytes())
                .await
                .unwrap();
            // The session runs on a pipe the connection is copied to, so aborting `task`
            // closes the connection at once, as the app's exit does.
            let (mut ours, theirs) = tokio::io::duplex(1 << 16);
            let (read, write) = tokio::io::split(theirs);
            let served = match request.target {
                Target::Server(name) => {
                    assert_eq!(name, "fixture");
                    Served::Server(shared.clone(), options.clone())
                }
                Target::Profile(name) => {
                    let share = |server: &str| (server == "fixture").then(|| shared.clone());
                    aggregate::serve_profile(&config, &name, share, Some(&app_hosts))
                        .expect("a profile of the config")
                }
            };
            tokio::spawn(gateway::serve_session(served.start(), read, write));
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
        supervisor,
    }
}

struct Bridge {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

fn bridge(history_dir: &Path, args: &[&str]) -> Bridge {
    bridge_with_env(history_dir, args, &[])
}

fn bridge_with_env(history_dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Bridge {
    let mut child = Command::new(lifeline_bin())
        .arg("connect")
        .args(args)
        .env("LIFELINE_HISTORY", history_dir.join("history.db"))
        .envs(env.iter().map(|(k, v)| (*k, *v)))
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
        self.answer_to(&json!(id)).await
    }

    /// Reads until the answer to `id` (a request written by hand).
    async fn answer_to(&mut self, id: &Value) -> Value {
        let answer = async {
            loop {
                let mut line = String::new();
                let n = self.stdout.read_line(&mut line).await.unwrap();
                assert!(n > 0, "the bridge closed stdout before answering {id}");
                let v: Value = serde_json::from_str(&line).expect("stdout is JSON-RPC only");
                if &v["id"] == id {
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
async fn gateway_attach_the_app_quitting_hands_the_session_to_the_bridge() {
    let dir = TempDirGuard::new("gateway-attach");
    let (path, fx) = fixture_config(&dir);
    let app = app(dir.path(), &path);
    let config_arg = path.display().to_string();
    let mut host = bridge(dir.path(), &["fixture", "--config", &config_arg]);
    host.initialize().await;
    // A call in flight on the app when it quits.
    let slow = json!({"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 60000}}});
    host.stdin
        .write_all(format!("{slow}\n").as_bytes())
        .await
        .unwrap();
    wait_for_log(&fx.log, "the slow call reaching the app's server", |e| {
        e["event"] == "received" && e["rpc_method"] == "tools/call" && e["params"]["name"] == "slow"
    })
    .await;
    app.task.abort();
    let _ = app.task.await;

    // The call the app left unanswered fails at once, and is not sent again.
    let lost = host.answer_to(&json!("slow-1")).await;
    assert_eq!(
        lost["error"]["code"],
        lifeline_core::gateway::UPSTREAM_LOST,
        "{lost}"
    );
    assert!(
        lost["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("the Lifeline app quit while tools/call")),
        "{lost}"
    );
    // The host's session goes on, on a supervisor of the bridge's own.
    let call = host
        .rpc(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "after the app"}}),
        )
        .await;
    assert_eq!(
        call["result"]["content"][0]["text"], "after the app",
        "{call}"
    );
    assert_eq!(
        calls_of(&fx.log, "slow"),
        1,
        "the lost call was not sent again"
    );
    drop(host.stdin);
    let out = tokio::time::timeout(PATIENCE, host.child.wait_with_output())
        .await
        .expect("the bridge exits when the host closes stdin")
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("serving `fixture` from this process now"),
        "{stderr}"
    );
    drop(app.supervisor);
}

#[tokio::test]
async fn gateway_attach_serves_a_profile_and_takes_it_over_when_the_app_quits() {
    let dir = TempDirGuard::new("gateway-attach");
    let (path, fx) = fixture_config(&dir);
    let app = app(dir.path(), &path);
    let config_arg = path.display().to_string();
    let mut host = bridge(dir.path(), &["--all", "--config", &config_arg]);
    let init = host.initialize().await;
    assert_eq!(init["result"]["serverInfo"]["name"], "lifeline", "{init}");
    assert_eq!(
        app.attached.load(Ordering::SeqCst),
        1,
        "the bridge attached to the app"
    );
    let call = host
        .rpc(
            "tools/call",
            json!({"name": "fixture__echo", "arguments": {"text": "via the app"}}),
        )
        .await;
    assert_eq!(
        call["result"]["content"][0]["text"], "via the app",
        "{call}"
    );

    app.task.abort();
    let _ = app.task.await;
    let call = host
        .rpc(
            "tools/call",
            json!({"name": "fixture__echo", "arguments": {"text": "after"}}),
        )
        .await;
    assert_eq!(call["result"]["content"][0]["text"], "after", "{call}");
    assert_eq!(calls_of(&fx.log, "echo"), 2);
    drop(host.stdin);
    let out = tokio::time::timeout(PATIENCE, host.child.wait_with_output())
        .await
        .expect("the bridge exits when the host closes stdin")
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("serving profile `default` from this process now"),
        "{stderr}"
    );
    drop(app.supervisor);
}

#[tokio::test]
async fn gateway_attach_the_app_quitting_ends_a_bridge_that_cannot_run_the_server() {
    let dir = TempDirGuard::new("gateway-attach");
    let (path, _fx) = fixture_config(&dir);
    let app = app(dir.path(), &path);
    // No --config, and the bridge's own config has no `fixture`.
    let elsewhere = dir.path().join("elsewhere.json");
    std::fs::write(&elsewhere, r#"{"mcpServers": {}}"#).unwrap();
    let mut host = bridge_with_env(dir.path(), &["fixture"], &[("LIFELINE_CONFIG", &elsewhere)]);
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
        stderr.contains("the Lifeline app closed the connection to `fixture`")
            && stderr.contains("cannot run in this process"),
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
    // The script's first steps, in order (it goes on with the server's requests to it).
    assert_eq!(
        seen[..4],
        [
            format!("attached {host} 1.0.0 App 2025-11-25"),
            format!("{host} echo Ok None"),
            format!("{host} crash Error Some(\"upstream_lost\")"),
            format!("{host} echo Ok None"),
        ],
        "{seen:?}"
    );
    assert_eq!(seen.last(), Some(&format!("detached {host}")));
    let echoes = seen.iter().filter(|s| s.contains(" echo Ok ")).count();
    let view = app.hosts.view("fixture", std::time::SystemTime::now());
    assert_eq!(view.hosts, vec![]);
    let echo = view.tools.iter().find(|t| t.tool == "echo").unwrap();
    assert_eq!((echo.calls as usize, echo.errors), (echoes, 0));
    assert!(echo.p50_ms.is_some() && echo.p95_ms >= echo.p50_ms);
    let crash = view.tools.iter().find(|t| t.tool == "crash").unwrap();
    assert_eq!((crash.calls, crash.errors), (1, 1));
    app.task.abort();
}

impl Bridge {
    /// Sends a request and answers the requests the gateway sends meanwhile with
    /// `answer(method)`; returns the answer and the methods it was asked.
    async fn rpc_answering(
        &mut self,
        method: &str,
        params: Value,
        answer: impl Fn(&str) -> Value,
    ) -> (Value, Vec<String>) {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.stdin
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .unwrap();
        let mut asked = Vec::new();
        let run = async {
            loop {
                let mut line = String::new();
                let n = self.stdout.read_line(&mut line).await.unwrap();
                assert!(n > 0, "the bridge closed stdout before answering {method}");
                let v: Value = serde_json::from_str(&line).expect("stdout is JSON-RPC only");
                if let (Some(m), Some(rid)) = (v["method"].as_str(), v.get("id")) {
                    asked.push(m.to_owned());
                    let reply = json!({"jsonrpc": "2.0", "id": rid, "result": answer(m)});
                    self.stdin
                        .write_all(format!("{reply}\n").as_bytes())
                        .await
                        .unwrap();
                } else if v["id"] == id && v.get("method").is_none() {
                    return v;
                }
            }
        };
        let v = tokio::time::timeout(PATIENCE, run)
            .await
            .expect("an answer in time");
        (v, asked)
    }
}

#[tokio::test]
async fn gateway_attach_relays_the_servers_requests_to_the_host_that_caused_them() {
    let dir = TempDirGuard::new("gateway-attach");
    let (path, fx) = fixture_config(&dir);
    let app = app(dir.path(), &path);
    // The app's supervisor is ready before any host: its generation offers nothing.
    app.supervisor
        .wait_for(|s| s.state.state == Some(lifeline_core::events::StateName::Ready))
        .await;
    let caps = json!({"sampling": {}, "roots": {}});
    let mut a = bridge(dir.path(), &["fixture"]);
    let mut b = bridge(dir.path(), &["fixture"]);
    let init = |caps: &Value| {
        json!({"protocolVersion": "2025-11-25", "capabilities": caps,
               "clientInfo": {"name": "it-host", "version": "1"}})
    };
    a.rpc("initialize", init(&caps)).await;
    b.rpc("initialize", init(&caps)).await;
    // A's capabilities reconnected the shared supervisor once; B's changed nothing.
    let inits = crate::support::received(&crate::support::read_log(&fx.log), "initialize");
    assert_eq!(inits.len(), 2, "{inits:?}");
    assert_eq!(inits[1]["params"]["capabilities"]["sampling"], json!({}));
    let ask = |method: &str| json!({"name": "ask", "arguments": {"method": method}});
    let who = |name: &'static str| {
        move |method: &str| match method {
            "roots/list" => json!({"roots": [{"uri": format!("file:///{name}")}]}),
            _ => json!({"model": name, "role": "assistant",
                        "content": {"type": "text", "text": name}}),
        }
    };
    // A is the older host; its call's sampling goes to it, not to B (the most recent).
    let (call, asked) = a
        .rpc_answering("tools/call", ask("sampling/createMessage"), who("a"))
        .await;
    assert_eq!(asked, ["sampling/createMessage"]);
    let text = call["result"]["content"][0]["text"].as_str().unwrap();
    let answered: Value = serde_json::from_str(text).unwrap();
    assert_eq!(answered["result"]["model"], "a", "{call}");
    let (call, asked) = b
        .rpc_answering("tools/call", ask("roots/list"), who("b"))
        .await;
    assert_eq!(asked, ["roots/list"]);
    let text = call["result"]["content"][0]["text"].as_str().unwrap();
    let answered: Value = serde_json::from_str(text).unwrap();
    assert_eq!(answered["result"]["roots"][0]["uri"], "file:///b", "{call}");
    drop(a.stdin);
    drop(b.stdin);
    let _ = tokio::time::timeout(PATIENCE, a.child.wait()).await;
    let _ = tokio::time::timeout(PATIENCE, b.child.wait()).await;
    app.task.abort();
}

/// Writes a line one byte over the host's cap, with no `\n`, and keeps stdin open: the
/// bridge must refuse it at the cap and end, not buffer on waiting for the line's end.
async fn an_endless_host_line_ends_the_bridge(mut host: Bridge) -> String {
    let endless = vec![b'x'; gateway::MAX_LINE + 1];
    let mut stdin = host.stdin;
    // The bridge stops reading at the cap, so this write may never finish; stdin stays open.
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&endless).await;
        std::future::pending::<()>().await
    });
    let mut out = Vec::new();
    let read = tokio::io::AsyncReadExt::read_to_end(&mut host.stdout, &mut out);
    tokio::time::timeout(PATIENCE, read)
        .await
        .expect("the bridge closed stdout after a line over the cap")
        .unwrap();
    let status = tokio::time::timeout(PATIENCE, host.child.wait())
        .await
        .expect("the bridge exits")
        .unwrap();
    writer.abort();
    let mut err = String::new();
    if let Some(mut stderr) = host.child.stderr.take() {
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err).await;
    }
    assert!(
        status.code().is_some(),
        "it exited on its own: {status:?}; {err}"
    );
    err
}

#[tokio::test]
async fn gateway_attach_a_host_line_over_the_cap_ends_an_attached_bridge() {
    let dir = TempDirGuard::new("gateway-attach");
    let (path, _fx) = fixture_config(&dir);
    let app = app(dir.path(), &path);
    let mut host = bridge(dir.path(), &["fixture"]);
    host.initialize().await;
    assert_eq!(app.attached.load(Ordering::SeqCst), 1);
    let err = an_endless_host_line_ends_the_bridge(host).await;
    assert!(
        err.contains("your MCP client sent a line longer than 16 MiB"),
        "stderr names the cap: {err}"
    );
    app.task.abort();
}

#[tokio::test]
async fn gateway_attach_a_host_line_over_the_cap_ends_an_in_process_bridge() {
    let dir = TempDirGuard::new("gateway-attach");
    let (path, _fx) = fixture_config(&dir);
    let config_arg = path.display().to_string();
    let mut host = bridge_with_env(
        dir.path(),
        &["fixture", "--no-attach", "--config", &config_arg],
        &[("LIFELINE_LOG", Path::new("warn"))],
    );
    host.initialize().await;
    let err = an_endless_host_line_ends_the_bridge(host).await;
    assert!(
        err.contains("the host sent a line over 16 MiB; closing its session"),
        "the log names the cap: {err}"
    );
}
