//! One sign-in: the authorization request (code, PKCE S256, `state`, `resource`, the
//! chosen scopes) sent to the person's browser — or, headless, followed to the loopback
//! listener — then the callback checked (`state`; `iss` per RFC 9207) and the code
//! exchanged for tokens.

use super::loopback::{Callback, Listener};
use super::metadata::Discovered;
use super::pkce::{Pkce, random_token};
use super::register::{self, Client};
use super::token::{self, Grant, Tokens};
use super::{Endpoint, Http, OAuthSettings, auth_error, scope};
use crate::error::{Error, ErrorKind};
use reqwest::Url;
use std::sync::Arc;
use std::time::Duration;

/// Shows a sign-in URL to a person (opens the system browser).
pub type OpenUrl = Arc<dyn Fn(&str) -> Result<(), Error> + Send + Sync>;

/// How a sign-in reaches a person.
#[derive(Clone)]
pub enum SignIn {
    /// It does not: a server that needs one fails with "sign-in needed" (a supervised
    /// connection, which must never pop up a browser on its own).
    Never,
    /// Headless: the authorization endpoint is asked directly and its immediate redirect
    /// followed to the loopback listener (the conformance suite's servers, tests).
    FollowRedirect,
    /// `open` shows the URL to a person (the system browser), who has `wait` to finish.
    Open { open: OpenUrl, wait: Duration },
}

/// The error of a server that needs a person to sign in.
pub(crate) fn sign_in_needed() -> Error {
    Error::new(
        ErrorKind::SignIn,
        "sign-in needed: the server uses OAuth and Lifeline holds no valid token for it \
         (docs/auth.md)",
    )
}

/// How long a headless sign-in waits for its redirect to arrive.
const HEADLESS_WAIT: Duration = Duration::from_secs(30);

/// The authorization request URL.
pub fn authorization_url(
    endpoint: &str,
    client_id: &str,
    redirect_uri: &str,
    challenge: &str,
    state: &str,
    resource: &str,
    scopes: &[String],
) -> Result<Url, Error> {
    let mut url = Url::parse(endpoint)
        .map_err(|_| auth_error("the authorization endpoint is not a valid URL"))?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state)
            .append_pair("resource", resource);
        if let Some(s) = scope::scope_param(scopes) {
            q.append_pair("scope", &s);
        }
    }
    Ok(url)
}

/// Checks a callback against the request: the state, an error the server reported, and
/// the issuer (RFC 9207: required when the metadata says it is sent; checked whenever it
/// is). Returns the code.
pub fn check_callback(
    cb: &Callback,
    state: &str,
    issuer: &str,
    iss_advertised: bool,
) -> Result<String, Error> {
    if cb.state.as_deref() != Some(state) {
        return Err(auth_error(
            "the sign-in came back with a state that Lifeline did not send: ignored",
        ));
    }
    match cb.iss.as_deref() {
        // Compared as strings, with no normalization at all (RFC 9207 §2.4).
        Some(iss) if iss != issuer => {
            return Err(auth_error(
                "the sign-in came back from another issuer than the authorization server \
                 (RFC 9207): refused as a possible mix-up attack",
            ));
        }
        None if iss_advertised => {
            return Err(auth_error(
                "the sign-in came back without the issuer the authorization server promised \
                 to send (RFC 9207): refused",
            ));
        }
        _ => {}
    }
    if let Some(e) = &cb.error {
        let code = super::known_error(e).unwrap_or("an unknown error");
        return Err(auth_error(format!(
            "the authorization server refused the sign-in ({code})"
        )));
    }
    cb.code
        .clone()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| auth_error("the sign-in came back without an authorization code"))
}

/// MCP authorization 2025-11-25: PKCE with S256, and a sign-in only where the authorization
/// server's metadata says it supports it (`code_challenge_methods_supported`); a server
/// that does not say may not check the challenge at all.
pub fn check_pkce(methods: Option<&[String]>) -> Result<(), Error> {
    match methods {
        None => Err(auth_error(
            "the authorization server's metadata does not list code_challenge_methods_supported, \
             so it may not enforce PKCE: the MCP authorization spec (2025-11-25) requires \
             refusing to sign in",
        )),
        Some(m) if !m.iter().any(|m| m == "S256") => Err(auth_error(
            "the authorization server does not support PKCE with S256, which MCP requires",
        )),
        Some(_) => Ok(()),
    }
}

