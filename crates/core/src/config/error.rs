//! `ConfigError`: everything wrong with one config file, collected, never just the first
//! problem. Each `Problem` names the field path (`mcpServers.github.reconnect.maxDelayMs`),
//! the offending value when it is safe to show, and the rule it broke; the error's `Display`
//! lists them one per line and ends with what to do.

use crate::redact::Redactor;
use std::fmt;
use std::path::PathBuf;

/// Why a config could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// There is no file where we looked.
    NotFound,
    /// The file exists but could not be read.
    Read,
    /// The file is not JSON.
    Syntax,
    /// The JSON breaks the schema: types, bounds, names, undefined variables.
    Invalid,
    /// The file (or its directory) could not be written.
    Write,
    /// No file to import was found where the client keeps it.
    SourceNotFound,
}

/// One thing wrong, at one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted path from the top of the file (`mcpServers.x.args[2]`); for a syntax error the
    /// position (`line 3, column 7`); for a read or write error the file system path; empty
    /// when the message stands alone.
    pub field: String,
    /// The offending value as written, only when it cannot be a secret (numbers, names).
    pub value: Option<String>,
    /// The rule that was broken, as a sentence fragment: "must be between 1 and 64".
    pub message: String,
}

impl Problem {
    /// The message is scrubbed of token shapes, URL credentials and secret-named arguments:
    /// an I/O error or a path can carry one.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            field: field.into(),
            value: None,
            message: Redactor::default().scrub(&message.into()),
        }
    }

    pub fn with_value(mut self, value: impl fmt::Display) -> Self {
        self.value = Some(Redactor::default().scrub(&value.to_string()));
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.value, self.field.as_str()) {
            (_, "") => f.write_str(&self.message),
            (Some(v), field) => write!(f, "{field} = {v}: {}", self.message),
            (None, field) => write!(f, "{field}: {}", self.message),
        }
    }
}

impl std::error::Error for Problem {}

/// A config file that cannot be used, with every problem found in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub kind: ConfigErrorKind,
    /// The file, when there is one (a config parsed from a string has none).
    pub path: Option<PathBuf>,
    pub problems: Vec<Problem>,
}

impl ConfigError {
    pub fn new(kind: ConfigErrorKind, path: Option<PathBuf>, problems: Vec<Problem>) -> Self {
        ConfigError {
            kind,
            path,
            problems,
        }
    }

    fn file(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => "the config".to_owned(),
        }
    }

    fn what_to_do(&self) -> &'static str {
        match self.kind {
            ConfigErrorKind::NotFound => {
                "Create it with `lifeline import` (from Claude Desktop, Claude Code, Cursor or \
                 VS Code), write one by hand (docs/config.md), or point to another file with \
                 --config PATH or LIFELINE_CONFIG."
            }
            ConfigErrorKind::Read => {
                "Check that the file is readable by this user, or point to another file with \
                 --config PATH or LIFELINE_CONFIG."
            }
            ConfigErrorKind::Syntax => "Fix the JSON at that position and load it again.",
            ConfigErrorKind::Invalid => {
                "Fix these fields in the file and load it again; docs/config.md lists every \
                 field, its type and its bounds."
            }
            ConfigErrorKind::Write => {
                "Check that the directory exists and is writable by this user, or save to \
                 another file with --config PATH or LIFELINE_CONFIG."
            }
            ConfigErrorKind::SourceNotFound => {
                "If the client keeps its file somewhere else, import that file by its path."
            }
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file();
        let n = self.problems.len();
        match self.kind {
            ConfigErrorKind::NotFound if self.path.is_none() => f.write_str("no config file")?,
            ConfigErrorKind::NotFound => write!(f, "no config file at {file}")?,
            ConfigErrorKind::SourceNotFound => f.write_str("no file to import was found")?,
            ConfigErrorKind::Read => write!(f, "could not read {file}")?,
            ConfigErrorKind::Syntax => write!(f, "{file} is not valid JSON")?,
            ConfigErrorKind::Invalid if n == 1 => write!(f, "{file} has 1 problem")?,
            ConfigErrorKind::Invalid => write!(f, "{file} has {n} problems")?,
            ConfigErrorKind::Write => write!(f, "could not save {file}")?,
        }
        for p in &self.problems {
            write!(f, "\n  {p}")?;
        }
        write!(f, "\n{}", self.what_to_do())
    }
}

impl std::error::Error for ConfigError {}

impl From<ConfigError> for crate::Error {
    fn from(e: ConfigError) -> Self {
        crate::Error::config(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_lists_every_problem_and_ends_with_what_to_do() {
        let e = ConfigError::new(
            ConfigErrorKind::Invalid,
            Some(PathBuf::from("/c/config.json")),
            vec![
                Problem::new(
                    "mcpServers.x.reconnect.initialDelayMs",
                    "must be between 1 and 3600000 ms",
                )
                .with_value(0),
                Problem::new("mcpServers.y.command", "is required for a stdio server"),
            ],
        );
        let text = e.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "/c/config.json has 2 problems");
        assert_eq!(
            lines[1],
            "  mcpServers.x.reconnect.initialDelayMs = 0: must be between 1 and 3600000 ms"
        );
        assert_eq!(
            lines[2],
            "  mcpServers.y.command: is required for a stdio server"
        );
        assert!(lines[3].starts_with("Fix these fields"), "{text}");
        let core: crate::Error = e.into();
        assert_eq!(core.kind(), crate::ErrorKind::Config);
    }

    #[test]
    fn a_problem_without_a_field_is_its_message() {
        assert_eq!(Problem::new("", "no HOME").to_string(), "no HOME");
    }
}
