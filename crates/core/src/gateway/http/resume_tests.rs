//! Resuming over real loopback HTTP, in front of an in-process upstream whose `wait` tool
//! answers when the test says so: event ids and priming events (2025-11-25 on, not before),
//! a POST stream that broke resumed with GET + `Last-Event-ID` (the request not cancelled),
//! the GET stream resumed, and the ids that are refused. Then, on a paused clock, an answer
//! kept for a resume for `RESUME_WINDOW` and no longer.

use super::super::session::{Answer, HttpSession};
use super::super::streams::{RESUME_BYTES, RESUME_WINDOW, Unresumable};
use super::super::{Auth, Endpoint, Resolve};
use super::{Host, events, init};
use crate::gateway::tests::scripted;
use crate::gateway::{GatewayOptions, Served, Target};
use crate::protocol::{Message, RequestId, Response};
use crate::supervisor::Supervisor;
use crate::transport::Incoming;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};

/// How long a test waits for what must happen before it fails, naming what did not.
const PATIENCE: Duration = Duration::from_secs(10);

/// The upstream: `wait` sends one progress notification, then answers `waited` once the
/// test calls `notify_one` on the `Notify`; `notify` sends a log message, then answers;
/// anything else answers at once. The methods of the notifications it hears come out of
/// the receiver.
fn waiting_upstream() -> (
    Arc<Supervisor>,
    Arc<Notify>,
    mpsc::UnboundedReceiver<String>,
) {
    let release = Arc::new(Notify::new());
    let (heard, hears) = mpsc::unbounded_channel();
    let released = release.clone();
    let sup = scripted(None, move |mut end, _| {
        let release = released.clone();
        let heard = heard.clone();
        async move {
            while let Some(msg) = end.from_client.recv().await {
                let r = match msg {
                    Message::Request(r) => r,
                    Message::Notification(n) => {
                        let _ = heard.send(n.method);
                        continue;
                    }
                    Message::Response(_) => continue,
                };
                let to = end.to_client.clone();
                let release = release.clone();
                tokio::spawn(async move {
                    let tell = |m: Message| to.send(Incoming::Message(m));
                    let params = r.params.clone().unwrap_or_default();
                    let result = match (r.method.as_str(), params["name"].as_str()) {
                        ("initialize", _) => json!({"protocolVersion": "2025-11-25",
                            "capabilities": {"tools": {}, "logging": {}},
                            "serverInfo": {"name": "mem", "version": "1"}}),
                        ("tools/list", _) => json!({"tools": [
                            {"name": "wait", "inputSchema": {"type": "object"}},
                            {"name": "notify", "inputSchema": {"type": "object"}}]}),
                        ("tools/call", Some("wait")) => {
                            let token = params["_meta"]["progressToken"].clone();
                            let p = json!({"progressToken": token, "progress": 1});
                            let _ = tell(Message::notification("notifications/progress", Some(p)))
                                .await;
                            release.notified().await;
                            json!({"content": [{"type": "text", "text": "waited"}]})
                        }
                        ("tools/call", Some("notify")) => {
                            let p = json!({"level": "info", "logger": "l", "data": "told"});
                            let _ =
                                tell(Message::notification("notifications/message", Some(p))).await;
                            json!({"content": [{"type": "text", "text": "sent"}]})
                        }
                        _ => json!({}),
                    };
                    let answer = Response {
                        id: r.id,
                        outcome: Ok(result),
                    };
                    let _ = tell(Message::Response(answer)).await;
                });
            }
        }
    });
    (Arc::new(sup), release, hears)
}

async fn endpoint(sup: Arc<Supervisor>) -> (Endpoint, Host) {
    let resolve: Resolve = Arc::new(move |_| {
        let sup = sup.clone();
        Box::pin(async move { Ok(Served::Server(sup, GatewayOptions::default())) })
    });
    let ep = Endpoint::bind(0, resolve, Auth::Open).await.unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let host = Host {
        http: reqwest::Client::new(),
        url: ep.url("mem"),
        token: String::new(),
    };
    (ep, host)
}

fn init_at(revision: &str) -> Value {
    let mut init = init(1);
    init["params"]["protocolVersion"] = json!(revision);
    init
}

async fn open(host: &Host, revision: &str) -> String {
    let r = host.post(None, init_at(revision)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let body = r.text().await.unwrap();
    assert!(
        !body.contains("retry:"),
        "no priming before the revision is known: {body}"
    );
    session
}

fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {}, "_meta": {"progressToken": id}}})
}

/// Reads `r`'s body until what came contains `wanted`; what came.
async fn read_until(r: &mut reqwest::Response, wanted: &str) -> String {
    let mut got = String::new();
    let read = async {
        while !got.contains(wanted) {
            let chunk = r.chunk().await.unwrap();
            let chunk = chunk.unwrap_or_else(|| panic!("the stream ended before {wanted:?}"));
            got.push_str(&String::from_utf8_lossy(&chunk));
        }
    };
    tokio::time::timeout(PATIENCE, read)
        .await
        .unwrap_or_else(|_| panic!("{wanted:?} within {PATIENCE:?}; came: {got:?}"));
    got
}

