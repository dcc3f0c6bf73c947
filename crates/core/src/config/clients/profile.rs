//! Connecting a client to one of Lifeline's profiles (`lifeline clients connect CLIENT
//! --profile P`; docs/clients.md, "One entry for a profile"): the client's file gets one
//! entry, `lifeline` unless named otherwise, that runs `lifeline connect --profile P
//! --client KIND --entry NAME`, and the entries of the servers the profile serves are taken
//! out, since that entry now serves them. An entry is taken out only when its server is in
//! Lifeline's config — imported first when it is not, as `plan` imports — so nothing the
//! client ran is lost; every other entry stays, with why. Pure, like `plan`: the same byte
//! ranges edited, every other byte kept. `endpoints` reads back which profile each such
//! entry serves (`lifeline clients show`).

use super::text::{self, Edit, add_member, member, take_out};
use super::{
    Client, ClientError, Plan, Routed, TRANSPORT_KEYS, entry_secrets, is_routed, not_json,
    sections, spans, value_of,
};
use crate::config::error::Problem;
use crate::config::import::{self, ImportReport};
use crate::config::profiles::{self, DEFAULT_PROFILE, Profile};
use crate::config::validate::{check_name, join};
use crate::redact::Redactor;
use serde_json::{Map, Value, json};
use std::path::Path;

/// The entry's name in the client's file unless told otherwise, as `lifeline connect`'s
/// `--entry` defaults to.
pub const DEFAULT_ENTRY: &str = "lifeline";

/// What `plan_profile` is given.
pub struct ProfileRequest<'a> {
    pub client: Client,
    /// The client's file, for messages and the importer.
    pub path: &'a Path,
    pub text: &'a str,
    /// The profile the entry serves (`profile_of`).
    pub profile: &'a Profile,
    /// The entry's name in the client's file.
    pub entry: &'a str,
    /// Our config file's JSON (`{"mcpServers": {}}` when there is none yet).
    pub lifeline: &'a Value,
    /// The absolute path of the `lifeline` binary the client will run.
    pub command: &'a str,
    /// Our config file, when `lifeline connect` must be told where it is.
    pub config_arg: Option<&'a Path>,
}

/// The profile `name` of our config's JSON: one `lifeline.profiles` defines, else for
/// `default` every server. Another name is an error naming the profiles there are; so is a
/// `lifeline.profiles` with problems, naming them.
pub fn profile_of(ours: &Value, name: &str) -> Result<Profile, ClientError> {
    let servers: Vec<&str> = ours
        .get("mcpServers")
        .and_then(Value::as_object)
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut problems = Vec::new();
    let defined = match ours.get("lifeline").and_then(|l| l.get("profiles")) {
        Some(v) => profiles::profiles(v, &servers, &mut problems),
        None => Vec::new(),
    };
    if !problems.is_empty() {
        return Err(ClientError::new(
            "Lifeline's config has problems in lifeline.profiles",
            problems,
            "Fix them first (docs/config.md, \"Profiles\").",
        ));
    }
    if let Some(p) = defined.iter().find(|p| p.name == name) {
        return Ok(p.clone());
    }
    if name == DEFAULT_PROFILE {
        return Ok(Profile::everything(name));
    }
    let mut names = vec![DEFAULT_PROFILE];
    names.extend(
        defined
            .iter()
            .map(|p| p.name.as_str())
            .filter(|n| *n != DEFAULT_PROFILE),
    );
    Err(ClientError::new(
        format!(
            "there is no profile `{name}` in Lifeline's config; its profiles are: {}",
            names.join(", ")
        ),
        Vec::new(),
        "Define it under lifeline.profiles (docs/config.md, \"Profiles\").",
    ))
}

