//! What a request to the local endpoint must show before anything else is looked at: a
//! `Host` naming this machine's loopback (a DNS-rebinding page's request carries its own
//! host name), no foreign `Origin` (a web page's fetch carries its origin), a bearer token
//! of a known client, and an `MCP-Protocol-Version` the gateway speaks. Pure functions of
//! the header values, so each rule is a table of cases.

use crate::protocol::revision::Revision;

/// Whether `host` (a `Host` header, or an origin's host) names the loopback: `localhost`,
/// `127.0.0.1` or `[::1]`, with any port.
pub fn loopback_host(host: &str) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let name = if let Some(rest) = host.strip_prefix('[') {
        // `[::1]` or `[::1]:7424`
        match rest.split_once(']') {
            Some((inner, port)) if port.is_empty() || valid_port(port) => {
                return inner == "::1";
            }
            _ => return false,
        }
    } else {
        match host.split_once(':') {
            Some((name, port)) if valid_port(port) => name.to_owned(),
            Some(_) => return false,
            None => host,
        }
    };
    name == "localhost" || name == "127.0.0.1"
}

/// `:PORT` with at least one digit and nothing else.
fn valid_port(port: &str) -> bool {
    let digits = port.strip_prefix(':').unwrap_or(port);
    !digits.is_empty() && digits.len() <= 5 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Whether an `Origin` header is one of this machine's loopback origins (`http://` or
/// `https://` with a loopback host). `null` (a sandboxed page, a file) is not.
pub fn loopback_origin(origin: &str) -> bool {
    let origin = origin.trim();
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    match rest {
        Some(host) => !host.contains('/') && loopback_host(host),
        None => false,
    }
}

/// The token of an `Authorization: Bearer TOKEN` header.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Compares two tokens in time that depends only on their lengths.
pub fn same_token(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Checks an `MCP-Protocol-Version` header: absent is 2025-03-26 (the spec's rule); a
/// revision the gateway serves over `initialize` passes; anything else is the message of a
/// 400.
pub fn protocol_version(header: Option<&str>) -> Result<(), String> {
    let Some(value) = header else { return Ok(()) };
    match Revision::parse_initialize(value.trim()) {
        Some(_) => Ok(()),
        None => Err(format!(
            "unsupported MCP-Protocol-Version {:?}: this endpoint speaks {}",
            value.chars().take(40).collect::<String>(),
            Revision::list(&Revision::INITIALIZE)
        )),
    }
}

/// What a header value looks like in an error message: at most 60 characters, printable.
pub fn shown(value: &str) -> String {
    value.chars().filter(|c| !c.is_control()).take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_pass() {
        let check = |host: &str, expect: bool| assert_eq!(loopback_host(host), expect, "{host}");
        check("127.0.0.1:7424", true);
        check("127.0.0.1", true);
        check("localhost:1", true);
        check("LOCALHOST", true);
        check("[::1]:7424", true);
        check("[::1]", true);
        check("evil.example.com", false);
        check("evil.example.com:7424", false);
        check("localhost.evil.example.com", false);
        check("127.0.0.1.nip.io:7424", false);
        check("127.0.0.2:7424", false);
        check("[::2]:7424", false);
        check("localhost:port", false);
        check("localhost:", false);
        check("", false);
        check("0.0.0.0:7424", false);
    }

    #[test]
    fn only_loopback_origins_pass() {
        let check =
            |origin: &str, expect: bool| assert_eq!(loopback_origin(origin), expect, "{origin}");
        check("http://127.0.0.1:7424", true);
        check("http://localhost:3000", true);
        check("https://localhost", true);
        check("http://[::1]:7424", true);
        check("http://evil.example.com", false);
        check("http://evil.example.com:7424", false);
        check("null", false);
        check("file://", false);
        check("vscode-webview://abc", false);
        check("http://localhost/path", false);
    }

    #[test]
    fn a_bearer_token_is_read_and_compared_whole() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("abc"), None);
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abc", "abd"));
        assert!(!same_token("abc", "abcd"));
        assert!(!same_token("", "a"));
    }

    #[test]
    fn the_protocol_version_header_is_one_the_gateway_speaks_or_absent() {
        assert!(protocol_version(None).is_ok());
        for v in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
            assert!(protocol_version(Some(v)).is_ok(), "{v}");
        }
        let why = protocol_version(Some("1999-01-01")).unwrap_err();
        assert!(
            why.contains("1999-01-01") && why.contains("2025-11-25"),
            "{why}"
        );
        assert!(protocol_version(Some("2026-07-28")).is_err());
    }
}
