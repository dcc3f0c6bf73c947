//! Harness for the integration tests: spawns fixture MCP servers (`lifeline-fixture`), reads
//! what they logged, and offers a plain HTTP client and SSE parser for driving them directly.
//!
//! Helpers panic with a message naming what was expected, since they only run inside tests.

#![allow(dead_code)] // Each test module uses its own subset.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Writes `{"mcpServers": servers}` to `dir/config.json` and returns its path.
pub fn write_config(dir: &TempDirGuard, servers: Value) -> PathBuf {
    let path = dir.path().join("config.json");
    let text = serde_json::to_string_pretty(&serde_json::json!({ "mcpServers": servers }))
        .expect("a config is JSON");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// How long a helper waits for the fixture to do something before failing the test.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub fn fixture_bin() -> &'static str {
    env!("CARGO_BIN_EXE_lifeline-fixture")
}

/// A fresh directory under the system temp dir, removed (with its contents) on drop.
#[derive(Debug)]
pub struct TempDirGuard(PathBuf);

impl TempDirGuard {
    pub fn new(label: &str) -> TempDirGuard {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("lifeline-it-{}-{n}-{label}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        TempDirGuard(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDirGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `lifeline-fixture http` (or `sse`); killed when dropped.
#[derive(Debug)]
pub struct HttpFixture {
    /// `http://127.0.0.1:PORT/mcp`
    pub url: String,
    pub log: PathBuf,
    child: Child,
    _dir: TempDirGuard,
}

impl HttpFixture {
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Kills the fixture and waits until it is gone, its port free again.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }

    pub fn log_entries(&self) -> Vec<Value> {
        read_log(&self.log)
    }

    pub async fn wait_for_log(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        wait_for_log(&self.log, what, pred).await
    }
}

/// Spawns `lifeline-fixture http` with `script` and waits for its `LISTENING` line.
pub async fn http_fixture(script: Value) -> HttpFixture {
    fixture_listening("http", script).await
}

/// Spawns `lifeline-fixture sse` (the legacy HTTP+SSE transport; `url` ends in `/sse`).
pub async fn legacy_fixture(script: Value) -> HttpFixture {
    fixture_listening("sse", script).await
}

/// Spawns `lifeline-fixture stateless` (stateless 2026-07-28 Streamable HTTP; `url` ends in
/// `/mcp`).
pub async fn stateless_fixture(script: Value) -> HttpFixture {
    fixture_listening("stateless", script).await
}

/// `http_fixture` on a port of the caller's: a server started again where it was.
pub async fn http_fixture_on(script: Value, port: &str) -> HttpFixture {
    fixture_listening_with("http", script, &["--port", port]).await
}

async fn fixture_listening(transport: &str, script: Value) -> HttpFixture {
    fixture_listening_with(transport, script, &[]).await
}

async fn fixture_listening_with(transport: &str, script: Value, extra: &[&str]) -> HttpFixture {
    let dir = TempDirGuard::new(transport);
    let log = dir.path().join("fixture.log");
    let mut child = Command::new(fixture_bin())
        .args([transport, "--script", &script.to_string(), "--log"])
        .arg(&log)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {}: {e}", fixture_bin()));
    let stdout = child.stdout.take().expect("fixture stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(PATIENCE, lines.next_line())
        .await
        .unwrap_or_else(|_| panic!("fixture printed no LISTENING line within {PATIENCE:?}"))
        .unwrap_or_else(|e| panic!("reading fixture stdout: {e}"))
        .unwrap_or_else(|| panic!("fixture exited before listening; script {script}"));
    let url = line
        .strip_prefix("LISTENING ")
        .unwrap_or_else(|| panic!("expected `LISTENING <url>`, got {line:?}"))
        .to_owned();
    HttpFixture {
        url,
        log,
        child,
        _dir: dir,
    }
}

/// How to start `lifeline-fixture stdio` with a script; the client under test spawns it.
#[derive(Debug)]
pub struct StdioFixture {
    pub program: String,
    pub args: Vec<String>,
    pub log: PathBuf,
    _dir: TempDirGuard,
}

impl StdioFixture {
    /// A command with piped stdin/stdout and `kill_on_drop`, for tests that drive it directly.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    pub fn log_entries(&self) -> Vec<Value> {
        read_log(&self.log)
    }

    pub async fn wait_for_log(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        wait_for_log(&self.log, what, pred).await
    }
}

pub fn stdio_fixture(script: &Value) -> StdioFixture {
    let dir = TempDirGuard::new("stdio");
    let log = dir.path().join("fixture.log");
    let args = vec![
        "stdio".to_owned(),
        "--script".to_owned(),
        script.to_string(),
        "--log".to_owned(),
        log.display().to_string(),
    ];
    StdioFixture {
        program: fixture_bin().to_owned(),
        args,
        log,
        _dir: dir,
    }
}

/// Every entry of a fixture log; a log not yet created reads as empty.
pub fn read_log(path: &Path) -> Vec<Value> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => panic!("reading fixture log {}: {e}", path.display()),
    };
    text.lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("fixture log line is not JSON ({e}): {line}"))
        })
        .collect()
}

