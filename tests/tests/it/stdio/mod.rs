//! The stdio transport and the session against a real `lifeline-fixture stdio` process, and
//! the `lifeline` command end to end for stdio targets:
//!
//! - `calls`: round trips, crashes and exit glosses, timeouts, server→client requests and
//!   progress.
//! - `framing`: spawn failures, line framing and its cap, the stderr tail.
//! - `shutdown`: the shutdown sequence, one table row a way to end a server.
//! - `command`: `lifeline call` and `lifeline tools` on `stdio:` targets and named servers.
//!
//! The helpers below are shared by all four.

use lifeline_core::session::RequestOptions;
use lifeline_core::transport::Transport;
use lifeline_core::transport::stdio::{self, StdioConfig, StdioTransport};
use lifeline_core::{Error, Session, SessionOptions};
use serde_json::{Value, json};

use crate::support::{PATIENCE, StdioFixture, is_running};

mod calls;
mod command;
mod framing;
mod shutdown;

/// Every tool of the fixture, in its order.
const TOOLS: &str = "echo add slow progress fail crash stderr list_changed log ask";

/// The fixture as the client under test starts it. The default shutdown grace only costs time
/// when a process refuses to die, so tests that make one refuse set it small.
fn config(fixture: &StdioFixture) -> StdioConfig {
    StdioConfig::new(&fixture.program, fixture.args.clone())
}

async fn connect(config: &StdioConfig) -> Session {
    let conn = stdio::spawn(config).expect("spawning the fixture");
    within(
        "the handshake with the fixture",
        Session::connect(conn, SessionOptions::default()),
    )
    .await
    .expect("the handshake with the fixture")
}

fn stdio_of(session: &Session) -> &StdioTransport {
    match session.transport() {
        Transport::Stdio(t) => t,
        _ => panic!("expected a stdio transport"),
    }
}

async fn call(session: &Session, tool: &str, arguments: Value) -> Result<Value, Error> {
    session
        .call_tool(tool, arguments, RequestOptions::default())
        .await
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result, got {result}"))
}

fn crash_rule(tool: &str, code: i32) -> Value {
    json!({"method": "tools/call", "tool": tool, "action": {"kind": "crash", "code": code}})
}

fn never_answer(tool: &str) -> Value {
    json!({"method": "tools/call", "tool": tool, "action": {"kind": "never_answer"}})
}

/// The pid of an event the fixture logged (`started`, `grandchild`).
async fn logged_pid(fixture: &StdioFixture, event: &str) -> u32 {
    let entry = fixture.wait_for_log(event, |e| e["event"] == event).await;
    let pid = entry["pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("no pid in {entry}"));
    u32::try_from(pid).expect("a pid fits in u32")
}

/// Waits for `event` (a process dying, a pipe being read), failing the test after
/// `PATIENCE`.
async fn within<T>(what: &str, event: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, event)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {PATIENCE:?}"))
}

/// Waits until the stderr tail satisfies `done`, woken by each read of the server's stderr.
async fn stderr_until(t: &StdioTransport, what: &str, done: impl Fn(&str) -> bool) {
    let mut grown = t.stderr().grown();
    let seen = within(what, async {
        grown.wait_for(|_| done(&t.stderr_tail())).await.is_ok()
    })
    .await;
    assert!(
        seen,
        "{what}: the server closed its stderr first; the tail: {:?}",
        t.stderr_tail()
    );
}

async fn send_signal(pid: u32, signal: &str) {
    let status = tokio::process::Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .await
        .expect("running kill");
    assert!(status.success(), "kill -{signal} {pid}: {status}");
}

/// Cleanup for processes a test leaves behind on purpose (a grandchild nothing else ends).
async fn kill_if_running(pid: u32) {
    if is_running(pid) {
        let _ = tokio::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .await;
    }
}
