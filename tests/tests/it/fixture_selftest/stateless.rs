//! Self-tests of `lifeline-fixture stateless` (stateless 2026-07-28), driven with raw reqwest
//! requests whose metadata headers are derived from the body unless a test overrides them.

use serde_json::{Value, json};

use super::json_body;
use crate::support::{self, parse_sse};

const VERSION: &str = "2026-07-28";

/// A header to set (`Some`) or remove (`None`) on top of the derived ones.
type Override<'a> = (&'a str, Option<&'a str>);

fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "selftest", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn request(id: u64, method: &str, mut params: Value) -> Value {
    if params.get("_meta").is_none() {
        params["_meta"] = meta(VERSION);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// POSTs `body` with the headers a conforming client derives from it (`MCP-Protocol-Version`,
/// `Mcp-Method`, `Mcp-Name`), then `overrides`: `Some` sets a header, `None` removes it.
async fn post(url: &str, body: &Value, overrides: &[Override<'_>]) -> reqwest::Response {
    let mut headers: Vec<(String, String)> = vec![
        ("content-type".into(), "application/json".into()),
        (
            "accept".into(),
            "application/json, text/event-stream".into(),
        ),
        ("mcp-protocol-version".into(), VERSION.into()),
    ];
    if let Some(method) = body["method"].as_str() {
        headers.push(("mcp-method".into(), method.into()));
    }
    if let Some(name) = body["params"]["name"].as_str() {
        headers.push(("mcp-name".into(), name.into()));
    }
    for (name, value) in overrides {
        headers.retain(|(n, _)| n != name);
        if let Some(value) = value {
            headers.push(((*name).into(), (*value).into()));
        }
    }
    let mut request = support::http_client().post(url).body(body.to_string());
    for (name, value) in headers {
        request = request.header(name, value);
    }
    request.send().await.expect("POST to fixture")
}

/// Status and JSON-RPC error code of a refused request.
async fn refusal(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    (status, json_body(response).await["error"]["code"].clone())
}

#[tokio::test]
async fn modern_discover_answers_a_discover_result() {
    let fixture = support::stateless_fixture(json!({})).await;
    let response = post(&fixture.url, &request(1, "server/discover", json!({})), &[]).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("mcp-session-id").is_none());
    let result = json_body(response).await["result"].clone();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!([VERSION]));
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "lifeline-fixture"
    );
    assert_eq!(
        (&result["ttlMs"], &result["cacheScope"]),
        (&json!(0), &json!("private"))
    );

    let logged = support::received(&fixture.log_entries(), "server/discover");
    assert_eq!(logged[0]["transport"], "stateless");
    assert_eq!(logged[0]["mcp_method"], "server/discover");
    assert_eq!(logged[0]["protocol_version_header"], VERSION);
}

#[tokio::test]
async fn modern_tools_carry_the_hints_and_headers_the_client_needs() {
    let fixture =
        support::stateless_fixture(json!({"stateless": {"invalid_header_tool": true}})).await;
    let response = post(&fixture.url, &request(1, "tools/list", json!({})), &[]).await;
    let result = json_body(response).await["result"].clone();
    assert_eq!(result["resultType"], "complete");
    let tools = result["tools"].as_array().expect("tools");
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).cloned();
    assert!(
        tool("ask").is_none(),
        "no server→client requests in 2026-07-28"
    );
    assert_eq!(
        tool("read_only").unwrap()["annotations"]["readOnlyHint"],
        true
    );
    assert_eq!(
        tool("idempotent").unwrap()["annotations"]["idempotentHint"],
        true
    );
    assert!(tool("side_effect").unwrap().get("annotations").is_none());
    let header_echo = tool("header_echo").unwrap();
    assert_eq!(
        header_echo["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    assert_eq!(
        tool("bad_header").unwrap()["inputSchema"]["properties"]["q"]["x-mcp-header"],
        "Bad Header"
    );
}

