//! Whether a failed `initialize` is the spec's sign of an older server (MCP 2025-11-25,
//! "Backwards compatibility"): the POST of `initialize` refused with 400, 404 or 405. Only
//! then may `auto` try the legacy HTTP+SSE transport.
//!
//! Never evidence of an older protocol, wherever it sits in the error chain and in whatever
//! order: auth and permission denials, throttling, config problems, caller cancellation,
//! DNS and TLS failures. `classify` already ranks those above a refusal; the chain walk
//! here also vetoes DNS/TLS, which rank below it.

use super::classify::classify;
use crate::error::{Error, ErrorKind, IoKind, Phase};
use std::error::Error as StdError;

/// The statuses the spec names as a server's way of saying "not Streamable HTTP here".
const SIGNALS: [u16; 3] = [400, 404, 405];

/// Source chains are short; the bound only guards against a pathological one.
const MAX_DEPTH: usize = 64;

/// True when `err` (from the handshake) lets `auto` fall back to the legacy transport.
pub fn is_older_protocol_signal(err: &Error) -> bool {
    if classify(err, Phase::Connect, false).kind != ErrorKind::Protocol {
        return false;
    }
    let mut signal = false;
    for ours in ours(err) {
        if vetoed(ours) {
            return false;
        }
        let c = ours.context();
        signal |=
            c.method.as_deref() == Some("POST") && c.status.is_some_and(|s| SIGNALS.contains(&s));
    }
    signal
}

/// The legacy attempt's error (its kind and context decide what happens next), saying
/// that Streamable HTTP was refused first.
pub fn both_failed(refused: &Error, legacy: Error) -> Error {
    let message = format!(
        "{}; the legacy HTTP+SSE transport (2024-11-05) was tried next, because Streamable \
         HTTP was refused ({}), and failed too",
        legacy.message(),
        refused.message()
    );
    legacy.restated(message)
}

/// The errors of ours in `err`'s source chain, outermost first (bounded).
fn ours(err: &Error) -> impl Iterator<Item = &Error> {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    std::iter::from_fn(move || {
        let e = cur?;
        cur = e.source();
        Some(e)
    })
    .take(MAX_DEPTH)
    .filter_map(|e| e.downcast_ref::<Error>())
}

/// Never evidence of an older protocol: see the module comment.
fn vetoed(e: &Error) -> bool {
    matches!(e.context().io, Some(IoKind::Dns | IoKind::Tls)) || vetoes(e.kind())
}

/// True when `err`, the failure of a stateless-revision request (`server/discover`), shows
/// a server that speaks only `initialize` revisions, so that `auto` may fall back to `initialize`: the
/// POST refused with 400, 404 or 405 without a recognised stateless-revision JSON-RPC error (the
/// spec's signal), or a JSON-RPC error that is not a stateless-revision one (a server that answered
/// but not as the stateless revision does). The vetoes above hold here too.
pub fn is_initialize_answer_to_stateless(err: &Error) -> bool {
    let mut legacy = false;
    for ours in ours(err) {
        let c = ours.context();
        let stateless_error = c.rpc_code.is_some_and(|code| {
            crate::protocol::stateless::is_stateless_error_code(code)
                || (c.status == Some(404) && code == crate::protocol::RpcError::METHOD_NOT_FOUND)
        });
        if vetoed(ours) || stateless_error {
            return false;
        }
        let refused =
            c.method.as_deref() == Some("POST") && c.status.is_some_and(|s| SIGNALS.contains(&s));
        let answered_otherwise = c.status.is_none() && c.rpc_code.is_some();
        legacy |= refused || answered_otherwise;
    }
    legacy
}

