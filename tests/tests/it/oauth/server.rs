//! The fixture's authorization server and protected MCP endpoint, on loopback (one hyper
//! server, two roles): metadata, dynamic registration, an authorization endpoint that
//! redirects at once (or shows a login page), a token endpoint with PKCE, refresh and
//! revocation, and an MCP endpoint at `/mcp` and `/mcp/<anything>` (one resource, `/mcp`)
//! that takes only the tokens issued and not expired, and the same as a legacy HTTP+SSE
//! server (`GET /mcp/sse`, `POST /mcp/messages`). Tokens expire when the test says so
//! (`expire_all`), never by the clock. `Proxy` puts a network in between that can be cut.
//! A hostile server is the same one with fields laid over its documents (`Overrides`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use hyper::Response;
use hyper::http::request::Parts;
use lifeline_it::http::{Body, accept_loop, full};
use lifeline_it::sse::SseWriter;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};

/// Every token value holds this, so a leak is easy to find.
pub const CANARY: &str = "CANARY-oauth";

#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// 401s the MCP endpoint answered.
    pub unauthorized: usize,
    pub authorize: usize,
    pub code_grants: usize,
    pub refresh_grants: usize,
    pub revocations: usize,
    pub registrations: usize,
}

/// Fields laid over what the server sends: a `null` removes the field.
#[derive(Default)]
pub struct Overrides {
    pub resource: serde_json::Map<String, Value>,
    pub server: serde_json::Map<String, Value>,
    pub token: serde_json::Map<String, Value>,
    /// The `resource_metadata` of the 401's challenge, instead of the server's own.
    pub challenge_metadata: Option<String>,
}

fn overlay(mut doc: Value, over: &serde_json::Map<String, Value>) -> Value {
    let fields = doc.as_object_mut().unwrap();
    for (k, v) in over {
        match v {
            Value::Null => fields.remove(k),
            v => fields.insert(k.clone(), v.clone()),
        };
    }
    doc
}

#[derive(Default)]
pub struct As {
    /// What a hostile server changes in its answers.
    pub overrides: Mutex<Overrides>,
    /// The origin clients reach this server at (the proxy's, when there is one).
    pub origin: String,
    pub counts: Mutex<Counts>,
    /// Access tokens the MCP endpoint accepts now.
    valid: Mutex<HashSet<String>>,
    /// The PKCE challenge of each code handed out.
    codes: Mutex<HashMap<String, String>>,
    /// Refresh grants answer invalid_grant.
    pub revoked: Mutex<bool>,
    /// This many refresh grants answer 503 first (the authorization server is down).
    pub refresh_outages: Mutex<u32>,
    /// The authorization endpoint shows a login page instead of redirecting at once.
    pub needs_person: Mutex<bool>,
    /// The `expires_in` of the tokens issued (3600 when 0).
    pub expires_in: Mutex<u64>,
    next: Mutex<u32>,
    /// The latest access token issued.
    pub latest: Mutex<Option<String>>,
    /// The bearer token of each `initialize`, in order.
    pub initialized_with: Mutex<Vec<Option<String>>>,
    /// The open legacy event stream.
    legacy: Mutex<Option<SseWriter>>,
}

impl As {
    fn issue(&self) -> Value {
        let n = {
            let mut next = self.next.lock().unwrap();
            *next += 1;
            *next
        };
        let access = format!("{CANARY}-access-{n}");
        self.valid.lock().unwrap().insert(access.clone());
        *self.latest.lock().unwrap() = Some(access.clone());
        let doc = json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": match *self.expires_in.lock().unwrap() { 0 => 3600, n => n },
            "refresh_token": format!("{CANARY}-refresh-{n}"),
        });
        overlay(doc, &self.overrides.lock().unwrap().token)
    }

    /// Every access token issued so far stops working (the next use is answered 401).
    pub fn expire_all(&self) {
        self.valid.lock().unwrap().clear();
    }

    pub fn counts(&self) -> Counts {
        *self.counts.lock().unwrap()
    }
}

