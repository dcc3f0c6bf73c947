//! A session's GET: its own event stream, for what belongs to no request, or — with a
//! `Last-Event-ID` — a stream whose connection broke, resumed after that event (MCP
//! 2025-11-25, "Resumability and Redelivery"): the events the host missed on that stream
//! alone, then the rest of it; a request's stream ends after its answer.
//!
//! An id that is not one Lifeline writes, or that names no stream this session still keeps
//! (answered, unclaimed past `streams::RESUME_WINDOW`, or another session's), is a 400 that
//! says which: never a 404, which tells a host its session is gone, and never an ordinary
//! stream, on which a host would wait for an answer that cannot come. The session's GET
//! stream is kept as long as the session, so resuming it always succeeds, with a gap when
//! its events were let go: notifications missed beat none from then on.

use super::reply::{event_stream, refuse, resumed_stream};
use super::streams::{RESUME_WINDOW, Unresumable};
use super::{Body, State, accept, guard, session_of};
use crate::gateway::Target;
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};

pub(super) fn get(
    state: &State,
    parts: &Parts,
    name: &Target,
    client: Option<&str>,
) -> Response<Body> {
    if !accept(parts).is_some_and(|a| a.contains("text/event-stream")) {
        return refuse(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "GET opens an event stream: Accept must allow text/event-stream",
        );
    }
    let session = match session_of(state, parts, name, client) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let last = parts
        .headers
        .get("last-event-id")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_owned())
        .filter(|v| !v.is_empty());
    if let Some(last) = last {
        return match session.resume(&last) {
            Ok(resumed) => resumed_stream(resumed.replay, resumed.rest),
            Err(Unresumable::Malformed) => refuse(
                StatusCode::BAD_REQUEST,
                -32000,
                format!(
                    "Last-Event-ID {:?} is not an event id of this endpoint (they read \
                     STREAM-N): resume with the id of the last event you received",
                    guard::shown(&last)
                ),
            ),
            Err(Unresumable::NotHeld) => refuse(
                StatusCode::BAD_REQUEST,
                -32000,
                format!(
                    "Last-Event-ID {:?} names no stream this session still keeps: its answer \
                     was sent, nobody resumed it within {} s, or it is another session's",
                    guard::shown(&last),
                    RESUME_WINDOW.as_secs()
                ),
            ),
        };
    }
    match session.open_stream() {
        Some((priming, events)) => event_stream(priming, events),
        None => refuse(
            StatusCode::CONFLICT,
            -32000,
            "this session already has a GET stream open",
        ),
    }
}
