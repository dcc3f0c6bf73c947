//! The gateway against an in-process upstream (memory transport, a scripted server per
//! generation) and a host on an in-memory pipe, under paused time: answers, the
//! upstream's loss mid-call, and what is and is not sent again.

use super::{GatewayOptions, NOT_READY, UPSTREAM_LOST, serve_lines};
use crate::error::{Error, Stage};
use crate::events::EventBus;
use crate::protocol::{Message, RequestId, Response, RpcError};
use crate::supervisor::{Supervisor, SupervisorConfig};
use crate::transport::Incoming;
use crate::transport::memory::{self, ServerEnd};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// Every `tools/call` any generation received, by tool name.
pub(super) type Calls = Arc<Mutex<Vec<String>>>;

/// An upstream whose `die` tool ends its generation without answering, and whose `once`
/// tool does so only the first time; `peek` declares readOnlyHint.
pub(super) fn upstream(calls: Calls) -> Supervisor {
    upstream_named("mem", calls, &[])
}

/// `upstream` under another name, listing `listed` tools besides its own (the aggregated
/// endpoint's tests serve several, and route only what is listed).
pub(super) fn upstream_named(
    name: &str,
    calls: Calls,
    listed: &'static [&'static str],
) -> Supervisor {
    upstream_in(name, calls, listed, None)
}

