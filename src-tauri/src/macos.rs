//! What the app does differently on macOS: its menu bar, and living in the menu bar's
//! status area without a Dock icon while its window is closed.
//!
//! - **The app menu.** A Mac app without an Edit menu has no ⌘C/⌘V in its webview, and
//!   Tauri's default Quit item asks to exit the way closing the last window does, which
//!   the app turns into "keep running in the tray". So the menu is made here: Lifeline
//!   (About, Services, Hide, Hide Others, Show All, Quit Lifeline ⌘Q — a real quit), Edit
//!   (Undo, Redo, Cut, Copy, Paste, Select All) and Window (Minimize, Zoom, Close Window
//!   ⌘W, which closes to the tray like the close button).
//! - **Dock-less in the tray.** The core process (the tray, no window ever) is an accessory
//!   app when it has a tray: no Dock icon, no ⌘-Tab entry, only the status item. The window
//!   process (`lifeline-app --window`, window_process.rs) is a regular app (Dock icon,
//!   ⌘-Tab, this menu) for as long as its window is open; clicking its Dock icon
//!   (`RunEvent::Reopen`) brings the window back, and its Quit asks the core to quit.
//!
//! The decisions are the pure functions below, tested on every OS; the calls into AppKit
//! are compiled for macOS only and type-checked by `make macos-check` (docs/packaging.md).

/// How the app presents itself to the Dock.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// A Dock icon and a place in ⌘-Tab: a window is open.
    Regular,
    /// Only the status item: no window, supervising from the tray.
    Accessory,
}

/// The presence for whether a window is open. Without a tray to come back to, the app
/// never hides from the Dock (it would be unreachable).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub fn presence(window_open: bool, tray_available: bool) -> Presence {
    if window_open || !tray_available {
        Presence::Regular
    } else {
        Presence::Accessory
    }
}

/// The id of the app menu's Quit item (a custom item, so that it exits for real).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub const QUIT: &str = "app-quit";

#[cfg(target_os = "macos")]
mod appkit {
    use super::{Presence, QUIT, presence};
    use tauri::menu::{AboutMetadata, Menu, MenuItem, PredefinedMenuItem, Submenu};
    use tauri::{ActivationPolicy, AppHandle, Runtime};

    /// The menu bar: Lifeline, Edit, Window (module docs).
    pub fn menu<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<Menu<R>> {
        let name = "Lifeline";
        let about = AboutMetadata {
            name: Some(name.into()),
            version: Some(app.package_info().version.to_string()),
            ..Default::default()
        };
        let app_menu = Submenu::with_items(
            app,
            name,
            true,
            &[
                &PredefinedMenuItem::about(app, Some("About Lifeline"), Some(about))?,
                &PredefinedMenuItem::separator(app)?,
                &PredefinedMenuItem::services(app, None)?,
                &PredefinedMenuItem::separator(app)?,
                &PredefinedMenuItem::hide(app, None)?,
                &PredefinedMenuItem::hide_others(app, None)?,
                &PredefinedMenuItem::show_all(app, None)?,
                &PredefinedMenuItem::separator(app)?,
                &MenuItem::with_id(app, QUIT, "Quit Lifeline", true, Some("CmdOrCtrl+Q"))?,
            ],
        )?;
        let edit = Submenu::with_items(
            app,
            "Edit",
            true,
            &[
                &PredefinedMenuItem::undo(app, None)?,
                &PredefinedMenuItem::redo(app, None)?,
                &PredefinedMenuItem::separator(app)?,
                &PredefinedMenuItem::cut(app, None)?,
                &PredefinedMenuItem::copy(app, None)?,
                &PredefinedMenuItem::paste(app, None)?,
                &PredefinedMenuItem::select_all(app, None)?,
            ],
        )?;
        let window = Submenu::with_items(
            app,
            "Window",
            true,
            &[
                &PredefinedMenuItem::minimize(app, None)?,
                &PredefinedMenuItem::maximize(app, Some("Zoom"))?,
                &PredefinedMenuItem::separator(app)?,
                &PredefinedMenuItem::close_window(app, None)?,
            ],
        )?;
        Menu::with_items(app, &[&app_menu, &edit, &window])
    }

    pub fn present<R: Runtime>(app: &AppHandle<R>, window_open: bool, tray_available: bool) {
        let policy = match presence(window_open, tray_available) {
            Presence::Regular => ActivationPolicy::Regular,
            Presence::Accessory => ActivationPolicy::Accessory,
        };
        if let Err(e) = app.set_activation_policy(policy) {
            tracing::debug!("the Dock presence did not change: {e}");
        }
    }
}

/// The app's menu bar (macOS only; elsewhere the window has none).
#[cfg(target_os = "macos")]
pub use appkit::menu;

/// Shows or hides the Dock icon for whether a window is open (macOS; nothing elsewhere).
#[cfg_attr(target_os = "linux", allow(dead_code))]
pub fn present<R: tauri::Runtime>(
    app: &tauri::AppHandle<R>,
    window_open: bool,
    tray_available: bool,
) {
    #[cfg(target_os = "macos")]
    appkit::present(app, window_open, tray_available);
    #[cfg(not(target_os = "macos"))]
    let _ = (app, window_open, tray_available);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dock_icon_goes_only_when_the_tray_can_bring_the_window_back() {
        let cases = [
            // (window open, tray available, presence)
            (true, true, Presence::Regular),
            (false, true, Presence::Accessory),
            (true, false, Presence::Regular),
            (false, false, Presence::Regular),
        ];
        for (open, tray, want) in cases {
            assert_eq!(
                presence(open, tray),
                want,
                "window open {open}, tray {tray}"
            );
        }
    }
}
