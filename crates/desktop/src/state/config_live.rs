//! Changing the config the app runs: the editor's writes (and the importer's, in
//! `config_import`), and edits made to the file by anything else (a watcher on its
//! directory). Every change is checked by the core before it is saved, saved atomically
//! through the file's JSON (unknown keys kept), and applied as a diff: only the servers whose
//! entry changed restart. The first write in demo mode creates the file and leaves the demo.

use super::{AppState, closing, lock};
use crate::config_edit::{self, ServerForm, config_error, form_error};
use crate::demo;
use crate::error::ErrorView;
use crate::source::Mode;
use lifeline_core::config::{self, Config, ConfigDiff, ConfigErrorKind};
use lifeline_core::redact::Redactor;
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Quiet time after the last file event before the file is read: an editor's save is
/// several events (write a temp file, rename, chmod), and the file is read once.
const DEBOUNCE: Duration = Duration::from_millis(150);

/// The notice kind for a config file that could not be used.
const NOTICE_CONFIG: &str = "config";

/// The config the fleet runs now (the demo's in demo mode), and where to look for other
/// clients' files.
pub struct Live {
    config: Config,
    path: Option<PathBuf>,
    dirs: ImportDirs,
}

impl Live {
    pub fn new(config: Config, info: &super::AppInfo) -> Live {
        Live {
            config,
            path: info.config_path.as_deref().map(PathBuf::from),
            dirs: ImportDirs::of_user(),
        }
    }
}

/// Each server's transport kind, by name.
pub fn transports(config: &Config) -> HashMap<String, &'static str> {
    config
        .servers
        .iter()
        .map(|s| (s.name.clone(), s.transport.kind()))
        .collect()
}

/// What `config_get` returns: the file's servers as editor forms, secrets masked.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct ConfigView {
    pub path: Option<String>,
    pub mode: Mode,
    pub servers: Vec<ServerForm>,
    /// Why the file could not be read, when it could not (its servers are then not listed).
    pub problem: Option<ErrorView>,
}

impl AppState {
    /// The file's servers for the editor, every secret masked.
    pub async fn config_get(&self) -> Result<ConfigView, ErrorView> {
        let live = self.live.lock().await;
        let info = self.info();
        let mut view = ConfigView {
            path: info.config_path,
            mode: info.mode,
            servers: Vec::new(),
            problem: None,
        };
        let Some(path) = &live.path else {
            return Ok(view);
        };
        match read_raw(path) {
            Ok(raw) => {
                if let Some(servers) = raw.get("mcpServers").and_then(Value::as_object) {
                    view.servers = servers
                        .iter()
                        .map(|(name, entry)| config_edit::form_of(name, entry))
                        .collect();
                }
            }
            Err(e) => view.problem = Some(e),
        }
        Ok(view)
    }

    /// Adds a server; a name already configured is refused, never replaced.
    pub async fn server_add(&self, form: ServerForm) -> Result<(), ErrorView> {
        let name = form.name.trim().to_owned();
        self.write(Some(&name), |raw| {
            let entry = config_edit::entry_from(&form, None).map_err(form_error)?;
            config::write::add_server(raw, &name, entry).map_err(|p| problem_error(p, &name))
        })
        .await
    }

    /// Replaces the server `name` with `form` where it stands (a new name renames it). A
    /// masked value sent back unchanged keeps the stored secret.
    pub async fn server_edit(&self, name: &str, form: ServerForm) -> Result<(), ErrorView> {
        let new_name = form.name.trim().to_owned();
        self.write(Some(&new_name), |raw| {
            let servers = servers_of(raw)?;
            let old = servers
                .get(name)
                .ok_or_else(|| not_configured(name, servers))?;
            let entry = config_edit::entry_from(&form, Some(old)).map_err(form_error)?;
            if new_name != name && servers.contains_key(&new_name) {
                return Err(form_error(vec![crate::error::FieldError {
                    field: "name".into(),
                    message: format!("`{new_name}` is already configured; pick another name"),
                }]));
            }
            let renamed = std::mem::take(servers)
                .into_iter()
                .map(|(k, v)| {
                    if k == name {
                        (new_name.clone(), entry.clone())
                    } else {
                        (k, v)
                    }
                })
                .collect();
            *servers = renamed;
            Ok(())
        })
        .await
    }

