//! The upstream's requests to the host through the gateway, in process under paused time:
//! a scripted upstream whose `ask` tool sends the client a request and answers the call
//! with the client's answer; hosts on in-memory pipes. Capability re-initialization,
//! relay and answer, the host's silence (timeout, then `cancelled`), the server's own
//! cancel passed on, refusal without the capability, routing between two hosts,
//! `roots/list_changed` upstream, and the `id: null` answer to a line that is not JSON-RPC.

use crate::events::Generation;
use crate::events::StateName;
use crate::gateway::tests::{respond, scripted, tell};
use crate::gateway::{GatewayOptions, serve_lines};
use crate::protocol::{Message, RequestId};
use crate::supervisor::Supervisor;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// What the upstream saw: each generation's `initialize` capabilities, the client's
/// notifications, and the answers it got to its own requests.
#[derive(Default)]
struct Seen {
    capabilities: Vec<Value>,
    notes: Vec<String>,
    answers: Vec<Value>,
}

type Log = Arc<Mutex<Seen>>;

/// `ask {method}` sends the client `method` (id `s-N`) and answers the call with the
/// client's answer; `cancel_asks` sends `notifications/cancelled` for every request still
/// unanswered, answers those calls "cancelled", and itself "ok".
fn upstream(log: Log) -> Supervisor {
    upstream_with(log, false)
}

/// `upstream`, its first attempt held for a host when `hold` (as `lifeline connect` does).
fn upstream_with(log: Log, hold: bool) -> Supervisor {
    let hold = hold.then_some(Duration::from_secs(5));
    scripted(hold, move |mut end, _| {
        let log = log.clone();
        async move {
            // The server's request id → the call waiting for its answer.
            let mut asking: HashMap<String, RequestId> = HashMap::new();
            let mut n = 0;
            while let Some(msg) = end.from_client.recv().await {
                let r = match msg {
                    Message::Request(r) => r,
                    Message::Notification(note) => {
                        log.lock().unwrap().notes.push(note.method);
                        continue;
                    }
                    Message::Response(answer) => {
                        let outcome = match answer.outcome {
                            Ok(v) => json!({ "result": v }),
                            Err(e) => json!({ "error": e }),
                        };
                        log.lock().unwrap().answers.push(outcome.clone());
                        let RequestId::String(id) = answer.id else {
                            continue;
                        };
                        if let Some(call) = asking.remove(&id) {
                            let text = outcome.to_string();
                            let result = json!({"content": [{"type": "text", "text": text}]});
                            respond(&end, call, Ok(result)).await;
                        }
                        continue;
                    }
                };
                let params = r.params.clone().unwrap_or_default();
                let result = match r.method.as_str() {
                    "initialize" => {
                        log.lock()
                            .unwrap()
                            .capabilities
                            .push(params["capabilities"].clone());
                        json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                            "serverInfo": {"name": "mem", "version": "1"}})
                    }
                    "tools/list" => json!({"tools": [
                        {"name": "ask", "inputSchema": {"type": "object"}},
                        {"name": "cancel_asks", "inputSchema": {"type": "object"}},
                    ]}),
                    "tools/call" if params["name"] == "ask" => {
                        n += 1;
                        let id = format!("s-{n}");
                        asking.insert(id.clone(), r.id);
                        let method = params["arguments"]["method"].as_str().unwrap_or("ping");
                        let ask = Message::request(RequestId::String(id), method, Some(json!({})));
                        tell(&end, ask).await;
                        continue;
                    }
                    "tools/call" if params["name"] == "cancel_asks" => {
                        for (id, call) in asking.drain() {
                            let p = json!({"requestId": id, "reason": "enough"});
                            let note = Message::notification("notifications/cancelled", Some(p));
                            tell(&end, note).await;
                            let result =
                                json!({"content": [{"type": "text", "text": "cancelled"}]});
                            respond(&end, call, Ok(result)).await;
                        }
                        json!({"content": [{"type": "text", "text": "ok"}]})
                    }
                    _ => json!({}),
                };
                respond(&end, r.id, Ok(result)).await;
            }
        }
    })
}

type Lines = tokio::io::Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>;

struct TestHost {
    w: tokio::io::WriteHalf<DuplexStream>,
    r: Lines,
}

impl TestHost {
    fn attach(sup: &Supervisor) -> TestHost {
        let (host, gw) = tokio::io::duplex(1 << 16);
        let (gw_read, gw_write) = tokio::io::split(gw);
        let options = GatewayOptions {
            request_wait: Duration::from_secs(5),
            ..GatewayOptions::default()
        };
        tokio::spawn(serve_lines(
            Arc::new(sup.share()),
            gw_read,
            gw_write,
            options,
        ));
        let (r, w) = tokio::io::split(host);
        TestHost {
            w,
            r: BufReader::new(r).lines(),
        }
    }

