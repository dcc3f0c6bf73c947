//! Which protocol generation to speak, found by asking in the spec's order: under `auto`
//! over Streamable HTTP, the stateless revision (2026-07-28) first; on an answer of the
//! `initialize` era, `initialize` on a fresh connection; on the spec's refusal of that,
//! the legacy HTTP+SSE transport (2024-11-05). Each step is a fresh attempt (new transport,
//! new session) and runs only on evidence (`policy::fallback`), never on auth, permission,
//! throttling, DNS/TLS, config or cancellation. A pinned revision is the only step tried.
//! The caller bounds the whole walk with one deadline (`options` sets each step's limit).

use super::{Session, SessionOptions};
use crate::error::{Error, Stage};
use crate::policy::fallback::{both_failed, is_older_protocol_signal};
use crate::protocol::generation::{ProtocolChoice, STATELESS};
use crate::transport::Connection;

/// Opens a fresh connection.
pub type Open<'a> = &'a (dyn Fn() -> Result<Connection, Error> + Send + Sync);

/// One way of speaking to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// The stateless revision: `server/discover`, `_meta` on every request.
    Stateless,
    /// `initialize` on the configured transport (Streamable HTTP or stdio).
    Initialize,
    /// `initialize` on the legacy HTTP+SSE transport.
    LegacySse,
}

/// How a server may be reached.
pub struct Ladder<'a> {
    pub choice: ProtocolChoice,
    /// The configured transport (Streamable HTTP, or stdio, or legacy HTTP+SSE when the
    /// config forces it).
    pub open: Open<'a>,
    /// The legacy HTTP+SSE transport, when `auto` may fall back to it.
    pub legacy: Option<Open<'a>>,
    /// Whether `auto` asks in the stateless revision first (Streamable HTTP).
    pub stateless_first: bool,
}

impl Ladder<'_> {
    /// The steps, in order.
    pub fn rungs(&self) -> Vec<Rung> {
        if self.choice.is_stateless() {
            return vec![Rung::Stateless];
        }
        let mut rungs = Vec::with_capacity(3);
        if self.choice == ProtocolChoice::Auto && self.stateless_first {
            rungs.push(Rung::Stateless);
        }
        rungs.push(Rung::Initialize);
        if self.choice == ProtocolChoice::Auto && self.legacy.is_some() {
            rungs.push(Rung::LegacySse);
        }
        rungs
    }
}