/// `upstream_named` with tool pins (`SupervisorConfig::pins`).
pub(super) fn upstream_in(
    name: &str,
    calls: Calls,
    listed: &'static [&'static str],
    pins: Option<Arc<crate::pins::book::Book>>,
) -> Supervisor {
    scripted_in(name, None, pins, move |mut end, generation| {
        let calls = calls.clone();
        async move {
            while let Some(msg) = end.from_client.recv().await {
                let r = match msg {
                    Message::Request(r) => r,
                    Message::Notification(n) => {
                        calls.lock().unwrap().push(n.method);
                        continue;
                    }
                    Message::Response(_) => continue,
                };
                let tool = r
                    .params
                    .as_ref()
                    .and_then(|p| p["name"].as_str())
                    .unwrap_or("")
                    .to_owned();
                let result = match r.method.as_str() {
                    "initialize" => json!({"protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}, "resources": {"subscribe": true}},
                        "serverInfo": {"name": "mem", "version": "7"}, "instructions": "hi"}),
                    "tools/list" => {
                        let mut tools = json!([
                            {"name": "echo", "inputSchema": {"type": "object"},
                             "outputSchema": {"type": "object"}, "icons": [{"src": "data:,"}],
                             "_meta": {"ui": 1}},
                            {"name": "die", "inputSchema": {"type": "object"}},
                            {"name": "peek", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
                        ]);
                        if generation > 1 {
                            tools.as_array_mut().unwrap().push(json!({"name": "extra"}));
                        }
                        for name in listed {
                            let tool = json!({"name": name, "inputSchema": {"type": "object"}});
                            tools.as_array_mut().unwrap().push(tool);
                        }
                        json!({ "tools": tools })
                    }
                    "tools/call" => {
                        calls.lock().unwrap().push(tool.clone());
                        if tool == "hang" {
                            continue;
                        }
                        if tool == "prog" {
                            let token =
                                r.params.as_ref().unwrap()["_meta"]["progressToken"].clone();
                            for i in 1..=2 {
                                let p = json!({"progressToken": token, "progress": i, "total": 2});
                                let note = Message::notification("notifications/progress", Some(p));
                                tell(&end, note).await;
                            }
                        }
                        if tool == "notify" {
                            for (method, params) in [
                                (
                                    "notifications/message",
                                    json!({"level": "info", "logger": "l", "data": "hunter2 here"}),
                                ),
                                (
                                    "notifications/resources/updated",
                                    json!({"uri": "file:///a"}),
                                ),
                                ("notifications/prompts/list_changed", json!({})),
                                ("notifications/unknown", json!({})),
                            ] {
                                let note = Message::notification(method, Some(params));
                                tell(&end, note).await;
                            }
                        }
                        if tool == "flood" {
                            // `n` log messages of `size` bytes each, for a host that never reads.
                            let args = &r.params.as_ref().unwrap()["arguments"];
                            let n = args["n"].as_u64().unwrap_or(1);
                            let data = "x".repeat(args["size"].as_u64().unwrap_or(1) as usize);
                            for _ in 0..n {
                                let p = json!({"level": "info", "logger": "flood", "data": data});
                                let note = Message::notification("notifications/message", Some(p));
                                tell(&end, note).await;
                            }
                        }
                        if tool == "meta" {
                            let meta = r.params.as_ref().unwrap()["_meta"].clone();
                            let result = json!({"content": [], "structuredContent": meta});
                            respond(&end, r.id, Ok(result)).await;
                            continue;
                        }
                        if tool == "refuse" {
                            let refusal = RpcError {
                                code: -32602,
                                message: "bad arguments".into(),
                                data: Some(json!({"field": "x"})),
                            };
                            respond(&end, r.id, Err(refusal)).await;
                            continue;
                        }
                        if tool == "die" || (tool == "peek" && generation == 1) {
                            let cause = Error::transport("the server went away");
                            let _ = end.to_client.send(Incoming::Closed(cause)).await;
                            return;
                        }
                        json!({"content": [{"type": "text", "text": format!("{tool}@{generation}")}]})
                    }
                    "resources/list" => json!({"resources": []}),
                    "resources/subscribe" | "resources/unsubscribe" => {
                        let uri = r.params.as_ref().unwrap()["uri"].as_str().unwrap();
                        calls
                            .lock()
                            .unwrap()
                            .push(format!("{} {uri}@{generation}", r.method));
                        json!({})
                    }
                    _ => json!({}),
                };
                respond(&end, r.id, Ok(result)).await;
            }
        }
    })
}

/// A supervisor of the server `mem` whose every generation is an in-process server that
/// `serve` plays on its end, told which generation it is (from 1). It sends no pings, so
/// the server sees only what a test makes it see. With `hold`, the first attempt waits that
/// long for a host, as under `lifeline connect`.
pub(super) fn scripted<F>(
    hold: Option<Duration>,
    serve: impl Fn(ServerEnd, usize) -> F + Send + Sync + 'static,
) -> Supervisor
where
    F: Future<Output = ()> + Send + 'static,
{
    scripted_named("mem", hold, serve)
}

/// `scripted` under another name.
pub(super) fn scripted_named<F>(
    name: &str,
    hold: Option<Duration>,
    serve: impl Fn(ServerEnd, usize) -> F + Send + Sync + 'static,
) -> Supervisor
where
    F: Future<Output = ()> + Send + 'static,
{
    scripted_in(name, hold, None, serve)
}

/// `scripted_named` with tool pins.
pub(super) fn scripted_in<F>(
    name: &str,
    hold: Option<Duration>,
    pins: Option<Arc<crate::pins::book::Book>>,
    serve: impl Fn(ServerEnd, usize) -> F + Send + Sync + 'static,
) -> Supervisor
where
    F: Future<Output = ()> + Send + 'static,
{
    let opened = AtomicUsize::new(0);
    let connector = Arc::new(move || {
        let generation = opened.fetch_add(1, Ordering::SeqCst) + 1;
        let (conn, end) = memory::pair();
        tokio::spawn(serve(end, generation));
        Ok(conn)
    });
    let mut cfg = SupervisorConfig::new(name, Stage::Connect, connector);
    cfg.ping_interval = None;
    cfg.pins = pins;
    if let Some(wait) = hold {
        cfg.hosts.hold_first_attempt(wait);
    }
    Supervisor::spawn(cfg, Arc::new(EventBus::new(256)))
}

/// Sends the client `msg`; a client that is gone is no matter to a scripted server.
pub(super) async fn tell(end: &ServerEnd, msg: Message) {
    let _ = end.to_client.send(Incoming::Message(msg)).await;
}

/// Answers the client's request `id`.
pub(super) async fn respond(end: &ServerEnd, id: RequestId, outcome: Result<Value, RpcError>) {
    tell(end, Message::Response(Response { id, outcome })).await;
}

/// Sends one request and returns the whole answer (result or error), skipping
/// notifications, which are returned beside it.
pub(super) async fn ask(
    w: &mut (impl AsyncWriteExt + Unpin),
    r: &mut tokio::io::Lines<BufReader<impl tokio::io::AsyncRead + Unpin>>,
    id: i64,
    method: &str,
    params: Value,
) -> (Value, Vec<Value>) {
    let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    w.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    let mut notes = Vec::new();
    loop {
        let text = tokio::time::timeout(Duration::from_secs(600), r.next_line())
            .await
            .expect("an answer")
            .unwrap()
            .expect("the gateway closed");
        let v: Value = serde_json::from_str(&text).unwrap();
        if v.get("id") == Some(&json!(id)) {
            return (v, notes);
        }
        notes.push(v);
    }
}

fn gateway(
    sup: Arc<Supervisor>,
) -> (
    tokio::io::WriteHalf<DuplexStream>,
    tokio::io::Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
) {
    let (host, gw) = tokio::io::duplex(1 << 16);
    let (gw_read, gw_write) = tokio::io::split(gw);
    let options = GatewayOptions {
        request_wait: Duration::from_secs(5),
        ..GatewayOptions::default()
    };
    tokio::spawn(serve_lines(sup, gw_read, gw_write, options));
    let (host_read, host_write) = tokio::io::split(host);
    (host_write, BufReader::new(host_read).lines())
}

#[tokio::test(start_paused = true)]
async fn the_host_gets_the_servers_answers() {
    let calls = Calls::default();
    let sup = Arc::new(upstream(calls.clone()));
    let (mut w, mut r) = gateway(sup.clone());
    let (init, _) = ask(
        &mut w,
        &mut r,
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18"}),
    )
    .await;
    let init = &init["result"];
    assert_eq!(init["serverInfo"]["name"], "mem");
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(init["instructions"], "hi");
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(init["capabilities"]["resources"]["subscribe"], true);
    assert_eq!(
        ask(&mut w, &mut r, 2, "ping", json!({})).await.0["result"],
        json!({})
    );
    let (list, _) = ask(&mut w, &mut r, 3, "tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 3);
    let (call, _) = ask(
        &mut w,
        &mut r,
        4,
        "tools/call",
        json!({"name": "echo", "arguments": {}}),
    )
    .await;
    assert_eq!(call["result"]["content"][0]["text"], "echo@1");
    let (res, _) = ask(&mut w, &mut r, 5, "resources/list", json!({})).await;
    assert_eq!(res["result"], json!({"resources": []}));
}

#[tokio::test(start_paused = true)]
async fn the_servers_notifications_reach_the_host_scrubbed() {
    let options = GatewayOptions {
        redactor: crate::redact::Redactor::new(["hunter2"]),
        ..GatewayOptions::default()
    };
    let sup = Arc::new(upstream(Calls::default()));
    let (host, gw) = tokio::io::duplex(1 << 16);
    let (gw_read, gw_write) = tokio::io::split(gw);
    tokio::spawn(serve_lines(sup.clone(), gw_read, gw_write, options));
    let (host_read, mut w) = tokio::io::split(host);
    let mut r = BufReader::new(host_read).lines();
    ask(&mut w, &mut r, 1, "initialize", json!({})).await;
    let (_, mut notes) = ask(&mut w, &mut r, 2, "tools/call", json!({"name": "notify"})).await;
    // The notifications travel beside the answer: read on until the three are in.
    while notes.len() < 3 {
        let line = tokio::time::timeout(Duration::from_secs(600), r.next_line())
            .await
            .expect("the notifications")
            .unwrap()
            .expect("the gateway closed");
        notes.push(serde_json::from_str(&line).unwrap());
    }
    let methods: Vec<_> = notes
        .iter()
        .map(|n| n["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/message",
            "notifications/resources/updated",
            "notifications/prompts/list_changed"
        ]
    );
    assert_eq!(notes[0]["params"]["level"], "info");
    assert_eq!(notes[0]["params"]["logger"], "l");
    assert!(!notes[0].to_string().contains("hunter2"), "{}", notes[0]);
    assert_eq!(notes[1]["params"]["uri"], "file:///a");
}

#[tokio::test(start_paused = true)]
async fn the_hosts_subscriptions_are_made_again_after_a_reconnect() {
    let calls = Calls::default();
    let sup = Arc::new(upstream(calls.clone()));
    let (mut w, mut r) = gateway(sup.clone());
    ask(&mut w, &mut r, 1, "initialize", json!({})).await;
    for (id, uri) in [(2, "file:///a"), (3, "file:///b")] {
        let (ok, _) = ask(
            &mut w,
            &mut r,
            id,
            "resources/subscribe",
            json!({"uri": uri}),
        )
        .await;
        assert_eq!(ok["result"], json!({}), "{ok}");
    }
    let params = json!({"uri": "file:///b"});
    ask(&mut w, &mut r, 4, "resources/unsubscribe", params).await;
    ask(&mut w, &mut r, 5, "tools/call", json!({"name": "die"})).await;
    let again = "resources/subscribe file:///a@2";
    seen_upstream(&calls, again).await;
    let seen: Vec<String> = calls.lock().unwrap().clone();
    assert!(seen.iter().any(|c| c == again), "{seen:?}");
    assert!(
        !seen.iter().any(|c| c == "resources/subscribe file:///b@2"),
        "{seen:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn tools_errors_and_meta_pass_through_unchanged() {
    let sup = Arc::new(upstream(Calls::default()));
    let (mut w, mut r) = gateway(sup.clone());
    ask(&mut w, &mut r, 1, "initialize", json!({})).await;
    // Every field the server listed reaches the host, not only the parsed ones.
    let (list, _) = ask(&mut w, &mut r, 2, "tools/list", json!({})).await;
    let echo = &list["result"]["tools"][0];
    assert_eq!(echo["outputSchema"], json!({"type": "object"}), "{list}");
    assert_eq!(echo["icons"][0]["src"], "data:,", "{list}");
    assert_eq!(echo["_meta"], json!({"ui": 1}), "{list}");
    // The server's error keeps its data.
    let (refused, _) = ask(&mut w, &mut r, 3, "tools/call", json!({"name": "refuse"})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["data"], json!({"field": "x"}), "{refused}");
    // The host's _meta reaches the server; its progressToken is the session's own.
    let params = json!({"name": "meta", "_meta": {"trace": "t1", "progressToken": "host"}});
    let (meta, _) = ask(&mut w, &mut r, 4, "tools/call", params).await;
    let seen = &meta["result"]["structuredContent"];
    assert_eq!(seen["trace"], "t1", "{meta}");
    assert_ne!(seen["progressToken"], "host", "{meta}");
}

#[tokio::test(start_paused = true)]
async fn a_call_in_flight_at_a_loss_fails_at_once_and_is_not_sent_again() {
    let calls = Calls::default();
    let sup = Arc::new(upstream(calls.clone()));
    let (mut w, mut r) = gateway(sup.clone());
    ask(&mut w, &mut r, 1, "initialize", json!({})).await;
    let (died, _) = ask(&mut w, &mut r, 2, "tools/call", json!({"name": "die"})).await;
    let err = &died["error"];
    assert_eq!(err["code"], UPSTREAM_LOST, "{died}");
    assert_eq!(err["data"]["kind"], "transport", "{died}");
    assert!(
        err["message"].as_str().unwrap().contains("readOnlyHint"),
        "{died}"
    );
    // The host's session is still open: the next call runs on the next generation.
    let (next, _) = ask(&mut w, &mut r, 3, "tools/call", json!({"name": "echo"})).await;
    assert_eq!(next["result"]["content"][0]["text"], "echo@2", "{next}");
    assert_eq!(
        *calls.lock().unwrap(),
        [
            "notifications/initialized",
            "die",
            "notifications/initialized",
            "echo"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_read_only_call_lost_with_its_generation_is_sent_again() {
    let calls = Calls::default();
    let sup = Arc::new(upstream(calls.clone()));
    let (mut w, mut r) = gateway(sup.clone());
    ask(&mut w, &mut r, 1, "initialize", json!({})).await;
    ask(&mut w, &mut r, 2, "tools/list", json!({})).await;
    let (peek, _) = ask(&mut w, &mut r, 3, "tools/call", json!({"name": "peek"})).await;
    assert_eq!(peek["result"]["content"][0]["text"], "peek@2", "{peek}");
    let seen = calls.lock().unwrap().clone();
    assert_eq!(seen.iter().filter(|c| *c == "peek").count(), 2, "{seen:?}");
}

#[tokio::test(start_paused = true)]
async fn the_host_hears_when_the_tool_set_changed_after_a_reconnect() {
    let sup = Arc::new(upstream(Calls::default()));
    let (mut w, mut r) = gateway(sup.clone());
    ask(&mut w, &mut r, 1, "initialize", json!({})).await;
    let (list, _) = ask(&mut w, &mut r, 2, "tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 3);
    ask(&mut w, &mut r, 3, "tools/call", json!({"name": "die"})).await;
    let mut heard = 0;
    for id in 4..8 {
        let (_, notes) = ask(&mut w, &mut r, id, "tools/call", json!({"name": "echo"})).await;
        heard += notes
            .iter()
            .filter(|n| n["method"] == "notifications/tools/list_changed")
            .count();
    }
    assert_eq!(heard, 1, "one list_changed for the one change");
    let (list, _) = ask(&mut w, &mut r, 9, "tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_held_tool_is_not_listed_its_call_is_refused_and_approval_tells_the_host() {
    // `mem` was pinned long ago (its first sight's minute is over) with its first tools.
    let book = Arc::new(crate::pins::book::Book::open(None, ["mem"]).0);
    let first = [
        json!({"name": "echo", "inputSchema": {"type": "object"}}),
        json!({"name": "die", "inputSchema": {"type": "object"}}),
        json!({"name": "peek", "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}}),
    ];
    book.judge("mem", &first, 1);
    let calls = Calls::default();
    let sup = Arc::new(upstream_in("mem", calls.clone(), &[], Some(book.clone())));
    let (mut w, mut r) = gateway(sup.clone());
    ask(&mut w, &mut r, 1, "initialize", json!({})).await;
    // `echo` as listed differs from its pin (`outputSchema`, `_meta` aside): held too.
    let (list, _) = ask(&mut w, &mut r, 2, "tools/list", json!({})).await;
    let names = |list: &Value| -> Vec<String> {
        (list["result"]["tools"].as_array().unwrap().iter())
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&list), ["die", "peek"]);
    // The next generation lists `extra`, new to a pinned server: held, and refused.
    ask(&mut w, &mut r, 3, "tools/call", json!({"name": "die"})).await;
    sup.wait_for(|s| s.generation.0 == 2 && s.tools_held == 2)
        .await;
    let (refused, _) = ask(&mut w, &mut r, 4, "tools/call", json!({"name": "extra"})).await;
    let error = &refused["error"];
    assert_eq!(error["code"], super::errors::TOOL_HELD, "{refused}");
    assert_eq!(
        error["data"],
        json!({"server": "mem", "tool": "extra", "held": "new", "review": "lifeline tools review mem"})
    );
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("`mem`") && message.contains("`extra`"),
        "{message}"
    );
    assert!(message.contains("lifeline tools review mem"), "{message}");
    let (refused, _) = ask(&mut w, &mut r, 5, "tools/call", json!({"name": "echo"})).await;
    assert_eq!(refused["error"]["data"]["held"], "changed", "{refused}");
    assert!(
        !calls.lock().unwrap().contains(&"extra".to_owned()),
        "never sent"
    );

    // Approved (here, or read from the file in another process): one list_changed, and
    // the list has both.
    book.approve("mem", "extra", 2).unwrap();
    book.approve("mem", "echo", 2).unwrap();
    sup.wait_for(|s| s.tools_held == 0).await;
    let (_, notes) = ask(&mut w, &mut r, 6, "ping", json!({})).await;
    let told = notes
        .iter()
        .filter(|n| n["method"] == "notifications/tools/list_changed")
        .count();
    assert_eq!(told, 1, "{notes:?}");
    let (list, _) = ask(&mut w, &mut r, 7, "tools/list", json!({})).await;
    assert_eq!(names(&list), ["echo", "die", "peek", "extra"]);
    let (called, _) = ask(&mut w, &mut r, 8, "tools/call", json!({"name": "extra"})).await;
    assert_eq!(
        called["result"]["content"][0]["text"], "extra@2",
        "{called}"
    );
}

#[tokio::test(start_paused = true)]
async fn progress_reaches_the_host_and_its_cancel_reaches_the_server() {
    let calls = Calls::default();
    let sup = Arc::new(upstream(calls.clone()));
    let (mut w, mut r) = gateway(sup.clone());
    ask(&mut w, &mut r, 1, "initialize", json!({})).await;
    let params = json!({"name": "prog", "_meta": {"progressToken": "host-7"}});
    let (done, notes) = ask(&mut w, &mut r, 2, "tools/call", params).await;
    assert!(done.get("result").is_some(), "{done}");
    let progress: Vec<_> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| {
            (
                n["params"]["progressToken"].clone(),
                n["params"]["progress"].clone(),
            )
        })
        .collect();
    assert_eq!(
        progress,
        [(json!("host-7"), json!(1.0)), (json!("host-7"), json!(2.0))]
    );

    let hang =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "hang"}});
    w.write_all(format!("{hang}\n").as_bytes()).await.unwrap();
    seen_upstream(&calls, "hang").await;
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}});
    w.write_all(format!("{cancel}\n").as_bytes()).await.unwrap();
    // No answer to the cancelled request: the next answer is the ping's.
    let (pong, notes) = ask(&mut w, &mut r, 4, "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
    assert!(notes.iter().all(|n| n.get("id").is_none()), "{notes:?}");
    seen_upstream(&calls, "notifications/cancelled").await;
}

/// Waits (paused time, bounded) until the upstream received `what`.
pub(super) async fn seen_upstream(calls: &Calls, what: &str) {
    let seen = async {
        while !calls.lock().unwrap().iter().any(|c| c == what) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), seen)
        .await
        .unwrap_or_else(|_| panic!("the upstream never received {what}"));
}

#[tokio::test(start_paused = true)]
async fn a_quarantined_server_is_reported_as_soon_as_it_is() {
    let connector = Arc::new(|| Err(Error::transport("connection refused")));
    let mut cfg = SupervisorConfig::new("flaky", Stage::Connect, connector);
    cfg.ping_interval = None;
    cfg.policy.backoff =
        crate::policy::Backoff::try_new(Duration::from_millis(10), Duration::from_millis(20), 2)
            .unwrap();
    let sup = Arc::new(Supervisor::spawn(cfg, Arc::new(EventBus::new(64))));
    let (mut w, mut r) = gateway(sup);
    let (call, _) = ask(&mut w, &mut r, 1, "tools/call", json!({"name": "echo"})).await;
    let e = &call["error"];
    assert_eq!(e["code"], super::HALTED, "{call}");
    assert_eq!(e["data"]["state"], "quarantined", "{call}");
    assert!(
        e["message"].as_str().unwrap().contains("Press Reconnect"),
        "{call}"
    );
    assert_eq!(e["data"]["kind"], "transport", "{call}");
}

#[tokio::test(start_paused = true)]
async fn a_disabled_server_is_reported_at_once_and_never_ready_waits_then_fails() {
    let connector = Arc::new(|| Err(Error::transport("refused")));
    let mut cfg = SupervisorConfig::new("off", Stage::Connect, connector.clone());
    cfg.disabled = true;
    let sup = Arc::new(Supervisor::spawn(cfg, Arc::new(EventBus::new(16))));
    let (mut w, mut r) = gateway(sup);
    let (init, _) = ask(&mut w, &mut r, 1, "initialize", json!({})).await;
    assert_eq!(
        init["result"]["serverInfo"]["name"], "lifeline:off",
        "{init}"
    );
    let (call, _) = ask(&mut w, &mut r, 2, "tools/call", json!({"name": "echo"})).await;
    assert_eq!(call["error"]["code"], super::HALTED, "{call}");
    assert!(
        call["error"]["message"]
            .as_str()
            .unwrap()
            .contains("disabled"),
        "{call}"
    );

    let mut cfg = SupervisorConfig::new("down", Stage::Connect, connector);
    cfg.ping_interval = None;
    let sup = Arc::new(Supervisor::spawn(cfg, Arc::new(EventBus::new(16))));
    let (mut w, mut r) = gateway(sup);
    let (call, _) = ask(&mut w, &mut r, 1, "tools/call", json!({"name": "echo"})).await;
    assert_eq!(call["error"]["code"], NOT_READY, "{call}");
    assert_eq!(call["error"]["data"]["kind"], "transport", "{call}");
    assert!(
        call["error"]["message"]
            .as_str()
            .unwrap()
            .contains("waited 5 s"),
        "{call}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_session_ends_with_the_hosts_input_and_lets_go_of_the_supervisor() {
    let calls = Calls::default();
    let sup = Arc::new(upstream(calls.clone()));
    let (host, gw) = tokio::io::duplex(1 << 16);
    let (gw_read, gw_write) = tokio::io::split(gw);
    let serving = tokio::spawn(serve_lines(
        sup.clone(),
        gw_read,
        gw_write,
        GatewayOptions::default(),
    ));
    let (host_read, mut host_write) = tokio::io::split(host);
    let mut lines = BufReader::new(host_read).lines();
    ask(&mut host_write, &mut lines, 1, "initialize", json!({})).await;
    // A call that never ends is in flight when the host leaves.
    let hang =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hang"}});
    host_write
        .write_all(format!("{hang}\n").as_bytes())
        .await
        .unwrap();
    seen_upstream(&calls, "hang").await;
    drop(host_write);
    drop(lines);
    tokio::time::timeout(Duration::from_secs(30), serving)
        .await
        .expect("the session ended")
        .unwrap();
    seen_upstream(&calls, "notifications/cancelled").await;
    let sup = Arc::try_unwrap(sup).unwrap_or_else(|_| panic!("the gateway still holds it"));
    sup.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_host_and_its_calls_are_recorded() {
    use crate::events::{EventBody, HostMode};
    let bus = Arc::new(EventBus::new(64));
    let mut events = bus.subscribe();
    let hosts = super::hosts::Hosts::new(bus, HostMode::InProcess);
    let options = GatewayOptions {
        hosts: Some(hosts.clone()),
        ..GatewayOptions::default()
    };
    let sup = Arc::new(upstream(Calls::default()));
    let (host, gw) = tokio::io::duplex(1 << 16);
    let (gw_read, gw_write) = tokio::io::split(gw);
    let served = tokio::spawn(serve_lines(sup.clone(), gw_read, gw_write, options));
    let (host_read, mut w) = tokio::io::split(host);
    let mut r = BufReader::new(host_read).lines();
    let init = json!({"protocolVersion": "2025-03-26",
        "clientInfo": {"name": "inspector", "version": "0.9"}});
    ask(&mut w, &mut r, 1, "initialize", init).await;
    ask(&mut w, &mut r, 2, "tools/call", json!({"name": "echo"})).await;
    ask(&mut w, &mut r, 3, "tools/call", json!({"name": "refuse"})).await;
    let view = hosts.view("mem", std::time::SystemTime::now());
    assert_eq!(view.hosts.len(), 1);
    let attached = &view.hosts[0].host;
    assert_eq!(
        (attached.name.as_str(), attached.version.as_str()),
        ("inspector", "0.9")
    );
    assert_eq!(
        (attached.protocol_version.as_str(), attached.mode),
        ("2025-03-26", HostMode::InProcess)
    );
    assert_eq!((view.tools.len(), view.live_calls), (2, 0));
    assert_eq!((view.tools[0].calls, view.tools[0].errors), (1, 0));
    assert_eq!(view.tools[1].tool, "refuse");
    assert_eq!(view.tools[1].errors, 1);
    drop((w, r));
    tokio::time::timeout(Duration::from_secs(600), served)
        .await
        .expect("the session ends when the host closes")
        .unwrap();
    assert_eq!(
        hosts.view("mem", std::time::SystemTime::now()).hosts,
        vec![]
    );
    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        match e.body {
            EventBody::HostAttached { host } => seen.push(format!("attached {}", host.name)),
            EventBody::HostCall {
                tool,
                outcome,
                error_kind,
                ..
            } => seen.push(format!("{tool} {outcome:?} {error_kind:?}")),
            EventBody::HostDetached { host } => seen.push(format!("detached {}", host.name)),
            _ => {}
        }
    }
    assert_eq!(
        seen,
        [
            "attached inspector",
            "echo Ok None",
            "refuse Error Some(\"rpc_error\")",
            "detached inspector"
        ]
    );
}
