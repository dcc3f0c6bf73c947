//! Everything that prepares data to leave the process: redaction first.

pub mod redact;

#[cfg(test)]
mod error_canaries;
