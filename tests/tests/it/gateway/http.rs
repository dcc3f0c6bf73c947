//! `lifeline serve` end to end: a real process serving the crashable stdio fixture at its
//! local Streamable HTTP endpoint, a token made with `lifeline serve token add`, and the
//! TypeScript SDK's StreamableHTTPClientTransport (`tests/peers/gateway_http_host.mjs`) and
//! the Python SDK's streamable_http_client (`tests/peers/gateway_http_host.py`) as hosts:
//! each lists and calls tools, survives the upstream dying under a call (that call fails at
//! once with UPSTREAM_LOST and ran once, the next one succeeds) and ends its session; the
//! TypeScript host also answers the server's sampling, elicitation and roots requests, which
//! reach it on its GET stream.
//! Raw requests check what is refused: no token or a wrong one (401), a foreign Host or
//! Origin (403). The token file is 0600 and the token appears in none of the output. A token
//! bound to a profile (`token add --profile`, checked against the config) opens `/mcp` as
//! that profile and is refused a server's path (403). A raw host whose POST connection breaks
//! mid-call resumes the stream with GET and `Last-Event-ID` and gets its answer, whether it
//! comes back before the answer or after; the call ran once and was not cancelled.

use super::config;
use super::sdk_host::{assert_survived, run_host_with};
use crate::cli::lifeline_bin;
use crate::peers::{repo, require, venv_python};
use crate::support::{PATIENCE, TempDirGuard, http_client, received, stdio_fixture, when_written};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// `lifeline serve token …` with the test's own history directory; its stdout.
fn token_command(history: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(lifeline_bin())
        .args(["serve", "token"])
        .args(args)
        .env("LIFELINE_HISTORY", history)
        .output()
        .expect("lifeline serve token runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(super) struct Served {
    child: tokio::process::Child,
    pub(super) port: u16,
}

/// `lifeline serve --config CONFIG --port 0`, its stderr in `stderr`, once it listens.
async fn serve(config: &Path, history: &Path, stderr: &Path) -> Served {
    serve_with(&[], config, history, stderr).await
}

/// `serve` with more arguments (`--no-auth`).
pub(super) async fn serve_with(
    args: &[&str],
    config: &Path,
    history: &Path,
    stderr: &Path,
) -> Served {
    let mut child = tokio::process::Command::new(lifeline_bin())
        .args(["serve", "--port", "0"])
        .args(args)
        .arg("--config")
        .arg(config)
        .env("LIFELINE_HISTORY", history)
        .env("LIFELINE_LOG", "debug")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(stderr).unwrap())
        .kill_on_drop(true)
        .spawn()
        .expect("lifeline serve starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.strip_prefix("lifeline serve: listening on http://127.0.0.1:")
            {
                return rest.trim().parse::<u16>().unwrap();
            }
        }
        panic!("lifeline serve ended without listening")
    })
    .await
    .expect("lifeline serve listens within 30 s");
    // The rest of stdout is drained, so the process never blocks on it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Served { child, port }
}

/// A served fixture with a client's token.
struct Setup {
    dir: TempDirGuard,
    fx: crate::support::StdioFixture,
    history: std::path::PathBuf,
    token: String,
    served: Served,
    url: String,
    stderr: std::path::PathBuf,
}

async fn setup(label: &str) -> Setup {
    let dir = TempDirGuard::new(label);
    let history = dir.path().join("data").join("history.db");
    let fx = stdio_fixture(&json!({}));
    let path = config(
        &dir,
        json!({ "fixture": { "command": fx.program, "args": fx.args,
            "reconnect": { "initialDelayMs": 10, "maxDelayMs": 50 } } }),
    );
    let printed = token_command(&history, &["add", "sdk-host"]);
    let token = token_command(&history, &["show", "sdk-host"])
        .trim()
        .to_owned();
    assert!(token.starts_with("lifeline_") && printed.contains(&token));
    let stderr = dir.path().join("serve.stderr");
    let served = serve(&path, &history, &stderr).await;
    let url = format!("http://127.0.0.1:{}/servers/fixture/mcp", served.port);
    Setup {
        dir,
        fx,
        history,
        token,
        served,
        url,
        stderr,
    }
}

