//! Config entries for the servers under supervision (small real-time delays, fixture
//! scripts that fail on cue), and an HTTP fixture on a chosen port, to restart it there.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::support::{self, PATIENCE, StdioFixture};

/// Small real-time delays: 20 ms doubling to 100 ms, 3 attempts a round, quarantine
/// 100 → 150 → 200 ms. The stability window is the backoff cap (100 ms).
pub fn fast_reconnect() -> Value {
    json!({
        "initialDelayMs": 20,
        "maxDelayMs": 100,
        "maxAttempts": 3,
        "quarantineMs": [100, 150, 200]
    })
}

/// `base` with the keys of `extra` added (or replaced).
pub fn with(mut base: Value, extra: Value) -> Value {
    let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) else {
        panic!("with() merges objects");
    };
    b.extend(e);
    base
}

/// A stdio server entry that starts `fixture` (every generation appends to its one log).
pub fn stdio_server(fixture: &StdioFixture) -> Value {
    json!({
        "command": fixture.program,
        "args": fixture.args,
        "reconnect": fast_reconnect(),
    })
}

pub fn http_server(url: &str) -> Value {
    json!({"type": "http", "url": url, "reconnect": fast_reconnect()})
}

pub fn crash_on(method: &str) -> Value {
    json!({"method": method, "action": {"kind": "crash", "code": 3}})
}

pub fn http_status_on_initialize(status: u16, extra: Value) -> Value {
    let action = with(json!({"kind": "http_status", "status": status}), extra);
    json!({"method": "initialize", "action": action})
}

/// A server behind auth: every request refused with `status`, the first one included
/// (under `auto` that is the stateless revision's `server/discover`).
pub fn http_status_on_every_request(status: u16, extra: Value) -> Value {
    let action = with(json!({"kind": "http_status", "status": status}), extra);
    json!({ "action": action })
}

/// A `lifeline-fixture http` this module starts itself, on a chosen port; killed when
/// dropped.
pub struct PortFixture {
    pub child: Child,
    pub url: String,
}

/// Starts `lifeline-fixture http` on `port` (0: any free one), logging to `log`, and waits
/// for its `LISTENING` line.
pub async fn http_fixture_on(port: u16, script: &Value, log: &Path) -> PortFixture {
    let mut child = Command::new(support::fixture_bin())
        .args([
            "http",
            "--port",
            &port.to_string(),
            "--script",
            &script.to_string(),
            "--log",
        ])
        .arg(log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawning lifeline-fixture http");
    let stdout = child.stdout.take().expect("piped stdout");
    let line = tokio::time::timeout(PATIENCE, BufReader::new(stdout).lines().next_line())
        .await
        .unwrap_or_else(|_| panic!("no LISTENING line on port {port} within {PATIENCE:?}"))
        .expect("reading the fixture's stdout")
        .unwrap_or_else(|| panic!("the fixture exited before listening on port {port}"));
    let url = line
        .strip_prefix("LISTENING ")
        .unwrap_or_else(|| panic!("expected `LISTENING <url>`, got {line:?}"))
        .to_owned();
    PortFixture { child, url }
}

pub fn port_of(url: &str) -> u16 {
    url.trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {url}"))
}

/// A loopback port nobody listens on (bound once by the OS, then released).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding an ephemeral port");
    listener.local_addr().unwrap().port()
}
