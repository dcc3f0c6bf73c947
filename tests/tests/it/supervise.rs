//! The supervisor end to end, through the real `lifeline` binary: `watch --json` (the event
//! stream), `check` and `call SERVER`, against real fixture processes and loopback HTTP
//! servers, in real time with small configured delays. Each test writes its config to a
//! temp dir, reads the JSON lines `watch` prints, and waits on events (an event line, a
//! fixture log entry, a process exit), never on sleeps.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::cli::{lifeline, lifeline_bin};
use crate::support::{self, PATIENCE, StdioFixture, TempDirGuard, is_running, write_config};

/// Every tool of the fixture, in its order.
const TOOLS: [&str; 10] = [
    "echo",
    "add",
    "slow",
    "progress",
    "fail",
    "crash",
    "stderr",
    "list_changed",
    "log",
    "ask",
];

/// How long a `watch` may take to exit after SIGTERM: disposal is bounded at 10 s, and a
/// process that ignores SIGTERM costs the 2 s + 2 s shutdown sequence.
const EXIT_PATIENCE: Duration = Duration::from_secs(20);

/// A state event's `delay_ms` is the wait that was decided, but its `at` is stamped a moment
/// after the decision (a few ms on a loaded machine), so `next_attempt_at - at` may fall
/// short of `delay_ms` by this much (never exceed it).
const RENDER_LAG_MS: i64 = 20;

// # Configs

/// Small real-time delays: 20 ms doubling to 100 ms, 3 attempts a round, quarantine
/// 100 → 150 → 200 ms. The stability window is the backoff cap (100 ms).
fn fast_reconnect() -> Value {
    json!({
        "initialDelayMs": 20,
        "maxDelayMs": 100,
        "maxAttempts": 3,
        "quarantineMs": [100, 150, 200]
    })
}

/// `base` with the keys of `extra` added (or replaced).
fn with(mut base: Value, extra: Value) -> Value {
    let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) else {
        panic!("with() merges objects");
    };
    b.extend(e);
    base
}

/// A stdio server entry that starts `fixture` (every generation appends to its one log).
fn stdio_server(fixture: &StdioFixture) -> Value {
    json!({
        "command": fixture.program,
        "args": fixture.args,
        "reconnect": fast_reconnect(),
    })
}

fn http_server(url: &str) -> Value {
    json!({"type": "http", "url": url, "reconnect": fast_reconnect()})
}

fn crash_on(method: &str) -> Value {
    json!({"method": method, "action": {"kind": "crash", "code": 3}})
}

fn http_status_on_initialize(status: u16, extra: Value) -> Value {
    let action = with(json!({"kind": "http_status", "status": status}), extra);
    json!({"method": "initialize", "action": action})
}

/// A server behind auth: every request refused with `status`, the first one included
/// (under `auto` that is the stateless revision's `server/discover`).
fn http_status_on_every_request(status: u16, extra: Value) -> Value {
    let action = with(json!({"kind": "http_status", "status": status}), extra);
    json!({ "action": action })
}

// # Running `lifeline watch --json`

/// A running `lifeline watch --json`: its stdout is read as it is printed, one event a line.
struct Watch {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    /// stdout as printed so far, and each line parsed.
    stdout: String,
    events: Vec<Value>,
    stderr: tokio::task::JoinHandle<String>,
}

/// What a finished `watch` printed, and how it exited.
#[derive(Debug)]
struct WatchRun {
    code: i32,
    events: Vec<Value>,
    stdout: String,
    stderr: String,
}

impl Watch {
    /// Starts `lifeline watch --json --config CONFIG --for LIMIT`. `limit` bounds the run;
    /// tests that wait for something stop it with SIGTERM instead (`stop`).
    fn start(config: &Path, limit: &str) -> Watch {
        Watch::start_with_env(config, limit, &[])
    }

    fn start_with_env(config: &Path, limit: &str, env: &[(&str, &str)]) -> Watch {
        let mut child = Command::new(lifeline_bin())
            .args(["watch", "--json", "--for", limit, "--config"])
            .arg(config)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning lifeline watch");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut stdout = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = stdout.next_line().await {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut pipe = child.stderr.take().expect("piped stderr");
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text).await;
            text
        });
        Watch {
            child,
            lines,
            stdout: String::new(),
            events: Vec::new(),
            stderr,
        }
    }

    fn push(&mut self, line: &str) {
        let event = serde_json::from_str(line).unwrap_or_else(|e| {
            panic!("watch --json printed a line that is not JSON ({e}): {line}")
        });
        self.events.push(event);
        self.stdout.push_str(line);
        self.stdout.push('\n');
    }

    /// The first event (from the start of the run) satisfying `pred`, waiting for it.
    async fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        let mut seen = 0;
        loop {
            if let Some(e) = self.events[seen..].iter().find(|e| pred(e)) {
                return e.clone();
            }
            seen = self.events.len();
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(line)) => self.push(&line),
                Ok(None) => panic!("watch exited before {what}; events:\n{}", self.dump()),
                Err(_) => panic!(
                    "watch printed no {what} within {PATIENCE:?}; events:\n{}",
                    self.dump()
                ),
            }
        }
    }

    fn dump(&self) -> String {
        self.events
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Sends SIGTERM (as a service manager would) and collects the run.
    async fn stop(self) -> WatchRun {
        let pid = self.child.id().expect("watch is still running");
        send_signal(pid, "TERM").await;
        self.finish().await
    }

    /// Waits for the process to exit by itself (its `--for` ran out, or it was signalled).
    async fn finish(mut self) -> WatchRun {
        let status = tokio::time::timeout(EXIT_PATIENCE, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("watch did not exit within {EXIT_PATIENCE:?}"))
            .expect("waiting for watch");
        while let Some(line) = self.lines.recv().await {
            self.push(&line);
        }
        let stderr = self.stderr.await.expect("the stderr reader");
        WatchRun {
            code: status.code().unwrap_or(-1),
            events: self.events,
            stdout: self.stdout,
            stderr,
        }
    }
}

async fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .await
        .expect("running kill");
    assert!(status.success(), "kill -{signal} {pid}: {status}");
}

// # Reading events

