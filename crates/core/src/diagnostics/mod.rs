//! Everything that prepares data to leave the process: redaction first.

pub mod redact;
