//! The diagnostic bundle from the running app (docs/bundle.md): the config as written, each
//! supervisor's snapshot and stderr tails, the events and failures the app has seen (the
//! last `EVENTS_KEPT` per server, recorded from the bus since start), and the tail of the
//! log folder. `preview` builds it and keeps it; `export` writes exactly the bundle that
//! was previewed, so what a person saw is what they send. It never replaces a file unless
//! the person chose that file in the platform's save dialog.

use crate::bus::forward;
use crate::error::ErrorView;
use lifeline_core::config::Config;
use lifeline_core::diagnostics::bundle::{
    self, Bundle, BundleFile, BundleInput, BundleOptions, ServerInput,
};
use lifeline_core::events::{Event, EventBody, EventBus};
use lifeline_core::supervisor::Fleet;
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::watch;

/// Events kept per server for the bundle; the bundle's size bound may drop more.
const EVENTS_KEPT: usize = 2000;

/// Log lines taken from the end of the log folder.
const LOG_LINES: usize = 5000;

/// What `bundle_preview` returns: every file with its exact content, and where a save
/// would go by default.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct BundlePreview {
    pub diagnostics_id: String,
    pub files: Vec<BundleFile>,
    /// The zip's files' total size before compression, in bytes.
    pub total_bytes: u32,
    pub default_path: String,
}

/// What `bundle_export` returns.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct Exported {
    pub path: String,
    /// The zip's size on disk. Bounded by the bundle's limit, so a u32.
    pub bytes: u32,
}

type History = HashMap<String, VecDeque<Event>>;

