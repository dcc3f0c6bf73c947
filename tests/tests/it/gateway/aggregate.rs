//! `lifeline connect --all`: every enabled server behind one stdio MCP server. A raw host
//! (newline-delimited JSON-RPC written and read here, so every message can be seen and
//! every server request answered by hand) drives a real `lifeline connect --all` over
//! real fixture processes: tools of two servers under `server__tool` names, calls routed
//! back by name, a sampling request answered to the server that asked, a crash of one
//! server felt by nobody calling the other, and a server that gives up leaving the list
//! with one `tools/list_changed`.

use super::config;
use crate::cli::lifeline_bin;
use crate::support::{TempDirGuard, read_log, received, stdio_fixture};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long any one message may take to come.
const BOUND: Duration = Duration::from_secs(20);

/// A host speaking newline-delimited JSON-RPC to `lifeline connect --all`.
struct RawHost {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: i64,
    /// Notifications and server requests read while waiting for something else.
    seen: Vec<Value>,
}

impl RawHost {
    /// `lifeline connect --all` (or `extra`'s `--profile P`) with `extra`, its history
    /// and names in `data`.
    fn start(config: &Path, data: &Path, extra: &[&str]) -> RawHost {
        let all: &[&str] = if extra.contains(&"--profile") {
            &[]
        } else {
            &["--all"]
        };
        let mut child = Command::new(lifeline_bin())
            .arg("connect")
            .args(all)
            .arg("--config")
            .arg(config)
            .args(extra)
            .env(lifeline_core::history::HISTORY_ENV, data.join("history.db"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn lifeline connect --all");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        RawHost {
            child,
            stdin,
            lines,
            next_id: 0,
            seen: Vec::new(),
        }
    }

    async fn send(&mut self, msg: Value) {
        let line = format!("{msg}\n");
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The next message from Lifeline, bounded.
    async fn next(&mut self, waiting_for: &str) -> Value {
        let line = tokio::time::timeout(BOUND, self.lines.next_line())
            .await
            .unwrap_or_else(|_| {
                panic!("no message within {BOUND:?} while waiting for {waiting_for}")
            })
            .expect("read stdout")
            .unwrap_or_else(|| {
                panic!("lifeline connect --all ended while waiting for {waiting_for}")
            });
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Sends a request and returns its id.
    async fn ask(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// The response to request `id`; anything else read meanwhile is kept in `seen`.
    async fn response(&mut self, id: i64) -> Value {
        loop {
            let msg = self.next(&format!("the response to request {id}")).await;
            if msg["id"] == id && msg.get("method").is_none() {
                return msg;
            }
            self.seen.push(msg);
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.ask(method, params).await;
        self.response(id).await
    }

    async fn initialize(&mut self, client: &str) -> Value {
        let init = self
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25",
                       "capabilities": {"sampling": {}},
                       "clientInfo": {"name": client, "version": "1"}}),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        init["result"].clone()
    }

    async fn tool_names(&mut self) -> Vec<String> {
        let list = self.request("tools/list", json!({})).await;
        let mut names: Vec<String> = list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    }

    async fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    fn list_changes(&self) -> usize {
        self.seen
            .iter()
            .filter(|m| m["method"] == "notifications/tools/list_changed")
            .count()
    }

    async fn close(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(BOUND, self.child.wait())
            .await
            .expect("lifeline connect --all ends after stdin closes")
            .unwrap();
        assert!(status.success(), "{status}");
    }
}

fn text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
        .to_owned()
}

fn echoed(log: &Path) -> Vec<String> {
    received(&read_log(log), "tools/call")
        .iter()
        .filter(|e| e["params"]["name"] == "echo")
        .map(|e| {
            e["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn every_server_is_listed_and_called_under_its_own_name() {
    let dir = TempDirGuard::new("aggregate");
    let (a, b) = (stdio_fixture(&json!({})), stdio_fixture(&json!({})));
    let fast = json!({ "initialDelayMs": 10, "maxDelayMs": 50 });
    let path = config(
        &dir,
        json!({
            "alpha": { "command": a.program, "args": a.args, "reconnect": fast },
            "beta": { "command": b.program, "args": b.args, "reconnect": fast },
            "broken": { "command": "/nonexistent/lifeline-no-such-server" },
            "off": { "command": "true", "disabled": true },
        }),
    );
    let mut host = RawHost::start(&path, dir.path(), &[]);
    let init = host.initialize("claude-code").await;
    assert_eq!(init["serverInfo"]["name"], "lifeline", "{init}");
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true, "{init}");

    let names = host.tool_names().await;
    assert_eq!(names.len(), 20, "ten tools of each ready server: {names:?}");
    for tool in ["echo", "ask", "crash"] {
        assert!(names.contains(&format!("alpha__{tool}")), "{names:?}");
        assert!(names.contains(&format!("beta__{tool}")), "{names:?}");
    }
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("broken") || n.starts_with("off")),
        "a retired or disabled server lists nothing: {names:?}"
    );

    // A call goes to its own server, under the tool's own name.
    assert_eq!(
        text(&host.call("alpha__echo", json!({"text": "to a"})).await),
        "to a"
    );
    assert_eq!(
        text(&host.call("beta__echo", json!({"text": "to b"})).await),
        "to b"
    );
    assert_eq!(echoed(&a.log), ["to a"]);
    assert_eq!(echoed(&b.log), ["to b"]);

    // A name the host was never given.
    let unknown = host.call("gamma__echo", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let message = unknown["error"]["message"].as_str().unwrap();
    assert!(message.contains("`gamma__echo`"), "{message}");
    assert!(message.contains("list again"), "{message}");

    // Both servers ask the host for sampling at once; each answer reaches the one that asked.
    let ask = |who: &str| {
        json!({"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": who}}],
            "maxTokens": 10}})
    };
    let from_a = host
        .ask(
            "tools/call",
            json!({"name": "alpha__ask", "arguments": ask("from alpha")}),
        )
        .await;
    let from_b = host
        .ask(
            "tools/call",
            json!({"name": "beta__ask", "arguments": ask("from beta")}),
        )
        .await;
    let mut answered = 0;
    let mut results = Vec::new();
    while results.len() < 2 {
        let msg = host.next("two sampling requests and two results").await;
        if msg["method"] == "sampling/createMessage" {
            let who = msg["params"]["messages"][0]["content"]["text"].clone();
            host.send(json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "role": "assistant", "model": "host",
                "content": {"type": "text", "text": format!("reply to {}", who.as_str().unwrap())}}}))
                .await;
            answered += 1;
        } else if msg["id"] == from_a || msg["id"] == from_b {
            results.push(msg);
        } else {
            host.seen.push(msg);
        }
    }
    assert_eq!(answered, 2);
    for result in &results {
        let (mine, theirs) = if result["id"] == from_a {
            ("reply to from alpha", "from beta")
        } else {
            ("reply to from beta", "from alpha")
        };
        let got = text(result);
        assert!(got.contains(mine) && !got.contains(theirs), "{got}");
    }

    // One server crashes under a call: the host hears it with the server's name, the other
    // server answers at once, and the crashed one answers again on its next generation.
    // Its tools stay listed while it reconnects, so the host's list does not change.
    let crashed = host.call("beta__crash", json!({})).await;
    assert_eq!(
        crashed["error"]["code"],
        lifeline_core::gateway::UPSTREAM_LOST,
        "{crashed}"
    );
    assert_eq!(crashed["error"]["data"]["server"], "beta", "{crashed}");
    assert_eq!(
        text(&host.call("alpha__echo", json!({"text": "still"})).await),
        "still"
    );
    assert_eq!(
        text(&host.call("beta__echo", json!({"text": "back"})).await),
        "back"
    );
    assert_eq!(
        host.tool_names().await,
        names,
        "the same names after the crash"
    );
    assert_eq!(
        host.list_changes(),
        0,
        "a reconnect is no list change: {:?}",
        host.seen
    );
    host.close().await;

    // The names were kept beside the history, private, and a second run gives the same.
    let kept = dir.path().join("gateway-names.json");
    let text = std::fs::read_to_string(&kept).expect("the names file");
    assert!(text.contains("alpha__echo"), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the names file is the user's alone");
    }
    let mut again = RawHost::start(&path, dir.path(), &[]);
    again.initialize("claude-code").await;
    assert_eq!(again.tool_names().await, names);
    again.close().await;
}

