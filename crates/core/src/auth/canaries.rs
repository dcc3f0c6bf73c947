//! Everything an authorization server or a protected resource sends, with canaries in every
//! field it could put them (the resource, the issuer, each endpoint's URL and path, the
//! token type, error text, bodies that are not JSON), through the real discovery and token
//! requests against a loopback server: no error may quote any of it (`diagnostics::
//! error_canaries` covers the secrets Lifeline itself holds).

use super::metadata::{self, ResourceMetadata, ServerMetadata};
use super::register::{Client, TokenAuth};
use super::token::{self, Grant};
use super::{Endpoint, Http, Secret};
use crate::error::Error;
use reqwest::Url;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const CANARY: &str = "CANARY";

fn assert_clean(what: &str, e: &Error) {
    let shown = format!("{e}\n{e:?}");
    assert!(!shown.contains(CANARY), "{what}: {shown}");
}

/// A path, and the status and body it answers.
type Route = (String, u16, String);

/// Answers each path of `routes(origin)` with its status and body, on 127.0.0.1: the origin.
async fn serve(routes: impl FnOnce(&str) -> Vec<Route>) -> String {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let routes: Arc<HashMap<String, (u16, String)>> = Arc::new(
        routes(&origin)
            .into_iter()
            .map(|(path, status, body)| (path, (status, body)))
            .collect(),
    );
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let routes = routes.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then the body it announces (unread bytes would reset the answer).
                let (head_len, body_len) = loop {
                    let n = sock.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    got.extend_from_slice(&buf[..n]);
                    if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (end + 4, len);
                    }
                };
                while got.len() < head_len + body_len {
                    let n = sock.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                let line = String::from_utf8_lossy(&got)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_owned();
                let target = line.split_whitespace().nth(1).unwrap_or("/");
                let path = target.split('?').next().unwrap_or("/");
                let (status, body) = routes.get(path).cloned().unwrap_or((404, String::new()));
                let answer = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(answer.as_bytes()).await;
            });
        }
    });
    origin
}

const PRM: &str = "/.well-known/oauth-protected-resource/mcp";
const ASM: &str = "/.well-known/oauth-authorization-server";

fn prm(resource: Value, servers: Value) -> Route {
    (
        PRM.into(),
        200,
        json!({ "resource": resource, "authorization_servers": servers }).to_string(),
    )
}

/// The authorization server's metadata, with `over` laid over the good values.
fn asm(origin: &str, over: Value) -> Route {
    let mut doc = json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "code_challenge_methods_supported": ["S256"],
        "scopes_supported": [format!("{CANARY}-scope")],
    });
    for (k, v) in over.as_object().unwrap() {
        doc[k] = v.clone();
    }
    (ASM.into(), 200, doc.to_string())
}

/// Runs discovery for `<origin>/mcp` against `routes(origin)`: its error.
async fn discovery_error(routes: impl FnOnce(&str) -> Vec<Route>) -> Error {
    let origin = serve(routes).await;
    let server = Url::parse(&format!("{origin}/mcp")).unwrap();
    let http = Http::new().unwrap();
    metadata::discover(&http, &server, None)
        .await
        .expect_err("discovery refused")
}

type Routes = Box<dyn FnOnce(&str) -> Vec<Route>>;

#[tokio::test]
async fn discovery_errors_quote_nothing_the_servers_sent() {
    let cases: Vec<(&str, Routes)> = vec![
        (
            "a resource that is not this server",
            Box::new(|o| {
                vec![prm(
                    json!(format!("https://{CANARY}.example/{CANARY}")),
                    json!([o]),
                )]
            }),
        ),
        (
            "an authorization server with a custom scheme",
            Box::new(|o| {
                vec![prm(
                    json!(format!("{o}/mcp")),
                    json!([format!("{CANARY}app://{CANARY}")]),
                )]
            }),
        ),
        (
            "an authorization server over http elsewhere",
            Box::new(|o| {
                vec![prm(
                    json!(format!("{o}/mcp")),
                    json!([format!("http://{CANARY}.example/{CANARY}")]),
                )]
            }),
        ),
        (
            "an authorization server that is not a URL",
            Box::new(|o| {
                vec![prm(
                    json!(format!("{o}/mcp")),
                    json!([format!("{CANARY} {CANARY}")]),
                )]
            }),
        ),
        (
            "an authorization server with no metadata",
            Box::new(|o| {
                vec![prm(
                    json!(format!("{o}/mcp")),
                    json!([format!("{o}/{CANARY}")]),
                )]
            }),
        ),
        (
            "another issuer in the metadata",
            Box::new(|o| {
                vec![
                    prm(json!(format!("{o}/mcp")), json!([o])),
                    asm(o, json!({ "issuer": format!("https://{CANARY}.example") })),
                ]
            }),
        ),
        (
            "endpoints it must not use",
            Box::new(|o| {
                vec![
                    prm(json!(format!("{o}/mcp")), json!([o])),
                    asm(
                        o,
                        json!({
                            "authorization_endpoint": format!("file:///{CANARY}/x.exe"),
                            "token_endpoint": format!("http://{CANARY}.example/{CANARY}"),
                        }),
                    ),
                ]
            }),
        ),
        (
            "a token endpoint with user info",
            Box::new(|o| {
                vec![
                    prm(json!(format!("{o}/mcp")), json!([o])),
                    asm(
                        o,
                        json!({
                            "token_endpoint": format!("https://{CANARY}:{CANARY}@as.example/token"),
                        }),
                    ),
                ]
            }),
        ),
        (
            "a registration endpoint with another app's scheme",
            Box::new(|o| {
                vec![
                    prm(json!(format!("{o}/mcp")), json!([o])),
                    asm(
                        o,
                        json!({
                            "registration_endpoint": format!("ms-officecmd:{CANARY}"),
                        }),
                    ),
                ]
            }),
        ),
        (
            "a revocation endpoint with a search scheme",
            Box::new(|o| {
                vec![
                    prm(json!(format!("{o}/mcp")), json!([o])),
                    asm(
                        o,
                        json!({
                            "revocation_endpoint": format!("search-ms:query={CANARY}"),
                        }),
                    ),
                ]
            }),
        ),
        (
            "metadata that is not JSON",
            Box::new(|o| {
                vec![
                    prm(json!(format!("{o}/mcp")), json!([o])),
                    (ASM.into(), 200, format!("<{CANARY}>")),
                ]
            }),
        ),
        (
            "metadata of the wrong shape",
            Box::new(|_| {
                vec![(
                    PRM.into(),
                    200,
                    json!({ "resource": 5, "x": CANARY }).to_string(),
                )]
            }),
        ),
        (
            "metadata that fails",
            Box::new(|o| {
                vec![
                    prm(json!(format!("{o}/mcp")), json!([o])),
                    (
                        ASM.into(),
                        500,
                        json!({ "error": CANARY, "error_description": CANARY }).to_string(),
                    ),
                ]
            }),
        ),
    ];
    for (what, routes) in cases {
        let e = discovery_error(routes).await;
        assert_clean(what, &e);
    }
}

