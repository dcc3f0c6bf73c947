//! `lifeline-app`: the desktop shell. It runs one `lifeline_core::supervisor::Fleet` (the
//! config file's servers, or the demo when there is none), answers the UI's commands and
//! streams the core's events to it over tauri Channels. It owns no policy: every decision
//! is the core's.
//!
//! Two processes of this one executable: the core process (this `main`: the fleet, the tray,
//! the history, the local socket; never a webview) and, while the window is open, the window
//! process (`lifeline-app --window DIR`, window_process.rs), whose UI reaches the core over
//! the socket. Closed to the tray, the app is the core process alone.

// A release build on Windows opens no console window next to the app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod auth_cmds;
mod autostart;
mod bundle_cmds;
mod bus;
#[cfg(test)]
mod capabilities_tests;
mod clients_cmds;
mod commands;
mod config_cmds;
mod config_edit;
mod demo;
mod detail_cmds;
mod dialogs;
mod dispatch;
mod error;
mod history;
mod instance;
mod invoke;
mod ipc;
mod log_file;
mod logs;
mod macos;
mod secret_cmds;
mod serve;
mod source;
mod state;
#[cfg(test)]
mod test_support;
mod tray;
mod view;
mod window;
mod window_process;
#[cfg(test)]
mod wire;

#[cfg(test)]
mod ipc_tests;

use lifeline_core::transport::runs;
use state::AppState;
use std::sync::Arc;
use tauri::{Manager, RunEvent, Runtime};

/// When `main` began: the origin of the "first paint" log line (`commands::ui_painted`).
static STARTED: std::sync::OnceLock<tokio::time::Instant> = std::sync::OnceLock::new();

fn main() {
    STARTED.get_or_init(tokio::time::Instant::now);
    // Made once: the window process runs on the same assets.
    let context = tauri::generate_context!();
    if let Some(dir) = window::window_arg(std::env::args_os()) {
        window_process::run(dir, context);
    }
    without_gl();
    let log_dir = logs::dir();
    let mut log_guard = logs::init(log_dir.as_deref());
    tracing::info!(
        "lifeline-app {} starting; logs in {}",
        env!("CARGO_PKG_VERSION"),
        log_dir
            .as_deref()
            .map_or("stderr only".into(), |d| d.display().to_string())
    );
    // A second app would supervise every server twice: it shows the first one instead.
    let instance_dir = instance::dir();
    let instance = match instance_dir.as_deref().map(instance::claim) {
        Some(instance::Claim::Running { shown, dir }) => {
            let how = if shown {
                "showed its window instead"
            } else {
                "it did not answer: quit it (tray → Quit) or end its process, then start again"
            };
            let message = format!(
                "lifeline-app is already running for {} ({how})",
                dir.display()
            );
            tracing::info!("{message}");
            eprintln!("{message}");
            drop(log_guard.take());
            std::process::exit(if shown { 0 } else { 1 });
        }
        Some(instance::Claim::First(guard)) => Some(guard),
        None => None,
    };
    let mut endpoint = Some(instance::endpoint(instance, instance_dir));
    // The window process starts now, beside the core's own start, so that it paints sooner;
    // its commands wait in the socket's backlog until `setup` serves it. Started at login
    // (`--hidden`) the app stays in the tray with no window process.
    let hidden = autostart::starts_hidden(std::env::args());
    let mut early = match (&endpoint, hidden) {
        (Some((_, Some(dir))), false) => window::spawn(dir),
        _ => None,
    };
    // Started from the Dock, a launcher or at login, the app has the desktop's minimal PATH:
    // the login shell's is asked for now, in the background, for the servers it starts.
    lifeline_core::login_path::adopt_in_background(lifeline_core::login_path::DEFAULT_TIMEOUT);
    // Servers a crashed run left behind end now; this run's are recorded from here on.
    if let Some(dir) = runs::default_dir() {
        runs::track(&dir);
    }
    // The core process has no webview, so no commands of its own: the window process's
    // reach it over the socket (ipc.rs).
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_notification::init())
        .plugin(autostart::plugin())
        .setup(move |app| {
            let fixture = demo::fixture_path(app.path().resource_dir().ok().as_deref());
            let (state, serve_settings) = tauri::async_runtime::block_on(async {
                let source = source::load(fixture.as_deref(), log_dir.as_deref()).await;
                let serve_settings = source.config.serve;
                let state = AppState::start_with_history(source, |o| {
                    history::open(lifeline_core::history::resolve_path(), o)
                });
                (state, serve_settings)
            });
            app.manage(state);
            // Hosts that take a URL reach the same supervisors over HTTP, when enabled.
            serve::start(app.handle(), serve_settings);
            config_cmds::start(app.handle().clone());
            exit_on_signals(app.handle().clone());
            tray::install(app.handle());
            tray::watch(app.handle().clone());
            // The core is never a window: on macOS no Dock icon while there is a tray.
            macos::present(app.handle(), false);
            if let Some((guard, dir)) = endpoint.take() {
                if let Some(dir) = dir {
                    app.manage(window::Windows::new(dir));
                }
                serve_socket(app.handle(), guard);
            }
            if let Some(child) = early.take() {
                window::adopt(app.handle(), child);
            } else if !hidden || !tray::available() {
                // Hidden without a tray to come back from, or the early start failed.
                window::show(app.handle());
            } else {
                tracing::info!("started hidden (--hidden): in the tray, no window");
            }
            Ok(())
        })
        .build(context);
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("the app could not start: {e}");
            std::process::exit(1);
        }
    };
    app.run(move |app, event| {
        if let RunEvent::Exit = event {
            if let Some(served) = app.try_state::<Arc<serve::Served>>() {
                tauri::async_runtime::block_on(served.stop());
            }
            if let Some(state) = app.try_state::<AppState>() {
                tauri::async_runtime::block_on(state.shutdown());
            }
            // The window process follows: its connection to this process ends with it.
            tracing::info!("lifeline-app stopped");
            // `run` exits the process without returning: flush the log file now.
            drop(log_guard.take());
        }
    });
}

