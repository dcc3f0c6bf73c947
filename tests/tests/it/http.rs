//! Streamable HTTP end to end: the real `lifeline` binary and lifeline-core against the
//! fixture server on loopback, one fault per test. Timing rules are read from the fixture's
//! log as lower bounds ("no sooner than"), never as speed assertions.

use crate::cli::{CliRun, lifeline};
use crate::support::{HttpFixture, events, http_fixture, received};
use lifeline_core::session::RequestOptions;
use lifeline_core::transport::http::{self, HttpConfig};
use lifeline_core::{ErrorKind, Session, SessionOptions};
use serde_json::{Value, json};

async fn call(f: &HttpFixture, tool: &str, args: Value, extra: &[&str]) -> CliRun {
    let args = args.to_string();
    let mut argv = vec!["call", f.url.as_str(), tool, args.as_str(), "--json"];
    argv.extend_from_slice(extra);
    lifeline(&argv).await
}

fn posts(f: &HttpFixture) -> Vec<Value> {
    f.log_entries()
        .into_iter()
        .filter(|e| e["event"] == "received" && e["http_method"] == "POST")
        .collect()
}

fn rule(method: &str, action: Value) -> Value {
    json!({ "method": method, "action": action })
}

async fn session(f: &HttpFixture) -> Session {
    let conn = http::connect(&HttpConfig::new(&f.url)).expect("transport");
    Session::connect(conn, SessionOptions::default())
        .await
        .expect("handshake")
}

#[tokio::test]
async fn json_and_sse_responses_both_answer_and_headers_follow_the_spec() {
    for mode in ["json", "sse"] {
        let f = http_fixture(json!({ "http": { "response": mode } })).await;
        let run = call(&f, "echo", json!({"text": "hi"}), &[]).await;
        assert_eq!(run.code, 0, "{mode}: {run:?}");
        assert_eq!(
            run.outcome()["result"]["content"][0]["text"],
            "hi",
            "{mode}"
        );

        let posts = posts(&f);
        // `auto` asks in the stateless revision first; this server answers the old way.
        let discover = &posts[0];
        assert_eq!(discover["rpc_method"], "server/discover");
        assert_eq!(discover["protocol_version_header"], "2026-07-28");
        assert_eq!(discover["mcp_method"], "server/discover");
        assert_eq!(discover["session_id"], Value::Null);
        let posts = &posts[1..];
        let init = &posts[0];
        assert_eq!(init["rpc_method"], "initialize");
        assert_eq!(init["accept"], "application/json, text/event-stream");
        assert_eq!(
            init["session_id"],
            Value::Null,
            "no session id before there is one"
        );
        assert_eq!(
            init["protocol_version_header"],
            Value::Null,
            "no version header before it is negotiated"
        );
        for later in &posts[1..] {
            assert!(
                later["session_id"].is_string(),
                "{mode}: session id echoed on {later}"
            );
            assert_eq!(
                later["protocol_version_header"], "2025-11-25",
                "{mode}: {later}"
            );
        }
        assert!(
            received(posts, "notifications/initialized").len() == 1,
            "{mode}"
        );
        f.wait_for_log("DELETE on close", |e| e["http_method"] == "DELETE")
            .await;
    }
}

#[tokio::test]
async fn a_401_is_exit_3_after_exactly_one_request() {
    // A server behind auth refuses every request, the first (stateless) one included.
    let f = http_fixture(json!({ "rules": [{ "action": {
        "kind": "http_status", "status": 401, "www_authenticate": "Bearer realm=\"x\""}}] }))
    .await;
    let run = call(&f, "echo", json!({"text": "x"}), &[]).await;
    assert_eq!(run.code, 3, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "auth");
    assert_eq!(e["status"], 401);
    assert_eq!(e["reason"], "Unauthorized");
    assert_eq!(e["phase"], "connect");
    assert_eq!(e["method"], "POST");
    assert_eq!(e["url_path"], "/mcp");
    let requests: Vec<Value> = f
        .log_entries()
        .into_iter()
        .filter(|e| e["event"] == "received")
        .collect();
    assert_eq!(requests.len(), 1, "exactly one request: {requests:#?}");
}

