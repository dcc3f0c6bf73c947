//! Starting a stdio server's process: the command with the environment it gets (the MCP
//! SDKs' few variables from `child_env`, or everything with `inheritEnv`, plus its own
//! `env`), its working directory, and a process tree of its own (`tree`: a process group on
//! Unix, a Job Object on Windows), so that shutdown reaches everything it started. On
//! Windows the command is first looked up the way a shell would (`resolve::windows_program`:
//! PATHEXT, so `npx` is `npx.cmd`); std runs a `.cmd`/`.bat` through `cmd.exe /d /c` with its
//! arguments quoted for it, and refuses arguments it cannot quote safely. The process is recorded in the
//! runs file while it runs (`runs`) and reaped by a task that owns it. Failing to start is a
//! `spawn` error naming the command, what went wrong and the PATH that was searched.
//!
//! No server outlives Lifeline. On Linux each server asks the kernel for SIGKILL when its
//! parent dies (`PR_SET_PDEATHSIG`), so a Lifeline that is killed (SIGKILL included) takes its
//! servers with it; what a server started in turn sees its stdin close, and `runs` reaps
//! whatever is left on the next start. The kernel sends that signal when the *thread* that
//! forked the child exits, not the process. Tokio's worker threads live as long as their
//! runtime, but the blocking pool retires idle threads after 10 s and `block_in_place` hands
//! a worker's role to another thread, so a spawn made from an arbitrary thread could kill its
//! server long before Lifeline ends. Every server is therefore forked from one dedicated
//! thread that never exits while the process lives. On Windows the job does this: it is
//! closed, and its processes killed, when Lifeline's handles close as it dies. On macOS
//! neither exists: a server sees its stdin close when Lifeline dies.
//!
//! A serving Lifeline raises its own open-files limit (`nofile::raise`); every server gets
//! the original soft limit back before it execs (`restore_nofile`), since `select()`-based
//! servers break on descriptors past 1024.

use super::stdio_config::StdioConfig;
use super::tree::Tree;
use super::{child_env, runs};
use crate::error::{Error, ErrorKind, ExitStatus, Phase, Stage};
use std::io;
use std::process::Stdio;
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

/// A started server process: its process tree, its pipes, and its exit status once
/// it has exited and was reaped.
pub(super) struct Started {
    pub(super) tree: Tree,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: ChildStdout,
    pub(super) stderr: ChildStderr,
    /// `None` while the process runs; its exit status once it was reaped.
    pub(super) exit: watch::Receiver<Option<ExitStatus>>,
}

/// Starts the server process (see the module doc).
pub(super) fn start(config: &StdioConfig) -> Result<Started, Error> {
    if let Some(cwd) = &config.cwd
        && !cwd.is_dir()
    {
        return Err(spawn_error(format!(
            "could not start `{}`: its working directory {} does not exist; fix `cwd` in the config",
            config.command,
            cwd.display()
        )));
    }
    #[cfg(windows)]
    let mut cmd = Command::new(super::resolve::windows_program(config));
    #[cfg(not(windows))]
    let mut cmd = Command::new(&config.command);
    if !config.inherit_env {
        cmd.env_clear()
            .envs(child_env::passed(std::env::vars_os(), cfg!(windows)));
    }
    // The login shell's PATH when a desktop started Lifeline (`login_path`); a PATH in the
    // config's `env` still wins.
    if let Some(path) = crate::login_path::path() {
        cmd.env("PATH", path);
    }
    cmd.args(&config.args)
        .envs(config.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    Tree::prepare(&mut cmd);
    if let Some(cwd) = &config.cwd {
        cmd.current_dir(cwd);
    }
    let mut child = spawn_from_thread(cmd).map_err(|e| spawn_failure(config, &e))?;
    let tree = Tree::adopt(&mut child).map_err(|e| spawn_failure(config, &e))?;
    let pid = child.id().map(|p| p as i32).unwrap_or(0);
    runs::started(pid);
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");

    let (exit_tx, exit) = watch::channel(None);
    tokio::spawn(async move {
        // This task owns the child, so it is always reaped.
        let status = match child.wait().await {
            Ok(s) => exit_status(s),
            Err(_) => killed(),
        };
        runs::exited(pid);
        let _ = exit_tx.send(Some(status));
    });
    Ok(Started {
        tree,
        stdin,
        stdout,
        stderr,
        exit,
    })
}

/// How a reaped process ended, in the core's terms.
/// Unix: a code, or the signal that ended it. Windows: always a code (there are no
/// signals; a process `Tree::kill` ended exits with `tree::KILLED_EXIT_CODE`).
fn exit_status(s: std::process::ExitStatus) -> ExitStatus {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        match (s.code(), s.signal()) {
            (Some(c), _) => ExitStatus::Code(c),
            (None, Some(sig)) => ExitStatus::Signal(sig),
            (None, None) => ExitStatus::Code(-1),
        }
    }
    #[cfg(not(unix))]
    ExitStatus::Code(s.code().unwrap_or(-1))
}

/// How a process whose wait failed is reported: it was killed.
fn killed() -> ExitStatus {
    #[cfg(unix)]
    return ExitStatus::Signal(rustix::process::Signal::KILL.as_raw());
    #[cfg(windows)]
    #[allow(clippy::cast_possible_wrap)]
    return ExitStatus::Code(super::tree::KILLED_EXIT_CODE as i32);
}

