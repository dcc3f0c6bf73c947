//! What the detail panel shows beyond the snapshot: the full tool definitions, tool calls
//! with progress and cancellation, the stderr of the current and the previous generation,
//! the resolved command of a stdio server, and the server's config with every secret value
//! masked. A child module of `state`, so these are `AppState` methods like the others.

use super::{AppState, closing, running, supervisor};
use crate::error::ErrorView;
use lifeline_core::config::{Config, ServerConfig};
use lifeline_core::history::CallRecord;
use lifeline_core::protocol::mcp::{Progress, Tool};
use lifeline_core::redact::Redactor;
use lifeline_core::supervisor::{CallOptions, GenerationStderr};
use lifeline_core::transport::resolve::resolve;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};
use tokio::sync::{mpsc, oneshot};

/// A shell error kind: a second call with a `call_id` that is still in flight.
pub const CALL_ID_IN_USE: &str = "call_id_in_use";

/// The detail panel's part of the app state.
pub struct Detail {
    /// The config's servers, for the config view and the command resolution; replaced
    /// when the config changes.
    pub(super) servers: Mutex<Vec<ServerConfig>>,
    /// The cancel switch of every call in flight that the UI named with a `call_id`.
    calls: Mutex<HashMap<String, oneshot::Sender<()>>>,
}

impl Detail {
    pub fn new(config: &Config) -> Detail {
        Detail {
            servers: Mutex::new(config.servers.clone()),
            calls: Mutex::new(HashMap::new()),
        }
    }

    /// The config the fleet runs now (after an edit or a reload).
    pub fn set_config(&self, config: &Config) {
        *super::lock(&self.servers) = config.servers.clone();
    }
}

/// One `notifications/progress` of a call, as the UI gets it on the call's Channel.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct ProgressView {
    pub call_id: Option<String>,
    pub progress: f64,
    pub total: Option<f64>,
    /// Scrubbed of configured secrets.
    pub message: Option<String>,
}

/// The reconnect policy and timeouts a server runs with: its config's values over the
/// defaults (DESIGN.md, "Supervisor"), in whole milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct PolicyView {
    /// `false`: the first failure is final (`gave_up`).
    pub reconnect: bool,
    pub initial_delay_ms: u32,
    /// The backoff cap; also the stability window after which a connection's failure
    /// starts a fresh budget.
    pub max_delay_ms: u32,
    /// The uniform jitter around each backoff delay, in percent (never applied to a wait a
    /// server asked for).
    pub jitter_percent: u32,
    pub max_attempts: u32,
    /// Cooldowns of quarantine levels 1–3; after the third, `gave_up`.
    pub quarantine_ms: [u32; 3],
    pub establish_ms: u32,
    pub request_ms: u32,
    /// `None`: no health pings.
    pub ping_interval_ms: Option<u32>,
    pub ping_timeout_ms: u32,
    pub max_concurrent_calls: u32,
}

fn ms(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}

impl PolicyView {
    pub fn of(policy: &lifeline_core::config::ServerPolicy) -> PolicyView {
        let r = &policy.reconnect;
        let t = &policy.timeouts;
        PolicyView {
            reconnect: r.enabled,
            initial_delay_ms: ms(r.initial_delay),
            max_delay_ms: ms(r.max_delay),
            jitter_percent: JITTER_PERCENT,
            max_attempts: r.max_attempts,
            quarantine_ms: r.quarantine.map(ms),
            establish_ms: ms(t.establish),
            request_ms: ms(t.request),
            ping_interval_ms: t.ping_interval.map(ms),
            ping_timeout_ms: ms(t.ping_timeout),
            max_concurrent_calls: policy.max_concurrent_calls,
        }
    }
}

/// The core's backoff jitter (policy/backoff.rs: uniform ±20 %).
const JITTER_PERCENT: u32 = 20;

/// A stdio server's command as it would be spawned (`transport::resolve`), safe to show.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct CommandView {
    pub command: String,
    /// The absolute path spawned; `None` when nothing was found (`problem` says why).
    pub program: Option<String>,
    pub args: Vec<String>,
    pub cwd: Option<String>,
    /// The PATH directories searched; empty when the config sets PATH (its value is a
    /// secret) or the command is a path.
    pub path: Vec<String>,
    /// `app`, `config` or `none`.
    #[ts(type = "\"app\" | \"config\" | \"none\"")]
    pub path_source: &'static str,
    /// Names only, never values.
    pub env_names: Vec<String>,
    pub problem: Option<String>,
}

/// Removes a call's cancel switch however the call ends.
struct Registered<'a> {
    calls: &'a Mutex<HashMap<String, oneshot::Sender<()>>>,
    id: Option<String>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            super::lock(self.calls).remove(id);
        }
    }
}

impl AppState {
    /// The full definitions of `server`'s current tools (stale ones while the snapshot
    /// says so), their text scrubbed of configured secrets.
    pub async fn tool_list(&self, server: &str) -> Result<Vec<Value>, ErrorView> {
        let fleet = self.fleet.read().await;
        let tools: Vec<Tool> = supervisor(running(&fleet)?, server)?.tools();
        Ok(tools
            .into_iter()
            .map(|t| {
                super::lock(&self.redactor)
                    .scrub_value(&serde_json::to_value(t).unwrap_or_default())
            })
            .collect())
    }

