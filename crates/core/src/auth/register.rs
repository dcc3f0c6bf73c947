//! Which client Lifeline is to the authorization server (MCP authorization 2025-11-25,
//! "Client Registration Approaches"), in the spec's order: the pre-registered client id of
//! the config; else a Client ID Metadata Document URL where the server supports them and
//! Lifeline has one; else dynamic client registration (RFC 7591) as a native application.
//! Also how the client authenticates at the token endpoint (none, client_secret_basic,
//! client_secret_post).

use super::metadata::ServerMetadata;
use super::{Http, OAuthSettings, Secret};
use crate::error::Error;
use serde::Deserialize;
use serde_json::json;

/// How to get a client id, decided from the settings and the server's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registration {
    PreRegistered,
    MetadataDocument(String),
    Dynamic(String),
    /// None works: the server needs a pre-registered client.
    Unavailable,
}

pub fn choose(settings: &OAuthSettings, server: &ServerMetadata) -> Registration {
    if settings.client_id.is_some() {
        return Registration::PreRegistered;
    }
    if server.client_id_metadata_document_supported
        && let Some(url) = &settings.client_metadata_url
    {
        return Registration::MetadataDocument(url.clone());
    }
    match &server.registration_endpoint {
        Some(endpoint) => Registration::Dynamic(endpoint.clone()),
        None => Registration::Unavailable,
    }
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAuth {
    None,
    Basic,
    Post,
}

impl TokenAuth {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenAuth::None => "none",
            TokenAuth::Basic => "client_secret_basic",
            TokenAuth::Post => "client_secret_post",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<TokenAuth> {
        match s {
            "none" => Some(TokenAuth::None),
            "client_secret_basic" => Some(TokenAuth::Basic),
            "client_secret_post" => Some(TokenAuth::Post),
            _ => None,
        }
    }
}

/// The method for a client: what its registration said, else (with a secret) basic
/// unless the server lists only post (RFC 8414's default is basic), else none.
pub fn token_auth(
    has_secret: bool,
    registered: Option<&str>,
    supported: Option<&[String]>,
) -> TokenAuth {
    if let Some(m) = registered.and_then(TokenAuth::parse) {
        return m;
    }
    if !has_secret {
        return TokenAuth::None;
    }
    let listed = |m: TokenAuth| supported.is_some_and(|s| s.iter().any(|x| x == m.as_str()));
    if supported.is_none() || listed(TokenAuth::Basic) || !listed(TokenAuth::Post) {
        TokenAuth::Basic
    } else {
        TokenAuth::Post
    }
}

/// A client as registered: its id, its secret (if confidential) and its token auth.
#[derive(Clone)]
pub struct Client {
    pub id: String,
    pub secret: Option<Secret>,
    pub auth: TokenAuth,
}

/// The client to use with `server`, registering one if that is the way.
pub async fn client(
    http: &Http,
    settings: &OAuthSettings,
    server: &ServerMetadata,
    redirect_uri: &str,
) -> Result<Client, Error> {
    let supported = server.token_endpoint_auth_methods_supported.as_deref();
    match choose(settings, server) {
        Registration::PreRegistered => {
            let secret = settings.client_secret.clone();
            Ok(Client {
                id: settings.client_id.clone().unwrap_or_default(),
                auth: token_auth(secret.is_some(), None, supported),
                secret,
            })
        }
        Registration::MetadataDocument(url) => Ok(Client {
            id: url,
            secret: None,
            auth: TokenAuth::None,
        }),
        Registration::Dynamic(endpoint) => register(http, &endpoint, redirect_uri, supported).await,
        Registration::Unavailable => Err(super::auth_error(
            "the authorization server accepts no client registration and Lifeline has no \
             client id for it: set oauth.clientId (and clientSecret) in this server's config",
        )),
    }
}

#[derive(Deserialize)]
struct Registered {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// Dynamic client registration (RFC 7591) as a native public client where the server
/// allows `none`.
async fn register(
    http: &Http,
    endpoint: &str,
    redirect_uri: &str,
    supported: Option<&[String]>,
) -> Result<Client, Error> {
    let public = supported.is_none_or(|s| s.iter().any(|m| m == "none"));
    let asked = if public {
        TokenAuth::None
    } else {
        token_auth(true, None, supported)
    };
    let body = json!({
        "client_name": "Lifeline",
        "application_type": "native",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": asked.as_str(),
    });
    let reg: Registered = http
        .post_json(endpoint, super::Endpoint::Registration, &body)
        .await?;
    let secret = reg.client_secret.filter(|s| !s.is_empty()).map(Secret::new);
    let auth = token_auth(
        secret.is_some(),
        reg.token_endpoint_auth_method.as_deref(),
        supported,
    );
    Ok(Client {
        id: reg.client_id,
        secret,
        auth,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(cimd: bool, registration: bool) -> ServerMetadata {
        ServerMetadata {
            client_id_metadata_document_supported: cimd,
            registration_endpoint: registration.then(|| "https://as/register".to_owned()),
            ..ServerMetadata::default()
        }
    }

    #[test]
    fn registration_order() {
        let pre = OAuthSettings {
            client_id: Some("id".into()),
            client_metadata_url: Some("https://lifeline/cm.json".into()),
            ..OAuthSettings::default()
        };
        let cimd = OAuthSettings {
            client_metadata_url: Some("https://lifeline/cm.json".into()),
            ..OAuthSettings::default()
        };
        let plain = OAuthSettings::default();
        let check = |s: &OAuthSettings, cimd_ok: bool, dcr_ok: bool, want: Registration| {
            assert_eq!(choose(s, &meta(cimd_ok, dcr_ok)), want);
        };
        let doc = || Registration::MetadataDocument("https://lifeline/cm.json".into());
        let dcr = || Registration::Dynamic("https://as/register".into());
        check(&pre, true, true, Registration::PreRegistered);
        check(&pre, false, false, Registration::PreRegistered);
        check(&cimd, true, true, doc());
        check(&cimd, false, true, dcr());
        check(&plain, true, true, dcr());
        check(&plain, false, false, Registration::Unavailable);
    }

    #[test]
    fn token_endpoint_auth() {
        let v = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        let check = |secret: bool, registered: Option<&str>, supported: Option<&str>, want| {
            let supported = supported.map(v);
            assert_eq!(token_auth(secret, registered, supported.as_deref()), want);
        };
        check(false, None, None, TokenAuth::None);
        check(false, None, Some("client_secret_basic"), TokenAuth::None);
        check(true, None, None, TokenAuth::Basic);
        check(true, None, Some("client_secret_post"), TokenAuth::Post);
        check(
            true,
            None,
            Some("client_secret_post client_secret_basic"),
            TokenAuth::Basic,
        );
        check(true, None, Some("private_key_jwt"), TokenAuth::Basic);
        check(true, Some("client_secret_post"), None, TokenAuth::Post);
        check(
            false,
            Some("none"),
            Some("client_secret_basic"),
            TokenAuth::None,
        );
    }
}
