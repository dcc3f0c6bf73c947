//! `lifeline-app`: the desktop shell. It runs one `lifeline_core::supervisor::Fleet` (the
//! config file's servers, or the demo when there is none), answers the UI's commands and
//! streams the core's events to it over tauri Channels. It owns no policy: every decision
//! is the core's.

// A release build on Windows opens no console window next to the app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod commands;
mod config_cmds;
mod config_edit;
mod demo;
mod error;
mod logs;
mod state;
mod view;

#[cfg(test)]
mod ipc_tests;

use state::AppState;
use tauri::{Manager, RunEvent, Runtime};

/// The app's commands, on any runtime (the real one, or `tauri::test`'s mock).
fn with_commands<R: Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    builder.invoke_handler(tauri::generate_handler![
        commands::snapshot,
        commands::subscribe,
        commands::reconnect,
        commands::reset,
        commands::disable,
        commands::enable,
        commands::reconnect_all_failed,
        commands::call_tool,
        commands::app_info,
        config_cmds::config_get,
        config_cmds::server_add,
        config_cmds::server_edit,
        config_cmds::server_remove,
        config_cmds::import_detect,
        config_cmds::import_apply,
    ])
}

fn main() {
    let log_dir = logs::dir();
    let mut log_guard = logs::init(log_dir.as_deref());
    tracing::info!(
        "lifeline-app {} starting; logs in {}",
        env!("CARGO_PKG_VERSION"),
        log_dir
            .as_deref()
            .map_or("stderr only".into(), |d| d.display().to_string())
    );
    let app = with_commands(tauri::Builder::default())
        .setup(move |app| {
            // The window exists but handles no IPC until `run`, so the state is in place
            // before the UI's first command.
            let fixture = demo::fixture_path();
            let state = tauri::async_runtime::block_on(async {
                let source = state::load(fixture.as_deref(), log_dir.as_deref()).await;
                AppState::start(source)
            });
            app.manage(state);
            config_cmds::start(app.handle().clone());
            exit_on_signals(app.handle().clone());
            Ok(())
        })
        .build(tauri::generate_context!());
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("the app could not start: {e}");
            std::process::exit(1);
        }
    };
    app.run(move |app, event| {
        if let RunEvent::Exit = event {
            if let Some(state) = app.try_state::<AppState>() {
                tauri::async_runtime::block_on(state.shutdown());
            }
            tracing::info!("lifeline-app stopped");
            // `run` exits the process without returning: flush the log file now.
            drop(log_guard.take());
        }
    });
}

/// SIGTERM and SIGINT close the app the way its window does, so every server is disposed
/// of (stdio servers run in their own process groups and would outlive a killed app).
fn exit_on_signals<R: Runtime>(app: tauri::AppHandle<R>) {
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
