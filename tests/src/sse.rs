//! Server-sent events at the byte level: framing (LF or CRLF), a response body fed from a
//! channel, and the pump that turns an answer's outbound messages into events.
//!
//! Closing a stream means dropping its `SseWriter`: the body ends and hyper finishes the
//! chunked response, which the client sees as a graceful end of stream.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Response;
use hyper::body::Frame;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, interval_at};

use crate::http::{Body, Http};
use crate::mcp::Outbound;
use crate::script::SseScript;

/// The error a response body yields to make hyper abort the connection mid-body (no final
/// chunk), as a network failure would.
#[derive(Debug, thiserror::Error)]
#[error("response stream aborted by a fault")]
pub struct Aborted;

/// A response body that yields whatever the writer sends, and ends when the writer is dropped
/// (or aborts, when the writer says so).
struct ChannelBody(mpsc::UnboundedReceiver<Result<Bytes, Aborted>>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Aborted;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Aborted>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| bytes.map(Frame::data)))
    }
}

/// The writing half of an open SSE response. Every method returns `false` once the client is
/// gone (hyper dropped the body).
#[derive(Debug)]
pub struct SseWriter {
    tx: mpsc::UnboundedSender<Result<Bytes, Aborted>>,
    nl: &'static str,
}

impl SseWriter {
    /// `id:`, optional `retry:` (verbatim), and an empty `data:`.
    pub fn priming(&self, id: u64, retry: Option<&str>) -> bool {
        let nl = self.nl;
        let retry = retry.map(|r| format!("retry: {r}{nl}")).unwrap_or_default();
        self.send(format!("id: {id}{nl}{retry}data:{nl}{nl}"))
    }

    pub fn message(&self, id: u64, message: &Value) -> bool {
        let nl = self.nl;
        self.send(format!(
            "event: message{nl}id: {id}{nl}data: {message}{nl}{nl}"
        ))
    }

    /// A named event with one `data:` line (the legacy transport's `endpoint`).
    pub fn event(&self, name: &str, data: &str) -> bool {
        let nl = self.nl;
        self.send(format!("event: {name}{nl}data: {data}{nl}{nl}"))
    }

    pub fn comment(&self, text: &str) -> bool {
        let nl = self.nl;
        self.send(format!(": {text}{nl}{nl}"))
    }

    /// Ends the response without its final chunk: the client sees the connection fail.
    pub fn abort(self) {
        let _ = self.tx.send(Err(Aborted));
    }

    /// Resolves when the client has gone (hyper dropped the body).
    pub async fn closed(&self) {
        self.tx.closed().await;
    }

    fn send(&self, text: String) -> bool {
        self.tx.send(Ok(Bytes::from(text))).is_ok()
    }
}

/// A 200 `text/event-stream` response and the writer that feeds it.
pub fn response(crlf: bool, headers: &[(HeaderName, String)]) -> (SseWriter, Response<Body>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut response = Response::new(ChannelBody(rx).boxed_unsync());
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            h.insert(name.clone(), value);
        }
    }
    let nl = if crlf { "\r\n" } else { "\n" };
    (SseWriter { tx, nl }, response)
}

/// Streams an answer: priming event (if scripted), `first`, then everything from `rx` until the
/// final response, with keepalive comments while waiting. `rx: None` never ends on its own
/// (a standalone GET stream, or a request the script never answers).
pub async fn pump(
    http: Arc<Http>,
    writer: SseWriter,
    first: Option<Outbound>,
    mut rx: Option<mpsc::UnboundedReceiver<Outbound>>,
    stream: &'static str,
    rpc_id: Value,
) {
    let sse = &http.server.script.http.sse;
    let mut keepalive = keepalive(sse);
    let mut first = first;
    let reason = 'stream: {
        if sse.priming && !writer.priming(http.next_event_id(), sse.retry.as_deref()) {
            break 'stream "client_gone";
        }
        loop {
            let next = match first.take() {
                Some(out) => Some(out),
                None => tokio::select! {
                    out = recv(&mut rx) => out,
                    () = tick(&mut keepalive) => {
                        if !writer.comment(&sse.keepalive_comment) {
                            break 'stream "client_gone";
                        }
                        continue;
                    }
                },
            };
            let Some(out) = next else {
                break 'stream "answer_dropped";
            };
            if !writer.message(http.next_event_id(), out.message()) {
                break 'stream "client_gone";
            }
            if let Outbound::Final(_) = out {
                break 'stream "complete";
            }
        }
    };
    // Logged before the close, so a client that saw the end of the stream finds it logged.
    let fields = json!({"stream": stream, "rpc_id": rpc_id, "reason": reason});
    http.server.log.event("sse_closed", fields);
    drop(writer);
}

/// Runs `work` while sending the scripted keepalive comments; `None` if the client went away
/// first (noticed only when a keepalive fails to send).
pub async fn with_keepalive<T>(
    sse: &SseScript,
    writer: &SseWriter,
    work: impl Future<Output = T>,
) -> Option<T> {
    let mut keepalive = keepalive(sse);
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return Some(done),
            () = tick(&mut keepalive) => {
                if !writer.comment(&sse.keepalive_comment) {
                    return None;
                }
            }
        }
    }
}

/// The scripted keepalive timer, if any.
pub fn keepalive(sse: &SseScript) -> Option<Interval> {
    sse.keepalive_ms.map(|ms| {
        let period = Duration::from_millis(ms.max(1));
        interval_at(Instant::now() + period, period)
    })
}

/// The next outbound message; never, without a receiver.
pub async fn recv(rx: &mut Option<mpsc::UnboundedReceiver<Outbound>>) -> Option<Outbound> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The next keepalive tick; never, without a timer.
pub async fn tick(keepalive: &mut Option<Interval>) {
    match keepalive {
        Some(keepalive) => {
            keepalive.tick().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `write` against a fresh writer and returns everything it produced.
    fn check(crlf: bool, write: impl FnOnce(&SseWriter), expect: &str) {
        let (writer, response) = response(crlf, &[]);
        write(&writer);
        drop(writer);
        let mut body = response.into_body();
        let mut got = Vec::new();
        while let Some(Ok(frame)) = futures_util::FutureExt::now_or_never(body.frame()).flatten() {
            got.extend_from_slice(frame.data_ref().map(|d| d.as_ref()).unwrap_or_default());
        }
        assert_eq!(String::from_utf8(got).unwrap(), expect);
    }

    #[test]
    fn framing() {
        check(false, |w| assert!(w.priming(1, None)), "id: 1\ndata:\n\n");
        check(
            false,
            |w| assert!(w.priming(2, Some("500ms"))),
            "id: 2\nretry: 500ms\ndata:\n\n",
        );
        check(
            true,
            |w| assert!(w.priming(3, Some("0"))),
            "id: 3\r\nretry: 0\r\ndata:\r\n\r\n",
        );
        check(false, |w| assert!(w.comment("ping")), ": ping\n\n");
        check(
            false,
            |w| assert!(w.message(4, &json!({"id": 1}))),
            "event: message\nid: 4\ndata: {\"id\":1}\n\n",
        );
        check(
            true,
            |w| assert!(w.message(5, &json!(1))),
            "event: message\r\nid: 5\r\ndata: 1\r\n\r\n",
        );
    }
}
