//! OAuth 2.1 sign-in for remote servers, client side (MCP authorization 2025-11-25):
//! discovery of the protected resource and its authorization server (`metadata`), the
//! scopes to ask for (`scope`), the client registration (`register`), authorization code
//! with PKCE S256 through a loopback redirect (`pkce`, `loopback`, `flow`), the token
//! endpoint (`token`), and the `Authorizer` that an HTTP transport asks for a bearer token
//! and tells about a 401 or a 403 `insufficient_scope` (`authorizer`).
//!
//! Architecture invariant: tokens, refresh tokens, client secrets, codes, PKCE verifiers
//! and `state` values are `Secret`s or stay inside this module; no error built here
//! carries one (errors name endpoints by URL path at most, and server text is never
//! quoted except the OAuth `error` code).

mod authorizer;
pub mod browser;
pub mod challenge;
pub mod flow;
pub mod loopback;
pub mod metadata;
pub mod pkce;
pub mod register;
pub mod scope;
pub mod store;
pub mod token;

pub use authorizer::{Authorizer, Observer};
pub use challenge::Challenge;
pub use flow::{OpenUrl, SignIn};
pub use token::Tokens;

use crate::error::{Error, ErrorKind, IoKind};
pub use crate::redact::Secret;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The `oauth` block of a server's config, and what the embedding program adds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthSettings {
    /// A client id registered with the authorization server ahead of time.
    pub client_id: Option<String>,
    pub client_secret: Option<Secret>,
    /// Scopes to ask for when the server's challenge names none.
    pub scopes: Vec<String>,
    /// The loopback port of the redirect URI; an ephemeral one when `None`.
    pub callback_port: Option<u16>,
    /// The URL of Lifeline's Client ID Metadata Document, used as the client id where the
    /// authorization server supports such documents. Lifeline publishes none yet, so this
    /// is only set by the conformance client (which is handed the suite's URL).
    pub client_metadata_url: Option<String>,
}

/// The error of a sign-in that cannot go on: waiting does not fix it.
pub(crate) fn auth_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Auth, message)
}

/// How long one request to an authorization server may take.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest metadata or token document accepted.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// The HTTP client of the sign-in: no redirects followed (a metadata or token endpoint
/// that redirects is refused), JSON answers capped, errors without any server text but
/// the OAuth `error` code.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
}

impl Http {
    pub fn new() -> Result<Http, Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .tls_backend_preconfigured(crate::tls::tls_config()?)
            .build()
            .map_err(|_| Error::config("could not set up the HTTP client for sign-in"))?;
        Ok(Http { client })
    }

    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// A metadata document, or `None` when the URL answers 4xx (not there: try the next).
    pub async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<Option<T>, Error> {
        let req = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json");
        let (status, body) = self.send(req, "GET", url).await?;
        if status.is_client_error() || status.is_redirection() {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(status_error("GET", url, status, &body));
        }
        serde_json::from_slice(&body).map(Some).map_err(|_| {
            auth_error(format!(
                "GET {}: the metadata is not the JSON OAuth expects",
                path_of(url)
            ))
        })
    }

    pub async fn post_json<T: DeserializeOwned>(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<T, Error> {
        let req = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body.to_string());
        self.answer(req, url).await
    }

    /// A form POST, with HTTP Basic credentials (already form-encoded) when given.
    pub async fn post_form<T: DeserializeOwned>(
        &self,
        url: &str,
        form: String,
        basic: Option<(String, String)>,
    ) -> Result<T, Error> {
        let mut req = self
            .client
            .post(url)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(form);
        if let Some((id, secret)) = basic {
            req = req.basic_auth(id, Some(secret));
        }
        self.answer(req, url).await
    }

    async fn answer<T: DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<T, Error> {
        let (status, body) = self.send(req, "POST", url).await?;
        if !status.is_success() {
            return Err(status_error("POST", url, status, &body));
        }
        serde_json::from_slice(&body).map_err(|_| {
            auth_error(format!(
                "POST {}: the answer is not the JSON OAuth expects",
                path_of(url)
            ))
        })
    }

    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        method: &str,
        url: &str,
    ) -> Result<(reqwest::StatusCode, Vec<u8>), Error> {
        let sent = async {
            let mut resp = req.send().await?;
            let status = resp.status();
            let mut body = Vec::new();
            while let Some(chunk) = resp.chunk().await? {
                if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, reqwest::Error>((status, body))
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, sent).await {
            Err(_) => Err(Error::timeout(format!(
                "{method} {} at the authorization server timed out",
                path_of(url)
            ))
            .with(|c| c.io = Some(IoKind::Timeout))),
            Ok(Err(e)) => Err(Error::transport(format!(
                "{method} {} at the authorization server failed: could not connect",
                path_of(url)
            ))
            .with(|c| c.io = Some(crate::error::io_kind_of(&e)))),
            Ok(Ok(r)) => Ok(r),
        }
    }
}

/// The OAuth error codes an error may quote (RFC 6749 §4.1.2.1 and §5.2, RFC 7591 §3.2.2,
/// RFC 8707, RFC 6750): anything else a server sends in `error` is not repeated, since it
/// could be anything.
const KNOWN_ERRORS: &[&str] = &[
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "unsupported_response_type",
    "invalid_scope",
    "access_denied",
    "server_error",
    "temporarily_unavailable",
    "too_many_requests",
    "invalid_client_metadata",
    "invalid_redirect_uri",
    "invalid_target",
    "invalid_token",
    "insufficient_scope",
];

/// `code` if it is a known OAuth error code.
pub fn known_error(code: &str) -> Option<&'static str> {
    KNOWN_ERRORS.iter().find(|k| **k == code).copied()
}

/// The OAuth `error` code of an error answer (RFC 6749 §5.2), if it is a known one.
pub fn oauth_error_code(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    known_error(v.get("error")?.as_str()?).map(str::to_owned)
}

/// An authorization server's refusal: 5xx, 429 and the OAuth codes that mean "later" are
/// transient (`Server`, `RateLimited`); anything else (`invalid_grant`, `invalid_client`, …)
/// is `Auth`, which waiting does not fix.
pub(crate) fn status_error(
    method: &str,
    url: &str,
    status: reqwest::StatusCode,
    body: &[u8],
) -> Error {
    let code = oauth_error_code(body);
    let kind = match (status.as_u16(), code.as_deref()) {
        (429, _) | (_, Some("too_many_requests")) => ErrorKind::RateLimited,
        (500..=599, _) | (_, Some("temporarily_unavailable" | "server_error")) => ErrorKind::Server,
        _ => ErrorKind::Auth,
    };
    let said = code.map(|c| format!(" ({c})")).unwrap_or_default();
    Error::new(
        kind,
        format!(
            "{method} {} at the authorization server answered {}{said}",
            path_of(url),
            status.as_u16()
        ),
    )
    .with(|c| {
        c.status = Some(status.as_u16());
        c.method = Some(method.to_owned());
        c.url_path = Some(path_of(url));
    })
}

/// The path of a URL, the only part of an authorization server's URL errors show.
fn path_of(url: &str) -> String {
    reqwest::Url::parse(url)
        .map(|u| u.path().to_owned())
        .unwrap_or_default()
}