fn json_response(status: u16, v: Value) -> Response<Body> {
    full(status, Some("application/json"), v.to_string())
}

fn query(parts: &Parts) -> HashMap<String, String> {
    url_pairs(parts.uri.query().unwrap_or(""))
}

fn url_pairs(s: &str) -> HashMap<String, String> {
    let url = reqwest::Url::parse(&format!("http://x/?{s}")).unwrap();
    url.query_pairs().into_owned().collect()
}

async fn route(state: Arc<As>, parts: Parts, body: Bytes) -> Response<Body> {
    let o = &state.origin;
    let path = parts.uri.path();
    if parts.method == "GET" && path.starts_with("/.well-known/oauth-protected-resource/mcp") {
        let doc = json!({ "resource": format!("{o}/mcp"), "authorization_servers": [o] });
        return json_response(200, overlay(doc, &state.overrides.lock().unwrap().resource));
    }
    if path.starts_with("/mcp")
        && let Some(refused) = unauthorized(&state, &parts)
    {
        return refused;
    }
    match (parts.method.as_str(), path) {
        ("GET", "/mcp/sse") => {
            let (writer, resp) = lifeline_it::sse::response(false, &[]);
            writer.event("endpoint", "/mcp/messages");
            *state.legacy.lock().unwrap() = Some(writer);
            return resp;
        }
        ("POST", "/mcp/messages") => {
            let msg: Value = serde_json::from_slice(&body).unwrap();
            if let Some(answer) = answer(&state, &parts, &msg)
                && let Some(stream) = state.legacy.lock().unwrap().as_ref()
            {
                stream.message(0, &answer);
            }
            return full(202, None, "");
        }
        ("POST", _) if path == "/mcp" || path.starts_with("/mcp/") => {
            let msg: Value = serde_json::from_slice(&body).unwrap();
            return match answer(&state, &parts, &msg) {
                Some(answer) => json_response(200, answer),
                None => full(202, None, ""),
            };
        }
        _ => {}
    }
    match (parts.method.as_str(), path) {
        ("GET", "/.well-known/oauth-authorization-server") => {
            let doc = json!({
                "issuer": o,
                "authorization_endpoint": format!("{o}/authorize"),
                "token_endpoint": format!("{o}/token"),
                "registration_endpoint": format!("{o}/register"),
                "revocation_endpoint": format!("{o}/revoke"),
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": true,
            });
            json_response(200, overlay(doc, &state.overrides.lock().unwrap().server))
        }
        ("POST", "/register") => {
            state.counts.lock().unwrap().registrations += 1;
            json_response(201, json!({ "client_id": "lifeline-test" }))
        }
        ("GET", "/authorize") => authorize(&state, &parts),
        ("POST", "/token") => token(&state, &body),
        ("POST", "/revoke") => {
            let form = url_pairs(std::str::from_utf8(&body).unwrap());
            state.counts.lock().unwrap().revocations += 1;
            state.valid.lock().unwrap().remove(&form["token"]);
            full(200, None, "")
        }
        // No GET stream: 405, as the spec allows.
        _ => full(405, None, ""),
    }
}

fn authorize(state: &As, parts: &Parts) -> Response<Body> {
    state.counts.lock().unwrap().authorize += 1;
    if *state.needs_person.lock().unwrap() {
        return full(200, Some("text/html"), "<form>log in</form>");
    }
    let q = query(parts);
    let code = format!("{CANARY}-code");
    state
        .codes
        .lock()
        .unwrap()
        .insert(code.clone(), q["code_challenge"].clone());
    let mut to = reqwest::Url::parse(&q["redirect_uri"]).unwrap();
    to.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &q["state"])
        .append_pair("iss", &state.origin);
    let mut resp = full(302, None, "");
    resp.headers_mut()
        .insert("location", to.as_str().parse().unwrap());
    resp
}

