//! Running `lifeline watch --json`: its stdout read as it is printed, one event a line, and
//! waits for an event that fail with every event so far when it does not come in time.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::cli::lifeline_bin;
use crate::support::PATIENCE;

/// How long a `watch` may take to exit after SIGTERM: disposal is bounded at 10 s, and a
/// process that ignores SIGTERM costs the 2 s + 2 s shutdown sequence.
const EXIT_PATIENCE: Duration = Duration::from_secs(20);

/// A running `lifeline watch --json`.
pub struct Watch {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    /// stdout as printed so far, and each line parsed.
    stdout: String,
    events: Vec<Value>,
    stderr: tokio::task::JoinHandle<String>,
}

/// What a finished `watch` printed, and how it exited.
#[derive(Debug)]
pub struct WatchRun {
    pub code: i32,
    pub events: Vec<Value>,
    pub stdout: String,
    pub stderr: String,
}

impl Watch {
    /// Starts `lifeline watch --json --config CONFIG --for LIMIT`. `limit` bounds the run;
    /// tests that wait for something stop it with SIGTERM instead (`stop`).
    pub fn start(config: &Path, limit: &str) -> Watch {
        Watch::start_with_env(config, limit, &[])
    }

    pub fn start_with_env(config: &Path, limit: &str, env: &[(&str, &str)]) -> Watch {
        let mut child = Command::new(lifeline_bin())
            .args(["watch", "--json", "--for", limit, "--config"])
            .arg(config)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning lifeline watch");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut stdout = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = stdout.next_line().await {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut pipe = child.stderr.take().expect("piped stderr");
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text).await;
            text
        });
        Watch {
            child,
            lines,
            stdout: String::new(),
            events: Vec::new(),
            stderr,
        }
    }

    fn push(&mut self, line: &str) {
        let event = serde_json::from_str(line).unwrap_or_else(|e| {
            panic!("watch --json printed a line that is not JSON ({e}): {line}")
        });
        self.events.push(event);
        self.stdout.push_str(line);
        self.stdout.push('\n');
    }

    /// The first event (from the start of the run) satisfying `pred`, waiting up to
    /// `PATIENCE` for it.
    pub async fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        let mut seen = 0;
        loop {
            if let Some(e) = self.events[seen..].iter().find(|e| pred(e)) {
                return e.clone();
            }
            seen = self.events.len();
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(line)) => self.push(&line),
                Ok(None) => panic!("watch exited before {what}; events:\n{}", self.dump()),
                Err(_) => panic!(
                    "watch printed no {what} within {PATIENCE:?}; events:\n{}",
                    self.dump()
                ),
            }
        }
    }

    /// The `n`th event (1-based, from the start of the run) satisfying `pred`, waiting up
    /// to `PATIENCE` for it.
    pub async fn wait_for_nth(
        &mut self,
        what: &str,
        n: usize,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(e) = self.events.iter().filter(|e| pred(e)).nth(n - 1) {
                return e.clone();
            }
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(line)) => self.push(&line),
                Ok(None) => panic!("watch exited before {what} #{n}; events:\n{}", self.dump()),
                Err(_) => panic!(
                    "watch printed no {what} #{n} within {PATIENCE:?}; events:\n{}",
                    self.dump()
                ),
            }
        }
    }

    /// Waits, up to `within`, until the events so far satisfy `done`.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // only wake.rs, Linux's, waits so
    pub async fn wait_until(
        &mut self,
        what: &str,
        within: Duration,
        done: impl Fn(&[Value]) -> bool,
    ) {
        let deadline = tokio::time::Instant::now() + within;
        while !done(&self.events) {
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(line)) => self.push(&line),
                Ok(None) => panic!("watch exited before {what}; events:\n{}", self.dump()),
                Err(_) => panic!(
                    "watch printed no {what} within {within:?}; events:\n{}",
                    self.dump()
                ),
            }
        }
    }

    fn dump(&self) -> String {
        self.events
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The pid of the `watch` process.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("watch is still running")
    }

    /// Sends SIGTERM (as a service manager would) and collects the run.
    pub async fn stop(self) -> WatchRun {
        send_signal(self.pid(), "TERM").await;
        self.finish().await
    }

    /// Waits for the process to exit by itself (its `--for` ran out, or it was signalled),
    /// then for the rest of what it printed; each wait is bounded.
    pub async fn finish(mut self) -> WatchRun {
        let status = tokio::time::timeout(EXIT_PATIENCE, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("watch did not exit within {EXIT_PATIENCE:?}"))
            .expect("waiting for watch");
        // Its pipes close with it, unless a process it started still holds them.
        let rest = async {
            while let Some(line) = self.lines.recv().await {
                self.push(&line);
            }
        };
        if tokio::time::timeout(PATIENCE, rest).await.is_err() {
            panic!("watch exited ({status}) but its stdout stayed open for {PATIENCE:?}");
        }
        let stderr = tokio::time::timeout(PATIENCE, self.stderr)
            .await
            .unwrap_or_else(|_| {
                panic!("watch exited ({status}) but its stderr stayed open for {PATIENCE:?}")
            })
            .expect("the stderr reader");
        WatchRun {
            code: status.code().unwrap_or(-1),
            events: self.events,
            stdout: self.stdout,
            stderr,
        }
    }
}

async fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .await
        .expect("running kill");
    assert!(status.success(), "kill -{signal} {pid}: {status}");
}