fn spawn_error(message: String) -> Error {
    Error::new(ErrorKind::Spawn, message).in_stage(Phase::Connect, Some(Stage::Spawn))
}

fn spawn_failure(config: &StdioConfig, e: &io::Error) -> Error {
    let path = config
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| Some(crate::login_path::effective()))
        .unwrap_or_default();
    let what = match e.kind() {
        // A command with a slash is not looked up in PATH: naming PATH would mislead.
        io::ErrorKind::NotFound if super::resolve::is_path(&config.command) => {
            "command not found: no such file; check the path in the config".to_owned()
        }
        io::ErrorKind::NotFound => format!(
            "command not found (searched PATH={path}); install it or give an absolute path in the config"
        ),
        io::ErrorKind::PermissionDenied => {
            "permission denied: the file is not executable (chmod +x it) or a directory on the way is not readable".into()
        }
        _ => io_reason(e),
    };
    // A PATH from the config is an env value like any other: never shown.
    let message = format!("could not start `{}`: {what}", config.command);
    spawn_error(config.redactor().scrub(&message))
}

/// An I/O error as its kind and OS error code: never a path or other detail.
pub(super) fn io_reason(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => format!("{} (os error {code})", e.kind()),
        None => e.kind().to_string(),
    }
}

// ## The spawning thread

type Job = Box<dyn FnOnce() + Send>;

/// The spawning thread's mailbox; `None` when the thread could not be started (then spawns
/// happen on the caller's thread, which still has a parent-death signal, tied to it).
static SPAWNER: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();

fn spawner() -> Option<&'static Mutex<Sender<Job>>> {
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let started = std::thread::Builder::new()
                .name("lifeline-spawn".into())
                .spawn(move || {
                    // The sender lives in a static, so this loop never ends: the thread
                    // lives, and holds its children's parent-death signal, until the
                    // process exits.
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                });
            match started {
                Ok(_) => Some(Mutex::new(tx)),
                Err(e) => {
                    tracing::warn!("no spawning thread ({e}); servers start from the caller's");
                    None
                }
            }
        })
        .as_ref()
}

/// Spawns `cmd` from the spawning thread (see the module doc), inside the caller's tokio runtime (the child is
/// registered with it). Blocks the caller for as long as a fork and exec take, as
/// `Command::spawn` itself does.
fn spawn_from_thread(mut cmd: Command) -> io::Result<Child> {
    die_with_parent(&mut cmd);
    restore_nofile(&mut cmd);
    let Some(spawner) = spawner() else {
        return cmd.spawn();
    };
    let runtime = tokio::runtime::Handle::current();
    let (tx, rx) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _entered = runtime.enter();
        let _ = tx.send(cmd.spawn());
    });
    let sent = spawner.lock().map(|s| s.send(job));
    match sent {
        Ok(Ok(())) => rx
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the spawning thread is gone"))),
        // The thread is gone or the lock poisoned: nothing was spawned.
        _ => Err(io::Error::other("the spawning thread is gone")),
    }
}

#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    use rustix::process::{Pid, Signal, getppid, set_parent_process_death_signal};
    let parent = i32::try_from(std::process::id())
        .ok()
        .and_then(Pid::from_raw);
    // SAFETY: runs in the forked child before exec; rustix's prctl and getppid are plain
    // system calls (async-signal-safe) and the closure allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            set_parent_process_death_signal(Some(Signal::KILL))?;
            // Lifeline may have died between the fork and the prctl: then no signal comes,
            // so the child must not start at all.
            if getppid() != parent {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}

/// Gives the child the open-files limit Lifeline had before `nofile::raise`, if it raised it.
#[cfg(unix)]
fn restore_nofile(cmd: &mut Command) {
    let Some(original) = crate::nofile::original() else {
        return;
    };
    // SAFETY: runs in the forked child before exec; rustix's setrlimit is a plain system
    // call (async-signal-safe) and the closure allocates nothing (`original` is a copy made
    // before the fork).
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::setrlimit(rustix::process::Resource::Nofile, original)?;
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn restore_nofile(_cmd: &mut Command) {}

/// Elsewhere there is no parent-death signal: a server sees its stdin close when Lifeline
/// dies, which ends every MCP server that reads it.
#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn soft_limit() -> u64 {
        let now = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        now.current.unwrap_or(u64::MAX)
    }

    #[tokio::test]
    async fn a_server_gets_the_open_files_limit_lifeline_had_before_raising_it() {
        // A login session's low soft limit, then what `lifeline serve` does at start.
        let mut low = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        low.current = Some(200);
        rustix::process::setrlimit(rustix::process::Resource::Nofile, low).unwrap();
        let (_, raised) = crate::nofile::raise().expect("raised");
        assert!(raised > 200 && soft_limit() == raised, "{raised}");
        let config = StdioConfig::new("sh", vec!["-c".into(), "ulimit -n".into()]);
        let mut started = start(&config).unwrap();
        let mut out = String::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            started.stdout.read_to_string(&mut out),
        )
        .await
        .expect("the child's `ulimit -n` within 10 s")
        .unwrap();
        assert_eq!(out.trim(), "200", "the child's limit");
        assert_eq!(soft_limit(), raised, "Lifeline's own limit");
    }
}
