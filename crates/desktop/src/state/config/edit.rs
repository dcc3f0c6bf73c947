//! A server entry as the editor shows and sends it (`ServerForm`), built from the file's
//! JSON with every secret masked, and turned back into an entry that keeps what the form
//! does not show (policy, unknown keys) and every secret the person did not retype.
//! Pure: no I/O, no state.

use crate::error::{ErrorView, FieldError};
use lifeline_core::config::{ConfigError, Problem};
use lifeline_core::redact::{MASK, Redactor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One `mcpServers` entry, as the editor holds it. Env and header values, URL userinfo and
/// URL query values are `***` unless they are only `${…}` references (which hold no secret
/// themselves and are shown as written).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ServerForm {
    pub name: String,
    /// `stdio`, `http` or `sse`.
    #[ts(type = "\"stdio\" | \"http\" | \"sse\"")]
    pub transport: String,
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: Vec<KeyValue>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub headers: Vec<KeyValue>,
    #[serde(default)]
    pub disabled: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

/// The form for the entry `name` of the file, secrets masked.
pub fn form_of(name: &str, entry: &Value) -> ServerForm {
    let str_of = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("");
    let transport = match entry.get("type").and_then(Value::as_str) {
        Some(t @ ("stdio" | "http" | "sse")) => t,
        _ if entry.get("url").is_some() && entry.get("command").is_none() => "http",
        _ => "stdio",
    };
    ServerForm {
        name: name.to_owned(),
        transport: transport.to_owned(),
        command: str_of("command").to_owned(),
        args: entry
            .get("args")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        env: pairs(entry.get("env")),
        cwd: entry.get("cwd").and_then(Value::as_str).map(str::to_owned),
        url: masked_url(str_of("url")),
        headers: pairs(entry.get("headers")),
        disabled: entry
            .get("disabled")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }
}

fn pairs(map: Option<&Value>) -> Vec<KeyValue> {
    let Some(map) = map.and_then(Value::as_object) else {
        return Vec::new();
    };
    map.iter()
        .map(|(k, v)| KeyValue {
            key: k.clone(),
            value: masked_value(v.as_str().unwrap_or("")),
        })
        .collect()
}

/// A value as it may be shown: as written when it is only `${…}` references (perhaps
/// after an auth scheme word, as in `Bearer ${env:TOKEN}`), `***` otherwise.
pub fn masked_value(value: &str) -> String {
    if value.is_empty() || only_references(value) {
        value.to_owned()
    } else {
        MASK.to_owned()
    }
}

fn only_references(value: &str) -> bool {
    let mut rest = String::new();
    let mut s = value;
    let mut found = false;
    while let Some(start) = s.find("${") {
        let Some(len) = s[start..].find('}') else {
            return false;
        };
        rest.push_str(&s[..start]);
        s = &s[start + len + 1..];
        found = true;
    }
    rest.push_str(s);
    let rest = rest.trim().to_ascii_lowercase();
    found && matches!(rest.as_str(), "" | "bearer" | "basic" | "token")
}

/// A URL as it may be shown: userinfo and credential-shaped path segments replaced by
/// `***`, each query value masked unless it is a reference. Not a URL parser: it only has to hide, and what it cannot split it masks.
pub fn masked_url(url: &str) -> String {
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (url, None),
    };
    let (base, query) = match before_fragment.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (before_fragment, None),
    };
    let mut out = match base.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            // A key in the path (`/mcp/<key>/sse`) is masked as a password is.
            let path = Redactor::default().url_path(path);
            match authority.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://{MASK}@{host}{path}"),
                None => format!("{scheme}://{authority}{path}"),
            }
        }
        None => base.to_owned(),
    };
    if let Some(query) = query {
        let parts: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) => format!("{k}={}", masked_value(v)),
                None => kv.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&parts.join("&"));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// The entry for `form`, starting from `old` (the entry being edited, if any): keys the
