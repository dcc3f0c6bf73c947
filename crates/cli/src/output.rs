//! What the CLI prints and how it exits. With `--json` the last line on stdout is always
//! `{"ok":true,"result":…}` or `{"ok":false,"error":{…}}`; every line is scrubbed of the
//! secrets the command was given.

use lifeline_core::redact::Redactor;
use lifeline_core::{Error, ErrorKind};
use serde_json::{Value, json};
use std::io::Write;

pub const EXIT_OK: i32 = 0;
pub const EXIT_TOOL_ERROR: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_AUTH: i32 = 3;
pub const EXIT_RATE_LIMITED: i32 = 4;
pub const EXIT_UNAVAILABLE: i32 = 5;
pub const EXIT_INTERRUPTED: i32 = 130;

pub fn exit_code(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::Config | ErrorKind::Spawn => EXIT_USAGE,
        ErrorKind::Auth | ErrorKind::SignIn | ErrorKind::Permission => EXIT_AUTH,
        ErrorKind::RateLimited => EXIT_RATE_LIMITED,
        _ => EXIT_UNAVAILABLE,
    }
}

pub struct Out {
    pub json: bool,
    pub redactor: Redactor,
}

impl Out {
    /// A line on stdout. A reader that went away (`lifeline tools … | head`) is not an
    /// error worth a panic: the rest is dropped.
    pub fn line(&self, text: &str) {
        let _ = writeln!(std::io::stdout().lock(), "{}", self.redactor.scrub(text));
    }

    pub fn json_line(&self, v: &Value) {
        self.line(&v.to_string());
    }

    pub fn note(&self, text: &str) {
        let _ = writeln!(std::io::stderr().lock(), "{}", self.redactor.scrub(text));
    }

    /// Reports an error and returns the exit code for it.
    pub fn error(&self, e: &Error) -> i32 {
        if self.json {
            self.json_line(&json!({ "ok": false, "error": error_json(e) }));
        } else {
            self.note(&format!("error: {e}"));
            let details = details(e);
            if !details.is_empty() {
                self.note(&format!("  ({details})"));
            }
        }
        exit_code(e.kind())
    }
}

pub fn error_json(e: &Error) -> Value {
    let c = e.context();
    json!({
        "kind": e.kind().as_str(),
        "phase": c.phase.map(|p| p.as_str()),
        "stage": c.stage.map(|s| s.as_str()),
        "status": c.status,
        "reason": c.reason,
        "retry_after_ms": c.retry_after.map(|d| d.as_millis() as u64),
        "method": c.method,
        "url_path": c.url_path,
        "io": c.io.map(|i| i.as_str()),
        "exit_code": match c.exit { Some(lifeline_core::error::ExitStatus::Code(n)) => Some(n), _ => None },
        "signal": match c.exit { Some(lifeline_core::error::ExitStatus::Signal(n)) => Some(n), _ => None },
        "rpc_code": c.rpc_code,
        "message": e.message(),
    })
}

/// "kind auth · HTTP 401 Unauthorized · POST /mcp · retry after 2 s"
fn details(e: &Error) -> String {
    let c = e.context();
    let mut parts = vec![format!("kind {}", e.kind())];
    if let Some(s) = c.stage {
        parts.push(format!("stage {}", s.as_str()));
    }
    if let Some(status) = c.status {
        parts.push(
            format!("HTTP {status} {}", c.reason.as_deref().unwrap_or(""))
                .trim_end()
                .to_owned(),
        );
    }
    if let (Some(m), Some(p)) = (&c.method, &c.url_path) {
        parts.push(format!("{m} {p}"));
    }
    if let Some(d) = c.retry_after {
        parts.push(format!("retry after {}", lifeline_core::fmt_duration(d)));
    }
    parts.join(" · ")
}

/// The text of a tool result's content, one item per line; non-text items as JSON.
pub fn content_text(result: &Value) -> String {
    let Some(items) = result.get("content").and_then(Value::as_array) else {
        return result.to_string();
    };
    items
        .iter()
        .map(|item| match item.get("text").and_then(Value::as_str) {
            Some(t) if item["type"] == "text" => t.to_owned(),
            _ => item.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_contract() {
        assert_eq!(exit_code(ErrorKind::Auth), 3);
        assert_eq!(exit_code(ErrorKind::Permission), 3);
        assert_eq!(exit_code(ErrorKind::RateLimited), 4);
        assert_eq!(exit_code(ErrorKind::Config), 2);
        for k in [
            ErrorKind::Transport,
            ErrorKind::Timeout,
            ErrorKind::Server,
            ErrorKind::Protocol,
            ErrorKind::SessionExpired,
            ErrorKind::StreamLost,
            ErrorKind::ProcessExit,
        ] {
            assert_eq!(exit_code(k), 5, "{k}");
        }
    }

    #[test]
    fn content_text_joins_text_items() {
        let r = json!({"content":[{"type":"text","text":"a"},{"type":"image","data":"x"}]});
        assert_eq!(content_text(&r), "a\n{\"type\":\"image\",\"data\":\"x\"}");
    }
}
