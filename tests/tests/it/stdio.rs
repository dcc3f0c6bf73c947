//! The stdio transport and the session against a real `lifeline-fixture stdio` process: round
//! trips, crashes and exit glosses, spawn failures, line framing and its cap, the stderr tail,
//! the shutdown sequence, timeouts, server→client requests, progress, and the `lifeline`
//! command end to end for stdio targets.

use std::time::Duration;

use lifeline_core::error::ExitStatus;
use lifeline_core::session::RequestOptions;
use lifeline_core::transport::Transport;
use lifeline_core::transport::stdio::{self, StdioConfig, StdioTransport};
use lifeline_core::{Error, ErrorKind, Phase, Session, SessionOptions, Stage};
use serde_json::{Value, json};

use crate::cli::{lifeline, lifeline_with_env};
use crate::support::{
    self, PATIENCE, StdioFixture, TempDirGuard, assert_subset, is_running, process_ended as died,
};

/// Every tool of the fixture, in its order.
const TOOLS: &str = "echo add slow progress fail crash stderr list_changed log ask";

/// The fixture as the client under test starts it. The default shutdown grace only costs time
/// when a process refuses to die, so tests that make one refuse set it small.
fn config(fixture: &StdioFixture) -> StdioConfig {
    StdioConfig::new(&fixture.program, fixture.args.clone())
}

async fn connect(config: &StdioConfig) -> Session {
    let conn = stdio::spawn(config).expect("spawning the fixture");
    Session::connect(conn, SessionOptions::default())
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

// # Round trip

#[tokio::test]
async fn a_session_lists_every_tool_across_pages_and_calls_echo_and_add() {
    let fixture = support::stdio_fixture(&json!({"page_size": 2}));
    let session = connect(&config(&fixture)).await;
    assert_eq!(session.server().unwrap().protocol_version, "2025-11-25");

    let tools = session.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.join(" "), TOOLS);
    let pages = support::received(&fixture.log_entries(), "tools/list");
    assert_eq!(pages.len(), 5, "10 tools in pages of 2: {pages:?}");

    for (tool, args, expect) in [
        ("echo", json!({"text": "hello"}), "hello"),
        ("add", json!({"a": 2, "b": 3}), "5"),
        ("add", json!({"a": 1, "b": 2.5}), "3.5"),
    ] {
        let result = call(&session, tool, args).await;
        let result = result.unwrap_or_else(|e| panic!("{tool}: {e:?}"));
        assert_eq!(text_of(&result), expect, "{tool}");
    }

    session.close().await;
    assert_eq!(stdio_of(&session).exit_status(), Some(ExitStatus::Code(0)));
}

// # Crashes

