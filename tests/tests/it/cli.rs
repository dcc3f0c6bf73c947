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
/// older than any source it was built from, naming the newer file and the command to run.
///
/// The first call also gives this process a history directory of its own (`isolate`), so
/// every `lifeline` a test starts keeps its history, instance socket and tool pins apart
/// from other tests' and from the machine's.
pub fn lifeline_bin() -> PathBuf {
    static CHECKED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    CHECKED
        .get_or_init(|| {
            isolate();
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
            if let Some((newer, _)) = newest_source(&bin).filter(|(_, at)| *at > built) {
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

/// Sets `LIFELINE_HISTORY` for this process (and so every child that inherits its
/// environment) to a fresh directory, unless it is set. nextest runs each test in a process
/// of its own, so each test gets its own history, instance directory and tool pins: two
/// tests that give one server name different tools do not meet in one pins file. A test
/// that shares a directory between processes on purpose still sets it on their commands.
fn isolate() {
    if std::env::var_os(lifeline_core::history::HISTORY_ENV).is_some() {
        return;
    }
    // In the target directory (cargo's tmp for integration tests), which `cargo clean` empties.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("isolated")
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&dir).expect("a history directory for the test");
    // SAFETY: called once, from `lifeline_bin` before this process starts any `lifeline`;
    // the variable is read only through `std::env` (under its lock) or by children.
    unsafe { std::env::set_var(lifeline_core::history::HISTORY_ENV, dir.join("history.db")) };
}

/// `LIFELINE_HISTORY` as `isolate` set it, for a `lifeline` started with a cleared
/// environment (Lifeline's own stdio transport passes on only a few variables).
pub fn history_env() -> (String, String) {
    lifeline_bin();
    let history = std::env::var(lifeline_core::history::HISTORY_ENV).unwrap_or_default();
    (lifeline_core::history::HISTORY_ENV.to_owned(), history)
}

/// The most recently modified file the `lifeline` binary was built from, as cargo's dep-info
/// beside it (`lifeline.d`) lists them: exactly what a rebuild would look at, so a change to
/// a test-only file (which cargo rightly does not relink for) never counts. Without a
/// dep-info file, the sources of lifeline-core and lifeline-cli that are not tests.
fn newest_source(bin: &std::path::Path) -> Option<(PathBuf, std::time::SystemTime)> {
    let newest = |paths: Vec<PathBuf>| {
        paths
            .into_iter()
            .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
            .max()
            .map(|(at, p)| (p, at))
    };
    if let Ok(info) = std::fs::read_to_string(bin.with_extension("d")) {
        return newest(dep_info_sources(&info));
    }
    fn walk(path: &std::path::Path, out: &mut Vec<PathBuf>) {
        if path.is_dir() {
            for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
                walk(&entry.path(), out);
            }
        } else if !path.to_string_lossy().ends_with("_tests.rs") {
            out.push(path.to_owned());
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()?
        .to_owned();
    let mut paths = Vec::new();
    for part in ["crates/core/src", "crates/cli/src"] {
        walk(&root.join(part), &mut paths);
    }
    newest(paths)
}

/// The prerequisites of a make-style dep-info file (`target: a.rs b\ c.rs`): the paths after
/// the first `: `, split on spaces that are not escaped.
fn dep_info_sources(info: &str) -> Vec<PathBuf> {
    let Some(line) = info.lines().next() else {
        return Vec::new();
    };
    let Some((_, deps)) = line.split_once(": ") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = deps.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            ' ' => {
                if !current.is_empty() {
                    out.push(PathBuf::from(std::mem::take(&mut current)));
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(PathBuf::from(current));
    }
    out
}

#[test]
fn dep_info_paths_keep_escaped_spaces() {
    assert_eq!(
        dep_info_sources("/t/lifeline: /a/b.rs /c/my\\ dir/d.rs\n\n/a/b.rs:\n"),
        [PathBuf::from("/a/b.rs"), PathBuf::from("/c/my dir/d.rs")]
    );
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
