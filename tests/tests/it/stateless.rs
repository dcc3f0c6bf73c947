//! The stateless revision (2026-07-28) end to end: the real `lifeline` binary against
//! `lifeline-fixture stateless` on loopback, reached by URL alone; what goes on the wire
//! (headers, `_meta`, no session, no GET), the re-issue rules after a broken response
//! stream, and `auto` against servers that lie about what they speak.

use crate::cli::{CliRun, lifeline};
use crate::support::{
    HttpFixture, TempDirGuard, events, http_fixture, read_log, received, stateless_fixture,
    write_config,
};
use serde_json::{Value, json};

async fn call(target: &str, tool: &str, args: Value) -> CliRun {
    let args = args.to_string();
    lifeline(&["call", target, tool, args.as_str(), "--json"]).await
}

fn requests(f: &HttpFixture) -> Vec<Value> {
    f.log_entries()
        .into_iter()
        .filter(|e| e["event"] == "received")
        .collect()
}

#[tokio::test]
async fn call_by_url_speaks_the_stateless_revision_with_its_headers() {
    let f = stateless_fixture(json!({})).await;
    let run = call(&f.url, "echo", json!({"text": "new and shiny"})).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.outcome()["result"]["content"][0]["text"],
        "new and shiny"
    );

    let seen = requests(&f);
    let methods: Vec<&str> = seen
        .iter()
        .map(|e| e["rpc_method"].as_str().unwrap_or(""))
        .collect();
    // The server offers tools/list_changed, so a subscriptions/listen stream is opened
    // beside the requests (instead of the older revisions' GET).
    let listen: Vec<&Value> = seen
        .iter()
        .filter(|e| e["rpc_method"] == "subscriptions/listen")
        .collect();
    assert_eq!(listen.len(), 1, "{methods:?}");
    assert_eq!(
        listen[0]["params"]["notifications"]["toolsListChanged"],
        true
    );
    let seen: Vec<&Value> = seen
        .iter()
        .filter(|e| e["rpc_method"] != "subscriptions/listen")
        .collect();
    let methods: Vec<&str> = seen
        .iter()
        .map(|e| e["rpc_method"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        methods,
        ["server/discover", "tools/list", "tools/call"],
        "{seen:#?}"
    );
    for e in seen.iter().chain(&listen) {
        assert_eq!(e["http_method"], "POST", "no GET, no DELETE: {e}");
        assert_eq!(e["protocol_version_header"], "2026-07-28", "{e}");
        assert_eq!(e["mcp_method"], e["rpc_method"], "{e}");
        assert_eq!(e["session_id"], Value::Null, "{e}");
        let meta = &e["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{e}"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"], "lifeline",
            "{e}"
        );
    }
    assert_eq!(seen[2]["mcp_name"], "echo");
    assert!(received(&f.log_entries(), "initialize").is_empty());
}

#[tokio::test]
async fn annotated_arguments_are_mirrored_into_headers_and_encoded() {
    let f = stateless_fixture(json!({})).await;
    let args = json!({"region": "Hello, 世界", "priority": 42, "flag": true,
        "nested": {"zone": "eu-1"}, "text": "not mirrored"});
    let run = call(&f.url, "header_echo", args).await;
    assert_eq!(run.code, 0, "{run:?}");
    let calls = received(&f.log_entries(), "tools/call");
    assert_eq!(calls.len(), 1, "accepted at once: {calls:#?}");
    // Keyed by the header name after `Mcp-Param-`, as HTTP carries it (lower case).
    let params = &calls[0]["mcp_params"];
    assert_eq!(
        params,
        &json!({"region": "=?base64?SGVsbG8sIOS4lueVjA==?=", "priority": "42",
            "flag": "true", "zone": "eu-1"}),
    );
}

