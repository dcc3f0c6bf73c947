//! The runs file: which stdio servers this process has running, so that the next Lifeline
//! can end them when this one crashed. One file per running Lifeline (`<pid>.run` in the
//! runs directory), holding the boot id, this process's pid and start time, its session, and
//! each live server's pid and start time; it is gone once no server runs.
//!
//! On start (`track`), a file whose owner is not running any more (its pid is gone or
//! belongs to a process that started at another time) is a crashed run: each of its servers
//! still running — same pid *and* same start time, so never a reused pid — is killed with
//! its process group; a server already gone (the parent-death signal took it) leaves its
//! group behind, whose members in the same session that started after it are killed.
//!
//! Linux only: elsewhere `track` does nothing.
//! - Windows needs no reaper. Each server runs in a Job Object of its own with
//!   `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` and no breakaway (`tree`), created suspended and
//!   resumed only once in the job, so everything it starts is in the job. Only Lifeline holds
//!   the job's handle (it is not inheritable), and the kernel closes every handle of a process
//!   that ends, however it ends (a crash, `taskkill /F`, TerminateProcess): the job closes and
//!   kills all of its processes before a next Lifeline could start. A crashed run leaves
//!   nothing behind to record or reap.
//! - macOS has neither a parent-death signal nor `/proc`: servers rely on their stdin
//!   closing when Lifeline dies, which ends every MCP server that reads it (docs/config.md).
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

#[cfg(target_os = "linux")]
use rustix::process::{Pid, Signal, kill_process, kill_process_group};

/// `<data dir>/lifeline/runs` (`~/.local/share/lifeline/runs` on Linux).
pub fn default_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("lifeline").join("runs"))
}

/// What `track` ended: the pids of leftover processes of crashed runs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reaped {
    pub killed: Vec<i32>,
}

/// This process's runs file, once `track` was called.
static RUNS: OnceLock<Runs> = OnceLock::new();

struct Runs {
    file: PathBuf,
    owner: Proc,
    boot: String,
    children: Mutex<Vec<Proc>>,
}

/// A process as the kernel identifies it for good: its pid and when it started (clock ticks
/// since boot, `/proc/PID/stat` field 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    pid: i32,
    start: u64,
}

/// Reaps the leftovers of crashed runs in `dir`, then records this process's stdio servers
/// there from now on. Call once, before the first server starts; later calls only reap.
/// Problems (an unwritable directory) are logged: servers still run, unrecorded.
pub fn track(dir: &Path) -> Reaped {
    let reaped = reap(dir);
    if let Err(e) = start_recording(dir) {
        tracing::warn!("not recording stdio servers in {}: {e}", dir.display());
    }
    reaped
}

