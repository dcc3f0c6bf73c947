//! Everything that prepares data to leave the process: redaction first, then the
//! diagnostic bundle built from redacted parts.

pub mod bundle;
pub mod bundle_config;
mod bundle_write;
pub mod redact;

#[cfg(test)]
mod bundle_tests;
#[cfg(test)]
mod error_canaries;
