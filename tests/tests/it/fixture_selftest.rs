//! Self-tests of `lifeline-fixture`, driven with plain reqwest and a plain child process (never
//! lifeline-core), proving the faults other tests rely on actually happen on the wire.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use crate::support::{self, PATIENCE, parse_sse};

mod stateless;

fn initialize(id: u64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "selftest", "version": "0"},
    }})
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

async fn post(url: &str, session: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = support::http_client()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.expect("POST to fixture")
}

async fn resume(url: &str, last_event_id: &str) -> reqwest::Response {
    support::http_client()
        .get(url)
        .header("accept", "text/event-stream")
        .header("last-event-id", last_event_id)
        .send()
        .await
        .expect("resume GET to fixture")
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn http_initialize_issues_a_session_and_enforces_it() {
    let fixture = support::http_fixture(json!({})).await;
    let response = post(&fixture.url, None, &initialize(1, "2025-06-18")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "content-type"), Some("application/json"));
    let session = header(&response, "mcp-session-id")
        .expect("Mcp-Session-Id")
        .to_owned();
    let body = json_body(response).await;
    assert_eq!(body["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(body["result"]["serverInfo"]["name"], "lifeline-fixture");

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(post(&fixture.url, None, &list).await.status(), 400);
    assert_eq!(post(&fixture.url, Some("bogus"), &list).await.status(), 404);
    let response = post(&fixture.url, Some(&session), &list).await;
    assert_eq!(response.status(), 200);
    let body = json_body(response).await;
    assert_eq!(body["result"]["tools"][0]["name"], "echo");

    let logged = support::received(&fixture.log_entries(), "tools/list");
    assert_eq!(logged.len(), 3, "{logged:?}");
    assert_eq!(logged[2]["session_id"], session.as_str());
    assert_eq!(logged[2]["protocol_version_header"], "2025-06-18");
    assert_eq!(logged[2]["http_method"], "POST");
    assert_eq!(logged[2]["authorization_present"], false);
}

#[tokio::test]
async fn http_session_expires_after_n_requests() {
    let fixture = support::http_fixture(json!({"http": {"session_expires_after": 2}})).await;
    let response = post(&fixture.url, None, &initialize(1, "2025-11-25")).await;
    let session = header(&response, "mcp-session-id")
        .expect("Mcp-Session-Id")
        .to_owned();
    let ping = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    assert_eq!(
        post(&fixture.url, Some(&session), &ping(2)).await.status(),
        200
    );
    assert_eq!(
        post(&fixture.url, Some(&session), &ping(3)).await.status(),
        404
    );
}

#[tokio::test]
async fn http_429_carries_retry_after_and_body_verbatim() {
    let fixture = support::http_fixture(json!({"rules": [{
        "method": "tools/call", "tool": "echo", "nth": 1,
        "action": {"kind": "http_status", "status": 429, "retry_after": "2", "body": "CANARY-429"},
    }]}))
    .await;
    let response = post(&fixture.url, None, &initialize(1, "2025-11-25")).await;
    let session = header(&response, "mcp-session-id")
        .expect("Mcp-Session-Id")
        .to_owned();

    let response = post(
        &fixture.url,
        Some(&session),
        &call(2, "echo", json!({"text": "hi"})),
    )
    .await;
    assert_eq!(response.status(), 429);
    assert_eq!(header(&response, "retry-after"), Some("2"));
    assert_eq!(response.text().await.expect("429 body"), "CANARY-429");

    // `nth: 1`: the retry is answered normally.
    let response = post(
        &fixture.url,
        Some(&session),
        &call(3, "echo", json!({"text": "hi"})),
    )
    .await;
    assert_eq!(response.status(), 200);
    let body = json_body(response).await;
    assert_eq!(body["result"]["content"][0]["text"], "hi");
}

#[tokio::test]
async fn sse_priming_then_graceful_close_then_resume_delivers_the_result() {
    let fixture = support::http_fixture(json!({
        "http": {"sessions": false},
        "rules": [{"method": "tools/call", "action": {
            "kind": "sse_close", "retry": "500", "resume": ["close", "deliver"],
        }}],
    }))
    .await;
    let response = post(
        &fixture.url,
        None,
        &call(7, "echo", json!({"text": "resumed"})),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "content-type"), Some("text/event-stream"));
    // The body ends: the stream was closed gracefully, without the result.
    let events = parse_sse(&response.text().await.expect("SSE body"));
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (events[0].retry.as_deref(), events[0].data.as_str()),
        (Some("500"), "")
    );
    let first_id = events[0].id.clone().expect("priming event id");

    // First resume: closed again, with a new id to resume from.
    let events = parse_sse(
        &resume(&fixture.url, &first_id)
            .await
            .text()
            .await
            .expect("body"),
    );
    assert_eq!(events.len(), 1, "{events:?}");
    let second_id = events[0].id.clone().expect("priming event id");
    assert_ne!(second_id, first_id);

    // Second resume: priming event, then the result.
    let response = resume(&fixture.url, &second_id).await;
    assert_eq!(response.status(), 200);
    let events = parse_sse(&response.text().await.expect("body"));
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].data, "");
    assert_eq!(events[1].event.as_deref(), Some("message"));
    let result: Value = serde_json::from_str(&events[1].data).expect("result JSON");
    assert_eq!(result["id"], 7);
    assert_eq!(result["result"]["content"][0]["text"], "resumed");

    let entries = fixture.log_entries();
    let closes = support::events(&entries, "sse_closed");
    let streams: Vec<&Value> = closes.iter().map(|c| &c["stream"]).collect();
    assert_eq!(
        streams,
        [&json!("post"), &json!("resume"), &json!("resume")],
        "{closes:?}"
    );
    let gets: Vec<&Value> = entries
        .iter()
        .filter(|e| e["http_method"] == "GET")
        .map(|e| &e["last_event_id"])
        .collect();
    assert_eq!(gets, [&json!(first_id), &json!(second_id)]);
}

