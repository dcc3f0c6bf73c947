//! How to start a stdio server: the command, its arguments and environment, and the limits of
//! its connection. Shared by `spawn` (which starts it), `resolve` (which shows what the
//! command resolves to) and `stdio` (which speaks to it).

use crate::redact::Redactor;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct StdioConfig {
    pub command: String,
    pub args: Vec<String>,
    /// Added to the environment the server starts with. Values are secrets: never shown.
    pub env: Vec<(String, String)>,
    /// Start from Lifeline's whole environment instead of the variables the MCP SDKs pass
    /// on (`child_env`): the config's `inheritEnv`.
    pub inherit_env: bool,
    pub cwd: Option<PathBuf>,
    /// A line on stdout longer than this is a protocol error.
    pub max_line_bytes: usize,
    /// How much of stderr to keep, from the end.
    pub stderr_tail_bytes: usize,
    /// Each of the two waits in the shutdown sequence.
    pub shutdown_grace: Duration,
}

impl StdioConfig {
    pub fn new(command: impl Into<String>, args: Vec<String>) -> Self {
        StdioConfig {
            command: command.into(),
            args,
            env: Vec::new(),
            inherit_env: false,
            cwd: None,
            max_line_bytes: 16 * 1024 * 1024,
            stderr_tail_bytes: 64 * 1024,
            shutdown_grace: Duration::from_secs(2),
        }
    }

    /// Scrubs the values of the server's `env` (secrets) from what it writes.
    pub(super) fn redactor(&self) -> Redactor {
        Redactor::new(crate::redact::env_secrets(
            self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ))
    }
}
