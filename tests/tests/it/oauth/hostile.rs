//! What a hostile server or a hostile local process cannot make a sign-in do: open an address
//! that is not a web one, sign in without PKCE, fetch metadata from another origin, stop the
//! loopback redirect with a wrong `state` or a stalled connection, or get its own words into
//! an error. The fixture authorization server, with fields laid over its documents.

use super::server::{As, CANARY, Overrides, serve};
use super::{connect, counts};
use lifeline_core::ErrorKind;
use lifeline_core::auth::{OpenUrl, SignIn};
use lifeline_it::http::{accept_loop, full};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long any one sign-in here may take before the test says what did not happen.
const BOUND: Duration = Duration::from_secs(20);

/// A `SignIn::Open` whose browser is `browse`, run on its own task with the URL; the URLs
/// it was asked to open.
fn browser<F, Fut>(browse: F) -> (SignIn, Arc<Mutex<Vec<String>>>)
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let opened = Arc::new(Mutex::new(Vec::new()));
    let seen = opened.clone();
    let open: OpenUrl = Arc::new(move |url: &str| {
        seen.lock().unwrap().push(url.to_owned());
        tokio::spawn(browse(url.to_owned()));
        Ok(())
    });
    let mode = SignIn::Open { open, wait: BOUND };
    (mode, opened)
}

/// A `SignIn::Open` whose browser must never be asked: it keeps what it was asked to open
/// and fails at once (as `Cancelled`), so that a sign-in that opens anything ends there.
fn no_browser() -> (SignIn, Arc<Mutex<Vec<String>>>) {
    let opened = Arc::new(Mutex::new(Vec::new()));
    let seen = opened.clone();
    let open: OpenUrl = Arc::new(move |url: &str| {
        seen.lock().unwrap().push(url.to_owned());
        Err(lifeline_core::Error::new(
            ErrorKind::Cancelled,
            "the test's browser was asked to open an address",
        ))
    });
    (SignIn::Open { open, wait: BOUND }, opened)
}

/// The error of connecting to `state` signing in the way `mode` says, which must fail.
async fn refused(state: &As, mode: SignIn) -> lifeline_core::Error {
    let connected = tokio::time::timeout(BOUND, connect(state, mode))
        .await
        .expect("the sign-in did not end within the bound");
    match connected {
        Ok(_) => panic!("connected: the sign-in was not refused"),
        Err(e) => e,
    }
}

fn set(state: &As, server: Value) {
    let over = &mut state.overrides.lock().unwrap();
    over.server = server.as_object().unwrap().clone();
}

#[tokio::test]
async fn only_web_addresses_are_opened() {
    for endpoint in [
        "file:///C:/Users/me/Downloads/setup.exe",
        "search-ms:query=invoice&crumb=location:%5C%5Cevil.example%5Cshare",
        "ms-officecmd:{\"id\":3}",
        "javascript:alert(1)",
        "lifeline-evil://run",
        "http://192.0.2.1/authorize",
    ] {
        let state = serve().await;
        set(&state, json!({ "authorization_endpoint": endpoint }));
        let (mode, opened) = no_browser();
        let e = refused(&state, mode).await;
        assert!(opened.lock().unwrap().is_empty(), "{endpoint} was opened");
        assert_eq!(e.kind(), ErrorKind::Auth, "{endpoint}: {e}");
        assert!(
            e.to_string()
                .contains("the authorization endpoint was refused"),
            "{endpoint}: {e}"
        );
        assert_eq!(state.counts().registrations, 0, "{endpoint}: registered");
    }
}

#[tokio::test]
async fn an_authorization_server_that_does_not_list_pkce_is_refused() {
    let state = serve().await;
    set(&state, json!({ "code_challenge_methods_supported": null }));
    let (mode, opened) = no_browser();
    let e = refused(&state, mode).await;
    assert!(opened.lock().unwrap().is_empty(), "a browser was opened");
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    assert!(
        e.to_string()
            .contains("does not list code_challenge_methods_supported"),
        "{e}"
    );
    assert_eq!(state.counts().registrations, 0, "registered");
}

/// Reads the whole answer to `request` sent on a new connection to `addr`.
async fn raw_get(addr: &str, request: &str) -> String {
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    sock.read_to_string(&mut answer).await.unwrap();
    answer
}

