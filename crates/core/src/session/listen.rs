//! The stateless revision's replacement for the GET stream: a `subscriptions/listen`
//! request whose response stream carries change notifications, opened again when it ends
//! and given up when the server refuses it. How long to wait before opening it again is
//! `policy::listen`'s decision; this task only sleeps it.

use super::Shared;
use super::engine::Registered;
use crate::error::{Error, ErrorKind};
use crate::policy::{ListenRetry, SeededRng};
use crate::protocol::Message;
use crate::protocol::stateless;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::time::Instant;

/// True when the server offers change notifications worth a `subscriptions/listen` stream.
pub(super) fn wants_listen(capabilities: &Value) -> bool {
    ["tools", "prompts", "resources"]
        .iter()
        .any(|k| capabilities[k]["listChanged"].as_bool() == Some(true))
}

/// Keeps the listen stream open for the session's life (the session aborts this task when
/// it closes). The stream ending, breaking or timing out is retried after the policy's
/// wait; any other answer (the server refused it) turns change notifications off for this
/// connection.
pub(super) async fn listen(shared: Arc<Shared>) {
    let caps = shared
        .server
        .get()
        .map(|s| s.capabilities.clone())
        .unwrap_or_default();
    let filter = json!({
        "toolsListChanged": caps["tools"]["listChanged"].as_bool() == Some(true),
        "promptsListChanged": caps["prompts"]["listChanged"].as_bool() == Some(true),
        "resourcesListChanged": caps["resources"]["listChanged"].as_bool() == Some(true),
    });
    let Some(meta) = shared.stateless.as_ref().map(|m| m.meta.clone()) else {
        return;
    };
    let mut retry = ListenRetry::new();
    let mut rng = SeededRng::new(shared.options.jitter_seed);
    loop {
        if shared.closed.lock().expect("lock").is_some() {
            return;
        }
        // No timeout: the stream is meant to stay open. Its progress is not read.
        let Registered { id, answer, .. } = shared.register("subscriptions/listen");
        let params = stateless::with_meta(Some(json!({ "notifications": filter })), &meta);
        let opened = Instant::now();
        let outcome = match shared
            .transport
            .send(&Message::request(
                id.clone(),
                "subscriptions/listen",
                Some(params),
            ))
            .await
        {
            Ok(()) => answer
                .await
                .unwrap_or_else(|_| Err(Error::cancelled("session ended"))),
            Err(e) => {
                shared.take_pending(&id);
                Err(e)
            }
        };
        match outcome {
            Ok(_) => tracing::debug!(
                "the server closed the subscriptions/listen stream; opening it again"
            ),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::StreamLost | ErrorKind::Timeout | ErrorKind::Transport
                ) =>
            {
                tracing::debug!(error = %e, "the subscriptions/listen stream broke; opening it again");
            }
            Err(e) => {
                tracing::warn!(error = %e, "the server refused subscriptions/listen; change notifications are off for this connection");
                return;
            }
        }
        tokio::time::sleep(retry.after_end(opened.elapsed(), &mut rng)).await;
    }
}

#[cfg(test)]
#[path = "listen_tests.rs"]
mod tests;