/// The ids of the events in `text`, in order.
fn ids(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect()
}

/// A GET resuming after `last`.
fn resume(host: &Host, session: &str, last: &str) -> reqwest::RequestBuilder {
    host.get_stream(session).header("last-event-id", last)
}

#[tokio::test]
async fn events_carry_ids_and_streams_prime_from_2025_11_25_on() {
    let (sup, _release, _) = waiting_upstream();
    let (ep, host) = endpoint(sup).await;
    let session = open(&host, "2025-11-25").await;
    let r = host.post(Some(&session), call(2, "notify")).send().await;
    let body = r.unwrap().text().await.unwrap();
    let got = ids(&body);
    assert_eq!(got.len(), 2, "a priming event, then the answer: {body}");
    let stream = got[0]
        .strip_suffix("-0")
        .expect("the priming event is place 0");
    assert!(
        body.starts_with(&format!("id: {stream}-0\nretry: 1000\ndata: \n\n")),
        "{body}"
    );
    assert_eq!(got[1], format!("{stream}-1"));
    assert_eq!(events(&body)[0]["id"], 2);
    // The GET stream primes too, under a stream number of its own.
    let mut get = host.get_stream(&session).send().await.unwrap();
    let primed = read_until(&mut get, "data: \n\n").await;
    let get_stream = ids(&primed)[0].strip_suffix("-0").unwrap().to_owned();
    assert_ne!(get_stream, stream);
    assert!(primed.contains("retry: 1000\n"), "{primed}");

    // 2025-06-18: ids, but no priming event, on either stream.
    let old = open(&host, "2025-06-18").await;
    let mut get = host.get_stream(&old).send().await.unwrap();
    let r = host.post(Some(&old), call(2, "notify")).send().await;
    let body = r.unwrap().text().await.unwrap();
    assert!(
        !body.contains("retry:") && !body.contains("data: \n"),
        "{body}"
    );
    assert_eq!(ids(&body).len(), 1, "{body}");
    assert!(ids(&body)[0].ends_with("-1"), "{body}");
    let told = read_until(&mut get, "told").await;
    assert!(
        ids(&told)[0].ends_with("-1"),
        "the message is the GET stream's first: {told}"
    );
    assert!(!told.contains("retry:"), "{told}");
    ep.stop().await;
}

#[tokio::test]
async fn a_host_whose_post_stream_broke_resumes_it_and_gets_the_answer() {
    let (sup, release, mut heard) = waiting_upstream();
    let (ep, host) = endpoint(sup).await;
    let session = open(&host, "2025-11-25").await;
    let mut r = host
        .post(Some(&session), call(2, "wait"))
        .send()
        .await
        .unwrap();
    let seen = read_until(&mut r, "notifications/progress").await;
    let last = ids(&seen).last().unwrap().to_string();
    assert!(
        last.ends_with("-1"),
        "the progress follows the priming event: {seen}"
    );
    drop(r);
    // The host comes back; the call is still running, and answers on the resumed stream.
    let mut resumed = resume(&host, &session, &last).send().await.unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    release.notify_one();
    let rest = tokio::time::timeout(PATIENCE, async {
        let mut all = String::new();
        while let Some(chunk) = resumed.chunk().await.unwrap() {
            all.push_str(&String::from_utf8_lossy(&chunk));
        }
        all
    })
    .await
    .expect("the resumed stream ends after the answer");
    let stream = last.strip_suffix("-1").unwrap();
    assert_eq!(
        ids(&rest),
        [format!("{stream}-2")],
        "only what followed: {rest}"
    );
    assert_eq!(events(&rest)[0]["result"]["content"][0]["text"], "waited");
    // Answered, the stream is gone; a second resume is refused, not given a stream.
    let again = resume(&host, &session, &last).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);

    // A broken connection cancelled nothing (the answer came); DELETE does.
    let mut r = host
        .post(Some(&session), call(3, "wait"))
        .send()
        .await
        .unwrap();
    read_until(&mut r, "notifications/progress").await;
    drop(r);
    while let Ok(method) = heard.try_recv() {
        assert_ne!(
            method, "notifications/cancelled",
            "a disconnect is not a cancel"
        );
    }
    let gone = host
        .http
        .delete(&host.url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), StatusCode::OK);
    tokio::time::timeout(PATIENCE, async {
        while let Some(method) = heard.recv().await {
            if method == "notifications/cancelled" {
                return;
            }
        }
        panic!("the upstream ended")
    })
    .await
    .expect("the DELETE cancels the call upstream");
    ep.stop().await;
}

