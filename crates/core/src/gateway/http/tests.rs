//! The local endpoint over real loopback HTTP, in front of the in-process upstream of
//! `gateway/tests.rs`: who is let in (Host, Origin, token), sessions (issued, unknown,
//! missing, ended), the protocol version header, and answers as JSON and as event streams;
//! under load (`load_tests.rs`).

use super::{Auth, Endpoint, Limits, Resolve, Tokens, tokens};
use crate::gateway::aggregate::AggregateOptions;
use crate::gateway::attach::Refusal;
use crate::gateway::tests::upstream;
use crate::gateway::{GatewayOptions, Served, Target};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

struct Host {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Host {
    /// A POST that takes its answer as JSON or on an event stream.
    fn post(&self, session: Option<&str>, body: Value) -> reqwest::RequestBuilder {
        self.post_accepting("application/json, text/event-stream", session, body)
    }

    /// A POST whose Accept is `accept`: `application/json` takes the answer only as JSON.
    fn post_accepting(
        &self,
        accept: &str,
        session: Option<&str>,
        body: Value,
    ) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", accept)
            .header("authorization", format!("Bearer {}", self.token))
            .body(body.to_string());
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        req
    }

    /// The GET stream of `session`.
    fn get_stream(&self, session: &str) -> reqwest::RequestBuilder {
        self.http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("authorization", format!("Bearer {}", self.token))
            .header("mcp-session-id", session)
    }
}

fn init(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "t", "version": "1"}}})
}

/// The JSON-RPC messages of an event stream's body.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

async fn endpoint() -> (Endpoint, Host, tempfile::TempDir) {
    let (ep, mut hosts, dir) = endpoint_with(Limits::default(), &["tester"]).await;
    (ep, hosts.remove(0), dir)
}

/// An endpoint with `limits`, and a host for each of `clients` with its own token.
async fn endpoint_with(
    limits: Limits,
    clients: &[&str],
) -> (Endpoint, Vec<Host>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = tokens::path_in(dir.path());
    let tokens: Vec<_> = clients
        .iter()
        .map(|c| tokens::add(&path, c).unwrap())
        .collect();
    let sup = Arc::new(upstream(Default::default()));
    let resolve: Resolve = Arc::new(move |target: Target| {
        let sup = sup.clone();
        Box::pin(async move {
            match target {
                Target::Server(name) if name == "mem" => {
                    Ok(Served::Server(sup, GatewayOptions::default()))
                }
                Target::Profile(name) if name == "default" => Ok(Served::Aggregate(
                    vec![(sup, GatewayOptions::default())],
                    AggregateOptions::default(),
                )),
                other => Err((Refusal::Unknown, format!("no {}", other.shown()))),
            }
        })
    });
    let ep = Endpoint::bind_with(0, resolve, Auth::Tokens(Tokens::new(path)), limits)
        .await
        .unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let hosts = tokens
        .into_iter()
        .map(|token| Host {
            http: reqwest::Client::new(),
            url: ep.url("mem"),
            token,
        })
        .collect();
    (ep, hosts, dir)
}

