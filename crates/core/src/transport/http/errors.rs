//! Turning HTTP outcomes into typed errors: status → kind, Retry-After in both forms, the
//! transport cause found by walking the source chain, and sentences that say what to do.
//! Only allow-listed parts reach an error: status, reason phrase, Retry-After, method and
//! URL path. Server bodies contribute only a JSON-RPC error message, scrubbed and capped.

use crate::error::{Error, ErrorKind, IoKind, io_kind_of};
use crate::protocol::Message;
use crate::redact::{Redactor, cap};
use std::time::{Duration, SystemTime};

/// Parses a Retry-After value: delay-seconds or an HTTP-date; a date in the past means now.
/// Anything else is ignored (None), as RFC 9110 asks of an invalid field. A wait longer
/// than the policy allows a server (`policy::MAX_SERVER_WAIT`, 1 d) is clamped to it.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let wait = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        Duration::from_secs(value.parse().unwrap_or(u64::MAX))
    } else {
        let at = httpdate::parse_http_date(value).ok()?;
        at.duration_since(now).unwrap_or(Duration::ZERO)
    };
    Some(wait.min(crate::policy::MAX_SERVER_WAIT))
}

/// The Retry-After of a response, resolved against the wall clock now.
pub fn retry_after_of(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()))
}

/// Where an HTTP request went, in the allow-listed form errors may carry.
#[derive(Debug, Clone)]
pub struct Target {
    pub method: &'static str,
    pub url_path: String,
    /// `host:port`, for messages about reaching the server.
    pub authority: String,
}

/// An error for a non-success status.
pub fn status_error(
    target: &Target,
    status: reqwest::StatusCode,
    retry_after: Option<Duration>,
    body: &[u8],
    sent_session: bool,
    redactor: &Redactor,
) -> Error {
    let code = status.as_u16();
    let reason = status.canonical_reason().unwrap_or("");
    let said = server_said(body, redactor);
    // A refusal's JSON-RPC error says which refusal it is (a stateless-revision server's -32022 with the
    // revisions it speaks, say). Not for other statuses: their kind decides on its own.
    let rpc = matches!(code, 400 | 404 | 405)
        .then(|| rpc_error_of(body))
        .flatten();
    let (kind, advice) = match code {
        401 => (ErrorKind::Auth, "the server needs valid credentials: check the Authorization header (or token) in the config".to_owned()),
        403 => (ErrorKind::Permission, "the credentials were accepted but are not allowed to do this: check the token's scopes or the server's access rules".to_owned()),
        404 if sent_session => (ErrorKind::SessionExpired, "the server no longer knows this session (it may have restarted); a new session is needed".to_owned()),
        404 => (ErrorKind::Protocol, "nothing answers MCP at this URL: check the path (often /mcp)".to_owned()),
        429 => (ErrorKind::RateLimited, wait_advice("the server is rate limiting", retry_after)),
        503 if retry_after.is_some() => (ErrorKind::Server, wait_advice("the server is unavailable", retry_after)),
        500..=599 => (ErrorKind::Server, "the server failed to handle the request; it may be restarting".to_owned()),
        _ => (ErrorKind::Protocol, "the server refused the request".to_owned()),
    };
    let message = format!(
        "{} {} answered {code} {reason}: {advice}{said}",
        target.method, target.url_path
    );
    Error::new(kind, message).with(|c| {
        c.status = Some(code);
        c.reason = (!reason.is_empty()).then(|| reason.to_owned());
        c.retry_after = retry_after;
        c.method = Some(target.method.to_owned());
        c.url_path = Some(target.url_path.clone());
        if let Some(e) = &rpc {
            c.rpc_code = Some(e.code);
            c.supported_versions = supported_versions(e);
        }
    })
}

/// The error for a redirect the client did not follow (`client::redirects`), or `None`
/// when `resp` is not one. The target is shown allow-list first (`Redactor::url`).
pub fn redirect_error(
    target: &Target,
    resp: &reqwest::Response,
    redactor: &Redactor,
) -> Option<Error> {
    let status = resp.status();
    if !status.is_redirection() {
        return None;
    }
    let code = status.as_u16();
    let to = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|l| resp.url().join(l).ok());
    let (shown, other_origin) = match &to {
        Some(to) => (
            redactor.url(to.as_str()),
            to.origin() != resp.url().origin(),
        ),
        None => ("nowhere (no valid Location)".to_owned(), false),
    };
    let why = if other_origin {
        "another origin, where the config's headers and credentials must never go"
    } else {
        "the same origin, but Lifeline sends credentials (configured headers, URL user info, \
         tool arguments in headers) only to the URL in the config"
    };
    let message = format!(
        "{} {} answered {code}, a redirect to {shown}; it was not followed ({why}): put the URL \
         it points to in the config",
        target.method, target.url_path
    );
    Some(Error::config(message).with(|c| {
        c.status = Some(code);
        c.method = Some(target.method.to_owned());
        c.url_path = Some(target.url_path.clone());
    }))
}

/// The JSON-RPC error in a response body, if it holds one.
fn rpc_error_of(body: &[u8]) -> Option<crate::protocol::RpcError> {
    Message::parse_many(body)
        .ok()?
        .into_iter()
        .find_map(|m| match m {
            Message::Response(r) => r.outcome.err(),
            _ => None,
        })
}

/// `data.supported` of an unsupported-version error (-32022).
pub(crate) fn supported_versions(e: &crate::protocol::RpcError) -> Option<Vec<String>> {
    if e.code != crate::protocol::stateless::UNSUPPORTED_PROTOCOL_VERSION {
        return None;
    }
    let data = e.data.as_ref()?;
    Some(crate::protocol::stateless::clean_versions(
        &data["supported"],
    ))
}

