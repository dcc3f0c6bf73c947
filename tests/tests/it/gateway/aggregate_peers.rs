//! `lifeline connect --all` in front of real servers nobody here wrote, driven by real hosts
//! (issue 27's tests): server-everything, server-filesystem and server-memory from npm,
//! mcp-server-time and mcp-server-git from PyPI (all installed by `scripts/setup.sh`), behind
//! one endpoint. The TypeScript SDK client (`tests/peers/aggregate_host.mjs`) and the Python
//! SDK client (`tests/peers/aggregate_host.py`) list every server's tools, call one tool on
//! each and answer server-everything's sampling request; the TypeScript host also kills the
//! memory server mid-session, calls the others while it is down and calls it again once it
//! is back; the Inspector CLI lists and calls through `connect --all`.

use super::config;
use super::inspector::{json_of, run_inspector};
use super::sdk_host::run_host_with;
use crate::cli::lifeline_bin;
use crate::peers::{repo, require, venv_python};
use crate::support::TempDirGuard;
use lifeline_core::gateway::names::ClientKind;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The servers behind the endpoint, each `name__tool` to the host.
const SERVERS: [&str; 5] = ["everything", "filesystem", "memory", "time", "git"];

/// What the file the host reads through server-filesystem holds.
const NOTE: &str = "a note the host reads through lifeline\n";

/// The memory server's wrapper: writes its pid to `$3` and runs the server (`$4…`); a start
/// that finds the marker `$1` (the host killed the last one) first waits for a line on the
/// FIFO `$2`, so the server stays down until the host opens it.
const MEMORY_WRAPPER: &str = r#"if [ -e "$1" ]; then read _ < "$2"; rm -f "$1"; fi
echo $$ > "$3"
shift 3
exec "$@""#;

/// The five servers' config and what the hosts are pointed at, in one temporary directory.
struct RealServers {
    dir: TempDirGuard,
    config: PathBuf,
    /// The directory server-filesystem is allowed, and the file in it the host reads.
    allowed: PathBuf,
    file: PathBuf,
    /// The git repository mcp-server-git is confined to (one untracked file).
    repo: PathBuf,
    /// Where server-memory keeps its graph (`MEMORY_FILE_PATH`).
    memory: PathBuf,
    /// When the memory server runs under `MEMORY_WRAPPER`: its files.
    kill: Option<Kill>,
}

/// The memory server's wrapper's files, for a host that kills it (`aggregate_host.mjs`).
struct Kill {
    pidfile: PathBuf,
    marker: PathBuf,
    gate: PathBuf,
}

fn peer(path: &str, what: &str) -> String {
    require(repo().join("tests/peers/node_modules").join(path), what)
        .display()
        .to_string()
}