/// The first log entry satisfying `pred`, waiting up to `PATIENCE` for the fixture to write
/// it. The fixture writes each entry as it happens, so this waits on the write itself
/// (`when_written`), without polling the file.
pub async fn wait_for_log(path: &Path, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let dir = path
        .parent()
        .expect("a fixture log lives in its own directory");
    let found = when_written(dir, || read_log(path).into_iter().find(|e| pred(e))).await;
    found.unwrap_or_else(|| {
        let log = std::fs::read_to_string(path).unwrap_or_default();
        panic!("fixture never logged {what} within {PATIENCE:?}; log:\n{log}");
    })
}

/// What `probe` gives once it gives something, asking it again on every write in `dir` (or,
/// with `Recursive`, below it: inotify and its kin); `None` after `PATIENCE`. The watch starts
/// before the first probe, so a write between a probe and the wait still wakes it.
pub async fn when_written<T>(dir: &Path, probe: impl FnMut() -> Option<T>) -> Option<T> {
    when_written_in(dir, notify::RecursiveMode::NonRecursive, probe).await
}

/// `when_written`, watching `dir` and every directory made below it.
pub async fn when_written_below<T>(dir: &Path, probe: impl FnMut() -> Option<T>) -> Option<T> {
    when_written_in(dir, notify::RecursiveMode::Recursive, probe).await
}

async fn when_written_in<T>(
    dir: &Path,
    mode: notify::RecursiveMode,
    mut probe: impl FnMut() -> Option<T>,
) -> Option<T> {
    use notify::Watcher;
    let (tx, mut written) = tokio::sync::mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
        let _ = tx.send(());
    })
    .unwrap_or_else(|e| panic!("watching {}: {e}", dir.display()));
    watcher
        .watch(dir, mode)
        .unwrap_or_else(|e| panic!("watching {}: {e}", dir.display()));
    let found = async {
        loop {
            if let Some(value) = probe() {
                return value;
            }
            written
                .recv()
                .await
                .expect("the watcher lives as long as this wait");
        }
    };
    tokio::time::timeout(PATIENCE, found).await.ok()
}

/// The `received` entries whose JSON-RPC method is `method`.
pub fn received(entries: &[Value], method: &str) -> Vec<Value> {
    entries
        .iter()
        .filter(|e| e["event"] == "received" && e["rpc_method"] == method)
        .cloned()
        .collect()
}

/// The entries of one `event` kind (`sse_closed`, `resume`, `sigterm_ignored`, ...).
pub fn events(entries: &[Value], event: &str) -> Vec<Value> {
    entries
        .iter()
        .filter(|e| e["event"] == event)
        .cloned()
        .collect()
}

/// Every field of `expect` is in `actual` with that value (objects may have more fields).
pub fn assert_subset(expect: &Value, actual: &Value, at: &str) {
    match (expect, actual) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, value) in want {
                let found = got
                    .get(key)
                    .unwrap_or_else(|| panic!("{at}.{key} missing: {actual}"));
                assert_subset(value, found, &format!("{at}.{key}"));
            }
        }
        (Value::Array(want), Value::Array(got)) if want.len() == got.len() => {
            for (i, (w, g)) in want.iter().zip(got).enumerate() {
                assert_subset(w, g, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(expect, actual, "at {at}"),
    }
}

/// A plain reqwest client for loopback fixtures; TLS is configured without touching the
/// process-wide default crypto provider.
pub fn http_client() -> reqwest::Client {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .no_proxy()
        .build()
        .expect("building reqwest client")
}

/// One server-sent event as the fixture frames it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub retry: Option<String>,
    pub data: String,
}

