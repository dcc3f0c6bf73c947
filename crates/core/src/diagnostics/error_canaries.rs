//! Every error type the core defines, built through its real constructors with canary
//! secrets in everything a caller or a peer could put there, then formatted with both
//! Display and Debug: no canary may survive either.

use crate::config::{ConfigError, parse};
use crate::error::{Error, ErrorKind};
use crate::protocol::Message;
use crate::redact::Redactor;
use crate::transport::http::errors::{Target, status_error};
use crate::transport::sse::Decoder;
use crate::transport::stdio::{StdioConfig, spawn};

const MS: std::time::Duration = std::time::Duration::from_millis(1);

/// Configured canaries (only a redactor that knows them can scrub them) and shaped ones
/// (scrubbed by shape alone).
const CONFIGURED: [&str; 3] = ["CANARY-hdr-1f2e", "CANARY-env-3d4c", "CANARY-body-5b6a"];
const SHAPED: [&str; 5] = [
    "sk-CANARYshape0001",
    "ghp_CANARYshape0002",
    "eyJhbGciOiJIUzI1NiJ9.eyJDQU5BUlkiOjF9.CANARYsig0003",
    "CANARYpw0004",
    "CANARYq0005",
];

/// The shapes of issue 12: a connection string's password, a key in a URL path, a
/// compact JSON field, an OAuth fragment, a cookie header line, newer key prefixes.
const SHAPED_MORE: [&str; 7] = [
    "CANARYconn0006",
    "CANARYpath7Zq2Xw9Lm4Rt0007",
    "CANARYjson0008",
    "CANARYfrag0009",
    "CANARYcookie0010",
    "AIzaCANARY0011abcdefghijklmnopqrstuvwxyz",
    "hf_CANARY0012abcdefghijklmnopqrstuvwxyz",
];

fn assert_clean(what: &str, e: &(impl std::fmt::Display + std::fmt::Debug)) {
    let shown = format!("{e}\n{e:?}");
    for canary in CONFIGURED.iter().chain(&SHAPED).chain(&SHAPED_MORE) {
        assert!(!shown.contains(canary), "{what}: {canary} in {shown}");
    }
}

/// A sentence holding every shaped canary the way a peer or an OS message might.
fn shaped_sentence() -> String {
    let [conn, path, json, fragment, cookie, google, hf] = SHAPED_MORE;
    format!(
        "failed with {} and {} (jwt {}) at https://u:{}@h.example/mcp?k={} --token={} \
         via mongodb+srv://app:{conn}@c0.example.net/db, GET https://h.example/mcp/{path}/sse \
         {{\"password\":\"{json}\"}} /cb#access_token={fragment} {google} {hf}\n\
         Cookie: a=1; s={cookie}",
        SHAPED[0], SHAPED[1], SHAPED[2], SHAPED[3], SHAPED[4], SHAPED[0]
    )
}

#[test]
fn a_core_error_scrubs_shapes_urls_and_arguments_itself() {
    for kind in [ErrorKind::Server, ErrorKind::Transport, ErrorKind::Config] {
        let e = Error::new(kind, shaped_sentence());
        assert_clean("Error::new", &e);
        assert_clean("Error::closed_because", &Error::closed_because(&e));
        let with_source = Error::transport("x").caused_by(std::io::Error::other(shaped_sentence()));
        assert_clean("Error with a source", &with_source);
    }
}

#[test]
fn http_status_errors_scrub_server_bodies() {
    let target = Target {
        method: "POST",
        url_path: "/mcp".into(),
        authority: "127.0.0.1:1".into(),
    };
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":-32000,"message":"{} {} {}"}}}}"#,
        CONFIGURED[2],
        CONFIGURED[0],
        shaped_sentence()
    );
    let redactor = Redactor::new(CONFIGURED);
    for status in [400, 401, 403, 404, 429, 500, 503] {
        let status = reqwest::StatusCode::from_u16(status).expect("a status");
        let e = status_error(&target, status, None, body.as_bytes(), true, &redactor);
        assert_clean("status_error", &e);
    }
}

#[test]
fn config_errors_never_quote_a_secret() {
    let bad = format!(
        r#"{{"mcpServers": {{
            "a": {{ "url": "ftp://u:{pw}@h/x?k={q}", "headers": {{ "Authorization": 5 }} }},
            "b": {{ "command": "", "env": {{ "TOKEN": 7, "X": "{env} ${{NOT_SET_ANYWHERE}}" }} }},
            "c": {{ "url": "https://u:{pw}@h/x?k={q}", "headers": {{ "A": "{hdr}" }},
                    "reconnect": {{ "initialDelayMs": 0 }} }},
            "d": {{ "command": "run", "args": ["--token={shape}", 3] }}
        }}}}"#,
        pw = SHAPED[3],
        q = SHAPED[4],
        env = CONFIGURED[1],
        hdr = CONFIGURED[0],
        shape = SHAPED[0],
    );
    let e: ConfigError = parse(&bad, None, &|_| None).expect_err("an invalid config");
    assert_clean("ConfigError (invalid)", &e);
    let syntax = format!(
        r#"{{"mcpServers": {{"a": {{"headers": {{"A": "{}" }}"#,
        SHAPED[0]
    );
    let e = parse(&syntax, None, &|_| None).expect_err("a syntax error");
    assert_clean("ConfigError (syntax)", &e);
}