fn token(state: &As, body: &[u8]) -> Response<Body> {
    let form = url_pairs(std::str::from_utf8(body).unwrap());
    assert_eq!(form["resource"], format!("{}/mcp", state.origin));
    match form["grant_type"].as_str() {
        "authorization_code" => {
            state.counts.lock().unwrap().code_grants += 1;
            let challenge = state.codes.lock().unwrap().remove(&form["code"]);
            let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(form["code_verifier"].as_bytes()));
            if challenge != Some(computed) {
                return json_response(400, json!({ "error": "invalid_grant" }));
            }
            json_response(200, state.issue())
        }
        "refresh_token" => {
            state.counts.lock().unwrap().refresh_grants += 1;
            {
                let mut outages = state.refresh_outages.lock().unwrap();
                if *outages > 0 {
                    *outages -= 1;
                    return json_response(503, json!({ "error": "temporarily_unavailable" }));
                }
            }
            if *state.revoked.lock().unwrap() {
                return json_response(400, json!({ "error": "invalid_grant" }));
            }
            json_response(200, state.issue())
        }
        _ => json_response(400, json!({ "error": "unsupported_grant_type" })),
    }
}

fn bearer(parts: &Parts) -> Option<String> {
    parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned)
}

/// The 401 of a request without a valid token, with the challenge naming the metadata;
/// `None` for a request with one.
fn unauthorized(state: &As, parts: &Parts) -> Option<Response<Body>> {
    if bearer(parts).is_some_and(|b| state.valid.lock().unwrap().contains(&b)) {
        return None;
    }
    state.counts.lock().unwrap().unauthorized += 1;
    let mut resp = json_response(401, json!({ "error": "invalid_token" }));
    let metadata = state
        .overrides
        .lock()
        .unwrap()
        .challenge_metadata
        .clone()
        .unwrap_or_else(|| format!("{}/.well-known/oauth-protected-resource/mcp", state.origin));
    let challenge = format!("Bearer resource_metadata=\"{metadata}\"");
    resp.headers_mut()
        .insert("www-authenticate", challenge.parse().unwrap());
    Some(resp)
}

/// The JSON-RPC answer to `msg`, if it is a request.
fn answer(state: &As, parts: &Parts, msg: &Value) -> Option<Value> {
    let id = msg.get("id").cloned()?;
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => {
            state.initialized_with.lock().unwrap().push(bearer(parts));
            json!({
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "oauth-test", "version": "1" },
            })
        }
        "tools/list" => json!({ "tools": [] }),
        _ => json!({}),
    };
    Some(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

/// The server, reached directly.
pub async fn serve() -> Arc<As> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let state = Arc::new(As {
        origin: format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port()),
        ..As::default()
    });
    tokio::spawn(accept_loop(listener, state.clone(), route));
    state
}

/// The server, reached only through a `Proxy` (its metadata names the proxy's origin).
pub async fn serve_behind_proxy() -> (Arc<As>, Proxy) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let target = listener.local_addr().unwrap().port();
    let proxy = Proxy::start(target).await;
    let state = Arc::new(As {
        origin: proxy.origin.clone(),
        ..As::default()
    });
    tokio::spawn(accept_loop(listener, state.clone(), route));
    (state, proxy)
}

/// A TCP forwarder that can lose the network: `cut` ends every connection through it and
/// refuses new ones (accepted, then closed at once) until `restore`.
pub struct Proxy {
    pub origin: String,
    down: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Proxy {
    async fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let origin = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let down = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(Mutex::new(Vec::new()));
        let (d, c) = (down.clone(), conns.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if d.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", target)).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                c.lock().unwrap().push(task.abort_handle());
            }
        });
        Proxy {
            origin,
            down,
            conns,
        }
    }

    pub fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        for conn in self.conns.lock().unwrap().drain(..) {
            conn.abort();
        }
    }

    pub fn restore(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}
