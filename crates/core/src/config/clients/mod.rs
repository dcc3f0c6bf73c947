//! Connecting an AI client (Claude Desktop, Claude Code, Cursor, VS Code) to Lifeline: `plan`
//! is pure — from the client's file, the servers chosen and our own config, it gives the
//! client's new text, where each chosen entry becomes `lifeline connect NAME` and every
//! other byte stays as it was, the servers to import into our config first, and a redacted
//! diff. `profile` plans the other way to connect, one entry serving one of Lifeline's
//! profiles in place of the servers it serves. `backup` writes it (backup first,
//! atomically) and puts it back. The importer (`config::import`) knows where each client
//! keeps its file and how it is shaped.

pub mod apply;
pub mod backup;
pub mod profile;
mod spans;
mod text;

use super::error::{ConfigError, Problem};
use super::import::{self, ImportReport, Source};
use super::validate::join;
use crate::redact::{Redactor, secret_argument_values};
use serde_json::{Map, Value, json};
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a client's file cannot be connected or restored: what went wrong, each problem
/// (fields and names, never values), and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientError {
    pub message: String,
    pub problems: Vec<Problem>,
    pub hint: String,
}

impl ClientError {
    pub fn new(
        message: impl Into<String>,
        problems: Vec<Problem>,
        hint: impl Into<String>,
    ) -> Self {
        ClientError {
            message: message.into(),
            problems,
            hint: hint.into(),
        }
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        for p in &self.problems {
            write!(f, "\n  {p}")?;
        }
        if !self.hint.is_empty() {
            write!(f, "\n{}", self.hint)?;
        }
        Ok(())
    }
}

impl std::error::Error for ClientError {}

impl From<ConfigError> for ClientError {
    fn from(e: ConfigError) -> Self {
        ClientError::new(e.to_string(), Vec::new(), "")
    }
}

impl From<ClientError> for crate::Error {
    fn from(e: ClientError) -> Self {
        crate::Error::config(e.to_string())
    }
}

/// A file that is not JSON(C), with the line where it stops being so.
fn not_json(path: &Path, text: &str, at: usize) -> ClientError {
    let line = text.as_bytes()[..at]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1;
    ClientError::new(
        format!("{} is not valid JSON", path.display()),
        vec![Problem::new(format!("line {line}"), "the JSON breaks here")],
        "Fix the file first: Lifeline never rewrites a file it cannot read.",
    )
}

/// A client whose file Lifeline can rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    VsCode,
}

impl Client {
    pub const ALL: [Client; 4] = [
        Client::ClaudeDesktop,
        Client::ClaudeCode,
        Client::Cursor,
        Client::VsCode,
    ];

    /// `claude-desktop`, `claude-code`, `cursor`, `vscode`: as on the command line.
    pub fn id(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
        }
    }

    pub fn from_id(id: &str) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.id() == id)
    }

    /// `from_id`, or the error that lists the ids there are.
    pub fn parse(id: &str) -> Result<Client, ClientError> {
        Client::from_id(id).ok_or_else(|| {
            ClientError::new(
                format!("unknown client {id:?}: use claude-desktop, claude-code, cursor or vscode"),
                Vec::new(),
                "",
            )
        })
    }

    /// The importer's name for it, which knows its paths and shape.
    pub fn source(self) -> Source {
        match self {
            Client::ClaudeDesktop => Source::ClaudeDesktop,
            Client::ClaudeCode => Source::ClaudeCode,
            Client::Cursor => Source::Cursor,
            Client::VsCode => Source::VsCode,
        }
    }

    /// Where the client keeps its file, most likely first (see `Source::paths`).
    pub fn paths(self) -> Vec<PathBuf> {
        self.source().paths()
    }

    /// The key its servers are under.
    fn key(self) -> &'static str {
        match self {
            Client::VsCode => "servers",
            _ => "mcpServers",
        }
    }
}

/// Which of the client's servers to route through Lifeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// These, by the name the client gives them.
    Named(Vec<String>),
    /// Every one Lifeline can run.
    All,
}

/// What `plan` is given.
pub struct Request<'a> {
    pub client: Client,
    /// The client's file, for messages and the importer.
    pub path: &'a Path,
    pub text: &'a str,
    pub choice: &'a Choice,
    /// Our config file's JSON (`{"mcpServers": {}}` when there is none yet).
    pub lifeline: &'a Value,
    /// The absolute path of the `lifeline` binary the client will run.
    pub command: &'a str,
    /// Our config file, when `lifeline connect` must be told where it is.
    pub config_arg: Option<&'a Path>,
}

/// One entry that now goes through Lifeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    /// Where it is in the client's file: `mcpServers.github`, `projects./p.mcpServers.x`.
    pub field: String,
    /// The name Lifeline knows it by (the client's, made acceptable if it was not).
    pub name: String,
}

