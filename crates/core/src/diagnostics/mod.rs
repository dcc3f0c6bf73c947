//! The diagnostic bundle: what a user attaches to a bug report, built from parts that
//! `crate::redact` has already cleaned.

pub mod bundle;
pub mod bundle_config;
pub mod bundle_write;

#[cfg(test)]
mod bundle_tests;
#[cfg(test)]
mod error_canaries;
