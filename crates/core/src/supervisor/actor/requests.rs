//! The request lane: any MCP request other than `tools/call` (`resources/*`, `prompts/*`,
//! `completion/complete`, `logging/setLevel`, …) sent on the live session while the server
//! is ready, for the gateway that forwards a host's requests. Unlike a tool call it is not
//! admitted against the concurrency cap and makes no call event: these requests read or
//! set a preference, and the host paces them. Not ready: refused at once with the state
//! (the gateway waits for ready itself before it sends). Never re-sent here; whether a
//! request is sent again after a lost generation is `policy::reissue`'s decision, taken by
//! the caller.

use super::handle::Supervisor;
use crate::error::{Error, ErrorKind, Phase};
use crate::events::Generation;
use crate::protocol::mcp::{InitializeResult, Progress};
use crate::session::RequestOptions;
use serde_json::Value;
use tokio::sync::mpsc;

/// A request on the live generation, and which generation that was.
pub struct Sent {
    pub generation: Generation,
    pub result: Result<Value, Error>,
}

impl Supervisor {
    /// The live session's `initialize` result (capabilities, serverInfo, instructions) and
    /// its generation while the server is ready; `None` otherwise.
    pub fn server_info(&self) -> Option<(Generation, InitializeResult)> {
        let gate = self.lane.live()?;
        gate.session
            .server()
            .cloned()
            .map(|info| (gate.generation, info))
    }

    /// Sends `method` on the live session, with the server's request timeout; `progress`
    /// receives its `notifications/progress`. Dropping the future cancels the request (the
    /// server is sent `notifications/cancelled`). Fails at once when the server is not
    /// ready (`ErrorKind::Transport`, nothing sent).
    pub fn send_request(
        &self,
        method: &str,
        params: Option<Value>,
        progress: Option<mpsc::UnboundedSender<Progress>>,
    ) -> impl Future<Output = Sent> + Send + 'static {
        let gate = self.lane.live();
        let timeout = self.lane.timeout();
        let method = method.to_owned();
        let name = self.name().to_owned();
        async move {
            let Some(gate) = gate else {
                return Sent {
                    generation: Generation(0),
                    result: Err(Error::new(
                        ErrorKind::Transport,
                        format!("`{name}` is not ready; {method} was not sent"),
                    )
                    .with(|c| c.phase = Some(Phase::Call))),
                };
            };
            let opts = RequestOptions {
                timeout: Some(timeout),
                progress,
            };
            let result = gate.session.request(&method, params, opts).await;
            Sent {
                generation: gate.generation,
                result,
            }
        }
    }

    /// Sends a notification on the live session (the host's `roots/list_changed`);
    /// dropped when the server is not ready (the next generation is initialized afresh).
    pub async fn send_notification(&self, method: &str, params: Option<Value>) {
        if let Some(gate) = self.lane.live()
            && let Err(e) = gate.session.notify(method, params).await
        {
            tracing::debug!(error = %e, method, "could not pass a notification on");
        }
    }
}
