//! The TypeScript SDK client (1.32.2, tests/peers) as the host of `lifeline connect`:
//! `tests/peers/gateway_host.mjs` connects over `StdioClientTransport`, lists, calls, has
//! the upstream crash under a call, pings and calls again, and prints what it saw.

use super::config;
use crate::cli::lifeline_bin;
use crate::peers::{repo, require};
use crate::support::{TempDirGuard, read_log, received, stdio_fixture};
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test]
async fn gateway_typescript_sdk_host_survives_an_upstream_crash() {
    let dir = TempDirGuard::new("gateway-sdk");
    let fx = stdio_fixture(&json!({}));
    let path = config(
        &dir,
        json!({ "fixture": { "command": fx.program, "args": fx.args,
            "reconnect": { "initialDelayMs": 10, "maxDelayMs": 50 } } }),
    );
    let script = require(
        repo().join("tests/peers/gateway_host.mjs"),
        "the gateway host script",
    );
    require(
        repo().join("tests/peers/node_modules/@modelcontextprotocol/sdk/package.json"),
        "@modelcontextprotocol/sdk",
    );
    let run = tokio::process::Command::new("node")
        .arg(script)
        .arg(lifeline_bin())
        .arg(&path)
        .arg("fixture")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the SDK host finished within 120 s")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the SDK host failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(seen["server"]["name"], "lifeline-fixture", "{seen}");
    assert!(
        seen["tools"].as_array().unwrap().contains(&json!("echo")),
        "{seen}"
    );
    assert_eq!(seen["first"], "one", "{seen}");
    assert_eq!(
        seen["crash"]["code"],
        lifeline_core::gateway::UPSTREAM_LOST,
        "{seen}"
    );
    assert_eq!(seen["crash"]["data"]["kind"], "process_exit", "{seen}");
    assert_eq!(seen["second"], "two", "the session survived: {seen}");
    let crashes = received(&read_log(&fx.log), "tools/call")
        .iter()
        .filter(|e| e["params"]["name"] == "crash")
        .count();
    assert_eq!(crashes, 1, "the crashing call ran once");
}
