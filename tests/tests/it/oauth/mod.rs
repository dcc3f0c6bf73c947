//! OAuth sign-in end to end on loopback: lifeline-core's Streamable HTTP transport with an
//! `auth::Authorizer` against an authorization server and a protected MCP endpoint written
//! here (one hyper server, two roles). Headless sign-in follows the authorization
//! endpoint's redirect to Lifeline's loopback listener, as the conformance suite's do.

use crate::cli::lifeline;
use crate::support::{TempDirGuard, write_config};
use lifeline_core::auth::{Authorizer, OAuthSettings, SignIn};
use lifeline_core::transport::http::{self, HttpConfig};
use lifeline_core::{ErrorKind, Session, SessionOptions};
use serde_json::json;
use server::{As, CANARY, serve};
use std::sync::Arc;

mod hostile;
mod kept;
mod server;

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
    let c = state.counts();
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

#[tokio::test]
async fn the_legacy_sse_transport_signs_in_and_refreshes_too() {
    let state = serve().await;
    let url = format!("{}/mcp/sse", state.origin);
    let mut config = HttpConfig::new(&url);
    config.auth = Some(Arc::new(
        Authorizer::new(&url, OAuthSettings::default(), SignIn::FollowRedirect).unwrap(),
    ));
    let conn = http::legacy::connect(&config).expect("a legacy transport");
    let session = Session::connect(conn, SessionOptions::default())
        .await
        .expect("the stream's GET signed in");
    assert_eq!(counts(&state), (1, 1, 0));
    session.list_tools().await.expect("listed with the token");
    state.expire_all();
    session
        .list_tools()
        .await
        .expect("the POST refreshed on its 401");
    assert_eq!(counts(&state), (1, 1, 1), "one refresh, no new sign-in");
    session.close().await;
}