/// Runs a host script (`program script URL TOKEN`) and returns the JSON line it printed.
async fn run_host(program: &Path, script: &Path, url: &str, token: &str) -> Value {
    run_host_with(program, script, &[url.as_ref(), token.as_ref()]).await
}

#[tokio::test]
async fn gateway_http_python_sdk_host_survives_an_upstream_crash() {
    let python = venv_python();
    let script = require(
        repo().join("tests/peers/gateway_http_host.py"),
        "the gateway HTTP host script (Python)",
    );
    let s = setup("gateway-http-py").await;
    let seen = run_host(&python, &script, &s.url, &s.token).await;
    assert_survived(&seen, &s.fx);
}

#[tokio::test]
async fn gateway_http_typescript_sdk_host_survives_an_upstream_crash() {
    let script = require(
        repo().join("tests/peers/gateway_http_host.mjs"),
        "the gateway HTTP host script",
    );
    let s = setup("gateway-http").await;
    let Setup {
        dir: _dir,
        fx,
        history,
        token,
        mut served,
        url,
        stderr,
    } = s;
    let tokens_file = history.parent().unwrap().join("gateway-tokens.json");
    assert!(
        tokens_file.exists(),
        "the tokens are kept beside the history"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&tokens_file)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the tokens file is private");
    }
    let seen = run_host(Path::new("node"), &script, &url, &token).await;
    assert_survived(&seen, &fx);
    assert!(
        seen["session"].as_str().is_some_and(|s| !s.is_empty()),
        "{seen}"
    );
    assert_eq!(seen["terminated"], true, "{seen}");
    for refused in ["noToken", "wrongToken"] {
        assert_eq!(seen[refused]["code"], 401, "{refused}: {seen}");
    }
    let told = seen["noToken"]["message"].as_str().unwrap_or_default();
    assert!(told.contains("lifeline serve token add"), "{told}");

    // What is refused, with raw requests.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}});
    let post = |headers: &[(&str, &str)]| {
        let mut req = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send()
    };
    let bearer = format!("Bearer {token}");
    let cases: [(&[(&str, &str)], u16); 5] = [
        (&[], 401),
        (&[("authorization", "Bearer lifeline_wrong")], 401),
        (
            &[("authorization", &bearer), ("host", "evil.example.com")],
            403,
        ),
        (
            &[
                ("authorization", &bearer),
                ("origin", "http://evil.example.com"),
            ],
            403,
        ),
        (&[("authorization", &bearer)], 200),
    ];
    for (headers, status) in cases {
        let r = post(headers).await.unwrap();
        assert_eq!(r.status().as_u16(), status, "{headers:?}");
        let body = r.text().await.unwrap();
        assert!(!body.contains(&token), "the token is never echoed");
    }

    // Stopped like a service: SIGTERM, exit 0.
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process};
        let pid = i32::try_from(served.child.id().unwrap()).unwrap();
        kill_process(Pid::from_raw(pid).unwrap(), Signal::TERM).expect("SIGTERM to our child");
        let status = tokio::time::timeout(Duration::from_secs(30), served.child.wait())
            .await
            .expect("lifeline serve stops within 30 s on SIGTERM")
            .unwrap();
        assert!(status.success(), "{status:?}");
    }
    // Windows has no SIGTERM to send.
    #[cfg(not(unix))]
    let _ = served.child.kill().await;
    drop(served);
    let logged = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        logged.contains("sdk-host"),
        "the client is named in the log"
    );
    assert!(!logged.contains(&token), "the token is never logged");
    assert!(
        !logged.contains(&token[9..20]),
        "no part of the token is logged"
    );
}

#[tokio::test]
async fn gateway_http_serve_says_in_one_line_that_its_port_is_taken() {
    let dir = TempDirGuard::new("gateway-http-port-taken");
    let history = dir.path().join("data").join("history.db");
    let fx = stdio_fixture(&json!({}));
    let path = config(
        &dir,
        json!({ "fixture": { "command": fx.program, "args": fx.args } }),
    );
    // Another program listening on the port `lifeline serve` is told to take.
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = taken.local_addr().unwrap().port();
    let run = tokio::process::Command::new(lifeline_bin())
        .args(["serve", "--port", &port.to_string(), "--config"])
        .arg(&path)
        .env("LIFELINE_HISTORY", &history)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("lifeline serve ends within 30 s")
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<_> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        lines,
        [format!(
            "lifeline serve: port 127.0.0.1:{port} is in use by another program: pick another \
             with --port (0: any free port), or quit that program"
        )],
        "{stderr}"
    );
    drop(taken);
}