fn of<'a>(events: &'a [Value], server: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["server"] == server).collect()
}

fn typed<'a>(events: &'a [Value], server: &str, kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["server"] == server && e["type"] == kind)
        .collect()
}

fn states<'a>(events: &'a [Value], server: &str) -> Vec<&'a Value> {
    typed(events, server, "state")
}

/// One state event as a short label: `connecting(spawn)`, `retrying 2/3`,
/// `quarantined 1`, `retired auth`, `ready`.
fn label(e: &Value) -> String {
    let state = e["state"].as_str().unwrap_or("?");
    match state {
        "connecting" => format!("connecting({})", e["stage"].as_str().unwrap_or("?")),
        "retrying" | "reconnecting" => format!("{state} {}/{}", e["attempt"], e["max_attempts"]),
        "quarantined" => format!("quarantined {}", e["quarantine_level"]),
        "retired" => format!("retired {}", e["reason"].as_str().unwrap_or("?")),
        _ => state.to_owned(),
    }
}

/// The state labels of `server`, in order.
fn labels(events: &[Value], server: &str) -> Vec<String> {
    states(events, server).into_iter().map(label).collect()
}

/// The state labels with the stages of each attempt folded into one `connecting`.
fn outline(events: &[Value], server: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in states(events, server) {
        let l = if e["state"] == "connecting" {
            "connecting".to_owned()
        } else {
            label(e)
        };
        if l == "connecting" && out.last().is_some_and(|p| p == "connecting") {
            continue;
        }
        out.push(l);
    }
    out
}

fn is_state(server: &str, state: &str) -> impl Fn(&Value) -> bool {
    move |e| e["server"] == server && e["type"] == "state" && e["state"] == state
}