    pub async fn server_remove(&self, name: &str) -> Result<(), ErrorView> {
        self.write(None, |raw| {
            let servers = servers_of(raw)?;
            match servers.shift_remove(name) {
                Some(_) => Ok(()),
                None => Err(not_configured(name, servers)),
            }
        })
        .await
    }

    /// Sets `lifeline.serve` in the file to `settings` (every other key kept), as the
    /// "Serve over HTTP" dialog does; the caller applies it to the endpoint.
    pub async fn serve_set(&self, settings: config::ServeSettings) -> Result<(), ErrorView> {
        self.write(None, |raw| {
            let not_object = |key: &str| {
                ErrorView::new(
                    NOTICE_CONFIG,
                    format!("`{key}` in the file is not an object; fix the file first."),
                )
            };
            let top = raw.as_object_mut().ok_or_else(|| not_object("the file"))?;
            let lifeline = top
                .entry("lifeline")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .ok_or_else(|| not_object("lifeline"))?;
            let serve = lifeline
                .entry("serve")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .ok_or_else(|| not_object("lifeline.serve"))?;
            serve.insert("enabled".into(), json!(settings.enabled));
            serve.insert("port".into(), json!(settings.port));
            Ok(())
        })
        .await
    }

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

    /// Bumped whenever the servers or `info` changed; the UI re-snapshots.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
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

    /// Reads the file, lets `edit` change its JSON, checks the result, saves it and applies
    /// it. Nothing is written when `edit` fails, the result does not load, or nothing
    /// changed. `name` is the server being edited, so its problems name fields in its entry.
    async fn write<T>(
        &self,
        name: Option<&str>,
        edit: impl FnOnce(&mut Value) -> Result<T, ErrorView>,
    ) -> Result<T, ErrorView> {
        let mut live = self.live.lock().await;
        let path = live.path.clone().ok_or_else(no_path)?;
        let original = read_raw(&path)?;
        let mut raw = original.clone();
        let out = edit(&mut raw)?;
        if raw == original {
            return Ok(out);
        }
        let redactor = lock(&self.redactor).clone();
        let config = config::from_value(raw.clone(), Some(path.clone()), &config::env_lookup)
            .map_err(|e| config_error(&e, name, &redactor))?;
        config::save(&raw, &path).map_err(|e| config_error(&e, None, &redactor))?;
        self.apply(&mut live, config).await?;
        Ok(out)
    }

