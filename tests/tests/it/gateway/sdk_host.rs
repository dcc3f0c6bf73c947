//! The TypeScript SDK client (1.32.2, tests/peers) and the Python SDK client (`mcp`, the
//! .tools/venv) as hosts of `lifeline connect`: `tests/peers/gateway_host.mjs` and
//! `tests/peers/gateway_host.py` connect over stdio, list, call, have the upstream crash
//! under a call, ping and call again, then have the upstream ask them for sampling,
//! elicitation and roots (the fixture's `ask` tool), and print what they saw;
//! `tests/peers/gateway_host_everything.mjs` does the same in front of server-everything.

use super::config;
use crate::cli::lifeline_bin;
use crate::peers::{repo, require, venv_python};
use crate::support::{TempDirGuard, read_log, received, stdio_fixture};
use serde_json::{Value, json};
use std::time::Duration;

/// A config with the crashable stdio fixture as `fixture`, fast to reconnect.
fn fixture_config(dir: &TempDirGuard) -> (crate::support::StdioFixture, std::path::PathBuf) {
    let fx = stdio_fixture(&json!({}));
    let path = config(
        dir,
        json!({ "fixture": { "command": fx.program, "args": fx.args,
            "reconnect": { "initialDelayMs": 10, "maxDelayMs": 50 } } }),
    );
    (fx, path)
}

/// Runs a host script (`program script LIFELINE CONFIG fixture`) and returns the JSON
/// line it printed.
async fn run_host(
    program: &std::path::Path,
    script: &std::path::Path,
    config: &std::path::Path,
) -> Value {
    let lifeline = lifeline_bin();
    run_host_with(
        program,
        script,
        &[lifeline.as_os_str(), config.as_os_str(), "fixture".as_ref()],
    )
    .await
}

/// Runs `program script ARGS...` (an SDK host script) and returns the JSON line it printed
/// last; a host that fails or takes over 120 s fails the test.
pub(super) async fn run_host_with(
    program: &std::path::Path,
    script: &std::path::Path,
    args: &[&std::ffi::OsStr],
) -> Value {
    let run = tokio::process::Command::new(program)
        .arg(script)
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the SDK host finished within 120 s")
        .expect("the SDK host runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the SDK host failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// What every SDK host, over stdio or HTTP, must have seen: the server, its tools, a call,
/// the crash under a call reported as UPSTREAM_LOST with its cause, the session surviving
/// it, and the crashing call run once.
pub(super) fn assert_survived(seen: &Value, fx: &crate::support::StdioFixture) {
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

/// What every SDK host must have seen of the upstream's requests: each reached the host's
/// own handler and its answer reached the tool result; each generation (before and after
/// the crash: two processes, no extra restart for the capabilities) was initialized with
/// the host's capabilities.
fn assert_asked(seen: &Value, fx: &crate::support::StdioFixture) {
    let asks = &seen["asks"];
    let sampled = &asks["sampling/createMessage"]["result"];
    assert_eq!(sampled["model"], "host-model", "{seen}");
    assert_eq!(sampled["content"]["text"], "sampled: hello", "{seen}");
    let elicited = &asks["elicitation/create"]["result"];
    assert_eq!(elicited["action"], "accept", "{seen}");
    assert_eq!(elicited["content"]["answer"], "from the host", "{seen}");
    assert_eq!(
        asks["roots/list"]["result"]["roots"][0]["uri"], "file:///host/root",
        "{seen}"
    );
    assert_eq!(
        seen["asked"],
        json!(["sampling/createMessage", "elicitation/create", "roots/list"]),
        "{seen}"
    );
    let log = read_log(&fx.log);
    let inits = received(&log, "initialize");
    assert_eq!(inits.len(), 2, "one per process, none for the capabilities");
    for init in &inits {
        let caps = &init["params"]["capabilities"];
        for key in ["sampling", "elicitation", "roots"] {
            assert!(caps.get(key).is_some(), "{key} offered: {caps}");
        }
    }
}

#[tokio::test]
async fn gateway_typescript_sdk_host_survives_an_upstream_crash() {
    let dir = TempDirGuard::new("gateway-sdk");
    let (fx, path) = fixture_config(&dir);
    let script = require(
        repo().join("tests/peers/gateway_host.mjs"),
        "the gateway host script",
    );
    require(
        repo().join("tests/peers/node_modules/@modelcontextprotocol/sdk/package.json"),
        "@modelcontextprotocol/sdk",
    );
    let seen = run_host(std::path::Path::new("node"), &script, &path).await;
    assert_survived(&seen, &fx);
    assert_asked(&seen, &fx);
    assert_eq!(
        received(&read_log(&fx.log), "notifications/roots/list_changed").len(),
        1,
        "the host's roots/list_changed reached the server"
    );
}

#[tokio::test]
async fn gateway_python_sdk_host_survives_an_upstream_crash() {
    let dir = TempDirGuard::new("gateway-sdk-py");
    let (fx, path) = fixture_config(&dir);
    let python = venv_python();
    let script = require(
        repo().join("tests/peers/gateway_host.py"),
        "the gateway host script (Python)",
    );
    let seen = run_host(&python, &script, &path).await;
    assert_survived(&seen, &fx);
    assert_asked(&seen, &fx);
}

#[tokio::test]
async fn gateway_typescript_sdk_host_answers_server_everythings_requests() {
    let dir = TempDirGuard::new("gateway-sdk-everything");
    let everything = require(
        repo()
            .join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        "@modelcontextprotocol/server-everything",
    );
    let script = require(
        repo().join("tests/peers/gateway_host_everything.mjs"),
        "the gateway host script (server-everything)",
    );
    let path = config(
        &dir,
        json!({ "fixture": { "command": "node", "args": [everything, "stdio"] } }),
    );
    let seen = run_host(std::path::Path::new("node"), &script, &path).await;
    // Registered only for a client that declared the capability: the upstream was
    // initialized with the host's.
    for tool in [
        "trigger-sampling-request",
        "trigger-elicitation-request",
        "get-roots-list",
    ] {
        assert!(
            seen["tools"].as_array().unwrap().contains(&json!(tool)),
            "{tool}: {seen}"
        );
    }
    let sampling = seen["sampling"].as_str().unwrap();
    assert!(sampling.contains("the host sampled this"), "{seen}");
    let elicitation = seen["elicitation"].as_str().unwrap();
    assert!(elicitation.contains("Host Person"), "{seen}");
    let roots = seen["roots"].as_str().unwrap();
    assert!(roots.contains("file:///host/root"), "{seen}");
    let asked: Vec<&str> = seen["asked"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for method in ["sampling/createMessage", "elicitation/create", "roots/list"] {
        assert!(asked.contains(&method), "{method}: {seen}");
    }
}