/// `at` as milliseconds since the epoch; panics unless it is RFC 3339 UTC with
/// milliseconds ("2026-11-29T17:05:20.123Z"), the form events.md promises.
fn epoch_ms(at: &str) -> i64 {
    let b = at.as_bytes();
    let shape = b.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z';
    assert!(shape, "not RFC 3339 UTC with milliseconds: {at:?}");
    let n = |from: usize, to: usize| -> i64 {
        at[from..to]
            .parse()
            .unwrap_or_else(|_| panic!("not RFC 3339: {at:?}"))
    };
    let (y, mo, d) = (n(0, 4), n(5, 7), n(8, 10));
    let (h, mi, s, ms) = (n(11, 13), n(14, 16), n(17, 19), n(20, 23));
    assert!(
        (1..=12).contains(&mo) && (1..=31).contains(&d) && h < 24 && mi < 60 && s < 61,
        "not a valid time: {at:?}"
    );
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((mo + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    ((days * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms
}

fn at_ms(e: &Value) -> i64 {
    epoch_ms(e["at"].as_str().unwrap_or_else(|| panic!("no `at` in {e}")))
}

fn now_ms() -> i64 {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(d.as_millis()).unwrap()
}

/// For every wait (retrying, reconnecting, quarantined) of `server` that was followed by
/// an attempt, the attempt did not start before the announced `next_attempt_at` (both to
/// the millisecond). Returns how many waits were checked.
fn assert_no_early_attempts(events: &[Value], server: &str) -> usize {
    let states = states(events, server);
    let mut checked = 0;
    for pair in states.windows(2) {
        let (wait, next) = (pair[0], pair[1]);
        if !matches!(
            wait["state"].as_str(),
            Some("retrying" | "reconnecting" | "quarantined")
        ) || next["state"] != "connecting"
        {
            continue;
        }
        let announced = epoch_ms(
            wait["next_attempt_at"]
                .as_str()
                .unwrap_or_else(|| panic!("a wait without next_attempt_at: {wait}")),
        );
        let started = at_ms(next);
        assert!(
            started >= announced,
            "attempt at {} began {} ms before the announced next_attempt_at {}:\n{wait}\n{next}",
            next["at"],
            announced - started,
            wait["next_attempt_at"]
        );
        // The announcement is `at` + delay_ms.
        let delay = wait["delay_ms"].as_i64().expect("delay_ms");
        let off = announced - at_ms(wait) - delay;
        assert!(
            (-RENDER_LAG_MS..=1).contains(&off),
            "next_attempt_at is not at + delay_ms ({off} ms off): {wait}"
        );
        checked += 1;
    }
    checked
}

fn started_pids(log: &Path) -> Vec<u64> {
    support::events(&support::read_log(log), "started")
        .iter()
        .map(|e| e["pid"].as_u64().expect("a pid"))
        .collect()
}

fn names(tools_event: &Value) -> Vec<&str> {
    tools_event["names"]
        .as_array()
        .unwrap_or_else(|| panic!("no names in {tools_event}"))
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect()
}

// # An HTTP fixture this module starts itself, on a chosen port (to restart it there)

struct PortFixture {
    child: Child,
    url: String,
}

async fn http_fixture_on(port: u16, script: &Value, log: &Path) -> PortFixture {
    let mut child = Command::new(support::fixture_bin())
        .args([
            "http",
            "--port",
            &port.to_string(),
            "--script",
            &script.to_string(),
            "--log",
        ])
        .arg(log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawning lifeline-fixture http");
    let stdout = child.stdout.take().expect("piped stdout");
    let line = tokio::time::timeout(PATIENCE, BufReader::new(stdout).lines().next_line())
        .await
        .expect("the fixture's LISTENING line")
        .expect("reading the fixture's stdout")
        .unwrap_or_else(|| panic!("the fixture exited before listening on port {port}"));
    let url = line
        .strip_prefix("LISTENING ")
        .unwrap_or_else(|| panic!("expected `LISTENING <url>`, got {line:?}"))
        .to_owned();
    PortFixture { child, url }
}

fn port_of(url: &str) -> u16 {
    url.trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {url}"))
}

/// A loopback port nobody listens on (bound once by the OS, then released).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding an ephemeral port");
    listener.local_addr().unwrap().port()
}

// # 1. The event stream

#[tokio::test]
async fn seq_is_gap_free_across_servers_and_every_event_is_v1_with_an_rfc3339_at() {
    let dir = TempDirGuard::new("sup-seq");
    let stable = support::stdio_fixture(&json!({}));
    let looping = support::stdio_fixture(&json!({"rules": [crash_on("initialize")]}));
    let http = support::http_fixture(json!({})).await;
    let config = write_config(
        &dir,
        json!({
            "stable": stdio_server(&stable),
            "looping": stdio_server(&looping),
            "remote": http_server(&http.url),
        }),
    );
    let before = now_ms();
    let mut watch = Watch::start(&config, "30s");
    watch
        .wait_for("stable ready", is_state("stable", "ready"))
        .await;
    watch
        .wait_for("remote ready", is_state("remote", "ready"))
        .await;
    watch
        .wait_for("looping gave up", is_state("looping", "gave_up"))
        .await;
    let run = watch.stop().await;
    let after = now_ms();

    assert_eq!(run.code, 0, "{run:?}");
    let seqs: Vec<u64> = run
        .events
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "seq must be 1, 2, 3, … without gaps");
    for server in ["stable", "looping", "remote"] {
        assert!(!of(&run.events, server).is_empty(), "no events of {server}");
    }
    let mut last = i64::MIN;
    for e in &run.events {
        assert_eq!(e["v"], 1, "{e}");
        for key in ["seq", "at", "server", "generation", "type"] {
            assert!(!e[key].is_null(), "event without {key}: {e}");
        }
        let at = at_ms(e);
        assert!(
            (before - 1..=after + 1).contains(&at),
            "`at` is not the current UTC time: {e}"
        );
        assert!(at >= last, "`at` went backwards at {e}");
        last = at;
        let kind = e["type"].as_str().unwrap();
        assert!(
            ["state", "failure", "tools", "call", "round_trip"].contains(&kind),
            "unknown type: {e}"
        );
    }
}

// # 2. A stable server

#[tokio::test]
async fn a_stable_stdio_server_connects_in_stages_lists_ten_tools_and_stays_on_one_process() {
    let dir = TempDirGuard::new("sup-stable");
    let fixture = support::stdio_fixture(&json!({}));
    let server = with(
        stdio_server(&fixture),
        json!({"timeouts": {"pingIntervalMs": 1000}}),
    );
    let config = write_config(&dir, json!({ "stable": server }));
    let mut watch = Watch::start(&config, "30s");
    // A health ping answered: the connection is used, and nothing reconnects.
    let ping = watch
        .wait_for("a round trip", |e| e["type"] == "round_trip")
        .await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(ping["generation"], 1);
    assert_eq!(
        labels(&run.events, "stable"),
        [
            "connecting(spawn)",
            "connecting(initialize)",
            "connecting(list_tools)",
            "ready",
            "stopping",
        ]
    );
    let tools = typed(&run.events, "stable", "tools");
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0]["count"], 10);
    assert_eq!(tools[0]["stale"], false);
    assert_eq!(names(tools[0]), TOOLS);
    for e in of(&run.events, "stable") {
        assert_eq!(e["generation"], 1, "{e}");
        if e["type"] == "state" {
            assert_eq!(e["quarantine_level"], 0, "{e}");
            assert!(e["cause"].is_null(), "{e}");
        }
        assert_ne!(e["type"], "failure", "{e}");
    }
    let connecting = &states(&run.events, "stable")[0];
    assert_eq!(
        (&connecting["attempt"], &connecting["max_attempts"]),
        (&json!(1), &json!(3))
    );
    assert_eq!(started_pids(&fixture.log).len(), 1, "exactly one process");
}

// # 3. A crash loop climbs the ladder

#[tokio::test]
async fn a_crash_loop_climbs_retrying_quarantine_1_2_3_then_gives_up_after_six_processes() {
    let dir = TempDirGuard::new("sup-loop");
    let fixture = support::stdio_fixture(&json!({"rules": [crash_on("tools/list")]}));
    let config = write_config(&dir, json!({ "loop": stdio_server(&fixture) }));
    let mut watch = Watch::start(&config, "30s");
    watch.wait_for("gave_up", is_state("loop", "gave_up")).await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        outline(&run.events, "loop"),
        [
            "connecting",
            "retrying 1/3",
            "connecting",
            "retrying 2/3",
            "connecting",
            "quarantined 1",
            "connecting",
            "quarantined 2",
            "connecting",
            "quarantined 3",
            "connecting",
            "gave_up",
            "stopping",
        ]
    );
    // Every generation appended to one log: three attempts, then one probe per level.
    assert_eq!(started_pids(&fixture.log).len(), 6, "3 attempts + 3 probes");
    let states = states(&run.events, "loop");
    let last = states
        .iter()
        .map(|e| e["generation"].as_u64().unwrap())
        .max();
    assert_eq!(last, Some(6));
    // Each attempt got as far as listing tools, where the fixture crashed.
    let failures = typed(&run.events, "loop", "failure");
    assert_eq!(failures.len(), 6, "one failure per generation");
    for (i, f) in failures.iter().enumerate() {
        assert_eq!(f["failure"]["stage"], "list_tools", "{f}");
        assert_eq!(f["failure"]["exit_code"], 3, "{f}");
        assert_eq!(f["failure"]["generation"], i as u64 + 1, "{f}");
    }
    // Probes say so.
    let probes: Vec<u64> = states
        .iter()
        .filter(|e| e["reason"] == "probe")
        .map(|e| e["generation"].as_u64().unwrap())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(probes, [4, 5, 6]);
    // The waits are the configured ones: 20 ms and 40 ms ±20 %, then the quarantine
    // cooldowns exactly (announced as what remains, so up to RENDER_LAG_MS less).
    let delays: Vec<(String, i64)> = states
        .iter()
        .filter(|e| !e["delay_ms"].is_null())
        .map(|e| (label(e), e["delay_ms"].as_i64().unwrap()))
        .collect();
    let bounds = [
        ("retrying 1/3", 16, 24),
        ("retrying 2/3", 32, 48),
        ("quarantined 1", 100, 100),
        ("quarantined 2", 150, 150),
        ("quarantined 3", 200, 200),
    ];
    assert_eq!(delays.len(), bounds.len(), "{delays:?}");
    for ((label, delay), (want, low, high)) in delays.iter().zip(bounds) {
        assert_eq!(label, want);
        assert!(
            (low - RENDER_LAG_MS..=high).contains(delay),
            "{label}: delay_ms {delay} outside {low}..={high} (less {RENDER_LAG_MS} ms lag)"
        );
    }
    assert_eq!(assert_no_early_attempts(&run.events, "loop"), 5);
    // gave_up drops the tools (there were none) and keeps the cause.
    let gave_up = states.iter().find(|e| e["state"] == "gave_up").unwrap();
    assert_eq!(gave_up["quarantine_level"], 3);
    assert_eq!(gave_up["cause"]["exit_code"], 3, "{gave_up}");
    assert!(gave_up["next_attempt_at"].is_null());
}

