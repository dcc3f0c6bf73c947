//! Session timing and correlation under paused tokio time, against the in-process
//! transport: exact timeouts, progress resets, the hard cap, cancellation, late answers,
//! and what happens to waiting requests when the connection ends.

use super::*;
use crate::protocol::{Message, Response};
use crate::transport::Incoming;
use crate::transport::memory::{self, ServerEnd};
use tokio::time::{Instant, advance};

const T: Duration = Duration::from_secs(60);

fn session(options: SessionOptions) -> (Arc<Session>, ServerEnd) {
    let (conn, server) = memory::pair();
    (Arc::new(Session::start(conn, options)), server)
}

// What a test's server does on its end of the in-process transport; the session's other
// test modules (`listen`, `server_requests`, `stateless_tests`) play their servers with
// these too.

/// The next message the client sent.
pub(super) async fn next(server: &mut ServerEnd) -> Message {
    server
        .from_client
        .recv()
        .await
        .expect("the client sent a message")
}

/// The next message the client sent, a request.
pub(super) async fn next_request(server: &mut ServerEnd) -> crate::protocol::Request {
    match next(server).await {
        Message::Request(r) => r,
        other => panic!("expected a request, got {other:?}"),
    }
}

/// The next message the client sent, an answer to one of the server's requests.
pub(super) async fn next_response(server: &mut ServerEnd) -> Response {
    match next(server).await {
        Message::Response(r) => r,
        other => panic!("expected a response, got {other:?}"),
    }
}

fn request_id(m: &Message) -> RequestId {
    match m {
        Message::Request(r) => r.id.clone(),
        other => panic!("expected a request, got {other:?}"),
    }
}

/// Sends `msg` to the client.
pub(super) async fn send(server: &ServerEnd, msg: Message) {
    server.to_client.send(Incoming::Message(msg)).await.unwrap();
}

pub(super) async fn reply(server: &ServerEnd, id: RequestId, outcome: Result<Value, RpcError>) {
    send(server, Message::Response(Response { id, outcome })).await;
}

/// The response stream of request `id` broke before its answer.
pub(super) async fn lose(server: &ServerEnd, id: RequestId) {
    let error = Error::new(ErrorKind::StreamLost, "the response stream ended");
    let failed = Incoming::RequestFailed { id, error };
    server.to_client.send(failed).await.unwrap();
}

async fn progress(server: &ServerEnd, token: &RequestId, n: f64) {
    let params = json!({ "progressToken": token, "progress": n });
    let note = Message::notification("notifications/progress", Some(params));
    send(server, note).await;
}

/// Spawns a tools/call and returns its handle with the id the server saw.
async fn start_call(
    s: &Arc<Session>,
    server: &mut ServerEnd,
) -> (
    tokio::task::JoinHandle<Result<Value, Error>>,
    RequestId,
    Instant,
) {
    let s2 = s.clone();
    let started = Instant::now();
    let h = tokio::spawn(async move {
        s2.call_tool("t", json!({}), RequestOptions::default())
            .await
    });
    let id = request_id(&next(server).await);
    (h, id, started)
}

#[tokio::test(start_paused = true)]
async fn a_call_never_answered_times_out_at_exactly_the_timeout_and_is_cancelled() {
    let (s, mut server) = session(SessionOptions::default());
    let (h, id, started) = start_call(&s, &mut server).await;
    let err = h.await.unwrap().unwrap_err();
    assert_eq!(Instant::now() - started, T);
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(
        err.message().contains("sent notifications/cancelled"),
        "{err}"
    );
    let Message::Notification(n) = next(&mut server).await else {
        panic!("expected cancelled")
    };
    assert_eq!(n.method, "notifications/cancelled");
    assert_eq!(
        n.params.unwrap()["requestId"],
        serde_json::to_value(&id).unwrap()
    );
}

