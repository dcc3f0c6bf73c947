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
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    for _ in 0..MAX_DEPTH {
        let Some(e) = cur else { break };
        if let Some(ours) = e.downcast_ref::<Error>() {
            let c = ours.context();
            if matches!(c.io, Some(IoKind::Dns | IoKind::Tls)) || vetoes(ours.kind()) {
                return false;
            }
            signal |= c.method.as_deref() == Some("POST")
                && c.status.is_some_and(|s| SIGNALS.contains(&s));
        }
        cur = e.source();
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
    let context = legacy.context().clone();
    Error::new(legacy.kind(), message)
        .with(|c| *c = context)
        .caused_by(legacy)
}

fn vetoes(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Auth
            | ErrorKind::Permission
            | ErrorKind::RateLimited
            | ErrorKind::Config
            | ErrorKind::Cancelled
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let vetoes = [
            Error::new(ErrorKind::Auth, "401"),
            Error::new(ErrorKind::Permission, "403"),
            Error::new(ErrorKind::RateLimited, "429"),
            Error::config("bad url"),
            Error::cancelled("caller gave up"),
            Error::transport("dns").with(|c| c.io = Some(IoKind::Dns)),
            Error::transport("tls").with(|c| c.io = Some(IoKind::Tls)),
        ];
        for veto in vetoes {
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