/// form does not own are kept in place, a masked value sent back unchanged keeps the stored
/// secret, and a masked value with nothing stored behind it is a field error.
pub fn entry_from(form: &ServerForm, old: Option<&Value>) -> Result<Value, Vec<FieldError>> {
    let empty = Map::new();
    let old = old.and_then(Value::as_object).unwrap_or(&empty);
    let mut errors = Vec::new();
    // Keys are set in place (a key already there keeps its position) or removed.
    let mut entry = old.clone();
    let mut set = |key: &str, value: Option<Value>| match value {
        Some(v) => {
            entry.insert(key.to_owned(), v);
        }
        None => {
            entry.shift_remove(key);
        }
    };
    match form.transport.as_str() {
        "stdio" => {
            if form.command.trim().is_empty() {
                errors.push(field(
                    "command",
                    "is empty; give the program to run (`npx`, a path)",
                ));
            }
            let typed = old.contains_key("type");
            set("type", typed.then(|| Value::from("stdio")));
            set("command", Some(Value::from(form.command.trim())));
            let args = (!form.args.is_empty()).then(|| Value::from(form.args.clone()));
            set("args", args);
            let env = secrets("env", &form.env, old.get("env"), &mut errors);
            set("env", env);
            let cwd = form.cwd.as_deref().map(str::trim).filter(|c| !c.is_empty());
            set("cwd", cwd.map(Value::from));
            set("url", None);
            set("headers", None);
        }
        kind @ ("http" | "sse") => {
            if form.url.trim().is_empty() {
                errors.push(field(
                    "url",
                    "is empty; give the server's address (https://…/mcp)",
                ));
            }
            let typed = old.contains_key("type") || kind == "sse";
            set("type", typed.then(|| Value::from(kind)));
            let stored = old.get("url").and_then(Value::as_str);
            let url = match stored {
                Some(stored) if masked_url(stored) == form.url => stored.to_owned(),
                _ if form.url.contains(MASK) => {
                    errors.push(field(
                        "url",
                        "holds `***` where a hidden part was changed; type the whole URL again",
                    ));
                    form.url.clone()
                }
                _ => form.url.trim().to_owned(),
            };
            set("url", Some(Value::from(url)));
            let headers = secrets("headers", &form.headers, old.get("headers"), &mut errors);
            set("headers", headers);
            for key in ["command", "args", "env", "inheritEnv", "cwd"] {
                set(key, None);
            }
        }
        other => errors.push(field(
            "transport",
            &format!("is {other:?}; choose stdio, http or sse"),
        )),
    }
    set("disabled", form.disabled.then_some(Value::Bool(true)));
    if errors.is_empty() {
        Ok(Value::Object(entry))
    } else {
        Err(errors)
    }
}

/// Env or header pairs as an object; `None` when there are none. `***` keeps the value
/// stored under the same key.
fn secrets(
    section: &str,
    pairs: &[KeyValue],
    old: Option<&Value>,
    errors: &mut Vec<FieldError>,
) -> Option<Value> {
    let mut out = Map::new();
    for KeyValue { key, value } in pairs {
        let at = format!("{section}.{key}");
        if key.trim().is_empty() {
            errors.push(field(
                section,
                "has an entry with no name; name it or remove it",
            ));
            continue;
        }
        if out.contains_key(key) {
            errors.push(field(&at, "is set twice; keep one"));
            continue;
        }
        let value = if value == MASK {
            match old.and_then(|o| o.get(key)) {
                Some(stored) => stored.clone(),
                None => {
                    errors.push(field(
                        &at,
                        "is `***`, and nothing is stored under this name; type the value",
                    ));
                    continue;
                }
            }
        } else {
            Value::from(value.as_str())
        };
        out.insert(key.clone(), value);
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

fn field(field: &str, message: &str) -> FieldError {
    FieldError {
        field: field.to_owned(),
        message: message.to_owned(),
    }
}

/// A form that was refused before anything was written.
pub fn form_error(errors: Vec<FieldError>) -> ErrorView {
    let lines: Vec<String> = errors
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect();
    let mut view = ErrorView::new(
        "config",
        format!("The server was not saved: {}.", lines.join("; ")),
    );
    view.fields = errors;
    view
}

/// A config the core refused. Fields inside server `name` are given relative to its entry
/// (`url`, `env.TOKEN`), so the editor can put each next to its input; others keep their
/// full path. Messages are scrubbed with `redactor` (the core shows no secret values, but a
/// message may quote a name the person typed a secret into).
pub fn config_error(e: &ConfigError, name: Option<&str>, redactor: &Redactor) -> ErrorView {
    let fields: Vec<FieldError> = e
        .problems
        .iter()
        .map(|p| FieldError {
            field: relative(&p.field, name),
            message: redactor.scrub(&problem_text(p)),
        })
        .collect();
    let mut view = ErrorView::new("config", redactor.scrub(&e.to_string()));
    view.fields = fields;
    view
}

fn problem_text(p: &Problem) -> String {
    match &p.value {
        Some(v) => format!("{} (is {v})", p.message),
        None => p.message.clone(),
    }
}

fn relative(path: &str, name: Option<&str>) -> String {
    let Some(name) = name else {
        return path.to_owned();
    };
    for prefix in [
        format!("mcpServers.{name}"),
        format!("mcpServers.\"{name}\""),
    ] {
        if path == prefix {
            return String::new();
        }
        if let Some(rest) = path.strip_prefix(&prefix).and_then(|r| r.strip_prefix('.')) {
            return rest.to_owned();
        }
    }
    path.to_owned()
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
