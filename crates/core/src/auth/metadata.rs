//! Discovery (MCP authorization 2025-11-25): where to look for the protected resource
//! metadata (RFC 9728) and the authorization server metadata (RFC 8414, OpenID Connect
//! Discovery), in the spec's order, the documents themselves, and the checks on them (the
//! resource covers the server, the issuer is the one asked for, every address is one the
//! sign-in may use: `web`). The URL orders and the checks are pure functions; `discover`
//! walks them over HTTP.

use super::web::{self, Refusal};
use super::{Endpoint, Http, auth_error};
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
/// a `WWW-Authenticate` challenge named when it is on the server's own origin, else the
/// path-based well-known, then the root one. A challenge naming another origin is not
/// followed: any server's 401, even one that never signs in, could otherwise make Lifeline
/// fetch an address of the server's choosing (another host, this computer, the local network).
pub fn resource_metadata_urls(server: &Url, from_challenge: Option<&str>) -> Vec<String> {
    match from_challenge.map(|url| on_origin_of(server, url)) {
        Some(Some(url)) => return vec![url],
        Some(None) => tracing::info!(
            "the server's 401 names protected resource metadata on another origin: not \
             fetched; looking at the server's own well-known addresses"
        ),
        None => {}
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

/// `url` if it is on `server`'s origin (same scheme, host and port), without user info.
fn on_origin_of(server: &Url, url: &str) -> Option<String> {
    let parsed = Url::parse(url).ok()?;
    let plain = parsed.username().is_empty() && parsed.password().is_none();
    (plain && parsed.origin() == server.origin()).then(|| parsed.into())
}

/// Checks the protected resource metadata found for `server` and returns the authorization
/// server (issuer) to use: the resource covers the server, the server may receive a
/// sign-in's tokens, and the issuer is an address the sign-in may use.
pub fn check_resource(server: &Url, resource: &ResourceMetadata) -> Result<Url, Error> {
    if !resource_covers(&resource.resource, server) {
        return Err(auth_error(
            "the server's protected resource metadata names another resource than the \
             server's URL; Lifeline does not sign in to it for this server",
        ));
    }
    if !web::may_sign_in_to(server) {
        return Err(auth_error(
            "the server is http on another computer: a sign-in's tokens would travel to it \
             unencrypted; use its https address",
        ));
    }
    let issuer = resource.authorization_servers.first().ok_or_else(|| {
        auth_error("the server's protected resource metadata names no authorization server")
    })?;
    web::endpoint(server, issuer)
        .map_err(|why| web::refused("the authorization server the server names", why))
}

/// Checks the metadata found for `issuer`: it names that issuer (RFC 8414 §3.3), and every
/// address in it is one the sign-in may use for `server`.
pub fn check_server(server: &Url, issuer: &str, doc: &ServerMetadata) -> Result<(), Error> {
    if !same_issuer(&doc.issuer, issuer) {
        return Err(auth_error(
            "the authorization server's metadata names another issuer than the one it was \
             found for (RFC 8414 §3.3): refusing to sign in",
        ));
    }
    let addresses = [
        ("the authorization server's issuer", Some(&doc.issuer)),
        (
            Endpoint::Authorization.name(),
            Some(&doc.authorization_endpoint),
        ),
        (Endpoint::Token.name(), Some(&doc.token_endpoint)),
        (
            Endpoint::Registration.name(),
            doc.registration_endpoint.as_ref(),
        ),
        (
            Endpoint::Revocation.name(),
            doc.revocation_endpoint.as_ref(),
        ),
    ];
    for (what, url) in addresses {
        if let Some(url) = url {
            web::endpoint(server, url).map_err(|why: Refusal| web::refused(what, why))?;
        }
    }
    Ok(())
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
        if let Some(doc) = http
            .get_json::<ResourceMetadata>(&url, Endpoint::ResourceMetadata)
            .await?
        {
            resource = Some(doc);
            break;
        }
    }
    let Some(resource) = resource else {
        return Ok(None);
    };
    let issuer_url = check_resource(server, &resource)?;
    let issuer = &resource.authorization_servers[0];
    for url in server_metadata_urls(&issuer_url) {
        if let Some(doc) = http
            .get_json::<ServerMetadata>(&url, Endpoint::ServerMetadata)
            .await?
        {
            check_server(server, issuer, &doc)?;
            return Ok(Some(Discovered {
                resource,
                server: doc,
            }));
        }
    }
    Err(auth_error(
        "the authorization server the server names publishes no metadata (RFC 8414 or \
         OpenID Connect)",
    ))
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
        check(
            "http://127.0.0.1:7/mcp",
            Some("http://127.0.0.1:7/custom/metadata/location.json"),
            &["http://127.0.0.1:7/custom/metadata/location.json"],
        );
        // Another origin, this computer, the local network, user info, not a URL: the
        // challenge is not followed; the server's own well-known addresses are.
        let own = &[
            "https://h/.well-known/oauth-protected-resource/mcp",
            "https://h/.well-known/oauth-protected-resource",
        ];
        for elsewhere in [
            "https://evil.example/.well-known/oauth-protected-resource",
            "http://h/mcp-metadata",
            "https://h:8443/x",
            "https://h.evil.example/x",
            "http://127.0.0.1:8080/admin",
            "http://169.254.169.254/latest/meta-data",
            "https://192.168.1.1/x",
            "https://u:p@h/x",
            "file:///etc/passwd",
            "not a url",
        ] {
            check("https://h/mcp", Some(elsewhere), own);
        }
        check(
            "http://127.0.0.1:7/mcp",
            Some("http://127.0.0.1:8/x"),
            &[
                "http://127.0.0.1:7/.well-known/oauth-protected-resource/mcp",
                "http://127.0.0.1:7/.well-known/oauth-protected-resource",
            ],
        );
    }

    fn resource(r: &str, servers: &[&str]) -> ResourceMetadata {
        ResourceMetadata {
            resource: r.into(),
            authorization_servers: servers.iter().map(|s| (*s).to_owned()).collect(),
            scopes_supported: None,
        }
    }

    #[test]
    fn resource_checks() {
        let check = |server: &str, doc: ResourceMetadata, want: Result<&str, &str>| {
            let got = check_resource(&url(server), &doc);
            match (got, want) {
                (Ok(issuer), Ok(w)) => assert_eq!(issuer.as_str(), w, "{server}"),
                (Err(e), Err(w)) => {
                    assert!(e.message().contains(w), "{server}: {e}");
                    assert_eq!(e.kind(), crate::error::ErrorKind::Auth);
                }
                (got, want) => panic!("{server}: {got:?}, wanted {want:?}"),
            }
        };
        let mcp = "https://mcp.example/mcp";
        check(
            mcp,
            resource(mcp, &["https://as.example"]),
            Ok("https://as.example/"),
        );
        check(
            "http://127.0.0.1:7/mcp",
            resource("http://127.0.0.1:7/mcp", &["http://127.0.0.1:8"]),
            Ok("http://127.0.0.1:8/"),
        );
        check(
            mcp,
            resource("https://other.example/mcp", &["https://as.example"]),
            Err("names another resource"),
        );
        check(
            mcp,
            resource(mcp, &[]),
            Err("names no authorization server"),
        );
        // No secrets in clear: an https server naming an http authorization server, even on
        // this computer; an http server elsewhere.
        check(
            mcp,
            resource(mcp, &["http://as.example"]),
            Err("the authorization server the server names was refused: it is http to another"),
        );
        check(
            mcp,
            resource(mcp, &["http://127.0.0.1:8"]),
            Err("the sign-in must not fall back"),
        );
        check(
            "http://mcp.example/mcp",
            resource("http://mcp.example/mcp", &["https://as.example"]),
            Err("the server is http on another computer"),
        );
        check(
            mcp,
            resource(mcp, &["file:///tmp/x"]),
            Err("it is a file: address"),
        );
    }

    #[test]
    fn server_checks() {
        let server = url("https://mcp.example/mcp");
        let good = ServerMetadata {
            issuer: "https://as.example".into(),
            authorization_endpoint: "https://as.example/authorize".into(),
            token_endpoint: "https://as.example/token".into(),
            registration_endpoint: Some("https://as.example/register".into()),
            revocation_endpoint: Some("https://as.example/revoke".into()),
            ..ServerMetadata::default()
        };
        assert!(check_server(&server, "https://as.example", &good).is_ok());
        let refused = |doc: ServerMetadata, want: &str| {
            let e = check_server(&server, "https://as.example", &doc).unwrap_err();
            assert!(e.message().contains(want), "{e}");
            assert_eq!(e.kind(), crate::error::ErrorKind::Auth);
        };
        refused(
            ServerMetadata {
                issuer: "https://evil.example".into(),
                ..good.clone()
            },
            "names another issuer",
        );
        for bad in [
            "file:///C:/Windows/System32/calc.exe",
            "search-ms:query=x",
            "ms-officecmd:x",
            "javascript:alert(1)",
            "http://as.example/authorize",
            "http://127.0.0.1:9/authorize",
            "https://u@as.example/authorize",
        ] {
            refused(
                ServerMetadata {
                    authorization_endpoint: bad.into(),
                    ..good.clone()
                },
                "the authorization endpoint was refused",
            );
            refused(
                ServerMetadata {
                    token_endpoint: bad.into(),
                    ..good.clone()
                },
                "the token endpoint was refused",
            );
            refused(
                ServerMetadata {
                    registration_endpoint: Some(bad.into()),
                    ..good.clone()
                },
                "the registration endpoint was refused",
            );
            refused(
                ServerMetadata {
                    revocation_endpoint: Some(bad.into()),
                    ..good.clone()
                },
                "the token revocation endpoint was refused",
            );
        }
        // The issuer itself: an http issuer for an https server (same_issuer passes).
        let http_issuer = ServerMetadata {
            issuer: "http://127.0.0.1:9".into(),
            ..good.clone()
        };
        let e = check_server(&server, "http://127.0.0.1:9", &http_issuer).unwrap_err();
        assert!(e.message().contains("issuer was refused"), "{e}");
        // The loopback test setup keeps working.
        let local = ServerMetadata {
            issuer: "http://127.0.0.1:8".into(),
            authorization_endpoint: "http://127.0.0.1:8/authorize".into(),
            token_endpoint: "http://localhost:8/token".into(),
            ..ServerMetadata::default()
        };
        assert!(check_server(&url("http://127.0.0.1:7/mcp"), "http://127.0.0.1:8", &local).is_ok());
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
