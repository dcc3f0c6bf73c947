//! The window, from the core process's side. The core never makes a webview: the window is
//! a process of its own (`lifeline-app --window DIR`, src-tauri/src/window_process.rs),
//! started when the window should show and gone when it closes, so that the app in the tray
//! costs the core alone (WebKit and GTK's webview memory leave with that process).
//!
//! At most one window process runs. `show` starts it, or, when it runs, asks it to come to
//! the front. It holds one connection to the core (`window v1` on the instance socket,
//! `link`) on which the core pushes `Push`es; when the core ends, that connection ends and
//! so does the window process. When the window process ends (its window was closed), the
//! core stays in the tray and says so once; without a tray (or with `LIFELINE_CLOSE_QUITS`)
//! the core quits with it.

use crate::Core;
use lifeline_core::local_socket::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::Arc;
use std::sync::{Mutex, MutexGuard, PoisonError};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The argument that makes `lifeline-app` the window process; the socket's directory follows.
pub const ARG: &str = "--window";

/// The first line of the window process's connection.
pub const HELLO: &str = "window v1";

/// WebKitGTK's switch for its accelerated compositing mode.
#[cfg(target_os = "linux")]
const NO_COMPOSITING: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";

/// The one window's label (tauri.conf.json).
pub const LABEL: &str = "main";

/// What the core tells the window process, one JSON line each.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Push {
    /// Come to the front (tray "Open", a second `lifeline-app`).
    Show,
    /// The config changed: the new `AppInfo`, for the UI's `config_changed` event.
    ConfigChanged(Value),
}

/// The window process, as the `Core` holds it.
pub struct Windows {
    /// The window program: `lifeline-app`.
    program: PathBuf,
    /// Where the core's socket is, for the window process.
    dir: PathBuf,
    slot: Mutex<Slot>,
    /// Told each time a window process's link is in the slot, for a wait on it (the tests';
    /// nothing else waits, and an unheard notice is one stored permit).
    linked: tokio::sync::Notify,
}

#[derive(Default)]
struct Slot {
    running: bool,
    /// The window process's connection, once it made it.
    link: Option<mpsc::UnboundedSender<Push>>,
}

impl Windows {
    pub fn new(program: PathBuf, dir: PathBuf) -> Windows {
        Windows {
            program,
            dir,
            slot: Mutex::default(),
            linked: tokio::sync::Notify::new(),
        }
    }

    fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `args` (the process's, program first) start the window process, and its socket's
/// directory.
pub fn window_arg(args: impl IntoIterator<Item = std::ffi::OsString>) -> Option<PathBuf> {
    let mut args = args.into_iter().skip(1);
    while let Some(arg) = args.next() {
        if arg == ARG {
            return args.next().map(PathBuf::from);
        }
    }
    None
}

/// The window program beside this one: `lifeline-app` in the same directory (a package
/// installs them together; `cargo build --workspace` builds them together).
pub fn program_beside() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let name = format!("lifeline-app{}", std::env::consts::EXE_SUFFIX);
    Ok(exe.with_file_name(name))
}

/// Shows the window: brings the running window process to the front, or starts one.
pub fn show(core: &Arc<Core>) {
    let Some(windows) = &core.windows else {
        tracing::warn!("no window: the app has no local socket for one to reach it");
        return;
    };
    let mut slot = windows.slot();
    if slot.running {
        if let Some(link) = &slot.link {
            let _ = link.send(Push::Show);
        }
        return;
    }
    if let Some(child) = spawn(&windows.program, &windows.dir) {
        slot.running = true;
        drop(slot);
        watch(core, child);
    }
}

/// Starts a window process (`program --window DIR`) that will reach the core through the
/// socket in `dir`. The core may call it before it serves the socket (to paint sooner): the
/// window's connections wait in the socket's backlog until it does.
pub fn spawn(program: &Path, dir: &Path) -> Option<Child> {
    let mut command = Command::new(program);
    command.arg(ARG).arg(dir);
    // WebKitGTK's accelerated compositing keeps GL buffers in the web process: ~80 MB more
    // with the window open (docs/packaging.md), and a slower first paint, for a UI that
    // animates little. Off unless the person chose otherwise.
    #[cfg(target_os = "linux")]
    if std::env::var_os(NO_COMPOSITING).is_none() {
        command.env(NO_COMPOSITING, "1");
    }
    match command.spawn() {
        Ok(child) => {
            tracing::info!("window process {} started", child.id());
            Some(child)
        }
        Err(e) => {
            tracing::warn!(
                "the window could not be opened: {} ({e})",
                program.display()
            );
            None
        }
    }
}

/// Takes on a window process `spawn` started before the `Core` was made.
pub fn adopt(core: &Arc<Core>, child: Child) {
    if let Some(windows) = &core.windows {
        windows.slot().running = true;
    }
    watch(core, child);
}

/// Waits for the window process to end, off the runtime's threads. The wait holds no
/// `Core`: an app quitting with its window open does not wait for it.
fn watch(core: &Arc<Core>, mut child: Child) {
    let core = Arc::downgrade(core);
    tokio::task::spawn_blocking(move || match child.wait() {
        Ok(status) => {
            if let Some(core) = core.upgrade() {
                closed(&core, status)
            }
        }
        Err(e) => tracing::warn!("the window process could not be waited for: {e}"),
    });
}

/// The window process ended: the window was closed (or it failed, or found no display).
fn closed(core: &Core, status: ExitStatus) {
    static TOLD: std::sync::Once = std::sync::Once::new();
    if let Some(windows) = &core.windows {
        *windows.slot() = Slot::default();
    }
    if status.code() == Some(crate::display::EXIT) {
        no_display(core);
        return;
    }
    if !status.success() {
        tracing::warn!("the window process ended with {status}");
    }
    if !core.close_keeps_running() {
        tracing::info!("window closed; quitting (no tray to come back from)");
        core.quit();
        return;
    }
    tracing::info!("window closed; supervising from the tray");
    TOLD.call_once(|| {
        core.shell().notify(
            "Lifeline is still supervising your servers",
            "Open it again, or quit, from the Lifeline icon in the tray.",
        )
    });
}

/// The window process found no display (it said why on stderr, which is this process's):
/// the tray keeps the servers supervised; without one the app ends, failing.
fn no_display(core: &Core) {
    if core.shell().has_tray() {
        tracing::warn!(
            "no display for the window ({}): supervising from the tray",
            crate::display::named()
        );
        core.shell().notify(
            "Lifeline cannot open its window",
            "There is no display in this session; Lifeline goes on supervising from the tray.",
        );
    } else {
        tracing::warn!("no display for the window and no tray: quitting");
        core.quit_with(crate::display::EXIT);
    }
}

/// Serves the window process's connection (its hello read): pushes until either side ends.
pub async fn link(core: Arc<Core>, reader: BufReader<Stream>) {
    let (Some(windows), state) = (&core.windows, &core.state) else {
        return;
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    windows.slot().link = Some(tx.clone());
    windows.linked.notify_one();
    let mut changes = state.changes();
    let (mut read, mut write) = tokio::io::split(reader);
    let mut probe = [0u8; 1];
    loop {
        let push = tokio::select! {
            push = rx.recv() => match push {
                Some(push) => push,
                None => break,
            },
            changed = changes.changed() => match changed {
                Ok(()) => Push::ConfigChanged(serde_json::to_value(state.info()).unwrap_or_default()),
                Err(_) => break,
            },
            // The window process went away (or wrote, which it never does).
            _ = read.read(&mut probe) => break,
        };
        let mut line = serde_json::to_string(&push).unwrap_or_default();
        line.push('\n');
        if write.write_all(line.as_bytes()).await.is_err() {
            break;
        }
    }
    let mut slot = windows.slot();
    if slot.link.as_ref().is_some_and(|l| l.same_channel(&tx)) {
        slot.link = None;
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod link_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_argument_names_the_socket_directory() {
        let args = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(
            window_arg(args(&["lifeline-app", "--window", "/run/x"])),
            Some(PathBuf::from("/run/x"))
        );
        assert_eq!(window_arg(args(&["lifeline-app"])), None);
        assert_eq!(window_arg(args(&["lifeline-app", "--hidden"])), None);
        assert_eq!(window_arg(args(&["lifeline-app", "--window"])), None);
    }

    #[test]
    fn pushes_are_one_json_value_each() {
        let line = |p: &Push| serde_json::to_string(p).unwrap();
        assert_eq!(line(&Push::Show), r#""show""#);
        assert_eq!(
            line(&Push::ConfigChanged(serde_json::json!({"mode": "config"}))),
            r#"{"config_changed":{"mode":"config"}}"#
        );
    }
}