/// (status, Retry-After, expected kind, expected exit, expected retry_after_ms range)
type StatusCase<'a> = (u16, Option<&'a str>, &'a str, i32, Option<(u64, u64)>);

#[tokio::test]
async fn statuses_on_a_call_map_to_kinds_exit_codes_and_retry_after() {
    let in_an_hour = httpdate::fmt_http_date(
        std::time::SystemTime::now() + std::time::Duration::from_secs(3600),
    );
    let cases: Vec<StatusCase> = vec![
        (403, None, "permission", 3, None),
        (429, Some("7"), "rate_limited", 4, Some((7000, 7000))),
        (
            429,
            Some(in_an_hour.as_str()),
            "rate_limited",
            4,
            Some((3_590_000, 3_600_000)),
        ),
        (
            429,
            Some("Sun, 06 Nov 1994 08:49:37 GMT"),
            "rate_limited",
            4,
            Some((0, 0)),
        ),
        (429, Some("soon"), "rate_limited", 4, None),
        (500, None, "server", 5, None),
        (503, Some("3"), "server", 5, Some((3000, 3000))),
        (400, None, "protocol", 5, None),
    ];
    for (status, retry_after, kind, code, range) in cases {
        let f = http_fixture(json!({ "rules": [rule("tools/call", json!({
            "kind": "http_status", "status": status, "retry_after": retry_after }))] }))
        .await;
        let run = call(&f, "echo", json!({"text": "x"}), &[]).await;
        let case = format!("{status} {retry_after:?}");
        assert_eq!(run.code, code, "{case}: {run:?}");
        let e = run.error();
        assert_eq!(e["kind"], kind, "{case}");
        assert_eq!(e["status"], status, "{case}");
        assert_eq!(e["phase"], "call", "{case}");
        match range {
            None => assert_eq!(e["retry_after_ms"], Value::Null, "{case}"),
            Some((lo, hi)) => {
                let ms = e["retry_after_ms"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{case}: {e}"));
                assert!((lo..=hi).contains(&ms), "{case}: {ms} not in {lo}..={hi}");
            }
        }
        assert_eq!(
            received(&f.log_entries(), "tools/call").len(),
            1,
            "{case}: a call is never replayed"
        );
    }
}

#[tokio::test]
async fn a_wrong_path_and_a_dead_port_say_what_to_check() {
    let f = http_fixture(json!({})).await;
    let wrong = f.url.replace("/mcp", "/nope");
    let run = lifeline(&["call", &wrong, "echo", "--json"]).await;
    assert_eq!(run.code, 5, "{run:?}");
    assert_eq!(run.error()["status"], 404);
    assert!(
        run.error()["message"]
            .as_str()
            .unwrap()
            .contains("check the path"),
        "{run:?}"
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let run = lifeline(&[
        "call",
        &format!("http://127.0.0.1:{port}/mcp"),
        "echo",
        "--json",
    ])
    .await;
    assert_eq!(run.code, 5, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "transport");
    assert_eq!(e["io"], "connect");
    assert_eq!(e["stage"], "connect");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(&format!("could not connect to 127.0.0.1:{port}")),
        "{e}"
    );
}

#[tokio::test]
async fn an_expired_session_fails_the_call_and_closes_the_connection() {
    let f = http_fixture(json!({ "http": { "session_expires_after": 2 } })).await;
    let s = session(&f).await;
    s.call_tool("echo", json!({"text": "1"}), RequestOptions::default())
        .await
        .expect("before expiry");
    let err = s
        .call_tool("echo", json!({"text": "2"}), RequestOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SessionExpired);
    assert_eq!(err.context().status, Some(404));
    let before = posts(&f).len();
    let err = s
        .call_tool("echo", json!({"text": "3"}), RequestOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_transport_closed(), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::SessionExpired);
    assert_eq!(posts(&f).len(), before, "a refused request sends nothing");
    assert_eq!(
        received(&f.log_entries(), "tools/call").len(),
        2,
        "the expired call was not replayed"
    );
}

fn sse_close(retry: Option<&str>, resume: &[&str]) -> Value {
    json!({ "rules": [{ "method": "tools/call", "tool": "slow", "action": {
        "kind": "sse_close", "after_ms": 20, "retry": retry, "resume": resume } }] })
}

/// ms between the POST stream's graceful close and the first resume GET.
fn resume_delay_ms(f: &HttpFixture) -> u64 {
    let entries = f.log_entries();
    let closed = events(&entries, "sse_closed")
        .into_iter()
        .find(|e| e["stream"] == "post")
        .expect("POST stream closed");
    let resume = entries
        .iter()
        .find(|e| {
            e["event"] == "received" && e["http_method"] == "GET" && e["last_event_id"].is_string()
        })
        .expect("a resume GET");
    resume["t_ms"].as_u64().unwrap() - closed["t_ms"].as_u64().unwrap()
}

#[tokio::test]
async fn a_lost_stream_is_resumed_after_exactly_the_servers_retry() {
    let f = http_fixture(sse_close(Some("300"), &["deliver"])).await;
    let run = call(&f, "slow", json!({"ms": 50}), &[]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        resume_delay_ms(&f) >= 300,
        "waited the server's retry: {}",
        resume_delay_ms(&f)
    );
    let entries = f.log_entries();
    let closed = events(&entries, "sse_closed")
        .into_iter()
        .find(|e| e["stream"] == "post")
        .unwrap();
    let get = entries
        .iter()
        .find(|e| e["http_method"] == "GET" && e["last_event_id"].is_string())
        .unwrap();
    assert_eq!(
        get["last_event_id"].as_str().unwrap(),
        closed["event_id"].to_string().trim_matches('"')
    );
    assert!(get["session_id"].is_string());
    assert_eq!(
        received(&entries, "tools/call").len(),
        1,
        "resumed, not re-sent"
    );
}

#[tokio::test]
async fn retry_zero_is_floored_at_100_ms_and_an_invalid_retry_means_1000_ms() {
    let f = http_fixture(sse_close(Some("0"), &["deliver"])).await;
    assert_eq!(call(&f, "slow", json!({"ms": 10}), &[]).await.code, 0);
    assert!(resume_delay_ms(&f) >= 100, "{}", resume_delay_ms(&f));

    let f = http_fixture(sse_close(Some("500ms"), &["deliver"])).await;
    assert_eq!(call(&f, "slow", json!({"ms": 10}), &[]).await.code, 0);
    assert!(resume_delay_ms(&f) >= 1000, "{}", resume_delay_ms(&f));
}

#[tokio::test]
async fn a_day_long_retry_fails_at_once_naming_the_budget() {
    let f = http_fixture(sse_close(Some("86400000"), &["deliver"])).await;
    let run = call(&f, "slow", json!({"ms": 10}), &[]).await;
    assert_eq!(run.code, 5, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "stream_lost");
    assert_eq!(e["retry_after_ms"], 86_400_000u64);
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("max_reconnection_wait") && msg.contains("5 min"),
        "{msg}"
    );
    let gets = f
        .log_entries()
        .into_iter()
        .filter(|e| e["http_method"] == "GET" && e["last_event_id"].is_string())
        .count();
    assert_eq!(gets, 0, "no resume was attempted");
}

