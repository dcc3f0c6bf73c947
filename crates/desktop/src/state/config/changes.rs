//! The editor's changes to the file's JSON (add, replace, remove a server), and the core's
//! check of the result before anything is saved. Pure: no I/O, no state. `AppState`'s
//! writes (`mod.rs`) and the UI mock's recording (`recording.rs`) both go through these.

use super::edit::{self, ServerForm, config_error, form_error};
use super::{not_configured, problem_error, servers_of};
use crate::error::ErrorView;
use lifeline_core::config::{self, Config};
use lifeline_core::redact::Redactor;
use serde_json::Value;
use std::path::Path;

/// The file's servers as editor forms, every secret masked.
pub(crate) fn forms(raw: &Value) -> Vec<ServerForm> {
    let Some(servers) = raw.get("mcpServers").and_then(Value::as_object) else {
        return Vec::new();
    };
    servers
        .iter()
        .map(|(name, entry)| edit::form_of(name, entry))
        .collect()
}

/// Adds the server of `form` to the file's JSON; a name already there is refused.
pub(crate) fn add(raw: &mut Value, form: &ServerForm) -> Result<(), ErrorView> {
    let name = form.name.trim();
    let entry = edit::entry_from(form, None).map_err(form_error)?;
    config::write::add_server(raw, name, entry).map_err(|p| problem_error(p, name))
}

/// Replaces the server `name` with `form` where it stands; a new name renames it, unless
/// another server has it.
pub(crate) fn replace(raw: &mut Value, name: &str, form: &ServerForm) -> Result<(), ErrorView> {
    let new_name = form.name.trim().to_owned();
    let servers = servers_of(raw)?;
    let old = servers
        .get(name)
        .ok_or_else(|| not_configured(name, servers))?;
    let entry = edit::entry_from(form, Some(old)).map_err(form_error)?;
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
}

pub(crate) fn remove(raw: &mut Value, name: &str) -> Result<(), ErrorView> {
    let servers = servers_of(raw)?;
    match servers.shift_remove(name) {
        Some(_) => Ok(()),
        None => Err(not_configured(name, servers)),
    }
}

/// The config `raw` loads as, or the core's refusal (fields relative to the server `name`);
/// `None` when `raw` is still `original`, so there is nothing to save.
pub(crate) fn check(
    original: &Value,
    raw: &Value,
    path: &Path,
    name: Option<&str>,
    redactor: &Redactor,
) -> Result<Option<Config>, ErrorView> {
    if raw == original {
        return Ok(None);
    }
    config::from_value(raw.clone(), Some(path.to_owned()), &config::env_lookup)
        .map(Some)
        .map_err(|e| config_error(&e, name, redactor))
}
