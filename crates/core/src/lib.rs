//! lifeline-core: MCP client connections that never hang, never lose an answer silently, and
//! come back on their own. No Tauri, no UI, no CLI dependencies: any Rust program can embed it.
//!
//! - [`protocol`]: the wire format (JSON-RPC 2.0, MCP's messages and revisions); pure data.
//! - [`transport`]: moves messages (stdio child processes, Streamable HTTP, legacy HTTP+SSE).
//! - [`session`]: one live connection (handshake, requests, timeouts, cancellation).
//! - [`supervisor`]: one reconnect supervisor per configured server, and the fleet of them.
//! - [`policy`]: the pure decisions (backoff, classification, quarantine, deadlines, fallback).
//! - [`config`]: the config file (parse, validate, expand, write) and the importers.
//! - [`events`]: the lifecycle events supervisors publish.
//! - [`gateway`]: the MCP server a host (an AI client) talks to, backed by a supervisor.
//! - [`history`]: the on-disk record of events and calls (SQLite).
//! - [`redact`]: secrets out of every string that leaves (by value and by shape).
//! - [`secrets`]: named secrets in the OS keychain (or a private file where there is none).
//! - [`diagnostics`]: the diagnostic bundle.
//! - [`error`]: the one error type, classified by kind, phase and stage.
//! - [`gloss`]: plain language beside a failure (exit codes, signals, kinds of failure).
//! - [`lines`]: newline-delimited framing with a cap (what others send is never unbounded).
//! - [`local_socket`]: the app's endpoint for its own processes (Unix socket, named pipe).
//! - [`login_path`]: the login shell's PATH, for servers started from a GUI.
//! - [`nofile`]: the open-files limit of a serving process (raised; servers get it back).
//! - [`private`]: files and directories only their owner may read (0600, 0700).
//! - [`system`]: the machine's sleep, wake and network changes, as one input (issue 29).
//!
//! ARCHITECTURE.md at the repository root is the map.

pub mod auth;
pub mod config;
pub mod diagnostics;
pub mod error;
pub mod events;
pub mod gateway;
pub mod gloss;
pub mod history;
pub mod lines;
pub mod local_socket;
pub mod login_path;
pub mod nofile;
pub mod pins;
pub mod policy;
pub mod private;
pub mod protocol;
pub mod redact;
pub mod secrets;
pub mod session;
pub mod supervisor;
pub mod system;
#[cfg(test)]
pub(crate) mod test_support;
pub(crate) mod tls;
pub mod transport;

pub use error::{Error, ErrorKind, Phase, Result, Stage};
pub use session::{Session, SessionOptions};

use std::time::Duration;

/// A duration the way a person reads it: "250 ms", "1.5 s", "5 min", "1 d".
pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        let s = ms as f64 / 1000.0;
        if ms.is_multiple_of(1000) {
            format!("{} s", ms / 1000)
        } else {
            format!("{s:.1} s")
        }
    } else if ms < 3_600_000 {
        format!("{} min", ms / 60_000)
    } else if ms < 86_400_000 {
        format!("{} h", ms / 3_600_000)
    } else {
        format!("{} d", ms / 86_400_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        let check = |ms: u64, s: &str| assert_eq!(fmt_duration(Duration::from_millis(ms)), s);
        check(0, "0 ms");
        check(250, "250 ms");
        check(1000, "1 s");
        check(1500, "1.5 s");
        check(300_000, "5 min");
        check(7_200_000, "2 h");
        check(86_400_000, "1 d");
    }
}
