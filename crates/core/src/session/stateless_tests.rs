//! The stateless revision (2026-07-28) in the session, against the in-process transport:
//! discovery and its refusals, `_meta` on every request, the re-issue rules after a lost
//! response stream, multi round-trip input, and `ping` without `ping`.

use super::tests::{lose, next_request, reply};
use super::*;
use crate::transport::memory::{self, ServerEnd};

fn stateless_session(options: SessionOptions) -> (Arc<Session>, ServerEnd) {
    let (conn, server) = memory::pair();
    (Arc::new(Session::start_stateless(conn, options)), server)
}

fn discover_result() -> Value {
    json!({
        "resultType": "complete", "supportedVersions": ["2026-07-28"], "ttlMs": 0,
        "cacheScope": "public", "capabilities": { "tools": {} },
        "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "m", "version": "1" } },
    })
}

fn tools() -> Value {
    json!({ "resultType": "complete", "tools": [
        { "name": "read", "annotations": { "readOnlyHint": true } },
        { "name": "again", "annotations": { "idempotentHint": true } },
        { "name": "write", "annotations": { "destructiveHint": true } },
    ]})
}

fn meta_version(r: &crate::protocol::Request) -> Option<&str> {
    r.params.as_ref()?["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str()
}

/// A session past discovery with the three tools listed.
async fn ready() -> (Arc<Session>, ServerEnd) {
    let (s, mut server) = stateless_session(SessionOptions::default());
    let s2 = s.clone();
    let discovered = tokio::spawn(async move { s2.discover().await.map_err(|r| r.error) });
    let r = next_request(&mut server).await;
    reply(&server, r.id, Ok(discover_result())).await;
    discovered.await.unwrap().unwrap();
    let s2 = s.clone();
    let listed = tokio::spawn(async move { s2.list_tools().await });
    let r = next_request(&mut server).await;
    reply(&server, r.id, Ok(tools())).await;
    assert_eq!(listed.await.unwrap().unwrap().len(), 3);
    (s, server)
}

#[tokio::test(start_paused = true)]
async fn discovery_replaces_the_handshake_and_every_request_carries_meta() {
    let (s, mut server) = stateless_session(SessionOptions::default());
    let s2 = s.clone();
    let discovered = tokio::spawn(async move { s2.discover().await.map_err(|r| r.error) });
    let r = next_request(&mut server).await;
    assert_eq!(r.method, "server/discover");
    let meta = &r.params.as_ref().unwrap()["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "lifeline"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
    reply(&server, r.id, Ok(discover_result())).await;
    discovered.await.unwrap().unwrap();
    let server_info = s.server().unwrap();
    assert_eq!(server_info.protocol_version, "2026-07-28");
    assert_eq!(server_info.server_info.as_ref().unwrap().name, "m");

    // A call carries _meta next to its progress token, and ping is a discovery.
    let s2 = s.clone();
    let call = tokio::spawn(async move {
        s2.call_tool("read", json!({}), RequestOptions::default())
            .await
    });
    let r = next_request(&mut server).await;
    assert_eq!(meta_version(&r), Some("2026-07-28"));
    assert!(r.params.as_ref().unwrap()["_meta"]["progressToken"].is_number());
    reply(&server, r.id, Ok(json!({ "content": [] }))).await;
    call.await.unwrap().unwrap();
    let s2 = s.clone();
    let ping = tokio::spawn(async move { s2.ping().await });
    let r = next_request(&mut server).await;
    assert_eq!(r.method, "server/discover");
    reply(&server, r.id, Ok(discover_result())).await;
    ping.await.unwrap().unwrap();
}

/// Runs discovery against one scripted answer and returns the refusal.
async fn refused_by(outcome: Result<Value, RpcError>) -> Refusal {
    let (s, mut server) = stateless_session(SessionOptions::default());
    let s2 = s.clone();
    let discovered = tokio::spawn(async move { s2.discover().await });
    let r = next_request(&mut server).await;
    reply(&server, r.id, outcome).await;
    discovered.await.unwrap().expect_err("refused")
}

#[tokio::test(start_paused = true)]
async fn discovery_refusals_say_whether_the_server_speaks_initialize() {
    // Anything but a discovery result (some servers answer `{}` to any method).
    let r = refused_by(Ok(json!({}))).await;
    assert!(r.speaks_initialize);
    assert!(
        r.error.message().contains("not a discovery result"),
        "{}",
        r.error
    );

    // A JSON-RPC error that is not a stateless-revision one: an older server answering.
    let r = refused_by(Err(RpcError {
        code: -32601,
        message: "Method not found".into(),
        data: None,
    }))
    .await;
    assert!(r.speaks_initialize);

    // A stateless-revision refusal of ours that lists one with `initialize`: fall back.
    let unsupported = |list: Value| RpcError {
        code: -32022,
        message: "Unsupported protocol version".into(),
        data: Some(json!({ "supported": list, "requested": "2026-07-28" })),
    };
    let r = refused_by(Err(unsupported(json!(["2025-11-25"])))).await;
    assert!(r.speaks_initialize);
    assert!(
        r.error.message().contains("it lists 2025-11-25"),
        "{}",
        r.error
    );

    // Only revisions we do not speak: a clear failure, no fallback.
    let r = refused_by(Err(unsupported(json!(["2027-01-01"])))).await;
    assert!(!r.speaks_initialize);
    assert!(
        r.error.message().contains("2027-01-01")
            && r.error.message().contains("Lifeline speaks 2026-07-28"),
        "{}",
        r.error
    );
    assert_eq!(r.error.context().stage, Some(Stage::Discover));

    // A discovery result that does not list our revision.
    let mut d = discover_result();
    d["supportedVersions"] = json!(["2025-06-18"]);
    let r = refused_by(Ok(d)).await;
    assert!(r.speaks_initialize, "{}", r.error);

    // The server's own failure is no evidence of anything.
    let r = refused_by(Err(RpcError {
        code: -32020,
        message: "Header mismatch".into(),
        data: None,
    }))
    .await;
    assert!(!r.speaks_initialize);
}

#[tokio::test(start_paused = true)]
async fn a_refusal_that_lists_our_revision_is_asked_once_more() {
    let (s, mut server) = stateless_session(SessionOptions::default());
    let s2 = s.clone();
    let discovered = tokio::spawn(async move { s2.discover().await.map_err(|r| r.error) });
    let first = next_request(&mut server).await;
    let refusal = RpcError {
        code: -32022,
        message: "Unsupported protocol version".into(),
        data: Some(json!({ "supported": ["2026-07-28"] })),
    };
    reply(&server, first.id.clone(), Err(refusal.clone())).await;
    let second = next_request(&mut server).await;
    assert_eq!(second.method, "server/discover");
    assert_ne!(second.id, first.id);
    reply(&server, second.id, Ok(discover_result())).await;
    discovered.await.unwrap().unwrap();

    // Only once: a server that keeps refusing gets the refusal.
    let s2 = s.clone();
    let listed = tokio::spawn(async move { s2.list_tools().await });
    for _ in 0..2 {
        let r = next_request(&mut server).await;
        reply(&server, r.id, Err(refusal.clone())).await;
    }
    let e = listed.await.unwrap().unwrap_err();
    assert_eq!(e.context().rpc_code, Some(-32022));
}

#[tokio::test(start_paused = true)]
async fn a_lost_stream_of_a_reading_request_is_asked_again_with_a_new_id() {
    let (s, mut server) = ready().await;
    let s2 = s.clone();
    let listed = tokio::spawn(async move { s2.list_tools().await });
    let first = next_request(&mut server).await;
    lose(&server, first.id.clone()).await;
    let again = next_request(&mut server).await;
    assert_eq!(again.method, "tools/list");
    assert_ne!(again.id, first.id);
    reply(&server, again.id, Ok(tools())).await;
    assert_eq!(listed.await.unwrap().unwrap().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_lost_tool_call_is_asked_again_only_when_the_tool_says_that_is_safe() {
    let (s, mut server) = ready().await;
    for tool in ["read", "again"] {
        let s2 = s.clone();
        let call = tokio::spawn(async move {
            s2.call_tool(tool, json!({}), RequestOptions::default())
                .await
        });
        let first = next_request(&mut server).await;
        lose(&server, first.id.clone()).await;
        let again = next_request(&mut server).await;
        assert_eq!(again.params.as_ref().unwrap()["name"], tool);
        assert_ne!(again.id, first.id);
        reply(&server, again.id, Ok(json!({ "content": [] }))).await;
        call.await.unwrap().unwrap();
    }

    let s2 = s.clone();
    let call = tokio::spawn(async move {
        s2.call_tool("write", json!({}), RequestOptions::default())
            .await
    });
    let first = next_request(&mut server).await;
    lose(&server, first.id).await;
    let e = call.await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::StreamLost);
    assert_eq!(e.context().phase, Some(Phase::Call));
    let m = e.message();
    assert!(
        m.contains("was not asked again")
            && m.contains("\"write\"")
            && m.contains("readOnlyHint")
            && m.contains("may have run on the server"),
        "{m}"
    );
    // Nothing else was sent.
    assert!(server.from_client.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_keeps_breaking_is_given_up_after_two_more_tries() {
    let (s, mut server) = ready().await;
    let s2 = s.clone();
    let listed = tokio::spawn(async move { s2.list_tools().await });
    for _ in 0..3 {
        let r = next_request(&mut server).await;
        lose(&server, r.id).await;
    }
    let e = listed.await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::StreamLost);
    assert!(e.message().contains("asking 2 more times"), "{e}");
    assert!(server.from_client.try_recv().is_err());
}

fn accept(content: Value) -> Handler {
    Arc::new(move |_params: Value| {
        let content = content.clone();
        Box::pin(async move { Ok(json!({ "action": "accept", "content": content })) })
    })
}

#[tokio::test(start_paused = true)]
async fn input_the_server_asks_for_is_given_and_the_request_asked_again() {
    let options = SessionOptions {
        elicitation: Some(accept(json!({ "name": "octocat" }))),
        ..SessionOptions::default()
    };
    let (s, mut server) = stateless_session(options);
    let s2 = s.clone();
    let call = tokio::spawn(async move {
        s2.call_tool("login", json!({ "x": 1 }), RequestOptions::default())
            .await
    });
    let first = next_request(&mut server).await;
    let elicit = json!({ "method": "elicitation/create", "params": {
        "mode": "form", "message": "who?", "requestedSchema": { "type": "object" } } });
    reply(
        &server,
        first.id.clone(),
        Ok(json!({
            "resultType": "input_required",
            "inputRequests": { "github_login": elicit },
            "requestState": "opaque-1",
        })),
    )
    .await;
    let second = next_request(&mut server).await;
    assert_ne!(second.id, first.id);
    let p = second.params.as_ref().unwrap();
    assert_eq!(p["name"], "login");
    assert_eq!(p["arguments"], json!({ "x": 1 }));
    assert_eq!(p["requestState"], "opaque-1");
    assert_eq!(
        p["inputResponses"],
        json!({ "github_login": { "action": "accept", "content": { "name": "octocat" } } })
    );
    assert_eq!(meta_version(&second), Some("2026-07-28"));
    // A second round without state: the next request carries none.
    reply(
        &server,
        second.id,
        Ok(json!({
            "resultType": "input_required",
            "inputRequests": { "again": elicit },
        })),
    )
    .await;
    let third = next_request(&mut server).await;
    let p = third.params.as_ref().unwrap();
    assert!(p.get("requestState").is_none(), "{p}");
    assert_eq!(p["inputResponses"].as_object().unwrap().len(), 1);
    reply(
        &server,
        third.id,
        Ok(json!({ "content": [{ "type": "text", "text": "hi octocat" }] })),
    )
    .await;
    let result = call.await.unwrap().unwrap();
    assert_eq!(result["content"][0]["text"], "hi octocat");
}

#[tokio::test(start_paused = true)]
async fn input_this_client_cannot_give_fails_the_request_clearly() {
    let (s, mut server) = stateless_session(SessionOptions::default());
    let s2 = s.clone();
    let call = tokio::spawn(async move {
        s2.call_tool("t", json!({}), RequestOptions::default())
            .await
    });
    let first = next_request(&mut server).await;
    reply(
        &server,
        first.id,
        Ok(json!({
            "resultType": "input_required",
            "inputRequests": { "k": { "method": "sampling/createMessage", "params": {} } },
        })),
    )
    .await;
    let e = call.await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol);
    assert!(e.message().contains("sampling/createMessage input"), "{e}");
}
