//! What a stdio server's process gets and how it ends, through the real `lifeline` binary:
//! the environment (the MCP SDKs' few variables plus the server's own `env`, or everything
//! with `inheritEnv`), and no orphans — a `lifeline watch` killed with SIGKILL takes its
//! server with it (the parent-death signal), and the next `lifeline` ends what that server
//! had started (the runs file).

use std::path::Path;
use std::process::Stdio;

use serde_json::json;
use tokio::process::Command;

use crate::cli::{lifeline_bin, lifeline_with_env};
use crate::support::{
    TempDirGuard, fixture_bin, is_running, process_ended, wait_for_log, when_written_below,
    write_config,
};

/// A value in Lifeline's own environment that no server asked for.
const LEAK: &str = "canary-leak-6e1d";

/// The variables a server saw: `sh` writes its environment to `dump`, then becomes the
/// fixture so the connection succeeds.
fn env_dump_server(dump: &Path, extra: serde_json::Value) -> serde_json::Value {
    let mut server = json!({
        "command": "sh",
        "args": ["-c", format!("env > '{}'; exec '{}' stdio", dump.display(), fixture_bin())],
        "env": {"OWN_TOKEN": "canary-own-2b7c"},
    });
    if let (Some(server), Some(extra)) = (server.as_object_mut(), extra.as_object()) {
        server.extend(extra.clone());
    }
    server
}

fn names(dump: &Path) -> Vec<String> {
    std::fs::read_to_string(dump)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dump.display()))
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_owned()))
        .collect()
}

#[tokio::test]
async fn a_stdio_server_gets_the_sdk_environment_and_its_own_not_lifelines() {
    let dir = TempDirGuard::new("env");
    let plain = dir.path().join("plain.env");
    let inherits = dir.path().join("inherits.env");
    let config = write_config(
        &dir,
        json!({
            "plain": env_dump_server(&plain, json!({})),
            "inherits": env_dump_server(&inherits, json!({"inheritEnv": true})),
        }),
    );
    let config = config.to_str().unwrap();
    let parent = [("LIFELINE_PARENT_SECRET", LEAK), ("LANG", "C.UTF-8")];
    for server in ["plain", "inherits"] {
        let run = lifeline_with_env(&["tools", server, "--config", config], &parent).await;
        assert_eq!(run.code, 0, "{run:?}");
    }

    let plain = names(&plain);
    for name in ["PATH", "HOME", "LANG", "OWN_TOKEN"] {
        assert!(plain.iter().any(|n| n == name), "{name} missing: {plain:?}");
    }
    assert!(
        !plain.iter().any(|n| n == "LIFELINE_PARENT_SECRET"),
        "Lifeline's own environment reached the server: {plain:?}"
    );
    let inherits = names(&inherits);
    for name in ["PATH", "OWN_TOKEN", "LIFELINE_PARENT_SECRET"] {
        assert!(
            inherits.iter().any(|n| n == name),
            "{name} missing: {inherits:?}"
        );
    }
}

fn logged_pid(entry: &serde_json::Value) -> u32 {
    let pid = entry["pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("no pid in {entry}"));
    u32::try_from(pid).unwrap()
}

#[tokio::test]
async fn a_killed_cli_takes_its_servers_with_it_and_the_next_run_ends_the_rest() {
    let dir = TempDirGuard::new("orphans");
    let data = dir.path().join("data");
    let log = dir.path().join("fixture.log");
    // A server that ignores stdin closing and SIGTERM, with a `sleep` in its group: only a
    // SIGKILL ends it, and nothing but the group's reaper ends the sleep.
    let script = json!({"on_stdin_eof": "stay", "ignore_sigterm": true, "grandchild_sleep_s": 300});
    let config = write_config(
        &dir,
        json!({"stubborn": {
            "command": fixture_bin(),
            "args": ["stdio", "--script", script.to_string(), "--log", log.display().to_string()],
        }}),
    );
    let mut watch = Command::new(lifeline_bin())
        .args(["watch", "--json", "--for", "120s", "--config"])
        .arg(&config)
        .env("XDG_DATA_HOME", &data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawning lifeline watch");
    let server = logged_pid(&wait_for_log(&log, "started", |e| e["event"] == "started").await);
    let grandchild =
        logged_pid(&wait_for_log(&log, "grandchild", |e| e["event"] == "grandchild").await);
    let runs = data.join("lifeline").join("runs");
    // The parent records the server after spawning it, so the child's log can come first.
    recorded(&runs, server).await;

    watch.start_kill().expect("SIGKILL to lifeline watch");
    watch.wait().await.expect("lifeline watch ended");
    process_ended("the server of a SIGKILLed lifeline", server).await;
    assert!(
        is_running(grandchild),
        "the sleep outlives the server: only the next run can end it"
    );

    // Any later `lifeline` reaps what the crashed run left, and its runs file.
    let empty = TempDirGuard::new("orphans-next");
    let next_config = write_config(&empty, json!({}));
    let data_env = data.to_str().unwrap();
    // What it checks does not matter: reaping comes first.
    lifeline_with_env(
        &["check", "--config", next_config.to_str().unwrap()],
        &[("XDG_DATA_HOME", data_env)],
    )
    .await;
    process_ended("the server's own child, after the next run", grandchild).await;
    let left = std::fs::read_dir(&runs)
        .map(|d| d.count())
        .unwrap_or_default();
    assert_eq!(left, 0, "the crashed run's file is removed");
}

/// Waits for the one runs file in `runs` (`<pid>.run`) to name `server` as a child. Fails the test after
/// `PATIENCE`, or when more than one run is recorded.
async fn recorded(runs: &Path, server: u32) {
    let named = format!("child {server} ");
    // The runs directory (`DATA/lifeline/runs`) may not be made yet: the data directory is
    // watched, and whatever is made below it.
    let watched = runs
        .ancestors()
        .nth(2)
        .expect("the runs directory is two below the data directory");
    let seen = when_written_below(watched, || {
        // Only a `.run` file: the temporary file `private::write_atomic` renames into
        // place may already hold the text, but a run killed before the rename left none.
        let files: Vec<_> = std::fs::read_dir(runs)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "run"))
                    .collect()
            })
            .unwrap_or_default();
        assert!(
            files.len() <= 1,
            "one runs file in {}: {files:?}",
            runs.display()
        );
        let text = files
            .first()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .unwrap_or_default();
        text.contains(&named).then_some(())
    })
    .await;
    seen.unwrap_or_else(|| panic!("no runs file in {} names {server}", runs.display()));
}
