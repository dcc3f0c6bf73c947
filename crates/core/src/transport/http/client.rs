//! The link every HTTP-based transport (Streamable HTTP and the legacy HTTP+SSE one) keeps
//! to its server, and what both do alike over it. Built before anything is sent: the URL and
//! the configured headers validated (values marked sensitive), the redirect policy
//! (credentials never follow a redirect), the TLS settings with one platform verifier shared
//! by the process, and the redactor that knows the configured secrets. Kept while it lasts:
//! whether it is closed and why (the first cause only), the authorizer's rounds on a 401 or a
//! 403 `insufficient_scope`, and a refusal read into its typed error.

use super::errors::{Target, retry_after_of, status_error, with_target};
use super::{HttpConfig, MAX_AUTH_ROUNDS, read_capped};
use crate::auth::Challenge;
use crate::error::{Error, ErrorKind};
use crate::redact::Redactor;
use crate::tls::tls_config;
use crate::transport::{INCOMING_CAPACITY, Incoming};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// What every HTTP-based transport holds of its connection: the client built for its URL and
/// headers, its config, and whether the connection is closed.
pub(crate) struct Link {
    pub client: reqwest::Client,
    pub url: reqwest::Url,
    pub headers: HeaderMap,
    pub config: HttpConfig,
    /// `host:port`, for messages about reaching the server.
    pub authority: String,
    pub redactor: Redactor,
    /// Whether a same-origin redirect may be followed (see `redirects`).
    pub follow_redirects: Arc<AtomicBool>,
    /// Why the connection is closed, once it is: later sends fail at once with it.
    closed: Mutex<Option<Error>>,
    /// What the transport hands its session.
    pub tx: mpsc::Sender<Incoming>,
}

impl Link {
    /// Validates the config and builds the client; nothing is sent. Beside the link, the
    /// receiver of what the transport hands its session.
    pub fn new(config: &HttpConfig) -> Result<(Link, mpsc::Receiver<Incoming>), Error> {
        let (tx, rx) = mpsc::channel(INCOMING_CAPACITY);
        let link = prepare(config, tx)?;
        Ok((link, rx))
    }

    pub fn target(&self, method: &'static str, url: &reqwest::Url) -> Target {
        Target {
            method,
            url_path: self.redactor.url_path(url.path()),
            authority: self.authority.clone(),
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.lock().expect("lock").is_some()
    }

    /// Refuses a send once the connection is closed, with the cause.
    pub fn check_open(&self) -> Result<(), Error> {
        match self.closed.lock().expect("lock").as_ref() {
            Some(cause) => Err(Error::closed_because(cause)),
            None => Ok(()),
        }
    }

    /// Closes the connection from Lifeline's side, unless it already ended with a cause.
    pub fn close(&self) {
        self.closed
            .lock()
            .expect("lock")
            .get_or_insert_with(|| Error::cancelled("the connection was closed by Lifeline"));
    }

    /// Ends the connection with `cause`: later sends fail at once, the session fails every
    /// pending request. Only the first cause is kept.
    pub async fn fail(&self, cause: Error) {
        let first = {
            let mut closed = self.closed.lock().expect("lock");
            if closed.is_some() {
                false
            } else {
                *closed = Some(cause.clone());
                true
            }
        };
        if first {
            let _ = self.tx.send(Incoming::Closed(cause)).await;
        }
    }

    /// Whether a request sent with the bearer token `used` and answered `resp` is sent
    /// again: the authorizer, if there is one, has a new token for a 401 or a 403
    /// `insufficient_scope`, and the request has had fewer than `MAX_AUTH_ROUNDS` rounds
    /// (`rounds`, counted up here).
    pub async fn send_again(
        &self,
        rounds: &mut u32,
        resp: &reqwest::Response,
        used: Option<&str>,
        target: &Target,
    ) -> Result<bool, Error> {
        let Some(auth) = self
            .config
            .auth
            .as_ref()
            .filter(|_| *rounds < MAX_AUTH_ROUNDS)
        else {
            return Ok(false);
        };
        let challenge = Challenge::of(resp.headers());
        let again = auth
            .refused(resp.status().as_u16(), used, &challenge)
            .await
            .map_err(|e| with_target(e, target))?;
        *rounds += u32::from(again);
        Ok(again)
    }

    /// The error of an answer with a status other than success, with what the server said
    /// in (at most 64 KiB of) its body; `sent_session` says whether the request named a
    /// session, so that a 404 means the session is gone.
    pub async fn status_failure(
        &self,
        resp: reqwest::Response,
        target: &Target,
        sent_session: bool,
    ) -> Error {
        let status = resp.status();
        let retry_after = retry_after_of(resp.headers());
        let body = read_capped(resp, 64 * 1024, self.config.request_timeout)
            .await
            .unwrap_or_default();
        status_error(
            target,
            status,
            retry_after,
            &body,
            sent_session,
            &self.redactor,
        )
    }

    /// The error of a POST answered with a status other than success. One that says the
    /// session is gone ends the connection with it (the other requests in flight fail with
    /// the cause: they may have run), and this request was refused unrun.
    pub async fn post_failure(
        &self,
        resp: reqwest::Response,
        target: &Target,
        sent_session: bool,
    ) -> Error {
        let err = self.status_failure(resp, target, sent_session).await;
        if err.kind() == ErrorKind::SessionExpired {
            self.fail(err.clone()).await;
            return err.refused_unrun();
        }
        err
    }
}

/// The content type of `resp`, lowercased (empty when there is none).
pub(crate) fn content_type(resp: &reqwest::Response) -> String {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Validates the URL and the configured headers and builds the client.
fn prepare(config: &HttpConfig, tx: mpsc::Sender<Incoming>) -> Result<Link, Error> {
    let configured = &config.headers;
    let url = reqwest::Url::parse(&config.url).map_err(|e| {
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
    Ok(Link {
        client,
        url,
        headers,
        config: config.clone(),
        authority,
        redactor,
        follow_redirects,
        closed: Mutex::new(None),
        tx,
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