#[tokio::test]
async fn a_tool_with_an_invalid_header_annotation_is_left_out() {
    let f = stateless_fixture(json!({"stateless": {"invalid_header_tool": true}})).await;
    let run = lifeline(&["tools", &f.url, "--json"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let names: Vec<String> = run.outcome()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!names.contains(&"bad_header".to_owned()), "{names:?}");
    assert!(
        names.contains(&"header_echo".to_owned()),
        "the others stay: {names:?}"
    );
}

fn stream_break(tool: &str) -> Value {
    json!({"rules": [{"method": "tools/call", "tool": tool, "nth": 1,
        "action": {"kind": "stream_break", "after": 1}}]})
}

#[tokio::test]
async fn a_broken_stream_of_a_read_only_tool_is_asked_again_with_a_new_id() {
    for tool in ["read_only", "idempotent"] {
        let f = stateless_fixture(stream_break(tool)).await;
        let run = call(&f.url, tool, json!({"text": "again"})).await;
        assert_eq!(run.code, 0, "{tool}: {run:?}");
        let log = f.log_entries();
        let calls = received(&log, "tools/call");
        assert_eq!(calls.len(), 2, "{tool}: {calls:#?}");
        assert_ne!(calls[0]["rpc_id"], calls[1]["rpc_id"], "{tool}: a new id");
        assert_eq!(events(&log, "stream_broken").len(), 1, "{tool}");
    }
}

#[tokio::test]
async fn a_broken_stream_of_a_tool_with_effects_fails_typed_and_is_not_repeated() {
    let f = stateless_fixture(stream_break("side_effect")).await;
    let run = call(&f.url, "side_effect", json!({"text": "once"})).await;
    assert_ne!(run.code, 0, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "stream_lost", "{run:?}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("was not asked again")
            && message.contains("side_effect")
            && message.contains("idempotentHint"),
        "{message}"
    );
    assert_eq!(received(&f.log_entries(), "tools/call").len(), 1);
}

#[tokio::test]
async fn auto_falls_back_to_initialize_when_discovery_is_answered_with_something_else() {
    // A dual-revision server that answers server/discover with `{}`, as some servers answer any
    // method: not a discovery result, so `initialize` on a fresh connection.
    let f = stateless_fixture(json!({"stateless": {"discover_result": {}, "initialize": "serve"}}))
        .await;
    let dir = TempDirGuard::new("stateless-lying");
    let config = write_config(&dir, json!({"dual": {"url": f.url}}));
    let run = lifeline(&["check", "--json", "--config", config.to_str().unwrap()]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.outcome()["servers"][0]["protocol_version"],
        "2025-11-25",
        "{run:?}"
    );
    let log = read_log(&f.log);
    let methods: Vec<&str> = log
        .iter()
        .filter(|e| e["event"] == "received")
        .map(|e| e["rpc_method"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        methods[..2],
        ["server/discover", "initialize"],
        "{methods:?}"
    );
}

#[tokio::test]
async fn a_server_that_lists_only_revisions_lifeline_does_not_speak_fails_clearly() {
    let f = stateless_fixture(json!({"stateless": {"supported_versions": ["2027-01-01"]}})).await;
    let run = call(&f.url, "echo", json!({"text": "x"})).await;
    assert_ne!(run.code, 0, "{run:?}");
    let message = run.error()["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("2027-01-01") && message.contains("Lifeline speaks 2026-07-28"),
        "{message}"
    );
    assert!(
        received(&f.log_entries(), "initialize").is_empty(),
        "no fallback from a stateless server"
    );
}

#[tokio::test]
async fn check_and_watch_name_the_stateless_revision() {
    let f = stateless_fixture(json!({})).await;
    let dir = TempDirGuard::new("stateless-watch");
    let config = write_config(&dir, json!({"new": {"url": f.url}}));
    let config = config.to_str().unwrap();
    let run = lifeline(&["check", "--json", "--config", config]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.outcome()["servers"][0]["protocol_version"],
        "2026-07-28"
    );

    let run = lifeline(&["watch", "--json", "--for", "1s", "--config", config]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let ready: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "state" && e["state"] == "ready")
        .collect();
    assert!(!ready.is_empty(), "{}", run.stdout);
    assert_eq!(ready[0]["protocol_version"], "2026-07-28", "{}", run.stdout);
}

#[tokio::test]
async fn a_pin_to_the_stateless_revision_is_never_changed() {
    // A server that speaks only initialize revisions, pinned to 2026-07-28: refused, with what to change.
    let f = http_fixture(json!({})).await;
    let dir = TempDirGuard::new("stateless-pin");
    let config = write_config(
        &dir,
        json!({"pinned": {"url": f.url, "protocol": "2026-07-28"}}),
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
    let message = run.error()["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("pinned to 2026-07-28") && message.contains("\"auto\""),
        "{message}"
    );
    assert!(
        received(&f.log_entries(), "initialize").is_empty(),
        "a pin is never changed"
    );
}

#[tokio::test]
async fn watch_by_url_alone_finds_each_revision() {
    // One server of each kind of revision, given on the command line; the stateless one also
    // says its tools changed, on the subscriptions/listen stream.
    let stateless = stateless_fixture(json!({"stateless": {"list_changed_after_ms": [300]}})).await;
    let streamable = http_fixture(json!({})).await;
    let legacy = crate::support::legacy_fixture(json!({})).await;
    let run = lifeline(&[
        "watch",
        "--json",
        "--for",
        "2s",
        &stateless.url,
        &streamable.url,
        &legacy.url,
    ])
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    let revision = |url: &str| {
        let port = url
            .split(':')
            .nth(2)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let name = format!("127.0.0.1-{port}");
        events
            .iter()
            .find(|e| e["server"] == name && e["type"] == "state" && e["state"] == "ready")
            .unwrap_or_else(|| panic!("{name} never ready: {}", run.stdout))["protocol_version"]
            .clone()
    };
    assert_eq!(revision(&stateless.url), "2026-07-28");
    assert_eq!(revision(&streamable.url), "2025-11-25");
    assert_eq!(revision(&legacy.url), "2024-11-05");
    // The change notification came on the listen stream and the tools were listed again.
    let log = read_log(&stateless.log);
    assert_eq!(received(&log, "subscriptions/listen").len(), 1);
    assert_eq!(
        received(&log, "tools/list").len(),
        2,
        "listed again after list_changed"
    );
}

#[tokio::test]
async fn a_timed_out_call_is_cancelled_by_closing_its_stream_not_by_a_notification() {
    // The call's response stream opens at once and never brings an answer.
    let f = stateless_fixture(json!({"http": {"response": "sse"},
        "rules": [{"method": "tools/call", "action": {"kind": "never_answer"}}]}))
    .await;
    let args = json!({}).to_string();
    let run = lifeline(&[
        "call",
        &f.url,
        "side_effect",
        &args,
        "--json",
        "--timeout",
        "300ms",
    ])
    .await;
    assert_ne!(run.code, 0, "{run:?}");
    assert_eq!(run.error()["kind"], "timeout", "{run:?}");
    let calls = received(&f.log_entries(), "tools/call");
    assert_eq!(calls.len(), 1, "not asked again after a timeout");
    let id = calls[0]["rpc_id"].clone();
    f.wait_for_log("the call's stream closed by the client", |e| {
        e["event"] == "sse_closed" && e["reason"] == "client_gone" && e["rpc_id"] == id
    })
    .await;
    assert!(
        received(&f.log_entries(), "notifications/cancelled").is_empty(),
        "closing the stream is the cancellation in this revision"
    );
}

#[tokio::test]
async fn a_server_whose_discovery_lies_is_reached_with_initialize_by_call_and_by_check() {
    // server/discover lists 2026-07-28, but every other stateless request is refused the
    // way an initialize-only server refuses it; initialize works.
    let script = json!({"stateless": {"stateless_only_discover": true, "initialize": "serve"}});
    let f = stateless_fixture(script.clone()).await;
    let run = call(&f.url, "echo", json!({"text": "the old way"})).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.outcome()["result"]["content"][0]["text"], "the old way");
    let log = f.log_entries();
    assert_eq!(
        received(&log, "initialize").len(),
        1,
        "one initialize attempt"
    );

    let f = stateless_fixture(script).await;
    let dir = TempDirGuard::new("stateless-liar");
    let config = write_config(&dir, json!({"liar": {"url": f.url}}));
    let run = lifeline(&["check", "--json", "--config", config.to_str().unwrap()]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.outcome()["servers"][0]["protocol_version"],
        "2025-11-25",
        "{run:?}"
    );
}
