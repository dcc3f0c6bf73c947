//! Edits made to the config file by anything but the app: a watcher on its directory, and
//! the reload that applies the file once it has been quiet (`AppState::reload`). A file that
//! cannot be used keeps the servers running and says why in a notice.

use super::{AppState, NOTICE_CONFIG, lock, no_path};
use crate::error::ErrorView;
use crate::source::Mode;
use lifeline_core::config::{self, ConfigErrorKind};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc;

/// Quiet time after the last file event before the file is read: an editor's save is
/// several events (write a temp file, rename, chmod), and the file is read once.
const DEBOUNCE: Duration = Duration::from_millis(150);

impl AppState {
    /// Sets up the watcher on the config file's directory (it must exist before anything
    /// is written to be seen, so it is created). `ConfigWatch::run` then applies changes.
    pub fn watch_config(&self) -> Result<ConfigWatch, ErrorView> {
        let path = self
            .info()
            .config_path
            .map(PathBuf::from)
            .ok_or_else(no_path)?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => PathBuf::from("."),
        };
        let watch_error = |e: &dyn std::fmt::Display| {
            ErrorView::new(
                NOTICE_CONFIG,
                format!(
                    "Changes to {} will not apply until the app restarts: {e}",
                    path.display()
                ),
            )
        };
        std::fs::create_dir_all(&dir).map_err(|e| watch_error(&e))?;
        let (tx, events) = mpsc::unbounded_channel();
        let name = path.file_name().map(|n| n.to_owned());
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            if let Ok(event) = res
                && changes_file(&event, name.as_deref())
            {
                let _ = tx.send(());
            }
        })
        .map_err(|e| watch_error(&e))?;
        watcher
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(|e| watch_error(&e))?;
        Ok(ConfigWatch {
            _watcher: watcher,
            events,
        })
    }

    /// Reads the file again and applies it. A file that cannot be used keeps the running
    /// servers and sets a notice that names the problem; a good file clears it.
    pub async fn reload(&self) {
        let mut live = self.live.lock().await;
        let Some(path) = live.path.clone() else {
            return;
        };
        match config::load(&path) {
            Ok(config) => {
                if let Err(e) = self.apply(&mut live, config).await {
                    tracing::warn!("the changed config was not applied: {}", e.message);
                }
            }
            Err(e) if e.kind == ConfigErrorKind::NotFound && self.info().mode == Mode::Demo => {}
            Err(e) => {
                let redactor = lock(&self.redactor).clone();
                let why = if e.kind == ConfigErrorKind::NotFound {
                    format!("{} was removed", path.display())
                } else {
                    redactor.scrub(&e.to_string())
                };
                tracing::warn!("the config file changed and cannot be used: {why}");
                self.set_config_notice(Some(format!(
                    "The config file changed and cannot be used, so the servers keep running as \
                     they were. {why}"
                )));
            }
        }
    }
}

/// The watcher, and the events it saw for the config file.
pub struct ConfigWatch {
    _watcher: RecommendedWatcher,
    events: mpsc::UnboundedReceiver<()>,
}

impl ConfigWatch {
    /// Applies every change to the file, once it has been quiet for `DEBOUNCE`, until the
    /// app stops.
    pub async fn run(mut self, state: &AppState) {
        let mut stopping = state.stopping.subscribe();
        loop {
            tokio::select! {
                event = self.events.recv() => if event.is_none() { return },
                _ = stopping.wait_for(|s| *s) => return,
            }
            loop {
                match tokio::time::timeout(DEBOUNCE, self.events.recv()).await {
                    Ok(Some(())) => continue,
                    Ok(None) => return,
                    Err(_quiet) => break,
                }
            }
            state.reload().await;
        }
    }
}

/// Whether `event` is a change to the file called `name`. Saves of other files in the
/// directory (and the temp files of an atomic save, until renamed) do not count, and neither
/// do reads: inotify reports opens and closes, and the reload's own read would loop.
pub(super) fn changes_file(event: &notify::Event, name: Option<&std::ffi::OsStr>) -> bool {
    !matches!(event.kind, EventKind::Access(_)) && event.paths.iter().any(|p| p.file_name() == name)
}