#[tokio::test]
async fn names_over_the_clients_budget_are_shortened_and_still_route() {
    let dir = TempDirGuard::new("aggregate");
    let a = stdio_fixture(&json!({}));
    let long = "a-server-with-a-name-long-enough-to-need-shortening-everywhere";
    let path = config(
        &dir,
        json!({ long: { "command": a.program, "args": a.args } }),
    );
    // Cursor: the entry and the name under 60 characters.
    let mut host = RawHost::start(&path, dir.path(), &["--client", "cursor", "--entry", "ll"]);
    host.initialize("some-host").await;
    let list = host.request("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 10);
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        assert!(name.len() + "ll".len() < 60, "{name} fits Cursor's budget");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
    let echo = tools
        .iter()
        .find(|t| t["title"] == "echo")
        .unwrap_or_else(|| panic!("a shortened tool keeps its own name as its title: {list}"));
    let name = echo["name"].as_str().unwrap().to_owned();
    assert_ne!(name, format!("{long}__echo"));
    assert_eq!(
        text(&host.call(&name, json!({"text": "short"})).await),
        "short"
    );
    assert_eq!(echoed(&a.log), ["short"]);
    host.close().await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_server_that_gives_up_leaves_the_list_with_one_notification() {
    let dir = TempDirGuard::new("aggregate");
    let (a, b) = (stdio_fixture(&json!({})), stdio_fixture(&json!({})));
    // `beta` runs once; every later start exits at once, so after its crash it gives up.
    let marker = dir.path().join("beta-ran");
    let script = format!(
        "if [ -e '{m}' ]; then exit 3; fi; : > '{m}'; exec \"$0\" \"$@\"",
        m = marker.display()
    );
    let mut args = vec!["-c".to_owned(), script, b.program.clone()];
    args.extend(b.args.iter().cloned());
    let path = config(
        &dir,
        json!({
            "alpha": { "command": a.program, "args": a.args },
            "beta": { "command": "sh", "args": args,
                "reconnect": { "initialDelayMs": 10, "maxDelayMs": 20, "maxAttempts": 1,
                               "quarantineMs": [10, 10, 10] } },
        }),
    );
    let mut host = RawHost::start(&path, dir.path(), &[]);
    host.initialize("claude-code").await;
    assert_eq!(host.tool_names().await.len(), 20);

    let crashed = host.call("beta__crash", json!({})).await;
    assert!(crashed.get("error").is_some(), "{crashed}");
    // The one notification: beta gave up and its tools left.
    while host.list_changes() == 0 {
        let msg = host.next("tools/list_changed after beta gave up").await;
        host.seen.push(msg);
    }
    let names = host.tool_names().await;
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("alpha__")), "{names:?}");
    // Everything written before the answer to a ping has been read: still one.
    host.request("ping", json!({})).await;
    assert_eq!(host.list_changes(), 1, "{:?}", host.seen);
    assert_eq!(
        text(&host.call("alpha__echo", json!({"text": "on"})).await),
        "on"
    );
    host.close().await;
}

