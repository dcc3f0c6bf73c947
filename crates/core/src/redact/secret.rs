//! `Secret`: a value that must never be shown (a configured env or header value, an OAuth
//! token or client secret).
//! Its `Debug` and `Display` print `***`, so a config printed by mistake leaks nothing; the
//! real value is read only through `expose`, where a transport is built.

use super::MASK;
use std::fmt;

#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself. Call it only where the value is handed to a process or a peer.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_mask_the_value() {
        let s = Secret::new("CANARY-secret-1234");
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{:?}", vec![("K", s.clone())]), r#"[("K", ***)]"#);
        assert_eq!(s.expose(), "CANARY-secret-1234");
    }
}