/// What connecting would do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The client's new file; equal to the old one when there is nothing to do.
    pub text: String,
    pub routed: Vec<Routed>,
    /// Entries taken out of the file, their servers now served behind the one entry that
    /// `profile::plan_profile` puts in (`routed` then holds that entry alone, when it
    /// changes). Always empty for `plan`.
    pub removed: Vec<Routed>,
    /// Servers to add to our config first (`import::merge`). May hold secrets.
    pub import: ImportReport,
    /// Entries left as they are, with why (already through Lifeline, not runnable, …).
    pub unchanged: Vec<(String, String)>,
    /// A unified diff of the change, secrets masked.
    pub diff: String,
    /// Masks every env value, header value and secret argument of the client's servers.
    pub redactor: Redactor,
}

impl Plan {
    pub fn changes(&self) -> bool {
        !self.routed.is_empty() || !self.removed.is_empty()
    }
}

/// Keys of an entry that say how to reach the server: replaced. Every other key (a client's
/// `disabled`, `autoApprove`, …) is kept.
const TRANSPORT_KEYS: [&str; 11] = [
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "envFile",
    "transport",
    "oauth",
    "headersHelper",
];

/// Plans routing `req.choice` through Lifeline. An unknown name, or a chosen server
/// Lifeline cannot run, is an error naming each.
pub fn plan(req: &Request) -> Result<Plan, ClientError> {
    let root = spans::parse(req.text).map_err(|at| not_json(req.path, req.text, at))?;
    if root.members.is_none() {
        return Err(ClientError::new(
            format!("{} does not hold a JSON object", req.path.display()),
            Vec::new(),
            "",
        ));
    }
    let report = import::parse(
        &req.client.source(),
        req.text,
        req.path,
        &super::expand::env_lookup,
    )?;
    let ours = req.lifeline.get("mcpServers").and_then(Value::as_object);
    let style = text::style(req.text);

    let mut edits = Vec::new();
    let mut out = Plan {
        text: String::new(),
        routed: Vec::new(),
        removed: Vec::new(),
        import: ImportReport {
            path: report.path.clone(),
            ..ImportReport::default()
        },
        unchanged: Vec::new(),
        diff: String::new(),
        redactor: Redactor::default(),
    };
    let mut secrets = Vec::new();
    let mut problems = Vec::new();
    let mut seen: Vec<(String, Value)> = Vec::new();
    let mut found: Vec<String> = Vec::new();
    for (section, node) in sections(req.client, &root) {
        for m in node.members.iter().flatten() {
            let field = join(&section, &m.key);
            let value = value_of(req.text, &m.value);
            secrets.extend(entry_secrets(&value));
            found.push(m.key.clone());
            let chosen = match req.choice {
                Choice::All => true,
                Choice::Named(names) => names.contains(&m.key),
            };
            if !chosen {
                continue;
            }
            // Not an object: the importer says why it cannot run it, below.
            let empty = Map::new();
            let entry = value.as_object().unwrap_or(&empty);
            if is_routed(entry) {
                out.unchanged
                    .push((field, "already goes through Lifeline".to_owned()));
                continue;
            }
            let name = import::importable_name(&m.key);
            if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
                if *first != value {
                    out.unchanged.push((
                        field,
                        format!("differs from the first server named {name}, which Lifeline runs"),
                    ));
                    continue;
                }
            } else if let Some(existing) = ours.and_then(|s| s.get(&name)) {
                let launch = |v: &Value| ["command", "args", "url"].map(|k| v.get(k).cloned());
                if launch(existing) != launch(&value) {
                    out.import.warnings.push((
                        name.clone(),
                        "Lifeline's config already has a server of this name, started \
                         differently; the client will use Lifeline's"
                            .to_owned(),
                    ));
                }
            } else {
                match report.servers.iter().find(|(n, _)| *n == name) {
                    Some(server) => out.import.servers.push(server.clone()),
                    None => {
                        let why = report
                            .skipped
                            .iter()
                            .find(|(n, _)| *n == m.key)
                            .map_or("Lifeline cannot run it", |(_, why)| why.as_str());
                        match req.choice {
                            Choice::All => out.unchanged.push((field, why.to_owned())),
                            Choice::Named(_) => problems.push(Problem::new(field, why)),
                        }
                        continue;
                    }
                }
                out.import
                    .warnings
                    .extend(report.warnings.iter().filter(|(n, _)| *n == name).cloned());
            }
            if !seen.iter().any(|(n, _)| *n == name) {
                seen.push((name.clone(), value.clone()));
            }
            let new = entry_for(req, entry, &name);
            edits.push(text::Edit {
                range: m.value.span.clone(),
                with: text::render(&new, &style, req.text, m.key_start),
            });
            out.routed.push(Routed { field, name });
        }
    }
    if let Choice::Named(names) = req.choice {
        for n in names.iter().filter(|n| !found.contains(n)) {
            let have = if found.is_empty() {
                "it has none".to_owned()
            } else {
                format!("it has {}", found.join(", "))
            };
            problems.push(Problem::new(
                n.as_str(),
                format!("no server of this name in the client's file; {have}"),
            ));
        }
    }
    if !problems.is_empty() {
        return Err(ClientError::new(
            format!("{} cannot be connected as asked", req.path.display()),
            problems,
            "Choose servers the file has that Lifeline can run (`lifeline clients list`), \
             or fix these entries.",
        ));
    }
    edits.sort_by_key(|e| e.range.start);
    out.text = text::apply(req.text, &edits);
    out.redactor = Redactor::new(secrets);
    let shown = req.path.display().to_string();
    out.diff = out
        .redactor
        .scrub(&text::unified(req.text, &edits, &shown, &shown));
    Ok(out)
}