#[tokio::test]
async fn a_profile_serves_only_its_servers_and_tools() {
    let dir = TempDirGuard::new("aggregate");
    let (a, b) = (stdio_fixture(&json!({})), stdio_fixture(&json!({})));
    let path = dir.path().join("config.json");
    let file = json!({
        "mcpServers": {
            "alpha": { "command": a.program, "args": a.args },
            "beta": { "command": b.program, "args": b.args },
        },
        "lifeline": {
            "separator": "-",
            "profiles": { "coding": {
                "servers": ["alpha"],
                "tools": { "alpha": { "include": ["echo", "add", "crash"], "exclude": ["cr*"] } },
            } },
        },
    });
    std::fs::write(&path, file.to_string()).unwrap();
    let mut host = RawHost::start(&path, dir.path(), &["--profile", "coding"]);
    host.initialize("claude-code").await;
    assert_eq!(host.tool_names().await, ["alpha-add", "alpha-echo"]);
    let hidden = host.call("alpha-crash", json!({})).await;
    assert_eq!(
        hidden["error"]["code"], -32602,
        "a tool the profile hides is not called: {hidden}"
    );
    assert_eq!(
        text(&host.call("alpha-echo", json!({"text": "in"})).await),
        "in"
    );
    host.close().await;
    assert!(
        read_log(&b.log).is_empty(),
        "a server outside the profile is not even started"
    );
}

