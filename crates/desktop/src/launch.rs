//! Starting and stopping the core process, the same in both of its hosts (`lifeline-tray` on
//! Linux, `lifeline-app` on macOS and Windows): the log, the single instance, the window
//! process started early, the login shell's PATH, the runs file; then the fleet and what runs
//! beside it, and the socket served.

use crate::core_process::{Core, Shell};
use crate::instance::{self, Claim, Guard};
use crate::state::AppState;
use crate::window::{self, Windows};
use crate::{history, ipc, logs, source};
use lifeline_core::transport::runs;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use tracing_appender::non_blocking::WorkerGuard;

/// The argument the login entry passes: start in the tray, without a window.
pub const HIDDEN: &str = "--hidden";

/// Whether this process was started to stay in the tray (by the login entry).
pub fn starts_hidden(mut args: impl Iterator<Item = String>) -> bool {
    args.any(|a| a == HIDDEN)
}

/// What comes before the fleet, done.
pub struct Launch {
    log_dir: Option<PathBuf>,
    log_guard: Option<WorkerGuard>,
    endpoint: Option<(Guard, Option<PathBuf>)>,
    hidden: bool,
    early: Option<Child>,
    /// The window program.
    program: PathBuf,
}

/// The core, running; `finish` stops it.
pub struct Running {
    pub core: Arc<Core>,
    log_guard: Option<WorkerGuard>,
}

impl Launch {
    /// The log, the instance (exiting when another one runs: it was asked to show its window
    /// instead), the window process started now, beside the core's own start, so that it
    /// paints sooner (its commands wait in the socket's backlog until the core serves it),
    /// the login shell's PATH asked for, and this run's servers recorded from here on.
    /// `program` is the window program. Within a tokio runtime's context (`Runtime::enter`),
    /// not on one of its tasks.
    pub fn prepare(program: PathBuf) -> Launch {
        Launch::prepare_as(program, None)
    }

    /// `prepare` for a session with no display (`missing` says why) but a tray: the app
    /// starts in the tray, as with `--hidden`, and says why once in its log.
    pub fn prepare_in_tray(program: PathBuf, missing: &crate::display::NoDisplay) -> Launch {
        Launch::prepare_as(program, Some(missing))
    }

    fn prepare_as(program: PathBuf, no_display: Option<&crate::display::NoDisplay>) -> Launch {
        crate::STARTED.get_or_init(tokio::time::Instant::now);
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
            Some(Claim::Running { shown, dir }) => {
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
            Some(Claim::First(guard)) => Some(guard),
            None => None,
        };
        let endpoint = instance::endpoint(instance, instance_dir);
        // Started at login (`--hidden`) the app stays in the tray with no window process;
        // so it does with no display to show one on.
        if let Some(missing) = no_display {
            tracing::warn!("{missing}; supervising from the tray");
        }
        let hidden = no_display.is_some() || starts_hidden(std::env::args());
        let early = match (&endpoint, hidden) {
            ((_, Some(dir)), false) => window::spawn(&program, dir),
            _ => None,
        };
        // Started from the Dock, a launcher or at login, the app has the desktop's minimal
        // PATH: the login shell's is asked for now, in the background, for its servers.
        lifeline_core::login_path::adopt_in_background(lifeline_core::login_path::DEFAULT_TIMEOUT);
        // The core serves (the socket, the HTTP endpoint): room for its connections; the
        // servers it starts get the original limit back.
        lifeline_core::nofile::raise();
        // Servers a crashed run left behind end now; this run's are recorded from here on.
        if let Some(dir) = runs::default_dir() {
            runs::track(&dir);
        }
        Launch {
            log_dir,
            log_guard,
            endpoint: Some(endpoint),
            hidden,
            early,
            program,
        }
    }

    /// The fleet (the config file's, or the demo's with `fixture`), the HTTP endpoint, the
    /// config watcher, the tray's watch, the socket served; then the window: the one started
    /// early, or a new one unless started hidden with a tray to come back from.
    pub async fn start(mut self, fixture: Option<&Path>, shell: Arc<dyn Shell>) -> Running {
        let source = source::load(fixture, self.log_dir.as_deref()).await;
        let serve = source.config.serve;
        let state = AppState::start_with_history(source, |o| {
            history::open(lifeline_core::history::resolve_path(), o)
        });
        // Before the machine sleeps, the history is made durable (logind waits for it).
        let history = state.history();
        lifeline_core::system::watch::before_sleep(Arc::new(move || history.checkpoint()));
        let (guard, dir) = self.endpoint.take().expect("started once");
        let windows = dir.map(|dir| Windows::new(self.program.clone(), dir));
        let core = Core::new(state, windows, shell);
        core.start(serve);
        serve_socket(&core, guard);
        if let Some(child) = self.early.take() {
            window::adopt(&core, child);
        } else if !self.hidden || !core.shell().has_tray() {
            // Hidden without a tray to come back from, or the early start failed.
            core.show_window();
        } else {
            tracing::info!("started hidden ({HIDDEN}): in the tray, no window");
        }
        Running {
            core,
            log_guard: self.log_guard.take(),
        }
    }
}

impl Running {
    /// Stops the endpoint and every server, then flushes the log.
    pub async fn finish(mut self) {
        self.core.stop().await;
        // The window process follows: its connection to this process ends with it.
        tracing::info!("lifeline-app stopped");
        drop(self.log_guard.take());
    }
}

/// Answers on the local socket: a second instance (`show`), `lifeline connect` bridges
/// (`attach v1`), and the window process (`window v1`, `ipc v1`). Holds the core weakly: the
/// socket does not keep a quitting app alive.
pub(crate) fn serve_socket(core: &Arc<Core>, guard: Guard) {
    let shows = Arc::downgrade(core);
    let attaches = Arc::downgrade(core);
    let lines = Arc::downgrade(core);
    // `lifeline connect NAME` bridges attach to this app's supervisors.
    let on_attach: instance::OnAttach = Arc::new(move |request| {
        let core = attaches.clone();
        Box::pin(async move { crate::serve::attach(&core, &request).await })
    });
    let on_line: instance::OnLine = Arc::new(move |line, reader| {
        let core = lines.upgrade();
        Box::pin(async move {
            let Some(core) = core else { return };
            match line.as_str() {
                ipc::HELLO => ipc::answer(core, reader).await,
                window::HELLO => window::link(core, reader).await,
                _ => {}
            }
        })
    });
    let on_show = move || {
        if let Some(core) = shows.upgrade() {
            core.show_window();
        }
    };
    guard.serve(on_show, on_attach, on_line);
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C on Windows), which close the app the way Quit does,
/// so every server is disposed of (stdio servers run in their own process groups and would
/// outlive a killed app; on Windows a Job Object ends them however the app ends).
pub async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::warn!("no signal handlers: a SIGTERM would leave servers running");
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: closing"),
            _ = int.recv() => tracing::info!("SIGINT: closing"),
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            return std::future::pending().await;
        }
        tracing::info!("Ctrl-C: closing");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_login_entry_starts_hidden() {
        let args = |a: &[&str]| {
            a.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert!(super::starts_hidden(args(&["lifeline-app", "--hidden"])));
        assert!(!super::starts_hidden(args(&["lifeline-app"])));
        assert!(!super::starts_hidden(args(&[
            "lifeline-app",
            "--hidden-not"
        ])));
    }
}
