//! The upstream's notifications on their way to the host: logging messages
//! (`notifications/message`), resource changes (`notifications/resources/updated`,
//! `notifications/resources/list_changed`) and `notifications/prompts/list_changed`, from
//! whichever generation is live. Progress goes with its request (`forward.rs`) and
//! `tools/list_changed` is the gateway's own (`watch_tools`). Every string is scrubbed of
//! the server's configured secrets on the way.

use super::names::uris;
use super::{Shared, Upstream, View};
use crate::protocol::Message;
use crate::session::ServerNotification;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// The upstream notifications a host is sent as they are.
const PASSED: &[&str] = &[
    "notifications/resources/updated",
    "notifications/resources/list_changed",
    "notifications/prompts/list_changed",
];

/// Passes the server's notifications to the host until its supervisor ends.
pub(super) async fn pass_on(shared: Arc<Shared>, up: Arc<Upstream>) {
    let mut rx = up.supervisor.notifications();
    loop {
        let note = match rx.recv().await {
            Ok(note) => note,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!("the host missed {n} of the server's notifications");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let redactor = &up.options.redactor;
        let (method, params) = match note {
            ServerNotification::Log {
                level,
                logger,
                data,
            } => {
                let mut p = json!({ "level": level, "data": redactor.scrub_value(&data) });
                if let Some(logger) = logger {
                    p["logger"] = Value::from(redactor.scrub(&logger));
                }
                ("notifications/message".to_owned(), Some(p))
            }
            ServerNotification::Other { method, params } if PASSED.contains(&method.as_str()) => {
                let mut params = params.map(|p| redactor.scrub_value(&p));
                // On the aggregated endpoint a resource is known by its host URI.
                if let (View::Aggregate(_), Some(uri)) =
                    (&shared.view, params.as_mut().and_then(|p| p.get_mut("uri")))
                    && let Some(own) = uri.as_str()
                {
                    *uri = Value::from(uris::to_host(up.supervisor.name(), own));
                }
                (method, params)
            }
            _ => continue,
        };
        shared.send(Message::notification(&method, params));
    }
}
