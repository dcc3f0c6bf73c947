//! SSE response streams: reading them, and resuming them after they end (seeds 000, 001).
//!
//! A stream that ends before its answer, after the server gave an event id, is resumed by
//! a GET with `Last-Event-ID` after exactly the server's `retry:` (absent or invalid: 1 s;
//! floored at 100 ms). The whole resumption has one budget: a wait that does not fit what
//! is left fails at once, naming the budget, and the resumed GET may read only for what is
//! left. Graceful closes that deliver nothing count as attempts, so a server that keeps
//! closing cannot make us poll forever.

use super::Inner;
use super::errors::{request_error, status_error, timeout_error};
use crate::error::{Error, ErrorKind};
use crate::protocol::{Message, RequestId};
use crate::transport::Incoming;
use crate::transport::sse::{DecodeError, Decoder};
use reqwest::header::ACCEPT;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The id of the `ping` that checks whether a GET's 404 means the session is gone; its
/// answer is ignored by the session like any answer nobody waits for.
const PROBE_ID: &str = "lifeline-session-probe";

/// The reconnection delay for a `retry:` value (in ms) per the rules above.
pub fn resume_delay(retry_ms: Option<u64>) -> Duration {
    match retry_ms {
        None => Duration::from_millis(1000),
        Some(ms) => Duration::from_millis(ms.max(100)),
    }
}

enum Pumped {
    /// The awaited response arrived (and was delivered).
    Answered,
    /// The stream ended; `delivered` says whether any message came through.
    Ended { delivered: bool, why: &'static str },
    /// The server sent something that is not SSE-framed JSON-RPC.
    Garbage(Error),
}

/// Reads the SSE stream of a POSTed request until its answer, then resumes if needed.
pub(super) async fn post_stream(inner: Arc<Inner>, id: RequestId, resp: reqwest::Response) {
    let target = inner.target("POST");
    let mut dec = Decoder::new(inner.link.config.max_message_bytes);
    let idle = inner.link.config.sse_idle_timeout;
    let pumped = pump(&inner, resp, &mut dec, Some(&id), idle).await;
    // What fails the request alone, if it is not resumed.
    let error = match pumped {
        Pumped::Answered => return,
        Pumped::Garbage(e) => e,
        // 2026-07-28 streams cannot be resumed; the request alone is lost (no session state
        // went with it), and the session decides whether asking again is safe.
        Pumped::Ended { why, .. } if inner.is_stateless() => lost(format!(
            "the response stream {why} before the answer, and streams of the stateless \
             revision (2026-07-28) cannot be resumed"
        )),
        Pumped::Ended { why, .. } => {
            tracing::debug!(request = %id, why, "response stream ended before its answer; resuming");
            if let Err(e) = resume(&inner, &mut dec, Some(&id), why).await {
                inner.link.fail(e).await;
            }
            return;
        }
    };
    let error = super::with_target(error, &target);
    let _ = inner
        .link
        .tx
        .send(Incoming::RequestFailed { id, error })
        .await;
}

/// The standalone GET stream: server requests and notifications. Its failures are
/// recorded and logged, never fatal to the POST path. `opened` fires once the GET has its
/// answer (a stream, 405 or an error), so that the handshake can wait for it: a server that
/// asks us something right after `initialized` must find the stream open.
pub(super) async fn listen(inner: Arc<Inner>, opened: tokio::sync::oneshot::Sender<()>) {
    let target = inner.target("GET");
    let result = async {
        let resp = get(&inner, None, inner.link.config.request_timeout).await;
        let _ = opened.send(());
        let resp = resp?;
        let mut dec = Decoder::new(inner.link.config.max_message_bytes);
        match pump(
            &inner,
            resp,
            &mut dec,
            None,
            inner.link.config.sse_idle_timeout,
        )
        .await
        {
            Pumped::Garbage(e) => Err(e),
            Pumped::Answered => Ok(()),
            Pumped::Ended { why, .. } => resume(&inner, &mut dec, None, why).await,
        }
    }
    .await;
    if let Err(e) = result {
        if e.kind() == ErrorKind::SessionExpired {
            // The GET says the session is gone (the server restarted?), but some servers
            // answer 404 for a GET route they lack. A POST decides: if it is refused with
            // 404 too, `send` ends the connection; otherwise only the stream is missing.
            let probe = Message::request(RequestId::String(PROBE_ID.into()), "ping", None);
            if let Err(p) = inner.send(&probe).await
                && p.kind() == ErrorKind::SessionExpired
            {
                return;
            }
        }
        let status = if e.context().status == Some(405) {
            tracing::debug!("the server offers no standalone GET stream (405)");
            "the server offers no standalone GET stream (405)".to_owned()
        } else {
            tracing::warn!(error = %e, "the standalone GET stream stopped; requests still work");
            super::with_target(e, &target).to_string()
        };
        *inner.listen_status.lock().expect("lock") = Some(status);
    }
}

/// Resumes a stream until `want` is answered (or, for the listener, until it fails).
async fn resume(
    inner: &Arc<Inner>,
    dec: &mut Decoder,
    want: Option<&RequestId>,
    first_why: &'static str,
) -> Result<(), Error> {
    let budget = inner.link.config.max_reconnection_wait;
    let max_attempts = inner.link.config.max_resume_attempts;
    let mut deadline = Instant::now() + budget;
    let mut attempts = 0u32;
    let mut why = first_why.to_owned();
    loop {
        let last_id = dec.last_event_id().to_owned();
        if last_id.is_empty() && want.is_some() {
            return Err(lost(format!(
                "the response stream {why} before the answer, and the server gave no event id to \
                 resume from; the request was not retried (it may have run on the server)"
            )));
        }
        if attempts == max_attempts {
            return Err(lost(format!(
                "the response stream was resumed {attempts} times without delivering the answer \
                 (last: {why}); gave up so as not to poll forever"
            )));
        }
        attempts += 1;
        let delay = resume_delay(dec.retry_ms());
        let remaining = deadline.saturating_duration_since(Instant::now());
        if delay > remaining {
            return Err(lost(format!(
                "the server asked to wait {} before resuming the stream, which does not fit the \
                 {} resumption budget (max_reconnection_wait; {} left); gave up at once",
                crate::fmt_duration(delay),
                crate::fmt_duration(budget),
                crate::fmt_duration(remaining),
            ))
            .with(|c| c.retry_after = Some(delay)));
        }
        tokio::time::sleep(delay).await;
        let remaining = deadline.saturating_duration_since(Instant::now());
        let last = (!last_id.is_empty()).then_some(last_id.as_str());
        let resp = match get(
            inner,
            last,
            inner.link.config.request_timeout.min(remaining),
        )
        .await
        {
            Ok(r) => r,
            Err(e) if e.context().status.is_some() => return Err(e),
            Err(e) => {
                why = format!("could not be reopened ({e})");
                continue;
            }
        };
        dec.new_stream();
        let idle = inner
            .link
            .config
            .sse_idle_timeout
            .min(deadline.saturating_duration_since(Instant::now()));
        match pump(inner, resp, dec, want, idle).await {
            Pumped::Answered => return Ok(()),
            Pumped::Garbage(e) => return Err(e),
            Pumped::Ended { delivered, why: w } => {
                why = w.to_owned();
                if want.is_none() && delivered {
                    // A listener that is receiving is healthy: a fresh budget for next time.
                    attempts = 0;
                    deadline = Instant::now() + budget;
                }
            }
        }
    }
}

fn lost(message: String) -> Error {
    Error::new(ErrorKind::StreamLost, message)
}

/// Opens a GET event stream, optionally resuming after `last_event_id`.
async fn get(
    inner: &Arc<Inner>,
    last_event_id: Option<&str>,
    limit: Duration,
) -> Result<reqwest::Response, Error> {
    let target = inner.target("GET");
    let sent_session = inner.session_id.lock().expect("lock").is_some();
    let mut req = inner
        .request(reqwest::Method::GET)
        .header(ACCEPT, "text/event-stream");
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id);
    }
    let resp = match tokio::time::timeout(limit, req.send()).await {
        Err(_) => {
            return Err(timeout_error(
                &target,
                "the event stream sent no response headers",
                limit,
            ));
        }
        Ok(Err(e)) => return Err(request_error(&target, &e)),
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    if let Some(e) = super::errors::redirect_error(&target, &resp, &inner.link.redactor) {
        return Err(e);
    }
    if !status.is_success() {
        let retry_after = super::errors::retry_after_of(resp.headers());
        return Err(status_error(
            &target,
            status,
            retry_after,
            b"",
            sent_session,
            &inner.link.redactor,
        ));
    }
    if !super::content_type(&resp).starts_with("text/event-stream") {
        return Err(super::with_target(
            Error::protocol(format!(
                "GET {}: the server answered without an event stream",
                target.url_path
            )),
            &target,
        ));
    }
    Ok(resp)
}