    async fn send(&mut self, v: Value) {
        self.w.write_all(format!("{v}\n").as_bytes()).await.unwrap();
    }

    async fn line(&mut self) -> Value {
        let text = tokio::time::timeout(Duration::from_secs(600), self.r.next_line())
            .await
            .expect("a line from the gateway")
            .unwrap()
            .expect("the gateway closed");
        serde_json::from_str(&text).unwrap()
    }

    /// Reads until the answer to `id`, returning it and what came before it.
    async fn answer(&mut self, id: Value) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let v = self.line().await;
            if v.get("id") == Some(&id) && v.get("method").is_none() {
                return (v, before);
            }
            before.push(v);
        }
    }

    /// Reads until a message with `method`.
    async fn until(&mut self, method: &str) -> Value {
        loop {
            let v = self.line().await;
            if v["method"] == method {
                return v;
            }
        }
    }

    async fn initialize(&mut self, capabilities: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "host", "version": "1"}}}))
            .await;
        self.answer(json!(0)).await.0
    }

    async fn ask(&mut self, id: i64, method: &str) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ask", "arguments": {"method": method}}}))
            .await;
    }
}

fn text(answer: &Value) -> Value {
    serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap()
}

const ALL: &str =
    r#"{"roots": {"listChanged": true}, "sampling": {}, "elicitation": {"form": {}}}"#;

#[tokio::test(start_paused = true)]
async fn the_hosts_capabilities_reinitialize_once_and_its_answers_reach_the_server() {
    let log = Log::default();
    let sup = upstream(log.clone());
    // Ready before any host: the first generation offered no client capability.
    sup.wait_for(|s| s.state.state == Some(StateName::Ready))
        .await;
    let mut host = TestHost::attach(&sup);
    let caps: Value = serde_json::from_str(ALL).unwrap();
    let init = host.initialize(caps.clone()).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mem");
    assert_eq!(
        log.lock().unwrap().capabilities,
        [json!({}), caps.clone()],
        "the first generation began before the host said what it can do; reconnected once"
    );
    assert_eq!(sup.snapshot().generation, Generation(2));
    for (i, method) in ["sampling/createMessage", "elicitation/create", "roots/list"]
        .into_iter()
        .enumerate()
    {
        let id = 10 + i as i64;
        host.ask(id, method).await;
        let asked = host.until(method).await;
        let answer = json!({"from": "host", "method": method});
        host.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}))
            .await;
        let (call, _) = host.answer(json!(id)).await;
        assert_eq!(text(&call), json!({ "result": answer }));
    }
    host.send(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}))
        .await;
    // The ping's answer comes after the notification was read and passed on.
    host.send(json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
        "params": {"name": "cancel_asks"}}))
        .await;
    host.answer(json!(20)).await;
    assert!(
        log.lock()
            .unwrap()
            .notes
            .contains(&"notifications/roots/list_changed".to_owned())
    );
    assert_eq!(
        sup.snapshot().generation,
        Generation(2),
        "no further reconnect"
    );
}

#[tokio::test(start_paused = true)]
async fn a_first_attempt_held_for_the_host_offers_its_capabilities_without_a_reconnect() {
    let log = Log::default();
    let sup = upstream_with(log.clone(), true);
    // The host comes late (3 s), inside the hold (5 s).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(log.lock().unwrap().capabilities.is_empty(), "held");
    let mut host = TestHost::attach(&sup);
    let caps: Value = serde_json::from_str(ALL).unwrap();
    host.initialize(caps.clone()).await;
    assert_eq!(log.lock().unwrap().capabilities, [caps]);
    assert_eq!(sup.snapshot().generation, Generation(1));
}

#[tokio::test(start_paused = true)]
async fn a_first_attempt_held_for_a_host_that_never_comes_goes_on_after_the_hold() {
    let log = Log::default();
    let sup = upstream_with(log.clone(), true);
    let started = tokio::time::Instant::now();
    sup.wait_for(|s| s.state.state == Some(StateName::Ready))
        .await;
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(log.lock().unwrap().capabilities, [json!({})]);
}

#[tokio::test(start_paused = true)]
async fn a_host_without_the_capability_leaves_the_refusal_and_no_reconnect() {
    let log = Log::default();
    let sup = upstream(log.clone());
    let mut host = TestHost::attach(&sup);
    host.initialize(json!({})).await;
    host.ask(1, "sampling/createMessage").await;
    let (call, before) = host.answer(json!(1)).await;
    assert!(
        before
            .iter()
            .all(|m| m.get("method").is_none() || m["id"].is_null())
    );
    assert_eq!(text(&call)["error"]["code"], -32601, "method not found");
    assert_eq!(sup.snapshot().generation, Generation(1));
    assert_eq!(log.lock().unwrap().capabilities, [json!({})]);
}