/// Runs one sign-in with `scopes` and returns the client used and the tokens granted.
pub async fn sign_in(
    http: &Http,
    settings: &OAuthSettings,
    found: &Discovered,
    scopes: &[String],
    mode: &SignIn,
) -> Result<(Client, Tokens), Error> {
    if matches!(mode, SignIn::Never) {
        return Err(sign_in_needed());
    }
    let server = &found.server;
    check_pkce(server.code_challenge_methods_supported.as_deref())?;
    let listener = Listener::bind(settings.callback_port).await?;
    let client = register::client(http, settings, server, &listener.redirect_uri).await?;
    let pkce = Pkce::new();
    let state = random_token(16);
    let resource = found.resource.resource.as_str();
    let url = authorization_url(
        &server.authorization_endpoint,
        &client.id,
        &listener.redirect_uri,
        &pkce.challenge,
        &state,
        resource,
        scopes,
    )?;
    // Discovery checked the endpoint already; this is the last look before anything opens it.
    let url = super::web::web_url(url.as_str())
        .map_err(|why| super::web::refused(Endpoint::Authorization.name(), why))?;
    let cb = match mode {
        SignIn::Never => return Err(sign_in_needed()),
        // The listener answers while the redirect is being followed: both at once.
        SignIn::FollowRedirect => {
            let follow = follow_redirect(http, &url, &listener.redirect_uri);
            tokio::try_join!(listener.wait(&state, HEADLESS_WAIT), follow)?.0
        }
        SignIn::Open { open, wait } => {
            open(url.as_str())?;
            listener.wait(&state, *wait).await?
        }
    };
    let code = check_callback(
        &cb,
        &state,
        &server.issuer,
        server.authorization_response_iss_parameter_supported,
    )?;
    let grant = Grant::Code {
        code: &code,
        verifier: &pkce.verifier,
        redirect_uri: &listener.redirect_uri,
    };
    let tokens = token::request(
        http,
        &server.token_endpoint,
        &client,
        grant,
        resource,
        scopes,
    )
    .await?;
    Ok((client, tokens))
}

/// The headless "browser": asks the authorization endpoint, which must answer with a
/// redirect to the loopback redirect URI at once (no login page), and follows it there.
async fn follow_redirect(http: &Http, url: &Url, redirect_uri: &str) -> Result<(), Error> {
    let resp = http.client().get(url.clone()).send().await.map_err(|e| {
        Error::transport(format!(
            "{} could not be reached",
            Endpoint::Authorization.name()
        ))
        .with(|c| c.io = Some(crate::error::io_kind_of(&e)))
    })?;
    let location = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|l| resp.url().join(l).ok())
        .filter(|_| resp.status().is_redirection());
    let Some(location) = location else {
        return Err(Error::new(
            ErrorKind::SignIn,
            format!(
                "the authorization endpoint answered {} instead of redirecting back: it needs a \
                 person to sign in in a browser",
                resp.status().as_u16()
            ),
        ));
    };
    if !location.as_str().starts_with(redirect_uri) {
        return Err(auth_error(
            "the authorization endpoint redirected somewhere other than Lifeline's redirect URI",
        ));
    }
    http.client().get(location).send().await.map_err(|_| {
        Error::transport("the sign-in redirect could not be delivered to Lifeline's listener")
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cb(state: &str, iss: Option<&str>, code: Option<&str>, error: Option<&str>) -> Callback {
        Callback {
            state: Some(state.into()),
            iss: iss.map(Into::into),
            code: code.map(Into::into),
            error: error.map(Into::into),
            error_description: None,
        }
    }

    #[test]
    fn callback_checks() {
        let ok =
            |c: Callback, advertised: bool| check_callback(&c, "s", "https://as/t", advertised);
        assert_eq!(
            ok(cb("s", Some("https://as/t"), Some("c"), None), true).unwrap(),
            "c"
        );
        assert_eq!(ok(cb("s", None, Some("c"), None), false).unwrap(), "c");
        // RFC 9207: a wrong issuer is refused whether or not it was advertised.
        assert!(ok(cb("s", Some("https://evil"), Some("c"), None), false).is_err());
        assert!(ok(cb("s", Some("https://as/t/"), Some("c"), None), true).is_err());
        assert!(ok(cb("s", Some("HTTPS://as/t"), Some("c"), None), true).is_err());
        assert!(ok(cb("s", None, Some("c"), None), true).is_err());
        assert!(ok(cb("x", Some("https://as/t"), Some("c"), None), true).is_err());
        assert!(ok(cb("s", None, None, None), false).is_err());
        let refused = ok(cb("s", None, None, Some("access_denied")), false).unwrap_err();
        assert!(refused.message().contains("(access_denied)"), "{refused}");
        let odd = ok(cb("s", None, None, Some("CANARYcode")), false).unwrap_err();
        assert!(!odd.message().contains("CANARY"), "{odd}");
    }

    #[test]
    fn pkce_is_required_and_must_be_s256() {
        let v = |s: &[&str]| s.iter().map(|m| (*m).to_owned()).collect::<Vec<_>>();
        assert!(check_pkce(Some(&v(&["S256"]))).is_ok());
        assert!(check_pkce(Some(&v(&["plain", "S256"]))).is_ok());
        let absent = check_pkce(None).unwrap_err();
        assert_eq!(absent.kind(), ErrorKind::Auth);
        assert!(
            absent
                .message()
                .contains("does not list code_challenge_methods_supported"),
            "{absent}"
        );
        assert!(check_pkce(Some(&v(&["plain"]))).is_err());
        assert!(check_pkce(Some(&[])).is_err());
    }

    #[test]
    fn authorization_request_parameters() {
        let url = authorization_url(
            "https://as/authorize?x=1",
            "id",
            "http://127.0.0.1:5/callback",
            "ch",
            "st",
            "http://h/mcp",
            &["a".into(), "b".into()],
        )
        .unwrap();
        let q: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        let get = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("x"), Some("1"));
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("resource"), Some("http://h/mcp"));
        assert_eq!(get("scope"), Some("a b"));
        let none = authorization_url("https://as/a", "id", "r", "c", "s", "res", &[]).unwrap();
        assert!(!none.query_pairs().any(|(k, _)| k == "scope"));
    }
}
