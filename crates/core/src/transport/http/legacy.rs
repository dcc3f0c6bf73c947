//! The legacy HTTP+SSE transport (MCP 2024-11-05): one long GET event stream carries every
//! server message; its first `endpoint` event names the URL the client POSTs its messages
//! to. POSTs are only acknowledged (202); answers arrive on the stream.
//!
//! The stream opens with the first send (the `initialize` request), so the wait for
//! `endpoint` is part of that request and falls inside the establishment deadline. The
//! endpoint must be on the origin we connected to: POSTing (with the configured headers)
//! wherever a server points would hand our credentials to another host.
//!
//! Architecture invariant: the stream is the connection. There is no resumption in this
//! revision, so when the stream ends the transport is closed with a `stream_lost` cause:
//! every request in flight fails with it and the supervisor starts a new generation.
//!
//! With an OAuth authorizer (`HttpConfig::auth`), the stream's GET and every POST carry its
//! bearer token, and a 401 or 403 `insufficient_scope` on either goes to it, as on
//! Streamable HTTP (docs/auth.md).

use super::errors::{Target, redirect_error, request_error, timeout_error};
use super::{HttpConfig, Link, authority_of, content_type, read_capped, with_target};
use crate::error::{Error, ErrorKind};
use crate::protocol::Message;
use crate::transport::sse::{DecodeError, Decoder};
use crate::transport::{Connection, Incoming, Transport};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use tokio::task::AbortHandle;

pub struct LegacySseTransport {
    inner: Arc<Inner>,
}

struct Inner {
    /// Its URL is the SSE endpoint (the configured URL).
    link: Link,
    /// `None` until the stream's `endpoint` event, or until the stream failed first.
    endpoint: watch::Sender<Option<Result<reqwest::Url, Error>>>,
    /// The stream reader once started; aborted on close.
    reader: Mutex<Option<AbortHandle>>,
}

/// Validates the config and builds the transport. Nothing is sent until the first message.
pub fn connect(config: &HttpConfig) -> Result<Connection, Error> {
    let (link, incoming) = Link::new(config)?;
    let redactor = link.redactor.clone();
    let inner = Arc::new(Inner {
        link,
        endpoint: watch::Sender::new(None),
        reader: Mutex::new(None),
    });
    Ok(Connection {
        transport: Transport::LegacySse(LegacySseTransport { inner }),
        incoming,
        redactor,
    })
}

impl LegacySseTransport {
    /// POSTs one message to the endpoint, opening the stream and waiting for its `endpoint`
    /// event first if this is the first message.
    pub async fn send(&self, msg: &Message) -> Result<(), Error> {
        let inner = &self.inner;
        inner.link.check_open()?;
        inner.start();
        let endpoint = inner.endpoint().await?;
        inner.post(&endpoint, msg).await
    }

    /// Stops the stream. The revision has no session to delete: the server forgets us when
    /// the stream closes.
    pub async fn close(&self) {
        self.inner.link.close();
        self.inner.stop();
    }
}

impl Drop for LegacySseTransport {
    fn drop(&mut self) {
        self.inner.stop();
    }
}

impl Inner {
    /// A request to the stream's URL.
    fn target(&self, method: &'static str) -> Target {
        self.link.target(method, &self.link.url)
    }

    fn stop(&self) {
        if let Some(reader) = self.reader.lock().expect("lock").take() {
            reader.abort();
        }
    }

    /// Starts the stream reader once.
    fn start(self: &Arc<Self>) {
        let mut reader = self.reader.lock().expect("lock");
        if reader.is_none() && !self.link.is_closed() {
            let inner = self.clone();
            *reader = Some(tokio::spawn(async move { inner.read().await }).abort_handle());
        }
    }

    /// Waits for the `endpoint` event, at most the request timeout.
    async fn endpoint(&self) -> Result<reqwest::Url, Error> {
        let mut rx = self.endpoint.subscribe();
        let limit = self.link.config.request_timeout;
        match tokio::time::timeout(limit, rx.wait_for(Option::is_some)).await {
            Ok(Ok(got)) => got.clone().expect("waited for Some"),
            Ok(Err(_)) => Err(Error::cancelled("the connection was closed by Lifeline")),
            Err(_) => Err(timeout_error(
                &self.target("GET"),
                "the legacy SSE stream sent no `endpoint` event (is this a 2024-11-05 HTTP+SSE \
                 endpoint? a Streamable HTTP server wants type \"http\")",
                limit,
            )),
        }
    }

    /// Ends the transport with `cause`; only the first cause is kept. A send still waiting
    /// for the endpoint fails with the same cause.
    async fn fail(&self, cause: Error) {
        self.endpoint.send_if_modified(|e| {
            if e.is_some() {
                return false;
            }
            *e = Some(Err(cause.clone()));
            true
        });
        self.link.fail(cause).await;
    }

