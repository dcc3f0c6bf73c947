//! `ErrorView`: what every command returns on failure, and what a notice says, as
//! `{kind, message}` (plus `retry_after_ms` when a wait is known). The UI branches on `kind`
//! and shows `message`; it never receives a bare string.

use lifeline_core::redact::Redactor;
use serde::Serialize;

/// Kinds that are not core `ErrorKind`s (those keep their spelling: `auth`, `rate_limited`,
/// `transport`, …).
pub const UNKNOWN_SERVER: &str = "unknown_server";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ErrorView {
    pub kind: String,
    pub message: String,
    /// When the server (or the supervisor) said how long to wait; whole milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub retry_after_ms: Option<u32>,
    /// For a rejected config edit: each problem at its field (`url`, `env.TOKEN`), so the
    /// editor can show it next to the input. Absent when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<FieldError>>", optional)]
    pub fields: Vec<FieldError>,
}

/// One problem with one field of a server entry (or of the file, with its full path).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl ErrorView {
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorView {
            kind: kind.into(),
            message: message.into(),
            retry_after_ms: None,
            fields: Vec::new(),
        }
    }

    /// A core error as the UI sees it; the message is scrubbed once more with the config's
    /// secrets (the core scrubs what it writes, a server's text may still carry one).
    pub fn from_core(e: &lifeline_core::Error, redactor: &Redactor) -> Self {
        ErrorView {
            kind: e.kind().as_str().to_owned(),
            message: redactor.scrub(e.message()),
            retry_after_ms: e
                .context()
                .retry_after
                .map(|d| u32::try_from(d.as_millis()).unwrap_or(u32::MAX)),
            fields: Vec::new(),
        }
    }

    /// A server name that is not in the fleet, naming the ones that are.
    pub fn unknown_server<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Self {
        let known: Vec<&str> = known.into_iter().collect();
        let known = if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        };
        ErrorView::new(
            UNKNOWN_SERVER,
            format!("there is no server named `{name}` (configured: {known})"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lifeline_core::ErrorKind;
    use serde_json::json;
    use std::time::Duration;

    fn check(e: ErrorView, expect: serde_json::Value) {
        assert_eq!(serde_json::to_value(&e).unwrap(), expect);
    }

    #[test]
    fn serializes_as_kind_and_message() {
        check(
            ErrorView::new("config", "bad"),
            json!({"kind": "config", "message": "bad"}),
        );
        check(
            ErrorView::unknown_server("gh", ["a", "b"]),
            json!({"kind": "unknown_server", "message": "there is no server named `gh` (configured: a, b)"}),
        );
        check(
            ErrorView::unknown_server("gh", []),
            json!({"kind": "unknown_server", "message": "there is no server named `gh` (configured: none)"}),
        );
    }

    #[test]
    fn core_errors_keep_their_kind_and_wait_and_lose_secrets() {
        let redactor = Redactor::new(["hunter2-canary"]);
        let e = lifeline_core::Error::new(ErrorKind::RateLimited, "slow down, hunter2-canary")
            .with(|c| c.retry_after = Some(Duration::from_millis(2500)));
        check(
            ErrorView::from_core(&e, &redactor),
            json!({"kind": "rate_limited", "message": "slow down, ***", "retry_after_ms": 2500}),
        );
        let e = lifeline_core::Error::new(ErrorKind::Auth, "401 Unauthorized");
        check(
            ErrorView::from_core(&e, &redactor),
            json!({"kind": "auth", "message": "401 Unauthorized"}),
        );
    }
}