/// Each server in the client's file, by field (`mcpServers.fs`), and whether it already
/// goes through Lifeline.
pub fn servers(
    client: Client,
    path: &Path,
    text: &str,
) -> Result<Vec<(String, bool)>, ClientError> {
    let root = spans::parse(text).map_err(|at| not_json(path, text, at))?;
    let mut out = Vec::new();
    for (section, node) in sections(client, &root) {
        for m in node.members.iter().flatten() {
            let routed = value_of(text, &m.value).as_object().is_some_and(is_routed);
            out.push((join(&section, &m.key), routed));
        }
    }
    Ok(out)
}

/// The objects holding the client's servers, with their field paths: the client's key, and
/// each project's `mcpServers` where the file has projects (Claude Code).
fn sections(client: Client, root: &spans::Node) -> Vec<(String, &spans::Node)> {
    let mut out: Vec<(String, &spans::Node)> = root
        .get(client.key())
        .filter(|n| n.members.is_some())
        .map(|n| (client.key().to_owned(), n))
        .into_iter()
        .collect();
    if client != Client::VsCode
        && let Some(projects) = root.get("projects")
    {
        for p in projects.members.iter().flatten() {
            if let Some(n) = p.value.get("mcpServers").filter(|n| n.members.is_some()) {
                out.push((join(&join("projects", &p.key), "mcpServers"), n));
            }
        }
    }
    out
}

/// A node's JSON (comments and trailing commas allowed).
fn value_of(text: &str, node: &spans::Node) -> Value {
    let json = import::jsonc_to_json(&text[node.span.clone()]);
    serde_json::from_str(&json).unwrap_or(Value::Null)
}

/// Whether an entry already runs `lifeline connect`.
pub fn is_routed(entry: &Map<String, Value>) -> bool {
    let command = entry.get("command").and_then(Value::as_str).unwrap_or("");
    let stem = command
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("")
        .trim_end_matches(".exe");
    let first = entry
        .get("args")
        .and_then(|a| a.get(0))
        .and_then(Value::as_str);
    stem == "lifeline" && first == Some("connect")
}

/// The entry that runs `lifeline connect NAME`, with the client's own keys kept.
fn entry_for(req: &Request, old: &Map<String, Value>, name: &str) -> Value {
    let mut args = vec![json!("connect"), json!(name)];
    if let Some(config) = req.config_arg {
        args.extend([json!("--config"), json!(config.display().to_string())]);
    }
    let mut new = Map::new();
    if req.client == Client::VsCode || old.contains_key("type") {
        new.insert("type".to_owned(), json!("stdio"));
    }
    new.insert("command".to_owned(), json!(req.command));
    new.insert("args".to_owned(), Value::Array(args));
    for (k, v) in old {
        if !TRANSPORT_KEYS.contains(&k.as_str()) {
            new.insert(k.clone(), v.clone());
        }
    }
    Value::Object(new)
}

/// What in one entry must never be shown: every env and header value, secret arguments.
fn entry_secrets(entry: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["env", "headers"] {
        if let Some(map) = entry.get(key).and_then(Value::as_object) {
            out.extend(map.values().filter_map(Value::as_str).map(str::to_owned));
        }
    }
    if let Some(args) = entry.get("args").and_then(Value::as_array) {
        let args: Vec<String> = args
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        out.extend(secret_argument_values(&args));
    }
    if let Some(url) = entry.get("url").and_then(Value::as_str) {
        out.extend(super::url::url_secrets(url));
    }
    out
}

#[cfg(test)]
mod tests;