#[tokio::test]
async fn modern_header_mismatches_are_400_with_32020() {
    let fixture = support::stateless_fixture(json!({})).await;
    let url = &fixture.url;
    let list = request(1, "tools/list", json!({}));
    let echo = call(2, "echo", json!({"text": "hi"}));
    // One header changed (Some) or removed (None) per case; the status and error code.
    let cases: [(&Value, Override, (u16, Value)); 7] = [
        (&list, ("mcp-method", None), (400, json!(-32020))),
        (
            &list,
            ("mcp-method", Some("tools/call")),
            (400, json!(-32020)),
        ),
        (&list, ("mcp-protocol-version", None), (400, json!(-32020))),
        (
            &list,
            ("mcp-protocol-version", Some("2025-11-25")),
            (400, json!(-32020)),
        ),
        (&echo, ("mcp-name", None), (400, json!(-32020))),
        (&echo, ("mcp-name", Some("add")), (400, json!(-32020))),
        // "echo" in the Base64 sentinel form is the same name.
        (
            &echo,
            ("mcp-name", Some("=?base64?ZWNobw==?=")),
            (200, Value::Null),
        ),
    ];
    for (body, header, want) in cases {
        let got = refusal(post(url, body, &[header]).await).await;
        assert_eq!(got, want, "{} with {header:?}", body["method"]);
    }
    let no_meta = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}});
    assert_eq!(
        refusal(post(url, &no_meta, &[]).await).await,
        (400, json!(-32602))
    );

    // x-mcp-header arguments: the header must be there and match, after decoding.
    let args = json!({"region": "us-west1", "nested": {"zone": "Hello, 世界"}, "text": "x"});
    let region = ("mcp-param-region", Some("us-west1"));
    let zone = ("mcp-param-zone", Some("=?base64?SGVsbG8sIOS4lueVjA==?="));
    let header_echo = call(4, "header_echo", args);
    let got = refusal(post(url, &header_echo, &[region]).await).await;
    assert_eq!(got, (400, json!(-32020)), "Mcp-Param-Zone missing");
    let response = post(url, &header_echo, &[region, zone]).await;
    assert_eq!(response.status(), 200);
    let logged = support::received(&fixture.log_entries(), "tools/call");
    let last = logged.last().expect("logged");
    assert_eq!(last["mcp_name"], "header_echo");
    assert_eq!(
        last["mcp_params"],
        json!({"region": "us-west1", "zone": "=?base64?SGVsbG8sIOS4lueVjA==?="})
    );
    assert!(
        support::events(&fixture.log_entries(), "rejected").len() >= 7,
        "refusals are logged"
    );
}

#[tokio::test]
async fn modern_unsupported_version_is_32022_naming_both_sides() {
    let fixture = support::stateless_fixture(json!({})).await;
    let body = request(1, "tools/list", json!({"_meta": meta("1900-01-01")}));
    let response = post(
        &fixture.url,
        &body,
        &[("mcp-protocol-version", Some("1900-01-01"))],
    )
    .await;
    assert_eq!(response.status(), 400);
    let error = json_body(response).await["error"].clone();
    assert_eq!(error["code"], -32022);
    assert_eq!(
        error["data"],
        json!({"supported": [VERSION], "requested": "1900-01-01"})
    );
}

#[tokio::test]
async fn modern_refuses_get_delete_initialize_and_unknown_methods() {
    let fixture = support::stateless_fixture(json!({})).await;
    let client = support::http_client();
    let get = client
        .get(&fixture.url)
        .header("last-event-id", "1")
        .send()
        .await;
    assert_eq!(get.expect("GET").status(), 405);
    let delete = client
        .delete(&fixture.url)
        .header("mcp-session-id", "s")
        .send()
        .await;
    assert_eq!(delete.expect("DELETE").status(), 405);

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "selftest", "version": "0"},
    }});
    let response = post(&fixture.url, &initialize, &[("mcp-protocol-version", None)]).await;
    assert_eq!(response.status(), 404);
    let error = json_body(response).await["error"].clone();
    assert_eq!(error["code"], -32601);
    assert!(
        error["message"].as_str().unwrap().contains(VERSION),
        "{error}"
    );

    // `ping` is gone in this revision.
    for method in ["resources/list", "ping"] {
        let unknown = request(2, method, json!({}));
        let got = refusal(post(&fixture.url, &unknown, &[]).await).await;
        assert_eq!(got, (404, json!(-32601)), "{method}");
    }
    // A session id is ignored, never minted.
    let discover = request(3, "server/discover", json!({}));
    let response = post(
        &fixture.url,
        &discover,
        &[("mcp-session-id", Some("stale"))],
    )
    .await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("mcp-session-id").is_none());
}