/// A crash loop whose connects succeed for a moment: each process answers initialize and
/// tools/list (ready), then exits on its first health ping a second later, inside the 5 s
/// stability window. A probe that reaches ready and is lost like that is a failed probe:
/// one round of 3 attempts and one probe per level, 6 processes, exactly as when the
/// connects fail outright. (Counted as fresh rounds it was 3 per level, 12 processes.)
#[tokio::test]
async fn a_crash_loop_that_is_ready_for_a_moment_climbs_the_ladder_in_six_processes() {
    let dir = TempDirGuard::new("sup-brief");
    let fixture = support::stdio_fixture(&json!({
        "rules": [{"method": "ping", "action": {"kind": "crash", "code": 5}}]
    }));
    let server = with(
        stdio_server(&fixture),
        json!({
            "reconnect": {"initialDelayMs": 20, "maxDelayMs": 5000, "maxAttempts": 3,
                          "quarantineMs": [100, 150, 200]},
            "timeouts": {"pingIntervalMs": 1000}
        }),
    );
    let config = write_config(&dir, json!({ "brief": server }));
    let mut watch = Watch::start(&config, "60s");
    // Each process lives about a second: wait for them one at a time (each wait has its own
    // patience), then for gave_up or, had a probe started a fresh round, a 7th generation.
    for generation in 1..=6u64 {
        let what = format!("generation {generation} ready");
        watch
            .wait_for(&what, |e| {
                is_state("brief", "ready")(e) && e["generation"] == generation
            })
            .await;
    }
    let beyond = |e: &Value| e["server"] == "brief" && e["generation"].as_u64() > Some(6);
    watch
        .wait_for("gave_up or a 7th generation", |e| {
            is_state("brief", "gave_up")(e) || beyond(e)
        })
        .await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        outline(&run.events, "brief"),
        [
            "connecting",
            "ready",
            "reconnecting 1/3",
            "connecting",
            "ready",
            "reconnecting 2/3",
            "connecting",
            "ready",
            "quarantined 1",
            "connecting",
            "ready",
            "quarantined 2",
            "connecting",
            "ready",
            "quarantined 3",
            "connecting",
            "ready",
            "gave_up",
            "stopping",
        ]
    );
    assert_eq!(started_pids(&fixture.log).len(), 6, "3 attempts + 3 probes");
    let probes: std::collections::BTreeSet<u64> = states(&run.events, "brief")
        .iter()
        .filter(|e| e["reason"] == "probe")
        .map(|e| e["generation"].as_u64().unwrap())
        .collect();
    assert_eq!(probes.into_iter().collect::<Vec<_>>(), [4, 5, 6]);
    let failures = typed(&run.events, "brief", "failure");
    assert_eq!(failures.len(), 6, "one loss per generation");
    for f in failures {
        assert_eq!(f["failure"]["exit_code"], 5, "{f}");
    }
}

// # 4. 401 retires at once

#[tokio::test]
async fn a_401_retires_auth_after_exactly_one_request_and_watch_keeps_running() {
    let dir = TempDirGuard::new("sup-401");
    let fixture = support::http_fixture(json!({
        "rules": [http_status_on_every_request(401, json!({"www_authenticate": "Bearer"}))]
    }))
    .await;
    let config = write_config(&dir, json!({ "locked": http_server(&fixture.url) }));
    // Retired is final: the event says no attempt is scheduled (`next_attempt_at` null,
    // below), and the policy's tests show none comes (supervisor/tests.rs, and the paused
    // hour of `a_401_at_connect_retires_after_one_attempt`). So the run ends once the
    // server retires, rather than after a window of real time in which a retry might show.
    let mut watch = Watch::start(&config, "30s");
    watch
        .wait_for("retired", is_state("locked", "retired"))
        .await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        labels(&run.events, "locked"),
        [
            "connecting(connect)",
            "connecting(discover)",
            "retired auth",
            "stopping"
        ]
    );
    let retired = states(&run.events, "locked")
        .into_iter()
        .find(|e| e["state"] == "retired")
        .unwrap();
    assert_eq!(retired["cause"]["kind"], "auth", "{retired}");
    assert_eq!(retired["cause"]["status"], 401, "{retired}");
    assert_eq!(retired["cause"]["method"], "POST", "{retired}");
    assert_eq!(retired["cause"]["url_path"], "/mcp", "{retired}");
    assert!(retired["next_attempt_at"].is_null(), "{retired}");
    let requests = support::events(&fixture.log_entries(), "received");
    assert_eq!(requests.len(), 1, "exactly one request: {requests:?}");
    assert_eq!(requests[0]["rpc_method"], "server/discover");
    assert_eq!(typed(&run.events, "locked", "failure").len(), 1);
}

// # 5. A missing command

#[tokio::test]
async fn a_missing_command_is_retired_config_without_retries_naming_the_command() {
    let dir = TempDirGuard::new("sup-enoent");
    let command = "lifeline-no-such-command-9f3e";
    let server = json!({"command": command, "args": ["x"], "reconnect": fast_reconnect()});
    let config = write_config(&dir, json!({ "missing": server }));
    // Retired is final (see the 401 test above): the run ends once the server retires;
    // the failure count below shows no second attempt came before it.
    let mut watch = Watch::start(&config, "30s");
    watch
        .wait_for("retired", is_state("missing", "retired"))
        .await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        labels(&run.events, "missing"),
        ["connecting(spawn)", "retired config", "stopping"]
    );
    let failures = typed(&run.events, "missing", "failure");
    assert_eq!(failures.len(), 1, "no retries: {failures:?}");
    let f = &failures[0]["failure"];
    assert_eq!(f["kind"], "spawn", "{f}");
    assert_eq!(f["stage"], "spawn", "{f}");
    let message = f["message"].as_str().unwrap();
    assert!(message.contains(command), "{message}");
    assert!(message.contains("command not found"), "{message}");
    assert!(
        message.contains("PATH="),
        "shows the PATH searched: {message}"
    );
}