/// Everything besides the fleet that a bundle is made of.
pub struct BundleSources {
    /// The config as written and its secrets; replaced when the config changes.
    config: Mutex<(Value, Vec<String>)>,
    log_dir: Option<PathBuf>,
    history: Arc<Mutex<History>>,
    /// The `seq` of the last event in `history` (a new subscriber waits on it).
    recorded: watch::Receiver<u64>,
    /// The last preview, which `export` writes.
    previewed: Mutex<Option<Bundle>>,
    /// An existing file the person chose to replace in the platform's save dialog (which
    /// asked them). Only that path may be replaced, once; the webview cannot ask for it.
    replace: Mutex<Option<PathBuf>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl BundleSources {
    /// Starts recording events from `bus`; call before the fleet starts to see them all.
    pub fn start(config: &Config, bus: &EventBus, log_dir: Option<&str>) -> BundleSources {
        let history: Arc<Mutex<History>> = Arc::default();
        let recorder = history.clone();
        let (recorded_tx, recorded) = watch::channel(0);
        tokio::spawn(forward(bus.subscribe(), move |event: Event| {
            let seq = event.seq;
            {
                let mut history = lock(&recorder);
                let kept = history.entry(event.server.clone()).or_default();
                if kept.len() == EVENTS_KEPT {
                    kept.pop_front();
                }
                kept.push_back(event);
            }
            // After the history's lock is released: a waiter reads the history while it
            // holds the watch's.
            recorded_tx.send_replace(seq);
            true
        }));
        BundleSources {
            config: Mutex::new((config.raw.clone(), config.secrets())),
            log_dir: log_dir.map(PathBuf::from),
            history,
            recorded,
            previewed: Mutex::new(None),
            replace: Mutex::new(None),
        }
    }

    /// A receiver of the `seq` of the last event recorded, changed after each.
    #[cfg(any(test, feature = "test-support"))]
    pub fn recorded(&self) -> watch::Receiver<u64> {
        self.recorded.clone()
    }

    /// Resolves once every event up to `seq` is held (at once if the recorder has ended).
    pub async fn caught_up(&self, seq: u64) {
        let mut recorded = self.recorded.clone();
        let _ = recorded.wait_for(|s| *s >= seq).await;
    }

    /// The save dialog returned `path`, which exists: the person agreed to replace it.
    pub fn confirm_replace(&self, path: PathBuf) {
        *lock(&self.replace) = Some(path);
    }

    /// The latest `limit` events of this run across every server, in `seq` order.
    pub fn recent(&self, limit: usize) -> Vec<Event> {
        let history = lock(&self.history);
        let mut all: Vec<Event> = history.values().flatten().cloned().collect();
        all.sort_by_key(|e| e.seq);
        let skip = all.len().saturating_sub(limit);
        all.split_off(skip)
    }

    /// The config the fleet runs now (after an edit or a reload).
    pub fn set_config(&self, config: &Config) {
        *lock(&self.config) = (config.raw.clone(), config.secrets());
    }

    /// Builds the bundle from the fleet as it is now and keeps it for `export`.
    pub fn preview(&self, fleet: &Fleet) -> BundlePreview {
        let built = bundle::build(&self.input(fleet), BundleOptions::default());
        let preview = BundlePreview {
            diagnostics_id: built.id().to_owned(),
            total_bytes: built.files().iter().map(|f| f.size).sum(),
            default_path: default_path(built.id()),
            files: built.files().to_vec(),
        };
        *lock(&self.previewed) = Some(built);
        preview
    }

    /// Writes the last previewed bundle (or a fresh one, when there was no preview) to
    /// `path`, which must be absolute: the app's working folder means nothing to a person.
    pub fn export(&self, fleet: &Fleet, path: &str) -> Result<Exported, ErrorView> {
        let target = Path::new(path);
        if !target.is_absolute() {
            return Err(ErrorView::new(
                "config",
                format!(
                    "`{path}` is not a full path; give one such as {}",
                    default_path("…")
                ),
            ));
        }
        let built = lock(&self.previewed)
            .clone()
            .unwrap_or_else(|| bundle::build(&self.input(fleet), BundleOptions::default()));
        // A typed path never replaces a file; one confirmed in the save dialog does.
        let confirmed = lock(&self.replace).take().is_some_and(|p| p == target);
        let written = if confirmed {
            built.write_over(target)
        } else {
            built.write(target)
        };
        let bytes = written.map_err(|e| {
            let e = lifeline_core::Error::from(e);
            ErrorView::new(e.kind().as_str(), e.message())
        })?;
        tracing::info!("diagnostic bundle {} written to {path}", built.id());
        Ok(Exported {
            path: path.to_owned(),
            bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
        })
    }

    fn input(&self, fleet: &Fleet) -> BundleInput {
        let history = lock(&self.history).clone();
        let servers = fleet
            .supervisors()
            .iter()
            .map(|s| {
                let events = history.get(s.name()).cloned().unwrap_or_default();
                ServerInput {
                    name: s.name().to_owned(),
                    state: serde_json::to_value(s.snapshot()).unwrap_or(Value::Null),
                    failures: events
                        .iter()
                        .filter_map(|e| match &e.body {
                            EventBody::Failure { failure } => serde_json::to_value(failure).ok(),
                            _ => None,
                        })
                        .collect(),
                    events: events
                        .iter()
                        .filter_map(|e| serde_json::to_value(e).ok())
                        .collect(),
                    stderr: s.stderr_tails(),
                }
            })
            .collect();
        // One guard: a second `lock` in the same expression would wait for this one.
        let (config, secrets) = lock(&self.config).clone();
        BundleInput {
            app: "lifeline-app".into(),
            app_version: env!("CARGO_PKG_VERSION").into(),
            config: Some(config),
            secrets,
            servers,
            log_tail: self
                .log_dir
                .as_deref()
                .map(|d| bundle::read_log_tail(d, LOG_LINES))
                .unwrap_or_default(),
        }
    }
}

/// `~/Downloads/lifeline-diagnostics-ID.zip`, or the home folder when there is no
/// Downloads folder.
fn default_path(id: &str) -> String {
    let dir = dirs::download_dir()
        .or_else(dirs::home_dir)
        .unwrap_or_else(std::env::temp_dir);
    dir.join(format!("lifeline-diagnostics-{id}.zip"))
        .display()
        .to_string()
}

#[cfg(test)]
#[path = "bundle_tests.rs"]
mod tests;
