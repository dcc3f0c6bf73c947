//! The PATH the user's terminal has, for stdio servers started from a GUI. A desktop
//! launcher (the macOS Dock and Finder, a Linux autostart entry, Claude Desktop starting
//! `lifeline connect`) gives a program the login session's minimal PATH, not the one the
//! user's shell builds in `~/.zprofile`, `~/.bashrc` or nvm's setup; "npx: command not
//! found" is the result. So, once at startup and in the background, Lifeline asks the
//! user's shell (`$SHELL -l -i -c …`, as an interactive login shell reads every file that
//! sets PATH) what its PATH is, and puts those entries first, ahead of its own, for the
//! servers it starts and the commands it resolves.
//!
//! Only when no terminal started Lifeline (`TERM` unset; see `wanted`).
//!
//! Bounded: the shell gets `timeout` (a shell that prompts or hangs is killed with its
//! process group) and a spawn that asks while the shell still runs waits at most that long.
//! Off on Windows, where a GUI app's PATH is the user's, and with `LIFELINE_LOGIN_PATH=0`.

use std::ffi::OsString;
use std::sync::{Condvar, Mutex};
use std::time::Duration;
use tokio::time::Instant;

#[cfg_attr(not(unix), allow(dead_code))]
const START: &str = "__LIFELINE_PATH_START__";
#[cfg_attr(not(unix), allow(dead_code))]
const END: &str = "__LIFELINE_PATH_END__";

/// How long the shell may take; a slower one leaves Lifeline with its own PATH.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);

enum Adopted {
    NotAsked,
    Asking { until: Instant },
    Done(Option<OsString>),
}

static STATE: Mutex<Adopted> = Mutex::new(Adopted::NotAsked);
static DONE: Condvar = Condvar::new();

/// Starts asking the login shell on a thread of its own. Later calls do nothing.
pub fn adopt_in_background(timeout: Duration) {
    {
        let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
        if !matches!(*state, Adopted::NotAsked) {
            return;
        }
        if !wanted() {
            *state = Adopted::Done(None);
            return;
        }
        *state = Adopted::Asking {
            until: Instant::now() + timeout,
        };
    }
    let spawned = std::thread::Builder::new()
        .name("lifeline-login-path".into())
        .spawn(move || {
            let current = std::env::var("PATH").unwrap_or_default();
            let found = shell().and_then(|sh| ask(&sh, timeout));
            let merged = match &found {
                Some(login) => {
                    let merged = merge(login, &current);
                    if merged != current {
                        tracing::info!("stdio servers get the login shell's PATH: {merged}");
                    }
                    Some(OsString::from(merged))
                }
                None => {
                    tracing::info!(
                        "the login shell's PATH was not found; servers get Lifeline's own"
                    );
                    None
                }
            };
            finish(merged);
        });
    if spawned.is_err() {
        finish(None);
    }
}

fn finish(path: Option<OsString>) {
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = Adopted::Done(path);
    DONE.notify_all();
}

/// The PATH for servers and command lookup: the login shell's entries first when they were
/// found, else `None` (use the process's own). Waits for a shell still being asked, up to
/// its timeout.
pub fn path() -> Option<OsString> {
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        match &*state {
            Adopted::NotAsked => return None,
            Adopted::Done(path) => return path.clone(),
            Adopted::Asking { until } => {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return None;
                }
                state = DONE
                    .wait_timeout(state, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
    }
}

/// Only for a program a desktop started: one started from a terminal (`TERM` is set) already
/// has the shell's PATH, perhaps with a virtualenv the login shell would not know.
/// `LIFELINE_LOGIN_PATH=1` asks anyway, `=0` never.
fn wanted() -> bool {
    cfg!(unix)
        && match std::env::var("LIFELINE_LOGIN_PATH").as_deref() {
            Ok("0") => false,
            Ok("1") => true,
            _ => std::env::var_os("TERM").is_none(),
        }
}

/// The PATH servers are started with and commands are looked up in: the login shell's
/// entries first when they were found (`path`), else Lifeline's own.
pub fn effective() -> String {
    path()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| std::env::var("PATH").unwrap_or_default())
}

fn shell() -> Option<String> {
    std::env::var("SHELL").ok().filter(|s| s.starts_with('/'))
}

/// Runs `shell` as an interactive login shell and reads the PATH it prints between markers
/// (profile scripts may print anything around them). `None` when it fails, prints no
/// markers, or outlives `timeout`.
pub fn ask(shell: &str, timeout: Duration) -> Option<String> {
    #[cfg(unix)]
    {
        use std::io::Read;
        use std::os::unix::process::CommandExt;
        use std::process::{Command, Stdio};
        let script = format!("printf '\\n%s%s%s\\n' '{START}' \"$PATH\" '{END}'");
        let mut child = Command::new(shell)
            .args(["-l", "-i", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .ok()?;
        let mut stdout = child.stdout.take()?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stdout.read_to_end(&mut out);
            let _ = tx.send(out);
        });
        let out = rx.recv_timeout(timeout);
        // The shell, and anything its profile left running, goes either way.
        use rustix::process::{Pid, Signal, kill_process_group};
        let _ = kill_process_group(Pid::from_child(&child), Signal::KILL);
        let _ = child.wait();
        extract(&String::from_utf8_lossy(&out.ok()?))
    }
    #[cfg(not(unix))]
    {
        let _ = (shell, timeout);
        None
    }
}

#[cfg_attr(not(unix), allow(dead_code))]
fn extract(output: &str) -> Option<String> {
    let start = output.find(START)? + START.len();
    let len = output[start..].find(END)?;
    let path = output[start..start + len].trim();
    (!path.is_empty()).then(|| path.to_owned())
}

/// The login shell's entries in its order, then the process's own that it lacks; no empty
/// entries, no repeats.
pub fn merge(login: &str, current: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for entry in login.split(':').chain(current.split(':')) {
        if !entry.is_empty() && !seen.contains(&entry) {
            seen.push(entry);
        }
    }
    seen.join(":")
}

#[cfg(test)]
#[path = "login_path_tests.rs"]
mod tests;