// # 6. Retry-After

#[tokio::test]
async fn retry_after_on_initialize_is_waited_exactly_before_the_second_attempt() {
    let dir = TempDirGuard::new("sup-429");
    let rule = with(
        http_status_on_initialize(429, json!({"retry_after": "1"})),
        json!({"nth": 1}),
    );
    let fixture = support::http_fixture(json!({ "rules": [rule] })).await;
    let config = write_config(&dir, json!({ "limited": http_server(&fixture.url) }));
    let mut watch = Watch::start(&config, "30s");
    watch.wait_for("ready", is_state("limited", "ready")).await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        outline(&run.events, "limited"),
        [
            "connecting",
            "retrying 1/3",
            "connecting",
            "ready",
            "stopping"
        ]
    );
    let retrying = states(&run.events, "limited")
        .into_iter()
        .find(|e| e["state"] == "retrying")
        .unwrap();
    assert_eq!(retrying["cause"]["status"], 429, "{retrying}");
    assert_eq!(retrying["cause"]["kind"], "rate_limited", "{retrying}");
    assert_eq!(retrying["cause"]["retry_after_ms"], 1000, "{retrying}");
    // Exactly 1 s, not jittered (announced as what remains when the event is rendered).
    let delay = retrying["delay_ms"].as_i64().unwrap();
    assert_eq!(
        delay, 1000,
        "the announced wait is exactly Retry-After: {retrying}"
    );
    assert_eq!(assert_no_early_attempts(&run.events, "limited"), 1);

    let initializes = support::received(&fixture.log_entries(), "initialize");
    assert_eq!(initializes.len(), 2, "{initializes:?}");
    let gap = initializes[1]["t_ms"].as_i64().unwrap() - initializes[0]["t_ms"].as_i64().unwrap();
    assert!(
        gap >= 1000,
        "the second initialize came {gap} ms after the first"
    );
}

// # 7. Disabled

#[tokio::test]
async fn a_disabled_server_is_never_started() {
    let dir = TempDirGuard::new("sup-disabled");
    let fixture = support::stdio_fixture(&json!({}));
    let live = support::stdio_fixture(&json!({}));
    let config = write_config(
        &dir,
        json!({
            "off": with(stdio_server(&fixture), json!({"disabled": true})),
            "on": stdio_server(&live),
        }),
    );
    let mut watch = Watch::start(&config, "30s");
    watch
        .wait_for("off disabled", is_state("off", "disabled"))
        .await;
    // The other server getting all the way to ready is the window in which `off` could
    // have started too.
    watch.wait_for("on ready", is_state("on", "ready")).await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(labels(&run.events, "off"), ["disabled", "stopping"]);
    assert!(
        of(&run.events, "off").iter().all(|e| e["type"] == "state"),
        "{:?}",
        of(&run.events, "off")
    );
    assert!(
        !fixture.log.exists(),
        "the disabled server's process ran: {:?}",
        support::read_log(&fixture.log)
    );
    assert_eq!(started_pids(&live.log).len(), 1);
}

// # 8. Disposal outlives a server that ignores SIGTERM

#[tokio::test]
async fn a_server_that_ignores_sigterm_is_gone_when_watch_exits() {
    let dir = TempDirGuard::new("sup-stubborn");
    let fixture = support::stdio_fixture(&json!({"ignore_sigterm": true, "on_stdin_eof": "stay"}));
    let config = write_config(&dir, json!({ "stubborn": stdio_server(&fixture) }));
    let mut watch = Watch::start(&config, "30s");
    watch.wait_for("ready", is_state("stubborn", "ready")).await;
    let started = fixture
        .wait_for_log("started", |e| e["event"] == "started")
        .await;
    let pid = u32::try_from(started["pid"].as_u64().expect("a pid")).unwrap();
    assert!(is_running(pid), "the server is running while ready");
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    assert!(!is_running(pid), "pid {pid} outlived `lifeline watch`");
    let log = fixture.log_entries();
    assert_eq!(
        support::events(&log, "stdin_closed").len(),
        1,
        "stdin was closed first"
    );
    assert_eq!(
        support::events(&log, "sigterm_ignored").len(),
        1,
        "then SIGTERM, then SIGKILL"
    );
    assert_eq!(labels(&run.events, "stubborn").last().unwrap(), "stopping");
}

// # 9. Recovery after a crash