    /// Sends what `build` makes with the authorizer's bearer token, if there is one. A 401
    /// (or a 403 `insufficient_scope`) goes to the authorizer, and the request is sent again
    /// when it has a token for it, a bounded number of times. `what` says what did not come
    /// when the request times out.
    async fn authorized(
        &self,
        target: &Target,
        what: &str,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, Error> {
        let limit = self.link.config.request_timeout;
        let mut rounds = 0;
        loop {
            let mut req = build();
            let used = match &self.link.config.auth {
                Some(auth) => auth.fresh_bearer().await,
                None => None,
            };
            if let Some(token) = &used {
                req = req.bearer_auth(token);
            }
            let resp = match tokio::time::timeout(limit, req.send()).await {
                Err(_) => return Err(timeout_error(target, what, limit)),
                Ok(Err(e)) => return Err(request_error(target, &e)),
                Ok(Ok(r)) => r,
            };
            let link = &self.link;
            if !link
                .send_again(&mut rounds, &resp, used.as_deref(), target)
                .await?
            {
                return Ok(resp);
            }
        }
    }

    async fn post(&self, endpoint: &reqwest::Url, msg: &Message) -> Result<(), Error> {
        let link = &self.link;
        let target = link.target("POST", endpoint);
        let body = msg.to_json();
        let resp = self
            .authorized(&target, "no response headers", || {
                link.client
                    .post(endpoint.clone())
                    .headers(link.headers.clone())
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone())
            })
            .await?;
        if let Some(e) = redirect_error(&target, &resp, &link.redactor) {
            return Err(e);
        }
        if resp.status().is_success() {
            return self.answered_in_body(resp, &target).await;
        }
        // The endpoint URL names the server's session: a 404 there means it is gone. The
        // endpoint has come, so nothing waits on it: ending the link is all `fail` would do.
        Err(link.post_failure(resp, &target, true).await)
    }

    /// Some servers of this revision answer a request in the POST's own body (JSON)
    /// rather than on the stream: such an answer is delivered like one from the stream
    /// (the session ignores a second copy). Anything else in the body (`Accepted`) is not
    /// a message and is ignored.
    async fn answered_in_body(
        &self,
        resp: reqwest::Response,
        target: &Target,
    ) -> Result<(), Error> {
        if !content_type(&resp).starts_with("application/json") {
            return Ok(());
        }
        let config = &self.link.config;
        let body = read_capped(resp, config.max_message_bytes, config.request_timeout)
            .await
            .map_err(|e| with_target(e, target))?;
        match Message::parse_many(&body) {
            Ok(messages) => {
                for m in messages {
                    let _ = self.link.tx.send(Incoming::Message(m)).await;
                }
            }
            Err(e) if !body.iter().all(u8::is_ascii_whitespace) => {
                tracing::debug!(error = %e, "ignored a POST body that is not JSON-RPC");
            }
            Err(_) => {}
        }
        Ok(())
    }

    /// Reads the stream until it ends, then closes the transport with why.
    async fn read(self: Arc<Self>) {
        let cause = match self.open().await {
            Ok(resp) => self.pump(resp).await,
            Err(e) => e,
        };
        self.fail(cause).await;
    }

    async fn open(&self) -> Result<reqwest::Response, Error> {
        let link = &self.link;
        let target = self.target("GET");
        let resp = self
            .authorized(&target, "the event stream sent no response headers", || {
                link.client
                    .get(link.url.clone())
                    .headers(link.headers.clone())
                    .header(ACCEPT, "text/event-stream")
            })
            .await?;
        if let Some(e) = redirect_error(&target, &resp, &link.redactor) {
            return Err(e);
        }
        if !resp.status().is_success() {
            return Err(link.status_failure(resp, &target, false).await);
        }
        if !content_type(&resp).starts_with("text/event-stream") {
            return Err(with_target(
                Error::protocol(format!(
                    "GET {}: the server answered without an event stream, so it does not speak \
                     the legacy HTTP+SSE transport here; check the URL (often /sse) or use type \
                     \"http\"",
                    target.url_path
                )),
                &target,
            ));
        }
        Ok(resp)
    }

    /// Delivers the stream's events; returns why it ended.
    async fn pump(&self, mut resp: reqwest::Response) -> Error {
        let target = self.target("GET");
        let mut dec = Decoder::new(self.link.config.max_message_bytes);
        let idle = self.link.config.sse_idle_timeout;
        loop {
            let why = match tokio::time::timeout(idle, resp.chunk()).await {
                Err(_) => "went silent past the SSE idle timeout",
                Ok(Err(_)) => "broke",
                Ok(Ok(None)) => "was closed by the server",
                Ok(Ok(Some(chunk))) => match dec.feed(&chunk) {
                    Err(DecodeError::TooLarge { limit }) => {
                        return with_target(
                            Error::protocol(format!(
                                "the server sent an SSE line or event larger than {limit} bytes"
                            )),
                            &target,
                        );
                    }
                    Ok(events) => {
                        for ev in events {
                            if let Err(e) = self.deliver(&ev.event, &ev.data).await {
                                return with_target(e, &target);
                            }
                        }
                        continue;
                    }
                },
            };
            return with_target(
                Error::new(
                    ErrorKind::StreamLost,
                    format!(
                        "the legacy SSE stream {why}; this revision (2024-11-05) cannot resume, \
                         so requests in flight failed and the connection must be made again"
                    ),
                ),
                &target,
            );
        }
    }