#[tokio::test]
async fn a_resume_answered_404_fails_the_call_with_the_cause() {
    let f = http_fixture(sse_close(Some("100"), &["404"])).await;
    let run = call(&f, "slow", json!({"ms": 10}), &[]).await;
    assert_eq!(run.code, 5, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "session_expired");
    assert_eq!(e["status"], 404);
    assert_eq!(e["method"], "GET");
    let resumes = events(&f.log_entries(), "resume").len();
    assert_eq!(resumes, 1, "one resume, then the failure");
}

#[tokio::test]
async fn graceful_closes_that_deliver_nothing_are_bounded_attempts() {
    let f = http_fixture(sse_close(Some("100"), &["close"])).await;
    let run = call(&f, "slow", json!({"ms": 60000}), &[]).await;
    assert_eq!(run.code, 5, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "stream_lost");
    assert!(e["message"].as_str().unwrap().contains("10 times"), "{e}");
    assert_eq!(events(&f.log_entries(), "resume").len(), 10);
}

#[tokio::test]
async fn a_stream_without_an_event_id_is_lost_at_once_and_never_replayed() {
    let mut script = sse_close(None, &["deliver"]);
    script["http"] = json!({ "sse": { "priming": false } });
    let f = http_fixture(script).await;
    let run = call(&f, "slow", json!({"ms": 10}), &[]).await;
    assert_eq!(run.code, 5, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "stream_lost");
    assert!(
        e["message"].as_str().unwrap().contains("no event id"),
        "{e}"
    );
    assert_eq!(received(&f.log_entries(), "tools/call").len(), 1);
}