#[tokio::test]
async fn a_server_that_crashes_after_ready_reconnects_with_a_new_generation_and_the_same_tools() {
    let dir = TempDirGuard::new("sup-recover");
    // Each process answers initialize and tools/list, then dies on its third request
    // (the first health ping). A stability window of 5 s makes that a lost connection
    // inside the window: reconnecting, not an immediate reconnect.
    let fixture = support::stdio_fixture(&json!({
        "rules": [{"nth": 3, "action": {"kind": "crash", "code": 7}}]
    }));
    let server = with(
        stdio_server(&fixture),
        json!({
            "reconnect": {"initialDelayMs": 20, "maxDelayMs": 5000, "maxAttempts": 3,
                          "quarantineMs": [100, 150, 200]},
            "timeouts": {"pingIntervalMs": 1000}
        }),
    );
    let config = write_config(&dir, json!({ "flaky": server }));
    let mut watch = Watch::start(&config, "30s");
    watch
        .wait_for("ready again", |e| {
            is_state("flaky", "ready")(e) && e["generation"] == 2
        })
        .await;
    watch
        .wait_for("the new generation's tools", |e| {
            e["server"] == "flaky" && e["type"] == "tools" && e["generation"] == 2
        })
        .await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    let outline = outline(&run.events, "flaky");
    assert_eq!(
        outline[..5],
        [
            "connecting",
            "ready",
            "reconnecting 1/3",
            "connecting",
            "ready"
        ],
        "{outline:?}"
    );
    let lost = typed(&run.events, "flaky", "failure")[0];
    assert_eq!(lost["generation"], 1, "{lost}");
    assert_eq!(lost["failure"]["exit_code"], 7, "{lost}");
    assert_eq!(lost["failure"]["kind"], "process_exit", "{lost}");
    let reconnecting = states(&run.events, "flaky")
        .into_iter()
        .find(|e| e["state"] == "reconnecting")
        .unwrap();
    assert_eq!(reconnecting["cause"]["exit_code"], 7, "{reconnecting}");
    assert_eq!(assert_no_early_attempts(&run.events, "flaky"), 1);

    let tools: Vec<(u64, bool, Vec<&str>)> = typed(&run.events, "flaky", "tools")
        .into_iter()
        .map(|e| {
            (
                e["generation"].as_u64().unwrap(),
                e["stale"].as_bool().unwrap(),
                names(e),
            )
        })
        .collect();
    assert_eq!(
        tools[..3],
        [
            (1, false, TOOLS.to_vec()),
            (1, true, TOOLS.to_vec()),
            (2, false, TOOLS.to_vec())
        ],
        "the last good list is kept, marked stale, during the outage"
    );
    // The stale list came with the loss, before the new generation connected.
    let stale_seq = typed(&run.events, "flaky", "tools")[1]["seq"]
        .as_u64()
        .unwrap();
    let reconnecting_seq = reconnecting["seq"].as_u64().unwrap();
    assert!(stale_seq < reconnecting_seq);
    assert!(started_pids(&fixture.log).len() >= 2);
}

// # 10. An HTTP server restarted on the same port

#[tokio::test]
async fn an_http_server_restarted_on_the_same_port_gets_a_new_session_and_generation() {
    let dir = TempDirGuard::new("sup-restart");
    let (log_a, log_b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let mut first = http_fixture_on(0, &json!({}), &log_a).await;
    let port = port_of(&first.url);
    // Idle HTTP connections have nothing to notice a restart with except the health
    // ping (1 s is the smallest interval the config allows).
    let server = with(
        http_server(&first.url),
        json!({"timeouts": {"pingIntervalMs": 1000, "pingTimeoutMs": 500}}),
    );
    let config = write_config(&dir, json!({ "remote": server }));
    let mut watch = Watch::start(&config, "30s");
    watch.wait_for("ready", is_state("remote", "ready")).await;
    let old_session = support::received(&support::read_log(&log_a), "tools/list")[0]["session_id"]
        .as_str()
        .expect("a session id")
        .to_owned();

    first.child.kill().await.expect("killing the first fixture");
    let _second = http_fixture_on(port, &json!({}), &log_b).await;
    watch
        .wait_for("ready on a new generation", |e| {
            is_state("remote", "ready")(e) && e["generation"].as_u64() > Some(1)
        })
        .await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    let outline = outline(&run.events, "remote");
    assert_eq!(outline[..2], ["connecting", "ready"], "{outline:?}");
    assert!(outline[2..].contains(&"ready".to_owned()), "{outline:?}");
    // The restart was noticed by the ping: the new server did not know the old session.
    let log = support::read_log(&log_b);
    let requests = support::events(&log, "received");
    assert_eq!(requests[0]["rpc_method"], "ping", "{requests:?}");
    assert_eq!(requests[0]["session_id"], old_session.as_str());
    let lost = typed(&run.events, "remote", "failure")[0];
    assert_eq!(lost["failure"]["kind"], "session_expired", "{lost}");
    assert_eq!(lost["failure"]["status"], 404, "{lost}");
    // And a new session was made with the new server.
    let inits = support::received(&log, "initialize");
    assert_eq!(inits.len(), 1, "{inits:?}");
    assert!(inits[0]["session_id"].is_null());
    let lists = support::received(&log, "tools/list");
    let new_session = lists[0]["session_id"].as_str().expect("a new session id");
    assert_ne!(new_session, old_session);
    // The failure and the stale list are the old generation's, although the new one
    // started at once (the connection had been up longer than the stability window).
    assert_eq!(lost["generation"], 1, "{lost}");
    let tools = typed(&run.events, "remote", "tools");
    let stale = tools
        .iter()
        .find(|e| e["stale"] == true)
        .expect("a stale list");
    assert_eq!(stale["generation"], 1, "{stale}");
    let last = tools.last().unwrap();
    assert_eq!(
        (last["stale"].as_bool(), last["count"].as_u64()),
        (Some(false), Some(10))
    );
}

#[tokio::test]
async fn an_http_restart_is_noticed_by_the_get_stream_without_pings() {
    let dir = TempDirGuard::new("sup-restart-get");
    let (log_a, log_b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    // A standalone GET stream that asks to be resumed after 100 ms; health pings off.
    let script = json!({"http": {"get": "sse", "sse": {"retry": "100"}}});
    let mut first = http_fixture_on(0, &script, &log_a).await;
    let port = port_of(&first.url);
    let server = with(
        http_server(&first.url),
        json!({"timeouts": {"pingIntervalMs": 0}}),
    );
    let config = write_config(&dir, json!({ "remote": server }));
    let mut watch = Watch::start(&config, "30s");
    watch.wait_for("ready", is_state("remote", "ready")).await;
    let get = support::wait_for_log(&log_a, "the standalone GET", |e| {
        e["event"] == "received" && e["http_method"] == "GET"
    })
    .await;
    let old_session = get["session_id"].as_str().expect("a session id").to_owned();

    first.child.kill().await.expect("killing the first fixture");
    let _second = http_fixture_on(port, &script, &log_b).await;
    watch
        .wait_for("ready on a new generation", |e| {
            is_state("remote", "ready")(e) && e["generation"].as_u64() > Some(1)
        })
        .await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    // The resumed GET met a server that did not know the session; a POST confirmed it
    // (a 404 on a GET alone may only mean the server has no GET route): the connection ended.
    let log = support::read_log(&log_b);
    let requests = support::events(&log, "received");
    assert_eq!(requests[0]["http_method"], "GET", "{requests:?}");
    assert_eq!(requests[0]["session_id"], old_session.as_str());
    assert!(
        requests[0]["last_event_id"].is_string(),
        "a resume: {requests:?}"
    );
    assert_eq!(requests[1]["http_method"], "POST", "{requests:?}");
    assert_eq!(requests[1]["rpc_method"], "ping", "{requests:?}");
    assert_eq!(requests[1]["session_id"], old_session.as_str());
    let lost = typed(&run.events, "remote", "failure")[0];
    assert_eq!(lost["failure"]["kind"], "session_expired", "{lost}");
    assert_eq!(lost["failure"]["method"], "POST", "{lost}");
    assert_eq!(lost["generation"], 1, "{lost}");
    let tools = typed(&run.events, "remote", "tools");
    let stale = tools
        .iter()
        .find(|e| e["stale"] == true)
        .expect("a stale list");
    assert_eq!(stale["generation"], 1, "{stale}");
    assert_eq!(
        support::received(&log, "ping").len(),
        1,
        "one probe, no health pings (they are off)"
    );
    assert_eq!(support::received(&log, "initialize").len(), 1);
}

// # 11. Down at start

#[tokio::test]
async fn a_server_down_at_start_becomes_ready_once_it_listens_never_attempting_early() {
    let dir = TempDirGuard::new("sup-late");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let server = json!({
        "type": "http",
        "url": url,
        "reconnect": {"initialDelayMs": 50, "maxDelayMs": 200, "maxAttempts": 100}
    });
    let config = write_config(&dir, json!({ "late": server }));
    let mut watch = Watch::start(&config, "30s");
    let first_wait = watch
        .wait_for("retrying", is_state("late", "retrying"))
        .await;
    assert_eq!(first_wait["cause"]["kind"], "transport", "{first_wait}");
    let log = dir.path().join("late.log");
    let fixture = http_fixture_on(port, &json!({}), &log).await;
    assert_eq!(fixture.url, url);
    let ready = watch.wait_for("ready", is_state("late", "ready")).await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    assert!(ready["generation"].as_u64() > Some(1), "{ready}");
    let outline = outline(&run.events, "late");
    assert_eq!(
        outline[..2],
        ["connecting", "retrying 1/100"],
        "{outline:?}"
    );
    let waits = outline.iter().filter(|l| l.starts_with("retrying")).count();
    assert_eq!(assert_no_early_attempts(&run.events, "late"), waits);
    // Only the successful attempt reached the server: one initialize, one session.
    assert_eq!(
        support::received(&support::read_log(&log), "initialize").len(),
        1
    );
}

// # 12. check

fn row<'a>(outcome: &'a Value, server: &str) -> &'a Value {
    outcome["servers"]
        .as_array()
        .unwrap_or_else(|| panic!("no servers in {outcome}"))
        .iter()
        .find(|s| s["server"] == server)
        .unwrap_or_else(|| panic!("no row for {server} in {outcome}"))
}

