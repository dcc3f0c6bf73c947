//! Calls through a session on a real `lifeline-fixture stdio` process: a round trip across
//! pages, crashes (on a call, in the handshake, after some requests, with a grandchild
//! holding stdout) and how exits are glossed, timeouts and the cancellation they send,
//! server→client requests, and progress.

use std::time::Duration;

use lifeline_core::error::ExitStatus;
use lifeline_core::session::RequestOptions;
use lifeline_core::transport::stdio;
use lifeline_core::{ErrorKind, Phase, Session, SessionOptions, Stage};
use serde_json::{Value, json};

use super::{
    TOOLS, call, config, connect, crash_rule, kill_if_running, logged_pid, never_answer,
    send_signal, stdio_of, text_of,
};
use crate::support::{self, assert_subset};

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
