//! `lifeline connect NAME` end to end: Lifeline's own `Session` is the host, over a stdio
//! connection to a real `lifeline connect` process that supervises a real fixture. The
//! upstream dies mid-session; the host's session stays open, the call in flight fails at
//! once with the cause, nothing is executed twice (the fixture's log counts), and a server
//! a person must fix is reported as such.

use crate::cli::lifeline_bin;
use crate::support::{TempDirGuard, read_log, received, stdio_fixture, when_written};
use lifeline_core::session::{RequestOptions, ServerNotification};
use lifeline_core::transport::stdio::{self, StdioConfig};
use lifeline_core::{Session, SessionOptions};
use serde_json::{Value, json};
use std::path::PathBuf;

mod aggregate;
mod aggregate_peers;
mod attach;
mod http;
mod http_upstream;
mod inspector;
#[cfg(unix)]
mod login_path;
mod sdk_host;
mod trust;

/// A config holding `servers` (the `mcpServers` shape), in a fresh directory.
pub(super) fn config(dir: &TempDirGuard, servers: Value) -> PathBuf {
    let path = dir.path().join("config.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

/// The host: a session on `lifeline connect NAME --config CONFIG`.
async fn host(name: &str, config: &std::path::Path) -> Session {
    let mut cfg = StdioConfig::new(
        lifeline_bin().display().to_string(),
        vec![
            "connect".into(),
            name.into(),
            "--config".into(),
            config.display().to_string(),
        ],
    );
    let (history, value) = crate::cli::history_env();
    cfg.env.push((history, value));
    let conn = stdio::spawn(&cfg).expect("spawn lifeline connect");
    Session::connect(conn, SessionOptions::default())
        .await
        .expect("the gateway's handshake")
}

fn text(v: &Value) -> &str {
    v["content"][0]["text"].as_str().unwrap_or_default()
}

fn calls_of(log: &std::path::Path, tool: &str) -> usize {
    received(&read_log(log), "tools/call")
        .iter()
        .filter(|e| e["params"]["name"] == tool)
        .count()
}

#[tokio::test]
async fn gateway_host_session_survives_an_upstream_crash() {
    let dir = TempDirGuard::new("gateway");
    let fx = stdio_fixture(&json!({}));
    let path = config(
        &dir,
        json!({ "fixture": { "command": fx.program, "args": fx.args,
            "reconnect": { "initialDelayMs": 10, "maxDelayMs": 50 } } }),
    );
    let session = host("fixture", &path).await;
    let info = session.server().unwrap();
    assert_eq!(
        info.server_info.as_ref().unwrap().name,
        "lifeline-fixture",
        "initialize is the upstream's own"
    );
    let tools = session.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let echo = session
        .call_tool("echo", json!({"text": "one"}), RequestOptions::default())
        .await
        .expect("a call");
    assert_eq!(text(&echo), "one");

    // The upstream dies under a call: the host hears it at once, with the cause.
    let crashed = session
        .call_tool("crash", json!({"code": 3}), RequestOptions::default())
        .await
        .expect_err("the call in flight at the crash fails");
    let message = crashed.message().to_owned();
    assert_eq!(
        crashed.context().rpc_code,
        Some(lifeline_core::gateway::UPSTREAM_LOST),
        "{message}"
    );
    assert!(
        message.contains("was lost while tools/call was in flight"),
        "{message}"
    );
    assert!(message.contains("readOnlyHint"), "{message}");

    // The host's session is still open; the next call runs on the next generation.
    session
        .ping()
        .await
        .expect("ping is answered by the gateway");
    let again = session
        .call_tool("echo", json!({"text": "two"}), RequestOptions::default())
        .await
        .expect("the next call succeeds after the reconnect");
    assert_eq!(text(&again), "two");
    assert!(session.closed().is_none());

    // Never executed twice: the crashing call reached a fixture exactly once.
    assert_eq!(calls_of(&fx.log, "crash"), 1);
    assert_eq!(calls_of(&fx.log, "echo"), 2);
    let started = read_log(&fx.log)
        .iter()
        .filter(|e| e["event"] == "started")
        .count();
    assert_eq!(started, 2, "a second generation served the last call");

    // The host closes stdin: `lifeline connect` stops the supervisor, which closes the
    // fixture's stdin in turn.
    session.close().await;
    fx.wait_for_log("the upstream's stdin closed", |e| {
        e["event"] == "stdin_closed"
    })
    .await;
}

#[tokio::test]
async fn gateway_reports_states_a_person_must_fix() {
    let dir = TempDirGuard::new("gateway");
    let crashy = stdio_fixture(&json!({
        "rules": [{ "method": "initialize", "action": { "kind": "crash" } }]
    }));
    let path = config(
        &dir,
        json!({
            "off": { "command": "true", "disabled": true },
            "broken": { "command": "/nonexistent/lifeline-no-such-server" },
            "crashy": { "command": crashy.program, "args": crashy.args,
                "reconnect": { "initialDelayMs": 10, "maxDelayMs": 20, "maxAttempts": 1,
                               "quarantineMs": [600000, 600000, 600000] } },
        }),
    );
    for (name, state) in [
        ("off", "disabled"),
        ("broken", "retired"),
        ("crashy", "quarantined"),
    ] {
        let session = host(name, &path).await;
        assert_eq!(
            session.server().unwrap().server_info.as_ref().unwrap().name,
            format!("lifeline:{name}")
        );
        let e = session
            .call_tool("echo", json!({}), RequestOptions::default())
            .await
            .expect_err("no server to call");
        assert_eq!(
            e.context().rpc_code,
            Some(lifeline_core::gateway::HALTED),
            "{e}"
        );
        assert!(e.message().contains(state), "{name}: {}", e.message());
        session.close().await;
    }
}

#[test]
fn gateway_unknown_name_lists_the_configured_ones() {
    let dir = TempDirGuard::new("gateway");
    let path = config(&dir, json!({ "alpha": { "command": "true" } }));
    let out = std::process::Command::new(lifeline_bin())
        .args(["connect", "nope", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stdout.is_empty(),
        "stdout is the host's: nothing else goes there"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("alpha"), "{err}");
}

#[tokio::test]
async fn gateway_passes_the_servers_log_messages_to_the_host() {
    let dir = TempDirGuard::new("gateway-log");
    let fx = stdio_fixture(&json!({}));
    let path = config(
        &dir,
        json!({ "fixture": { "command": fx.program, "args": fx.args } }),
    );
    let session = host("fixture", &path).await;
    let mut notes = session.subscribe();
    session
        .call_tool(
            "log",
            json!({"level": "warning", "text": "from upstream"}),
            RequestOptions::default(),
        )
        .await
        .expect("the log call");
    let seen = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            match notes.recv().await {
                Ok(ServerNotification::Log {
                    level,
                    logger,
                    data,
                }) => return (level, logger, data),
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    panic!("the gateway's session ended")
                }
                _ => {}
            }
        }
    })
    .await
    .expect("the server's log message reached the host");
    assert_eq!(seen.0, "warning");
    assert_eq!(seen.1.as_deref(), Some("lifeline-fixture"));
    assert!(seen.2.to_string().contains("from upstream"), "{seen:?}");
}