/// Reads events and hands their messages to the session until `want` is answered or the
/// stream ends. A silence longer than `idle` ends the stream.
async fn pump(
    inner: &Arc<Inner>,
    mut resp: reqwest::Response,
    dec: &mut Decoder,
    want: Option<&RequestId>,
    idle: Duration,
) -> Pumped {
    let mut delivered = false;
    loop {
        let chunk = match tokio::time::timeout(idle, resp.chunk()).await {
            Err(_) => {
                return Pumped::Ended {
                    delivered,
                    why: "went silent past the SSE idle timeout",
                };
            }
            Ok(Err(_)) => {
                return Pumped::Ended {
                    delivered,
                    why: "broke",
                };
            }
            Ok(Ok(None)) => {
                return Pumped::Ended {
                    delivered,
                    why: "was closed by the server",
                };
            }
            Ok(Ok(Some(chunk))) => chunk,
        };
        let events = match dec.feed(&chunk) {
            Ok(events) => events,
            Err(DecodeError::TooLarge { limit }) => {
                return Pumped::Garbage(Error::protocol(format!(
                    "the server sent an SSE line or event larger than {limit} bytes"
                )));
            }
        };
        for ev in events {
            if ev.data.is_empty() || ev.event != "message" {
                continue;
            }
            let messages = match Message::parse_many(ev.data.as_bytes()) {
                Ok(m) => m,
                Err(e) => {
                    return Pumped::Garbage(Error::protocol(format!(
                        "an SSE event from the server is not JSON-RPC: {e}"
                    )));
                }
            };
            delivered = true;
            for m in messages {
                let answered = matches!((&m, want), (Message::Response(r), Some(w)) if &r.id == w);
                if inner.link.tx.send(Incoming::Message(m)).await.is_err() {
                    return Pumped::Answered;
                }
                if answered {
                    return Pumped::Answered;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_delay_rules() {
        let check = |retry: Option<u64>, ms: u64| {
            assert_eq!(resume_delay(retry), Duration::from_millis(ms))
        };
        check(None, 1000);
        check(Some(0), 100);
        check(Some(50), 100);
        check(Some(100), 100);
        check(Some(500), 500);
        check(Some(86_400_000), 86_400_000);
    }
}
