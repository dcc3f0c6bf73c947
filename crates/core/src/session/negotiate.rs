//! Which protocol revision to speak, found by walking the fallback order, the spec's: under
//! `auto` over Streamable HTTP, the stateless revision (2026-07-28) first; on the answer of
//! a server that speaks only `initialize` revisions, `initialize` on a fresh connection; on the spec's refusal of that,
//! the legacy HTTP+SSE transport (2024-11-05). Each step is a fresh attempt (new transport,
//! new session) and runs only on evidence (`policy::fallback`), never on auth, permission,
//! throttling, DNS/TLS, config or cancellation. A pinned revision is the only step tried.
//! The caller bounds the whole walk with one deadline (`options` sets each step's limit).

use super::{Session, SessionOptions};
use crate::error::{Error, Stage};
use crate::policy::fallback::{both_failed, is_older_protocol_signal};
use crate::protocol::revision::{ProtocolChoice, Revision};
use crate::transport::Connection;

/// Opens a fresh connection.
pub type Open<'a> = &'a (dyn Fn() -> Result<Connection, Error> + Send + Sync);

/// One step of the fallback order: one way of speaking to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The stateless revision: `server/discover`, `_meta` on every request.
    Stateless,
    /// `initialize` on the configured transport (Streamable HTTP or stdio).
    Initialize,
    /// `initialize` on the legacy HTTP+SSE transport.
    LegacySse,
}

/// The fallback order: the ways a server may be reached, tried in the order of `steps`.
pub struct Fallback<'a> {
    pub choice: ProtocolChoice,
    /// The configured transport (Streamable HTTP, or stdio, or legacy HTTP+SSE when the
    /// config forces it).
    pub open: Open<'a>,
    /// The legacy HTTP+SSE transport, when `auto` may fall back to it.
    pub legacy: Option<Open<'a>>,
    /// Whether `auto` asks in the stateless revision first (Streamable HTTP).
    pub stateless_first: bool,
}

impl Fallback<'_> {
    /// The steps, in the order they are tried.
    pub fn steps(&self) -> Vec<Step> {
        if self.choice.is_stateless() {
            return vec![Step::Stateless];
        }
        let mut steps = Vec::with_capacity(3);
        if self.choice == ProtocolChoice::Auto && self.stateless_first {
            steps.push(Step::Stateless);
        }
        steps.push(Step::Initialize);
        if self.choice == ProtocolChoice::Auto && self.legacy.is_some() {
            steps.push(Step::LegacySse);
        }
        steps
    }
}

/// Walks the fallback order from `start` (a step that worked before, if the caller remembers one;
/// else the first) and returns the session and the step that made it. `options` gives
/// the options for a step (its request timeout cut to what the deadline leaves) and is
/// told the stage starting; `cut` finishes a step's error (the deadline's wording).
pub async fn connect(
    fallback: &Fallback<'_>,
    start: Option<Step>,
    mut options: impl FnMut(Stage) -> Result<SessionOptions, Error>,
    cut: impl Fn(Error, Stage) -> Error,
) -> Result<(Session, Step), Error> {
    let steps = fallback.steps();
    let from = start
        .and_then(|s| steps.iter().position(|r| *r == s))
        .unwrap_or(0);
    let mut refused: Option<(Step, Error)> = None;
    for (i, step) in steps.iter().copied().enumerate().skip(from) {
        let more = i + 1 < steps.len();
        let error = match step {
            Step::Stateless => {
                let conn = (fallback.open)()?;
                let opts = options(Stage::Discover)?;
                match Session::connect_stateless(conn, opts).await {
                    Ok(s) => return Ok((s, step)),
                    Err(r) if r.speaks_initialize && more => {
                        tracing::info!(error = %r.error, "the server answered like one that speaks only initialize revisions; trying initialize");
                        refused = Some((step, cut(r.error, Stage::Discover)));
                        continue;
                    }
                    Err(r) if r.speaks_initialize && fallback.choice.is_stateless() => {
                        pinned_elsewhere(cut(r.error, Stage::Discover))
                    }
                    Err(r) => cut(r.error, Stage::Discover),
                }
            }
            Step::Initialize | Step::LegacySse => {
                let conn = match step {
                    Step::LegacySse => (fallback.legacy.expect("a legacy step has an opener"))()?,
                    _ => (fallback.open)()?,
                };
                let opts = options(Stage::Initialize)?;
                match Session::connect(conn, opts).await {
                    Ok(s) => return Ok((s, step)),
                    Err(e) if step == Step::Initialize && more && is_older_protocol_signal(&e) => {
                        tracing::info!(error = %e, "Streamable HTTP refused; trying the legacy HTTP+SSE transport (2024-11-05)");
                        let e = cut(e, Stage::Initialize);
                        refused = Some(match refused.take() {
                            Some((_, first)) => (step, after_stateless(&first, e)),
                            None => (step, e),
                        });
                        continue;
                    }
                    Err(e) => cut(e, Stage::Initialize),
                }
            }
        };
        return Err(match refused {
            Some((Step::Stateless, first)) => after_stateless(&first, error),
            Some((_, first)) => both_failed(&first, error),
            None => error,
        });
    }
    Err(refused
        .map(|(_, e)| e)
        .unwrap_or_else(|| Error::config("no way of reaching this server is configured")))
}

/// `error` of the `initialize` step, saying that the stateless revision was refused first.
fn after_stateless(refused: &Error, error: Error) -> Error {
    let message = format!(
        "{}; `initialize` was tried because the stateless revision ({}) was answered \
         the way older servers answer ({})",
        error.message(),
        Revision::STATELESS,
        refused.message()
    );
    error.restated(message)
}