#[tokio::test]
async fn a_crash_on_a_tool_fails_the_call_with_the_exit_code_and_refuses_the_next_call_at_once() {
    let fixture = support::stdio_fixture(&json!({"rules": [crash_rule("echo", 3)]}));
    let session = connect(&config(&fixture)).await;

    let e = call(&session, "echo", json!({"text": "hi"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ProcessExit, "{e:?}");
    assert_eq!(e.context().exit, Some(ExitStatus::Code(3)), "{e:?}");
    assert_eq!(e.context().method.as_deref(), Some("tools/call"), "{e:?}");
    assert!(e.message().contains("exit code 3"), "{e}");
    assert!(
        !e.is_transport_closed(),
        "the crash itself is not a refusal: {e:?}"
    );

    let e = call(&session, "add", json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert!(e.is_transport_closed(), "{e:?}");
    assert_eq!(e.kind(), ErrorKind::ProcessExit, "{e:?}");
    assert_eq!(e.context().exit, Some(ExitStatus::Code(3)), "{e:?}");
    session.close().await;
}

#[tokio::test]
async fn a_crash_during_the_handshake_fails_connect_with_process_exit_in_stage_initialize() {
    let rule = json!({"method": "initialize", "action": {"kind": "crash", "code": 4}});
    let fixture = support::stdio_fixture(&json!({"rules": [rule]}));
    let conn = stdio::spawn(&config(&fixture)).expect("spawn");
    let e = Session::connect(conn, SessionOptions::default())
        .await
        .err()
        .expect("connect must fail");
    assert_eq!(e.kind(), ErrorKind::ProcessExit, "{e:?}");
    assert_eq!(e.context().phase, Some(Phase::Connect), "{e:?}");
    assert_eq!(e.context().stage, Some(Stage::Initialize), "{e:?}");
    assert_eq!(e.context().exit, Some(ExitStatus::Code(4)), "{e:?}");
}

#[tokio::test]
async fn a_crash_after_two_requests_fails_the_third() {
    // initialize and echo are answered; the third request (add) finds the process gone.
    let rule = json!({"nth": 3, "action": {"kind": "crash", "code": 7}});
    let fixture = support::stdio_fixture(&json!({"rules": [rule]}));
    let session = connect(&config(&fixture)).await;
    let echoed = call(&session, "echo", json!({"text": "one"}))
        .await
        .expect("echo");
    assert_eq!(text_of(&echoed), "one");
    let e = call(&session, "add", json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ProcessExit, "{e:?}");
    assert_eq!(e.context().exit, Some(ExitStatus::Code(7)), "{e:?}");
    session.close().await;
}

#[tokio::test]
async fn a_crash_fails_the_call_even_while_a_grandchild_holds_stdout_open() {
    let fixture = support::stdio_fixture(&json!({
        "grandchild_sleep_s": 30, "rules": [crash_rule("echo", 3)],
    }));
    let mut config = config(&fixture);
    config.shutdown_grace = Duration::from_millis(200);
    let session = connect(&config).await;
    let grandchild = logged_pid(&fixture, "grandchild").await;

    // stdout never reaches EOF while the grandchild lives: only the exit can end the call
    // before this timeout.
    let opts = RequestOptions {
        timeout: Some(Duration::from_secs(5)),
        ..RequestOptions::default()
    };
    let got = session.call_tool("echo", json!({}), opts).await;
    let next = call(&session, "add", json!({"a": 1, "b": 2})).await;
    kill_if_running(grandchild).await;

    let e = got.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ProcessExit, "{e:?}");
    assert_eq!(e.context().exit, Some(ExitStatus::Code(3)), "{e:?}");
    assert!(next.unwrap_err().is_transport_closed());
    session.close().await;
}

/// How the test ends the fixture while a call is waiting.
enum Ending {
    /// The `crash` tool exits with this code.
    Code(i32),
    /// The test sends this signal to the fixture while a `never_answer` call waits.
    Signal(&'static str),
}

#[tokio::test]
async fn exit_codes_and_signals_are_glossed_in_the_message() {
    async fn check(ending: Ending, status: ExitStatus, expect: &str) {
        let fixture = support::stdio_fixture(&json!({"rules": [never_answer("slow")]}));
        let session = connect(&config(&fixture)).await;
        let e = match ending {
            Ending::Code(code) => call(&session, "crash", json!({"code": code})).await,
            Ending::Signal(signal) => {
                let pid = logged_pid(&fixture, "started").await;
                let kill = async {
                    fixture
                        .wait_for_log("the slow call", |e| e["rpc_method"] == "tools/call")
                        .await;
                    send_signal(pid, signal).await;
                };
                tokio::join!(call(&session, "slow", json!({})), kill).0
            }
        }
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ProcessExit, "{e:?}");
        assert_eq!(e.context().exit, Some(status), "{e:?}");
        assert!(e.message().contains(expect), "{expect:?} not in: {e}");
        session.close().await;
    }
    use Ending::{Code, Signal};
    for (ending, status, expect) in [
        (
            Code(127),
            ExitStatus::Code(127),
            "exit code 127 — command not found",
        ),
        (
            Code(126),
            ExitStatus::Code(126),
            "exit code 126 — not executable (permission denied)",
        ),
        (Code(2), ExitStatus::Code(2), "exited with exit code 2"),
        (
            Signal("KILL"),
            ExitStatus::Signal(9),
            "signal 9 — killed (often: out of memory)",
        ),
        (
            Signal("TERM"),
            ExitStatus::Signal(15),
            "signal 15 — terminated",
        ),
    ] {
        check(ending, status, expect).await;
    }
}

// # Spawn failures

#[tokio::test]
async fn spawn_failures_say_what_went_wrong() {
    let dir = TempDirGuard::new("spawn");
    let not_executable = dir.path().join("server.sh");
    std::fs::write(&not_executable, "#!/bin/sh\n").expect("writing the script");
    let missing_dir = dir.path().join("no-such-dir");

    let check = |config: StdioConfig, expect: &[&str], absent: &[&str]| {
        let e = stdio::spawn(&config).err().expect("spawn must fail");
        assert_eq!(e.kind(), ErrorKind::Spawn, "{e:?}");
        assert_eq!(e.context().phase, Some(Phase::Connect), "{e:?}");
        assert_eq!(e.context().stage, Some(Stage::Spawn), "{e:?}");
        for text in expect {
            assert!(e.message().contains(text), "{text:?} not in: {e}");
        }
        for text in absent {
            assert!(!e.message().contains(text), "{text:?} leaked into: {e}");
        }
    };
    let plain = |command: &str| StdioConfig::new(command, Vec::new());

    check(
        plain("lifeline-no-such-command-7f3a"),
        &[
            "`lifeline-no-such-command-7f3a`",
            "command not found",
            "PATH=",
        ],
        &[],
    );
    check(
        plain(&not_executable.display().to_string()),
        &["not executable"],
        &[],
    );
    // An absolute path is not searched for in PATH, so the message does not name PATH.
    let missing_file = dir.path().join("no-such-server");
    check(
        plain(&missing_file.display().to_string()),
        &["command not found", "no such file", "check the path"],
        &["PATH="],
    );
    let mut in_missing_dir = plain("sh");
    in_missing_dir.cwd = Some(missing_dir.clone());
    check(
        in_missing_dir,
        &[&missing_dir.display().to_string(), "does not exist"],
        &[],
    );
    // A PATH given in the config is searched, and shown: an env value that is a path is
    // configuration, not a secret (docs/bundle.md, "Shapes").
    let mut own_path = plain("sh");
    own_path.env = vec![("PATH".into(), "/lifeline-test-path-7f3a".into())];
    check(
        own_path,
        &["command not found", "PATH=/lifeline-test-path-7f3a"],
        &[],
    );
}

// # Framing

#[tokio::test]
async fn a_garbage_line_before_the_answer_is_skipped() {
    let rule = json!({"method": "tools/call", "tool": "echo",
                      "action": {"kind": "garbage", "text": "Server ready!", "then_answer": true}});
    let fixture = support::stdio_fixture(&json!({"rules": [rule]}));
    let session = connect(&config(&fixture)).await;
    let result = call(&session, "echo", json!({"text": "after garbage"})).await;
    assert_eq!(text_of(&result.expect("echo")), "after garbage");
    let result = call(&session, "add", json!({"a": 2, "b": 2})).await;
    assert_eq!(text_of(&result.expect("the session is still open")), "4");
    session.close().await;
}

#[tokio::test]
async fn a_line_over_the_default_cap_ends_the_session_with_a_protocol_error() {
    // The fixture's default oversized line is 17 MiB; the default cap is 16 MiB.
    let rule = json!({"method": "tools/call", "tool": "echo", "action": {"kind": "oversized"}});
    let fixture = support::stdio_fixture(&json!({"rules": [rule]}));
    let session = connect(&config(&fixture)).await;

    let e = call(&session, "echo", json!({"text": "hi"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e:?}");
    assert!(e.message().contains("longer than 16 MiB"), "{e}");
    let e = call(&session, "echo", json!({"text": "again"}))
        .await
        .unwrap_err();
    assert!(e.is_transport_closed(), "{e:?}");

    // The transport stopped reading and killed the server rather than buffering the rest.
    let t = stdio_of(&session);
    let status = within("the fixture's exit", t.exited()).await;
    assert_eq!(status, Some(ExitStatus::Signal(9)));
    session.close().await;
}

#[tokio::test]
async fn a_custom_line_cap_admits_lines_up_to_it_and_refuses_longer_ones() {
    /// A notification of `line` bytes (newline excluded) then the answer, under `cap`.
    async fn check(cap: usize, line: usize, expect: Result<(), &str>) {
        let rule = json!({"method": "tools/call", "tool": "echo",
                          "action": {"kind": "oversized", "bytes": line, "then_answer": true}});
        let fixture = support::stdio_fixture(&json!({"rules": [rule]}));
        let mut config = config(&fixture);
        config.max_line_bytes = cap;
        let session = connect(&config).await;
        let got = call(&session, "echo", json!({"text": "under the cap"})).await;
        match (got, expect) {
            (Ok(result), Ok(())) => assert_eq!(text_of(&result), "under the cap"),
            (Err(e), Err(text)) => {
                assert_eq!(e.kind(), ErrorKind::Protocol, "{e:?}");
                assert!(e.message().contains(text), "{text:?} not in: {e}");
            }
            (got, expect) => panic!("cap {cap}, line {line}: got {got:?}, expected {expect:?}"),
        }
        session.close().await;
    }
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    for (cap, line, expect) in [
        (64 * KIB, 64 * KIB, Ok(())),
        (64 * KIB, 64 * KIB + 1, Err("longer than 64 KiB")),
        (1000, 1001, Err("longer than 1000 bytes")),
        (2 * MIB, 2 * MIB + 1, Err("longer than 2 MiB")),
    ] {
        check(cap, line, expect).await;
    }
}

// # stderr

#[tokio::test]
async fn the_startup_stderr_appears_in_the_stderr_tail() {
    let fixture = support::stdio_fixture(&json!({"stderr": "fixture: warming up\n"}));
    let session = connect(&config(&fixture)).await;
    let t = stdio_of(&session);
    stderr_until(t, "the startup stderr in the tail", |tail| {
        tail.contains("fixture: warming up")
    })
    .await;
    assert_eq!(t.stderr_tail(), "fixture: warming up\n");
    session.close().await;
}

#[tokio::test]
async fn a_large_stderr_keeps_only_its_tail() {
    let chatter: String = (0..200).map(|i| format!("stderr line {i:04}\n")).collect();
    assert!(chatter.len() > 3000);
    let fixture = support::stdio_fixture(&json!({"stderr": chatter}));
    let mut config = config(&fixture);
    config.stderr_tail_bytes = 1024;
    let session = connect(&config).await;
    let t = stdio_of(&session);
    stderr_until(t, "the last stderr line in the tail", |tail| {
        tail.ends_with("stderr line 0199\n")
    })
    .await;
    let tail = t.stderr_tail();
    assert_eq!(tail.len(), 1024);
    assert!(
        chatter.ends_with(&tail),
        "the tail is the last 1024 bytes: {tail}"
    );
    assert!(!tail.contains("stderr line 0000"), "{tail}");
    session.close().await;
}

#[tokio::test]
async fn a_configured_env_value_is_scrubbed_from_the_stderr_tail() {
    let fixture = support::stdio_fixture(&json!({}));
    let mut config = config(&fixture);
    config.env = vec![("TOKEN".into(), "CANARY-stdio-7f3a".into())];
    let session = connect(&config).await;
    let said = call(
        &session,
        "stderr",
        json!({"text": "using token=CANARY-stdio-7f3a\n"}),
    )
    .await;
    assert_eq!(text_of(&said.expect("stderr tool")), "written");
    let t = stdio_of(&session);
    stderr_until(t, "the scrubbed line in the tail", |tail| {
        tail.contains("using token=")
    })
    .await;
    assert_eq!(t.stderr_tail(), "using token=***\n");
    session.close().await;
}

// # Shutdown

#[tokio::test]
async fn close_ends_a_server_that_exits_on_stdin_eof_without_any_signal() {
    let fixture = support::stdio_fixture(&json!({}));
    let mut config = config(&fixture);
    // Close returns as soon as the server exits; a long grace proves no signal was needed.
    config.shutdown_grace = Duration::from_secs(30);
    let session = connect(&config).await;
    let pid = logged_pid(&fixture, "started").await;

    session.close().await;
    assert_eq!(stdio_of(&session).exit_status(), Some(ExitStatus::Code(0)));
    assert!(!is_running(pid), "the fixture (pid {pid}) is reaped");
    let log = fixture.log_entries();
    assert_eq!(support::events(&log, "stdin_closed").len(), 1, "{log:?}");
    assert_eq!(support::events(&log, "exit")[0]["reason"], "stdin_closed");
    assert!(support::events(&log, "sigterm_ignored").is_empty());
}

#[tokio::test]
async fn close_escalates_to_sigkill_and_ends_the_grandchild_of_a_server_that_ignores_sigterm() {
    let fixture = support::stdio_fixture(&json!({
        "ignore_sigterm": true, "grandchild_sleep_s": 60, "on_stdin_eof": "stay",
    }));
    let mut config = config(&fixture);
    config.shutdown_grace = Duration::from_millis(500);
    let session = connect(&config).await;
    let pid = logged_pid(&fixture, "started").await;
    let grandchild = logged_pid(&fixture, "grandchild").await;
    assert!(is_running(grandchild));

    session.close().await;
    assert_eq!(
        stdio_of(&session).exit_status(),
        Some(ExitStatus::Signal(9))
    );
    assert!(!is_running(pid), "the fixture (pid {pid}) is reaped");
    died("the grandchild's death", grandchild).await;
    let log = fixture.log_entries();
    assert_eq!(support::events(&log, "stdin_closed").len(), 1, "{log:?}");
    assert_eq!(support::events(&log, "sigterm_ignored").len(), 1, "{log:?}");
}

#[tokio::test]
async fn close_kills_what_a_cleanly_exiting_server_left_behind() {
    let fixture = support::stdio_fixture(&json!({ "grandchild_sleep_s": 60 }));
    let session = connect(&config(&fixture)).await;
    let grandchild = logged_pid(&fixture, "grandchild").await;
    session.close().await;
    assert_eq!(stdio_of(&session).exit_status(), Some(ExitStatus::Code(0)));
    died("the grandchild's death", grandchild).await;
}

#[tokio::test]
async fn dropping_a_session_without_close_kills_the_process_group() {
    let fixture = support::stdio_fixture(&json!({
        "ignore_sigterm": true, "grandchild_sleep_s": 60, "on_stdin_eof": "stay",
    }));
    let session = connect(&config(&fixture)).await;
    let pid = logged_pid(&fixture, "started").await;
    let grandchild = logged_pid(&fixture, "grandchild").await;

    drop(session);
    died("the fixture's death", pid).await;
    died("the grandchild's death", grandchild).await;
    assert!(support::events(&fixture.log_entries(), "sigterm_ignored").is_empty());
}

// # Timeouts

#[tokio::test]
async fn a_request_without_an_answer_times_out_and_the_server_is_told_to_cancel_it() {
    let fixture = support::stdio_fixture(&json!({"rules": [never_answer("slow")]}));
    let session = connect(&config(&fixture)).await;
    let opts = RequestOptions {
        timeout: Some(Duration::from_millis(300)),
        ..RequestOptions::default()
    };
    let e = session
        .call_tool("slow", json!({}), opts)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e:?}");
    assert!(e.message().contains("300 ms"), "{e}");
    assert!(e.message().contains("sent notifications/cancelled"), "{e}");

    let asked = support::received(&fixture.log_entries(), "tools/call");
    let id = asked[0]["rpc_id"].clone();
    let cancelled = fixture
        .wait_for_log("notifications/cancelled", |e| {
            e["rpc_method"] == "notifications/cancelled"
        })
        .await;
    assert_eq!(cancelled["params"]["requestId"], id, "{cancelled}");

    let added = call(&session, "add", json!({"a": 1, "b": 1})).await;
    assert_eq!(
        text_of(&added.expect("the session outlives a timeout")),
        "2"
    );
    session.close().await;
}

#[tokio::test]
async fn a_stalled_initialize_fails_connect_with_a_timeout_and_is_never_cancelled() {
    let fixture = support::stdio_fixture(&json!({"delay_ms": 30_000}));
    let mut config = config(&fixture);
    config.shutdown_grace = Duration::from_millis(200);
    let conn = stdio::spawn(&config).expect("spawn");
    let options = SessionOptions {
        request_timeout: Duration::from_millis(300),
        ..SessionOptions::default()
    };
    let e = Session::connect(conn, options)
        .await
        .err()
        .expect("connect must fail");
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e:?}");
    assert_eq!(e.context().phase, Some(Phase::Connect), "{e:?}");
    assert_eq!(e.context().stage, Some(Stage::Initialize), "{e:?}");
    assert_eq!(e.context().method.as_deref(), Some("initialize"), "{e:?}");
    // connect closed the transport, so the log is complete.
    let log = fixture.log_entries();
    assert_eq!(support::received(&log, "initialize").len(), 1, "{log:?}");
    assert!(
        support::received(&log, "notifications/cancelled").is_empty(),
        "{log:?}"
    );
}

// # Server→client requests and progress

#[tokio::test]
async fn the_client_answers_ping_and_refuses_what_it_did_not_opt_into() {
    let fixture = support::stdio_fixture(&json!({}));
    let session = connect(&config(&fixture)).await;
    let not_found = json!({"error": {"code": -32601}});
    for (method, expect) in [
        ("ping", json!({"result": {}})),
        ("roots/list", not_found.clone()),
        ("elicitation/create", not_found.clone()),
        ("sampling/createMessage", not_found.clone()),
    ] {
        let result = call(&session, "ask", json!({"method": method})).await;
        let result = result.unwrap_or_else(|e| panic!("ask {method}: {e:?}"));
        let answer: Value = serde_json::from_str(text_of(&result)).expect("the answer as JSON");
        assert_subset(&expect, &answer, method);
    }
    session.close().await;
}

#[tokio::test]
async fn progress_reaches_the_caller_before_the_answer() {
    let fixture = support::stdio_fixture(&json!({}));
    let session = connect(&config(&fixture)).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = RequestOptions {
        progress: Some(tx),
        ..RequestOptions::default()
    };
    let args = json!({"steps": 3, "interval_ms": 10});
    let result = session.call_tool("progress", args, opts).await;
    assert_eq!(text_of(&result.expect("progress tool")), "done");
    let mut seen = Vec::new();
    while let Ok(p) = rx.try_recv() {
        seen.push((p.progress, p.total));
    }
    assert_eq!(seen, [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]);
    session.close().await;
}

// # The `lifeline` command

/// `stdio:` and the fixture's command line, each word single-quoted for the shell-like split.
fn stdio_target(fixture: &StdioFixture) -> String {
    let words: Vec<String> = std::iter::once(&fixture.program)
        .chain(&fixture.args)
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect();
    format!("stdio:{}", words.join(" "))
}

#[tokio::test]
async fn lifeline_call_reports_each_outcome_with_its_exit_code() {
    /// `lifeline call TARGET --json TOOL ARGS...` against a fixture running `script`.
    async fn check(script: Value, call: &[&str], code: i32, last: Value) {
        let fixture = support::stdio_fixture(&script);
        let target = stdio_target(&fixture);
        let mut argv = vec!["call", &target, "--json"];
        argv.extend(call);
        let run = lifeline(&argv).await;
        assert_eq!(run.code, code, "{call:?}: {run:?}");
        assert_subset(&last, &run.outcome(), &format!("{call:?}"));
    }
    let ok_text =
        |text: &str| json!({"ok": true, "result": {"content": [{"type": "text", "text": text}]}});
    check(json!({}), &["echo", r#"{"text":"hi"}"#], 0, ok_text("hi")).await;
    check(
        json!({}),
        &["fail"],
        1,
        json!({"ok": true, "result": {"isError": true}}),
    )
    .await;
    check(
        json!({}),
        &["crash", r#"{"code":3}"#],
        5,
        json!({"ok": false, "error": {"kind": "process_exit", "exit_code": 3, "signal": null}}),
    )
    .await;
    check(
        json!({"rules": [never_answer("slow")]}),
        &["slow", "--timeout", "300ms"],
        5,
        json!({"ok": false, "error": {"kind": "timeout", "method": "tools/call"}}),
    )
    .await;
}

#[tokio::test]
async fn lifeline_call_with_a_missing_command_is_a_spawn_error() {
    let run = lifeline(&[
        "call",
        "stdio:lifeline-no-such-command-7f3a --flag",
        "echo",
        "--json",
    ])
    .await;
    assert_eq!(run.code, 2, "{run:?}");
    let outcome = run.outcome();
    let expect =
        json!({"ok": false, "error": {"kind": "spawn", "phase": "connect", "stage": "spawn"}});
    assert_subset(&expect, &outcome, "outcome");
    let message = outcome["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("command not found"), "{message}");
}

#[tokio::test]
async fn lifeline_scrubs_an_env_value_that_the_server_wrote_before_crashing() {
    let canary = "CANARY-stdio-7f3a";
    let fixture = support::stdio_fixture(&json!({
        "stderr": format!("fatal: token {canary} was rejected\n"),
        "rules": [crash_rule("echo", 9)],
    }));
    let target = stdio_target(&fixture);
    let env = format!("TOKEN={canary}");
    // Tracing on, so that logs are held to the same rule as the outcome.
    let argv = ["call", &target, "echo", "--json", "--env", &env];
    let run = lifeline_with_env(&argv, &[("LIFELINE_LOG", "trace")]).await;
    assert_eq!(run.code, 5, "{run:?}");
    let outcome = run.outcome();
    assert_subset(
        &json!({"ok": false, "error": {"kind": "process_exit", "exit_code": 9}}),
        &outcome,
        "outcome",
    );
    let message = outcome["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("its last stderr line: fatal: token *** was rejected"),
        "the stderr line is reported, scrubbed: {message}"
    );
    assert!(!run.stdout.contains(canary), "{run:?}");
    assert!(!run.stderr.contains(canary), "{run:?}");
}

#[tokio::test]
async fn lifeline_tools_lists_the_tools_of_a_stdio_server() {
    let fixture = support::stdio_fixture(&json!({"page_size": 3}));
    let run = lifeline(&["tools", &stdio_target(&fixture), "--json"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let outcome = run.outcome();
    assert_eq!(outcome["ok"], true, "{outcome}");
    let names: Vec<&str> = outcome["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tools array: {outcome}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names.join(" "), TOOLS);
}

#[tokio::test]
async fn lifeline_leaves_no_process_behind_when_the_server_ignores_sigterm() {
    // The default shutdown sequence: close stdin, 2 s, SIGTERM (ignored), 2 s, SIGKILL.
    let fixture = support::stdio_fixture(&json!({
        "ignore_sigterm": true, "grandchild_sleep_s": 60, "on_stdin_eof": "stay",
    }));
    let target = stdio_target(&fixture);
    let run = lifeline(&["call", &target, "echo", r#"{"text":"bye"}"#, "--json"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_subset(
        &json!({"ok": true, "result": {"content": [{"text": "bye"}]}}),
        &run.outcome(),
        "outcome",
    );

    let pid = logged_pid(&fixture, "started").await;
    let grandchild = logged_pid(&fixture, "grandchild").await;
    died("the fixture's death", pid).await;
    died("the grandchild's death", grandchild).await;
    let log = fixture.log_entries();
    assert_eq!(support::events(&log, "sigterm_ignored").len(), 1, "{log:?}");
}

#[tokio::test]
async fn lifeline_tools_and_call_accept_a_configured_server_name() {
    let fixture = support::stdio_fixture(&json!({}));
    let dir = TempDirGuard::new("named");
    let config = dir.path().join("config.json");
    let server = json!({ "command": fixture.program, "args": fixture.args });
    std::fs::write(
        &config,
        json!({ "mcpServers": { "local": server } }).to_string(),
    )
    .unwrap();
    let config = config.display().to_string();

    let run = lifeline(&["tools", "local", "--config", &config, "--json"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.outcome()["result"]["tools"].as_array().unwrap().len(),
        10
    );

    let run = lifeline(&[
        "call",
        "local",
        "echo",
        r#"{"text":"named"}"#,
        "--config",
        &config,
    ])
    .await;
    assert_eq!((run.code, run.stdout.trim()), (0, "named"), "{run:?}");

    let run = lifeline(&["tools", "elsewhere", "--config", &config]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("no server named `elsewhere`") && run.stderr.contains("local"),
        "{run:?}"
    );
}
