//! The UI's mock host replays what the real core does: this test runs real supervisors
//! (lifeline-core) against real fixture processes (`lifeline-fixture`) through the story the
//! mock shows, on a paused clock (recording/driver.rs), and compares the events and
//! snapshots with the checked-in `ui/src/host/recorded/scenario.json`. It fails when the
//! core's behaviour changed; `make recording` (this test with `LIFELINE_WRITE_RECORDING=1`)
//! rewrites the file.
//!
//! The story, in times relative to the moment the page loads ("now"):
//!
//! - filesystem (stdio): starts 2 h 15 min ago; its process is SIGKILLed 2 h 10 min ago and
//!   the supervisor brings it back. 47 min ago Claude Desktop attaches to it through a
//!   gateway session (recording/host.rs) and calls a few tools over the next half hour,
//!   one a tool error; it is still attached at the end.
//! - linear (sse): starts 12 min ago; every request answers 401, so it retires (auth).
//! - sqlite (stdio): starts 9 min ago; 179 s ago its process crashes (the fixture's `crash`
//!   tool) and from then on every start prints a SQLITE_CORRUPT line to stderr and exits 1
//!   during `initialize`: the crash loop climbs the quarantine ladder, then gives up.
//! - github (http): starts 39 s ago against a server that answers `initialize` 429 with
//!   Retry-After 20 s, then 45 s, then serves.
//! - generated archetypes (the mock's `?mock&servers=N` rows and servers added in the
//!   editor): a healthy stdio server, an http server nobody listens for, a disabled one.
//!
//! What each command does is recorded too: every server has a copy per command
//! (`sqlite.reset`, …) with the same jitter seed and the same fixtures, so its past is the
//! same; at "now" the copy gets the command (`.disable` is enabled again 10 s later), and
//! its events from then on are that command's branch.

