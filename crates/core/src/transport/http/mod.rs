//! Streamable HTTP (MCP 2025-11-25): every message is a POST; a request is answered with
//! JSON or an SSE stream; the session id from `initialize` is echoed; `MCP-Protocol-Version`
//! goes on every request after the handshake; a standalone GET stream carries server
//! messages (405 = none) and its failures never tear down the POST path; DELETE on close.
//!
//! Architecture invariant: a request is only accepted while an answer can still arrive.
//! Once a response stream is lost beyond resumption, or the session is gone, the transport
//! is closed with that cause and every later send fails at once with it.
//!
//! In the stateless revision (2026-07-28, `set_stateless`) there is no session, no GET stream
//! and no resumption: every POST carries `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`
//! and the `Mcp-Param-*` of the called tool; a lost response stream fails only its own
//! request (`RequestFailed`); cancelling a request closes its stream.

mod client;
pub(crate) mod errors;
pub mod legacy;
mod stream;

pub(crate) use client::{Link, authority_of, content_type};
pub use errors::parse_retry_after;
use errors::{Target, redirect_error, request_error, timeout_error, with_target};

use super::{Connection, Incoming, Transport};
use crate::auth::Authorizer;
use crate::error::{Error, IoKind};
use crate::protocol::revision::Revision;
use crate::protocol::stateless::{self, ParamHeader};
use crate::protocol::{Message, RequestId};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::AbortHandle;

pub const SESSION_HEADER: &str = "mcp-session-id";
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// How many times one request goes back to the authorizer (a 401 or a 403
/// `insufficient_scope`, then the retry) before its answer stands.
pub(super) const MAX_AUTH_ROUNDS: u32 = 3;

/// The longest a close waits for the server to acknowledge the DELETE.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub url: String,
    /// Sent on every request. Values are secrets: never shown, scrubbed from server text.
    pub headers: Vec<(String, String)>,
    /// From sending a request to its response headers (and a JSON body).
    pub request_timeout: Duration,
    /// The longest silence tolerated on an SSE stream.
    pub sse_idle_timeout: Duration,
    /// The whole resumption of one stream, all waits and attempts together.
    pub max_reconnection_wait: Duration,
    /// Resumption attempts (GETs) that deliver nothing before giving up.
    pub max_resume_attempts: u32,
    /// The largest JSON body or SSE event accepted.
    pub max_message_bytes: usize,
    /// How long the handshake waits for the server to answer the standalone GET: 500 ms,
    /// so that a server asking something right after `initialized` finds the stream open,
    /// while one that accepts the GET and never answers delays the first request by no
    /// more than that (peers do not wait at all).
    pub listen_open_wait: Duration,
    /// OAuth sign-in for this server (`auth::Authorizer`): its bearer token goes on every
    /// request, and a 401 or a 403 `insufficient_scope` is handed to it, then the request
    /// sent once more with the token it got. `None` for a server with a static
    /// Authorization header or none at all.
    pub auth: Option<Arc<Authorizer>>,
}

impl HttpConfig {
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            headers: Vec::new(),
            request_timeout: Duration::from_secs(30),
            sse_idle_timeout: Duration::from_secs(300),
            max_reconnection_wait: Duration::from_secs(300),
            max_resume_attempts: 10,
            max_message_bytes: 16 * 1024 * 1024,
            listen_open_wait: Duration::from_millis(500),
            auth: None,
        }
    }
}

pub struct HttpTransport {
    inner: Arc<Inner>,
}

struct Inner {
    /// Its `follow_redirects` is cleared in the stateless revision, whose `Mcp-Param-*`
    /// headers must not follow a redirect (see `client::redirects`).
    link: Link,
    session_id: Mutex<Option<String>>,
    revision: Mutex<Option<Revision>>,
    /// Stream readers and the GET listener, aborted on close.
    tasks: Mutex<Vec<AbortHandle>>,
    /// Why the standalone GET stream is not running, if it stopped (never fatal).
    listen_status: Mutex<Option<String>>,
    /// Speaking the stateless revision (2026-07-28).
    stateless: AtomicBool,
    /// Per tool, the arguments mirrored into `Mcp-Param-*` headers (stateless revision).
    tool_headers: Mutex<HashMap<String, Vec<ParamHeader>>>,
    /// Response streams being read, by request, so that cancelling one closes it.
    streams: Mutex<HashMap<RequestId, AbortHandle>>,
}

