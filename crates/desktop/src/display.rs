//! Whether this session has a display for the window (on Linux and the BSDs: an X server or
//! a Wayland compositor), asked before any GUI toolkit is: over SSH or in a container there
//! is none, and GTK's own failure is a panic with a backtrace. When there is none the app
//! says so in one line (`NoDisplay`), naming what to run instead; the core then stays in
//! the tray if there is one, and otherwise exits with `EXIT`.
//!
//! The check only connects to the display's socket: what answers there is GTK's to judge,
//! and the window process turns GTK's refusal into the same line.

// macOS and Windows always have a display: only the tests ask there.
#![cfg_attr(not(all(unix, not(target_os = "macos"))), allow(dead_code))]

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

/// The exit status of a window process, or a core with no tray, that found no display.
pub const EXIT: i32 = 3;

/// What to run instead, for the line.
const INSTEAD: &str = "run `lifeline watch` to follow the servers in a terminal, or \
                       `lifeline serve` to serve them to MCP clients, instead";

/// Why no window can open: one line, naming what is missing and what to run instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoDisplay {
    missing: String,
}

impl NoDisplay {
    /// GTK refused the display that `check` found (the window process's last word).
    pub fn toolkit(display: &str) -> NoDisplay {
        NoDisplay {
            missing: format!("GTK cannot open the display {display}"),
        }
    }
}

impl fmt::Display for NoDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lifeline-app: no window can open: {}; {INSTEAD}",
            self.missing
        )
    }
}

/// This process's display, from `DISPLAY`, `WAYLAND_DISPLAY` and `XDG_RUNTIME_DIR`; always
/// there on macOS and Windows.
pub fn check() -> Result<(), NoDisplay> {
    #[cfg(all(unix, not(target_os = "macos")))]
    {
        let var = std::env::var_os;
        check_with(
            var("DISPLAY").as_deref(),
            var("WAYLAND_DISPLAY").as_deref(),
            var("XDG_RUNTIME_DIR").as_deref().map(Path::new),
        )
    }
    #[cfg(not(all(unix, not(target_os = "macos"))))]
    {
        Ok(())
    }
}

/// The display the environment names, as GTK would look for it (Wayland first, then X).
pub fn named() -> String {
    let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (var("WAYLAND_DISPLAY"), var("DISPLAY")) {
        (Some(w), _) => format!("WAYLAND_DISPLAY={w}"),
        (None, Some(x)) => format!("DISPLAY={x}"),
        (None, None) => "(none set)".into(),
    }
}

/// `check` with the environment given: a Wayland socket or an X server that accepts a
/// connection is a display.
fn check_with(
    x: Option<&OsStr>,
    wayland: Option<&OsStr>,
    runtime_dir: Option<&Path>,
) -> Result<(), NoDisplay> {
    fn set(v: Option<&OsStr>) -> Option<std::borrow::Cow<'_, str>> {
        v.filter(|v| !v.is_empty()).map(OsStr::to_string_lossy)
    }
    let (x, wayland) = (set(x), set(wayland));
    if x.is_none() && wayland.is_none() {
        return Err(NoDisplay {
            missing: "neither DISPLAY nor WAYLAND_DISPLAY is set (no graphical session)".into(),
        });
    }
    let mut refused = Vec::new();
    if let Some(name) = &wayland {
        match wayland_socket(name, runtime_dir) {
            Some(path) if connects(&path) => return Ok(()),
            _ => refused.push(format!("no Wayland compositor at WAYLAND_DISPLAY={name}")),
        }
    }
    if let Some(name) = &x {
        match x_answers(name) {
            Some(false) => refused.push(format!("no X server answers at DISPLAY={name}")),
            // Answers, or a form this check does not know: GTK judges.
            _ => return Ok(()),
        }
    }
    Err(NoDisplay {
        missing: refused.join(" and "),
    })
}

/// Where a Wayland compositor named `name` listens: `name` itself when absolute, else in
/// `XDG_RUNTIME_DIR`.
fn wayland_socket(name: &str, runtime_dir: Option<&Path>) -> Option<PathBuf> {
    let name = Path::new(name);
    if name.is_absolute() {
        Some(name.to_owned())
    } else {
        runtime_dir.map(|d| d.join(name))
    }
}

#[cfg(unix)]
fn connects(path: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(path).is_ok()
}

#[cfg(not(unix))]
fn connects(_path: &Path) -> bool {
    true
}

/// How long an X server over TCP (SSH's forwarding, another host) gets to accept.
const TCP_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether the X server `DISPLAY` names accepts a connection: `[host]:N[.S]`, on the local
/// socket `/tmp/.X11-unix/XN` (or its abstract twin, on Linux) without a host, else TCP port
/// 6000+N. `None` for a form this does not parse.
fn x_answers(display: &str) -> Option<bool> {
    let (host, rest) = display.rsplit_once(':')?;
    let number: u16 = rest.split('.').next()?.parse().ok()?;
    if host.starts_with('/') {
        // A socket path (XQuartz's launchd form): the whole of DISPLAY.
        return Some(connects(Path::new(display)));
    }
    if host.is_empty() || host == "unix" {
        let path = format!("/tmp/.X11-unix/X{number}");
        return Some(connects(Path::new(&path)) || connects_abstract(&path));
    }
    let port = 6000u16.checked_add(number)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs = std::net::ToSocketAddrs::to_socket_addrs(&(host, port)).ok()?;
    Some(
        addrs
            .into_iter()
            .any(|a| std::net::TcpStream::connect_timeout(&a, TCP_PATIENCE).is_ok()),
    )
}

#[cfg(target_os = "linux")]
fn connects_abstract(path: &str) -> bool {
    use std::os::linux::net::SocketAddrExt;
    std::os::unix::net::SocketAddr::from_abstract_name(path.as_bytes())
        .and_then(|a| std::os::unix::net::UnixStream::connect_addr(&a))
        .is_ok()
}

#[cfg(not(target_os = "linux"))]
fn connects_abstract(_path: &str) -> bool {
    false
}

#[cfg(all(test, unix))]
#[path = "display_tests.rs"]
mod tests;