/// A host's stdio is usually a pipe or a socket pair, which the bridge drives from tokio's
/// reactor (every other test here); anything else (a terminal, a file) is copied by
/// threads. stdout a file: the handshake and a call are answered into it, and closing
/// stdin ends the process.
#[tokio::test]
async fn gateway_serves_a_host_whose_stdout_is_a_file() {
    use tokio::io::AsyncWriteExt;
    let dir = TempDirGuard::new("gateway-files");
    let fx = stdio_fixture(&json!({}));
    let path = config(
        &dir,
        json!({ "fixture": { "command": fx.program, "args": fx.args } }),
    );
    let output = dir.path().join("out.jsonl");
    let mut child = tokio::process::Command::new(lifeline_bin())
        .args(["connect", "fixture", "--no-attach", "--config"])
        .arg(&path)
        .env("LIFELINE_LOGIN_PATH", "0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::fs::File::create(&output).unwrap())
        .kill_on_drop(true)
        .spawn()
        .expect("lifeline connect runs");
    let mut stdin = child.stdin.take().unwrap();
    for msg in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "files", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "into a file"}}}),
    ] {
        stdin
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .unwrap();
    }
    // The condition is the file holding both answers; it is read again on every write.
    let answers = when_written(dir.path(), || {
        let written = std::fs::read_to_string(&output).unwrap_or_default();
        let lines: Vec<Value> = written
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        (lines.len() >= 2).then_some(lines)
    })
    .await
    .expect("both answers were written to the file within PATIENCE");
    drop(stdin);
    let status = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait())
        .await
        .expect("closing stdin ended `lifeline connect`")
        .unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(answers[0]["id"], 0, "{answers:?}");
    assert_eq!(
        answers[0]["result"]["serverInfo"]["name"], "lifeline-fixture",
        "{answers:?}"
    );
    assert_eq!(answers[1]["id"], 1, "{answers:?}");
    assert_eq!(text(&answers[1]["result"]), "into a file", "{answers:?}");
}

/// A host that sends 64 calls at once gets 64 answers: beyond the server's 4 running calls
/// the rest wait their turn (`supervisor::MAX_WAITING_CALLS`), none refused.
#[tokio::test]
async fn sixty_four_concurrent_calls_from_one_host_are_all_answered() {
    let dir = TempDirGuard::new("gateway-64");
    let fx = stdio_fixture(&json!({}));
    let path = config(
        &dir,
        json!({ "fixture": { "command": fx.program, "args": fx.args } }),
    );
    let session = host("fixture", &path).await;
    let calls = (0..64).map(|n| {
        let session = &session;
        async move {
            session
                .call_tool(
                    "slow",
                    json!({"ms": 20, "text": n.to_string()}),
                    RequestOptions::default(),
                )
                .await
        }
    });
    let answers = futures_util::future::join_all(calls).await;
    let failed: Vec<String> = answers
        .iter()
        .filter_map(|a| a.as_ref().err().map(|e| e.message().to_owned()))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 64 failed: {failed:?}",
        failed.len()
    );
    assert_eq!(calls_of(&fx.log, "slow"), 64, "each sent once");
    session.close().await;
}