    /// `call_tool` with a name the UI chose (`cancel_call` takes it) and a sink for the
    /// call's progress. Never replayed.
    pub async fn call_tool_with(
        &self,
        server: &str,
        tool: &str,
        args: Value,
        call_id: Option<String>,
        mut on_progress: impl FnMut(ProgressView) + Send + 'static,
    ) -> Result<Value, ErrorView> {
        let (cancel_tx, cancel) = oneshot::channel();
        let registered = Registered {
            calls: &self.detail.calls,
            id: match call_id.clone() {
                Some(id) => {
                    let mut calls = super::lock(&self.detail.calls);
                    if calls.contains_key(&id) {
                        return Err(ErrorView::new(
                            CALL_ID_IN_USE,
                            format!(
                                "a call named `{id}` is already in flight; give each call its own call_id"
                            ),
                        ));
                    }
                    calls.insert(id.clone(), cancel_tx);
                    Some(id)
                }
                None => None,
            },
        };
        let (progress_tx, mut progress) = mpsc::unbounded_channel::<Progress>();
        let redactor = super::lock(&self.redactor).clone();
        let forward_id = call_id.clone();
        let forwarder = tokio::spawn(async move {
            while let Some(p) = progress.recv().await {
                on_progress(ProgressView {
                    call_id: forward_id.clone(),
                    progress: p.progress,
                    total: p.total,
                    message: p.message.map(|m| redactor.scrub(&m)),
                });
            }
        });
        let opts = CallOptions {
            progress: Some(progress_tx),
            cancel: Some(cancel),
            ..Default::default()
        };
        let mut stopping = self.stopping.subscribe();
        let started_at = SystemTime::now();
        let started = tokio::time::Instant::now();
        // The fleet is not held while the call runs, so a config change never waits for it.
        let call = {
            let fleet = self.fleet.read().await;
            supervisor(running(&fleet)?, server)?.send_call_with(tool, args, opts)
        };
        let result = {
            tokio::select! {
                result = call => result,
                _ = stopping.wait_for(|s| *s) => {
                    Err(lifeline_core::Error::cancelled(closing().message))
                }
            }
        };
        drop(registered);
        self.history.record_call(CallRecord::of(
            server,
            tool,
            started_at,
            started.elapsed(),
            &result,
        ));
        let result = result
            .map(|v| super::lock(&self.redactor).scrub_value(&v))
            .map_err(|e| ErrorView::from_core(&e, &super::lock(&self.redactor)));
        // Every progress sent before the answer is delivered before the result returns.
        let _ = tokio::time::timeout(Duration::from_secs(1), forwarder).await;
        result
    }

    /// Cancels the call named `call_id`: the server is sent `notifications/cancelled` and
    /// the call ends with a `cancelled` error. False when no such call is in flight (it
    /// may have just finished).
    pub fn cancel_call(&self, call_id: &str) -> bool {
        let cancel = super::lock(&self.detail.calls).remove(call_id);
        cancel.is_some_and(|c| c.send(()).is_ok())
    }

    /// The stderr of `server`'s current and previous generation (stdio; empty for HTTP),
    /// oldest first.
    pub async fn server_stderr(&self, server: &str) -> Result<Vec<GenerationStderr>, ErrorView> {
        let fleet = self.fleet.read().await;
        let mut all = supervisor(running(&fleet)?, server)?.stderr();
        let redactor = super::lock(&self.redactor).clone();
        // The core keeps more for the diagnostic bundle; the panel shows these two.
        all.drain(..all.len().saturating_sub(2));
        for g in &mut all {
            for line in &mut g.lines {
                *line = redactor.scrub(line);
            }
        }
        Ok(all)
    }

    /// What a stdio server's command resolves to; `None` for an HTTP server.
    pub fn server_command(&self, server: &str) -> Result<Option<CommandView>, ErrorView> {
        let config = self.server_config_of(server)?;
        let config = &config;
        let Some(stdio) = config.stdio_config() else {
            return Ok(None);
        };
        let r = resolve(&stdio, &Redactor::new(config.secrets()));
        Ok(Some(CommandView {
            command: r.command,
            program: r.program.map(|p| p.display().to_string()),
            args: r.args,
            cwd: r.cwd.map(|p| p.display().to_string()),
            path: r.path,
            path_source: r.path_source.as_str(),
            env_names: r.env_names,
            problem: r.problem,
        }))
    }

    /// The policy `server` runs with.
    pub fn server_policy(&self, server: &str) -> Result<PolicyView, ErrorView> {
        Ok(PolicyView::of(&self.server_config_of(server)?.policy))
    }

    /// `server`'s config entry as the file's keys, read-only: env and header values are
    /// `***`, URL credentials and query values are masked, secret-looking arguments too.
    pub fn server_config(&self, server: &str) -> Result<Value, ErrorView> {
        let config = self.server_config_of(server)?;
        Ok(lifeline_core::config::masked::server(&config))
    }

    fn server_config_of(&self, server: &str) -> Result<ServerConfig, ErrorView> {
        let servers = super::lock(&self.detail.servers);
        servers
            .iter()
            .find(|s| s.name == server)
            .cloned()
            .ok_or_else(|| {
                ErrorView::unknown_server(server, servers.iter().map(|s| s.name.as_str()))
            })
    }
}

#[cfg(test)]
#[path = "detail_tests.rs"]
mod tests;
