//! Resource URIs on the aggregated endpoint, mapped so that each says its server and can be
//! read back exactly: `lifeline://<server>/<the server's URI, verbatim>`. A resource
//! template gets the same literal prefix, so what a host expands from it (RFC 6570) maps
//! back the same way. Pure.
//!
//! Reading one back splits after the first `/` following the authority; nothing in the
//! server's own URI is parsed or changed. The authority is the server's name, which the
//! config allows only as letters, digits, `.`, `-` and `_` (a valid RFC 3986 reg-name); any
//! other character is percent-encoded, so the mapping reverses for every string. Since an
//! authority may come back in another case, `route` matches it to a server ignoring case —
//! one more reason the config refuses servers that differ only in case
//! (`names::server_clashes`).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use std::borrow::Cow;

/// The scheme of the endpoint's URIs.
pub const SCHEME: &str = "lifeline";

/// What is percent-encoded in the authority: everything but RFC 3986's unreserved
/// characters.
const AUTHORITY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The host's URI for `uri` (a resource's, or a template's) of `server`.
pub fn to_host(server: &str, uri: &str) -> String {
    let server = utf8_percent_encode(server, AUTHORITY);
    format!("{SCHEME}://{server}/{uri}")
}

/// The server and its own URI a host URI stands for, as written (the server
/// percent-decoded); `None` for a URI that is not one of the endpoint's. The scheme is
/// matched ignoring case.
pub fn from_host(host_uri: &str) -> Option<(Cow<'_, str>, &str)> {
    let scheme = host_uri.get(..SCHEME.len())?;
    let rest = host_uri[SCHEME.len()..].strip_prefix("://")?;
    if !scheme.eq_ignore_ascii_case(SCHEME) {
        return None;
    }
    let (server, uri) = rest.split_once('/')?;
    let server = percent_decode_str(server).decode_utf8().ok()?;
    Some((server, uri))
}

/// The configured server (one of `servers`, matched ignoring ASCII case) and its own URI a
/// host URI stands for; `None` when it is not the endpoint's or names no such server.
pub fn route<'s, 'u>(
    host_uri: &'u str,
    servers: impl IntoIterator<Item = &'s str>,
) -> Option<(&'s str, &'u str)> {
    let (server, uri) = from_host(host_uri)?;
    let server = servers
        .into_iter()
        .find(|s| s.eq_ignore_ascii_case(&server))?;
    Some((server, uri))
}

#[cfg(test)]
#[path = "uris_tests.rs"]
mod tests;