fn wait_advice(what: &str, retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!("{what} and asked to wait {}", crate::fmt_duration(d)),
        None => format!("{what}; wait before retrying"),
    }
}

/// "; the server said: …" when the body is a JSON-RPC error, scrubbed and capped.
fn server_said(body: &[u8], redactor: &Redactor) -> String {
    let Ok(messages) = Message::parse_many(body) else {
        return String::new();
    };
    messages
        .iter()
        .find_map(|m| match m {
            Message::Response(r) => r.outcome.as_ref().err(),
            _ => None,
        })
        .map(|e| {
            format!(
                "; the server said: {}",
                cap(&redactor.scrub(&e.message), 300)
            )
        })
        .unwrap_or_default()
}

/// An error for a request that got no HTTP response at all.
pub fn request_error(target: &Target, err: &reqwest::Error) -> Error {
    let io = io_kind_of(err);
    let what = match io {
        IoKind::Connect => format!(
            "could not connect to {}: is the server running?",
            target.authority
        ),
        IoKind::Dns => format!(
            "could not resolve {}: check the host name",
            target.authority
        ),
        IoKind::Tls => format!(
            "the TLS handshake with {} failed: check the certificate and the URL scheme",
            target.authority
        ),
        IoKind::Timeout => format!("{} timed out", target.authority),
        IoKind::Decode => format!(
            "the response from {} could not be decoded",
            target.authority
        ),
        IoKind::Io => format!("the connection to {} failed", target.authority),
    };
    let kind = if io == IoKind::Timeout {
        ErrorKind::Timeout
    } else {
        ErrorKind::Transport
    };
    with_target(
        Error::new(
            kind,
            format!("{} {}: {what}", target.method, target.url_path),
        ),
        target,
    )
    .with(|c| c.io = Some(io))
}

/// The request or SSE read timed out on our side.
pub fn timeout_error(target: &Target, what: &str, limit: Duration) -> Error {
    with_target(
        Error::timeout(format!(
            "{} {}: {what} within {}",
            target.method,
            target.url_path,
            crate::fmt_duration(limit)
        )),
        target,
    )
    .with(|c| c.io = Some(IoKind::Timeout))
}

pub fn with_target(e: Error, target: &Target) -> Error {
    e.with(|c| {
        c.method.get_or_insert_with(|| target.method.to_owned());
        c.url_path.get_or_insert_with(|| target.url_path.clone());
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_both_forms() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        let check = |v: &str, expect: Option<u64>| {
            assert_eq!(
                parse_retry_after(v, now),
                expect.map(Duration::from_secs),
                "{v}"
            );
        };
        check("120", Some(120));
        check("0", Some(0));
        check(" 5 ", Some(5));
        check("Sun, 06 Nov 1994 08:49:47 GMT", Some(10));
        check("Sunday, 06-Nov-94 08:49:57 GMT", Some(20));
        check("Sun Nov  6 08:50:37 1994", Some(60));
        check("Sun, 06 Nov 1994 08:00:00 GMT", Some(0));
        check("-1", None);
        check("1.5", None);
        check("soon", None);
        check("", None);
        // Hostile sizes are clamped to the policy's bound (1 d), never a panic.
        check("86400", Some(86_400));
        check("86401", Some(86_400));
        check("99999999999999999999", Some(86_400));
        check("99999999999999999999999999999999999999999", Some(86_400));
        check("Fri, 31 Dec 9999 23:59:59 GMT", Some(86_400));
        check("Thu, 01 Jan 1970 00:00:00 GMT", Some(0));
        check("Sun, 06 Nov 1994 08:49:37 GMT garbage", None);
        check("\u{0}\u{7f}", None);
        let now = SystemTime::now();
        assert_eq!(
            parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now),
            Some(crate::policy::MAX_SERVER_WAIT)
        );
    }

    fn target() -> Target {
        Target {
            method: "POST",
            url_path: "/mcp".into(),
            authority: "127.0.0.1:9".into(),
        }
    }

    #[test]
    fn statuses_map_to_kinds() {
        let r = Redactor::default();
        let check = |code: u16, session: bool, kind: ErrorKind| {
            let e = status_error(
                &target(),
                reqwest::StatusCode::from_u16(code).unwrap(),
                None,
                b"",
                session,
                &r,
            );
            assert_eq!(e.kind(), kind, "{code}");
            assert_eq!(e.context().status, Some(code));
            assert_eq!(e.context().url_path.as_deref(), Some("/mcp"));
        };
        check(401, false, ErrorKind::Auth);
        check(403, true, ErrorKind::Permission);
        check(404, true, ErrorKind::SessionExpired);
        check(404, false, ErrorKind::Protocol);
        check(429, false, ErrorKind::RateLimited);
        check(500, false, ErrorKind::Server);
        check(503, false, ErrorKind::Server);
        check(400, true, ErrorKind::Protocol);
    }

    #[test]
    fn server_error_messages_are_scrubbed() {
        let r = Redactor::new(["CANARY-HEADER-VALUE"]);
        let body = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"bad token CANARY-HEADER-VALUE"}}"#;
        let e = status_error(
            &target(),
            reqwest::StatusCode::BAD_REQUEST,
            None,
            body,
            false,
            &r,
        );
        assert!(
            e.message().contains("the server said: bad token ***"),
            "{e}"
        );
        let e = status_error(
            &target(),
            reqwest::StatusCode::UNAUTHORIZED,
            None,
            b"raw CANARY-HEADER-VALUE",
            false,
            &r,
        );
        assert!(!e.message().contains("CANARY"), "{e}");
    }
}
