//! "Start at login": opt-in (off until the user ticks it in the tray menu), through
//! tauri-plugin-autostart (a login item on macOS, the Run key on Windows, an XDG autostart
//! entry on Linux). The entry starts the app with `--hidden`: in the tray, supervising, with
//! no window (and so no webview) until the user opens one.

use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Runtime};
use tauri_plugin_autostart::ManagerExt;

/// The argument the login entry passes: start in the tray, without a window.
pub const HIDDEN: &str = "--hidden";

pub fn plugin<R: Runtime>() -> TauriPlugin<R> {
    tauri_plugin_autostart::Builder::new()
        .args([HIDDEN])
        .build()
}

/// Whether this process was started to stay in the tray (by the login entry).
pub fn starts_hidden(mut args: impl Iterator<Item = String>) -> bool {
    args.any(|a| a == HIDDEN)
}

/// Whether the app starts at login; false when the platform cannot say.
pub fn enabled<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.autolaunch().is_enabled().unwrap_or(false)
}

/// Turns starting at login on or off; the error names what failed, for the log.
pub fn set<R: Runtime>(app: &AppHandle<R>, on: bool) -> Result<(), String> {
    let manager = app.autolaunch();
    let done = if on {
        manager.enable()
    } else {
        manager.disable()
    };
    done.map_err(|e| {
        let what = if on { "turn on" } else { "turn off" };
        format!("could not {what} starting at login: {e}")
    })
}

#[cfg(test)]
#[path = "autostart_tests.rs"]
mod tests;
