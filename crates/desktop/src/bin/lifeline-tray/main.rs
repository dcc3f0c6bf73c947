//! `lifeline-tray`: the Lifeline app's core process on Linux, started by `lifeline-app`
//! (which replaces itself with it) and by the login entry. It runs the fleet, the socket and
//! the HTTP endpoint (lifeline-desktop's `Core`) with a tray icon, menu and notifications
//! spoken straight over D-Bus (a StatusNotifierItem, `org.freedesktop.Notifications`), and
//! starts `lifeline-app --window` when the window should show. It links no GUI toolkit: in
//! the tray, the app costs this process alone, with neither GTK nor WebKitGTK mapped
//! (docs/packaging.md). On macOS and Windows `lifeline-app` is the core itself.

#[cfg(target_os = "linux")]
mod sni;

#[cfg(target_os = "linux")]
fn main() {
    linux::main()
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!(
        "lifeline-tray is the Linux app's core process; on this system start lifeline-app instead"
    );
    std::process::exit(2);
}

#[cfg(target_os = "linux")]
mod linux {
    use crate::sni::{self, Action};
    use lifeline_desktop::launch::{self, Launch};
    use lifeline_desktop::{demo, display, login_entry, window};
    use std::path::PathBuf;
    use std::sync::Arc;
    use tokio::sync::mpsc;

    pub fn main() {
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("lifeline-tray: cannot start its runtime: {e}");
                std::process::exit(1);
            }
        };
        let _entered = runtime.enter();
        let program = match window::program_beside() {
            Ok(program) => program,
            Err(e) => {
                eprintln!("lifeline-tray: where is this program? ({e})");
                std::process::exit(1);
            }
        };
        // Without a display no window can open: the app is its tray or nothing. Decided
        // before anything is logged, so that a terminal with no display reads one line.
        let launch = match display::check() {
            Ok(()) => Launch::prepare(program.clone()),
            Err(missing) if runtime.block_on(sni::tray_on_bus()) => {
                Launch::prepare_in_tray(program.clone(), &missing)
            }
            Err(missing) => {
                eprintln!("{missing}");
                std::process::exit(display::EXIT);
            }
        };
        let status = runtime.block_on(run(launch, program));
        if status != 0 {
            std::process::exit(status);
        }
    }

    /// Runs the app until it quits; returns the status to exit with.
    async fn run(launch: Launch, program: PathBuf) -> i32 {
        let (actions, mut asked) = mpsc::unbounded_channel();
        let login = login_entry::path();
        let shell =
            sni::Shell::start(actions, login.as_deref().is_some_and(login_entry::enabled)).await;
        let fixture = demo::fixture_path(resources().as_deref());
        let running = launch.start(fixture.as_deref(), shell.clone()).await;
        let core = running.core.clone();
        // One for the run, so that no signal falls between two turns of the loop.
        let terminated = launch::terminated();
        tokio::pin!(terminated);
        loop {
            let action = tokio::select! {
                action = asked.recv() => action.unwrap_or(Action::Quit),
                () = &mut terminated => Action::Quit,
            };
            match action {
                Action::Open => core.show_window(),
                Action::ReconnectFailed => {
                    let core = Arc::clone(&core);
                    tokio::spawn(async move {
                        let _ = core.state.reconnect_all_failed().await;
                    });
                }
                Action::StartAtLogin => {
                    let Some(entry) = login.as_deref() else {
                        tracing::warn!("start at login: no config directory for the entry");
                        continue;
                    };
                    let on = !login_entry::enabled(entry);
                    match login_entry::set(entry, &program, on) {
                        Ok(()) => {
                            tracing::info!("start at login: {}", if on { "on" } else { "off" })
                        }
                        Err(e) => tracing::warn!(
                            "could not turn {} starting at login ({}): {e}",
                            if on { "on" } else { "off" },
                            entry.display()
                        ),
                    }
                    // The tick follows what the file says, not the click.
                    shell.set_login(login_entry::enabled(entry)).await;
                }
                Action::Quit => break,
            }
        }
        // The servers first: the menu's Quit is answered while they stop, and the icon goes
        // last, with the app.
        running.finish().await;
        shell.remove().await;
        core.exit_status()
    }

    /// Where a package puts the app's resources (the demo's fixture): `/usr/lib/Lifeline`
    /// beside `/usr/bin`, as the Tauri bundler lays out a .deb or .rpm.
    fn resources() -> Option<PathBuf> {
        let exe = std::env::current_exe().ok()?;
        let prefix = exe.parent()?.parent()?;
        Some(prefix.join("lib").join("Lifeline"))
    }
}
