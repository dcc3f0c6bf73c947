//! Which protocol generation a server is spoken to in: `auto` (negotiate, and over HTTP
//! fall back to the legacy HTTP+SSE transport on the spec's signals) or one pinned
//! revision, which is offered and required — a pin is never silently changed.

use super::mcp::SUPPORTED_PROTOCOL_VERSIONS;

/// The revision of the legacy HTTP+SSE transport.
pub const LEGACY_SSE: &str = "2024-11-05";

/// The stateless revision: named so the config can say it is not spoken yet.
pub const STATELESS: &str = "2026-07-28";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolChoice {
    /// Negotiate; over HTTP, try Streamable HTTP first and fall back to legacy HTTP+SSE.
    #[default]
    Auto,
    /// Exactly this revision. `2024-11-05` over HTTP means the legacy transport.
    Pinned(&'static str),
}

impl ProtocolChoice {
    /// Parses the config's `protocol` value; the error says what is accepted.
    pub fn parse(value: &str) -> Result<ProtocolChoice, String> {
        if value == "auto" {
            return Ok(ProtocolChoice::Auto);
        }
        if let Some(v) = SUPPORTED_PROTOCOL_VERSIONS.iter().find(|v| **v == value) {
            return Ok(ProtocolChoice::Pinned(v));
        }
        let accepted = format!("auto, {}", SUPPORTED_PROTOCOL_VERSIONS.join(", "));
        if value == STATELESS {
            return Err(format!(
                "{STATELESS} (stateless MCP) is not spoken by this version of Lifeline yet; use \
                 one of {accepted}"
            ));
        }
        Err(format!("must be one of {accepted}"))
    }

    /// The revision to offer in `initialize`, when pinned.
    pub fn pinned(self) -> Option<&'static str> {
        match self {
            ProtocolChoice::Auto => None,
            ProtocolChoice::Pinned(v) => Some(v),
        }
    }

    pub fn as_str(self) -> &'static str {
        self.pinned().unwrap_or("auto")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_auto_and_the_known_revisions_and_says_what_else_to_write() {
        assert_eq!(ProtocolChoice::parse("auto"), Ok(ProtocolChoice::Auto));
        for v in SUPPORTED_PROTOCOL_VERSIONS {
            assert_eq!(ProtocolChoice::parse(v).unwrap().pinned(), Some(v));
        }
        let e = ProtocolChoice::parse("2026-07-28").unwrap_err();
        assert!(
            e.contains("not spoken") && e.contains("auto, 2025-11-25"),
            "{e}"
        );
        let e = ProtocolChoice::parse("latest").unwrap_err();
        assert!(e.starts_with("must be one of auto, "), "{e}");
    }
}