#[tokio::test]
async fn after_a_failed_resumption_the_connection_refuses_requests() {
    let f = http_fixture(sse_close(Some("86400000"), &["deliver"])).await;
    let s = session(&f).await;
    let err = s
        .call_tool("slow", json!({"ms": 10}), RequestOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StreamLost);
    let err = s
        .call_tool("echo", json!({"text": "x"}), RequestOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_transport_closed(), "{err:?}");
    assert!(
        err.message().contains("max_reconnection_wait"),
        "the cause is kept: {err}"
    );
    assert!(received(&f.log_entries(), "tools/call").len() == 1);
}

#[tokio::test]
async fn a_call_never_answered_times_out_and_is_cancelled() {
    let f = http_fixture(
        json!({ "http": {"response": "sse"}, "rules": [{ "method": "tools/call", "tool": "slow",
        "action": {"kind": "never_answer"} }] }),
    )
    .await;
    let run = call(&f, "slow", json!({}), &["--timeout", "1s"]).await;
    assert_eq!(run.code, 5, "{run:?}");
    assert_eq!(run.error()["kind"], "timeout");
    let entries = f.log_entries();
    let call_id = received(&entries, "tools/call")[0]["rpc_id"].clone();
    let cancelled = f
        .wait_for_log("notifications/cancelled", |e| {
            e["rpc_method"] == "notifications/cancelled"
        })
        .await;
    assert_eq!(cancelled["params"]["requestId"], call_id);
}

#[tokio::test]
async fn a_stalled_initialize_ends_at_the_timeout() {
    let f = http_fixture(json!({ "delay_ms": 30000 })).await;
    let run = call(&f, "echo", json!({"text": "x"}), &["--timeout", "1s"]).await;
    assert_eq!(run.code, 5, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "timeout");
    assert_eq!(e["stage"], "initialize");
}

#[tokio::test]
async fn the_get_stream_never_blocks_or_breaks_the_post_path() {
    for get in ["hang", "404", "sse", "405"] {
        let f = http_fixture(json!({ "http": { "get": get, "sse": {"keepalive_ms": 20} } })).await;
        let run = call(&f, "echo", json!({"text": get}), &[]).await;
        assert_eq!(run.code, 0, "GET {get}: {run:?}");
        assert_eq!(run.outcome()["result"]["content"][0]["text"], get);
    }
}

#[tokio::test]
async fn keepalives_and_crlf_on_sse_are_understood() {
    let f = http_fixture(json!({ "http": { "response": "sse", "sse": {"keepalive_ms": 5, "keepalive_comment": "ping", "crlf": true} } })).await;
    let run = call(&f, "slow", json!({"ms": 100}), &[]).await;
    assert_eq!(run.code, 0, "{run:?}");
}

#[tokio::test]
async fn garbage_from_the_server_is_a_protocol_error_that_names_it() {
    let cases = [
        (
            json!({"kind": "garbage", "text": "<html>oops</html>"}),
            "not JSON-RPC",
        ),
        (
            json!({"kind": "wrong_content_type", "content_type": "text/html"}),
            "content type \"text/html\"",
        ),
    ];
    for (action, expect) in cases {
        let f = http_fixture(json!({ "rules": [rule("tools/call", action.clone())] })).await;
        let run = call(&f, "echo", json!({"text": "x"}), &[]).await;
        assert_eq!(run.code, 5, "{action}: {run:?}");
        let e = run.error();
        assert_eq!(e["kind"], "protocol", "{action}");
        assert!(
            e["message"].as_str().unwrap().contains(expect),
            "{action}: {e}"
        );
    }
}