mod driver;
mod host;
mod output;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use lifeline_core::config::ServerConfig;
use lifeline_core::events::{EventBody, StateName};
use lifeline_core::supervisor::{Supervisor, SupervisorConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::support::{TempDirGuard, fixture_bin, read_log};
use driver::Driver;
use host::{FIXTURE_DELAY_MS, Host};

/// "Now" (the page load) as paused milliseconds since the recording started.
const NOW: u64 = S * (2 * 3600 + 15 * 60);
const S: u64 = 1000;
/// How far past "now" the story is recorded: sqlite gives up before this.
const HORIZON: u64 = 240 * S;
/// When a `.disable` copy is enabled again, after "now".
const ENABLE_AFTER: u64 = 10 * S;

/// A time in the story (seconds relative to now) as paused ms since the start.
const fn at(rel_s: i64) -> u64 {
    (NOW as i64 + rel_s * 1000) as u64
}

pub const STORY: [&str; 4] = ["filesystem", "github", "linear", "sqlite"];
pub const GENERATED: [&str; 3] = ["generated-ok", "generated-refusing", "generated-off"];
pub const COMMANDS: [&str; 3] = ["reconnect", "reset", "disable"];

const SQLITE_CORRUPT: &str = "Error: SQLITE_CORRUPT: database disk image is malformed";

/// The fixtures of one run: files, and the HTTP fixture processes (killed on drop).
struct Fixtures {
    dir: TempDirGuard,
    http: Vec<(String, u16, Child)>,
}

impl Fixtures {
    fn log(&self, name: &str) -> PathBuf {
        self.dir
            .path()
            .join(format!("{}.log", name.replace('.', "-")))
    }

    fn script(&self, name: &str) -> PathBuf {
        self.dir
            .path()
            .join(format!("{}.json", name.replace('.', "-")))
    }

    /// Args of `lifeline-fixture stdio` whose script is read from a file at every start.
    fn stdio(&self, name: &str, script: &Value) -> Value {
        let file = self.script(name);
        std::fs::write(&file, script.to_string()).expect("writing a fixture script");
        json!({
            "command": fixture_bin(),
            "args": ["stdio", "--script", format!("@{}", file.display()), "--log", self.log(name)],
            "timeouts": {"pingIntervalMs": 0},
        })
    }

    /// Starts `lifeline-fixture MODE` (http or sse) for `name`; returns its URL.
    async fn listening(&mut self, name: &str, mode: &str, script: &Value) -> String {
        let mut child = Command::new(fixture_bin())
            .args([mode, "--script", &script.to_string(), "--log"])
            .arg(self.log(name))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning lifeline-fixture");
        let stdout = child.stdout.take().expect("piped stdout");
        let line = BufReader::new(stdout)
            .lines()
            .next_line()
            .await
            .expect("reading the fixture's stdout")
            .expect("the fixture printed LISTENING");
        let url = line.strip_prefix("LISTENING ").expect("LISTENING <url>");
        let port = url
            .split(':')
            .nth(2)
            .and_then(|p| p.split('/').next())
            .and_then(|p| p.parse().ok())
            .expect("a port in the URL");
        self.http.push((name.to_owned(), port, child));
        url.to_owned()
    }
}

/// The config entry of a server of the story (or a copy of one), starting its fixture.
async fn entry(fixtures: &mut Fixtures, name: &str) -> Value {
    let base = name.split('.').next().unwrap_or(name);
    let no_pings = json!({"pingIntervalMs": 0});
    match base {
        "filesystem" => fixtures.stdio(
            name,
            &json!({"stderr": "Secure MCP Filesystem Server running on stdio",
                "rules": [{"method": "tools/call",
                    "action": {"kind": "delay", "ms": FIXTURE_DELAY_MS}}]}),
        ),
        "sqlite" | "generated-ok" => fixtures.stdio(name, &json!({})),
        "generated-off" => {
            let mut e = fixtures.stdio(name, &json!({}));
            e["disabled"] = json!(true);
            e
        }
        "generated-refusing" => {
            json!({"type": "http", "url": "http://127.0.0.1:1/mcp", "timeouts": no_pings})
        }
        "github" => {
            let limited = |nth: u32, secs: &str| {
                json!({"method": "initialize", "nth": nth, "action":
                    {"kind": "http_status", "status": 429, "retry_after": secs}})
            };
            let script = json!({"rules": [limited(1, "20"), limited(2, "45")]});
            let url = fixtures.listening(name, "http", &script).await;
            json!({"type": "http", "url": url, "timeouts": no_pings})
        }
        "linear" => {
            let script = json!({"rules": [{"action": {"kind": "http_status", "status": 401}}]});
            let url = fixtures.listening(name, "sse", &script).await;
            json!({"type": "sse", "url": url, "timeouts": no_pings})
        }
        other => panic!("no server {other} in the story"),
    }
}

/// A server and its copies (one per command), in that order.
fn with_copies(base: &str) -> Vec<String> {
    std::iter::once(base.to_owned())
        .chain(COMMANDS.iter().map(|c| format!("{base}.{c}")))
        .collect()
}

/// Parses the entries as one config file and starts a supervisor for each, seeded by the
/// server's base name (so a copy draws the same jitter as its original).
async fn start(d: &mut Driver, fixtures: &mut Fixtures, names: &[String]) {
    let mut servers = serde_json::Map::new();
    for name in names {
        servers.insert(name.clone(), entry(fixtures, name).await);
    }
    let text = json!({ "mcpServers": servers }).to_string();
    let config = lifeline_core::config::parse(&text, None, &|_| None)
        .unwrap_or_else(|e| panic!("the recording's config is invalid: {e:?}"));
    for server in &config.servers {
        let cfg = SupervisorConfig::from_server(server, seed(server))
            .unwrap_or_else(|e| panic!("{}: {e}", server.name));
        d.supervisors
            .push(Arc::new(Supervisor::spawn(cfg, d.bus.clone())));
    }
}

fn seed(server: &ServerConfig) -> u64 {
    let base = server.name.split('.').next().unwrap_or(&server.name);
    base.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The pid of the fixture process that last started with this log.
fn fixture_pid(log: &Path) -> i32 {
    read_log(log)
        .iter()
        .rev()
        .find(|e| e["event"] == "started")
        .and_then(|e| e["pid"].as_i64())
        .and_then(|p| i32::try_from(p).ok())
        .unwrap_or_else(|| panic!("no `started` entry in {}", log.display()))
}

/// Whether `server` published a failure after the first `skip` events.
fn failed_since(d: &Driver, server: &str, skip: usize) -> bool {
    d.events[skip..]
        .iter()
        .any(|e| e.event.server == server && matches!(e.event.body, EventBody::Failure { .. }))
}

/// Runs the whole story; returns the recording as JSON.
async fn record() -> Value {
    let mut d = Driver::new();
    let mut fixtures = Fixtures {
        dir: TempDirGuard::new("recording"),
        http: Vec::new(),
    };

    start(&mut d, &mut fixtures, &with_copies("filesystem")).await;

    d.run_to(at(-(2 * 3600 + 10 * 60))).await;
    let skip = d.events.len();
    for name in with_copies("filesystem") {
        let pid = fixture_pid(&fixtures.log(&name));
        // A pid this run spawned and has not reaped (it is running).
        let process = rustix::process::Pid::from_raw(pid).expect("a pid");
        rustix::process::kill_process(process, rustix::process::Signal::KILL)
            .unwrap_or_else(|e| panic!("kill {pid}: {e}"));
    }
    d.spin_until("every filesystem to see its process killed", |d| {
        with_copies("filesystem")
            .iter()
            .all(|n| failed_since(d, n, skip))
    })
    .await;

    // The host's calls, before any other server starts: moving the clock by a call's
    // latency must not cross another server's deadline.
    d.run_to(at(-47 * 60)).await;
    let supervisor = d
        .supervisors
        .iter()
        .find(|s| s.name() == host::SERVER)
        .cloned()
        .expect("filesystem runs");
    let mut claude = Host::attach(&mut d, supervisor).await;
    let calls = [
        (-47 * 60 + 20, "echo", json!({"text": "hello"}), 4),
        (-41 * 60, "add", json!({"a": 2, "b": 3}), 3),
        (-33 * 60, "echo", json!({"text": "the notes"}), 6),
        (-26 * 60, "fail", json!({}), 41),
        (-19 * 60, "echo", json!({"text": "again"}), 5),
        (-14 * 60, "add", json!({"a": 40, "b": 2}), 2),
    ];
    for (rel, tool, args, ms) in calls {
        d.run_to(at(rel)).await;
        claude.call(&mut d, tool, args, ms).await;
    }

    d.run_to(at(-12 * 60)).await;
    start(&mut d, &mut fixtures, &with_copies("linear")).await;
    d.run_to(at(-10 * 60)).await;
    let generated: Vec<String> = GENERATED.iter().flat_map(|s| with_copies(s)).collect();
    start(&mut d, &mut fixtures, &generated).await;
    d.run_to(at(-9 * 60)).await;
    start(&mut d, &mut fixtures, &with_copies("sqlite")).await;

    d.run_to(at(-179)).await;
    let corrupt = json!({"stderr": SQLITE_CORRUPT,
        "rules": [{"method": "initialize", "action": {"kind": "crash", "code": 1}}]});
    let skip = d.events.len();
    for name in with_copies("sqlite") {
        std::fs::write(fixtures.script(&name), corrupt.to_string()).expect("writing a script");
        let crashed = d.supervisor(&name).call("crash", json!({"code": 1})).await;
        assert!(crashed.is_err(), "{name}: the crash tool answered");
    }

    // The call fails when the process exits; the supervisor sees the exit a moment later
    // (real time): wait for it before the clock moves on.
    d.spin_until("every sqlite to see its process exit", |d| {
        with_copies("sqlite")
            .iter()
            .all(|n| failed_since(d, n, skip))
    })
    .await;

    d.run_to(at(-39)).await;
    start(&mut d, &mut fixtures, &with_copies("github")).await;

    d.run_to(NOW).await;
    let at_now = output::at_now(&d, &STORY);
    for base in STORY.iter().chain(&GENERATED) {
        let s = |c: &str| d.supervisor(&format!("{base}.{c}"));
        s("reconnect").reconnect();
        s("reset").reset();
        s("disable").disable();
    }
    d.run_to(NOW + ENABLE_AFTER).await;
    for base in STORY.iter().chain(&GENERATED) {
        d.supervisor(&format!("{base}.disable")).enable();
    }
    d.run_to(NOW + HORIZON).await;
    assert!(
        d.supervisor("sqlite").snapshot().state.state == Some(StateName::GaveUp),
        "sqlite should have given up within the horizon"
    );
    let ports: Vec<(String, u16)> = fixtures
        .http
        .iter()
        .map(|(name, port, _)| (name.clone(), *port))
        .collect();
    let events = d.take_events().await;
    claude.close().await;
    d.stop().await;
    output::render(events, at_now, &ports, fixtures.dir.path())
}

fn recording_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ui/src/host/recorded/scenario.json")
}

#[tokio::test(start_paused = true)]
async fn ui_recording_is_fresh() {
    let want = output::to_text(&record().await);
    let path = recording_path();
    if std::env::var_os("LIFELINE_WRITE_RECORDING").is_some_and(|v| v == "1") {
        std::fs::write(&path, &want).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let line = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| "its length".to_owned(), |i| format!("line {}", i + 1));
        panic!(
            "ui/src/host/recorded/scenario.json is stale: the core now behaves differently in \
             the UI's mock story (first difference at {line}). Run `make recording` \
             (LIFELINE_WRITE_RECORDING=1 cargo test -p lifeline-it ui_recording_is_fresh), \
             check the diff, and update the UI tests that assert on it."
        );
    }
}
