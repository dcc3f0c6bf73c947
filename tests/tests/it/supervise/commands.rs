//! The supervisor behind the one-shot commands: `check` (exit codes by outcome), `call
//! SERVER` (through the supervisor, refused at once when the server is not ready), and an
//! invalid config refused by `watch`, `check` and `call` alike before anything starts.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::fixtures::{
    fast_reconnect, http_server, http_status_on_every_request, http_status_on_initialize,
    stdio_server, with,
};
use crate::cli::lifeline;
use crate::support::{self, TempDirGuard, write_config};

fn row<'a>(outcome: &'a Value, server: &str) -> &'a Value {
    outcome["servers"]
        .as_array()
        .unwrap_or_else(|| panic!("no servers in {outcome}"))
        .iter()
        .find(|s| s["server"] == server)
        .unwrap_or_else(|| panic!("no row for {server} in {outcome}"))
}

// # check

#[tokio::test]
async fn check_exits_3_for_auth_5_for_other_failures_and_0_when_all_are_ready() {
    let dir = TempDirGuard::new("sup-check");
    let ready = support::stdio_fixture(&json!({}));
    let locked = support::http_fixture(json!({
        "rules": [http_status_on_initialize(401, json!({}))]
    }))
    .await;
    let missing =
        json!({"command": "lifeline-no-such-command-9f3e", "reconnect": fast_reconnect()});
    let write = |name: &str, servers: Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
        path
    };
    let auth = write(
        "auth.json",
        json!({"ready": stdio_server(&ready), "locked": http_server(&locked.url)}),
    );
    let other = write(
        "other.json",
        json!({"ready": stdio_server(&ready), "missing": missing}),
    );
    let fine = write("fine.json", json!({"ready": stdio_server(&ready)}));
    let run = |config: PathBuf| async move {
        let config = config.display().to_string();
        lifeline(&["check", "--json", "--deadline", "20s", "--config", &config]).await
    };
    let (auth, other, fine) = tokio::join!(run(auth), run(other), run(fine));

    assert_eq!(auth.code, 3, "{auth:?}");
    let out = auth.outcome();
    assert_eq!(out["ok"], false);
    assert_eq!(out["servers"].as_array().unwrap().len(), 2);
    assert_eq!(row(&out, "ready")["state"], "ready");
    assert_eq!(row(&out, "ready")["tools"].as_array().unwrap().len(), 10);
    assert_eq!(row(&out, "locked")["state"], "retired");
    assert_eq!(row(&out, "locked")["reason"], "auth");
    assert_eq!(row(&out, "locked")["cause"]["status"], 401);

    assert_eq!(other.code, 5, "{other:?}");
    let out = other.outcome();
    assert_eq!(out["ok"], false);
    assert_eq!(row(&out, "ready")["state"], "ready");
    assert_eq!(row(&out, "missing")["state"], "retired");
    assert_eq!(row(&out, "missing")["reason"], "config");

    assert_eq!(fine.code, 0, "{fine:?}");
    let out = fine.outcome();
    assert_eq!(out["ok"], true);
    assert_eq!(row(&out, "ready")["state"], "ready");
    assert!(
        row(&out, "ready")["last_round_trip_ms"].is_u64(),
        "check measures a round trip: {out}"
    );
}

// # call SERVER

#[tokio::test]
async fn call_through_the_supervisor_returns_the_result_and_a_retired_server_fails_at_once() {
    let dir = TempDirGuard::new("sup-call");
    let fixture = support::stdio_fixture(&json!({}));
    let locked = support::http_fixture(json!({
        "rules": [http_status_on_every_request(401, json!({}))]
    }))
    .await;
    let config = write_config(
        &dir,
        json!({"local": stdio_server(&fixture), "locked": http_server(&locked.url)}),
    );
    let config = config.display().to_string();
    let args = |server: &'static str| {
        let config = config.clone();
        async move {
            lifeline(&[
                "call",
                server,
                "echo",
                r#"{"text":"hi"}"#,
                "--config",
                &config,
                "--json",
            ])
            .await
        }
    };
    let (ok, refused) = tokio::join!(args("local"), args("locked"));

    assert_eq!(ok.code, 0, "{ok:?}");
    let outcome = ok.outcome();
    assert_eq!(outcome["ok"], true, "{ok:?}");
    assert_eq!(outcome["result"]["content"][0]["text"], "hi", "{ok:?}");
    let calls = support::received(&fixture.log_entries(), "tools/call");
    assert_eq!(calls.len(), 1, "called once, never replayed: {calls:?}");

    assert_eq!(refused.code, 5, "{refused:?}");
    let error = refused.error();
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("`locked` is not ready"), "{message}");
    assert!(message.contains("retired"), "names the state: {message}");
    assert!(message.contains("(auth)"), "names the reason: {message}");
    assert!(message.contains("401"), "names the cause: {message}");
    assert!(message.contains("not sent"), "{message}");
    // The 401 also started OAuth discovery (GETs of the well-known metadata, which this
    // server does not publish); those are not MCP requests.
    let requests: Vec<_> = support::events(&locked.log_entries(), "received")
        .into_iter()
        .filter(|e| e["path"] == "/mcp")
        .collect();
    assert_eq!(
        requests.len(),
        1,
        "only the refused first request: {requests:?}"
    );
}

// # Invalid config

#[tokio::test]
async fn an_invalid_config_exits_2_naming_the_field_and_starts_nothing() {
    let dir = TempDirGuard::new("sup-invalid");
    let fixture = support::stdio_fixture(&json!({}));
    let bad = with(
        stdio_server(&fixture),
        json!({"reconnect": {"maxAttempts": 0}}),
    );
    let config = write_config(&dir, json!({ "good": stdio_server(&fixture), "bad": bad }));
    let config = config.display().to_string();
    let watch = ["watch", "--json", "--for", "10s", "--config", &config];
    let check = ["check", "--json", "--config", &config];
    let call = ["call", "good", "echo", "--json", "--config", &config];
    let (watch, check, call) = tokio::join!(lifeline(&watch), lifeline(&check), lifeline(&call));
    for run in [&watch, &check, &call] {
        assert_eq!(run.code, 2, "{run:?}");
        let error = run.error();
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("mcpServers.bad.reconnect.maxAttempts"),
            "names the field: {message}"
        );
        assert!(
            message.contains("must be between 1 and 1000"),
            "names the bound: {message}"
        );
        assert_eq!(error["kind"], "config");
    }
    assert!(!fixture.log.exists(), "nothing was started");
}
