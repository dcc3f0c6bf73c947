//! Runs the real `lifeline` binary and reads what it printed and how it exited.

#![allow(dead_code)] // Each test module uses its own subset.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

/// `target/debug/lifeline`, found next to this test binary (target/debug/deps/it-…).
pub fn lifeline_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let bin = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/debug")
        .join("lifeline");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --workspace` (make test does)",
        bin.display()
    );
    bin
}

#[derive(Debug)]
pub struct CliRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl CliRun {
    /// The outcome line `--json` promises as the last line of stdout.
    pub fn outcome(&self) -> Value {
        let last = self
            .stdout
            .lines()
            .last()
            .unwrap_or_else(|| panic!("no stdout: {self:?}"));
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("last line is not JSON ({e}): {self:?}"))
    }

    /// The `error` object of a failed `--json` run.
    pub fn error(&self) -> Value {
        let o = self.outcome();
        assert_eq!(o["ok"], false, "expected a failure: {self:?}");
        o["error"].clone()
    }

    pub fn everything(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

/// Runs `lifeline ARGS` to completion (bounded, so a hang fails the test instead of CI).
pub async fn lifeline(args: &[&str]) -> CliRun {
    lifeline_with_env(args, &[]).await
}

pub async fn lifeline_with_env(args: &[&str], env: &[(&str, &str)]) -> CliRun {
    let mut cmd = Command::new(lifeline_bin());
    cmd.args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap_or_else(|_| panic!("lifeline {args:?} did not finish within 60 s"))
        .expect("running lifeline");
    CliRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
