//! Real peers nobody on the team wrote: `@modelcontextprotocol/server-everything` (npm)
//! over stdio, Streamable HTTP and legacy HTTP+SSE, and a server built on the Python `mcp` SDK. Installed by
//! `scripts/setup.sh`; a missing peer fails the test with what to run, never skips it.

use lifeline_core::session::RequestOptions;
use lifeline_core::transport::http::{self, HttpConfig};
use lifeline_core::transport::stdio::{self, StdioConfig};
use lifeline_core::{Session, SessionOptions};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_owned()
}

/// The test peers' venv's Python (scripts/env.sh's `LIFELINE_PYTHON`): a Windows venv keeps
/// its programs in `Scripts/`.
pub fn venv_python() -> PathBuf {
    let python = if cfg!(windows) {
        ".tools/venv/Scripts/python.exe"
    } else {
        ".tools/venv/bin/python"
    };
    require(repo().join(python), "the Python venv with mcp")
}

pub fn require(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} not found at {}: run `scripts/setup.sh` (or `make setup`)",
        path.display()
    );
    path
}

fn everything_js() -> PathBuf {
    require(
        repo()
            .join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        "@modelcontextprotocol/server-everything",
    )
}

/// A peer process serving HTTP; killed (with its group) when dropped.
pub struct Peer {
    pub url: String,
    _child: Child,
}

/// Starts `cmd` and waits for its `LISTENING http://…` line on stdout.
pub async fn listening(mut cmd: Command, what: &str) -> Peer {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("starting {what}: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let read = async {
        while let Some(line) = lines.next_line().await.expect("reading the peer's stdout") {
            if let Some(url) = line.strip_prefix("LISTENING ") {
                return url.trim().to_owned();
            }
        }
        panic!("{what} exited before printing LISTENING");
    };
    let url = tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .unwrap_or_else(|_| panic!("{what} did not print LISTENING within 60 s"));
    // Keep draining stdout so the peer never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Peer { url, _child: child }
}

async fn everything_http() -> Peer {
    let mut cmd = Command::new("node");
    cmd.arg("--require")
        .arg(require(
            repo().join("tests/peers/loopback.cjs"),
            "the loopback preload",
        ))
        .arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", "0");
    listening(cmd, "server-everything (streamableHttp)").await
}

/// server-everything's legacy HTTP+SSE mode (`GET /sse`, `POST /message`).
async fn everything_sse() -> Peer {
    let mut cmd = Command::new("node");
    cmd.arg("--require")
        .arg(require(
            repo().join("tests/peers/loopback.cjs"),
            "the loopback preload",
        ))
        .arg(everything_js())
        .arg("sse")
        .env("PORT", "0");
    listening(cmd, "server-everything (sse)").await
}

async fn python_peer() -> Peer {
    python_peer_with(&[]).await
}

async fn python_peer_with(args: &[&str]) -> Peer {
    let mut cmd = Command::new(venv_python());
    cmd.arg(require(
        repo().join("tests/peers/python_server.py"),
        "the Python peer",
    ))
    .args(args);
    listening(cmd, "the Python mcp server").await
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Lists tools, echoes, and runs a long operation with progress on server-everything.
async fn exercise_everything(session: &Session) {
    let tools = session.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "get-sum", "trigger-long-running-operation"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let r = session
        .call_tool(
            "echo",
            json!({"message": "hello"}),
            RequestOptions::default(),
        )
        .await
        .expect("echo");
    assert_eq!(text_of(&r), "Echo: hello");

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = RequestOptions {
        progress: Some(tx),
        ..Default::default()
    };
    let args = json!({"duration": 1, "steps": 3});
    let r = session
        .call_tool("trigger-long-running-operation", args, opts)
        .await
        .expect("long operation");
    assert!(text_of(&r).contains("completed"), "{r}");
    let mut seen = Vec::new();
    while let Ok(p) = rx.try_recv() {
        seen.push(p.progress);
    }
    assert_eq!(seen, [1.0, 2.0, 3.0], "one progress notification per step");
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let config = StdioConfig::new(
        "node",
        vec![everything_js().display().to_string(), "stdio".into()],
    );
    let conn = stdio::spawn(&config).expect("spawn server-everything");
    let session = Session::connect(conn, SessionOptions::default())
        .await
        .expect("handshake");
    assert_eq!(session.server().unwrap().protocol_version, "2025-11-25");
    exercise_everything(&session).await;
    session.close().await;
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let peer = everything_http().await;
    let conn = http::connect(&HttpConfig::new(&peer.url)).expect("http transport");
    let session = Session::connect(conn, SessionOptions::default())
        .await
        .expect("handshake");
    let lifeline_core::transport::Transport::Http(t) = session.transport() else {
        panic!()
    };
    assert!(
        t.session_id().is_some(),
        "server-everything is stateful: a session id was captured"
    );
    exercise_everything(&session).await;
    session.close().await;
}

#[tokio::test]
async fn server_everything_over_legacy_sse() {
    let peer = everything_sse().await;
    let conn = http::legacy::connect(&HttpConfig::new(&peer.url)).expect("legacy transport");
    let session = Session::connect(conn, SessionOptions::default())
        .await
        .expect("handshake");
    exercise_everything(&session).await;
    session.close().await;
}

#[tokio::test]
async fn server_everything_over_legacy_sse_is_found_by_url_alone() {
    let peer = everything_sse().await;
    let run = crate::cli::lifeline(&[
        "call",
        &peer.url,
        "echo",
        r#"{"message": "auto"}"#,
        "--json",
    ])
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.outcome()["result"]["content"][0]["text"], "Echo: auto");
}

#[tokio::test]
async fn python_sdk_server_lists_and_calls() {
    let peer = python_peer().await;
    let conn = http::connect(&HttpConfig::new(&peer.url)).expect("http transport");
    let session = Session::connect(conn, SessionOptions::default())
        .await
        .expect("handshake");
    let names: Vec<String> = session
        .list_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(
        names.contains(&"echo".to_owned()) && names.contains(&"add".to_owned()),
        "{names:?}"
    );
    let r = session
        .call_tool("add", json!({"a": 2, "b": 40}), RequestOptions::default())
        .await
        .expect("add");
    assert_eq!(text_of(&r), "42");
    let r = session
        .call_tool("echo", json!({"text": "hi"}), RequestOptions::default())
        .await
        .expect("echo");
    assert_eq!(text_of(&r), "hi");
    session.close().await;
}

#[tokio::test]
async fn python_sdk_legacy_sse_server_is_found_by_url_alone() {
    let peer = python_peer_with(&["--sse"]).await;
    let add = |a: i32, b: i32| json!({"a": a, "b": b}).to_string();
    let args = add(2, 40);
    let run = crate::cli::lifeline(&["call", &peer.url, "add", &args, "--json"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.outcome()["result"]["content"][0]["text"], "42");
}
