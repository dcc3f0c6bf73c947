//! OAuth sign-in end to end on loopback: lifeline-core's Streamable HTTP transport with an
//! `auth::Authorizer` against an authorization server and a protected MCP endpoint written
//! here (one hyper server, two roles). Headless sign-in follows the authorization
//! endpoint's redirect to Lifeline's loopback listener, as the conformance suite's do.

use crate::cli::lifeline;
use crate::support::{TempDirGuard, write_config};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use hyper::Response;
use hyper::http::request::Parts;
use lifeline_core::auth::{Authorizer, OAuthSettings, SignIn};
use lifeline_core::transport::http::{self, HttpConfig};
use lifeline_core::{ErrorKind, Session, SessionOptions};
use lifeline_it::http::{Body, accept_loop, full};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;

/// Every token value holds this, so a leak is easy to find.
const CANARY: &str = "CANARY-oauth";

#[derive(Default)]
struct Counts {
    /// 401s the MCP endpoint answered.
    unauthorized: usize,
    authorize: usize,
    code_grants: usize,
    refresh_grants: usize,
}

#[derive(Default)]
struct As {
    origin: String,
    counts: Mutex<Counts>,
    /// Access tokens the MCP endpoint accepts now.
    valid: Mutex<HashSet<String>>,
    /// The PKCE challenge of each code handed out.
    codes: Mutex<HashMap<String, String>>,
    /// Refresh grants answer invalid_grant.
    revoked: Mutex<bool>,
    /// The authorization endpoint shows a login page instead of redirecting at once.
    needs_person: Mutex<bool>,
    /// The `expires_in` of the tokens issued (3600 when 0).
    expires_in: Mutex<u64>,
    next: Mutex<u32>,
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
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": match *self.expires_in.lock().unwrap() { 0 => 3600, n => n },
            "refresh_token": format!("{CANARY}-refresh-{n}"),
        })
    }

    fn expire_all(&self) {
        self.valid.lock().unwrap().clear();
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
    match (parts.method.as_str(), parts.uri.path()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => json_response(
            200,
            json!({ "resource": format!("{o}/mcp"), "authorization_servers": [o] }),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => json_response(
            200,
            json!({
                "issuer": o,
                "authorization_endpoint": format!("{o}/authorize"),
                "token_endpoint": format!("{o}/token"),
                "registration_endpoint": format!("{o}/register"),
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": true,
            }),
        ),
        ("POST", "/register") => json_response(201, json!({ "client_id": "lifeline-test" })),
        ("GET", "/authorize") => {
            state.counts.lock().unwrap().authorize += 1;
            if *state.needs_person.lock().unwrap() {
                return full(200, Some("text/html"), "<form>log in</form>");
            }
            let q = query(&parts);
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
                .append_pair("iss", o);
            let mut resp = full(302, None, "");
            resp.headers_mut()
                .insert("location", to.as_str().parse().unwrap());
            resp
        }
        ("POST", "/token") => {
            let form = url_pairs(std::str::from_utf8(&body).unwrap());
            assert_eq!(form["resource"], format!("{o}/mcp"));
            match form["grant_type"].as_str() {
                "authorization_code" => {
                    state.counts.lock().unwrap().code_grants += 1;
                    let challenge = state.codes.lock().unwrap().remove(&form["code"]);
                    let computed =
                        URL_SAFE_NO_PAD.encode(Sha256::digest(form["code_verifier"].as_bytes()));
                    if challenge != Some(computed) {
                        return json_response(400, json!({ "error": "invalid_grant" }));
                    }
                    json_response(200, state.issue())
                }
                "refresh_token" => {
                    state.counts.lock().unwrap().refresh_grants += 1;
                    if *state.revoked.lock().unwrap() {
                        return json_response(400, json!({ "error": "invalid_grant" }));
                    }
                    json_response(200, state.issue())
                }
                _ => json_response(400, json!({ "error": "unsupported_grant_type" })),
            }
        }
        ("POST", "/mcp") => {
            let bearer = parts
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::to_owned);
            if !bearer.is_some_and(|b| state.valid.lock().unwrap().contains(&b)) {
                state.counts.lock().unwrap().unauthorized += 1;
                let mut resp = json_response(401, json!({ "error": "invalid_token" }));
                let challenge = format!(
                    "Bearer resource_metadata=\"{o}/.well-known/oauth-protected-resource/mcp\""
                );
                resp.headers_mut()
                    .insert("www-authenticate", challenge.parse().unwrap());
                return resp;
            }
            let msg: Value = serde_json::from_slice(&body).unwrap();
            let Some(id) = msg.get("id").cloned() else {
                return full(202, None, "");
            };
            let result = match msg["method"].as_str().unwrap_or("") {
                "initialize" => json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": "oauth-test", "version": "1" },
                }),
                "tools/list" => json!({ "tools": [] }),
                _ => json!({}),
            };
            json_response(200, json!({ "jsonrpc": "2.0", "id": id, "result": result }))
        }
        // No GET stream: 405, as the spec allows.
        _ => full(405, None, ""),
    }
}