fn client() -> Client {
    Client {
        id: "id".into(),
        secret: None,
        auth: TokenAuth::None,
    }
}

/// The token endpoint at `<origin><path>` answering `status` and `body`: the error.
async fn token_error(path: &str, status: u16, body: String) -> Error {
    let origin = serve(|_| vec![(path.to_owned(), status, body)]).await;
    let http = Http::new().unwrap();
    let grant = Grant::Refresh { refresh_token: "r" };
    let endpoint = format!("{origin}{path}?{CANARY}=1");
    token::request(&http, &endpoint, &client(), grant, "https://h/mcp", &[])
        .await
        .expect_err("the token request failed")
}

#[tokio::test]
async fn token_errors_quote_nothing_the_server_sent() {
    let token_path = format!("/token/{CANARY}-path");
    let cases = [
        (
            "an unknown token type",
            200,
            json!({ "access_token": "a", "token_type": format!("{CANARY}-type") }),
        ),
        (
            "an unknown error",
            400,
            json!({ "error": format!("{CANARY}-code"), "error_description": CANARY, "error_uri": CANARY }),
        ),
        (
            "a known error with text",
            400,
            json!({ "error": "invalid_grant", "error_description": CANARY }),
        ),
        (
            "an outage",
            503,
            json!({ "error": "temporarily_unavailable", "x": CANARY }),
        ),
        (
            "the wrong shape",
            200,
            json!({ "access_token": 5, "x": CANARY }),
        ),
    ];
    for (what, status, body) in cases {
        let e = token_error(&token_path, status, body.to_string()).await;
        assert_clean(what, &e);
        assert!(
            e.message().contains(Endpoint::Token.name()) || what == "an unknown token type",
            "{what}: {e}"
        );
    }
    let e = token_error(&token_path, 200, format!("<{CANARY}>")).await;
    assert_clean("a body that is not JSON", &e);
    let e = token_error(
        "/token",
        200,
        json!({ "access_token": "a", "token_type": "dpop" }).to_string(),
    )
    .await;
    assert!(e.message().contains("issued a DPoP token"), "{e}");
}

#[tokio::test]
async fn registration_and_revocation_errors_quote_nothing_the_server_sent() {
    let path = format!("/{CANARY}-path");
    let origin = serve(|_| vec![(path.clone(), 500, format!("{CANARY} {CANARY}"))]).await;
    let http = Http::new().unwrap();
    let url = format!("{origin}{path}");
    let e = http
        .post_json::<Value>(&url, Endpoint::Registration, &json!({}))
        .await
        .expect_err("registration failed");
    assert_clean("registration", &e);
    let e = token::revoke(&http, &url, &client(), &Secret::new("t"))
        .await
        .expect_err("revocation failed");
    assert_clean("revocation", &e);
    // Where no credential may go, nothing is sent at all.
    let e = http
        .post_json::<Value>(
            &format!("http://{CANARY}.example/r"),
            Endpoint::Registration,
            &json!({}),
        )
        .await
        .expect_err("refused");
    assert_clean("registration elsewhere over http", &e);
    assert!(
        e.message()
            .contains("the registration endpoint was refused"),
        "{e}"
    );
}

#[test]
fn checks_quote_nothing_the_documents_hold() {
    let server = Url::parse("https://mcp.example/mcp").unwrap();
    let doc = ResourceMetadata {
        resource: format!("https://mcp.example/{CANARY}"),
        authorization_servers: vec![format!("https://{CANARY}.example")],
        scopes_supported: Some(vec![CANARY.into()]),
    };
    assert_clean(
        "resource",
        &metadata::check_resource(&server, &doc).unwrap_err(),
    );
    let meta = ServerMetadata {
        issuer: format!("https://{CANARY}.example"),
        authorization_endpoint: format!("javascript:{CANARY}"),
        token_endpoint: format!("http://127.0.0.1/{CANARY}"),
        ..ServerMetadata::default()
    };
    assert_clean(
        "issuer",
        &metadata::check_server(&server, "https://as.example", &meta).unwrap_err(),
    );
    assert_clean(
        "endpoints",
        &metadata::check_server(&server, &meta.issuer.clone(), &meta).unwrap_err(),
    );
}