#[test]
fn an_unknown_profile_is_refused_with_the_profiles_named() {
    let dir = TempDirGuard::new("aggregate");
    let path = config(&dir, json!({ "alpha": { "command": "true" } }));
    let out = std::process::Command::new(lifeline_bin())
        .args(["connect", "--profile", "nope", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("there is no profile `nope` in the config; its profiles are: default"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "stdout carries only JSON-RPC");
}

#[tokio::test]
async fn a_search_profile_shows_three_meta_tools_that_find_and_call_every_tool() {
    let dir = TempDirGuard::new("aggregate");
    let (a, b) = (stdio_fixture(&json!({})), stdio_fixture(&json!({})));
    let path = dir.path().join("config.json");
    let file = json!({
        "mcpServers": {
            "alpha": { "command": a.program, "args": a.args },
            "beta": { "command": b.program, "args": b.args },
        },
        "lifeline": { "profiles": { "lean": { "tools": "search" } } },
    });
    std::fs::write(&path, file.to_string()).unwrap();
    let mut host = RawHost::start(&path, dir.path(), &["--profile", "lean"]);
    host.initialize("claude-code").await;
    assert_eq!(
        host.tool_names().await,
        ["call_tool", "describe_tool", "find_tools"]
    );

    let found = host
        .call(
            "find_tools",
            json!({"query": "sum of two numbers", "limit": 2}),
        )
        .await;
    let tools = found["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{found}"))
        .clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["alpha__add", "beta__add"], "{found}");
    assert!(
        tools[0]["inputSchema"]["properties"]["a"].is_object(),
        "full definitions: {found}"
    );

    let sum = host
        .call(
            "call_tool",
            json!({"name": "beta__add", "arguments": {"a": 2, "b": 3}}),
        )
        .await;
    assert_eq!(text(&sum), "5");
    let described = host
        .call("describe_tool", json!({"name": "alpha__echo"}))
        .await;
    assert_eq!(
        described["result"]["structuredContent"]["name"], "alpha__echo",
        "{described}"
    );
    // A found tool may be called by its name too.
    assert_eq!(
        text(&host.call("alpha__echo", json!({"text": "direct"})).await),
        "direct"
    );
    let unknown = host
        .call("call_tool", json!({"name": "gamma__add", "arguments": {}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let bad = host.call("find_tools", json!({"limit": 3})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`query`"),
        "{bad}"
    );
    host.close().await;
    assert_eq!(echoed(&a.log), ["direct"]);
}

#[tokio::test]
async fn a_stateless_upstream_gets_mcp_name_matching_the_tools_own_name() {
    let dir = TempDirGuard::new("aggregate");
    let fx = crate::support::stateless_fixture(json!({})).await;
    let path = config(&dir, json!({ "state": { "url": fx.url } }));
    let mut host = RawHost::start(&path, dir.path(), &[]);
    host.initialize("claude-code").await;
    assert!(host.tool_names().await.contains(&"state__echo".to_owned()));
    // The fixture refuses (-32020) a call whose Mcp-Name header differs from params.name.
    let echo = host.call("state__echo", json!({"text": "named"})).await;
    assert_eq!(text(&echo), "named", "{echo}");
    let calls = received(&read_log(&fx.log), "tools/call");
    assert!(
        calls.iter().any(|e| e["params"]["name"] == "echo"),
        "the server got its own name: {calls:?}"
    );
    host.close().await;
}

#[tokio::test]
async fn names_fit_every_hosts_budget() {
    let dir = TempDirGuard::new("aggregate");
    let a = stdio_fixture(&json!({}));
    let long = "a-server-with-a-name-long-enough-to-need-shortening-everywhere";
    let path = config(
        &dir,
        json!({ long: { "command": a.program, "args": a.args } }),
    );
    // (the host, the length its own prefix adds for the entry `lifeline`, its limit)
    for (client, prefix, limit) in [
        ("claude-code", "mcp__lifeline__".len(), 64),
        ("claude-ai", "mcp__lifeline__".len(), 64),
        ("cursor-vscode", "lifeline".len(), 59),
        ("Visual Studio Code", "mcp_lifeline_".len(), 64),
        ("codex-mcp-client", "mcp__lifeline__".len(), 64),
        ("some-new-host", "mcp__lifeline__".len(), 64),
    ] {
        let mut host = RawHost::start(&path, dir.path(), &[]);
        host.initialize(client).await;
        let names = host.tool_names().await;
        assert_eq!(names.len(), 10, "{client}: {names:?}");
        for name in &names {
            assert!(prefix + name.len() <= limit, "{client}: {name} is too long");
        }
        assert_eq!(
            text(
                &host
                    .call(
                        names.iter().find(|n| n.contains("echo")).unwrap(),
                        json!({"text": client})
                    )
                    .await
            ),
            client
        );
        host.close().await;
    }
}
