//! The app's config, in one module: the server editor's forms and their masking (`edit.rs`),
//! the editor's writes (here), importing other clients' servers (`import.rs`), and edits made
//! to the file by anything else (`file_watch.rs`, a watcher on its directory); the commands
//! are `commands/config.rs`. Every change is checked by the core before it is saved, saved
//! atomically through the file's JSON (unknown keys kept), and applied as a diff: only the
//! servers whose entry changed restart. The first write in demo mode creates the file and
//! leaves the demo.

use super::{AppState, closing, lock};
use crate::demo;
use crate::error::ErrorView;
use crate::source::Mode;
use changes::{add, check, forms, remove, replace, set_tool_shown};
use edit::{ServerForm, config_error, form_error};
use lifeline_core::config::{self, Config, ConfigDiff};
use lifeline_core::redact::Redactor;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tokio::sync::watch;

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
            Ok(raw) => view.servers = forms(&raw),
            Err(e) => view.problem = Some(e),
        }
        Ok(view)
    }

    /// Adds a server; a name already configured is refused, never replaced.
    pub async fn server_add(&self, form: ServerForm) -> Result<(), ErrorView> {
        let name = form.name.trim().to_owned();
        self.write(Some(&name), |raw| add(raw, &form)).await
    }

    /// Replaces the server `name` with `form` where it stands (a new name renames it). A
    /// masked value sent back unchanged keeps the stored secret.
    pub async fn server_edit(&self, name: &str, form: ServerForm) -> Result<(), ErrorView> {
        let new_name = form.name.trim().to_owned();
        self.write(Some(&new_name), |raw| replace(raw, name, &form))
            .await
    }

    pub async fn server_remove(&self, name: &str) -> Result<(), ErrorView> {
        self.write(None, |raw| remove(raw, name)).await
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

    /// Turns `tool` of `server` on or off in profile `profile` (the Profiles view's switch):
    /// its name in `lifeline.profiles.P.tools.SERVER.exclude`, saved and applied as every
    /// edit here is. Hosts attached to the profile keep what they were given until they
    /// connect again.
    pub async fn profile_tool_set(
        &self,
        profile: &str,
        server: &str,
        tool: &str,
        shown: bool,
    ) -> Result<(), ErrorView> {
        let config = self.live_config().await;
        self.write(None, |raw| {
            set_tool_shown(raw, &config, profile, server, tool, shown)
        })
        .await
    }

    /// The config the fleet runs now (the demo's in demo mode).
    pub(crate) async fn live_config(&self) -> Config {
        self.live.lock().await.config.clone()
    }

    /// Bumped whenever the servers or `info` changed; the UI re-snapshots.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
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
        let redactor = lock(&self.redactor).clone();
        let Some(config) = check(&original, &raw, &path, name, &redactor)? else {
            return Ok(out);
        };
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
        // Attached aggregated sessions follow the profiles too (`serve::attach`).
        let profiles_changed =
            live.config.profiles != new.profiles || live.config.separator != new.separator;
        live.config = new;
        self.set_config_notice(None);
        if !diff.is_empty() || leaving_demo || profiles_changed {
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

/// The file's JSON; an empty config when there is no file yet (`config::read_raw`).
fn read_raw(path: &Path) -> Result<Value, ErrorView> {
    config::read_raw(path).map_err(|e| {
        let message = match e {
            config::RawError::Json { line, column } => format!(
                "{} is not valid JSON (line {line}, column {column}); fix the file before editing \
                 it here.",
                path.display()
            ),
            config::RawError::Read(e) => format!("Could not read {}: {e}.", path.display()),
        };
        ErrorView::new(NOTICE_CONFIG, message)
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

mod changes;
pub mod edit;
pub(crate) use changes::fixed;
pub(crate) mod file_watch;
pub(crate) mod import;
pub use file_watch::ConfigWatch;
use import::ImportDirs;
pub use import::{Detected, ImportChoice, ImportOutcome};

#[cfg(test)]
mod profiles_recording;
#[cfg(test)]
mod recording;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trust_recording;
