//! Runs the real `lifeline` binary and reads what it printed and how it exited.

#![allow(dead_code)] // Each test module uses its own subset.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

/// `target/debug/lifeline`, found next to this test binary (target/debug/deps/it-…).
///
/// Cargo builds a package's own binaries for its tests, not another package's, so a plain
/// `cargo test` would run whatever `lifeline` the last build left. This refuses a binary
/// older than any source it is built from, naming the newer file and the command to run.
pub fn lifeline_bin() -> PathBuf {
    static CHECKED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("the test binary's path");
            let bin = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("target/debug")
                .join("lifeline");
            let built = std::fs::metadata(&bin)
                .and_then(|m| m.modified())
                .unwrap_or_else(|_| {
                    panic!(
                        "{} is missing: run `cargo build -p lifeline-cli` (make check and make test do)",
                        bin.display()
                    )
                });
            if let Some((newer, _)) = newest_source().filter(|(_, at)| *at > built) {
                panic!(
                    "{} is older than {}: run `cargo build -p lifeline-cli` before `cargo test` \
                     (make check and make test do), so the tests run the code you changed",
                    bin.display(),
                    newer.display()
                );
            }
            bin
        })
        .clone()
}

/// The most recently modified file the `lifeline` binary is built from: the sources and
/// manifests of lifeline-core and lifeline-cli, and the lock file.
fn newest_source() -> Option<(PathBuf, std::time::SystemTime)> {
    fn walk(path: &std::path::Path, newest: &mut Option<(PathBuf, std::time::SystemTime)>) {
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        if meta.is_dir() {
            for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
                walk(&entry.path(), newest);
            }
        } else if let Ok(at) = meta.modified()
            && newest.as_ref().is_none_or(|(_, n)| at > *n)
        {
            *newest = Some((path.to_owned(), at));
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()?
        .to_owned();
    let mut newest = None;
    for part in [
        "crates/core/src",
        "crates/core/Cargo.toml",
        "crates/cli/src",
        "crates/cli/Cargo.toml",
        "Cargo.lock",
    ] {
        walk(&root.join(part), &mut newest);
    }
    newest
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
