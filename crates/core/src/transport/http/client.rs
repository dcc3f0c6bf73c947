//! The HTTP client every HTTP-based transport (Streamable HTTP and the legacy HTTP+SSE one)
//! builds before sending anything: the URL and the configured headers validated (values
//! marked sensitive), the redirect policy (credentials never follow a redirect), the TLS
//! settings with one platform verifier shared by the process, and the redactor that knows
//! the configured secrets.

use crate::error::Error;
use crate::redact::Redactor;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

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

/// The TLS settings of every client: what `reqwest::Client::builder().build()` makes by
/// default (the installed ring provider, TLS 1.2 and 1.3, the platform verifier, no client
/// certificate, SNI, ALPN h2 then http/1.1, ticket resumption), except that the verifier is built once per
/// process and shared. Building it loads and parses every system root certificate, which
/// was the largest part of an idle HTTP connection's memory (issue 6); each attempt still
/// gets a client, a connection pool and a TLS session cache of its own.
pub(crate) fn tls_config() -> Result<rustls::ClientConfig, Error> {
    use rustls_platform_verifier::Verifier;
    static VERIFIER: Mutex<Option<Arc<Verifier>>> = Mutex::new(None);
    let unavailable = || Error::config("could not set up the HTTP client (TLS roots unavailable)");
    // Installing the process-wide provider twice is harmless; the first one wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .ok_or_else(unavailable)?;
    let verifier = {
        let mut shared = VERIFIER.lock().expect("lock");
        match shared.as_ref() {
            Some(v) => v.clone(),
            // A failure is not kept: the next attempt tries again.
            None => shared
                .insert(Arc::new(
                    Verifier::new(provider.clone()).map_err(|_| unavailable())?,
                ))
                .clone(),
        }
    };
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(|_| unavailable())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    // Session tickets for 4 server names, not rustls's default 256 (a hash map allocated in
    // full, ~10 KB per client): a client talks to its one server, and to a few more only
    // when redirected.
    tls.resumption = rustls::client::Resumption::in_memory_sessions(4);
    Ok(tls)
}

/// `host:port` of a URL, the form errors may show.
pub(crate) fn authority_of(url: &reqwest::Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}
