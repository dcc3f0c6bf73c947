//! The editor's changes to the file's JSON (add, replace, remove a server), the Profiles
//! view's switch (one tool of a profile on or off), and the core's check of the result
//! before anything is saved. Pure: no I/O, no state. `AppState`'s writes (`mod.rs`) and the
//! UI mock's recordings (`recording.rs`, `profiles_recording.rs`) all go through these.

use super::edit::{self, ServerForm, config_error, form_error};
use super::{NOTICE_CONFIG, not_configured, problem_error, servers_of};
use crate::error::ErrorView;
use lifeline_core::config::{self, Config, Profile, Selection, Tools};
use lifeline_core::redact::Redactor;
use serde_json::{Map, Value, json};
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

/// Whether the glob `glob` matches `name`, as the config's filters match (the core's rule).
fn matches(glob: &str, name: &str) -> bool {
    let only = Selection {
        include: vec![glob.to_owned()],
        exclude: Vec::new(),
    };
    only.admits(name)
}

/// Why the switch of `tool` of `server` in `profile` cannot make it `shown`, if it cannot.
/// A switch edits only the exact name in `tools.SERVER.exclude`: search mode has no filters,
/// a name with `*` or `?` would be read as a glob, and a tool hidden by a glob or left out
/// by an `include` stays hidden when its own name leaves `exclude`.
pub(crate) fn fixed(profile: &Profile, server: &str, tool: &str, shown: bool) -> Option<String> {
    let Tools::List(filters) = &profile.tools else {
        return Some(
            "the profile is in search mode (`\"tools\": \"search\"`): a host can find every tool \
             of its servers"
                .to_owned(),
        );
    };
    if tool.contains(['*', '?']) {
        return Some("its name has `*` or `?`, which a filter reads as a glob".to_owned());
    }
    if !shown || profile.shows(server, tool) {
        return None;
    }
    for (glob, selection) in filters.iter().filter(|(g, _)| matches(g, server)) {
        let at = format!("`lifeline.profiles.{}.tools.{glob}", profile.name);
        if !selection.include.is_empty() && !selection.include.iter().any(|g| matches(g, tool)) {
            return Some(format!("{at}.include` does not name it"));
        }
        let own = |g: &String| glob == server && g == tool;
        if let Some(g) = selection
            .exclude
            .iter()
            .find(|g| !own(g) && matches(g, tool))
        {
            return Some(format!("`{g}` in {at}.exclude` leaves it out"));
        }
    }
    None
}

/// Shows or hides `tool` of `server` in profile `name` of the file's JSON (`config` is what
/// the file loads as now): its exact name added to `lifeline.profiles.NAME.tools.SERVER.
/// exclude`, or taken out of it (and what that leaves empty taken out too). `default` is
/// added to the file when it has none; every other key is kept. Refused where the switch
/// cannot do it (`fixed`); nothing changes when the tool already is as asked.
pub(crate) fn set_tool_shown(
    raw: &mut Value,
    config: &Config,
    name: &str,
    server: &str,
    tool: &str,
    shown: bool,
) -> Result<(), ErrorView> {
    let profile = config.profile(name).ok_or_else(|| {
        let known = config.profile_names().join(", ");
        ErrorView::new(
            NOTICE_CONFIG,
            format!("there is no profile `{name}` (the profiles: {known})"),
        )
    })?;
    if config.server(server).is_none() {
        let known = config.servers.iter().map(|s| s.name.as_str());
        return Err(ErrorView::unknown_server(server, known));
    }
    if let Some(why) = fixed(&profile, server, tool, shown) {
        let how = if shown { "on" } else { "off" };
        return Err(ErrorView::new(
            NOTICE_CONFIG,
            format!("`{tool}` of `{server}` cannot be turned {how} here: {why}; edit the file"),
        ));
    }
    if profile.shows(server, tool) == shown {
        return Ok(());
    }
    let top = raw
        .as_object_mut()
        .ok_or_else(|| not_an_object("the file"))?;
    let profiles = child(
        child(top, "lifeline", "lifeline")?,
        "profiles",
        "lifeline.profiles",
    )?;
    let at = format!("lifeline.profiles.{name}");
    let entry = child(profiles, name, &at)?;
    let tools = child(entry, "tools", &format!("{at}.tools"))?;
    let filter = tools.entry(server).or_insert_with(|| json!({}));
    if filter.is_array() {
        // A list is the names to include: the same filter, written out.
        *filter = json!({ "include": filter.take() });
    }
    let at = format!("{at}.tools.{server}");
    let filter = filter.as_object_mut().ok_or_else(|| not_an_object(&at))?;
    let list = filter
        .entry("exclude")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| {
            ErrorView::new(
                NOTICE_CONFIG,
                format!("`{at}.exclude` in the file is not a list; fix the file first."),
            )
        })?;
    if !shown {
        list.push(json!(tool));
        return Ok(());
    }
    list.retain(|g| g != tool);
    if list.is_empty() {
        filter.shift_remove("exclude");
    }
    if filter.is_empty() {
        tools.shift_remove(server);
    }
    if tools.is_empty() {
        entry.shift_remove("tools");
    }
    Ok(())
}

/// The object under `key` of `parent`, made empty when there is none.
fn child<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<&'a mut Map<String, Value>, ErrorView> {
    parent
        .entry(key)
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| not_an_object(at))
}

fn not_an_object(at: &str) -> ErrorView {
    ErrorView::new(
        NOTICE_CONFIG,
        format!("`{at}` in the file is not an object; fix the file first."),
    )
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

#[cfg(test)]
#[path = "changes_tests.rs"]
mod tests;