#[tokio::test]
async fn gateway_http_a_token_bound_to_a_profile_opens_it_alone() {
    let dir = TempDirGuard::new("gateway-http-bound");
    let history = dir.path().join("data").join("history.db");
    let fx = stdio_fixture(&json!({}));
    let path = dir.path().join("config.json");
    let file = json!({
        "lifeline": { "profiles": { "coding": { "servers": ["fixture"] } } },
        "mcpServers": { "fixture": { "command": fx.program, "args": fx.args } },
    });
    std::fs::write(&path, file.to_string()).unwrap();
    let config = path.to_str().unwrap();

    // A profile the config lacks, or a name it could not have, is refused (exit 2).
    for (profile, told) in [
        (
            "nope",
            "the config has no profile `nope` (its profiles: default, coding)",
        ),
        ("a/b", "\"a/b\" is not a profile name"),
    ] {
        let out = std::process::Command::new(lifeline_bin())
            .args(["serve", "token", "add", "cursor", "--profile", profile])
            .args(["--config", config])
            .env("LIFELINE_HISTORY", &history)
            .output()
            .expect("lifeline serve token runs");
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(told), "{stderr}");
    }
    let add = ["add", "cursor", "--profile", "coding", "--config", config];
    let printed = token_command(&history, &add);
    assert!(
        printed.starts_with("Token for `cursor`, bound to profile `coding`"),
        "{printed}"
    );
    assert!(
        printed.contains("http://127.0.0.1:7424/profiles/coding/mcp"),
        "{printed}"
    );
    let listed = token_command(&history, &["list"]);
    assert!(listed.contains(", bound to profile coding)"), "{listed}");
    let token = token_command(&history, &["show", "cursor"])
        .trim()
        .to_owned();

    let served = serve(&path, &history, &dir.path().join("serve.stderr")).await;
    let port = served.port;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let post = |url: String, session: Option<&str>, body: Value| {
        let mut req = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("authorization", format!("Bearer {token}"))
            .body(body.to_string());
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        req.send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}});

    // `/mcp` is profile `coding` for this token: the fixture's tools, namespaced.
    let mcp = format!("http://127.0.0.1:{port}/mcp");
    let r = post(mcp.clone(), None, init.clone()).await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let answer: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "lifeline",
        "{answer}"
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let r = post(mcp, Some(&session), list).await.unwrap();
    let got: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    let tools = got["result"]["tools"].as_array().expect("a tool list");
    assert!(!tools.is_empty(), "{got}");
    for t in tools {
        let name = t["name"].as_str().unwrap();
        assert!(name.starts_with("fixture__"), "{got}");
    }

    // A server's own path is refused, naming the profile and its URL.
    let r = post(
        format!("http://127.0.0.1:{port}/servers/fixture/mcp"),
        None,
        init,
    )
    .await
    .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let body: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(
        body["error"]["message"],
        format!(
            "the token of `cursor` is bound to profile `coding` and opens only that, not \
             `fixture`: use http://127.0.0.1:{port}/profiles/coding/mcp"
        ),
        "{body}"
    );
    drop(served);
}

/// Reads `r`'s body until what came contains `wanted` (or, with `None`, until it ends).
async fn read_stream(r: &mut reqwest::Response, wanted: Option<&str>) -> String {
    let mut got = String::new();
    let read = async {
        while wanted.is_none_or(|w| !got.contains(w)) {
            match r.chunk().await.unwrap() {
                Some(chunk) => got.push_str(&String::from_utf8_lossy(&chunk)),
                None if wanted.is_none() => return,
                None => panic!("the stream ended before {wanted:?}: {got:?}"),
            }
        }
    };
    tokio::time::timeout(PATIENCE, read)
        .await
        .unwrap_or_else(|_| panic!("{wanted:?} within {PATIENCE:?}; came: {got:?}"));
    got
}

