//! Importing other clients' servers from the app: which clients' files exist here and what
//! importing them would do (`import_detect`), and the import itself (`import_apply`), through
//! the same checked, atomic, applied write as every other change. Nothing configured is
//! ever overwritten.

use super::edit;
use super::{AppState, NOTICE_CONFIG, empty_raw, problem_error, read_raw};
use crate::error::ErrorView;
use lifeline_core::config;
use lifeline_core::config::import::{self, ImportReport};
use lifeline_core::redact::Redactor;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// The home and config directories other clients keep their files under.
#[derive(Debug, Clone)]
pub struct ImportDirs {
    pub home: Option<PathBuf>,
    pub config: Option<PathBuf>,
}

impl ImportDirs {
    /// This user's.
    pub fn of_user() -> ImportDirs {
        ImportDirs {
            home: dirs::home_dir(),
            config: dirs::config_dir(),
        }
    }
}

/// A client whose config file exists here, and what importing it would do.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct Detected {
    /// `claude_desktop`, `claude_code`, `cursor` or `vscode`: what `import_apply` takes.
    pub source: &'static str,
    pub client: &'static str,
    pub path: String,
    pub servers: Vec<DetectedServer>,
    pub skipped: Vec<Named>,
    /// The file exists but could not be read; no servers are listed.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct DetectedServer {
    pub name: String,
    pub transport: String,
    /// Why importing it would not add it (a server of that name is already configured).
    pub conflict: Option<String>,
}

/// A server name and a sentence about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Named {
    pub name: String,
    pub reason: String,
}

/// One source to import from; `servers` picks some of its servers (all when absent).
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
pub struct ImportChoice {
    pub source: String,
    #[serde(default)]
    #[ts(optional)]
    pub servers: Option<Vec<String>>,
}

/// What `import_apply` did. Nothing already configured is ever replaced: each such name is
/// a conflict, and the configured server stays as it was.
#[derive(Debug, Clone, Default, Serialize, ts_rs::TS)]
pub struct ImportOutcome {
    pub added: Vec<String>,
    pub conflicts: Vec<Named>,
    pub skipped: Vec<Named>,
    /// Added, but disabled: their entry needs something this machine lacks (a variable).
    pub disabled: Vec<Named>,
}

const SOURCES: [(&str, import::Source); 4] = [
    ("claude_desktop", import::Source::ClaudeDesktop),
    ("claude_code", import::Source::ClaudeCode),
    ("cursor", import::Source::Cursor),
    ("vscode", import::Source::VsCode),
];

impl AppState {
    /// Which clients' config files exist here, their servers, and what would conflict.
    pub async fn import_detect(&self) -> Result<Vec<Detected>, ErrorView> {
        let live = self.live.lock().await;
        let ours = live
            .path
            .as_deref()
            .and_then(|p| read_raw(p).ok())
            .unwrap_or_else(empty_raw);
        let configured = |name: &str| ours["mcpServers"].get(name).is_some();
        let mut found = Vec::new();
        for (id, source) in &SOURCES {
            let Some((path, report)) = read_source(source, &live.dirs) else {
                continue;
            };
            let mut detected = Detected {
                source: id,
                client: source.name(),
                path: path.display().to_string(),
                servers: Vec::new(),
                skipped: Vec::new(),
                error: None,
            };
            match report {
                Ok(report) => {
                    detected.servers = report
                        .servers
                        .iter()
                        .map(|(name, entry)| DetectedServer {
                            name: name.clone(),
                            transport: edit::form_of(name, entry).transport,
                            conflict: configured(name).then(|| {
                                format!("a server named `{name}` is already configured; it is kept")
                            }),
                        })
                        .collect();
                    detected.skipped = named(&report.skipped);
                }
                Err(e) => detected.error = Some(Redactor::default().scrub(&e.to_string())),
            }
            found.push(detected);
        }
        Ok(found)
    }

