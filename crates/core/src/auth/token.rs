//! The token endpoint (OAuth 2.1 §3.2): the authorization-code grant with its PKCE verifier
//! and `resource`, and the refresh grant, each authenticated as the client registered
//! (none, client_secret_basic, client_secret_post). The answer becomes `Tokens`, whose
//! values are secrets.

use super::register::{Client, TokenAuth};
use super::{Endpoint, Http, Secret};
use crate::error::Error;
use serde::Deserialize;
use std::time::{Duration, SystemTime};

/// What a token endpoint granted.
#[derive(Clone)]
pub struct Tokens {
    pub access: Secret,
    pub refresh: Option<Secret>,
    /// When the access token stops working, if the server said.
    pub expires_at: Option<SystemTime>,
    /// The granted scopes, if the server said (else what was asked for).
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Tokens {
    /// Whether the access token expires within `margin` of `now`.
    pub fn expires_within(&self, margin: Duration, now: SystemTime) -> bool {
        self.expires_at.is_some_and(|at| at <= now + margin)
    }
}

/// A token endpoint's answer as sent.
#[derive(Deserialize)]
pub(super) struct Granted {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// The grant's own parameters, besides the client authentication.
pub enum Grant<'a> {
    Code {
        code: &'a str,
        verifier: &'a str,
        redirect_uri: &'a str,
    },
    Refresh {
        refresh_token: &'a str,
    },
}

/// Asks the token endpoint for tokens. `asked` is what the grant was for, kept as the
/// scopes when the answer names none; a refresh keeps the old refresh token when the
/// server sends no new one.
pub async fn request(
    http: &Http,
    endpoint: &str,
    client: &Client,
    grant: Grant<'_>,
    resource: &str,
    asked: &[String],
) -> Result<Tokens, Error> {
    let (form, basic, previous_refresh) = form_of(client, &grant, resource);
    let granted: Granted = http
        .post_form(endpoint, Endpoint::Token, form, basic)
        .await?;
    tokens_of(granted, previous_refresh, asked)
}

/// Token types a refusal may name: a fixed list, not the server's words.
const KNOWN_TOKEN_TYPES: &[&str] = &["DPoP", "MAC", "N_A", "PoP"];

/// The tokens of an answer: a Bearer token (or one of no stated type), the scopes granted
/// (else `asked`), the new refresh token (else the one traded, `previous_refresh`).
pub(super) fn tokens_of(
    granted: Granted,
    previous_refresh: Option<Secret>,
    asked: &[String],
) -> Result<Tokens, Error> {
    if let Some(t) = granted.token_type.as_deref()
        && !t.eq_ignore_ascii_case("bearer")
    {
        let named = KNOWN_TOKEN_TYPES
            .iter()
            .find(|k| k.eq_ignore_ascii_case(t))
            .map(|k| format!("a {k} token"))
            .unwrap_or_else(|| "a token of a type Lifeline does not know".to_owned());
        return Err(super::auth_error(format!(
            "the authorization server issued {named}; Lifeline uses Bearer tokens"
        )));
    }
    let scopes = match granted.scope.as_deref() {
        Some(s) => super::scope::parse(Some(s)),
        None => asked.to_vec(),
    };
    Ok(Tokens {
        access: Secret::new(granted.access_token),
        refresh: granted
            .refresh_token
            .filter(|r| !r.is_empty())
            .map(Secret::new)
            .or(previous_refresh),
        expires_at: granted
            .expires_in
            .map(|s| SystemTime::now() + Duration::from_secs(s.min(10 * 365 * 86_400))),
        scopes,
    })
}

/// Asks the authorization server to revoke `token` (RFC 7009), authenticated as the client
/// (the same way as at the token endpoint). The answer's body is not read: 200 is success.
pub async fn revoke(
    http: &Http,
    endpoint: &str,
    client: &Client,
    token: &Secret,
) -> Result<(), Error> {
    let (form, basic) = {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("token", token.expose());
        let basic = client_auth(client, &mut form);
        (form.finish(), basic)
    };
    let status = http
        .post_form_status(endpoint, Endpoint::Revocation, form, basic)
        .await?;
    if status.is_success() {
        Ok(())
    } else {
        Err(super::auth_error(format!(
            "{} answered {}",
            Endpoint::Revocation.name(),
            status.as_u16()
        )))
    }
}

/// The form body of a token request, the HTTP Basic credentials (form-encoded, RFC 6749
/// §2.3.1) when the client authenticates that way, and the refresh token being traded.
type Form = (String, Option<(String, String)>, Option<Secret>);

fn form_of(client: &Client, grant: &Grant<'_>, resource: &str) -> Form {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    let previous_refresh = match grant {
        Grant::Code {
            code,
            verifier,
            redirect_uri,
        } => {
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("code_verifier", verifier)
                .append_pair("redirect_uri", redirect_uri);
            None
        }
        Grant::Refresh { refresh_token } => {
            form.append_pair("grant_type", "refresh_token")
                .append_pair("refresh_token", refresh_token);
            Some(Secret::new(*refresh_token))
        }
    };
    form.append_pair("resource", resource);
    let basic = client_auth(client, &mut form);
    (form.finish(), basic, previous_refresh)
}

/// Authenticates as `client`: its id (and secret) in the form, or the HTTP Basic
/// credentials to send (RFC 6749 §2.3.1: both parts form-encoded before the base64).
fn client_auth(
    client: &Client,
    form: &mut url::form_urlencoded::Serializer<'_, String>,
) -> Option<(String, String)> {
    match client.auth {
        TokenAuth::None => {
            form.append_pair("client_id", &client.id);
            None
        }
        TokenAuth::Post => {
            form.append_pair("client_id", &client.id);
            if let Some(s) = &client.secret {
                form.append_pair("client_secret", s.expose());
            }
            None
        }
        TokenAuth::Basic => {
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let secret = client.secret.as_ref().map(|s| s.expose()).unwrap_or("");
            Some((enc(&client.id), enc(secret)))
        }
    }
}