#[tokio::test]
async fn check_exits_3_for_auth_5_for_other_failures_and_0_when_all_are_ready() {
    let dir = TempDirGuard::new("sup-check");
    let ready = support::stdio_fixture(&json!({}));
    let locked = support::http_fixture(json!({
        "rules": [http_status_on_initialize(401, json!({}))]
    }))
    .await;
    let missing =
        json!({"command": "lifeline-no-such-command-9f3e", "reconnect": fast_reconnect()});
    let write = |name: &str, servers: Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
        path
    };
    let auth = write(
        "auth.json",
        json!({"ready": stdio_server(&ready), "locked": http_server(&locked.url)}),
    );
    let other = write(
        "other.json",
        json!({"ready": stdio_server(&ready), "missing": missing}),
    );
    let fine = write("fine.json", json!({"ready": stdio_server(&ready)}));
    let run = |config: PathBuf| async move {
        let config = config.display().to_string();
        lifeline(&["check", "--json", "--deadline", "20s", "--config", &config]).await
    };
    let (auth, other, fine) = tokio::join!(run(auth), run(other), run(fine));

    assert_eq!(auth.code, 3, "{auth:?}");
    let out = auth.outcome();
    assert_eq!(out["ok"], false);
    assert_eq!(out["servers"].as_array().unwrap().len(), 2);
    assert_eq!(row(&out, "ready")["state"], "ready");
    assert_eq!(row(&out, "ready")["tools"].as_array().unwrap().len(), 10);
    assert_eq!(row(&out, "locked")["state"], "retired");
    assert_eq!(row(&out, "locked")["reason"], "auth");
    assert_eq!(row(&out, "locked")["cause"]["status"], 401);

    assert_eq!(other.code, 5, "{other:?}");
    let out = other.outcome();
    assert_eq!(out["ok"], false);
    assert_eq!(row(&out, "ready")["state"], "ready");
    assert_eq!(row(&out, "missing")["state"], "retired");
    assert_eq!(row(&out, "missing")["reason"], "config");

    assert_eq!(fine.code, 0, "{fine:?}");
    let out = fine.outcome();
    assert_eq!(out["ok"], true);
    assert_eq!(row(&out, "ready")["state"], "ready");
    assert!(
        row(&out, "ready")["last_round_trip_ms"].is_u64(),
        "check measures a round trip: {out}"
    );
}

// # 13. call SERVER

#[tokio::test]
async fn call_through_the_supervisor_returns_the_result_and_a_retired_server_fails_at_once() {
    let dir = TempDirGuard::new("sup-call");
    let fixture = support::stdio_fixture(&json!({}));
    let locked = support::http_fixture(json!({
        "rules": [http_status_on_every_request(401, json!({}))]
    }))
    .await;
    let config = write_config(
        &dir,
        json!({"local": stdio_server(&fixture), "locked": http_server(&locked.url)}),
    );
    let config = config.display().to_string();
    let args = |server: &'static str| {
        let config = config.clone();
        async move {
            lifeline(&[
                "call",
                server,
                "echo",
                r#"{"text":"hi"}"#,
                "--config",
                &config,
                "--json",
            ])
            .await
        }
    };
    let (ok, refused) = tokio::join!(args("local"), args("locked"));

    assert_eq!(ok.code, 0, "{ok:?}");
    let outcome = ok.outcome();
    assert_eq!(outcome["ok"], true, "{ok:?}");
    assert_eq!(outcome["result"]["content"][0]["text"], "hi", "{ok:?}");
    let calls = support::received(&fixture.log_entries(), "tools/call");
    assert_eq!(calls.len(), 1, "called once, never replayed: {calls:?}");

    assert_eq!(refused.code, 5, "{refused:?}");
    let error = refused.error();
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("`locked` is not ready"), "{message}");
    assert!(message.contains("retired"), "names the state: {message}");
    assert!(message.contains("(auth)"), "names the reason: {message}");
    assert!(message.contains("401"), "names the cause: {message}");
    assert!(message.contains("not sent"), "{message}");
    let requests = support::events(&locked.log_entries(), "received");
    assert_eq!(
        requests.len(),
        1,
        "only the refused first request: {requests:?}"
    );
}

