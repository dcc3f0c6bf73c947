//! `lifeline-app`: the desktop app. Its processes:
//!
//! - **The core** (the fleet, the tray, the history, the local socket; never a webview):
//!   lifeline-desktop's `Core`. On Linux that is `lifeline-tray`, a separate executable with
//!   no GUI toolkit, which `lifeline-app` replaces itself with (`exec`), so that the app in
//!   the tray maps neither GTK nor WebKitGTK. On macOS and Windows it is this executable
//!   (host.rs), on tauri's event loop with tauri's tray.
//! - **The window** (`lifeline-app --window DIR`, window_process.rs), while the window is
//!   open: the webview and the UI, whose every command reaches the core over the socket.
//!
//! It owns no policy: every decision is lifeline-core's.

// A release build on Windows opens no console window next to the app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

#[cfg(not(target_os = "linux"))]
mod autostart;
#[cfg(test)]
mod capabilities_tests;
mod dialogs;
#[cfg(not(target_os = "linux"))]
mod host;
mod invoke;
mod macos;
mod window_process;

#[cfg(test)]
mod ipc_tests;

fn main() {
    lifeline_desktop::STARTED.get_or_init(tokio::time::Instant::now);
    if let Some(dir) = lifeline_desktop::window::window_arg(std::env::args_os()) {
        window_process::run(dir, tauri::generate_context!());
    }
    #[cfg(target_os = "linux")]
    become_the_core();
    #[cfg(not(target_os = "linux"))]
    host::run(tauri::generate_context!());
}

/// Replaces this process with `lifeline-tray` beside it, with the same arguments: the same
/// process, so whoever started the app (a launcher, the login entry, a test) still has it.
#[cfg(target_os = "linux")]
fn become_the_core() -> ! {
    use std::os::unix::process::CommandExt;
    let core = std::env::current_exe().map(|exe| exe.with_file_name("lifeline-tray"));
    let error = match &core {
        Ok(core) => std::process::Command::new(core)
            .args(std::env::args_os().skip(1))
            .exec(),
        Err(e) => std::io::Error::new(e.kind(), e.to_string()),
    };
    let path = core.map_or("lifeline-tray".into(), |p| p.display().to_string());
    eprintln!(
        "lifeline-app: cannot start the Lifeline core, {path} ({error}); it is installed beside \
         lifeline-app (from a checkout: cargo build --workspace)"
    );
    std::process::exit(1);
}