#[tokio::test]
async fn modern_listen_stream_is_acknowledged_then_carries_list_changed() {
    let fixture = support::stateless_fixture(json!({"stateless": {
        "list_changed_after_ms": [50], "listen_keepalive_ms": 20, "listen_end_after_ms": 300,
    }}))
    .await;
    let listen = request(
        7,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let response = post(&fixture.url, &listen, &[]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let text = response.text().await.expect("listen stream");
    assert!(text.contains(": keepalive"), "{text}");
    let messages: Vec<Value> = parse_sse(&text)
        .iter()
        .map(|e| serde_json::from_str(&e.data).expect("JSON event"))
        .collect();
    let methods: Vec<&Value> = messages.iter().map(|m| &m["method"]).collect();
    assert_eq!(
        methods,
        [
            &json!("notifications/subscriptions/acknowledged"),
            &json!("notifications/tools/list_changed"),
            &Value::Null,
        ],
        "{messages:?}"
    );
    assert_eq!(
        messages[0]["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    let subscription = "io.modelcontextprotocol/subscriptionId";
    assert_eq!(messages[1]["params"]["_meta"][subscription], 7);
    assert_eq!(
        (&messages[2]["id"], &messages[2]["result"]["resultType"]),
        (&json!(7), &json!("complete"))
    );
}

#[tokio::test]
async fn modern_list_changed_tool_notifies_open_listen_streams() {
    let fixture =
        support::stateless_fixture(json!({"stateless": {"listen_end_after_ms": 2000}})).await;
    let listen = request(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let stream = post(&fixture.url, &listen, &[]).await;
    fixture
        .wait_for_log("listen_opened", |e| e["event"] == "listen_opened")
        .await;
    let response = post(&fixture.url, &call(2, "list_changed", json!({})), &[]).await;
    let text = json_body(response).await["result"]["content"][0]["text"].clone();
    assert_eq!(text, "sent to 1 listen stream(s)");
    let events = parse_sse(&stream.text().await.expect("listen stream"));
    assert!(
        events
            .iter()
            .any(|e| e.data.contains("notifications/tools/list_changed")),
        "{events:?}"
    );
}

#[tokio::test]
async fn modern_stream_break_on_nth_cuts_after_progress_and_the_reissue_is_answered() {
    let fixture = support::stateless_fixture(json!({"rules": [{
        "method": "tools/call", "tool": "read_only", "nth": 1,
        "action": {"kind": "stream_break", "after": 1},
    }]}))
    .await;
    let with_token = |id: u64| {
        let mut meta = meta(VERSION);
        meta["progressToken"] = json!(format!("p{id}"));
        request(
            id,
            "tools/call",
            json!({"name": "read_only", "arguments": {"steps": 3}, "_meta": meta}),
        )
    };
    let response = post(&fixture.url, &with_token(10), &[]).await;
    assert_eq!(response.status(), 200);
    let events = parse_sse(&response.text().await.expect("broken stream"));
    assert_eq!(events.len(), 1, "one progress, no result: {events:?}");
    assert!(events[0].data.contains("notifications/progress"));

    let response = post(&fixture.url, &with_token(11), &[]).await;
    let events = parse_sse(&response.text().await.expect("second stream"));
    let last: Value = serde_json::from_str(&events.last().expect("events").data).unwrap();
    assert_eq!(
        (&last["id"], &last["result"]["content"][0]["text"]),
        (&json!(11), &json!("read_only: done"))
    );

    let entries = fixture.log_entries();
    let ids: Vec<Value> = support::received(&entries, "tools/call")
        .iter()
        .map(|e| e["rpc_id"].clone())
        .collect();
    assert_eq!(
        ids,
        [json!(10), json!(11)],
        "both requests, with their own ids"
    );
    let broken = support::events(&entries, "stream_broken");
    assert_eq!(broken.len(), 1);
    assert_eq!(
        (&broken[0]["rpc_id"], &broken[0]["sent"]),
        (&json!(10), &json!(1))
    );
}

#[tokio::test]
async fn modern_stream_break_with_abort_fails_the_connection() {
    let fixture = support::stateless_fixture(json!({"rules": [{
        "method": "tools/call", "action": {"kind": "stream_break", "after": 1, "abort": true},
    }]}))
    .await;
    let mut meta = meta(VERSION);
    meta["progressToken"] = json!("p");
    let body = request(
        1,
        "tools/call",
        json!({"name": "side_effect", "arguments": {}, "_meta": meta}),
    );
    let response = post(&fixture.url, &body, &[]).await;
    assert_eq!(response.status(), 200);
    assert!(response.text().await.is_err(), "the body fails mid-stream");
    let broken = support::events(&fixture.log_entries(), "stream_broken");
    assert_eq!(broken[0]["abort"], true);
}

#[tokio::test]
async fn modern_client_closing_a_response_stream_is_logged_as_gone() {
    let fixture = support::stateless_fixture(json!({})).await;
    let mut meta = meta(VERSION);
    meta["progressToken"] = json!("p");
    let arguments = json!({"steps": 1000, "interval_ms": 20});
    let body = request(
        5,
        "tools/call",
        json!({"name": "idempotent", "arguments": arguments, "_meta": meta}),
    );
    let mut response = post(&fixture.url, &body, &[]).await;
    let first = response.chunk().await.expect("reading the stream");
    assert!(first.is_some(), "a first progress event");
    drop(response);
    let closed = fixture
        .wait_for_log("sse_closed", |e| e["event"] == "sse_closed")
        .await;
    assert_eq!(
        (&closed["rpc_id"], &closed["reason"]),
        (&json!(5), &json!("client_gone"))
    );
}

#[tokio::test]
async fn modern_listen_end_can_be_a_cancellation_or_a_drop() {
    for (end, last_method) in [
        ("cancelled", json!("notifications/cancelled")),
        ("close", json!("notifications/subscriptions/acknowledged")),
    ] {
        let fixture = support::stateless_fixture(
            json!({"stateless": {"listen_end_after_ms": 50, "listen_end": end}}),
        )
        .await;
        let listen = request(3, "subscriptions/listen", json!({"notifications": {}}));
        let text = post(&fixture.url, &listen, &[])
            .await
            .text()
            .await
            .expect("listen stream");
        let events = parse_sse(&text);
        let last: Value = serde_json::from_str(&events.last().expect("events").data).unwrap();
        assert_eq!(last["method"], last_method, "{end}: {text}");
        assert!(
            events[0].data.contains("\"notifications\":{}"),
            "nothing honoured: {text}"
        );
    }
}

#[tokio::test]
async fn modern_applies_the_existing_rule_actions() {
    let fixture = support::stateless_fixture(json!({"rules": [
        {"method": "tools/list", "nth": 1,
         "action": {"kind": "http_status", "status": 429, "retry_after": "1"}},
        {"method": "tools/call", "tool": "echo",
         "action": {"kind": "rpc_error", "code": -32603, "message": "CANARY"}},
        {"method": "tools/call", "tool": "add", "action": {"kind": "delay", "ms": 1}},
    ]}))
    .await;
    let list = request(1, "tools/list", json!({}));
    let response = post(&fixture.url, &list, &[]).await;
    assert_eq!(response.status(), 429);
    assert_eq!(
        response.headers().get("retry-after").map(|v| v.as_bytes()),
        Some(&b"1"[..])
    );
    assert_eq!(post(&fixture.url, &list, &[]).await.status(), 200, "nth: 1");
    let echo = post(&fixture.url, &call(2, "echo", json!({"text": "x"})), &[]).await;
    let error = json_body(echo).await["error"].clone();
    assert_eq!(
        (&error["code"], &error["message"]),
        (&json!(-32603), &json!("CANARY"))
    );
    let add = post(&fixture.url, &call(3, "add", json!({"a": 2, "b": 3})), &[]).await;
    assert_eq!(json_body(add).await["result"]["content"][0]["text"], "5");
}

#[tokio::test]
async fn modern_lying_servers() {
    // (a) discover answers 200 with something that is not a DiscoverResult.
    let fixture = support::stateless_fixture(json!({"stateless": {"discover_result": {}}})).await;
    let response = post(&fixture.url, &request(1, "server/discover", json!({})), &[]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json_body(response).await["result"], json!({}));

    // (c) only versions the client does not speak.
    let fixture =
        support::stateless_fixture(json!({"stateless": {"supported_versions": ["2027-01-01"]}}))
            .await;
    let response = post(&fixture.url, &request(1, "server/discover", json!({})), &[]).await;
    let error = json_body(response).await["error"].clone();
    assert_eq!(error["data"]["supported"], json!(["2027-01-01"]));

    // (b) the `http` mode refuses a sessionless stateless request with 400 and a body that is
    // not a stateless error (-32000, from the legacy range).
    let fixture = support::http_fixture(json!({})).await;
    let response = post(&fixture.url, &request(1, "server/discover", json!({})), &[]).await;
    assert_eq!(refusal(response).await, (400, json!(-32000)));
}

#[tokio::test]
async fn modern_dual_era_serves_initialize_with_a_session_beside_modern_requests() {
    let fixture = support::stateless_fixture(json!({"stateless": {"initialize": "serve"}})).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "selftest", "version": "0"},
    }});
    let response = post(&fixture.url, &initialize, &[("mcp-protocol-version", None)]).await;
    assert_eq!(response.status(), 200);
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a legacy session")
        .to_owned();
    assert_eq!(
        json_body(response).await["result"]["protocolVersion"],
        "2025-11-25"
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let legacy = [
        ("mcp-session-id", Some(session.as_str())),
        ("mcp-protocol-version", Some("2025-11-25")),
    ];
    let response = post(&fixture.url, &list, &legacy).await;
    let result = json_body(response).await["result"].clone();
    assert!(
        result.get("resultType").is_none(),
        "served legacy-style: {result}"
    );

    let response = post(&fixture.url, &request(3, "server/discover", json!({})), &[]).await;
    assert_eq!(
        json_body(response).await["result"]["resultType"],
        "complete"
    );
    let transports: Vec<Value> = support::events(&fixture.log_entries(), "received")
        .iter()
        .map(|e| e["transport"].clone())
        .collect();
    assert_eq!(
        transports,
        [json!("http"), json!("http"), json!("stateless")]
    );
}
