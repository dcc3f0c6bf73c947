//! Importing servers from other clients' files: Claude Desktop, Claude Code, Cursor and
//! VS Code. `read` finds the client's file at its well-known path and returns the entries
//! Lifeline can run, each checked as a config entry would be, and the ones it cannot, each
//! with the reason; `merge` adds them to our file's JSON, never replacing a server that is
//! already there.

mod entry;
mod jsonc;

use super::error::{ConfigError, ConfigErrorKind, Problem};
use super::expand::{Lookup, env_lookup};
use super::validate;
use serde_json::{Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};

pub(crate) use entry::importable_name;

/// Comments and trailing commas blanked out (`jsonc`), for reading a part of a file.
pub(crate) fn jsonc_to_json(text: &str) -> String {
    jsonc::to_json(text)
}

/// A client whose servers can be imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `claude_desktop_config.json`, `mcpServers`.
    ClaudeDesktop,
    /// `~/.claude.json`: the user's `mcpServers` and each project's `projects.*.mcpServers`.
    ClaudeCode,
    /// `~/.cursor/mcp.json`, `mcpServers`.
    Cursor,
    /// The user profile's `mcp.json`, `servers`.
    VsCode,
    /// Any file of either shape: `servers` (VS Code) if it has no `mcpServers`.
    File(PathBuf),
}

/// The shape of a file, and so how it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `mcpServers`, and `projects.*.mcpServers` if present.
    McpServers,
    /// `servers` (VS Code).
    Servers,
}

impl Source {
    /// How the client is named in messages.
    pub fn name(&self) -> &'static str {
        match self {
            Source::ClaudeDesktop => "Claude Desktop",
            Source::ClaudeCode => "Claude Code",
            Source::Cursor => "Cursor",
            Source::VsCode => "VS Code",
            Source::File(_) => "the file",
        }
    }

    /// Where the client keeps its file, most likely first. `dirs::config_dir()` is
    /// `~/.config` on Linux, `~/Library/Application Support` on macOS and `%APPDATA%` on
    /// Windows, which is where Claude Desktop and VS Code keep theirs on each.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.paths_in(dirs::home_dir().as_deref(), dirs::config_dir().as_deref())
    }

    /// `paths` under a given home and config directory (a test's, or another user's).
    pub fn paths_in(&self, home: Option<&Path>, config: Option<&Path>) -> Vec<PathBuf> {
        let under = |base: Option<&Path>, rel: &[&str]| {
            base.map(|b| rel.iter().fold(b.to_owned(), |p, part| p.join(part)))
        };
        match self {
            Source::ClaudeDesktop => under(config, &["Claude", "claude_desktop_config.json"])
                .into_iter()
                .collect(),
            Source::ClaudeCode => under(home, &[".claude.json"]).into_iter().collect(),
            Source::Cursor => under(home, &[".cursor", "mcp.json"]).into_iter().collect(),
            Source::VsCode => [
                under(config, &["Code", "User", "mcp.json"]),
                under(config, &["Code - Insiders", "User", "mcp.json"]),
            ]
            .into_iter()
            .flatten()
            .collect(),
            Source::File(p) => vec![p.clone()],
        }
    }
}

/// What a client's file holds, sorted into what Lifeline can run and what it cannot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportReport {
    /// The file that was read.
    pub path: PathBuf,
    /// Entries in our shape, ready for `merge`, in file order. May hold secrets (env and
    /// header values as the client had them); do not print the values.
    pub servers: Vec<(String, Value)>,
    /// Entries left out, each with the reason.
    pub skipped: Vec<(String, String)>,
    /// Entries imported with something to know: a renamed server, a field Lifeline ignores,
    /// a variable that is not set here.
    pub warnings: Vec<(String, String)>,
}

/// Reads the client's file from the first of its well-known paths that exists.
pub fn read(source: &Source) -> Result<ImportReport, ConfigError> {
    let candidates = source.paths();
    match candidates.iter().find(|p| p.is_file()) {
        Some(path) => read_path(source, path),
        None => Err(ConfigError::new(
            ConfigErrorKind::SourceNotFound,
            None,
            candidates
                .iter()
                .map(|p| Problem::new(p.display().to_string(), "not found"))
                .collect(),
        )),
    }
}

