//! Carrying out a `Plan` for a front end (`lifeline clients connect`, the app's "Connect a
//! client"): our config read as JSON, the servers the plan imports merged into it and saved,
//! and the client's file backed up and rewritten (`backup::write`).

use super::{Client, ClientError, Plan, backup};
use crate::config::{RawError, import, read_raw, save};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Our config's JSON, `{"mcpServers": {}}` when there is no file yet (`config::read_raw`).
pub fn read_ours(path: &Path) -> Result<Value, ClientError> {
    read_raw(path).map_err(|e| {
        let message = match e {
            RawError::Json { line, column } => format!(
                "{} is not valid JSON (line {line}, column {column}); fix it before connecting a \
                 client",
                path.display()
            ),
            RawError::Read(e) => format!("could not read {}: {e}", path.display()),
        };
        ClientError::new(message, Vec::new(), "")
    })
}

/// What `apply` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The servers added to our config (it is saved only when there are some).
    pub imported: Vec<String>,
    /// The copy of the client's file as it was.
    pub backup: PathBuf,
}

/// The client's file the plan rewrites, as read.
pub struct ClientFile<'a> {
    pub client: Client,
    pub path: &'a Path,
    pub text: &'a str,
}

/// Imports what `plan` imports into `ours` (our config at `ours_path`), saving it when
/// something was added, then backs the client's file up and writes the plan's text, recording
/// the connection in `state`. Call it only when `plan.changes()`.
pub fn apply(
    file: &ClientFile,
    plan: &Plan,
    mut ours: Value,
    ours_path: &Path,
    state: &Path,
) -> Result<Applied, ClientError> {
    let merged = import::merge(&mut ours, &plan.import)
        .map_err(|p| ClientError::new(p.to_string(), Vec::new(), ""))?;
    if !merged.added.is_empty() {
        save(&ours, ours_path)?;
    }
    let record = backup::write(
        file.client,
        file.path,
        file.text,
        plan,
        state,
        SystemTime::now(),
    )?;
    Ok(Applied {
        imported: merged.added,
        backup: record.backup,
    })
}