// # 14. Secrets

#[tokio::test]
async fn no_canary_secret_reaches_watch_output() {
    const HEADER: &str = "hdrcanary7Q2xK9";
    const API_KEY: &str = "apikeycanary3Lm8";
    const ENV: &str = "envcanary5Tz1Wq";
    const EXPANDED: &str = "expandedcanary8Rv4";
    let dir = TempDirGuard::new("sup-canary");
    // The 401 quotes the header's token in a JSON-RPC error, which the client shows.
    let body = json!({"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32001, "message": format!("body-marker: token {HEADER} / {API_KEY} / {EXPANDED} rejected")
    }});
    let http = support::http_fixture(json!({
        "rules": [http_status_on_initialize(401, json!({
            "body": body.to_string(),
            "www_authenticate": format!("Bearer error=\"invalid_token\", error_description=\"{HEADER}\""),
        }))]
    }))
    .await;
    // The stdio fixture reads its script from the environment, writes both env canaries
    // to stderr at startup and crashes on initialize, so its last stderr line is shown.
    let log = dir.path().join("stdio.log");
    let script = json!({
        "stderr": format!("stderr-marker ${{env:CANARY_VAR}} and {ENV}\n"),
        "rules": [crash_on("initialize")]
    })
    .to_string();
    let servers = json!({
        "remote": with(http_server(&http.url), json!({"headers": {
            "Authorization": format!("Bearer {HEADER}"),
            "X-Api-Key": API_KEY,
            "X-Expanded": "${env:CANARY_VAR}",
        }})),
        "leaky": {
            "command": support::fixture_bin(),
            "args": ["stdio", "--log", log.display().to_string()],
            "env": {"API_TOKEN": ENV, "LIFELINE_FIXTURE_SCRIPT": script},
            "reconnect": {"initialDelayMs": 20, "maxDelayMs": 100, "maxAttempts": 2,
                          "quarantineMs": [20, 20, 20]},
        },
    });
    let config = write_config(&dir, servers);
    let mut watch = Watch::start_with_env(
        &config,
        "30s",
        // Trace logging too: logs are output and must be as clean as events.
        &[("CANARY_VAR", EXPANDED), ("LIFELINE_LOG", "trace")],
    );
    watch
        .wait_for("leaky gave up", is_state("leaky", "gave_up"))
        .await;
    watch
        .wait_for("remote retired", is_state("remote", "retired"))
        .await;
    let run = watch.stop().await;

    assert_eq!(run.code, 0, "{run:?}");
    let everything = format!("{}\n{}", run.stdout, run.stderr);
    for canary in [HEADER, API_KEY, ENV, EXPANDED] {
        assert!(
            !everything.contains(canary),
            "{canary} leaked:\n{everything}"
        );
    }
    // The places they would have been are shown (scrubbed), so the test can fail.
    assert!(
        everything.contains("stderr-marker"),
        "the stderr tail is shown: {everything}"
    );
    assert!(
        everything.contains("body-marker"),
        "the server's message is shown: {everything}"
    );
    let received = support::received(&http.log_entries(), "initialize");
    assert_eq!(received[0]["authorization_present"], true);
    assert_eq!(started_pids(&log).len(), 5, "2 attempts + 3 probes");
}

// # 15. Invalid config

#[tokio::test]
async fn an_invalid_config_exits_2_naming_the_field_and_starts_nothing() {
    let dir = TempDirGuard::new("sup-invalid");
    let fixture = support::stdio_fixture(&json!({}));
    let bad = with(
        stdio_server(&fixture),
        json!({"reconnect": {"maxAttempts": 0}}),
    );
    let config = write_config(&dir, json!({ "good": stdio_server(&fixture), "bad": bad }));
    let config = config.display().to_string();
    let watch = ["watch", "--json", "--for", "10s", "--config", &config];
    let check = ["check", "--json", "--config", &config];
    let call = ["call", "good", "echo", "--json", "--config", &config];
    let (watch, check, call) = tokio::join!(lifeline(&watch), lifeline(&check), lifeline(&call));
    for run in [&watch, &check, &call] {
        assert_eq!(run.code, 2, "{run:?}");
        let error = run.error();
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("mcpServers.bad.reconnect.maxAttempts"),
            "names the field: {message}"
        );
        assert!(
            message.contains("must be between 1 and 1000"),
            "names the bound: {message}"
        );
        assert_eq!(error["kind"], "config");
    }
    assert!(!fixture.log.exists(), "nothing was started");
}

// # 16. A signal right after start still disposes

#[tokio::test]
async fn sigterm_right_after_the_first_event_still_disposes_and_exits_0() {
    let dir = TempDirGuard::new("sup-early-term");
    let fixture = support::stdio_fixture(&json!({}));
    // Many servers emit at once, so `watch` is busy printing when the signal lands.
    let servers: serde_json::Map<String, Value> = (0..10)
        .map(|i| (format!("s{i}"), stdio_server(&fixture)))
        .collect();
    let config = write_config(&dir, Value::Object(servers));
    for round in 0..8 {
        let mut watch = Watch::start(&config, "30s");
        watch.wait_for("a first event", |_| true).await;
        let run = watch.stop().await;
        assert_eq!(
            run.code, 0,
            "round {round}: SIGTERM killed watch instead of stopping it: {run:?}"
        );
        let last = run.events.last().expect("events");
        assert_eq!(last["state"], "stopping", "round {round}: {last}");
    }
}
