//! Discovery (MCP authorization 2025-11-25): where to look for the protected resource
//! metadata (RFC 9728) and the authorization server metadata (RFC 8414, OpenID Connect
//! Discovery), in the spec's order, and the documents themselves. The URL orders are pure
//! functions; `discover` walks them over HTTP.

use super::Http;
use crate::error::Error;
use reqwest::Url;
use serde::Deserialize;

/// RFC 9728 protected resource metadata: the fields MCP uses.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// The resource identifier, sent as `resource` exactly as published.
    pub resource: String,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 / OpenID Connect authorization server metadata: the fields MCP uses.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// RFC 7009: where a sign-out revokes its tokens.
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

/// Where the protected resource metadata of `server` may be, in the order to try: the URL
/// a `WWW-Authenticate` challenge named, else the path-based well-known, then the root one.
pub fn resource_metadata_urls(server: &Url, from_challenge: Option<&str>) -> Vec<String> {
    if let Some(url) = from_challenge {
        return vec![url.to_owned()];
    }
    let origin = origin_of(server);
    let path = server.path().trim_end_matches('/');
    let root = format!("{origin}/.well-known/oauth-protected-resource");
    if path.is_empty() {
        vec![root]
    } else {
        vec![format!("{root}{path}"), root]
    }
}

/// Where the metadata of the authorization server `issuer` may be, in the spec's order:
/// with a path, OAuth path-inserted, OpenID path-inserted, OpenID path-appended; without
/// one, OAuth then OpenID at the root.
pub fn server_metadata_urls(issuer: &Url) -> Vec<String> {
    let origin = origin_of(issuer);
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// Whether the resource `resource` (from the metadata) covers the server URL the client
/// was given: same origin, and the server's path at or below the resource's.
pub fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if r.origin() != server.origin() {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let sp = server.path().trim_end_matches('/');
    sp == rp || sp.starts_with(&format!("{rp}/")) || rp.is_empty()
}

/// Whether two issuer identifiers are the same (RFC 8414 §3.3 asks for identical strings;
/// only a trailing slash on an issuer with no path is forgiven, as URL parsers add it).
pub fn same_issuer(a: &str, b: &str) -> bool {
    let trim = |s: &str| -> String {
        match Url::parse(s) {
            Ok(u) if u.path() == "/" && !s.ends_with("//") => s.trim_end_matches('/').to_owned(),
            _ => s.to_owned(),
        }
    };
    a == b || trim(a) == trim(b)
}

fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The discovered documents of one protected server.
#[derive(Debug, Clone)]
pub struct Discovered {
    pub resource: ResourceMetadata,
    pub server: ServerMetadata,
}

/// Finds the protected resource metadata, then its first authorization server's metadata.
/// `None` when the server publishes no protected resource metadata at all: it does not use
/// OAuth as MCP describes, and its 401 stands as it came.
pub async fn discover(
    http: &Http,
    server: &Url,
    from_challenge: Option<&str>,
) -> Result<Option<Discovered>, Error> {
    let mut resource = None;
    for url in resource_metadata_urls(server, from_challenge) {
        if let Some(doc) = http.get_json::<ResourceMetadata>(&url).await? {
            resource = Some(doc);
            break;
        }
    }
    let Some(resource) = resource else {
        return Ok(None);
    };
    if !resource_covers(&resource.resource, server) {
        return Err(super::auth_error(format!(
            "the server's protected resource metadata names another resource ({}); \
             Lifeline does not sign in to it for this server",
            resource.resource
        )));
    }
    let issuer = resource.authorization_servers.first().ok_or_else(|| {
        super::auth_error("the server's protected resource metadata names no authorization server")
    })?;
    let issuer_url = Url::parse(issuer).map_err(|_| {
        super::auth_error("the authorization server named by the server is not a valid URL")
    })?;
    for url in server_metadata_urls(&issuer_url) {
        if let Some(doc) = http.get_json::<ServerMetadata>(&url).await? {
            if !same_issuer(&doc.issuer, issuer) {
                return Err(super::auth_error(format!(
                    "the authorization server's metadata names issuer {} but was found for {issuer} \
                     (RFC 8414 §3.3): refusing to sign in",
                    doc.issuer
                )));
            }
            return Ok(Some(Discovered {
                resource,
                server: doc,
            }));
        }
    }
    Err(super::auth_error(format!(
        "the authorization server {issuer} publishes no metadata (RFC 8414 or OpenID Connect)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn resource_metadata_order() {
        let check = |server: &str, header: Option<&str>, want: &[&str]| {
            assert_eq!(
                resource_metadata_urls(&url(server), header),
                want,
                "{server}"
            );
        };
        check(
            "http://h:1/mcp",
            None,
            &[
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource",
            ],
        );
        check(
            "https://h/a/b/",
            None,
            &[
                "https://h/.well-known/oauth-protected-resource/a/b",
                "https://h/.well-known/oauth-protected-resource",
            ],
        );
        check(
            "https://h/",
            None,
            &["https://h/.well-known/oauth-protected-resource"],
        );
        check(
            "https://h/mcp",
            Some("https://h/custom.json"),
            &["https://h/custom.json"],
        );
    }

    #[test]
    fn server_metadata_order() {
        let check = |issuer: &str, want: &[&str]| {
            assert_eq!(server_metadata_urls(&url(issuer)), want, "{issuer}");
        };
        check(
            "https://as.example",
            &[
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration",
            ],
        );
        check(
            "https://as.example/tenant1",
            &[
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ],
        );
    }

    #[test]
    fn resource_coverage() {
        let check = |resource: &str, server: &str, want: bool| {
            assert_eq!(
                resource_covers(resource, &url(server)),
                want,
                "{resource} {server}"
            );
        };
        check("http://h:1/mcp", "http://h:1/mcp", true);
        check("http://h:1", "http://h:1/mcp", true);
        check("http://h:1/", "http://h:1/mcp", true);
        check("http://h:1/mcp/", "http://h:1/mcp", true);
        check("http://h:1/other", "http://h:1/mcp", false);
        check("http://h:1/mc", "http://h:1/mcp", false);
        check("http://h:2/mcp", "http://h:1/mcp", false);
        check("https://evil.example/mcp", "http://h:1/mcp", false);
        check("not a url", "http://h:1/mcp", false);
    }

    #[test]
    fn issuer_identity() {
        assert!(same_issuer("https://as", "https://as"));
        assert!(same_issuer("https://as/", "https://as"));
        assert!(same_issuer("https://as/t1", "https://as/t1"));
        assert!(!same_issuer("https://as/t1/", "https://as/t1"));
        assert!(!same_issuer("https://evil", "https://as"));
    }
}
