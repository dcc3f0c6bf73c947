//! The legacy HTTP+SSE transport (2024-11-05) end to end, and `protocol: "auto"` finding it:
//! the real `lifeline` binary against `lifeline-fixture sse` on loopback, reached by URL
//! alone (`call URL`, and a config entry with only `url` under `watch` and `check`).

use crate::cli::{CliRun, lifeline};
use crate::support::{
    HttpFixture, TempDirGuard, events, http_fixture, legacy_fixture, read_log, received,
    write_config,
};
use serde_json::{Value, json};

async fn call(target: &str, tool: &str, args: Value, extra: &[&str]) -> CliRun {
    let args = args.to_string();
    let mut argv = vec!["call", target, tool, args.as_str(), "--json"];
    argv.extend_from_slice(extra);
    lifeline(&argv).await
}

/// Every request the fixture received, as `METHOD /path`.
fn requests(f: &HttpFixture) -> Vec<String> {
    f.log_entries()
        .into_iter()
        .filter(|e| e["event"] == "received")
        .map(|e| {
            format!(
                "{} {}",
                e["http_method"].as_str().unwrap_or("?"),
                e["path"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

#[tokio::test]
async fn call_by_url_falls_back_from_streamable_http_to_legacy_sse() {
    let f = legacy_fixture(json!({})).await;
    let run = call(&f.url, "echo", json!({"text": "old but gold"}), &[]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.outcome()["result"]["content"][0]["text"],
        "old but gold"
    );
    let seen = requests(&f);
    // The spec's order: the stateless revision's request and then `initialize` POSTed to
    // the URL (both refused 405), then GET expecting `endpoint`, then every message POSTed
    // to the endpoint.
    assert_eq!(
        seen[..3],
        ["POST /sse", "POST /sse", "GET /sse"],
        "{seen:?}"
    );
    assert!(seen[3..].iter().all(|r| r == "POST /messages"), "{seen:?}");
    let log = f.log_entries();
    assert_eq!(received(&log, "server/discover").len(), 1);
    let init = received(&log, "initialize");
    assert_eq!(init.len(), 2, "one refused, one on the legacy endpoint");
    assert!(init[1]["session_id"].is_string(), "{init:?}");
    assert_eq!(received(&log, "tools/call").len(), 1);
}

#[tokio::test]
async fn type_sse_goes_straight_to_the_stream() {
    let f = legacy_fixture(json!({})).await;
    let dir = TempDirGuard::new("legacy-type");
    let config = write_config(&dir, json!({"old": {"type": "sse", "url": f.url}}));
    let config = config.to_str().unwrap();
    let run = call("old", "add", json!({"a": 2, "b": 3}), &["--config", config]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.outcome()["result"]["content"][0]["text"], "5");
    let seen = requests(&f);
    assert_eq!(seen[0], "GET /sse", "no Streamable HTTP attempt: {seen:?}");
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused_and_nothing_is_sent_there() {
    // Port 9 on loopback: nothing listens, and nothing may be sent there anyway.
    let f =
        legacy_fixture(json!({"http": {"legacy_endpoint": "http://127.0.0.1:9/messages"}})).await;
    let dir = TempDirGuard::new("legacy-origin");
    let config = write_config(&dir, json!({"old": {"type": "sse", "url": f.url}}));
    let run = lifeline(&[
        "tools",
        "old",
        "--json",
        "--config",
        config.to_str().unwrap(),
    ])
    .await;
    assert_ne!(run.code, 0, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "protocol", "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("another origin"), "{message}");
    assert!(message.contains("127.0.0.1:9"), "{message}");
    assert_eq!(requests(&f), ["GET /sse"], "the only request is the stream");
}

#[tokio::test]
async fn a_lost_stream_fails_the_call_in_flight_as_stream_lost() {
    let rule = json!({"method": "tools/call", "action": {"kind": "sse_close"}});
    let f = legacy_fixture(json!({ "rules": [rule] })).await;
    let run = call(&f.url, "echo", json!({"text": "x"}), &[]).await;
    assert_ne!(run.code, 0, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "stream_lost", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("cannot resume"),
        "{e}"
    );
    assert_eq!(events(&f.log_entries(), "legacy_stream_closing").len(), 1);
}

#[tokio::test]
async fn a_pinned_revision_never_falls_back() {
    let f = legacy_fixture(json!({})).await;
    let dir = TempDirGuard::new("legacy-pin");
    let config = write_config(
        &dir,
        json!({"pinned": {"url": f.url, "protocol": "2025-11-25"}}),
    );
    let run = lifeline(&[
        "tools",
        "pinned",
        "--json",
        "--config",
        config.to_str().unwrap(),
    ])
    .await;
    assert_ne!(run.code, 0, "{run:?}");
    assert_eq!(run.error()["status"], 405, "{run:?}");
    assert_eq!(
        requests(&f),
        ["POST /sse"],
        "no GET: a pin is never changed"
    );
}

#[tokio::test]
async fn denials_and_throttling_are_never_taken_for_an_older_server() {
    for (status, kind) in [(401, "auth"), (403, "permission"), (429, "rate_limited")] {
        let action = json!({"kind": "http_status", "status": status});
        // Refused from the first request (the stateless revision's): nothing else is tried.
        let f = http_fixture(json!({ "rules": [{"action": action}] })).await;
        let run = call(&f.url, "echo", json!({"text": "x"}), &[]).await;
        assert_eq!(run.error()["kind"], kind, "{status}: {run:?}");
        assert_eq!(
            requests(&f),
            ["POST /mcp"],
            "{status}: no initialize, no legacy GET"
        );
        // Refused at `initialize` (after the stateless request was answered the old way):
        // no legacy GET.
        let f =
            http_fixture(json!({ "rules": [{"method": "initialize", "action": action}] })).await;
        let run = call(&f.url, "echo", json!({"text": "x"}), &[]).await;
        assert_eq!(run.error()["kind"], kind, "{status}: {run:?}");
        assert_eq!(
            requests(&f),
            ["POST /mcp", "POST /mcp"],
            "{status}: no legacy GET"
        );
    }
}

#[tokio::test]
async fn a_streamable_server_that_refuses_with_404_and_has_no_stream_says_both() {
    // A Streamable HTTP server whose path is wrong: the fallback GET is refused too.
    let f = http_fixture(
        json!({ "http": { "get": "404" }, "rules": [{"method": "initialize",
        "action": {"kind": "http_status", "status": 404}}] }),
    )
    .await;
    let run = call(&f.url, "echo", json!({"text": "x"}), &[]).await;
    let e = run.error();
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("legacy HTTP+SSE") && message.contains("refused"),
        "{message}"
    );
    assert_eq!(requests(&f), ["POST /mcp", "POST /mcp", "GET /mcp"]);
}

#[tokio::test]
async fn watch_reconnects_with_a_new_generation_when_the_legacy_stream_is_lost() {
    let rule = json!({"method": "ping", "nth": 1, "action": {"kind": "sse_close"}});
    let f = legacy_fixture(json!({ "rules": [rule] })).await;
    let dir = TempDirGuard::new("legacy-watch");
    let config = write_config(
        &dir,
        json!({"old": {"url": f.url, "timeouts": {"pingIntervalMs": 1000},
            "reconnect": {"initialDelayMs": 20, "maxDelayMs": 100}}}),
    );
    let config = config.to_str().unwrap();
    let run = lifeline(&["watch", "--json", "--for", "4s", "--config", config]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lost = lines
        .iter()
        .find(|e| e["type"] == "failure")
        .unwrap_or_else(|| panic!("no failure event: {}", run.stdout));
    assert_eq!(lost["failure"]["kind"], "stream_lost", "{lost}");
    assert_eq!(lost["generation"], 1);
    let ready: Vec<&Value> = lines
        .iter()
        .filter(|e| e["type"] == "state" && e["state"] == "ready")
        .collect();
    assert!(
        ready.iter().any(|e| e["generation"] == 2),
        "generation 2 became ready: {}",
        run.stdout
    );
    for e in &ready {
        assert_eq!(
            e["protocol_version"], "2024-11-05",
            "the event names the revision: {e}"
        );
    }
    let log = read_log(&f.log);
    assert_eq!(
        events(&log, "legacy_stream_opened").len(),
        2,
        "one stream per generation"
    );
}

#[tokio::test]
async fn check_shows_the_negotiated_revision() {
    let f = legacy_fixture(json!({})).await;
    let dir = TempDirGuard::new("legacy-check");
    let config = write_config(&dir, json!({"old": {"url": f.url}}));
    let run = lifeline(&["check", "--json", "--config", config.to_str().unwrap()]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let servers = &run.outcome()["servers"];
    assert_eq!(servers[0]["protocol_version"], "2024-11-05", "{run:?}");
}

#[tokio::test]
async fn a_legacy_server_that_answers_in_the_post_body_works_too() {
    let f = legacy_fixture(json!({ "http": { "legacy_answer_in_body": true } })).await;
    let run = call(&f.url, "echo", json!({"text": "in the body"}), &[]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.outcome()["result"]["content"][0]["text"], "in the body");
    let log = f.log_entries();
    assert_eq!(
        received(&log, "tools/call").len(),
        1,
        "answered once, not asked again"
    );
}
