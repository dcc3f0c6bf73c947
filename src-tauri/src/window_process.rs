//! `lifeline-app --window DIR`: the window process. A Tauri app with the webview and the UI
//! and no `AppState`: every command the UI invokes goes over the local socket in DIR to the
//! core process (`invoke.rs`, `ipc.rs`), except the save dialog, which runs here, beside the
//! window. It follows the core over its `window v1` connection (window.rs): it comes to the
//! front when asked, passes `config_changed` on to the UI, and exits when the core is gone.
//! Closing its window ends it; the core stays in the tray.

use lifeline_core::local_socket::{self, Stream};
use lifeline_desktop::commands::config::CONFIG_CHANGED;
use lifeline_desktop::ipc::Remote;
use lifeline_desktop::window::{self, LABEL, Push};
use std::path::PathBuf;
use tauri::{AppHandle, Context, Emitter, Manager, Runtime, Wry};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Runs the window process until its window closes or the core ends; never returns.
pub fn run(dir: PathBuf, context: Context<Wry>) -> ! {
    no_display_ends_here();
    // Logs to stderr only (inherited from the core): the log file is the core's.
    let log_guard = lifeline_desktop::logs::init(None);
    let link = match tauri::async_runtime::block_on(connect(&dir)) {
        Ok(link) => link,
        Err(e) => {
            let message = format!(
                "lifeline-app {}: cannot reach the Lifeline core at {} ({e}); start lifeline-app \
                 without {} instead",
                window::ARG,
                local_socket::address(&dir),
                window::ARG
            );
            tracing::error!("{message}");
            drop(log_guard);
            std::process::exit(1);
        }
    };
    let builder = tauri::Builder::default();
    #[cfg(target_os = "macos")]
    let builder = builder
        .menu(crate::macos::menu)
        .on_menu_event(|app, event| {
            if event.id() == crate::macos::QUIT {
                quit(app);
            }
        });
    let app = crate::invoke::with_commands(builder)
        .plugin(tauri_plugin_dialog::init())
        .manage(Remote { dir })
        .setup(move |app| {
            open(app.handle());
            tauri::async_runtime::spawn(follow(app.handle().clone(), link));
            Ok(())
        })
        .build(context);
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("the window could not start: {e}");
            std::process::exit(1);
        }
    };
    app.run(|app, event| {
        // macOS: the Dock icon clicked while the window is minimized or hidden.
        #[cfg(target_os = "macos")]
        if let tauri::RunEvent::Reopen { .. } = &event {
            focus(app);
        }
        #[cfg(not(target_os = "macos"))]
        let _ = (app, event);
    });
    std::process::exit(0)
}

/// Without a display the window process says so in one line and exits with
/// `display::EXIT` (the core then stays in the tray, or ends): before GTK, whose failure is
/// tao's panic with a backtrace; and when the display is there but GTK refuses it, GTK's
/// refusal, asked for here before tauri asks.
fn no_display_ends_here() {
    use lifeline_desktop::display;
    if let Err(missing) = display::check() {
        eprintln!("{missing}");
        std::process::exit(display::EXIT);
    }
    #[cfg(target_os = "linux")]
    if gtk::init().is_err() {
        eprintln!("{}", display::NoDisplay::toolkit(&display::named()));
        std::process::exit(display::EXIT);
    }
}

/// The connection to the core, its hello sent.
async fn connect(dir: &std::path::Path) -> std::io::Result<BufReader<Stream>> {
    let mut stream = local_socket::connect(dir).await?;
    stream
        .write_all(format!("{}\n", window::HELLO).as_bytes())
        .await?;
    Ok(BufReader::new(stream))
}

/// Makes the window from tauri.conf.json ("create": false there: the core process has none).
fn open<R: Runtime>(app: &AppHandle<R>) {
    // Not on this thread: a window built from an event handler on the main thread can
    // deadlock (wry#583); the builder hands the work to the event loop itself.
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let Some(config) = app.config().app.windows.iter().find(|w| w.label == LABEL) else {
            tracing::error!("no window named {LABEL} in tauri.conf.json");
            app.exit(1);
            return;
        };
        match tauri::WebviewWindowBuilder::from_config(&app, config).and_then(|b| b.build()) {
            Ok(window) => {
                let _ = window.set_focus();
            }
            Err(e) => {
                tracing::error!("the window could not be opened: {e}");
                app.exit(1);
            }
        }
    });
}

fn focus<R: Runtime>(app: &AppHandle<R>) {
    if let Some(window) = app.get_webview_window(LABEL) {
        let _ = window.show();
        let _ = window.unminimize();
        let _ = window.set_focus();
    }
}

/// Follows the core's pushes; when the core is gone, so is the window.
async fn follow<R: Runtime>(app: AppHandle<R>, mut link: BufReader<Stream>) {
    let mut line = String::new();
    loop {
        line.clear();
        match link.read_line(&mut line).await {
            Ok(n) if n > 0 => {}
            _ => break,
        }
        match serde_json::from_str::<Push>(&line) {
            Ok(Push::Show) => focus(&app),
            Ok(Push::ConfigChanged(info)) => {
                if let Err(e) = app.emit(CONFIG_CHANGED, info) {
                    tracing::warn!("could not tell the UI the config changed: {e}");
                }
            }
            // A push from a newer core: nothing this window knows to do.
            Err(_) => {}
        }
    }
    tracing::info!("the Lifeline core process ended; closing the window");
    app.exit(0);
}

/// Quit from the macOS app menu: the whole app, which is the core's to do.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
fn quit<R: Runtime>(app: &AppHandle<R>) {
    let Some(remote) = app.try_state::<Remote>().map(|r| r.inner().clone()) else {
        return;
    };
    tauri::async_runtime::spawn(async move {
        let call = lifeline_desktop::dispatch::Call {
            command: "quit".into(),
            args: serde_json::Value::Null,
            channels: Default::default(),
            caller: LABEL.into(),
        };
        let _ = remote.call(call).await;
    });
}
