//! OAuth 2.1 sign-in for remote servers, client side (MCP authorization 2025-11-25):
//! discovery of the protected resource and its authorization server (`metadata`), the
//! scopes to ask for (`scope`), the client registration (`register`), authorization code
//! with PKCE S256 through a loopback redirect (`pkce`, `loopback`, `flow`), the token
//! endpoint (`token`), which addresses may be opened or sent a credential (`web`), and the
//! `Authorizer` that an HTTP transport asks for a bearer token and tells about a 401 or a
//! 403 `insufficient_scope` (`authorizer`).
//!
//! Architecture invariant: tokens, refresh tokens, client secrets, codes, PKCE verifiers
//! and `state` values are `Secret`s or stay inside this module; no error built here
//! carries one, nor anything else a server sent (errors name an endpoint by its role,
//! `Endpoint`, never by its URL) except a known OAuth `error` code.

mod authorizer;
pub mod browser;
#[cfg(test)]
mod canaries;
pub mod challenge;
pub mod flow;
pub mod loopback;
pub mod metadata;
pub mod pkce;
pub mod register;
pub mod scope;
pub mod store;
pub mod token;
pub mod web;

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

/// Which address of the resource or its authorization server a request goes to. Errors name
/// it by this role, never by its URL, which the server chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    ResourceMetadata,
    ServerMetadata,
    Authorization,
    Token,
    Registration,
    Revocation,
}

impl Endpoint {
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::ResourceMetadata => "the protected resource metadata",
            Endpoint::ServerMetadata => "the authorization server's metadata",
            Endpoint::Authorization => "the authorization endpoint",
            Endpoint::Token => "the token endpoint",
            Endpoint::Registration => "the registration endpoint",
            Endpoint::Revocation => "the token revocation endpoint",
        }
    }
}

/// The HTTP client of the sign-in: no redirects followed (a metadata or token endpoint
/// that redirects is refused), JSON answers capped, errors without any server text but
/// the OAuth `error` code. Every POST carries a credential, a code or a registration, so
/// it goes only where `web::web_url` allows (discovery checked the stricter rule already).
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
}

impl Http {
    pub fn new() -> Result<Http, Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .tls_backend_preconfigured(crate::tls::tls_config()?)
            .tcp_nodelay(true)
            .build()
            .map_err(|_| Error::config("could not set up the HTTP client for sign-in"))?;
        Ok(Http { client })
    }

    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// A metadata document, or `None` when the URL answers 4xx (not there: try the next).
    pub async fn get_json<T: DeserializeOwned>(
        &self,
        url: &str,
        to: Endpoint,
    ) -> Result<Option<T>, Error> {
        let req = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json");
        let (status, body) = self.send(req, "GET", to).await?;
        if status.is_client_error() || status.is_redirection() {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(status_error("GET", to, status, &body));
        }
        serde_json::from_slice(&body).map(Some).map_err(|_| {
            auth_error(format!(
                "{}: the answer is not the JSON OAuth expects",
                to.name()
            ))
        })
    }

    pub async fn post_json<T: DeserializeOwned>(
        &self,
        url: &str,
        to: Endpoint,
        body: &serde_json::Value,
    ) -> Result<T, Error> {
        let req = self
            .post(url, to)?
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body.to_string());
        self.answer(req, to).await
    }

    /// A form POST, with HTTP Basic credentials (already form-encoded) when given.
    pub async fn post_form<T: DeserializeOwned>(
        &self,
        url: &str,
        to: Endpoint,
        form: String,
        basic: Option<(String, String)>,
    ) -> Result<T, Error> {
        let req = self
            .form(url, to, form, basic)?
            .header(reqwest::header::ACCEPT, "application/json");
        self.answer(req, to).await
    }

    /// A form POST whose answer's body is not read (RFC 7009 revocation): the status.
    pub async fn post_form_status(
        &self,
        url: &str,
        to: Endpoint,
        form: String,
        basic: Option<(String, String)>,
    ) -> Result<reqwest::StatusCode, Error> {
        let req = self.form(url, to, form, basic)?;
        let (status, _) = self.send(req, "POST", to).await?;
        Ok(status)
    }

    fn form(
        &self,
        url: &str,
        to: Endpoint,
        form: String,
        basic: Option<(String, String)>,
    ) -> Result<reqwest::RequestBuilder, Error> {
        let mut req = self
            .post(url, to)?
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(form);
        if let Some((id, secret)) = basic {
            req = req.basic_auth(id, Some(secret));
        }
        Ok(req)
    }

    /// A POST to `url`, if a credential may go there.
    fn post(&self, url: &str, to: Endpoint) -> Result<reqwest::RequestBuilder, Error> {
        let url = web::web_url(url).map_err(|why| web::refused(to.name(), why))?;
        Ok(self.client.post(url))
    }

    async fn answer<T: DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
        to: Endpoint,
    ) -> Result<T, Error> {
        let (status, body) = self.send(req, "POST", to).await?;
        if !status.is_success() {
            return Err(status_error("POST", to, status, &body));
        }
        serde_json::from_slice(&body).map_err(|_| {
            auth_error(format!(
                "{}: the answer is not the JSON OAuth expects",
                to.name()
            ))
        })
    }

    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        method: &str,
        to: Endpoint,
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
        let (e, io) = match tokio::time::timeout(REQUEST_TIMEOUT, sent).await {
            Ok(Ok(answer)) => return Ok(answer),
            Err(_) => (
                Error::timeout(format!("the request to {} timed out", to.name())),
                IoKind::Timeout,
            ),
            Ok(Err(e)) => (
                Error::transport(format!("{} could not be reached", to.name())),
                crate::error::io_kind_of(&e),
            ),
        };
        Err(e.with(|c| {
            c.io = Some(io);
            c.method = Some(method.to_owned());
        }))
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
    to: Endpoint,
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
        format!("{} answered {}{said}", to.name(), status.as_u16()),
    )
    .with(|c| {
        c.status = Some(status.as_u16());
        c.method = Some(method.to_owned());
    })
}
