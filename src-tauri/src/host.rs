//! `lifeline-app` as the core process, on macOS and Windows: lifeline-desktop's `Core` on
//! tauri's event loop, with tauri's tray, notification plugin and autostart plugin as its
//! `Shell`, and on macOS no Dock icon while in the tray. It never makes a webview: the window
//! is `lifeline-app --window` (window_process.rs), as on Linux, where the core is
//! `lifeline-tray` instead (a tray without GTK; crates/desktop). Linking WebKit costs little
//! here — WKWebView is a system framework and WebView2 loads when a webview is made — so the
//! core stays in this one executable.

use lifeline_desktop::Core;
use lifeline_desktop::launch::{self, Launch, Running};
use lifeline_desktop::tray::{Health, ICON_SIZE, Summary, icon_rgba};
use std::sync::{Arc, Mutex};
use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Context, Manager, RunEvent, Runtime, Wry};
use tauri_plugin_notification::NotificationExt;

const TRAY_ID: &str = "lifeline";

/// Runs the core until Quit; never returns.
pub fn run(context: Context<Wry>) -> ! {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("lifeline-app: cannot start its runtime: {e}");
            std::process::exit(1);
        }
    };
    // tauri's tasks and the core's on one runtime.
    tauri::async_runtime::set(runtime.handle().clone());
    let _entered = runtime.enter();
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(e) => {
            eprintln!("lifeline-app: where is this program? ({e})");
            std::process::exit(1);
        }
    };
    let launch = Launch::prepare(program);
    let running: Arc<Mutex<Option<Running>>> = Arc::default();
    let started = running.clone();
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_notification::init())
        .plugin(crate::autostart::plugin())
        .setup(move |app| {
            let fixture =
                lifeline_desktop::demo::fixture_path(app.path().resource_dir().ok().as_deref());
            let shell = Arc::new(TauriShell::install(app.handle()));
            let tray = shell.tray;
            let run = tauri::async_runtime::block_on(launch.start(fixture.as_deref(), shell));
            app.manage(run.core.clone());
            *started.lock().unwrap_or_else(|e| e.into_inner()) = Some(run);
            // The core is never a window: on macOS no Dock icon while there is a tray.
            crate::macos::present(app.handle(), false, tray);
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move {
                launch::terminated().await;
                handle.exit(0);
            });
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
    app.run(move |_app, event| {
        if let RunEvent::Exit = event
            && let Some(run) = running.lock().unwrap_or_else(|e| e.into_inner()).take()
        {
            tauri::async_runtime::block_on(run.finish());
        }
    });
    std::process::exit(0)
}

/// lifeline-desktop's `Shell` on tauri: the tray icon and its menu, notifications, Quit.
struct TauriShell {
    app: AppHandle<Wry>,
    tray: bool,
    status: Option<MenuItem<Wry>>,
}

impl TauriShell {
    /// Creates the tray icon and its menu: the status line, Open, Reconnect all failed, Start
    /// at login, Quit. A desktop without a tray (or a failure to make one) is logged; the app
    /// still works.
    fn install(app: &AppHandle<Wry>) -> TauriShell {
        match build(app) {
            Ok(status) => TauriShell {
                app: app.clone(),
                tray: true,
                status: Some(status),
            },
            Err(e) => {
                tracing::warn!("no tray icon ({e}); closing the window will quit the app");
                TauriShell {
                    app: app.clone(),
                    tray: false,
                    status: None,
                }
            }
        }
    }
}

impl lifeline_desktop::Shell for TauriShell {
    fn has_tray(&self) -> bool {
        self.tray
    }

    fn show(&self, summary: &Summary) {
        if let Some(tray) = self.app.tray_by_id(TRAY_ID) {
            let _ = tray.set_icon(Some(icon(summary.health())));
            let _ = tray.set_tooltip(Some(format!("Lifeline: {}", summary.label())));
        }
        if let Some(item) = &self.status {
            let _ = item.set_text(summary.label());
        }
    }

    fn notify(&self, title: &str, body: &str) {
        tracing::info!("notification: {title}: {body}");
        if let Err(e) = self
            .app
            .notification()
            .builder()
            .title(title)
            .body(body)
            .show()
        {
            tracing::debug!("the notification was not shown: {e}");
        }
    }

    fn quit(&self) {
        self.app.exit(0);
    }
}

fn icon(health: Health) -> Image<'static> {
    Image::new_owned(icon_rgba(health), ICON_SIZE, ICON_SIZE)
}

/// The tray and its menu; the menu's status line, kept to be relabelled.
fn build<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<MenuItem<R>> {
    let summary = Summary::default();
    let status = MenuItem::with_id(app, "status", summary.label(), false, None::<&str>)?;
    let login = CheckMenuItem::with_id(
        app,
        "start_at_login",
        "Start at login",
        true,
        crate::autostart::enabled(app),
        None::<&str>,
    )?;
    let menu = Menu::with_items(
        app,
        &[
            &status,
            &PredefinedMenuItem::separator(app)?,
            &MenuItem::with_id(app, "open", "Open Lifeline", true, None::<&str>)?,
            &MenuItem::with_id(
                app,
                "reconnect_failed",
                "Reconnect all failed",
                true,
                None::<&str>,
            )?,
            &PredefinedMenuItem::separator(app)?,
            &login,
            &MenuItem::with_id(app, "quit", "Quit Lifeline", true, None::<&str>)?,
        ],
    )?;
    let ticked = login.clone();
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(icon(summary.health()))
        .tooltip(format!("Lifeline: {}", summary.label()))
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(move |app, event| match event.id().as_ref() {
            "open" => {
                if let Some(core) = app.try_state::<Arc<Core>>() {
                    core.show_window();
                }
            }
            "reconnect_failed" => {
                if let Some(core) = app.try_state::<Arc<Core>>().map(|c| c.inner().clone()) {
                    tauri::async_runtime::spawn(async move {
                        let _ = core.state.reconnect_all_failed().await;
                    });
                }
            }
            "start_at_login" => {
                let on = !crate::autostart::enabled(app);
                match crate::autostart::set(app, on) {
                    Ok(()) => tracing::info!("start at login: {}", if on { "on" } else { "off" }),
                    Err(e) => tracing::warn!("{e}"),
                }
                // The tick follows what the system says, not the click.
                let _ = ticked.set_checked(crate::autostart::enabled(app));
            }
            "quit" => {
                tracing::info!("Quit from the tray");
                app.exit(0);
            }
            _ => {}
        })
        .build(app)?;
    Ok(status)
}