    /// Handles one event: the endpoint, or JSON-RPC messages.
    async fn deliver(&self, event: &str, data: &str) -> Result<(), Error> {
        match event {
            "endpoint" => {
                let url = self.resolve_endpoint(data)?;
                // Only the first endpoint counts: a server cannot move us mid-connection.
                self.endpoint.send_if_modified(|e| {
                    if e.is_some() {
                        return false;
                    }
                    *e = Some(Ok(url));
                    true
                });
                Ok(())
            }
            "message" if !data.is_empty() => {
                let messages = Message::parse_many(data.as_bytes()).map_err(|e| {
                    Error::protocol(format!("an SSE event from the server is not JSON-RPC: {e}"))
                })?;
                for m in messages {
                    let _ = self.link.tx.send(Incoming::Message(m)).await;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The endpoint event's URL, resolved against the stream's URL, on the same origin.
    fn resolve_endpoint(&self, data: &str) -> Result<reqwest::Url, Error> {
        let here = &self.link.url;
        let url = here.join(data.trim()).map_err(|_| {
            Error::protocol(
                "the server's `endpoint` event is not a URL or path, so there is nowhere to send \
                 requests; the server is not speaking the 2024-11-05 HTTP+SSE transport correctly",
            )
        })?;
        let same_origin = url.scheme() == here.scheme()
            && url.host_str() == here.host_str()
            && url.port_or_known_default() == here.port_or_known_default();
        if !same_origin {
            return Err(Error::protocol(format!(
                "the server's `endpoint` event points to another origin ({}://{}) than the one \
                 connected to ({}://{}); Lifeline only sends requests (and their headers) to the \
                 origin in the config, so fix the server or configure its URL on that origin",
                url.scheme(),
                authority_of(&url),
                here.scheme(),
                self.link.authority,
            )));
        }
        Ok(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transport(url: &str) -> Arc<Inner> {
        let conn = connect(&HttpConfig::new(url)).unwrap();
        let Transport::LegacySse(t) = conn.transport else {
            panic!("a legacy transport")
        };
        t.inner.clone()
    }

    /// A loopback server that answers every connection with `head` and then holds it open.
    async fn holding_server(head: &'static str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/sse", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = socket.read(&mut buf).await;
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.read(&mut buf).await;
                });
            }
        });
        url
    }

    #[tokio::test]
    async fn a_stream_without_an_endpoint_event_fails_the_first_send_at_the_request_timeout() {
        let url =
            holding_server("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n: hello\n\n")
                .await;
        let mut config = HttpConfig::new(url);
        config.request_timeout = std::time::Duration::from_millis(200);
        let conn = connect(&config).unwrap();
        let msg = Message::request(crate::protocol::RequestId::Number(1), "ping", None);
        let e = conn.transport.send(&msg).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
        assert!(e.message().contains("no `endpoint` event"), "{e}");
        conn.transport.close().await;
    }

    #[tokio::test]
    async fn a_stream_url_that_is_not_an_event_stream_says_so() {
        let url = holding_server(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
        )
        .await;
        let mut conn = connect(&HttpConfig::new(url)).unwrap();
        let msg = Message::request(crate::protocol::RequestId::Number(1), "ping", None);
        let e = conn.transport.send(&msg).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
        assert!(e.message().contains("without an event stream"), "{e}");
        // The transport is closed with the same cause.
        let Some(Incoming::Closed(cause)) = conn.incoming.recv().await else {
            panic!("the transport closed")
        };
        assert_eq!(cause.kind(), ErrorKind::Protocol);
    }

    #[tokio::test]
    async fn endpoint_resolves_on_the_same_origin_only() {
        let inner = transport("http://127.0.0.1:8080/sse?x=1");
        let url = inner.resolve_endpoint("/messages?sessionId=abc\n").unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:8080/messages?sessionId=abc");
        let url = inner.resolve_endpoint("messages").unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:8080/messages");
        let url = inner
            .resolve_endpoint("http://127.0.0.1:8080/m?s=1")
            .unwrap();
        assert_eq!(url.path(), "/m");
        for other in [
            "http://127.0.0.1:9090/messages",
            "https://127.0.0.1:8080/messages",
            "http://evil.example:8080/messages",
            "//evil.example/messages",
        ] {
            let e = inner.resolve_endpoint(other).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Protocol, "{other}");
            assert!(e.message().contains("another origin"), "{other}: {e}");
        }
    }
}