/// Plans the one entry serving `req.profile`, and the entries it replaces taken out. An
/// entry of the chosen name that does not run Lifeline is an error, as is a file that is
/// not a JSON object.
pub fn plan_profile(req: &ProfileRequest) -> Result<Plan, ClientError> {
    if let Some(why) = check_name(req.entry) {
        return Err(ClientError::new(
            format!(
                "--entry {:?}: {}",
                req.entry,
                why.replace("server name", "entry name")
            ),
            Vec::new(),
            "",
        ));
    }
    let root = spans::parse(req.text).map_err(|at| not_json(req.path, req.text, at))?;
    let key = req.client.key();
    if root.members.is_none() || root.get(key).is_some_and(|n| n.members.is_none()) {
        return Err(ClientError::new(
            format!(
                "{} does not hold a JSON object with an object `{key}`",
                req.path.display()
            ),
            Vec::new(),
            "",
        ));
    }
    let report = import::parse(
        &req.client.source(),
        req.text,
        req.path,
        &crate::config::expand::env_lookup,
    )?;
    let mut walk = Walk {
        req,
        ours: req.lifeline.get("mcpServers").and_then(Value::as_object),
        report: &report,
        import: ImportReport {
            path: report.path.clone(),
            ..ImportReport::default()
        },
        seen: Vec::new(),
        unchanged: Vec::new(),
        removed: Vec::new(),
    };
    let mut secrets = Vec::new();
    let mut problems = Vec::new();
    let mut existing: Option<&spans::Member> = None;
    let mut gone: Vec<(&spans::Node, Vec<usize>)> = Vec::new();
    for (section, node) in sections(req.client, &root) {
        let top = section == key;
        let mut taken = Vec::new();
        for (i, m) in node.members.iter().flatten().enumerate() {
            let field = join(&section, &m.key);
            let value = value_of(req.text, &m.value);
            secrets.extend(entry_secrets(&value));
            let runs_lifeline = value.as_object().is_some_and(is_routed);
            if top && m.key == req.entry {
                if runs_lifeline {
                    existing = Some(m);
                } else {
                    problems.push(Problem::new(
                        field,
                        "an entry of this name is there and does not run Lifeline; name \
                         Lifeline's entry otherwise with --entry",
                    ));
                }
                continue;
            }
            if walk.take(&field, &m.key, value) {
                taken.push(i);
            }
        }
        gone.push((node, taken));
    }
    if !problems.is_empty() {
        return Err(ClientError::new(
            format!(
                "{} cannot be connected to profile {}",
                req.path.display(),
                req.profile.name
            ),
            problems,
            "",
        ));
    }

    let style = text::style(req.text);
    let field = join(key, req.entry);
    let mut edits = Vec::new();
    let mut routed = Vec::new();
    let mut replaced = None;
    match (existing, root.get(key)) {
        (Some(m), _) => {
            let old = value_of(req.text, &m.value);
            let new = entry_for(req, old.as_object());
            if old != new {
                edits.push(Edit {
                    range: m.value.span.clone(),
                    with: text::render(&new, &style, req.text, m.key_start),
                });
                routed.push(field);
            }
        }
        (None, Some(node)) => {
            let new = entry_for(req, None);
            let first = gone.iter_mut().find(|(n, _)| std::ptr::eq(*n, node));
            match first.filter(|(_, taken)| !taken.is_empty()) {
                // In place of the first entry it replaces.
                Some((_, taken)) => {
                    let i = taken.remove(0);
                    let m = &node.members.as_deref().unwrap_or_default()[i];
                    let with = member(req.entry, &new, &style, req.text, m.key_start);
                    replaced = Some((i, with));
                }
                None => edits.push(add_member(req.text, &style, node, req.entry, &new)),
            }
            routed.push(field);
        }
        (None, None) => {
            let servers = json!({ req.entry: entry_for(req, None) });
            edits.push(add_member(req.text, &style, &root, key, &servers));
            routed.push(field);
        }
    }
    let top = root.get(key);
    for (node, taken) in &gone {
        let here = match top {
            Some(top) if std::ptr::eq(*node, top) => replaced.take(),
            _ => None,
        };
        edits.extend(take_out(req.text, node, taken, here));
    }
    edits.sort_by_key(|e| e.range.start);
    let new_text = text::apply(req.text, &edits);
    if spans::parse(&new_text).is_err() {
        return Err(ClientError::new(
            format!("Lifeline could not edit {} safely", req.path.display()),
            Vec::new(),
            "Nothing was written. Please report the file's shape (not its values).",
        ));
    }
    let redactor = Redactor::new(secrets);
    let shown = req.path.display().to_string();
    let diff = redactor.scrub(&text::unified(req.text, &edits, &shown, &shown));
    Ok(Plan {
        text: new_text,
        routed: routed
            .into_iter()
            .map(|field| Routed {
                field,
                name: req.entry.to_owned(),
            })
            .collect(),
        removed: walk.removed,
        import: walk.import,
        unchanged: walk.unchanged,
        diff,
        redactor,
    })
}

