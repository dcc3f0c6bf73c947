//! Process-level behaviour: startup effects (stderr chatter, SIGTERM handling, a grandchild)
//! and exiting on purpose.

use std::io::{self, Write};

use serde_json::json;

use crate::log::Log;
use crate::mcp::Server;

/// `lifeline-fixture --sleep N`: sleeps N seconds and exits (a grandchild where there is
/// no `sleep` command).
pub const SLEEP_ARG: &str = "--sleep";

/// Exits now with `code`, as a crashing server would: no answer, no flush of pending output.
pub fn crash(log: &Log, code: i32) -> ! {
    log.event("exit", json!({"code": code, "reason": "crash"}));
    std::process::exit(code)
}

pub fn write_stderr(text: &str) {
    let mut stderr = io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

/// Applies the script's startup effects. Must run inside the tokio runtime.
pub fn start(server: &std::sync::Arc<Server>, transport: &str) -> io::Result<()> {
    let script = &server.script;
    server.log.event(
        "started",
        json!({"transport": transport, "pid": std::process::id()}),
    );
    if let Some(text) = &script.stderr {
        write_stderr(text);
    }
    if script.ignore_sigterm {
        ignore_sigterm(server)?;
    }
    if let Some(seconds) = script.grandchild_sleep_s {
        spawn_grandchild(&server.log, seconds)?;
    }
    Ok(())
}

/// Replaces SIGTERM's default action with a handler that only logs `sigterm_ignored`, so the
/// test can see the client tried SIGTERM before it had to escalate.
#[cfg(unix)]
fn ignore_sigterm(server: &std::sync::Arc<Server>) -> io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terms = signal(SignalKind::terminate())?;
    let server = std::sync::Arc::clone(server);
    tokio::spawn(async move {
        while terms.recv().await.is_some() {
            server.log.event("sigterm_ignored", json!({}));
        }
    });
    Ok(())
}

/// Windows has no SIGTERM (a client ends a server's job instead): nothing to ignore.
#[cfg(not(unix))]
fn ignore_sigterm(_server: &std::sync::Arc<Server>) -> io::Result<()> {
    Ok(())
}

/// `sleep N` in our process group (on Windows: this fixture's own `--sleep N`, in our job), inheriting stdin/stdout/stderr like a real server's helper
/// would (so it also holds the client's pipes open). A thread reaps it, so once it is killed
/// `kill(pid, 0)` fails even while the fixture lives.
fn spawn_grandchild(log: &Log, seconds: u64) -> io::Result<()> {
    #[cfg(unix)]
    let mut child = std::process::Command::new("sleep")
        .arg(seconds.to_string())
        .spawn()?;
    #[cfg(not(unix))]
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .arg(SLEEP_ARG)
        .arg(seconds.to_string())
        .spawn()?;
    log.event("grandchild", json!({"pid": child.id()}));
    std::thread::spawn(move || child.wait());
    Ok(())
}