/// Before the browser comes back, a local process holds a silent connection, drips a
/// request a byte a second, and sends a callback with a guessed `state`.
async fn hostile_then_real(url: String) {
    let url = reqwest::Url::parse(&url).unwrap();
    let redirect: String = url
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    let addr = reqwest::Url::parse(&redirect).unwrap();
    let addr = format!("127.0.0.1:{}", addr.port().unwrap());
    let _silent = TcpStream::connect(&addr).await.unwrap();
    let drip_addr = addr.clone();
    let drip = tokio::spawn(async move {
        let mut sock = TcpStream::connect(&drip_addr).await.unwrap();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        for b in b"GET /callback?code=slow&state=slow HTTP/1.1\r\n\r\n" {
            tick.tick().await;
            sock.write_all(&[*b]).await.unwrap();
        }
    });
    let wrong = raw_get(
        &addr,
        "GET /callback?code=evil&state=guessed HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    .await;
    assert!(wrong.starts_with("HTTP/1.1 400 "), "{wrong}");
    assert!(wrong.contains("was ignored"), "{wrong}");
    // The real browser: the authorization endpoint redirects at once.
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let to = http.get(url).send().await.unwrap();
    let location = to.headers()["location"].to_str().unwrap().to_owned();
    let back = http.get(location).send().await.unwrap();
    assert_eq!(back.status(), 200, "the real redirect was answered");
    drip.abort();
}

#[tokio::test]
async fn no_local_process_stops_the_redirect() {
    let state = serve().await;
    let (mode, opened) = browser(hostile_then_real);
    let session = tokio::time::timeout(BOUND, connect(&state, mode))
        .await
        .expect("the sign-in finished despite the other connections")
        .expect("signed in with the real redirect");
    assert_eq!(opened.lock().unwrap().len(), 1);
    assert_eq!(counts(&state), (1, 1, 0));
    session.list_tools().await.expect("listed with the token");
    session.close().await;
}

/// A listener that counts the requests it gets and answers each 404.
async fn counting() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let origin = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let hits = Arc::new(AtomicUsize::new(0));
    tokio::spawn(accept_loop(
        listener,
        hits.clone(),
        |hits, _, _| async move {
            hits.fetch_add(1, Ordering::SeqCst);
            full(404, None, "")
        },
    ));
    (origin, hits)
}

#[tokio::test]
async fn a_401_naming_metadata_on_another_origin_is_not_fetched() {
    let (elsewhere, hits) = counting().await;
    let state = serve().await;
    state.overrides.lock().unwrap().challenge_metadata = Some(format!(
        "{elsewhere}/.well-known/oauth-protected-resource/mcp"
    ));
    let Err(e) = connect(&state, SignIn::Never).await else {
        panic!("connected without a token");
    };
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the other origin was asked");
    // Discovery went on at the server's own well-known address instead.
    assert_eq!(e.kind(), ErrorKind::SignIn, "{e}");
}

/// The error of connecting to `state` with a headless sign-in.
async fn sign_in_error(state: &As) -> lifeline_core::Error {
    refused(state, SignIn::FollowRedirect).await
}

fn fields(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// A server that puts a canary in one field at a time, each failing the sign-in: no error
/// quotes it (the resource, the issuer, each endpoint's scheme, host and path, the token
/// type, the token answer). Every case runs; the leaks are listed together.
#[tokio::test]
async fn errors_quote_nothing_the_server_sent() {
    type Case = (&'static str, fn(&str) -> Overrides);
    let cases: [Case; 9] = [
        ("resource", |o| Overrides {
            resource: fields(json!({ "resource": format!("{o}/{CANARY}-resource") })),
            ..Overrides::default()
        }),
        ("authorization server without metadata", |o| Overrides {
            resource: fields(json!({ "authorization_servers": [format!("{o}/{CANARY}-as")] })),
            ..Overrides::default()
        }),
        ("issuer", |_| Overrides {
            server: fields(json!({ "issuer": format!("https://{CANARY}-issuer.example") })),
            ..Overrides::default()
        }),
        ("token endpoint scheme", |_| Overrides {
            server: fields(json!({ "token_endpoint": format!("{CANARY}-scheme://{CANARY}/t") })),
            ..Overrides::default()
        }),
        ("token endpoint host", |_| Overrides {
            server: fields(json!({ "token_endpoint": format!("http://{CANARY}.example/t") })),
            ..Overrides::default()
        }),
        ("token endpoint path", |o| Overrides {
            server: fields(json!({ "token_endpoint": format!("{o}/{CANARY}-path/token") })),
            ..Overrides::default()
        }),
        ("registration endpoint path", |o| Overrides {
            server: fields(json!({ "registration_endpoint": format!("{o}/{CANARY}-path/r") })),
            ..Overrides::default()
        }),
        ("token_type", |_| Overrides {
            token: fields(json!({ "token_type": format!("{CANARY}-type") })),
            ..Overrides::default()
        }),
        ("a token answer without a token", |_| Overrides {
            token: fields(json!({ "access_token": null, "error_description": CANARY })),
            ..Overrides::default()
        }),
    ];
    let mut leaks = Vec::new();
    for (what, over) in cases {
        let state = serve().await;
        *state.overrides.lock().unwrap() = over(&state.origin);
        let e = sign_in_error(&state).await;
        let shown = format!("{e}\n{e:?}");
        if shown.contains(CANARY) {
            leaks.push(format!("{what}: {shown}"));
        }
    }
    assert!(
        leaks.is_empty(),
        "errors quoted the server:\n{}",
        leaks.join("\n")
    );
}