#[tokio::test(start_paused = true)]
async fn progress_restarts_the_timeout() {
    let (s, mut server) = session(SessionOptions::default());
    let (h, id, started) = start_call(&s, &mut server).await;
    advance(Duration::from_secs(50)).await;
    progress(&server, &id, 1.0).await;
    let err = h.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(Instant::now() - started, Duration::from_secs(110));
}

#[tokio::test(start_paused = true)]
async fn progress_cannot_extend_past_the_hard_cap() {
    let (s, mut server) = session(SessionOptions::default());
    let (h, id, started) = start_call(&s, &mut server).await;
    // Progress every 50 s up to 550 s: without the cap the call would live forever.
    for i in 0..11 {
        advance(Duration::from_secs(50)).await;
        progress(&server, &id, f64::from(i)).await;
    }
    let err = h.await.unwrap().unwrap_err();
    assert_eq!(Instant::now() - started, Duration::from_secs(600));
    assert!(err.message().contains("hard cap"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn late_answers_are_ignored_and_the_session_goes_on() {
    let (s, mut server) = session(SessionOptions {
        request_timeout: Duration::from_secs(5),
        ..Default::default()
    });
    let (h, id, _) = start_call(&s, &mut server).await;
    assert!(h.await.unwrap().is_err());
    let _cancelled = next(&mut server).await;
    reply(&server, id, Ok(json!({"late": true}))).await;
    let (h, id2, _) = start_call(&s, &mut server).await;
    reply(&server, id2, Ok(json!({"content": []}))).await;
    assert_eq!(h.await.unwrap().unwrap(), json!({"content": []}));
}

#[tokio::test(start_paused = true)]
async fn concurrent_requests_are_correlated_by_id() {
    let (s, mut server) = session(SessionOptions::default());
    let (h1, id1, _) = start_call(&s, &mut server).await;
    let (h2, id2, _) = start_call(&s, &mut server).await;
    assert_ne!(id1, id2);
    reply(&server, id2, Ok(json!(2))).await;
    reply(&server, id1, Ok(json!(1))).await;
    assert_eq!(h1.await.unwrap().unwrap(), json!(1));
    assert_eq!(h2.await.unwrap().unwrap(), json!(2));
}

#[tokio::test(start_paused = true)]
async fn when_the_connection_ends_waiting_requests_fail_at_once_and_later_ones_are_refused() {
    let (s, mut server) = session(SessionOptions::default());
    let (h, _, started) = start_call(&s, &mut server).await;
    let cause = Error::new(ErrorKind::StreamLost, "the stream was lost");
    server
        .to_client
        .send(Incoming::Closed(cause))
        .await
        .unwrap();
    let err = h.await.unwrap().unwrap_err();
    assert_eq!(
        Instant::now(),
        started,
        "failed at once, not at the timeout"
    );
    assert_eq!(err.kind(), ErrorKind::StreamLost);
    assert!(err.message().contains("the stream was lost"));
    let err = s
        .call_tool("t", json!({}), RequestOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_transport_closed());
    assert_eq!(err.kind(), ErrorKind::StreamLost);
    assert!(
        server.from_client.try_recv().is_err(),
        "nothing was sent after the close"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_request_fails_only_itself() {
    let (s, mut server) = session(SessionOptions::default());
    let (h1, id1, _) = start_call(&s, &mut server).await;
    let (h2, id2, _) = start_call(&s, &mut server).await;
    let error = Error::new(ErrorKind::RateLimited, "slow down");
    server
        .to_client
        .send(Incoming::RequestFailed { id: id1, error })
        .await
        .unwrap();
    assert_eq!(
        h1.await.unwrap().unwrap_err().kind(),
        ErrorKind::RateLimited
    );
    reply(&server, id2, Ok(json!("ok"))).await;
    assert_eq!(h2.await.unwrap().unwrap(), json!("ok"));
}

#[tokio::test(start_paused = true)]
async fn calls_carry_a_progress_token_and_progress_reaches_the_caller() {
    let (s, mut server) = session(SessionOptions::default());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let s2 = s.clone();
    let h = tokio::spawn(async move {
        s2.call_tool(
            "t",
            json!({"x": 1}),
            RequestOptions {
                progress: Some(tx),
                ..Default::default()
            },
        )
        .await
    });
    let Message::Request(r) = next(&mut server).await else {
        panic!()
    };
    let params = r.params.unwrap();
    assert_eq!(
        params["_meta"]["progressToken"],
        serde_json::to_value(&r.id).unwrap()
    );
    assert_eq!(params["arguments"], json!({"x": 1}));
    progress(&server, &r.id, 0.5).await;
    assert_eq!(rx.recv().await.unwrap().progress, 0.5);
    reply(&server, r.id, Ok(json!({}))).await;
    h.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn json_rpc_errors_are_typed_and_scrubbed() {
    let (s, mut server) = session(SessionOptions::default());
    let (h, id, _) = start_call(&s, &mut server).await;
    let e = RpcError {
        code: -32602,
        message: "bad args Bearer abcdefgh1234".into(),
        data: None,
    };
    reply(&server, id, Err(e)).await;
    let err = h.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    assert_eq!(err.context().rpc_code, Some(-32602));
    assert!(err.message().contains("bad args Bearer ***"), "{err}");
    let (h, id, _) = start_call(&s, &mut server).await;
    reply(
        &server,
        id,
        Err(RpcError {
            code: -32000,
            message: "db down".into(),
            data: None,
        }),
    )
    .await;
    assert_eq!(h.await.unwrap().unwrap_err().kind(), ErrorKind::Server);
}

/// Sends a server→client request and returns the client's answer.
async fn ask(server: &mut ServerEnd, method: &str) -> Result<Value, RpcError> {
    let id = RequestId::String(format!("srv-{method}"));
    send(
        server,
        Message::request(id.clone(), method, Some(json!({}))),
    )
    .await;
    let r = next_response(server).await;
    assert_eq!(r.id, id);
    r.outcome
}

#[tokio::test(start_paused = true)]
async fn server_requests_are_answered_only_when_opted_in() {
    let (_s, mut server) = session(SessionOptions::default());
    assert_eq!(ask(&mut server, "ping").await, Ok(json!({})));
    for m in [
        "roots/list",
        "elicitation/create",
        "sampling/createMessage",
        "tasks/whatever",
    ] {
        assert_eq!(
            ask(&mut server, m).await.unwrap_err().code,
            RpcError::METHOD_NOT_FOUND,
            "{m}"
        );
    }
    let handler: Handler = Arc::new(|_| Box::pin(async { Ok(json!({"action": "decline"})) }));
    let options = SessionOptions {
        roots: Some(vec![json!({"uri": "file:///w"})]),
        elicitation: Some(handler),
        ..Default::default()
    };
    let (_s, mut server) = session(options);
    assert_eq!(
        ask(&mut server, "roots/list").await,
        Ok(json!({"roots": [{"uri": "file:///w"}]}))
    );
    assert_eq!(
        ask(&mut server, "elicitation/create").await,
        Ok(json!({"action": "decline"}))
    );
    assert!(ask(&mut server, "sampling/createMessage").await.is_err());
}

#[tokio::test(start_paused = true)]
async fn initialize_is_never_cancelled_and_a_stalled_one_ends_at_the_timeout() {
    let (conn, mut server) = memory::pair();
    let started = Instant::now();
    let connect = tokio::spawn(Session::connect(conn, SessionOptions::default()));
    let Message::Request(init) = next(&mut server).await else {
        panic!()
    };
    assert_eq!(init.method, "initialize");
    let err = connect
        .await
        .unwrap()
        .err()
        .expect("a stalled initialize fails");
    assert_eq!(Instant::now() - started, T);
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(err.context().stage, Some(Stage::Initialize));
    assert_eq!(err.context().phase, Some(Phase::Connect));
    assert!(
        server.from_client.try_recv().is_err(),
        "no notifications/cancelled for initialize"
    );
}

#[tokio::test(start_paused = true)]
async fn handshake_negotiates_and_refuses_unknown_versions() {
    async fn handshake(version: &str) -> (Result<Session, Error>, Vec<String>) {
        let (conn, mut server) = memory::pair();
        let connect = tokio::spawn(Session::connect(conn, SessionOptions::default()));
        let id = request_id(&next(&mut server).await);
        let result = json!({"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}});
        reply(&server, id, Ok(result)).await;
        let r = connect.await.unwrap();
        let mut sent = Vec::new();
        while let Ok(m) = server.from_client.try_recv() {
            sent.push(m.method().unwrap_or("response").to_owned());
        }
        (r, sent)
    }
    for v in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let (r, sent) = handshake(v).await;
        assert_eq!(r.unwrap().server().unwrap().protocol_version, v);
        assert_eq!(sent, ["notifications/initialized"]);
    }
    let (r, sent) = handshake("2024-10-07").await;
    let err = r.err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    assert!(err.message().contains("\"2024-10-07\""), "{err}");
    assert!(
        sent.is_empty(),
        "no initialized after a refused version: {sent:?}"
    );
}

#[tokio::test]
async fn a_pinned_revision_is_offered_and_required() {
    let (conn, mut server) = memory::pair();
    let options = SessionOptions {
        pinned: Some(crate::protocol::revision::Revision::V2025_06_18),
        ..Default::default()
    };
    let connect = tokio::spawn(Session::connect(conn, options));
    let init = next(&mut server).await;
    let Message::Request(r) = &init else {
        panic!("initialize is a request: {init:?}")
    };
    assert_eq!(r.params.as_ref().unwrap()["protocolVersion"], "2025-06-18");
    let id = request_id(&init);
    let result = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}});
    reply(&server, id, Ok(result)).await;
    let err = connect.await.unwrap().err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    assert!(
        err.message().contains("pinned to 2025-06-18") && err.message().contains("\"auto\""),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_a_call_cancels_it() {
    let (s, mut server) = session(SessionOptions::default());
    let (h, id, _) = start_call(&s, &mut server).await;
    h.abort();
    let _ = h.await;
    let Message::Notification(n) = next(&mut server).await else {
        panic!()
    };
    assert_eq!(n.method, "notifications/cancelled");
    assert_eq!(
        n.params.unwrap()["requestId"],
        serde_json::to_value(&id).unwrap()
    );
}

#[tokio::test(start_paused = true)]
async fn pagination_follows_cursors_and_stops_on_a_loop() {
    let (s, mut server) = session(SessionOptions::default());
    let s2 = s.clone();
    let h = tokio::spawn(async move { s2.list_tools().await });
    let pages = [
        json!({"tools":[{"name":"a"}],"nextCursor":"p2"}),
        json!({"tools":[{"name":"b"}]}),
    ];
    for (i, page) in pages.into_iter().enumerate() {
        let Message::Request(r) = next(&mut server).await else {
            panic!()
        };
        assert_eq!(
            r.params.as_ref().and_then(|p| p.get("cursor")).is_some(),
            i > 0
        );
        reply(&server, r.id, Ok(page)).await;
    }
    let names: Vec<String> = h
        .await
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["a", "b"]);

    let s2 = s.clone();
    let h = tokio::spawn(async move { s2.list_tools().await });
    for _ in 0..2 {
        let id = request_id(&next(&mut server).await);
        reply(&server, id, Ok(json!({"tools":[],"nextCursor":"same"}))).await;
    }
    assert!(
        h.await
            .unwrap()
            .unwrap_err()
            .message()
            .contains("repeats a cursor")
    );
}