    /// Brings the fleet to `new`: only changed servers restart. Leaving the demo stops all
    /// of its servers and its fixtures.
    async fn apply(&self, live: &mut Live, new: Config) -> Result<(), ErrorView> {
        let leaving_demo = self.info().mode == Mode::Demo;
        let diff = if leaving_demo {
            ConfigDiff {
                added: new.servers.iter().map(|s| s.name.clone()).collect(),
                removed: live.config.servers.iter().map(|s| s.name.clone()).collect(),
                ..ConfigDiff::default()
            }
        } else {
            config::diff(&live.config, &new)
        };
        if !diff.is_empty() {
            tracing::info!(
                "config: added {:?}, removed {:?}, changed {:?}",
                diff.added,
                diff.removed,
                diff.changed
            );
            let mut fleet = self.fleet.write().await;
            let fleet = fleet.as_mut().ok_or_else(closing)?;
            let redactor = Redactor::new(new.secrets());
            let fence = fleet
                .apply(&new, &diff)
                .await
                .map_err(|e| ErrorView::from_core(&e, &redactor))?;
            let mut restarts = lock(&self.restarts);
            for name in diff.removed.iter().chain(&diff.changed) {
                restarts.forget(name, fence);
            }
        }
        *lock(&self.transports) = transports(&new);
        *lock(&self.redactor) = Redactor::new(new.secrets());
        // The history keeps scrubbing the old secrets too: events written before the edit
        // may still be queued.
        self.history().add_secrets(&Redactor::new(new.secrets()));
        self.detail.set_config(&new);
        self.bundle.set_config(&new);
        if leaving_demo {
            let fixtures = std::mem::take(&mut *lock(&self.fixtures));
            for mut child in fixtures {
                let _ = child.kill().await;
            }
            let mut info = lock(&self.info);
            info.mode = Mode::Config;
            let demo_kinds = [
                demo::NOTICE_DEMO,
                demo::NOTICE_FIXTURE_MISSING,
                demo::NOTICE_FIXTURE_FAILED,
            ];
            info.notices
                .retain(|n| !demo_kinds.contains(&n.kind.as_str()));
        }
        live.config = new;
        self.set_config_notice(None);
        if !diff.is_empty() || leaving_demo {
            self.changes.send_modify(|n| *n += 1);
        }
        Ok(())
    }

    /// Replaces the `config` notice (or removes it); tells the UI when that changed it.
    /// Returns whether it did.
    fn set_config_notice(&self, message: Option<String>) -> bool {
        let changed = {
            let mut info = lock(&self.info);
            let before = info.notices.clone();
            info.notices.retain(|n| n.kind != NOTICE_CONFIG);
            if let Some(m) = message {
                info.notices.push(ErrorView::new(NOTICE_CONFIG, m));
            }
            before != info.notices
        };
        if changed {
            self.changes.send_modify(|n| *n += 1);
        }
        changed
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
fn changes_file(event: &notify::Event, name: Option<&std::ffi::OsStr>) -> bool {
    !matches!(event.kind, EventKind::Access(_)) && event.paths.iter().any(|p| p.file_name() == name)
}

/// The file's JSON; an empty config when there is no file yet.
fn read_raw(path: &Path) -> Result<Value, ErrorView> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(empty_raw()),
        Err(e) => {
            return Err(ErrorView::new(
                NOTICE_CONFIG,
                format!("Could not read {}: {e}.", path.display()),
            ));
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    serde_json::from_str(text).map_err(|e| {
        ErrorView::new(
            NOTICE_CONFIG,
            format!(
                "{} is not valid JSON (line {}, column {}); fix the file before editing it here.",
                path.display(),
                e.line(),
                e.column()
            ),
        )
    })
}

fn empty_raw() -> Value {
    json!({"mcpServers": {}})
}

fn servers_of(raw: &mut Value) -> Result<&mut serde_json::Map<String, Value>, ErrorView> {
    raw.get_mut("mcpServers")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ErrorView::new(NOTICE_CONFIG, "the file has no `mcpServers` object"))
}

fn not_configured(name: &str, servers: &serde_json::Map<String, Value>) -> ErrorView {
    ErrorView::unknown_server(name, servers.keys().map(String::as_str))
}

fn problem_error(p: config::Problem, name: &str) -> ErrorView {
    let field = p
        .field
        .strip_prefix(&format!("mcpServers.{name}"))
        .map(|f| f.trim_start_matches('.'))
        .filter(|f| !f.is_empty())
        .unwrap_or("name")
        .to_owned();
    form_error(vec![crate::error::FieldError {
        field,
        message: p.message,
    }])
}

fn no_path() -> ErrorView {
    ErrorView::new(
        NOTICE_CONFIG,
        "There is no config path (is HOME set?); set LIFELINE_CONFIG and restart the app.",
    )
}

pub(crate) mod config_import;
use config_import::ImportDirs;
pub use config_import::{Detected, ImportChoice, ImportOutcome};

#[cfg(test)]
#[path = "config_live_tests.rs"]
mod tests;