/// Reads a file of `source`'s shape at `path` (a project's `.mcp.json` or
/// `.vscode/mcp.json`, a file elsewhere).
pub fn read_path(source: &Source, path: &Path) -> Result<ImportReport, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let kind = match e.kind() {
            std::io::ErrorKind::NotFound => ConfigErrorKind::SourceNotFound,
            _ => ConfigErrorKind::Read,
        };
        ConfigError::new(
            kind,
            Some(path.to_owned()),
            vec![Problem::new(path.display().to_string(), e.to_string())],
        )
    })?;
    parse(source, &text, path, &env_lookup)
}

/// Sorts the servers in `text`, a file of `source`'s shape read from `path`. `lookup` only
/// decides which variables to warn about as not set.
pub fn parse(
    source: &Source,
    text: &str,
    path: &Path,
    lookup: Lookup,
) -> Result<ImportReport, ConfigError> {
    parse_in(source, text, path, dirs::home_dir().as_deref(), lookup)
}

fn parse_in(
    source: &Source,
    text: &str,
    path: &Path,
    home: Option<&Path>,
    lookup: Lookup,
) -> Result<ImportReport, ConfigError> {
    let fail = |kind, problems| ConfigError::new(kind, Some(path.to_owned()), problems);
    let json = super::parse_json(&jsonc::to_json(text))
        .map_err(|p| fail(ConfigErrorKind::Syntax, vec![p]))?;
    let Some(top) = json.as_object() else {
        let found = validate::type_name(&json);
        return Err(fail(
            ConfigErrorKind::Invalid,
            vec![Problem::new(
                "",
                format!("the file must hold an object, not {found}"),
            )],
        ));
    };
    let shape = match source {
        Source::VsCode => Shape::Servers,
        Source::File(_) if !top.contains_key("mcpServers") && top.contains_key("servers") => {
            Shape::Servers
        }
        _ => Shape::McpServers,
    };
    let mut sections: Vec<(String, &Value)> = Vec::new();
    let key = if shape == Shape::Servers {
        "servers"
    } else {
        "mcpServers"
    };
    sections.extend(top.get(key).map(|v| (key.to_owned(), v)));
    if shape == Shape::McpServers
        && let Some(Value::Object(projects)) = top.get("projects")
    {
        for (dir, project) in projects {
            if let Some(v) = project.get("mcpServers") {
                let section = validate::join(&validate::join("projects", dir), "mcpServers");
                sections.push((section, v));
            }
        }
    }
    let mut problems = Vec::new();
    let mut report = ImportReport {
        path: path.to_owned(),
        ..ImportReport::default()
    };
    let env = entry::Env { home, lookup };
    for (section, v) in sections {
        if let Some(entries) = validate::object(v, &section, &mut problems) {
            for (name, value) in entries {
                entry::sort(&section, name, value, &env, &mut report);
            }
        }
    }
    if !problems.is_empty() {
        return Err(fail(ConfigErrorKind::Invalid, problems));
    }
    Ok(report)
}

impl fmt::Display for ImportReport {
    /// One line per entry: found, skipped (why) or imported with a warning. No values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} server(s) to import",
            self.path.display(),
            self.servers.len()
        )?;
        for (name, why) in &self.warnings {
            write!(f, "\n  {name}: {why}")?;
        }
        for (name, why) in &self.skipped {
            write!(f, "\n  skipped {name}: {why}")?;
        }
        Ok(())
    }
}

/// What `merge` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeReport {
    pub added: Vec<String>,
    /// Names already in our file: our entry was kept, the imported one dropped.
    pub skipped_existing: Vec<String>,
    /// What the import itself left out, with the reasons (from `ImportReport::skipped`).
    pub skipped: Vec<(String, String)>,
}

impl fmt::Display for MergeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "added {} server(s)", self.added.len())?;
        for name in &self.added {
            write!(f, "\n  added {name}")?;
        }
        for name in &self.skipped_existing {
            write!(
                f,
                "\n  skipped {name}: a server with this name is already configured; kept the \
                 existing one (rename one of them to keep both)"
            )?;
        }
        for (name, why) in &self.skipped {
            write!(f, "\n  skipped {name}: {why}")?;
        }
        Ok(())
    }
}

/// Adds the imported servers to our file's JSON after the ones it has. A name that is
/// already there is never overwritten.
pub fn merge(raw: &mut Value, report: &ImportReport) -> Result<MergeReport, Problem> {
    let servers: &mut Map<String, Value> = super::write::servers_mut(raw)?;
    let mut out = MergeReport {
        skipped: report.skipped.clone(),
        ..MergeReport::default()
    };
    for (name, entry) in &report.servers {
        if servers.contains_key(name) {
            out.skipped_existing.push(name.clone());
        } else {
            servers.insert(name.clone(), entry.clone());
            out.added.push(name.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
