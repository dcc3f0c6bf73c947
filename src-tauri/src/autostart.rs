//! "Start at login" on macOS and Windows: opt-in (off until the user ticks it in the tray
//! menu), through tauri-plugin-autostart (a login item on macOS, the Run key on Windows). The
//! entry starts the app with `--hidden`: in the tray, supervising, with no window (and so no
//! webview) until the user opens one. On Linux `lifeline-tray` writes an XDG autostart entry
//! itself (lifeline-desktop's `login_entry`).

use lifeline_desktop::launch::HIDDEN;
use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Runtime};
use tauri_plugin_autostart::ManagerExt;

pub fn plugin<R: Runtime>() -> TauriPlugin<R> {
    tauri_plugin_autostart::Builder::new()
        .args([HIDDEN])
        .build()
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
