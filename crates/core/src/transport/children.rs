//! Starting stdio servers so that none outlives Lifeline. On Linux each server asks the
//! kernel for SIGKILL when its parent dies (`PR_SET_PDEATHSIG`), so a Lifeline that is killed
//! (SIGKILL included) takes its servers with it; what a server started in turn sees its stdin
//! close, and `runs` reaps whatever is left on the next start.
//!
//! The kernel sends that signal when the *thread* that forked the child exits, not the
//! process. Tokio's worker threads live as long as their runtime, but the blocking pool
//! retires idle threads after 10 s and `block_in_place` hands a worker's role to another
//! thread, so a spawn made from an arbitrary thread could kill its server long before
//! Lifeline ends. Every server is therefore forked from one dedicated thread that never
//! exits while the process lives.

use std::io;
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};
use tokio::process::{Child, Command};

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

/// Spawns `cmd` from the spawning thread, inside the caller's tokio runtime (the child is
/// registered with it). Blocks the caller for as long as a fork and exec take, as
/// `Command::spawn` itself does.
pub(crate) fn spawn(mut cmd: Command) -> io::Result<Child> {
    die_with_parent(&mut cmd);
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
    let parent = i32::try_from(std::process::id()).unwrap_or(0);
    // SAFETY: runs in the forked child before exec; prctl and getppid are async-signal-safe
    // and the closure allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(io::Error::last_os_error());
            }
            // Lifeline may have died between the fork and the prctl: then no signal comes,
            // so the child must not start at all.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Elsewhere there is no parent-death signal: a server sees its stdin close when Lifeline
/// dies, which ends every MCP server that reads it.
#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}