/// Validates the config and builds the transport. Nothing is sent until the first message.
pub fn connect(config: &HttpConfig) -> Result<Connection, Error> {
    let (link, incoming) = Link::new(config)?;
    let redactor = link.redactor.clone();
    let inner = Arc::new(Inner {
        link,
        session_id: Mutex::new(None),
        revision: Mutex::new(None),
        tasks: Mutex::new(Vec::new()),
        listen_status: Mutex::new(None),
        stateless: AtomicBool::new(false),
        tool_headers: Mutex::new(HashMap::new()),
        streams: Mutex::new(HashMap::new()),
    });
    Ok(Connection {
        transport: Transport::Http(HttpTransport { inner }),
        incoming,
        redactor,
    })
}

impl HttpTransport {
    pub async fn send(&self, msg: &Message) -> Result<(), Error> {
        self.inner.send(msg).await
    }

    /// The revision sent in `MCP-Protocol-Version` from now on.
    pub fn set_revision(&self, revision: Revision) {
        *self.inner.revision.lock().expect("lock") = Some(revision);
    }

    /// Switches to the stateless revision before the first message: it goes on every POST,
    /// sessions and resumption are off.
    pub fn set_stateless(&self) {
        self.set_revision(Revision::STATELESS);
        self.inner.stateless.store(true, Ordering::Relaxed);
        self.inner
            .link
            .follow_redirects
            .store(false, Ordering::Relaxed);
    }

    pub fn is_stateless(&self) -> bool {
        self.inner.is_stateless()
    }

    /// The `x-mcp-header` annotations of the listed tools (stateless revision).
    pub fn set_tool_headers(&self, headers: HashMap<String, Vec<ParamHeader>>) {
        *self.inner.tool_headers.lock().expect("lock") = headers;
    }

    /// Stops reading the response stream of `id`: in the stateless revision, closing it
    /// is how a request is cancelled. A JSON answer is cancelled by dropping its send.
    pub fn cancel(&self, id: &RequestId) {
        if let Some(h) = self.inner.streams.lock().expect("lock").remove(id) {
            h.abort();
        }
    }

    pub fn session_id(&self) -> Option<String> {
        self.inner.session_id.lock().expect("lock").clone()
    }

    /// Why the standalone GET stream is not running, if it stopped.
    pub fn listen_status(&self) -> Option<String> {
        self.inner.listen_status.lock().expect("lock").clone()
    }

    /// Opens the standalone GET stream and waits until the server answered it, at most
    /// `listen_open_wait`: a server that never answers the GET delays nothing further (the
    /// GET goes on in the background until the request timeout).
    pub async fn start_listening(&self) {
        if self.inner.is_stateless() {
            return;
        }
        let inner = self.inner.clone();
        let (opened, answered) = tokio::sync::oneshot::channel();
        self.inner.spawn(stream::listen(inner, opened));
        let _ = tokio::time::timeout(self.inner.link.config.listen_open_wait, answered).await;
    }

    /// Stops every stream, then DELETEs the session (405 tolerated). The DELETE is a
    /// courtesy, so it is bounded tighter than a request: closing must not hang on it.
    pub async fn close(&self) {
        let inner = &self.inner;
        inner.link.close();
        inner.abort_tasks();
        let Some(session) = inner.session_id.lock().expect("lock").take() else {
            return;
        };
        let req = inner
            .request(reqwest::Method::DELETE)
            .header(SESSION_HEADER, session);
        let limit = inner.link.config.request_timeout.min(DELETE_TIMEOUT);
        let _ = tokio::time::timeout(limit, req.send()).await;
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.inner.abort_tasks();
    }
}