fn vetoes(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Auth
            | ErrorKind::SignIn
            | ErrorKind::Permission
            | ErrorKind::RateLimited
            | ErrorKind::Config
            | ErrorKind::Cancelled
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stateless_request_refused_the_old_way_means_an_initialize_only_server() {
        for s in [400, 404, 405] {
            assert!(is_initialize_answer_to_stateless(&refused(s)), "{s}");
        }
        for s in [401, 403, 429, 500, 503] {
            assert!(!is_initialize_answer_to_stateless(&refused(s)), "{s}");
        }
        // A recognised stateless-revision error in the body: the server speaks it, whatever the
        // status.
        for code in [-32020, -32021, -32022] {
            let e = refused(400).with(|c| c.rpc_code = Some(code));
            assert!(!is_initialize_answer_to_stateless(&e), "{code}");
        }
        let unknown_method = refused(404).with(|c| c.rpc_code = Some(-32601));
        assert!(!is_initialize_answer_to_stateless(&unknown_method));
        // A legacy server's own JSON-RPC error in a 400 body, or a JSON-RPC error answered
        // with 200 (or over stdio): not the stateless revision.
        let legacy_body = refused(400).with(|c| c.rpc_code = Some(-32000));
        assert!(is_initialize_answer_to_stateless(&legacy_body));
        let answered =
            Error::new(ErrorKind::Server, "method not found").with(|c| c.rpc_code = Some(-32601));
        assert!(is_initialize_answer_to_stateless(&answered));
        // Nothing heard: no evidence either way.
        assert!(!is_initialize_answer_to_stateless(&Error::timeout(
            "no answer"
        )));
        assert!(!is_initialize_answer_to_stateless(
            &Error::transport("refused").with(|c| c.io = Some(IoKind::Connect))
        ));
    }

    #[test]
    fn vetoes_also_hold_for_the_stateless_probe_in_either_order() {
        for veto in vetoes() {
            assert!(
                !is_initialize_answer_to_stateless(&refused(400).caused_by(veto.clone())),
                "{veto:?} inside"
            );
            assert!(
                !is_initialize_answer_to_stateless(&veto.clone().caused_by(refused(400))),
                "{veto:?} outside"
            );
        }
    }

    /// Failures that are never evidence of an older protocol.
    fn vetoes() -> [Error; 7] {
        [
            Error::new(ErrorKind::Auth, "401"),
            Error::new(ErrorKind::Permission, "403"),
            Error::new(ErrorKind::RateLimited, "429"),
            Error::config("bad url"),
            Error::cancelled("caller gave up"),
            Error::transport("dns").with(|c| c.io = Some(IoKind::Dns)),
            Error::transport("tls").with(|c| c.io = Some(IoKind::Tls)),
        ]
    }

    fn refused(status: u16) -> Error {
        Error::protocol(format!("POST /mcp: refused ({status})")).with(|c| {
            c.status = Some(status);
            c.method = Some("POST".into());
        })
    }

    #[test]
    fn only_a_post_refused_with_400_404_or_405_is_a_signal() {
        for s in [400, 404, 405] {
            assert!(is_older_protocol_signal(&refused(s)), "{s}");
        }
        for s in [401, 403, 406, 409, 415, 422, 429, 500, 503] {
            assert!(!is_older_protocol_signal(&refused(s)), "{s}");
        }
        let get = refused(405).with(|c| c.method = Some("GET".into()));
        assert!(!is_older_protocol_signal(&get));
        // A JSON-RPC error to initialize (no status) is an answer, not a sign of age.
        assert!(!is_older_protocol_signal(&Error::protocol("bad params")));
    }

    #[test]
    fn vetoes_win_in_either_order_of_nesting() {
        for veto in vetoes() {
            let outer_signal = refused(404).caused_by(veto.clone());
            assert!(!is_older_protocol_signal(&outer_signal), "{veto:?} inside");
            let inner_signal = veto.clone().caused_by(refused(404));
            assert!(!is_older_protocol_signal(&inner_signal), "{veto:?} outside");
        }
        // A signal under a neutral wrapper still counts.
        let wrapped = Error::protocol("initialize failed").caused_by(refused(405));
        assert!(is_older_protocol_signal(&wrapped));
    }
}
