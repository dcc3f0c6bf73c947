//! The config file: a superset of the `mcpServers` shape that Claude Desktop, Cursor and
//! Claude Code use, with per-server and global (`lifeline`) supervisor policy. Loading
//! checks every field and reports every problem at once (`ConfigError`); env and header
//! values are `Secret`s, and may come from the secret store as `${keyring:NAME}`; writes are atomic and keep unknown keys (`write`); other clients'
//! files are imported by `import`. docs/config.md is the reference for people.

pub mod clients;
mod diff;
mod error;
pub mod expand;
pub mod import;
pub mod masked;
mod oauth;
mod parse;
mod policy;
mod profiles;
mod transport;
mod types;
mod url;
mod validate;
pub mod write;

pub use crate::redact::Secret;
pub use diff::{ConfigDiff, diff};
pub use error::{ConfigError, ConfigErrorKind, Problem};
pub use expand::{Lookup, SecretLookup, env_lookup};
pub use parse::{from_value, from_value_with};
pub use profiles::{
    BadSeparator, DEFAULT_PROFILE, Profile, Selection, Separator, ServerClash, Tools, fold_server,
    server_clashes,
};
pub use types::{
    Config, DEFAULT_SERVE_PORT, ReconnectConfig, ServeSettings, ServerConfig, ServerPolicy,
    Timeouts, TransportConfig, Trust,
};
pub use url::shown_url;
pub use write::{RawError, read_raw, save};

use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable that names the config file when `--config` is not given.
pub const CONFIG_ENV: &str = "LIFELINE_CONFIG";

/// `<platform config dir>/lifeline/config.json`: `~/.config` on Linux,
/// `~/Library/Application Support` on macOS, `%APPDATA%` on Windows. `None` when the
/// platform knows no config dir for this user (no home directory).
pub fn default_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("lifeline").join("config.json"))
}

/// The file to use: `--config` if given, else `LIFELINE_CONFIG` if set and non-empty, else
/// `default_path()`.
pub fn resolve_path(cli: Option<&Path>) -> Result<PathBuf, ConfigError> {
    resolve(cli, std::env::var_os(CONFIG_ENV), default_path())
}

fn resolve(
    cli: Option<&Path>,
    env: Option<OsString>,
    default: Option<PathBuf>,
) -> Result<PathBuf, ConfigError> {
    if let Some(p) = cli {
        return Ok(p.to_owned());
    }
    if let Some(p) = env.filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    default.ok_or_else(|| {
        ConfigError::new(
            ConfigErrorKind::NotFound,
            None,
            vec![Problem::new(
                "",
                "this user has no config directory (is HOME set?), so there is no default path",
            )],
        )
    })
}

/// Reads and checks the file at `path`, expanding variables from the process environment.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    load_with(path, &env_lookup)
}

/// `load` with variables from `lookup`.
pub fn load_with(path: &Path, lookup: Lookup) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ConfigErrorKind::NotFound
        } else {
            ConfigErrorKind::Read
        };
        let problems = match kind {
            ConfigErrorKind::NotFound => Vec::new(),
            _ => vec![Problem::new(path.display().to_string(), e.to_string())],
        };
        ConfigError::new(kind, Some(path.to_owned()), problems)
    })?;
    parse(&text, Some(path.to_owned()), lookup)
}

/// Checks a config given as text. `path` is only for messages and `Config::path`.
pub fn parse(text: &str, path: Option<PathBuf>, lookup: Lookup) -> Result<Config, ConfigError> {
    let raw = parse_json(text)
        .map_err(|p| ConfigError::new(ConfigErrorKind::Syntax, path.clone(), vec![p]))?;
    from_value(raw, path, lookup)
}

/// JSON text to a value; a syntax error is a problem at "line L, column C". A leading
/// byte-order mark (some Windows editors write one) is skipped.
pub(crate) fn parse_json(text: &str) -> Result<Value, Problem> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(text).map_err(|e| {
        let full = e.to_string();
        // serde_json appends " at line L column C"; the position goes in the field instead.
        let message = match full.rfind(" at line ") {
            Some(i) => full[..i].to_owned(),
            None => full,
        };
        Problem::new(format!("line {}, column {}", e.line(), e.column()), message)
    })
}

#[cfg(test)]
mod keyring_tests;
#[cfg(test)]
mod tests;