impl Inner {
    fn is_stateless(&self) -> bool {
        self.stateless.load(Ordering::Relaxed)
    }

    /// The headers that mirror a request's body (stateless revision): `Mcp-Method`,
    /// `Mcp-Name`, and the called tool's `Mcp-Param-*`.
    fn mirrored_headers(&self, request: &crate::protocol::Request) -> Result<HeaderMap, Error> {
        let mut headers = HeaderMap::new();
        let mut add = |name: &str, value: &str| -> Result<(), Error> {
            let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                Error::protocol(format!("{name:?} is not a valid HTTP header name"))
            })?;
            let mut v = HeaderValue::from_str(value).map_err(|_| {
                Error::protocol(format!("the value for header {name} cannot be sent"))
            })?;
            // Tool arguments may be secrets: never shown in logs of the request.
            v.set_sensitive(name.starts_with(stateless::PARAM_HEADER_PREFIX));
            headers.append(n, v);
            Ok(())
        };
        add(
            stateless::METHOD_HEADER,
            &stateless::header_value(&request.method),
        )?;
        let params = request.params.as_ref();
        if let Some(name) = stateless::name_of(&request.method, params) {
            add(stateless::NAME_HEADER, &stateless::header_value(&name))?;
            if request.method == "tools/call"
                && let Some(spec) = self.tool_headers.lock().expect("lock").get(&name)
            {
                let args = params
                    .and_then(|p| p.get("arguments"))
                    .unwrap_or(&serde_json::Value::Null);
                for (header, value) in stateless::param_header_values(spec, args) {
                    add(&header, &value)?;
                }
            }
        }
        Ok(headers)
    }

    /// A request to the endpoint: every request of this transport goes to its one URL.
    fn target(&self, method: &'static str) -> Target {
        self.link.target(method, &self.link.url)
    }

    fn spawn<F>(&self, fut: F) -> AbortHandle
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let handle = tokio::spawn(fut).abort_handle();
        let mut tasks = self.tasks.lock().expect("lock");
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle.clone());
        handle
    }

    fn abort_tasks(&self) {
        for t in self.tasks.lock().expect("lock").drain(..) {
            t.abort();
        }
    }

    /// A request with the configured headers, the session id and the protocol version.
    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let link = &self.link;
        let mut req = link
            .client
            .request(method, link.url.clone())
            .headers(link.headers.clone());
        if let Some(s) = self.session_id.lock().expect("lock").as_deref()
            && !self.is_stateless()
        {
            req = req.header(SESSION_HEADER, s);
        }
        if let Some(r) = *self.revision.lock().expect("lock") {
            req = req.header(PROTOCOL_VERSION_HEADER, r.as_str());
        }
        if let Some(token) = link.config.auth.as_ref().and_then(|a| a.bearer()) {
            req = req.bearer_auth(token);
        }
        req
    }

    async fn send(self: &Arc<Self>, msg: &Message) -> Result<(), Error> {
        let link = &self.link;
        link.check_open()?;
        let target = self.target("POST");
        let mut auth_rounds = 0;
        let (resp, sent_session) = loop {
            if let Some(auth) = &link.config.auth {
                auth.fresh_bearer().await;
            }
            let (resp, sent_session, used) = self.post(msg, &target).await?;
            let used = used.as_deref();
            if !link
                .send_again(&mut auth_rounds, &resp, used, &target)
                .await?
            {
                break (resp, sent_session);
            }
        };
        if let Some(e) = redirect_error(&target, &resp, &link.redactor) {
            return Err(e);
        }
        if !resp.status().is_success() {
            return Err(link.post_failure(resp, &target, sent_session).await);
        }
        self.read_answer(msg, resp, &target).await
    }

    /// Sends `msg` once: the response, whether it carried a session id, and the bearer
    /// token it carried.
    async fn post(
        &self,
        msg: &Message,
        target: &Target,
    ) -> Result<(reqwest::Response, bool, Option<String>), Error> {
        let stateless = self.is_stateless();
        let sent_session = !stateless && self.session_id.lock().expect("lock").is_some();
        let used = self.link.config.auth.as_ref().and_then(|a| a.bearer());
        let mut req = self
            .request(reqwest::Method::POST)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json");
        if stateless && let Message::Request(r) = msg {
            req = req.headers(self.mirrored_headers(r)?);
        }
        let req = req.body(msg.to_json());
        let limit = self.link.config.request_timeout;
        let resp = match tokio::time::timeout(limit, req.send()).await {
            Err(_) => return Err(timeout_error(target, "no response headers", limit)),
            Ok(Err(e)) => return Err(request_error(target, &e)),
            Ok(Ok(r)) => r,
        };
        if let Some(id) = resp
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|_| !stateless)
        {
            // Only the handshake may set the session; later ids are ignored rather than
            // letting a confused server switch us to another session mid-way.
            let mut session = self.session_id.lock().expect("lock");
            if session.is_none() {
                *session = Some(id.to_owned());
            }
        }
        Ok((resp, sent_session, used))
    }

    /// Reads a successful answer to `msg`: nothing for a notification, else a JSON body or
    /// an SSE stream read in the background.
    async fn read_answer(
        self: &Arc<Self>,
        msg: &Message,
        resp: reqwest::Response,
        target: &Target,
    ) -> Result<(), Error> {
        let stateless = self.is_stateless();
        let config = &self.link.config;
        let status = resp.status();
        let Message::Request(request) = msg else {
            // Notifications and responses are answered 202 Accepted; nothing to read.
            return Ok(());
        };
        let content_type = content_type(&resp);
        if content_type.starts_with("text/event-stream") {
            let inner = self.clone();
            let id = request.id.clone();
            let handle = self.spawn(async move { stream::post_stream(inner, id, resp).await });
            if stateless {
                let mut streams = self.streams.lock().expect("lock");
                streams.retain(|_, h| !h.is_finished());
                streams.insert(request.id.clone(), handle);
            }
            return Ok(());
        }
        if !content_type.starts_with("application/json") {
            let what = if status.as_u16() == 202 || content_type.is_empty() {
                format!("answered {} with no JSON-RPC response", status.as_u16())
            } else {
                format!("answered with content type {content_type:?}, not JSON or an event stream")
            };
            return Err(with_target(
                Error::protocol(format!("POST {}: the server {what}", target.url_path)),
                target,
            ));
        }
        let body = read_capped(resp, config.max_message_bytes, config.request_timeout)
            .await
            .map_err(|e| with_target(e, target))?;
        let messages = Message::parse_many(&body).map_err(|e| {
            with_target(
                Error::protocol(format!(
                    "POST {}: the server's JSON response is not JSON-RPC: {e}",
                    target.url_path
                )),
                target,
            )
        })?;
        for m in messages {
            let _ = self.link.tx.send(Incoming::Message(m)).await;
        }
        Ok(())
    }
}

/// Reads a whole body, refusing more than `max` bytes or taking longer than `limit`.
async fn read_capped(
    mut resp: reqwest::Response,
    max: usize,
    limit: Duration,
) -> Result<Vec<u8>, Error> {
    let read = async {
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| {
            Error::transport("the response body could not be read")
                .with(|c| c.io = Some(crate::error::io_kind_of(&e)))
        })? {
            if body.len() + chunk.len() > max {
                return Err(Error::protocol(format!(
                    "the response body is larger than {} bytes",
                    max
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    match tokio::time::timeout(limit, read).await {
        Ok(r) => r,
        Err(_) => Err(Error::timeout(format!(
            "the response body did not arrive within {}",
            crate::fmt_duration(limit)
        ))
        .with(|c| c.io = Some(IoKind::Timeout))),
    }
}

#[cfg(test)]
#[path = "bounds_tests.rs"]
mod bounds_tests;
