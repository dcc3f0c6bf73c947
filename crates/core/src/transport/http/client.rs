//! The HTTP client every HTTP-based transport (Streamable HTTP and the legacy HTTP+SSE one)
//! builds before sending anything: the URL and the configured headers validated (values
//! marked sensitive), the redirect policy (credentials never follow a redirect), the TLS
//! settings with one platform verifier shared by the process, and the redactor that knows
//! the configured secrets.

use crate::error::Error;
use crate::redact::Redactor;
use crate::tls::tls_config;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What every HTTP-based transport builds from its URL and headers before sending anything.
pub(crate) struct Prepared {
    pub client: reqwest::Client,
    pub url: reqwest::Url,
    pub headers: HeaderMap,
    /// `host:port`, for messages about reaching the server.
    pub authority: String,
    pub redactor: Redactor,
    /// Whether a same-origin redirect may be followed (see `redirects`).
    pub follow_redirects: Arc<AtomicBool>,
}

/// Validates the URL and the configured headers and builds the client.
pub(crate) fn prepare(url: &str, configured: &[(String, String)]) -> Result<Prepared, Error> {
    let url = reqwest::Url::parse(url).map_err(|e| {
        Error::config(format!(
            "the server URL is not valid ({e}): it must look like http://host:port/path"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::config(format!(
            "the server URL's scheme is {:?}; use http:// or https://",
            url.scheme()
        )));
    }
    let mut headers = HeaderMap::new();
    for (name, value) in configured {
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            Error::config(format!(
                "the header name {name:?} is not a valid HTTP header name"
            ))
        })?;
        let mut v = HeaderValue::from_str(value).map_err(|_| {
            Error::config(format!("the value of header {name:?} contains characters HTTP does not allow (such as a newline)"))
        })?;
        v.set_sensitive(true);
        headers.insert(n, v);
    }
    // Credentials never follow a redirect: with configured headers or URL user info, none
    // is followed at all.
    let follow_redirects = Arc::new(AtomicBool::new(
        configured.is_empty() && url.username().is_empty() && url.password().is_none(),
    ));
    let client = reqwest::Client::builder()
        .redirect(redirects(follow_redirects.clone()))
        .tls_backend_preconfigured(tls_config()?)
        // reqwest's default (0.11 on), said here so that no upgrade brings back the delayed-ACK
        // wait a request written in two pieces gets on a kept-alive connection.
        .tcp_nodelay(true)
        .build()
        .map_err(|_| Error::config("could not set up the HTTP client (TLS roots unavailable)"))?;
    let authority = authority_of(&url);
    let redactor = Redactor::new(
        configured.iter().map(|(_, v)| v.clone()).chain(
            [
                url.password().map(str::to_owned),
                (!url.username().is_empty()).then(|| url.username().to_owned()),
            ]
            .into_iter()
            .flatten(),
        ),
    );
    Ok(Prepared {
        client,
        url,
        headers,
        authority,
        redactor,
        follow_redirects,
    })
}

/// The most redirects one request follows.
const MAX_REDIRECTS: usize = 5;

/// Which redirects a client follows: only to the origin of the URL it was asked for (so
/// never to another host or port, never from https to http), at most `MAX_REDIRECTS`, and
/// only while `follow` holds — it is false when the requests carry credentials (configured
/// headers, URL user info) or, in the stateless revision, tool arguments in `Mcp-Param-*`
/// headers, none of which may follow a redirect (reqwest keeps custom headers on a
/// same-origin redirect). A redirect not followed is answered as it came and becomes a
/// config error (`errors::redirect_error`).
fn redirects(follow: Arc<AtomicBool>) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if same_origin
            && follow.load(Ordering::Relaxed)
            && attempt.previous().len() <= MAX_REDIRECTS
        {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// `host:port` of a URL, the form errors may show.
pub(crate) fn authority_of(url: &reqwest::Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}