/// Whether this (core) process set `GDK_GL=disable` itself, so that the window process
/// does not inherit it (window.rs).
pub static GL_DISABLED_HERE: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// The core process draws nothing but a tray icon, yet GTK 3 on X11 opens the OpenGL driver
/// when it starts, to choose its visuals: with Mesa that maps LLVM, some 50 MB resident for
/// nothing. `GDK_GL=disable` stops that, unless the person set `GDK_GL` themselves. Called
/// first thing in `main`, before any thread exists (the environment is not thread-safe).
fn without_gl() {
    #[cfg(target_os = "linux")]
    if std::env::var_os("GDK_GL").is_none() {
        // SAFETY: no other thread runs yet (main has started none, and no library has).
        unsafe { std::env::set_var("GDK_GL", "disable") };
        GL_DISABLED_HERE.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Answers on the local socket: a second instance (`show`), `lifeline connect` bridges
/// (`attach v1`), and the window process (`window v1`, `ipc v1`).
fn serve_socket<R: Runtime>(app: &tauri::AppHandle<R>, guard: instance::Guard) {
    let shows = app.clone();
    let attaches = app.clone();
    let lines = app.clone();
    // `lifeline connect NAME` bridges attach to this app's supervisors.
    let on_attach: instance::OnAttach = Arc::new(move |request| {
        let app = attaches.clone();
        Box::pin(async move {
            match app.try_state::<AppState>() {
                Some(state) => state.attach(&request).await,
                None => Err((
                    lifeline_core::gateway::attach::Refusal::Closing,
                    "the app is not running its servers yet".into(),
                )),
            }
        })
    });
    let on_line: instance::OnLine = Arc::new(move |line, reader| {
        let app = lines.clone();
        Box::pin(async move {
            match line.as_str() {
                ipc::HELLO => ipc::answer(app, reader).await,
                window::HELLO => window::link(app, reader).await,
                _ => {}
            }
        })
    });
    guard.serve(move || window::show(&shows), on_attach, on_line);
}

/// SIGTERM and SIGINT close the app the way its window does, so every server is disposed
/// of (stdio servers run in their own process groups and would outlive a killed app).
/// Windows sends a GUI app no such signals, and needs none: each stdio server is in a Job
/// Object that closes, killing it, when the app ends however it ends.
fn exit_on_signals<R: Runtime>(app: tauri::AppHandle<R>) {
    #[cfg(not(unix))]
    drop(app);
    #[cfg(unix)]
    tauri::async_runtime::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::warn!("no signal handlers: a SIGTERM would leave servers running");
            return;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: closing"),
            _ = int.recv() => tracing::info!("SIGINT: closing"),
        }
        app.exit(0);
    });
}
