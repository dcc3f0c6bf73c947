//! The `lifeline` command end to end for stdio targets: `call` and `tools` on a `stdio:`
//! target or a configured server name, with their exit codes, spawn errors, a scrubbed
//! stderr line, and no process left behind.

use serde_json::{Value, json};

use super::{TOOLS, crash_rule, logged_pid, never_answer};
use crate::cli::{lifeline, lifeline_with_env};
use crate::support::{self, StdioFixture, TempDirGuard, assert_subset, process_ended as died};

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