/// Runs `program args` to completion, bounded; it must succeed.
async fn run(program: &str, args: &[&str]) {
    let run = tokio::process::Command::new(program)
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap_or_else(|_| panic!("`{program} {args:?}` did not finish within 30 s"))
        .unwrap_or_else(|e| panic!("`{program}` could not run: {e}"));
    assert!(
        out.status.success(),
        "`{program} {args:?}`: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes the config of the five servers; when `killable`, the memory server runs under
/// `MEMORY_WRAPPER` (a Unix shell) so a host can kill it and say when it may come back.
async fn real_servers(label: &str, killable: bool) -> RealServers {
    let dir = TempDirGuard::new(label);
    let everything = peer(
        "@modelcontextprotocol/server-everything/dist/index.js",
        "@modelcontextprotocol/server-everything",
    );
    let filesystem = peer(
        "@modelcontextprotocol/server-filesystem/dist/index.js",
        "@modelcontextprotocol/server-filesystem",
    );
    let memory_js = peer(
        "@modelcontextprotocol/server-memory/dist/index.js",
        "@modelcontextprotocol/server-memory",
    );
    let python = venv_python();

    let allowed = dir.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let file = allowed.join("note.txt");
    std::fs::write(&file, NOTE).unwrap();
    let git_repo = dir.path().join("repo");
    let git_dir = git_repo.display().to_string();
    run("git", &["init", "-q", &git_dir]).await;
    std::fs::write(git_repo.join("untracked-by-the-host.txt"), "x\n").unwrap();
    let memory = dir.path().join("memory.jsonl");

    let kill = killable.then(|| Kill {
        pidfile: dir.path().join("memory.pid"),
        marker: dir.path().join("memory-killed"),
        gate: dir.path().join("memory-gate"),
    });
    let mut memory_server = match &kill {
        None => json!({ "command": "node", "args": [memory_js] }),
        Some(k) => {
            let gate = k.gate.display().to_string();
            run("mkfifo", &[&gate]).await;
            json!({ "command": "sh", "args": ["-c", MEMORY_WRAPPER, "memory-wrapper",
                k.marker, k.gate, k.pidfile, "node", memory_js] })
        }
    };
    memory_server["env"] = json!({ "MEMORY_FILE_PATH": memory });
    memory_server["reconnect"] = json!({ "initialDelayMs": 10, "maxDelayMs": 50 });
    let config = config(
        &dir,
        json!({
            "everything": { "command": "node", "args": [everything, "stdio"] },
            "filesystem": { "command": "node", "args": [filesystem, allowed] },
            "memory": memory_server,
            "time": { "command": python,
                "args": ["-m", "mcp_server_time", "--local-timezone", "Etc/UTC"] },
            "git": { "command": python, "args": ["-m", "mcp_server_git", "--repository", git_repo] },
        }),
    );
    RealServers {
        dir,
        config,
        allowed,
        file,
        repo: git_repo,
        memory,
        kill,
    }
}

impl RealServers {
    /// Where `lifeline connect --all` keeps its history, names and runs: the test's own
    /// directory, never the user's.
    fn env(&self) -> Value {
        let data = self.dir.path().join("data");
        json!({
            "LIFELINE_HISTORY": data.join("history.db"),
            "XDG_DATA_HOME": data,
        })
    }

    /// The host scripts' one argument (see `tests/peers/aggregate_host.mjs`).
    fn spec(&self) -> String {
        let mut spec = json!({
            "lifeline": lifeline_bin(),
            "config": self.config,
            "env": self.env(),
            "servers": SERVERS,
            "file": self.file,
            "repo": self.repo,
        });
        if let Some(k) = &self.kill {
            spec["kill"] = json!({ "pidfile": k.pidfile, "marker": k.marker, "gate": k.gate });
        }
        spec.to_string()
    }
}

/// Runs a host script with `spec` and returns the JSON line it printed.
async fn run_aggregate_host(program: &Path, script: &str, spec: &str) -> Value {
    let script = require(repo().join("tests/peers").join(script), script);
    run_host_with(program, &script, &[spec.as_ref()]).await
}

/// The calls to everything, filesystem, time and git: each answered as its server would.
fn assert_others_answered(calls: &Value, servers: &RealServers) {
    assert_eq!(
        calls["everything"], "Echo: hello through lifeline",
        "{calls}"
    );
    assert_eq!(calls["filesystem"], NOTE, "{calls}");
    let time: Value = serde_json::from_str(calls["time"].as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("time's answer is JSON ({e}): {calls}"));
    assert_eq!(time["timezone"], "Etc/UTC", "{calls}");
    assert!(time["datetime"].is_string(), "{calls}");
    let git = calls["git"].as_str().unwrap_or_default();
    assert!(
        git.starts_with("Repository status:") && git.contains("untracked-by-the-host.txt"),
        "git_status of {}: {calls}",
        servers.repo.display()
    );
}

/// The memory server's graph as its `read_graph` answered: the one entity the host made.
fn assert_remembered(graph: &Value) {
    let graph: Value = serde_json::from_str(graph.as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("read_graph's answer is JSON ({e}): {graph}"));
    assert_eq!(graph["entities"][0]["name"], "lifeline", "{graph}");
    assert_eq!(
        graph["entities"][0]["observations"],
        json!(["keeps MCP alive"]),
        "{graph}"
    );
}

/// What every SDK host must have seen: Lifeline's own server, every server's tools under
/// its name (each fitting the strictest budget, as the host is unknown), a call answered
/// by each server, and server-everything's sampling request answered by the host.
fn assert_every_server(seen: &Value, servers: &RealServers) {
    assert_eq!(seen["server"]["name"], "lifeline", "{seen}");
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {seen}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for tool in [
        "everything__echo",
        "everything__trigger-sampling-request",
        "filesystem__read_text_file",
        "filesystem__list_allowed_directories",
        "memory__create_entities",
        "memory__read_graph",
        "time__get_current_time",
        "git__git_status",
    ] {
        assert!(tools.contains(&tool), "{tool} missing from {tools:?}");
    }
    // The SDK hosts' `clientInfo.name` is none Lifeline knows: the strictest budget.
    let budget = ClientKind::Unknown.name_budget("lifeline");
    for name in &tools {
        let server = name.split_once("__").map(|(s, _)| s).unwrap_or_default();
        assert!(SERVERS.contains(&server), "{name}: no such server");
        assert!(
            name.len() <= budget,
            "{name} fits the strictest budget, {budget}"
        );
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }

    let calls = &seen["calls"];
    assert_others_answered(calls, servers);
    // The directory as the server resolved it (`/tmp` may be a link, as on macOS): the
    // test's own directory, by its unique name.
    let allowed = calls["allowed"].as_str().unwrap_or_default();
    let unique = servers.dir.path().file_name().unwrap().to_string_lossy();
    assert!(
        allowed.starts_with("Allowed directories:")
            && allowed.contains(unique.as_ref())
            && allowed.trim_end().ends_with("allowed"),
        "list_allowed_directories names {}: {calls}",
        servers.allowed.display()
    );
    assert!(
        calls["created"]
            .as_str()
            .unwrap_or_default()
            .contains("lifeline"),
        "{calls}"
    );
    assert_remembered(&calls["memory"]);
    let kept = std::fs::read_to_string(&servers.memory).unwrap_or_default();
    assert!(
        kept.contains("lifeline"),
        "server-memory kept its graph in the test's directory: {kept:?}"
    );

    // server-everything's prompt went to the host, and the host's answer to that server.
    let asked = "Resource trigger-sampling-request context: which upstream asked?";
    assert_eq!(seen["sampled"], json!([asked]), "{seen}");
    let sampling = seen["sampling"].as_str().unwrap_or_default();
    assert!(
        sampling.contains(&format!("the host's answer to <{asked}>")),
        "{sampling}"
    );
    assert!(sampling.contains("host-model"), "{sampling}");
}

#[tokio::test]
async fn aggregate_typescript_sdk_host_calls_every_real_server() {
    let servers = real_servers("aggregate-peers-ts", false).await;
    let seen = run_aggregate_host(Path::new("node"), "aggregate_host.mjs", &servers.spec()).await;
    assert_every_server(&seen, &servers);
}

#[tokio::test]
async fn aggregate_python_sdk_host_calls_every_real_server() {
    let servers = real_servers("aggregate-peers-py", false).await;
    let seen = run_aggregate_host(&venv_python(), "aggregate_host.py", &servers.spec()).await;
    assert_every_server(&seen, &servers);
}

/// The memory server is killed mid-session (SIGKILL, by the host). While it is down (its
/// next start waits at the gate) the others answer and the host's list does not change; once
/// the host opens the gate, a call to memory waits for its new process and is answered from
/// the graph the old one kept; no `tools/list_changed` came (a reconnect is no list change).
#[cfg(unix)]
#[tokio::test]
async fn aggregate_a_killed_server_comes_back_while_the_others_answer() {
    let servers = real_servers("aggregate-peers-kill", true).await;
    let seen = run_aggregate_host(Path::new("node"), "aggregate_host.mjs", &servers.spec()).await;
    assert_every_server(&seen, &servers);

    let killed = &seen["kill"];
    let (before, after) = (killed["pid"].as_u64(), killed["pidAfter"].as_u64());
    assert!(
        before.is_some_and(|p| p > 0) && after.is_some_and(|p| p > 0) && before != after,
        "a new process after the kill: {killed}"
    );
    assert_others_answered(&killed["whileDown"], &servers);
    assert_eq!(
        killed["sameListWhileDown"], true,
        "memory's tools stay listed while it reconnects: {killed}"
    );
    assert_remembered(&killed["memory"]);
    assert_eq!(killed["sameListAfter"], true, "{killed}");
    assert_eq!(
        killed["listChanges"], 0,
        "a server that comes back is no list change: {killed}"
    );
    assert!(
        !servers.kill.as_ref().unwrap().marker.exists(),
        "the wrapper passed the gate: the memory server was started again"
    );
}

#[tokio::test]
async fn aggregate_mcp_inspector_lists_and_calls_through_connect_all() {
    let servers = real_servers("aggregate-peers-inspector", false).await;
    let lifeline = json!({
        "command": lifeline_bin(),
        "args": ["connect", "--all", "--config", servers.config],
        "env": servers.env(),
    });
    let dir = &servers.dir;
    let (ok, stdout, stderr) = run_inspector(
        dir,
        "lifeline",
        lifeline.clone(),
        &["--method", "tools/list"],
    )
    .await;
    assert!(ok, "tools/list failed: {stderr}\n{stdout}");
    let listed = json_of(&stdout);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {stdout}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for server in SERVERS {
        assert!(
            names.iter().any(|n| n.starts_with(&format!("{server}__"))),
            "{server}'s tools: {names:?}"
        );
    }

    let (ok, stdout, stderr) = run_inspector(
        dir,
        "lifeline",
        lifeline,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "time__get_current_time",
            "--tool-arg",
            "timezone=Etc/UTC",
        ],
    )
    .await;
    assert!(ok, "tools/call failed: {stderr}\n{stdout}");
    let answer = json_of(&stdout);
    assert_eq!(
        answer["structuredContent"]["timezone"], "Etc/UTC",
        "{stdout}"
    );
}