/// A pin to the stateless revision met a server that speaks only `initialize` revisions.
fn pinned_elsewhere(error: Error) -> Error {
    let message = format!(
        "{}; this server is pinned to {} (`protocol` in the config) and a pin is never \
         changed silently: set `protocol` to \"auto\" to let Lifeline use what the server speaks",
        error.message(),
        Revision::STATELESS
    );
    error.restated(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::protocol::{Message, Response, RpcError};
    use crate::transport::Incoming;
    use crate::transport::memory::{self, ServerEnd};
    use serde_json::{Value, json};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// What a scripted server answers to one method.
    type Script = Arc<dyn Fn(&str) -> Result<Value, RpcError> + Send + Sync>;

    async fn serve(mut end: ServerEnd, script: Script) {
        while let Some(msg) = end.from_client.recv().await {
            let Message::Request(r) = msg else { continue };
            let outcome = script(&r.method);
            let reply = Message::Response(Response { id: r.id, outcome });
            if end.to_client.send(Incoming::Message(reply)).await.is_err() {
                return;
            }
        }
    }

    /// A connector to a server of one kind, counting the connections it opens.
    fn connector(
        script: Script,
        opened: Arc<AtomicUsize>,
    ) -> impl Fn() -> Result<Connection, Error> + Send + Sync {
        move || {
            opened.fetch_add(1, Ordering::SeqCst);
            let (conn, end) = memory::pair();
            tokio::spawn(serve(end, script.clone()));
            Ok(conn)
        }
    }

    fn initialize_only() -> Script {
        Arc::new(|method| match method {
            "initialize" => Ok(json!({ "protocolVersion": "2025-11-25", "capabilities": {} })),
            "server/discover" => Err(RpcError {
                code: -32601,
                message: "Method not found".into(),
                data: None,
            }),
            _ => Ok(json!({})),
        })
    }

    fn stateless() -> Script {
        Arc::new(|method| match method {
            "server/discover" => {
                Ok(json!({ "supportedVersions": ["2026-07-28"], "capabilities": {} }))
            }
            _ => Err(RpcError {
                code: -32601,
                message: "Method not found".into(),
                data: None,
            }),
        })
    }

    async fn walk(
        choice: ProtocolChoice,
        script: Script,
        start: Option<Step>,
    ) -> (Result<Step, Error>, usize) {
        let opened = Arc::new(AtomicUsize::new(0));
        let open = connector(script, opened.clone());
        let fallback = Fallback {
            choice,
            open: &open,
            legacy: None,
            stateless_first: true,
        };
        let r = connect(
            &fallback,
            start,
            |_| Ok(SessionOptions::default()),
            |e, _| e,
        )
        .await
        .map(|(_, step)| step);
        (r, opened.load(Ordering::SeqCst))
    }

    #[tokio::test(start_paused = true)]
    async fn auto_asks_stateless_first_and_falls_back_on_a_fresh_connection() {
        let (r, opened) = walk(ProtocolChoice::Auto, stateless(), None).await;
        assert_eq!((r.unwrap(), opened), (Step::Stateless, 1));
        let (r, opened) = walk(ProtocolChoice::Auto, initialize_only(), None).await;
        assert_eq!(r.unwrap(), Step::Initialize);
        assert_eq!(opened, 2, "the fallback is a fresh connection");
        // A remembered step starts there.
        let (r, opened) = walk(
            ProtocolChoice::Auto,
            initialize_only(),
            Some(Step::Initialize),
        )
        .await;
        assert_eq!((r.unwrap(), opened), (Step::Initialize, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_pin_is_the_only_step_and_says_what_to_change() {
        let (r, opened) = walk(
            ProtocolChoice::Pinned(Revision::STATELESS),
            initialize_only(),
            None,
        )
        .await;
        let e = r.unwrap_err();
        assert_eq!(opened, 1);
        assert!(
            e.message().contains("pinned to 2026-07-28") && e.message().contains("\"auto\""),
            "{e}"
        );
        let (r, opened) = walk(
            ProtocolChoice::Pinned(Revision::V2025_11_25),
            stateless(),
            None,
        )
        .await;
        assert_eq!(opened, 1);
        assert!(
            r.is_err(),
            "a 2025-11-25 pin never asks in the stateless revision"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn no_fallback_without_evidence_and_both_failures_are_told() {
        // A stateless-revision refusal: the server speaks it, so initialize is not tried.
        let auth: Script = Arc::new(|_| {
            Err(RpcError {
                code: -32020,
                message: "Header mismatch".into(),
                data: None,
            })
        });
        let (r, opened) = walk(ProtocolChoice::Auto, auth, None).await;
        assert_eq!(opened, 1);
        assert_eq!(r.unwrap_err().context().rpc_code, Some(-32020));
        // An answer of an initialize-only server, then a failing initialize: the error says both.
        let broken: Script = Arc::new(|method| match method {
            "server/discover" => Ok(json!({})),
            _ => Err(RpcError {
                code: -32603,
                message: "boom".into(),
                data: None,
            }),
        });
        let (r, opened) = walk(ProtocolChoice::Auto, broken, None).await;
        let e = r.unwrap_err();
        assert_eq!(opened, 2);
        assert_eq!(e.kind(), ErrorKind::Protocol);
        assert!(
            e.message().contains("boom") && e.message().contains("`initialize` was tried because"),
            "{e}"
        );
    }
}
