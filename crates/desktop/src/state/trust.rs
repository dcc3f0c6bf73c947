//! The detail panel's review of what the tool pins hold (docs/trust.md): the review of one
//! server (`pins::report`, the same `lifeline tools review` prints) and the decisions on it
//! (`pins::book::Book::decide`, the same `lifeline tools approve|reject` makes), on the
//! app's one book. A decision moves the book: each supervisor judges its list again, the
//! `tools` and `tool_approved`/`tool_rejected` events follow, and the hosts are told.

use super::{AppState, running, supervisor};
use crate::error::ErrorView;
use lifeline_core::pins::book::{self, Decision, Which};
use lifeline_core::pins::report::ServerReview;

/// What the detail panel decides: `approve` or `reject`.
pub fn decision(word: &str) -> Result<Decision, ErrorView> {
    match word {
        "approve" => Ok(Decision::Approve),
        "reject" => Ok(Decision::Reject),
        other => Err(ErrorView::new(
            "invalid_args",
            format!("a decision is `approve` or `reject`, not `{other}`"),
        )),
    }
}

impl AppState {
    /// The review of `server`: its held changes, its tools first seen and not yet looked at.
    /// Empty for a server under `"trust": "off"`.
    pub async fn tool_review(&self, server: &str) -> Result<ServerReview, ErrorView> {
        self.known(server).await?;
        let name = server.to_owned();
        tokio::task::spawn_blocking(move || match book::shared() {
            Some(book) => book.review(&name),
            None => ServerReview {
                server: name,
                held: Vec::new(),
                first_seen: Vec::new(),
            },
        })
        .await
        .map_err(|e| ErrorView::new("internal", format!("the review failed: {e}")))
    }

    /// Approves or rejects `tools` of `server` (every one waiting, without), in one write
    /// that every Lifeline process takes in; the tools decided.
    pub async fn tool_decide(
        &self,
        server: &str,
        decision: Decision,
        tools: Option<Vec<String>>,
    ) -> Result<Vec<String>, ErrorView> {
        self.known(server).await?;
        let Some(book) = book::shared() else {
            return Err(ErrorView::new(
                "trust_off",
                format!("`{server}` has no tool pins to decide on"),
            ));
        };
        let which = tools.map_or(Which::All, Which::Tools);
        let name = server.to_owned();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        tokio::task::spawn_blocking(move || book.decide(&name, decision, &which, now))
            .await
            .map_err(|e| ErrorView::new("internal", format!("the decision failed: {e}")))?
            .map_err(|e| ErrorView::new("review", e.to_string()))
    }

    /// Refuses a server the fleet does not run.
    async fn known(&self, server: &str) -> Result<(), ErrorView> {
        let fleet = self.fleet.read().await;
        supervisor(running(&fleet)?, server).map(|_| ())
    }
}