/// The ids of an event stream's events, in order.
fn event_ids(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect()
}

/// The JSON-RPC messages of an event stream (a priming event's empty data is none).
fn messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn gateway_http_a_host_whose_stream_broke_resumes_it_and_gets_its_answer() {
    let s = setup("gateway-http-resume").await;
    let http = http_client();
    let bearer = format!("Bearer {}", s.token);
    let post = |session: Option<&str>, body: Value| {
        let mut req = http
            .post(&s.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", &bearer)
            .body(body.to_string());
        if let Some(session) = session {
            req = req.header("mcp-session-id", session);
        }
        req.send()
    };
    let resume = |session: &str, last: &str| {
        http.get(&s.url)
            .header("accept", "text/event-stream")
            .header("authorization", &bearer)
            .header("mcp-session-id", session)
            .header("last-event-id", last)
            .send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}});
    let r = post(None, init).await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(Some(&session), initialized)
            .await
            .unwrap()
            .status()
            .as_u16(),
        202
    );
    let slow = |id: i64, ms: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "slow", "arguments": {"ms": ms}}})
    };

    // The host drops its POST while the call runs, and comes back at once: the answer
    // comes on the resumed stream.
    let mut r = post(Some(&session), slow(2, 1500)).await.unwrap();
    let primed = read_stream(&mut r, Some("data: \n\n")).await;
    assert!(
        primed.starts_with("id: ") && primed.contains("\nretry: 1000\n"),
        "{primed}"
    );
    let last = event_ids(&primed)[0].to_owned();
    let stream = last
        .strip_suffix("-0")
        .expect("the priming event is place 0");
    drop(r);
    let mut resumed = resume(&session, &last).await.unwrap();
    assert_eq!(resumed.status().as_u16(), 200);
    let rest = read_stream(&mut resumed, None).await;
    assert_eq!(event_ids(&rest), [format!("{stream}-1")], "{rest}");
    let answer = &messages(&rest)[0];
    assert_eq!(answer["id"], 2, "{rest}");
    assert_eq!(answer["result"]["content"][0]["text"], "slept 1500 ms");

    // The host is still away when the answer comes: it is kept, and replayed on the resume.
    let kept = "a request's event stream";
    let logged = || std::fs::read_to_string(&s.stderr).unwrap_or_default();
    let before = logged().matches(kept).count();
    let mut r = post(Some(&session), slow(3, 800)).await.unwrap();
    let primed = read_stream(&mut r, Some("data: \n\n")).await;
    let last = event_ids(&primed)[0].to_owned();
    drop(r);
    let noticed = when_written(s.dir.path(), || {
        let log = logged();
        (log.matches(kept).count() > before && log.contains("lost its connection")).then_some(())
    })
    .await;
    assert!(
        noticed.is_some(),
        "lifeline serve never logged keeping the answer for a resume; its log:\n{}",
        logged()
    );
    let mut resumed = resume(&session, &last).await.unwrap();
    assert_eq!(resumed.status().as_u16(), 200);
    let rest = read_stream(&mut resumed, None).await;
    let answer = &messages(&rest)[0];
    assert_eq!(answer["id"], 3, "{rest}");
    assert_eq!(answer["result"]["content"][0]["text"], "slept 800 ms");

    // Delivered, the stream is gone: its id is refused (400, not 404), and so is one of no
    // stream; the session lives on.
    for id in [last.as_str(), "123456789-0"] {
        let r = resume(&session, id).await.unwrap();
        assert_eq!(r.status().as_u16(), 400, "{id}");
    }
    let ping = json!({"jsonrpc": "2.0", "id": 4, "method": "ping"});
    assert_eq!(
        post(Some(&session), ping).await.unwrap().status().as_u16(),
        200
    );
    // Each call ran once, and no broken connection cancelled it.
    let log = s.fx.log_entries();
    assert_eq!(received(&log, "tools/call").len(), 2);
    assert!(received(&log, "notifications/cancelled").is_empty());
}