/// A spawned stdio fixture with line access to its stdin and stdout.
struct StdioPeer {
    child: tokio::process::Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl StdioPeer {
    fn spawn(fixture: &support::StdioFixture) -> StdioPeer {
        let mut child = fixture.command().spawn().expect("spawning stdio fixture");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        StdioPeer {
            child,
            stdin,
            stdout,
        }
    }

    async fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        let line = format!("{message}\n");
        stdin
            .write_all(line.as_bytes())
            .await
            .expect("writing to fixture stdin");
    }

    async fn line(&mut self) -> Option<String> {
        tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("no line from fixture within {PATIENCE:?}"))
            .expect("reading fixture stdout")
    }

    async fn message(&mut self) -> Value {
        let line = self.line().await.expect("fixture closed stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Closes stdin and returns the exit code.
    async fn exit_code(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let status = tokio::time::timeout(PATIENCE, self.child.wait()).await;
        status
            .expect("fixture exits")
            .expect("waiting for fixture")
            .code()
    }
}

#[tokio::test]
async fn stdio_echo_round_trip() {
    let fixture = support::stdio_fixture(&json!({}));
    let mut peer = StdioPeer::spawn(&fixture);
    peer.send(&initialize(1, "2025-03-26")).await;
    let answer = peer.message().await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-03-26");
    peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    peer.send(&call(2, "echo", json!({"text": "round trip"})))
        .await;
    let answer = peer.message().await;
    assert_eq!(
        (&answer["id"], &answer["result"]["content"][0]["text"]),
        (&json!(2), &json!("round trip"))
    );
    assert_eq!(peer.exit_code().await, Some(0));

    let entries = fixture.log_entries();
    let methods: Vec<&Value> = entries
        .iter()
        .filter(|e| e["event"] == "received")
        .map(|e| &e["rpc_method"])
        .collect();
    assert_eq!(
        methods,
        [
            &json!("initialize"),
            &json!("notifications/initialized"),
            &json!("tools/call")
        ]
    );
    assert!(
        entries
            .iter()
            .all(|e| e["event"] != "received" || e["transport"] == "stdio")
    );
}

#[tokio::test]
async fn stdio_extra_tools_are_listed_after_the_fixed_ones_and_echo() {
    let fixture = support::stdio_fixture(&json!({"extra_tools": 15}));
    let mut peer = StdioPeer::spawn(&fixture);
    peer.send(&initialize(1, "2025-11-25")).await;
    assert_eq!(peer.message().await["id"], 1);
    peer.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let list = peer.message().await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(names.len(), 25, "{names:?}");
    assert_eq!(
        (names[0], names[10], names[24]),
        ("echo", "tool_001", "tool_015")
    );
    peer.send(&call(3, "tool_015", json!({"text": "extra"})))
        .await;
    let answer = peer.message().await;
    assert_eq!(answer["result"]["content"][0]["text"], "extra");
    peer.send(&call(4, "tool_016", json!({"text": "past the count"})))
        .await;
    assert_eq!(peer.message().await["error"]["code"], -32602);
}

#[tokio::test]
async fn stdio_garbage_line_comes_before_the_answer() {
    let fixture = support::stdio_fixture(&json!({"rules": [{
        "method": "tools/call",
        "action": {"kind": "garbage", "text": "GARBAGE {", "then_answer": true},
    }]}));
    let mut peer = StdioPeer::spawn(&fixture);
    peer.send(&initialize(1, "2025-11-25")).await;
    assert_eq!(peer.message().await["id"], 1);
    peer.send(&call(2, "add", json!({"a": 2, "b": 3}))).await;
    assert_eq!(peer.line().await.as_deref(), Some("GARBAGE {"));
    let answer = peer.message().await;
    assert_eq!(answer["result"]["content"][0]["text"], "5");
}

#[tokio::test]
async fn stdio_crash_during_handshake_exits_with_the_code() {
    let fixture = support::stdio_fixture(&json!({"rules": [{
        "method": "initialize", "action": {"kind": "crash", "code": 7},
    }]}));
    let mut peer = StdioPeer::spawn(&fixture);
    peer.send(&initialize(1, "2025-11-25")).await;
    assert_eq!(peer.line().await, None, "no answer before the crash");
    assert_eq!(peer.exit_code().await, Some(7));
}

#[tokio::test]
async fn stdio_never_answer_still_logs_the_request_and_its_cancellation() {
    let fixture = support::stdio_fixture(&json!({"rules": [{
        "method": "tools/call", "tool": "slow", "action": {"kind": "never_answer"},
    }]}));
    let mut peer = StdioPeer::spawn(&fixture);
    peer.send(&call(2, "slow", json!({"ms": 1}))).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 2, "reason": "timeout"}});
    peer.send(&cancel).await;
    peer.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        .await;
    // stdin is read in order, so by the ping's answer both earlier lines are logged.
    assert_eq!(
        peer.message().await["id"],
        3,
        "the slow call is never answered"
    );
    let entries = fixture.log_entries();
    assert_eq!(support::received(&entries, "tools/call")[0]["rpc_id"], 2);
    let cancelled = support::received(&entries, "notifications/cancelled");
    assert_eq!(cancelled[0]["params"]["requestId"], 2);
}