/// Which entries go, and what to import for them.
struct Walk<'a> {
    req: &'a ProfileRequest<'a>,
    ours: Option<&'a Map<String, Value>>,
    report: &'a ImportReport,
    import: ImportReport,
    /// The servers taken out so far, each with its first entry.
    seen: Vec<(String, Value)>,
    unchanged: Vec<(String, String)>,
    removed: Vec<Routed>,
}

impl Walk<'_> {
    /// Whether the entry `key` (at `field`) goes; if it stays, why is recorded.
    fn take(&mut self, field: &str, key: &str, value: Value) -> bool {
        match self.decide(key, &value) {
            Ok(name) => {
                if !self.seen.iter().any(|(n, _)| *n == name) {
                    self.seen.push((name.clone(), value));
                }
                self.removed.push(Routed {
                    field: field.to_owned(),
                    name,
                });
                true
            }
            Err(why) => {
                self.unchanged.push((field.to_owned(), why));
                false
            }
        }
    }

    /// The server an entry stands for when the profile serves it from our config (imported
    /// first if need be), or why the entry stays.
    fn decide(&mut self, key: &str, value: &Value) -> Result<String, String> {
        let profile = &self.req.profile.name;
        let empty = Map::new();
        let entry = value.as_object().unwrap_or(&empty);
        if is_routed(entry) {
            return match connect_args(entry) {
                Some(Serves::Server(name)) => {
                    self.served(&name)?;
                    if self.ours.is_some_and(|s| s.contains_key(&name)) {
                        Ok(name)
                    } else {
                        Err(format!("Lifeline's config has no server {name}"))
                    }
                }
                Some(Serves::Profile(p)) => Err(format!(
                    "another of Lifeline's entries (profile {})",
                    p.profile
                )),
                None => Err("runs `lifeline connect` with arguments Lifeline does not know".into()),
            };
        }
        if entry.get("disabled") == Some(&Value::Bool(true)) {
            return Err("disabled in the client".to_owned());
        }
        let name = import::importable_name(key);
        self.served(&name)?;
        if let Some((_, first)) = self.seen.iter().find(|(n, _)| *n == name) {
            return if first == value {
                Ok(name)
            } else {
                Err(format!(
                    "differs from the first server named {name}, which profile {profile} serves"
                ))
            };
        }
        if let Some(existing) = self.ours.and_then(|s| s.get(&name)) {
            let launch = |v: &Value| ["command", "args", "url"].map(|k| v.get(k).cloned());
            if launch(existing) != launch(value) {
                self.import.warnings.push((
                    name.clone(),
                    "Lifeline's config already has a server of this name, started \
                     differently; the client will use Lifeline's"
                        .to_owned(),
                ));
            }
            return Ok(name);
        }
        match self.report.servers.iter().find(|(n, _)| *n == name) {
            Some(server) => {
                self.import.servers.push(server.clone());
                let warnings = self.report.warnings.iter().filter(|(n, _)| *n == name);
                self.import.warnings.extend(warnings.cloned());
                Ok(name)
            }
            None => {
                let why = self.report.skipped.iter().find(|(n, _)| n == key);
                let why = why.map_or("Lifeline cannot run it", |(_, why)| why.as_str());
                Err(format!("{why}, so it stays"))
            }
        }
    }

    /// Ok when the profile serves the server `name` (as far as our config says).
    fn served(&self, name: &str) -> Result<(), String> {
        let profile = &self.req.profile.name;
        if !self.req.profile.serves(name) {
            return Err(format!("profile {profile} does not serve it"));
        }
        let ours = self.ours.and_then(|s| s.get(name));
        if ours.and_then(|s| s.get("disabled")) == Some(&Value::Bool(true)) {
            return Err(format!(
                "disabled in Lifeline's config, so profile {profile} does not serve it"
            ));
        }
        Ok(())
    }
}