#[tokio::test]
async fn progress_lines_precede_the_outcome() {
    let f = http_fixture(json!({})).await;
    let run = call(&f, "progress", json!({"steps": 3, "interval_ms": 5}), &[]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let progress: Vec<f64> = lines
        .iter()
        .filter_map(|l| l["progress"]["progress"].as_f64())
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0]);
    assert_eq!(lines.last().unwrap()["ok"], true);
}

#[tokio::test]
async fn server_requests_we_did_not_opt_into_are_answered_method_not_found() {
    let f = http_fixture(json!({})).await;
    for method in ["roots/list", "elicitation/create", "sampling/createMessage"] {
        let run = call(&f, "ask", json!({"method": method}), &[]).await;
        assert_eq!(run.code, 0, "{method}: {run:?}");
        let text = run.outcome()["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
    let run = call(&f, "ask", json!({"method": "ping"}), &[]).await;
    let text = run.outcome()["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"result": {}})
    );
}

#[tokio::test]
async fn tools_lists_every_page() {
    let f = http_fixture(json!({ "page_size": 3 })).await;
    let run = lifeline(&["tools", &f.url, "--json"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.outcome()["result"]["tools"].as_array().unwrap().len(),
        10
    );
    assert_eq!(received(&f.log_entries(), "tools/list").len(), 4);
}

#[tokio::test]
async fn a_refused_protocol_version_is_a_clear_error() {
    let f = http_fixture(json!({ "protocol_version": "1999-01-01" })).await;
    let run = call(&f, "echo", json!({"text": "x"}), &[]).await;
    assert_eq!(run.code, 5, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "protocol");
    assert_eq!(e["stage"], "initialize");
    assert!(
        e["message"].as_str().unwrap().contains("\"1999-01-01\""),
        "{e}"
    );
}

#[tokio::test]
async fn secrets_never_appear_in_any_output() {
    const HEADER: &str = "CANARY-header-9d2c41";
    const KEY: &str = "CANARY-apikey-51b7e0";
    const QUERY: &str = "CANARY-query-77aa10";
    const USERINFO: &str = "CANARY-pass-0c3e99";
    let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000,
        "message": format!("bad credentials {HEADER} {KEY} {USERINFO}")}});
    let scripts = [
        json!({ "rules": [rule("initialize", json!({"kind": "http_status", "status": 401,
            "www_authenticate": format!("Bearer error=\"{HEADER}\""), "body": body.to_string()}))] }),
        json!({ "rules": [rule("tools/call", json!({"kind": "rpc_error", "code": -32000,
            "message": format!("token {HEADER} rejected, key {KEY}")}))] }),
        json!({ "rules": [rule("tools/call", json!({"kind": "http_status", "status": 500,
            "body": format!("internal error for {HEADER}")}))] }),
    ];
    for script in scripts {
        let f = http_fixture(script.clone()).await;
        let url = f
            .url
            .replace("http://", &format!("http://user:{USERINFO}@"))
            + &format!("?token={QUERY}");
        for json_flag in [true, false] {
            let auth = format!("Authorization: Bearer {HEADER}");
            let key = format!("X-Api-Key: {KEY}");
            let mut argv = vec![
                "call",
                url.as_str(),
                "echo",
                "{\"text\":\"x\"}",
                "-H",
                &auth,
                "-H",
                &key,
            ];
            if json_flag {
                argv.push("--json");
            }
            let run = lifeline(&argv).await;
            assert_ne!(run.code, 0, "{script}: {run:?}");
            for canary in [HEADER, KEY, QUERY, USERINFO] {
                assert!(
                    !run.everything().contains(canary),
                    "{canary} leaked ({script}): {run:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_tls_handshake_failure_is_named_as_such() {
    let f = http_fixture(json!({})).await;
    let run = lifeline(&["tools", &f.url.replace("http://", "https://"), "--json"]).await;
    assert_eq!(run.code, 5, "{run:?}");
    let e = run.error();
    assert_eq!(e["kind"], "transport");
    assert_eq!(e["io"], "tls");
    assert!(
        e["message"].as_str().unwrap().contains("TLS handshake"),
        "{e}"
    );
}