    /// Imports the chosen sources' servers after the configured ones. A name that is
    /// already configured (or came from an earlier source) is a conflict and is not
    /// imported; an entry that needs a variable this machine does not set is added
    /// disabled. Nothing is written when nothing is added.
    pub async fn import_apply(
        &self,
        choices: Vec<ImportChoice>,
    ) -> Result<ImportOutcome, ErrorView> {
        let dirs = self.live.lock().await.dirs.clone();
        let mut reports = Vec::new();
        for choice in &choices {
            let (id, source) = SOURCES
                .iter()
                .find(|(id, _)| *id == choice.source)
                .ok_or_else(|| unknown_source(&choice.source))?;
            let (_, report) = read_source(source, &dirs).ok_or_else(|| {
                ErrorView::new(
                    NOTICE_CONFIG,
                    format!(
                        "There is no {} config on this machine to import ({id}).",
                        source.name()
                    ),
                )
            })?;
            let report = report.map_err(|e| {
                ErrorView::new(NOTICE_CONFIG, Redactor::default().scrub(&e.to_string()))
            })?;
            reports.push((source.name(), pick(report, choice.servers.as_deref())));
        }
        self.write(None, |raw| {
            let mut outcome = ImportOutcome::default();
            for (client, (report, missing)) in &reports {
                outcome.skipped.extend(missing.iter().map(|name| Named {
                    name: name.clone(),
                    reason: format!("is not in {client}'s config"),
                }));
                let merged = import::merge(raw, report).map_err(|p| problem_error(p, ""))?;
                outcome.added.extend(merged.added);
                outcome
                    .conflicts
                    .extend(merged.skipped_existing.into_iter().map(|name| Named {
                    reason: format!(
                        "a server named `{name}` is already configured; it was kept and the one \
                         from {client} was not imported (rename one to keep both)"
                    ),
                    name,
                }));
                outcome.skipped.extend(named(&merged.skipped));
            }
            outcome.disabled = disable_unloadable(raw, &outcome.added);
            Ok(outcome)
        })
        .await
    }

    #[cfg(any(test, feature = "test-support"))]
    pub async fn set_import_dirs(&self, home: &std::path::Path, config: &std::path::Path) {
        self.live.lock().await.dirs = ImportDirs {
            home: Some(home.to_owned()),
            config: Some(config.to_owned()),
        };
    }
}

fn unknown_source(source: &str) -> ErrorView {
    let known: Vec<&str> = SOURCES.iter().map(|(id, _)| *id).collect();
    ErrorView::new(
        NOTICE_CONFIG,
        format!(
            "`{source}` is not a client to import from (known: {})",
            known.join(", ")
        ),
    )
}

/// The first existing file among the source's well-known paths, read.
fn read_source(
    source: &import::Source,
    dirs: &ImportDirs,
) -> Option<(PathBuf, Result<ImportReport, config::ConfigError>)> {
    let paths = source.paths_in(dirs.home.as_deref(), dirs.config.as_deref());
    let path = paths.into_iter().find(|p| p.is_file())?;
    let report = import::read_path(source, &path);
    Some((path, report))
}

/// The report with only the servers in `names` (all when `None`), and the names it lacks.
fn pick(mut report: ImportReport, names: Option<&[String]>) -> (ImportReport, Vec<String>) {
    let Some(names) = names else {
        return (report, Vec::new());
    };
    let missing = names
        .iter()
        .filter(|n| !report.servers.iter().any(|(s, _)| s == *n))
        .cloned()
        .collect();
    report.servers.retain(|(s, _)| names.contains(s));
    report.skipped.retain(|(s, _)| names.contains(s));
    (report, missing)
}

fn named(pairs: &[(String, String)]) -> Vec<Named> {
    pairs
        .iter()
        .map(|(name, reason)| Named {
            name: name.clone(),
            reason: reason.clone(),
        })
        .collect()
}

/// Disables each of `added` whose entry does not load here (a variable that is not set):
/// a disabled server's references are not resolved, so the rest of the file still loads.
fn disable_unloadable(raw: &mut Value, added: &[String]) -> Vec<Named> {
    let Err(e) = config::from_value(raw.clone(), None, &config::env_lookup) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for name in added {
        let prefix = format!("mcpServers.{name}");
        let problems: Vec<String> = e
            .problems
            .iter()
            .filter(|p| p.field == prefix || p.field.starts_with(&format!("{prefix}.")))
            .map(|p| p.to_string())
            .collect();
        if !problems.is_empty() && config::write::set_disabled(raw, name, true).is_ok() {
            out.push(Named {
                name: name.clone(),
                reason: format!("added disabled: {}", problems.join("; ")),
            });
        }
    }
    out
}