/// Unix only: Windows has no SIGTERM (a server's job is terminated instead).
#[cfg(unix)]
#[tokio::test]
async fn stdio_ignoring_sigterm_survives_until_sigkill() {
    let fixture = support::stdio_fixture(&json!({"ignore_sigterm": true, "on_stdin_eof": "stay"}));
    let mut peer = StdioPeer::spawn(&fixture);
    // Answering proves startup (and the SIGTERM handler) is done.
    peer.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert_eq!(peer.message().await["id"], 1);
    drop(peer.stdin.take());
    fixture
        .wait_for_log("stdin_closed", |e| e["event"] == "stdin_closed")
        .await;
    let pid = peer.child.id().expect("fixture running").to_string();
    let kill = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await;
    assert!(kill.expect("running kill").success());
    fixture
        .wait_for_log("sigterm_ignored", |e| e["event"] == "sigterm_ignored")
        .await;
    assert!(
        peer.child.try_wait().expect("polling fixture").is_none(),
        "survived SIGTERM"
    );
    peer.child.start_kill().expect("SIGKILL");
    let status = tokio::time::timeout(PATIENCE, peer.child.wait()).await;
    let status = status.expect("fixture dies").expect("waiting for fixture");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
}

/// `response.json()` needs reqwest's `json` feature, which the workspace leaves off.
async fn json_body(response: reqwest::Response) -> Value {
    let text = response.text().await.expect("response body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text}"))
}
