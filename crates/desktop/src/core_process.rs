//! The core process's parts in one place: the app's state, the HTTP endpoint, the window
//! process, and the desktop `Shell` around them. Every command (`dispatch`), the socket
//! (`ipc`, `window`) and the tray's menu reach the app through a `Core`.

use crate::serve::{self, Served};
use crate::state::AppState;
use crate::tray::Summary;
use crate::window::Windows;
use lifeline_core::config::ServeSettings;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

/// What the desktop gives the core: a place in the tray, notifications, a way to end.
/// `lifeline-tray` (Linux) and `lifeline-app` (macOS, Windows) each have one.
pub trait Shell: Send + Sync + 'static {
    /// Whether there is a tray to come back from, so that closing the window keeps the app.
    fn has_tray(&self) -> bool;
    /// Shows how the fleet is doing: the tray's icon, tooltip and status line.
    fn show(&self, summary: &Summary);
    /// A desktop notification; a desktop without a notification service only logs it.
    fn notify(&self, title: &str, body: &str);
    /// Ends the app: the host stops the core (`Core::stop`) and exits.
    fn quit(&self);
}

/// A shell for a desktop with nothing to offer (and tests): no tray, notifications logged.
pub struct Headless {
    quit: Box<dyn Fn() + Send + Sync>,
}

impl Headless {
    pub fn new(quit: impl Fn() + Send + Sync + 'static) -> Headless {
        Headless {
            quit: Box::new(quit),
        }
    }
}

impl Shell for Headless {
    fn has_tray(&self) -> bool {
        false
    }
    fn show(&self, _summary: &Summary) {}
    fn notify(&self, title: &str, body: &str) {
        tracing::info!("notification (no notification service): {title}: {body}");
    }
    fn quit(&self) {
        (self.quit)()
    }
}

/// The running app, as the commands, the socket and the tray reach it.
pub struct Core {
    pub state: AppState,
    pub served: Arc<Served>,
    /// The window process; `None` without a local socket for one to reach the core.
    pub windows: Option<Windows>,
    shell: Arc<dyn Shell>,
    /// The status the process ends with: 0, or why it could not go on (`quit_with`).
    exit: AtomicI32,
}

impl Core {
    pub fn new(state: AppState, windows: Option<Windows>, shell: Arc<dyn Shell>) -> Arc<Core> {
        let served = Served::new(lifeline_core::gateway::http::tokens::default_path());
        Core::with_served(state, served, windows, shell)
    }

    /// With the HTTP endpoint's clients' tokens somewhere of the caller's (tests).
    pub fn with_served(
        state: AppState,
        served: Served,
        windows: Option<Windows>,
        shell: Arc<dyn Shell>,
    ) -> Arc<Core> {
        Arc::new(Core {
            state,
            served: Arc::new(served),
            windows,
            shell,
            exit: AtomicI32::new(0),
        })
    }

    /// Starts what runs beside the fleet: the HTTP endpoint when `serve` enables it, the
    /// config file's watcher, and the tray's watch on the fleet. Within a tokio runtime.
    pub fn start(self: &Arc<Core>, serve: ServeSettings) {
        serve::start(self, serve);
        crate::commands::config::start(self.clone());
        crate::tray::watch(self.clone());
    }

    pub fn shell(&self) -> &dyn Shell {
        &*self.shell
    }

    /// Shows the window: brings the window process to the front, or starts one.
    pub fn show_window(self: &Arc<Core>) {
        crate::window::show(self);
    }

    /// Whether closing the window keeps the app in the tray (else it quits): only with a
    /// tray, and not when `LIFELINE_CLOSE_QUITS` is set (tests and benchmarks that close to
    /// quit).
    pub fn close_keeps_running(&self) -> bool {
        self.shell.has_tray() && std::env::var_os("LIFELINE_CLOSE_QUITS").is_none()
    }

    /// Ends the app (the host then calls `stop`).
    pub fn quit(&self) {
        self.shell.quit();
    }

    /// Ends the app with `status` (the host exits with `exit_status` once stopped): the app
    /// could not do what it was started for, e.g. show a window without a display.
    pub fn quit_with(&self, status: i32) {
        self.exit.store(status, Ordering::Relaxed);
        self.shell.quit();
    }

    /// What the process should exit with: 0 unless `quit_with` said otherwise.
    pub fn exit_status(&self) -> i32 {
        self.exit.load(Ordering::Relaxed)
    }

    /// Stops the endpoint and disposes of every server; the window process follows, its
    /// connection ending with this process.
    pub async fn stop(&self) {
        self.served.stop().await;
        self.state.shutdown().await;
    }
}