/// Walks the ladder from `start` (a step that worked before, if the caller remembers one;
/// else the first) and returns the session and the step that made it. `options` gives
/// the options for a step (its request timeout cut to what the deadline leaves) and is
/// told the stage starting; `cut` finishes a step's error (the deadline's wording).
pub async fn connect(
    ladder: &Ladder<'_>,
    start: Option<Rung>,
    mut options: impl FnMut(Stage) -> Result<SessionOptions, Error>,
    cut: impl Fn(Error, Stage) -> Error,
) -> Result<(Session, Rung), Error> {
    let rungs = ladder.rungs();
    let from = start
        .and_then(|s| rungs.iter().position(|r| *r == s))
        .unwrap_or(0);
    let mut refused: Option<(Rung, Error)> = None;
    for (i, rung) in rungs.iter().copied().enumerate().skip(from) {
        let more = i + 1 < rungs.len();
        let error = match rung {
            Rung::Stateless => {
                let conn = (ladder.open)()?;
                let opts = options(Stage::Discover)?;
                match Session::connect_modern(conn, opts).await {
                    Ok(s) => return Ok((s, rung)),
                    Err(r) if r.legacy && more => {
                        tracing::info!(error = %r.error, "the server answered like one of the initialize era; trying initialize");
                        refused = Some((rung, cut(r.error, Stage::Discover)));
                        continue;
                    }
                    Err(r) if r.legacy && ladder.choice.is_stateless() => {
                        pinned_elsewhere(cut(r.error, Stage::Discover))
                    }
                    Err(r) => cut(r.error, Stage::Discover),
                }
            }
            Rung::Initialize | Rung::LegacySse => {
                let conn = match rung {
                    Rung::LegacySse => (ladder.legacy.expect("a legacy rung has an opener"))()?,
                    _ => (ladder.open)()?,
                };
                let opts = options(Stage::Initialize)?;
                match Session::connect(conn, opts).await {
                    Ok(s) => return Ok((s, rung)),
                    Err(e) if rung == Rung::Initialize && more && is_older_protocol_signal(&e) => {
                        tracing::info!(error = %e, "Streamable HTTP refused; trying the legacy HTTP+SSE transport (2024-11-05)");
                        let e = cut(e, Stage::Initialize);
                        refused = Some(match refused.take() {
                            Some((_, first)) => (rung, after_stateless(&first, e)),
                            None => (rung, e),
                        });
                        continue;
                    }
                    Err(e) => cut(e, Stage::Initialize),
                }
            }
        };
        return Err(match refused {
            Some((Rung::Stateless, first)) => after_stateless(&first, error),
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
        "{}; `initialize` was tried because the stateless revision ({STATELESS}) was answered \
         the way older servers answer ({})",
        error.message(),
        refused.message()
    );
    error.restated(message)
}

/// A pin to the stateless revision met a server of the `initialize` era.
fn pinned_elsewhere(error: Error) -> Error {
    let message = format!(
        "{}; this server is pinned to {STATELESS} (`protocol` in the config) and a pin is never \
         changed silently: set `protocol` to \"auto\" to let Lifeline use what the server speaks",
        error.message()
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

    /// A connector to a server of one era, counting the connections it opens.
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

    fn initialize_era() -> Script {
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
        start: Option<Rung>,
    ) -> (Result<Rung, Error>, usize) {
        let opened = Arc::new(AtomicUsize::new(0));
        let open = connector(script, opened.clone());
        let ladder = Ladder {
            choice,
            open: &open,
            legacy: None,
            stateless_first: true,
        };
        let r = connect(&ladder, start, |_| Ok(SessionOptions::default()), |e, _| e)
            .await
            .map(|(_, rung)| rung);
        (r, opened.load(Ordering::SeqCst))
    }

    #[tokio::test(start_paused = true)]
    async fn auto_asks_stateless_first_and_falls_back_on_a_fresh_connection() {
        let (r, opened) = walk(ProtocolChoice::Auto, stateless(), None).await;
        assert_eq!((r.unwrap(), opened), (Rung::Stateless, 1));
        let (r, opened) = walk(ProtocolChoice::Auto, initialize_era(), None).await;
        assert_eq!(r.unwrap(), Rung::Initialize);
        assert_eq!(opened, 2, "the fallback is a fresh connection");
        // A remembered era starts there.
        let (r, opened) = walk(
            ProtocolChoice::Auto,
            initialize_era(),
            Some(Rung::Initialize),
        )
        .await;
        assert_eq!((r.unwrap(), opened), (Rung::Initialize, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_pin_is_the_only_step_and_says_what_to_change() {
        let (r, opened) = walk(ProtocolChoice::Pinned(STATELESS), initialize_era(), None).await;
        let e = r.unwrap_err();
        assert_eq!(opened, 1);
        assert!(
            e.message().contains("pinned to 2026-07-28") && e.message().contains("\"auto\""),
            "{e}"
        );
        let (r, opened) = walk(ProtocolChoice::Pinned("2025-11-25"), stateless(), None).await;
        assert_eq!(opened, 1);
        assert!(
            r.is_err(),
            "a 2025-11-25 pin never asks in the stateless revision"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn no_fallback_without_evidence_and_both_failures_are_told() {
        // A modern server's refusal: it is modern, so initialize is not tried.
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
        // An initialize-era answer, then a failing initialize: the error says both.
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