/// Splits a complete SSE body into events (LF or CRLF); comment lines are dropped.
pub fn parse_sse(text: &str) -> Vec<SseEvent> {
    let text = text.replace("\r\n", "\n");
    let mut events = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut event = SseEvent::default();
        let mut any_field = false;
        for line in block.lines().filter(|l| !l.starts_with(':')) {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
            any_field = true;
            match field {
                "id" => event.id = Some(value),
                "event" => event.event = Some(value),
                "retry" => event.retry = Some(value),
                "data" if event.data.is_empty() => event.data = value,
                "data" => event.data = format!("{}\n{value}", event.data),
                _ => {}
            }
        }
        if any_field {
            events.push(event);
        }
    }
    events
}

// # Processes outside the test's own children

/// True while `pid` is a live process. A zombie (exited, not yet reaped) is not live.
#[cfg(target_os = "linux")]
pub fn is_running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "pid (comm) S ...": the state follows the last parenthesis, as comm may hold any byte.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

/// True while `pid` is a live process. Other Unixes have no `/proc`: `kill(pid, 0)`, for
/// which a zombie still counts.
#[cfg(all(unix, not(target_os = "linux")))]
pub fn is_running(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    // Signal 0 only checks that the process exists.
    rustix::process::test_kill_process(pid).is_ok()
}

/// True while `pid` is a live process: its exit code is still `STILL_ACTIVE`.
#[cfg(windows)]
pub fn is_running(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: OpenProcess has no memory-safety preconditions; the handle is closed below.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        return false;
    }
    let mut code = 0u32;
    // SAFETY: a valid process handle and a valid out pointer.
    let ok = unsafe { GetExitCodeProcess(process, &mut code) } != 0;
    // SAFETY: the handle was opened above and is closed once.
    unsafe { CloseHandle(process) };
    ok && code == STILL_ACTIVE.cast_unsigned()
}

/// Waits for process `pid` to end: a process handle is signalled when its process exits.
/// Fails the test after `PATIENCE`.
#[cfg(windows)]
pub async fn process_ended(what: &str, pid: u32) {
    use windows_sys::Win32::Foundation::{CloseHandle, WAIT_OBJECT_0};
    use windows_sys::Win32::System::Threading::{
        OpenProcess, PROCESS_SYNCHRONIZE, WaitForSingleObject,
    };
    let bound = u32::try_from(PATIENCE.as_millis()).unwrap_or(u32::MAX);
    let ended = tokio::task::spawn_blocking(move || {
        // SAFETY: OpenProcess has no memory-safety preconditions; the handle is closed below.
        let process = unsafe { OpenProcess(PROCESS_SYNCHRONIZE, 0, pid) };
        if process.is_null() {
            return true; // No such process any more (as `is_running` reads it).
        }
        // SAFETY: a valid process handle, signalled once its process has exited.
        let ended = unsafe { WaitForSingleObject(process, bound) } == WAIT_OBJECT_0;
        // SAFETY: the handle was opened above and is closed once.
        unsafe { CloseHandle(process) };
        ended
    })
    .await
    .expect("the thread waiting on the process");
    assert!(ended, "{what} did not happen within {PATIENCE:?}");
}

/// Waits for process `pid` to end, polling `is_running`: macOS and the BSDs have no pidfd.
/// kqueue's process filter (`EVFILT_PROC`, `NOTE_EXIT`) is their event; it is left for when
/// it can be run there (`make macos-check` only type-checks). Fails the test after `PATIENCE`.
#[cfg(all(unix, not(target_os = "linux")))]
pub async fn process_ended(what: &str, pid: u32) {
    let ended = async {
        while is_running(pid) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(PATIENCE, ended)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {PATIENCE:?}"));
}

/// Waits for process `pid` (any process, not only a child of this one) to end: a pidfd
/// becomes readable when its process exits. Fails the test after `PATIENCE`.
#[cfg(target_os = "linux")]
pub async fn process_ended(what: &str, pid: u32) {
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;
    let raw_pid = i32::try_from(pid).expect("a pid fits in pid_t");
    let fd = match pidfd_open(Pid::from_raw(raw_pid).expect("a pid"), PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(e) if e == rustix::io::Errno::SRCH => return, // Already ended and reaped.
        Err(e) => panic!("pidfd_open({pid}): {e}"),
    };
    // SAFETY: the AsyncFd owns `fd`, which stays open (and the same pidfd) until it drops.
    let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
        .unwrap_or_else(|e| panic!("polling a pidfd: {e}"));
    let readable = tokio::time::timeout(PATIENCE, fd.readable())
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {PATIENCE:?}"));
    let _ended = readable.unwrap_or_else(|e| panic!("waiting for pid {pid}: {e}"));
}
