//! The endpoint's HTTP answers: errors as a JSON-RPC error with `id: null` (the body the
//! spec suggests), JSON bodies, empty ones, and event streams.

use super::{Body, KEEPALIVE};
use crate::protocol::RpcError;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::Frame;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Response, StatusCode};
use serde_json::json;
use std::convert::Infallible;

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

/// An event stream fed by `rx`, with a comment every `KEEPALIVE` while it is quiet; it
/// ends when every sender is gone.
pub(super) fn event_stream(rx: tokio::sync::mpsc::UnboundedReceiver<Bytes>) -> Response<Body> {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let next = tokio::select! {
            b = rx.recv() => b,
            () = tokio::time::sleep(KEEPALIVE) => Some(Bytes::from_static(b": keepalive\n\n")),
        };
        next.map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    let mut r = Response::new(StreamBody::new(stream).boxed_unsync());
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