#[tokio::test]
async fn only_local_programs_with_a_token_get_in() {
    let (ep, host, _dir) = endpoint().await;
    let status = |r: reqwest::Response| r.status();
    let no_token = host
        .http
        .post(&host.url)
        .header("content-type", "application/json")
        .body(init(1).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(no_token.status(), StatusCode::UNAUTHORIZED);
    assert!(no_token.headers().contains_key("www-authenticate"));
    let text = no_token.text().await.unwrap();
    assert!(text.contains("lifeline serve token add"), "{text}");
    let wrong = Host {
        token: "lifeline_wrong".into(),
        http: host.http.clone(),
        url: host.url.clone(),
    };
    let r = wrong.post(None, init(1)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(!r.text().await.unwrap().contains("lifeline_wrong"));
    // DNS rebinding: a page's request carries its own host name, or its origin.
    let r = host
        .post(None, init(1))
        .header("host", "evil.example.com")
        .send();
    assert_eq!(status(r.await.unwrap()), StatusCode::FORBIDDEN);
    let r = host
        .post(None, init(1))
        .header("origin", "http://evil.example.com");
    assert_eq!(status(r.send().await.unwrap()), StatusCode::FORBIDDEN);
    let r = host
        .post(None, init(1))
        .header("origin", "http://localhost:5173");
    assert_eq!(status(r.send().await.unwrap()), StatusCode::OK);
    // The Host check comes before the token check: no token and a foreign Host is 403.
    let r = host
        .http
        .post(&host.url)
        .header("host", "evil.example.com:7424")
        .send();
    assert_eq!(status(r.await.unwrap()), StatusCode::FORBIDDEN);
    ep.stop().await;
}

#[tokio::test]
async fn a_session_is_issued_used_and_ended() {
    let (ep, host, _dir) = endpoint().await;
    let r = host.post(None, init(1)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert!(session.len() == 32 && session.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(r.headers()["content-type"], "application/json");
    let answer: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "mem");
    assert_eq!(answer["result"]["protocolVersion"], "2025-11-25");

    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = host.post(Some(&session), note).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);

    // A request is answered on an event stream when the host accepts one.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let r = host
        .post(Some(&session), list.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let got = events(&r.text().await.unwrap());
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["id"], 2);
    assert_eq!(got[0]["result"]["tools"].as_array().unwrap().len(), 3);
    // ... and as JSON when it takes only JSON.
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let r = host
        .post_accepting("application/json", Some(&session), ping)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "application/json");
    let pong: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(pong["result"], json!({}));

    // The GET stream: one per session.
    let stream = host.get_stream(&session).send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    assert_eq!(
        host.get_stream(&session).send().await.unwrap().status(),
        StatusCode::CONFLICT
    );

    // Sessions: missing is 400, unknown or another server's is 404.
    let r = host.post(None, list.clone()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = host.post(Some("0123"), list.clone()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let other = Host {
        url: ep.url("other"),
        http: host.http.clone(),
        token: host.token.clone(),
    };
    let r = other
        .post(Some(&session), list.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = other.post(None, init(9)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    // A protocol revision the gateway does not speak.
    let r = host
        .post(Some(&session), list.clone())
        .header("mcp-protocol-version", "1999-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    // Not JSON-RPC, a batch.
    let r = host
        .post(Some(&session), json!([list.clone()]))
        .send()
        .await;
    assert_eq!(r.unwrap().status(), StatusCode::BAD_REQUEST);

    // DELETE ends it: the GET stream closes and the id is unknown from then on.
    let r = host
        .http
        .delete(&host.url)
        .header("authorization", format!("Bearer {}", host.token))
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(stream.text().await.unwrap(), "");
    let r = host.post(Some(&session), list).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(ep.sessions(), 0);
    ep.stop().await;
}

#[tokio::test]
async fn a_calls_progress_travels_on_its_own_stream_before_the_answer() {
    let (ep, host, _dir) = endpoint().await;
    let r = host.post(None, init(1)).send().await.unwrap();
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "prog", "arguments": {}, "_meta": {"progressToken": "p1"}}});
    let r = host.post(Some(&session), call).send().await.unwrap();
    let got = events(&r.text().await.unwrap());
    let (last, progress) = got.split_last().unwrap();
    assert_eq!(last["id"], 2, "{got:?}");
    assert!(!progress.is_empty(), "{got:?}");
    for p in progress {
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["params"]["progressToken"], "p1");
    }
    ep.stop().await;
}

#[tokio::test]
async fn what_belongs_to_no_request_goes_on_the_get_stream() {
    let (ep, host, _dir) = endpoint().await;
    let r = host.post(None, init(1)).send().await.unwrap();
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let mut stream = host.get_stream(&session).send().await.unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "notify", "arguments": {}}});
    let r = host.post(Some(&session), call).send().await.unwrap();
    let answer = events(&r.text().await.unwrap());
    assert_eq!(
        answer.len(),
        1,
        "only the answer on the POST's stream: {answer:?}"
    );
    assert_eq!(answer[0]["id"], 2);
    let mut text = String::new();
    let wanted = ["notifications/message", "notifications/resources/updated"];
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while !wanted.iter().all(|m| text.contains(m)) {
            let chunk = stream.chunk().await.unwrap().expect("the stream is open");
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the notifications on the GET stream: {text}"));
    let got = events(&text);
    assert!(got.iter().all(|m| m.get("id").is_none()), "{got:?}");
    ep.stop().await;
}

#[path = "load_tests.rs"]
mod load_tests;

#[tokio::test]
async fn every_server_is_served_at_mcp_and_a_profile_at_its_own_path() {
    let (ep, mut host, _dir) = endpoint().await;
    let port = ep.addr().port();
    host.url = super::profile_url(port, "default");
    assert!(
        host.url
            .ends_with(":{port}/mcp".replace("{port}", &port.to_string()).as_str())
    );
    let r = host.post(None, init(1)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let answer: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "lifeline",
        "{answer}"
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let r = host
        .post_accepting("application/json", Some(&session), list)
        .send()
        .await
        .unwrap();
    let got: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    let names: Vec<&str> = got["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{got}");
    assert!(names.iter().all(|n| n.starts_with("mem__")), "{names:?}");

    // The session belongs to its path: not usable at a server's.
    let server = Host {
        url: ep.url("mem"),
        ..host
    };
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let r = server.post(Some(&session), ping).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // A profile the resolver does not know is a 404 naming it.
    let nope = Host {
        url: super::profile_url(port, "nope"),
        ..server
    };
    assert!(nope.url.ends_with("/profiles/nope/mcp"));
    let r = nope.post(None, init(1)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.text().await.unwrap().contains("no profile `nope`"));
    ep.stop().await;
}
