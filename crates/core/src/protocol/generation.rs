//! Which protocol generation a server is spoken to in: `auto` (over HTTP: the stateless
//! 2026-07-28 revision first, then `initialize`, then the legacy HTTP+SSE transport, each
//! step only on the spec's signals) or one pinned revision, which is offered and required
//! — a pin is never silently changed. The revisions' strings are defined here, once; `mcp`
//! and `modern` re-export the ones they speak.

/// The revision of the legacy HTTP+SSE transport.
pub const LEGACY_SSE: &str = "2024-11-05";

/// The stateless revision: no `initialize`, `server/discover` and per-request `_meta`.
pub const STATELESS: &str = "2026-07-28";

/// The revision we offer in `initialize`.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every revision we speak through `initialize`, newest first. A server may answer `initialize` with any of
/// these; anything else is refused with a clear error. 2024-11-05 is what legacy HTTP+SSE
/// servers answer (and stdio servers of that age); its messages are a subset of ours.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolChoice {
    /// Negotiate; over HTTP, try the stateless revision, then `initialize`, then legacy
    /// HTTP+SSE.
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
        if value == STATELESS {
            return Ok(ProtocolChoice::Pinned(STATELESS));
        }
        if let Some(v) = SUPPORTED_PROTOCOL_VERSIONS.iter().find(|v| **v == value) {
            return Ok(ProtocolChoice::Pinned(v));
        }
        Err(format!(
            "must be one of auto, {STATELESS}, {}",
            SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        ))
    }

    /// True for a pin to the stateless revision (no `initialize` at all).
    pub fn is_stateless(self) -> bool {
        self == ProtocolChoice::Pinned(STATELESS)
    }

    /// The revision to offer in `initialize` (or `_meta`), when pinned.
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
            assert!(!ProtocolChoice::parse(v).unwrap().is_stateless());
        }
        let modern = ProtocolChoice::parse("2026-07-28").unwrap();
        assert!(modern.is_stateless());
        assert_eq!(modern.as_str(), "2026-07-28");
        let e = ProtocolChoice::parse("latest").unwrap_err();
        assert!(
            e.starts_with("must be one of auto, 2026-07-28, 2025-11-25"),
            "{e}"
        );
    }
}
