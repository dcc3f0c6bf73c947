//! `lifeline-app`: the desktop shell. It runs one `lifeline_core::supervisor::Fleet` (the
//! config file's servers, or the demo when there is none), answers the UI's commands and
//! streams the core's events to it over tauri Channels. It owns no policy: every decision
//! is the core's.

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
mod error;
mod history;
mod instance;
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
#[cfg(test)]
mod wire;

#[cfg(test)]
mod ipc_tests;

use lifeline_core::transport::runs;
use state::AppState;
use tauri::{Manager, RunEvent, Runtime, WindowEvent};

/// The app's commands, on any runtime (the real one, or `tauri::test`'s mock).
fn with_commands<R: Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    builder.invoke_handler(tauri::generate_handler![
        commands::snapshot,
        commands::subscribe,
        auth_cmds::auth_sign_in,
        auth_cmds::auth_sign_out,
        commands::reconnect,
        commands::reset,
        commands::disable,
        commands::enable,
        commands::reconnect_all_failed,
        commands::call_tool,
        commands::app_info,
        commands::ui_painted,
        detail_cmds::tool_list,
        detail_cmds::cancel_call,
        detail_cmds::server_stderr,
        detail_cmds::server_command,
        detail_cmds::server_config,
        detail_cmds::server_policy,
        detail_cmds::server_hosts,
        history::history_events,
        history::history_failures,
        history::history_calls,
        commands::bundle_preview,
        commands::bundle_export,
        dialogs::choose_save_path,
        config_cmds::config_get,
        config_cmds::server_add,
        config_cmds::server_edit,
        config_cmds::server_remove,
        config_cmds::import_detect,
        config_cmds::import_apply,
        clients_cmds::clients_list,
        clients_cmds::clients_preview,
        clients_cmds::clients_connect,
        clients_cmds::clients_restore,
        serve::gateway_endpoint,
        secret_cmds::secret_store,
        secret_cmds::secret_set,
        serve::gateway_set,
        serve::gateway_tokens,
        serve::gateway_token_add,
        serve::gateway_token_remove,
    ])
}

/// When `main` began: the origin of the "first paint" log line (`commands::ui_painted`).
static STARTED: std::sync::OnceLock<tokio::time::Instant> = std::sync::OnceLock::new();

fn main() {
    STARTED.get_or_init(tokio::time::Instant::now);
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
    let mut instance = match instance::dir().map(|d| instance::claim(&d)) {
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
    // Started from the Dock, a launcher or at login, the app has the desktop's minimal PATH:
    // the login shell's is asked for now, in the background, for the servers it starts.
    lifeline_core::login_path::adopt_in_background(lifeline_core::login_path::DEFAULT_TIMEOUT);
    // Servers a crashed run left behind end now; this run's are recorded from here on.
    if let Some(dir) = runs::default_dir() {
        runs::track(&dir);
    }
    let builder = tauri::Builder::default();
    #[cfg(target_os = "macos")]
    let builder = builder.menu(macos::menu).on_menu_event(|app, event| {
        if event.id() == macos::QUIT {
            tracing::info!("Quit from the app menu");
            app.exit(0);
        }
    });
    let app = with_commands(builder)
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_dialog::init())
        .plugin(autostart::plugin())
        .setup(move |app| {
            // The window exists but handles no IPC until `run`, so the state is in place
            // before the UI's first command.
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
            // The window is made here, not from tauri.conf.json ("create": false): started
            // at login (`--hidden`) the app stays in the tray with no webview at all.
            if !autostart::starts_hidden(std::env::args()) || !tray::available() {
                tray::show_window(app.handle());
            } else {
                tracing::info!("started hidden (--hidden): in the tray, no window");
                macos::present(app.handle(), false);
            }
            if let Some(guard) = instance.take() {
                let handle = app.handle().clone();
                let app = app.handle().clone();
                // `lifeline connect NAME` bridges attach to this app's supervisors.
                let on_attach: instance::OnAttach = std::sync::Arc::new(move |request| {
                    let app = app.clone();
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
                guard.serve(move || tray::show_window(&handle), on_attach);
            }
            Ok(())
        })
        .on_window_event(keep_running_in_tray)
        .build(tauri::generate_context!());
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("the app could not start: {e}");
            std::process::exit(1);
        }
    };
    app.run(move |app, event| {
        // macOS: the Dock icon clicked while no window is open.
        #[cfg(target_os = "macos")]
        if let RunEvent::Reopen {
            has_visible_windows: false,
            ..
        } = &event
        {
            tray::show_window(app);
        }
        // The last window closed (no exit code: not Quit, not a signal): stay in the tray.
        if let RunEvent::ExitRequested {
            code: None, api, ..
        } = &event
            && tray::close_keeps_running()
        {
            api.prevent_exit();
            return;
        }
        if let RunEvent::Exit = event {
            if let Some(served) = app.try_state::<std::sync::Arc<serve::Served>>() {
                tauri::async_runtime::block_on(served.stop());
            }
            if let Some(state) = app.try_state::<AppState>() {
                tauri::async_runtime::block_on(state.shutdown());
            }
            tracing::info!("lifeline-app stopped");
            // `run` exits the process without returning: flush the log file now.
            drop(log_guard.take());
        }
    });
}

/// Closing the window destroys it, webview and all, so the tray-resident app costs the core
/// alone; the servers stay supervised, and the tray opens a new window (or quits). The first
/// time, a notification says so. Without a tray, closing quits (`RunEvent::ExitRequested`).
fn keep_running_in_tray<R: Runtime>(window: &tauri::Window<R>, event: &WindowEvent) {
    static TOLD: std::sync::Once = std::sync::Once::new();
    if let WindowEvent::CloseRequested { .. } = event {
        if !tray::close_keeps_running() {
            return;
        }
        tracing::info!("window closed; supervising from the tray");
        macos::present(window.app_handle(), false);
        TOLD.call_once(|| {
            tray::notify(
                window.app_handle(),
                "Lifeline is still supervising your servers",
                "Open it again, or quit, from the Lifeline icon in the tray.",
            )
        });
    }
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
