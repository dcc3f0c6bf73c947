//! One imported entry: renamed if its name is not one Lifeline accepts, `${userHome}`
//! resolved, editor variables and prompts found, then checked exactly as a config entry is
//! (`parse::server`). What passes goes into the report as it was written, unknown keys
//! included; what does not is skipped with every reason.

use super::ImportReport;
use crate::config::expand::{self, Ctx, ExpandError, Lookup};
use crate::config::parse;
use crate::config::types::ServerPolicy;
use crate::config::validate::{self, MAX_NAME_LEN, join};
use serde_json::{Map, Value};
use std::path::Path;

/// VS Code's and Cursor's predefined variables: they name things in an editor window,
/// which Lifeline does not have. `userHome` is resolved when the home directory is known.
const EDITOR_VARIABLES: [&str; 16] = [
    "userHome",
    "workspaceFolder",
    "workspaceFolderBasename",
    "workspaceRoot",
    "file",
    "fileBasename",
    "fileBasenameNoExtension",
    "fileDirname",
    "fileExtname",
    "fileWorkspaceFolder",
    "relativeFile",
    "relativeFileDirname",
    "cwd",
    "pathSeparator",
    "execPath",
    "lineNumber",
];

/// Keys other clients understand and Lifeline does not act on: imported, with a warning.
const IGNORED_KEYS: [(&str, &str); 4] = [
    (
        "envFile",
        "its variables will not be set; copy them into `env`",
    ),
    (
        "oauth",
        "Lifeline does not run OAuth flows yet; a static token header works",
    ),
    (
        "auth",
        "Lifeline does not run OAuth flows yet; a static token header works",
    ),
    (
        "headersHelper",
        "the helper is not run; set `headers` instead",
    ),
];

pub(super) struct Env<'a> {
    pub home: Option<&'a Path>,
    pub lookup: Lookup<'a>,
}

/// Sorts one entry into `report.servers` or `report.skipped`.
pub(super) fn sort(section: &str, name: &str, value: &Value, env: &Env, report: &mut ImportReport) {
    let mut skip = |why: String| report.skipped.push((name.to_owned(), why));
    let Some(entry) = value.as_object() else {
        return skip(format!(
            "is not an object but {}",
            validate::type_name(value)
        ));
    };
    let imported = importable_name(name);
    if imported.is_empty() {
        return skip("its name has no letters or digits to keep".to_owned());
    }
    if report.servers.iter().any(|(n, _)| *n == imported) {
        return skip(format!(
            "a server named {imported} was already imported from this file; the first is kept"
        ));
    }
    let mut entry = entry.clone();
    normalize(&mut entry, env.home);
    let (mut reasons, unset) = references(&mut entry, env.lookup);
    let value = Value::Object(entry);
    reasons.extend(problems(section, &imported, &value));
    if !reasons.is_empty() {
        return skip(reasons.join("; "));
    }

    let mut warn = |why: String| report.warnings.push((imported.clone(), why));
    if imported != name {
        warn(format!(
            "imported as {imported} (from {name:?}): names may hold only letters, digits, `-`, `_` and `.`"
        ));
    }
    for (key, why) in IGNORED_KEYS {
        if value.get(key).is_some() {
            warn(format!("has `{key}`, which Lifeline ignores: {why}"));
        }
    }
    for name in unset {
        warn(format!(
            "uses the variable {name}, which is not set here; set it where Lifeline runs, or \
             the config will not load (or disable this server)"
        ));
    }
    report.servers.push((imported, value));
}

/// `type` aliases other clients accept, and `${userHome}` when the home directory is known.
fn normalize(entry: &mut Map<String, Value>, home: Option<&Path>) {
    if let Some(t @ Value::String(_)) = entry.get_mut("type")
        && matches!(t.as_str(), Some("streamable-http" | "streamableHttp"))
    {
        *t = Value::String("http".to_owned());
    }
    if let Some(home) = home {
        let home = home.display().to_string();
        for_each_text(entry, |_, s| *s = s.replace("${userHome}", &home));
    }
}

/// References that can never expand here (editor variables, prompts, defaults), as skip
/// reasons; and the variables that are not set in this environment, for a warning.
fn references(entry: &mut Map<String, Value>, lookup: Lookup) -> (Vec<String>, Vec<String>) {
    let mut reasons = Vec::new();
    let mut unset = Vec::new();
    let not_editor = |n: &str| (!EDITOR_VARIABLES.contains(&n)).then(String::new);
    for_each_text(entry, |field, s| {
        for e in expand::expand(s, &not_editor).err().unwrap_or_default() {
            reasons.push(match e {
                ExpandError::Undefined { reference, .. } => format!(
                    "{field}: `{reference}` is an editor variable Lifeline cannot know; write \
                     the value itself"
                ),
                other => format!("{field}: {other}"),
            });
        }
        for e in expand::expand(s, lookup).err().unwrap_or_default() {
            if let ExpandError::Undefined { name, .. } = e
                && !EDITOR_VARIABLES.contains(&name.as_str())
                && !unset.contains(&name)
            {
                unset.push(name);
            }
        }
    });
    (reasons, unset)
}

/// What a config load would say about this entry, with paths relative to it. References
/// are left unexpanded and unchecked: they are checked when the config is loaded, in the
/// environment Lifeline runs in.
fn problems(section: &str, name: &str, value: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let ctx = Ctx {
        lookup: &|_| None,
        secrets: &expand::no_secrets,
        strict: false,
    };
    parse::server(
        section,
        name,
        value,
        &ServerPolicy::default(),
        ctx,
        &mut problems,
    );
    let prefix = join(section, name);
    problems
        .into_iter()
        .map(|mut p| {
            if let Some(rel) = p.field.strip_prefix(&prefix) {
                p.field = rel.trim_start_matches('.').to_owned();
            }
            p.to_string()
        })
        .collect()
}

/// The name as Lifeline accepts it: other characters become `-`, at most 64 characters.
pub(crate) fn importable_name(name: &str) -> String {
    if validate::check_name(name).is_none() {
        return name.to_owned();
    }
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.') {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').chars().take(MAX_NAME_LEN).collect()
}

/// Calls `f` on every string Lifeline expands: command, args, env values, cwd, url, header
/// values, with the field's path inside the entry.
fn for_each_text(entry: &mut Map<String, Value>, mut f: impl FnMut(&str, &mut String)) {
    for key in ["command", "cwd", "url"] {
        if let Some(Value::String(s)) = entry.get_mut(key) {
            f(key, s);
        }
    }
    if let Some(Value::Array(args)) = entry.get_mut("args") {
        for (i, a) in args.iter_mut().enumerate() {
            if let Value::String(s) = a {
                f(&format!("args[{i}]"), s);
            }
        }
    }
    for key in ["env", "headers"] {
        if let Some(Value::Object(map)) = entry.get_mut(key) {
            for (k, v) in map.iter_mut() {
                if let Value::String(s) = v {
                    f(&join(key, k), s);
                }
            }
        }
    }
}