#[tokio::test(start_paused = true)]
async fn a_host_that_never_answers_times_out_and_is_told_cancelled() {
    let log = Log::default();
    let sup = upstream(log.clone());
    let mut host = TestHost::attach(&sup);
    host.initialize(serde_json::from_str(ALL).unwrap()).await;
    host.ask(1, "sampling/createMessage").await;
    let asked = host.until("sampling/createMessage").await;
    // Silence: the request wait (5 s) runs out.
    let cancelled = host.until("notifications/cancelled").await;
    assert_eq!(cancelled["params"]["requestId"], asked["id"]);
    let (call, _) = host.answer(json!(1)).await;
    let error = &text(&call)["error"];
    assert_eq!(error["code"], -32603);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{error}"
    );
    // A late answer is ignored.
    host.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {}}))
        .await;
    host.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .await;
    host.answer(json!(2)).await;
}

#[tokio::test(start_paused = true)]
async fn the_servers_cancel_reaches_the_host_and_nothing_answers_it() {
    let log = Log::default();
    let sup = upstream(log.clone());
    let mut host = TestHost::attach(&sup);
    host.initialize(serde_json::from_str(ALL).unwrap()).await;
    host.ask(1, "elicitation/create").await;
    let asked = host.until("elicitation/create").await;
    host.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "cancel_asks"}}))
        .await;
    let cancelled = host.until("notifications/cancelled").await;
    assert_eq!(cancelled["params"]["requestId"], asked["id"]);
    host.answer(json!(1)).await;
    host.answer(json!(2)).await;
    // The host answers anyway, late: it is not passed on.
    host.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"late": true}}))
        .await;
    host.send(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        .await;
    host.answer(json!(3)).await;
    assert!(log.lock().unwrap().answers.is_empty(), "no answer upstream");
}

#[tokio::test(start_paused = true)]
async fn the_request_goes_to_the_host_whose_call_caused_it() {
    let log = Log::default();
    let sup = upstream(log.clone());
    let mut a = TestHost::attach(&sup);
    let mut b = TestHost::attach(&sup);
    a.initialize(serde_json::from_str(ALL).unwrap()).await;
    b.initialize(serde_json::from_str(ALL).unwrap()).await;
    // A attached before the first attempt, which offered its capabilities.
    assert_eq!(
        sup.snapshot().generation,
        Generation(1),
        "nobody reconnected"
    );
    assert_eq!(log.lock().unwrap().capabilities.len(), 1);
    // A is busy with its call; B is the most recent host.
    a.ask(1, "roots/list").await;
    let asked = a.until("roots/list").await;
    a.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": ["a"]}}))
        .await;
    let (call, _) = a.answer(json!(1)).await;
    assert_eq!(text(&call)["result"]["roots"], json!(["a"]));
    b.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .await;
    let (_, before) = b.answer(json!(2)).await;
    assert!(before.is_empty(), "B was asked nothing: {before:?}");
}

#[tokio::test(start_paused = true)]
async fn a_line_that_is_not_json_rpc_gets_an_error_with_a_null_id() {
    let sup = upstream(Log::default());
    let mut host = TestHost::attach(&sup);
    host.w.write_all(b"this is not json\n").await.unwrap();
    let garbage = host.line().await;
    assert_eq!(garbage["id"], Value::Null);
    assert!(garbage.as_object().unwrap().contains_key("id"));
    assert_eq!(garbage["error"]["code"], -32700);
    host.send(json!({"hello": 0})).await;
    let invalid = host.line().await;
    assert_eq!(invalid["id"], Value::Null);
    assert_eq!(invalid["error"]["code"], -32600);
    // A host whose ids start at 0 gets its own answer under id 0, distinct from null.
    let init = host.initialize(json!({})).await;
    assert_eq!(init["id"], 0);
    assert!(init["result"].is_object());
}

#[tokio::test(start_paused = true)]
async fn a_host_that_leaves_fails_the_servers_request_at_once() {
    let log = Log::default();
    let sup = upstream(log.clone());
    let mut host = TestHost::attach(&sup);
    host.initialize(serde_json::from_str(ALL).unwrap()).await;
    host.ask(1, "roots/list").await;
    host.until("roots/list").await;
    host.w.shutdown().await.unwrap();
    // Paused time: the clock moves only while every task waits, so an answer that waited
    // for the request's timeout (`request_wait`, 5 s) fails this 1 s bound.
    let answered = async {
        while log.lock().unwrap().answers.is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(1), answered)
        .await
        .expect(
            "the server's roots/list failed within 1 s of the host leaving, not at its 5 s timeout",
        );
    let answer = log.lock().unwrap().answers[0].clone();
    assert_eq!(answer["error"]["code"], -32603);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("went away"),
        "{answer}"
    );
}
