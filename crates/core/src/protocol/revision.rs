//! The protocol revisions Lifeline speaks, as one type (`Revision`) whose strings are
//! defined here once, and the config's `protocol` choice: `auto` (over HTTP: the stateless
//! revision 2026-07-28 first, then `initialize`, then the legacy HTTP+SSE transport, each
//! step of that fallback order only on the spec's signals; `session::negotiate`) or one
//! pinned revision, which is offered and required — a pin is never silently changed.
//!
//! Words: a *revision* is a protocol revision; the *fallback* order is the order `auto`
//! tries them in; a *generation* is the supervisor's word for one incarnation of a
//! connection, never a revision.

use std::fmt;

/// One protocol revision, named by its date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Revision {
    /// The stateless revision: no `initialize`; `server/discover` and per-request `_meta`.
    V2026_07_28,
    /// The newest revision with `initialize`: the one we offer.
    V2025_11_25,
    V2025_06_18,
    V2025_03_26,
    /// What legacy HTTP+SSE servers answer (and stdio servers of that age); its messages
    /// are a subset of ours.
    V2024_11_05,
}

impl Revision {
    /// The stateless revision.
    pub const STATELESS: Revision = Revision::V2026_07_28;

    /// The revision we offer in `initialize`.
    pub const LATEST_INITIALIZE: Revision = Revision::V2025_11_25;

    /// The revision of the legacy HTTP+SSE transport.
    pub const LEGACY_SSE: Revision = Revision::V2024_11_05;

    /// Every revision we speak through `initialize`, newest first. A server may answer
    /// `initialize` with any of these; anything else is refused with a clear error.
    pub const INITIALIZE: [Revision; 4] = [
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
        Revision::V2024_11_05,
    ];

    /// Every revision we speak, newest first.
    pub const ALL: [Revision; 5] = [
        Revision::V2026_07_28,
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
        Revision::V2024_11_05,
    ];

    /// The revision's string, as it goes on the wire and in the config.
    pub const fn as_str(self) -> &'static str {
        match self {
            Revision::V2026_07_28 => "2026-07-28",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2024_11_05 => "2024-11-05",
        }
    }

    /// The revision a string names, if we speak it.
    pub fn parse(value: &str) -> Option<Revision> {
        Revision::ALL.into_iter().find(|r| r.as_str() == value)
    }

    /// The revision a string names, if we speak it through `initialize`.
    pub fn parse_initialize(value: &str) -> Option<Revision> {
        Revision::INITIALIZE
            .into_iter()
            .find(|r| r.as_str() == value)
    }

    /// True for the stateless revision (no `initialize` at all).
    pub fn is_stateless(self) -> bool {
        self == Revision::STATELESS
    }

    /// `revisions` as a list for a message: "2025-11-25, 2025-06-18".
    pub fn list(revisions: &[Revision]) -> String {
        let strings: Vec<&str> = revisions.iter().map(|r| r.as_str()).collect();
        strings.join(", ")
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolChoice {
    /// Negotiate; over HTTP, try the stateless revision, then `initialize`, then legacy
    /// HTTP+SSE.
    #[default]
    Auto,
    /// Exactly this revision. `2024-11-05` over HTTP means the legacy transport.
    Pinned(Revision),
}

impl ProtocolChoice {
    /// Parses the config's `protocol` value; the error says what is accepted.
    pub fn parse(value: &str) -> Result<ProtocolChoice, String> {
        if value == "auto" {
            return Ok(ProtocolChoice::Auto);
        }
        Revision::parse(value)
            .map(ProtocolChoice::Pinned)
            .ok_or_else(|| format!("must be one of auto, {}", Revision::list(&Revision::ALL)))
    }

    /// True for a pin to the stateless revision (no `initialize` at all).
    pub fn is_stateless(self) -> bool {
        self.pinned().is_some_and(Revision::is_stateless)
    }

    /// The revision to offer in `initialize` (or `_meta`), when pinned.
    pub fn pinned(self) -> Option<Revision> {
        match self {
            ProtocolChoice::Auto => None,
            ProtocolChoice::Pinned(r) => Some(r),
        }
    }

    pub fn as_str(self) -> &'static str {
        self.pinned().map_or("auto", Revision::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_revision_parses_back_from_its_string() {
        for r in Revision::ALL {
            assert_eq!(Revision::parse(r.as_str()), Some(r));
            assert_eq!(r.to_string(), r.as_str());
            assert_eq!(
                Revision::parse_initialize(r.as_str()).is_some(),
                !r.is_stateless()
            );
        }
        assert_eq!(Revision::parse("2025-11-26"), None);
        assert_eq!(Revision::parse_initialize("2026-07-28"), None);
    }

    #[test]
    fn parses_auto_and_the_known_revisions_and_says_what_else_to_write() {
        assert_eq!(ProtocolChoice::parse("auto"), Ok(ProtocolChoice::Auto));
        for r in Revision::INITIALIZE {
            assert_eq!(ProtocolChoice::parse(r.as_str()).unwrap().pinned(), Some(r));
            assert!(!ProtocolChoice::parse(r.as_str()).unwrap().is_stateless());
        }
        let stateless = ProtocolChoice::parse("2026-07-28").unwrap();
        assert!(stateless.is_stateless());
        assert_eq!(stateless.as_str(), "2026-07-28");
        assert_eq!(ProtocolChoice::Auto.as_str(), "auto");
        let e = ProtocolChoice::parse("latest").unwrap_err();
        assert_eq!(
            e,
            "must be one of auto, 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05"
        );
    }
}
