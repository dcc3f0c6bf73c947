//! What the stdio transport makes of a process's start and its output: spawn failures that
//! say what went wrong, line framing (garbage skipped, the line cap), and the stderr tail
//! (kept, capped, scrubbed).

use lifeline_core::error::ExitStatus;
use lifeline_core::transport::stdio::{self, StdioConfig};
use lifeline_core::{ErrorKind, Phase, Stage};
use serde_json::json;

use super::{call, config, connect, stderr_until, stdio_of, text_of, within};
use crate::support::{self, TempDirGuard};

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