async fn serve() -> Arc<As> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let state = Arc::new(As {
        origin: format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port()),
        ..As::default()
    });
    tokio::spawn(accept_loop(listener, state.clone(), route));
    state
}

async fn connect(state: &As, mode: SignIn) -> Result<Session, lifeline_core::Error> {
    let url = format!("{}/mcp", state.origin);
    let mut config = HttpConfig::new(&url);
    config.auth = Some(Arc::new(
        Authorizer::new(&url, OAuthSettings::default(), mode).unwrap(),
    ));
    let conn = http::connect(&config)?;
    Session::connect(conn, SessionOptions::default()).await
}

fn counts(state: &As) -> (usize, usize, usize) {
    let c = state.counts.lock().unwrap();
    (c.authorize, c.code_grants, c.refresh_grants)
}

fn assert_no_secret(e: &lifeline_core::Error) {
    for shown in [e.to_string(), format!("{e:?}")] {
        assert!(!shown.contains(CANARY), "a secret leaked: {shown}");
    }
}

#[tokio::test]
async fn signs_in_headless_then_refreshes_once_on_a_401() {
    let state = serve().await;
    let session = connect(&state, SignIn::FollowRedirect)
        .await
        .expect("signed in");
    assert_eq!(counts(&state), (1, 1, 0));
    session.list_tools().await.expect("listed with the token");
    state.expire_all();
    session.list_tools().await.expect("listed after a refresh");
    assert_eq!(counts(&state), (1, 1, 1), "one refresh, no new sign-in");
    session.close().await;
}

#[tokio::test]
async fn a_revoked_refresh_token_ends_in_sign_in_needed_without_a_loop() {
    let state = serve().await;
    let session = connect(&state, SignIn::FollowRedirect)
        .await
        .expect("signed in");
    *state.revoked.lock().unwrap() = true;
    *state.needs_person.lock().unwrap() = true;
    state.expire_all();
    let e = session.list_tools().await.expect_err("needs a person now");
    assert_eq!(e.kind(), ErrorKind::SignIn, "{e}");
    assert!(e.to_string().contains("needs a person to sign in"), "{e}");
    assert_no_secret(&e);
    // One refresh refused, one sign-in attempt that stopped at the login page, no more.
    assert_eq!(counts(&state), (2, 1, 1));
    session.close().await;
}

#[tokio::test]
async fn a_supervised_connection_never_signs_in_on_its_own() {
    let state = serve().await;
    let Err(e) = connect(&state, SignIn::Never).await else {
        panic!("connected without a token");
    };
    assert_eq!(e.kind(), ErrorKind::SignIn, "{e}");
    assert!(e.to_string().contains("sign-in needed"), "{e}");
    assert_eq!(
        counts(&state),
        (0, 0, 0),
        "the authorization endpoint was never asked"
    );
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    let state = serve().await;
    // Inside the 60 s margin from the start: every use refreshes first.
    *state.expires_in.lock().unwrap() = 30;
    let session = connect(&state, SignIn::FollowRedirect)
        .await
        .expect("signed in");
    let before = state.counts.lock().unwrap().unauthorized;
    session.list_tools().await.expect("listed");
    let c = state.counts.lock().unwrap();
    assert!(c.refresh_grants >= 1, "refreshed before sending");
    assert_eq!(c.unauthorized, before, "no 401 was needed");
    assert_eq!(c.authorize, 1, "no second sign-in");
}

#[tokio::test]
async fn a_supervised_oauth_server_is_retired_as_sign_in_needed_a_static_token_as_auth() {
    let state = serve().await;
    let dir = TempDirGuard::new("oauth-check");
    let url = format!("{}/mcp", state.origin);
    let config = write_config(
        &dir,
        json!({
            "with-oauth": { "url": url, "oauth": { "clientId": "pre", "clientSecret": "CANARY-oauth-cs" } },
            "no-header": { "url": url },
            "static-token": { "url": url, "headers": { "Authorization": "Bearer wrong" } },
        }),
    );
    let run = lifeline(&["check", "--json", "--config", config.to_str().unwrap()]).await;
    assert!(
        !run.stdout.contains(CANARY) && !run.stderr.contains(CANARY),
        "{run:?}"
    );
    let servers = run.outcome()["servers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let retired = |name: &str| {
        let s = servers
            .iter()
            .find(|s| s["server"] == name)
            .unwrap_or_else(|| panic!("{name}: {run:?}"));
        (
            s["state"].clone(),
            s["reason"].clone(),
            s["cause"]["kind"].clone(),
        )
    };
    assert_eq!(
        retired("with-oauth"),
        (json!("retired"), json!("sign_in"), json!("sign_in")),
        "{run:?}"
    );
    assert_eq!(
        retired("no-header"),
        (json!("retired"), json!("sign_in"), json!("sign_in")),
        "{run:?}"
    );
    assert_eq!(
        retired("static-token"),
        (json!("retired"), json!("auth"), json!("auth")),
        "{run:?}"
    );
    assert_eq!(counts(&state).0, 0, "no sign-in was attempted: {run:?}");
}
