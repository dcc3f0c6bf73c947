//! The Lifeline desktop app's core process, without any GUI toolkit: one
//! `lifeline_core::supervisor::Fleet` (the config file's servers, or the demo when there is
//! none), the commands the UI invokes (`dispatch`), the history, the local HTTP endpoint, and
//! the instance socket over which a second start, `lifeline connect` bridges and the window
//! process reach it. It owns no policy: every decision is lifeline-core's.
//!
//! What the desktop adds — the tray icon and its menu, notifications, and on macOS the Dock —
//! is a `Shell`, given by the host that runs the core: `lifeline-tray` on Linux (this crate's
//! binary: a StatusNotifierItem over D-Bus, so the resident process maps neither GTK nor
//! WebKitGTK), `lifeline-app` itself on macOS and Windows (tauri's tray). The window is always
//! its own process, `lifeline-app --window DIR` (src-tauri), speaking `ipc` and `window`'s
//! protocols to the core over the socket.

pub mod bundle;
pub mod bus;
pub mod commands;
pub mod core_process;
pub mod demo;
pub mod dispatch;
pub mod display;
pub mod error;
pub mod history;
pub mod instance;
pub mod ipc;
pub mod launch;
pub mod log_file;
#[cfg(target_os = "linux")]
pub mod login_entry;
pub mod logs;
pub mod serve;
pub mod source;
pub mod state;
#[cfg(test)]
mod test_support;
pub mod tray;
pub mod view;
pub mod window;
#[cfg(test)]
mod wire;

pub use core_process::{Core, Shell};

/// When the process began: the origin of the "first paint" log line (`commands::app::ui_painted`).
pub static STARTED: std::sync::OnceLock<tokio::time::Instant> = std::sync::OnceLock::new();