/// The entry running `lifeline connect --profile …`, with an old entry's own keys kept.
fn entry_for(req: &ProfileRequest, old: Option<&Map<String, Value>>) -> Value {
    let mut args = vec![
        "connect",
        "--profile",
        &req.profile.name,
        "--client",
        req.client.id(),
        "--entry",
        req.entry,
    ];
    let config = req.config_arg.map(|c| c.display().to_string());
    if let Some(config) = &config {
        args.extend(["--config", config]);
    }
    let mut new = Map::new();
    let typed = matches!(req.client, Client::VsCode | Client::ClaudeCode);
    if typed || old.is_some_and(|o| o.contains_key("type")) {
        new.insert("type".to_owned(), json!("stdio"));
    }
    new.insert("command".to_owned(), json!(req.command));
    new.insert("args".to_owned(), json!(args));
    for (k, v) in old.into_iter().flatten() {
        if !TRANSPORT_KEYS.contains(&k.as_str()) {
            new.insert(k.clone(), v.clone());
        }
    }
    Value::Object(new)
}

/// What an entry running `lifeline connect` serves.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Serves {
    Server(String),
    Profile(Endpoint),
}

/// One entry of a client's file that serves one of Lifeline's profiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Where it is: `mcpServers.lifeline`.
    pub field: String,
    /// The profile it serves (`default` for `--all`).
    pub profile: String,
    /// Its `--client KIND`, when it has one.
    pub kind: Option<String>,
    /// Its `--entry NAME`, else `lifeline`, as `lifeline connect` takes it.
    pub entry: String,
}

/// What `lifeline connect`'s arguments serve: NAME, or `--all`/`--profile P` with the
/// `--client` and `--entry` that fit its names; `None` for arguments it would refuse.
fn connect_args(entry: &Map<String, Value>) -> Option<Serves> {
    let args: Vec<&str> = entry
        .get("args")?
        .as_array()?
        .iter()
        .map(|a| a.as_str())
        .collect::<Option<_>>()?;
    let mut server = None;
    let mut profile = None;
    let mut kind = None;
    let mut name = None;
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
            _ => (*arg, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| rest.next().map(|v| (*v).to_owned()))
        };
        match flag {
            "--all" => profile = Some(DEFAULT_PROFILE.to_owned()),
            "--profile" => profile = Some(value()?),
            "--client" => kind = Some(value()?),
            "--entry" => name = Some(value()?),
            "--config" => {
                value()?;
            }
            f if f.starts_with('-') => {}
            positional => server = Some(positional.to_owned()),
        }
    }
    match (server, profile) {
        (Some(server), None) => Some(Serves::Server(server)),
        (None, Some(profile)) => Some(Serves::Profile(Endpoint {
            field: String::new(),
            profile,
            kind,
            entry: name.unwrap_or_else(|| DEFAULT_ENTRY.to_owned()),
        })),
        _ => None,
    }
}

/// Every entry of the client's file that serves a profile of Lifeline's, in file order.
pub fn endpoints(client: Client, path: &Path, text: &str) -> Result<Vec<Endpoint>, ClientError> {
    let root = spans::parse(text).map_err(|at| not_json(path, text, at))?;
    let mut out = Vec::new();
    for (section, node) in sections(client, &root) {
        for m in node.members.iter().flatten() {
            let value = value_of(text, &m.value);
            let Some(entry) = value.as_object().filter(|e| is_routed(e)) else {
                continue;
            };
            if let Some(Serves::Profile(p)) = connect_args(entry) {
                out.push(Endpoint {
                    field: join(&section, &m.key),
                    ..p
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
