//! The endpoint's HTTP answers: errors as a JSON-RPC error with `id: null` (the body the
//! spec suggests), JSON bodies, empty ones, and event streams.
//!
//! Each answer goes out in as few writes as its framing allows. On a kept-alive
//! connection every write after the first that the peer has not acknowledged yet waits for
//! its delayed ACK (about 40 ms) unless the socket sets `TCP_NODELAY`, and even then each
//! write is a segment of its own. So a request's event stream holds its headers (and its
//! priming event) until the first event is there, or briefly when it primes
//! (`PRIMING_HOLD`), an answer that is the stream's only event goes out with a
//! `Content-Length` in one write with its headers, and events that are ready together
//! go out as one chunk (hyper writes what the body has ready in one vectored write, the
//! terminating chunk included when the stream has ended by then).

use super::{Body, KEEPALIVE};
use crate::protocol::RpcError;
use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::Frame;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Response, StatusCode};
use serde_json::json;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc::Receiver;
use tokio::sync::mpsc::error::TryRecvError;

/// A JSON-RPC error with `id: null` as the body of an HTTP error, as the spec suggests.
pub(super) fn refuse(status: StatusCode, code: i64, message: impl Into<String>) -> Response<Body> {
    let error = RpcError {
        code,
        message: message.into(),
        data: None,
    };
    let body = json!({ "jsonrpc": "2.0", "id": null, "error": error });
    json_response(status, body.to_string())
}

pub(super) fn json_response(status: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|e| match e {})
            .boxed_unsync(),
    );
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

pub(super) fn empty(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(Empty::new().map_err(|e| match e {}).boxed_unsync());
    *r.status_mut() = status;
    r
}

/// What a quiet event stream gets every `KEEPALIVE`, so a host that went away is noticed.
const KEEPALIVE_COMMENT: &[u8] = b": keepalive\n\n";

/// An event stream fed by `rx`, after `priming` when there is one, with a comment every
/// `KEEPALIVE` while it is quiet; it ends when every sender is gone. Its headers go out at
/// once.
pub(super) fn event_stream(priming: Option<Bytes>, rx: Receiver<Bytes>) -> Response<Body> {
    streaming(priming.unwrap_or_default(), rx)
}

/// A resumed stream: the events it replays, then the rest of it (none when the replay
/// ended with the answer). Its headers go out at once.
pub(super) fn resumed_stream(replay: Bytes, rest: Option<Receiver<Bytes>>) -> Response<Body> {
    match rest {
        Some(rx) => streaming(replay, rx),
        None => sse(Full::new(replay).map_err(|e| match e {}).boxed_unsync()),
    }
}

/// How long a request's stream that primes holds its headers and priming event for the
/// first real event, so that a quick answer still goes out in one write with them. A host
/// can resume the stream only once it has the priming event; a call that takes longer than
/// this has it by then, and one write more is nothing beside such a call.
pub(super) const PRIMING_HOLD: Duration = Duration::from_millis(100);

/// The reply to a request POSTed with `Accept: text/event-stream`: its priming event (when
/// the session primes), its events, and the headers only once the first is there — or,
/// with a priming event, once `PRIMING_HOLD` has passed, and without one once a keepalive
/// is due (by then the host would have had the headers and a comment from an open stream,
/// so no client timeout is closer). An answer that is the stream's only event is one
/// write, headers (and priming event) included.
pub(super) async fn request_stream(
    priming: Option<Bytes>,
    mut rx: Receiver<Bytes>,
) -> Response<Body> {
    let hold = if priming.is_some() {
        PRIMING_HOLD
    } else {
        KEEPALIVE
    };
    let first = match tokio::time::timeout(hold, rx.recv()).await {
        Ok(Some(event)) => Some(event),
        // The stream ended before anything came (its session did): an event stream that
        // has ended, after its priming event if it has one.
        Ok(None) => {
            return sse(Full::new(priming.unwrap_or_default())
                .map_err(|e| match e {})
                .boxed_unsync());
        }
        Err(_) => None,
    };
    let head = match (priming, first) {
        (Some(priming), Some(event)) => [priming, event].concat().into(),
        (Some(priming), None) => priming,
        (None, Some(event)) => event,
        (None, None) => Bytes::from_static(KEEPALIVE_COMMENT),
    };
    let (ready, ended) = drain(head, &mut rx);
    if ended {
        return sse(Full::new(ready).map_err(|e| match e {}).boxed_unsync());
    }
    streaming(ready, rx)
}

/// An event stream that starts with `ready` (when not empty) and goes on with `rx`.
fn streaming(ready: Bytes, rx: Receiver<Bytes>) -> Response<Body> {
    let first = (!ready.is_empty()).then_some(ready);
    let stream = futures_util::stream::unfold((first, rx), |(first, mut rx)| async move {
        if let Some(ready) = first {
            return Some((Ok::<_, Infallible>(Frame::data(ready)), (None, rx)));
        }
        let next = tokio::select! {
            b = rx.recv() => b,
            () = tokio::time::sleep(KEEPALIVE) => Some(Bytes::from_static(KEEPALIVE_COMMENT)),
        };
        let (ready, _) = drain(next?, &mut rx);
        Some((Ok(Frame::data(ready)), (None, rx)))
    });
    sse(StreamBody::new(stream).boxed_unsync())
}

/// `first` and every event already queued behind it, as one buffer; and whether the
/// stream has ended (every sender is gone, so nothing more will come).
fn drain(first: Bytes, rx: &mut Receiver<Bytes>) -> (Bytes, bool) {
    let mut more = match rx.try_recv() {
        Ok(next) => next,
        Err(TryRecvError::Empty) => return (first, false),
        Err(TryRecvError::Disconnected) => return (first, true),
    };
    let mut all = BytesMut::from(&first[..]);
    loop {
        all.extend_from_slice(&more);
        more = match rx.try_recv() {
            Ok(next) => next,
            Err(TryRecvError::Empty) => return (all.freeze(), false),
            Err(TryRecvError::Disconnected) => return (all.freeze(), true),
        };
    }
}

fn sse(body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

pub(super) fn unauthorized(message: &str) -> Response<Body> {
    let mut r = refuse(StatusCode::UNAUTHORIZED, -32001, message);
    r.headers_mut().insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"lifeline\""),
    );
    r
}

pub(super) fn session_gone() -> Response<Body> {
    refuse(
        StatusCode::NOT_FOUND,
        -32001,
        "no such session (it ended or was never opened here): initialize a new one",
    )
}

#[cfg(test)]
#[path = "reply_tests.rs"]
mod tests;
