//! The local endpoint over real loopback HTTP, in front of the in-process upstream of
//! `gateway/tests.rs`: who is let in (Host, Origin, token), sessions (issued, unknown,
//! missing, ended), the protocol version header, and answers as JSON and as event streams;
//! tokens bound to a profile; under load (`load_tests.rs`).

use super::{Auth, Endpoint, Limits, Resolve, Tokens, tokens};
use crate::gateway::aggregate::AggregateOptions;
use crate::gateway::attach::Refusal;
use crate::gateway::tests::upstream;
use crate::gateway::{GatewayOptions, Served, Target};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

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

/// The JSON-RPC messages of an event stream's body (a priming event's empty data is none).
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| !d.is_empty())
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
    let unbound: Vec<_> = clients.iter().map(|c| (*c, None)).collect();
    let (ep, hosts, dir, _) = endpoint_bound(limits, &unbound).await;
    (ep, hosts, dir)
}

/// What the resolver was asked for, in order.
type Asked = Arc<Mutex<Vec<Target>>>;

/// `endpoint_with`, each client's token bound to its profile if it has one; the server
/// `mem` and the profiles `default` and `coding` are served.
async fn endpoint_bound(
    limits: Limits,
    clients: &[(&str, Option<&str>)],
) -> (Endpoint, Vec<Host>, tempfile::TempDir, Asked) {
    let dir = tempfile::tempdir().unwrap();
    let path = tokens::path_in(dir.path());
    let tokens: Vec<_> = clients
        .iter()
        .map(|(c, p)| tokens::add_bound(&path, c, *p).unwrap())
        .collect();
    let sup = Arc::new(upstream(Default::default()));
    let asked = Asked::default();
    let seen = asked.clone();
    let resolve: Resolve = Arc::new(move |target: Target| {
        let sup = sup.clone();
        seen.lock().unwrap().push(target.clone());
        Box::pin(async move {
            match target {
                Target::Server(name) if name == "mem" => {
                    Ok(Served::Server(sup, GatewayOptions::default()))
                }
                Target::Profile(name) if name == "default" || name == "coding" => {
                    Ok(Served::Aggregate(
                        vec![(sup, GatewayOptions::default())],
                        AggregateOptions::default(),
                    ))
                }
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
    (ep, hosts, dir, asked)
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
    let rest = stream.text().await.unwrap();
    assert!(events(&rest).is_empty(), "{rest}");
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

#[path = "resume_tests.rs"]
mod resume_tests;

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

/// A POST of `initialize` at `url`; its status, session id and body.
async fn init_at(host: &Host, url: &str) -> (StatusCode, Option<String>, Value) {
    let at = Host {
        url: url.to_owned(),
        http: host.http.clone(),
        token: host.token.clone(),
    };
    let r = at
        .post_accepting("application/json", None, init(1))
        .send()
        .await
        .unwrap();
    let session = r
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let status = r.status();
    (
        status,
        session,
        serde_json::from_str(&r.text().await.unwrap()).unwrap(),
    )
}

#[tokio::test]
async fn a_token_bound_to_a_profile_opens_that_profile_alone() {
    let clients = [("cursor", Some("coding")), ("free", None)];
    let (ep, hosts, _dir, asked) = endpoint_bound(Limits::default(), &clients).await;
    let (bound, free) = (&hosts[0], &hosts[1]);
    let port = ep.addr().port();
    let asked = move || std::mem::take(&mut *asked.lock().unwrap());
    let profile = |p: &str| Target::Profile(p.to_owned());

    // `/mcp` is its profile, not `default`; its session serves the profile's tools.
    let (status, session, answer) = init_at(bound, &super::profile_url(port, "default")).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["result"]["serverInfo"]["name"], "lifeline");
    assert_eq!(asked(), [profile("coding")]);
    let session = session.unwrap();
    let mcp = Host {
        url: super::profile_url(port, "default"),
        http: bound.http.clone(),
        token: bound.token.clone(),
    };
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let r = mcp.post_accepting("application/json", Some(&session), list);
    let got: Value = serde_json::from_str(&r.send().await.unwrap().text().await.unwrap()).unwrap();
    let tools = got["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 3, "{got}");
    assert!(
        tools
            .iter()
            .all(|t| t["name"].as_str().unwrap().starts_with("mem__")),
        "{got}"
    );
    // The session is profile `coding`'s, so its own path takes it too.
    let own = Host {
        url: super::profile_url(port, "coding"),
        ..mcp
    };
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let r = own.post(Some(&session), ping).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let (status, _, _) = init_at(bound, &own.url).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(asked(), [profile("coding")]);

    // Any other path is 403, naming the profile and the URL to use; nothing is resolved.
    let wanted = format!(
        "the token of `cursor` is bound to profile `coding` and opens only that, not {{}}: use \
         http://127.0.0.1:{port}/profiles/coding/mcp"
    );
    for (url, shown) in [
        (super::profile_url(port, "other"), "profile `other`"),
        (
            format!("http://127.0.0.1:{port}/profiles/default/mcp"),
            "profile `default`",
        ),
        (ep.url("mem"), "`mem`"),
    ] {
        let (status, session, body) = init_at(bound, &url).await;
        assert_eq!(
            (status, session),
            (StatusCode::FORBIDDEN, None),
            "{url}: {body}"
        );
        assert_eq!(body["id"], Value::Null, "{body}");
        assert_eq!(
            body["error"]["message"],
            wanted.replace("{}", shown),
            "{body}"
        );
    }
    let r = bound
        .http
        .get(ep.url("mem"))
        .header("accept", "text/event-stream")
        .header("authorization", format!("Bearer {}", bound.token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "whatever the method");
    assert_eq!(asked(), []);

    // An unbound token opens every path, `/mcp` as `default`.
    let (status, _, _) = init_at(free, &super::profile_url(port, "default")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = init_at(free, &ep.url("mem")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(asked(), [profile("default"), Target::Server("mem".into())]);
    ep.stop().await;
}

/// A token bound anew in the file (the token itself kept) is revoked as a replaced one:
/// the sessions it opened served another profile, so they end, streams and all.
#[tokio::test]
async fn binding_a_token_anew_ends_its_sessions() {
    let (ep, hosts, dir, asked) =
        endpoint_bound(Limits::default(), &[("cursor", Some("coding"))]).await;
    let mut host = hosts.into_iter().next().unwrap();
    host.url = super::profile_url(ep.addr().port(), "default");
    let (status, session, _) = init_at(&host, &host.url).await;
    assert_eq!(status, StatusCode::OK);
    let session = session.unwrap();
    let stream = host.get_stream(&session).send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);

    let path = tokens::path_in(dir.path());
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    file["clients"]["cursor"]["profile"] = json!("default");
    std::fs::write(&path, file.to_string()).unwrap();
    // Nothing is asked of the endpoint: it notices on its own.
    let rest = tokio::time::timeout(std::time::Duration::from_secs(10), stream.text())
        .await
        .expect("the GET stream of a token bound anew ends within 10 s")
        .unwrap();
    assert!(events(&rest).is_empty(), "{rest}");
    assert_eq!(ep.sessions(), 0);
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let r = host.post(Some(&session), ping).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    // The same token now opens its new profile at `/mcp`.
    let (status, _, _) = init_at(&host, &host.url).await;
    assert_eq!(status, StatusCode::OK);
    let profiles: Vec<_> = asked.lock().unwrap().clone();
    let profile = |p: &str| Target::Profile(p.to_owned());
    assert_eq!(profiles, [profile("coding"), profile("default")]);
    ep.stop().await;
}