#[tokio::test]
async fn a_last_event_id_that_names_no_stream_of_this_session_is_refused() {
    let (sup, release, _) = waiting_upstream();
    let (ep, host) = endpoint(sup).await;
    let mine = open(&host, "2025-11-25").await;
    let other = open(&host, "2025-11-25").await;
    let mut r = host
        .post(Some(&mine), call(2, "wait"))
        .send()
        .await
        .unwrap();
    let seen = read_until(&mut r, "data: \n\n").await;
    let priming = ids(&seen)[0].to_owned();
    let refused = |last: &'static str, told: &'static str| {
        let host = &host;
        let other = &other;
        async move {
            let r = resume(host, other, last).send().await.unwrap();
            assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{last}");
            let body: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
            let message = body["error"]["message"].as_str().unwrap().to_owned();
            assert!(message.contains(told), "{last}: {message}");
        }
    };
    // Another session's stream is none of this one's.
    let foreign: &'static str = Box::leak(priming.clone().into_boxed_str());
    refused(foreign, "names no stream this session still keeps").await;
    refused("999999999-0", "names no stream this session still keeps").await;
    refused("event-7", "is not an event id of this endpoint").await;
    // Refusing a resume does not end the session (a 404 would).
    let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
    let r = host.post(Some(&other), ping).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // Its own session resumes it, taking it over from the connection still open.
    let mut resumed = resume(&host, &mine, &priming).send().await.unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    release.notify_one();
    let rest = read_until(&mut resumed, "waited").await;
    assert!(
        rest.contains("notifications/progress"),
        "replayed after the priming: {rest}"
    );
    let old = tokio::time::timeout(PATIENCE, r.text()).await;
    let old = old.expect("the old connection's stream ends").unwrap();
    assert!(!old.contains("waited"), "{old}");
    ep.stop().await;
}

#[tokio::test]
async fn a_get_stream_resumed_gets_the_notifications_it_missed() {
    let (sup, _release, _) = waiting_upstream();
    let (ep, host) = endpoint(sup).await;
    let session = open(&host, "2025-11-25").await;
    let mut get = host.get_stream(&session).send().await.unwrap();
    let primed = read_until(&mut get, "data: \n\n").await;
    let last = ids(&primed)[0].to_owned();
    drop(get);
    let r = host.post(Some(&session), call(2, "notify")).send().await;
    assert_eq!(events(&r.unwrap().text().await.unwrap())[0]["id"], 2);
    let mut resumed = resume(&host, &session, &last).send().await.unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    let missed = read_until(&mut resumed, "told").await;
    let stream = last.strip_suffix("-0").unwrap();
    assert_eq!(ids(&missed), [format!("{stream}-1")], "{missed}");
    // The resumed stream is the session's GET stream: a second one is refused.
    let second = host.get_stream(&session).send().await.unwrap();
    assert_eq!(second.status(), StatusCode::CONFLICT);
    ep.stop().await;
}

/// An answer that came while its stream had no connection is replayed to a resume within
/// `RESUME_WINDOW`, and dropped at its end.
#[tokio::test(start_paused = true)]
async fn an_answer_waits_for_its_resume_for_the_window_and_no_longer() {
    let after = [
        (RESUME_WINDOW - Duration::from_secs(1), true),
        (RESUME_WINDOW + Duration::from_millis(1), false),
    ];
    for (wait, kept) in after {
        let (sup, release, _) = waiting_upstream();
        let served = Served::Server(sup, GatewayOptions::default());
        let target = Target::Server("mem".into());
        let session = HttpSession::start("0".repeat(32), target, None, served, 16, RESUME_BYTES);
        let init = Message::from_value(init_at("2025-11-25")).unwrap();
        let Ok(Answer::Json(rx)) = session.request(init, RequestId::Number(1), false) else {
            panic!("initialize is taken");
        };
        rx.await.expect("initialized");
        let call = Message::from_value(call(2, "wait")).unwrap();
        let Ok(Answer::Stream { priming, events }) =
            session.request(call, RequestId::Number(2), true)
        else {
            panic!("the call is taken");
        };
        let priming = String::from_utf8(priming.expect("2025-11-25 primes").to_vec()).unwrap();
        let last = ids(&priming)[0].to_owned();
        drop(events);
        release.notify_one();
        // Paused: the clock moves once every task waits, the answer routed by then.
        tokio::time::sleep(wait).await;
        match session.resume(&last) {
            Ok(resumed) => {
                assert!(kept, "resumed after {wait:?}");
                assert!(resumed.rest.is_none(), "the replay ends with the answer");
                let replay = String::from_utf8_lossy(&resumed.replay);
                assert!(replay.contains("waited"), "{replay}");
                assert!(replay.contains("notifications/progress"), "{replay}");
            }
            Err(e) => {
                assert!(!kept, "refused after {wait:?}");
                assert_eq!(e, Unresumable::NotHeld);
            }
        }
        assert!(
            session.idle_for(Duration::ZERO),
            "nothing is kept any longer"
        );
        session.end().await;
    }
}