#[test]
fn expansion_errors_name_the_variable_only() {
    let input = format!(
        "Bearer {} ${{MISSING}} ${{input:{}}} ${{",
        SHAPED[0], SHAPED[1]
    );
    let errors = crate::config::expand::expand(&input, &|_| None).expect_err("unset");
    for e in &errors {
        assert_clean("ExpandError", e);
    }
}

#[test]
fn protocol_and_stream_errors_never_quote_the_input() {
    let garbage = format!("{{\"jsonrpc\":\"1.0\",\"x\":\"{}\"}}", CONFIGURED[2]);
    let e = Message::parse_many(garbage.as_bytes()).expect_err("not JSON-RPC");
    assert_clean("ParseError", &e);
    let mut decoder = Decoder::new(16);
    let line = format!("data: {}{}\n", SHAPED[0], CONFIGURED[2]);
    let e = decoder.feed(line.as_bytes()).expect_err("too large");
    assert_clean("DecodeError", &format_args!("{e:?}"));
}

#[test]
fn policy_errors_hold_numbers_only() {
    let zero = std::time::Duration::ZERO;
    let e = crate::policy::check_ms("reconnect.initialDelayMs", zero, zero + MS)
        .expect_err("below the minimum");
    assert_clean("PolicyError", &e);
}

#[tokio::test]
async fn spawn_errors_scrub_arguments_and_env() {
    let mut config = StdioConfig::new(
        format!("/nonexistent/{}", CONFIGURED[1]),
        vec![
            format!("--token={}", SHAPED[0]),
            "--api-key".into(),
            SHAPED[3].into(),
        ],
    );
    config.env = vec![("SECRET".into(), CONFIGURED[1].into())];
    let e = spawn(&config).err().expect("a spawn error");
    assert_clean("spawn error", &e);
}

/// OAuth secrets: tokens, refresh tokens, client secrets, codes, PKCE verifiers.
const OAUTH: [&str; 5] = [
    "CANARYaccess0013",
    "CANARYrefresh0014",
    "CANARYclientsecret0015",
    "CANARYcode0016",
    "CANARYverifier0017",
];

fn assert_no_oauth_secret(what: &str, e: &(impl std::fmt::Display + std::fmt::Debug)) {
    let shown = format!("{e}\n{e:?}");
    for canary in OAUTH {
        assert!(!shown.contains(canary), "{what}: {canary} in {shown}");
    }
}

#[test]
fn sign_in_errors_never_quote_a_token_or_a_code() {
    let [access, refresh, secret, code, verifier] = OAUTH;
    // An authorization server that echoes everything back in its error answer (errors name
    // the endpoint by its role, never by its URL: auth/canaries.rs).
    let body = format!(
        r#"{{"error":"{code}","error_description":"{access} {refresh} {secret} {verifier}",
            "access_token":"{access}","refresh_token":"{refresh}"}}"#
    );
    for status in [400, 401, 429, 500, 503] {
        let status = reqwest::StatusCode::from_u16(status).expect("a status");
        let e = crate::auth::status_error(
            "POST",
            crate::auth::Endpoint::Token,
            status,
            body.as_bytes(),
        );
        assert_no_oauth_secret("auth::status_error", &e);
    }
    let with_known = body.replacen(code, "invalid_grant", 1);
    let e = crate::auth::status_error(
        "POST",
        crate::auth::Endpoint::Token,
        reqwest::StatusCode::BAD_REQUEST,
        with_known.as_bytes(),
    );
    assert!(e.to_string().contains("invalid_grant"), "{e}");
    assert_no_oauth_secret("auth::status_error (known code)", &e);
    // A callback with an unexpected error value, and tokens shown through Debug.
    let cb = crate::auth::loopback::Callback {
        code: Some(code.into()),
        state: Some("s".into()),
        iss: None,
        error: Some(access.into()),
        error_description: Some(refresh.into()),
    };
    let e = crate::auth::flow::check_callback(&cb, "s", "https://as.example", false)
        .expect_err("an error callback");
    assert_no_oauth_secret("check_callback", &e);
    assert_no_oauth_secret("Callback", &format_args!("{cb:?}"));
    let tokens = crate::auth::Tokens {
        access: crate::redact::Secret::new(access),
        refresh: Some(crate::redact::Secret::new(refresh)),
        expires_at: None,
        scopes: vec!["s".into()],
    };
    assert_no_oauth_secret("Tokens", &format_args!("{tokens:?}"));
    let settings = crate::auth::OAuthSettings {
        client_secret: Some(crate::redact::Secret::new(secret)),
        ..Default::default()
    };
    assert_no_oauth_secret("OAuthSettings", &format_args!("{settings:?}"));
}