#[cfg(target_os = "linux")]
fn start_recording(dir: &Path) -> std::io::Result<()> {
    let pid = i32::try_from(std::process::id()).unwrap_or(0);
    let owner = proc_info(pid)
        .map(|i| i.proc)
        .ok_or_else(|| std::io::Error::other("cannot read this process's start time"))?;
    crate::private::create_dir(dir)?;
    let runs = Runs {
        file: dir.join(format!("{pid}.run")),
        owner,
        boot: boot_id(),
        children: Mutex::new(Vec::new()),
    };
    let _ = RUNS.set(runs);
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn start_recording(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

/// A server was spawned: record it (no-op before `track` or off Linux).
pub(crate) fn started(pid: i32) {
    let Some(runs) = RUNS.get() else { return };
    let Some(info) = proc_info(pid) else { return };
    let mut children = runs.children.lock().unwrap_or_else(|e| e.into_inner());
    children.push(info.proc);
    runs.save(&children);
}

/// A server was reaped: forget it.
pub(crate) fn exited(pid: i32) {
    let Some(runs) = RUNS.get() else { return };
    let mut children = runs.children.lock().unwrap_or_else(|e| e.into_inner());
    children.retain(|c| c.pid != pid);
    runs.save(&children);
}

impl Runs {
    /// Rewrites the file (atomically, 0600), or removes it when no server runs.
    fn save(&self, children: &[Proc]) {
        if children.is_empty() {
            let _ = std::fs::remove_file(&self.file);
            return;
        }
        let session = proc_info(self.owner.pid).map_or(0, |i| i.session);
        let mut text = format!(
            "boot {}\nowner {} {}\nsession {session}\n",
            self.boot, self.owner.pid, self.owner.start
        );
        for c in children {
            text.push_str(&format!("child {} {}\n", c.pid, c.start));
        }
        if let Err(e) =
            crate::private::write_atomic(&self.file, text.as_bytes(), crate::private::Mode::Private)
        {
            tracing::warn!(
                "could not record stdio servers in {}: {e}",
                self.file.display()
            );
        }
    }
}

/// A run file as read back.
#[derive(Debug, PartialEq, Eq)]
struct RunFile {
    boot: String,
    owner: Proc,
    session: i32,
    children: Vec<Proc>,
}

fn parse(text: &str) -> Option<RunFile> {
    let mut boot = None;
    let mut owner = None;
    let mut session = None;
    let mut children = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let proc = |w: &[&str]| -> Option<Proc> {
            Some(Proc {
                pid: w.get(1)?.parse().ok()?,
                start: w.get(2)?.parse().ok()?,
            })
        };
        match words.first().copied() {
            Some("boot") => boot = words.get(1).map(|b| (*b).to_owned()),
            Some("owner") => owner = proc(&words),
            Some("session") => session = words.get(1).and_then(|s| s.parse().ok()),
            Some("child") => children.push(proc(&words)?),
            _ => return None,
        }
    }
    Some(RunFile {
        boot: boot?,
        owner: owner?,
        session: session?,
        children,
    })
}

/// How to fix a runs directory or file that is refused.
const ELSEWHERE: &str = "remove it so Lifeline makes a new one";

/// Ends the leftovers of every crashed run in `dir` and removes their files. Nothing in a
/// directory, or no file, that another user owns or may write is read
/// (`private::check_trusted`).
fn reap(dir: &Path) -> Reaped {
    let mut reaped = Reaped::default();
    if !cfg!(target_os = "linux") {
        return reaped;
    }
    // A runs file names processes to kill: one another user could have written is not read.
    if let Err(e) = crate::private::check_trusted_dir(dir, ELSEWHERE) {
        tracing::warn!("not ending what crashed runs left: {e}");
        return reaped;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return reaped;
    };
    let boot = boot_id();
    for entry in entries.flatten() {
        let path = entry.path();
        if !is_run_file(&path) {
            continue;
        }
        if let Err(e) = crate::private::check_trusted(&path, ELSEWHERE) {
            tracing::warn!("not reading a runs file: {e}");
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Some(run) = parse(&text) else {
            tracing::warn!("removing an unreadable runs file {}", path.display());
            let _ = std::fs::remove_file(&path);
            continue;
        };
        if run.boot == boot && is_running(run.owner) {
            continue;
        }
        if run.boot == boot {
            for child in &run.children {
                reaped.killed.extend(reap_child(*child, run.session));
            }
        }
        // After a reboot nothing of that run is left: the file is only stale.
        let _ = std::fs::remove_file(&path);
    }
    if !reaped.killed.is_empty() {
        tracing::info!(pids = ?reaped.killed, "ended stdio servers a crashed Lifeline left running");
    }
    reaped
}

/// A run's file (`<pid>.run`), or the temporary file `private::write_atomic` was filling for
/// one when its run was killed before the rename: that run's servers are recorded only there
/// (its owner is dead, so the text is all it will ever be; a live owner's is left alone).
fn is_run_file(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e == "run") {
        return true;
    }
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.') && n.ends_with(".tmp") && n.contains(".run."))
}

/// Kills what is left of one server of a crashed run; returns the pids signalled.
#[cfg(not(target_os = "linux"))]
fn reap_child(_child: Proc, _session: i32) -> Vec<i32> {
    Vec::new()
}

/// Kills what is left of one server of a crashed run; returns the pids signalled.
#[cfg(target_os = "linux")]
fn reap_child(child: Proc, session: i32) -> Vec<i32> {
    match proc_info(child.pid) {
        // The server itself, still running: it leads its group (the pid is the group id).
        Some(i) if i.proc == child => {
            signal_group(child.pid);
            vec![child.pid]
        }
        // The pid now names another process: its group is not ours.
        Some(_) => Vec::new(),
        // The server is gone; what it started may still run in its group. A group id is not
        // reused while the group has members, so a member in the crashed run's session that
        // started after the server is one of its own.
        None => {
            let members: Vec<i32> = all_procs()
                .into_iter()
                .filter(|i| i.group == child.pid && i.session == session)
                .filter(|i| i.proc.start >= child.start)
                .map(|i| i.proc.pid)
                .collect();
            for pid in members.iter().filter_map(|p| Pid::from_raw(*p)) {
                let _ = kill_process(pid, Signal::KILL);
            }
            members
        }
    }
}

#[cfg(target_os = "linux")]
fn signal_group(pid: i32) {
    // A stale group yields ESRCH, which is the group gone: nothing to do.
    if let Some(group) = Pid::from_raw(pid).filter(|_| pid > 0) {
        let _ = kill_process_group(group, Signal::KILL);
    }
}

fn is_running(p: Proc) -> bool {
    proc_info(p.pid).is_some_and(|i| i.proc == p)
}

/// What `/proc/PID/stat` says about a live (not zombie) process.
#[derive(Debug, Clone, Copy)]
struct Info {
    proc: Proc,
    group: i32,
    session: i32,
}

fn proc_info(pid: i32) -> Option<Info> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &stat)
}

/// Parses `/proc/PID/stat`: "pid (comm) state ppid pgrp session … starttime(22) …". The
/// command name may hold spaces and parentheses, so fields are counted after the last `)`.
fn parse_stat(pid: i32, stat: &str) -> Option<Info> {
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); field N is fields[N - 3].
    if matches!(fields.first(), Some(&("Z" | "X"))) {
        return None;
    }
    Some(Info {
        proc: Proc {
            pid,
            start: fields.get(19)?.parse().ok()?,
        },
        group: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
    })
}

fn all_procs() -> Vec<Info> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_info)
        .collect()
}

/// This boot's id: pids and start times mean nothing across a reboot.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty() && !s.contains(char::is_whitespace))
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(all(test, target_os = "linux"))]
#[path = "runs_tests.rs"]
mod tests;
