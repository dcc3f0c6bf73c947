//! Lifeline's secret store: named secrets (config values referenced as `${keyring:NAME}`,
//! and later OAuth tokens and client secrets) kept in the OS keychain — the Secret Service on
//! Linux, the Keychain on macOS, the Credential Manager on Windows — under the service name
//! `lifeline`, one entry per name. Where there is no keychain (headless Linux without a
//! Secret Service) they are kept in a file readable by this user only (0600) in Lifeline's
//! data dir, and `backend()` says so and why, for `lifeline check` and the app to show.
//!
//! ```text
//! let store = SecretStore::open();          // picks the backend once
//! store.set("GITHUB_TOKEN", "ghp_…")?;      // creates or replaces
//! store.get("GITHUB_TOKEN")?;               // Some(value) or None
//! store.list()?;                            // names only, sorted
//! store.delete("GITHUB_TOKEN")?;            // true if it was there
//! ```
//!
//! Every call blocks (a D-Bus round trip on Linux): from async code, call it in
//! `tokio::task::spawn_blocking`. Values never appear in `Debug`, `Display` or errors.
//! docs/secrets.md is the reference for people.

mod file;
mod keychain;

use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// The keychain service name every entry is stored under (the account is the secret's name).
pub const SERVICE: &str = "lifeline";

/// `LIFELINE_SECRETS`: `file` uses the file store even where a keychain exists, `keychain`
/// uses the keychain and never falls back (its failures are errors); unset or `auto`
/// picks the keychain when it answers, else the file.
pub const BACKEND_ENV: &str = "LIFELINE_SECRETS";

/// `LIFELINE_SECRETS_FILE`: where the file store is, instead of `<data dir>/lifeline/secrets.json`.
pub const FILE_ENV: &str = "LIFELINE_SECRETS_FILE";

/// The names of OAuth sign-ins (`auth::store`) start with this.
pub const OAUTH_PREFIX: &str = "oauth.";

/// Which kind of store holds the secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum BackendKind {
    /// The OS keychain.
    Keychain,
    /// A 0600 file in Lifeline's data dir.
    File,
}

/// Which store is in use and why: what `lifeline check` prints and the app shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Backend {
    pub kind: BackendKind,
    /// "Secret Service", "macOS Keychain", "Windows Credential Manager" or "file".
    pub name: String,
    /// The file, for the file store.
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub path: Option<PathBuf>,
    /// Why this store: "the OS keychain", or why the keychain is not used. Names no secret.
    pub reason: String,
}

impl Backend {
    /// True for the file fallback: the notice to show says the secrets are in a plain file.
    pub fn is_fallback(&self) -> bool {
        self.kind == BackendKind::File
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.kind, &self.path) {
            (BackendKind::Keychain, _) => write!(f, "{} ({})", self.name, self.reason),
            (BackendKind::File, Some(p)) => write!(
                f,
                "the file {} (readable by you only, not encrypted): {}",
                p.display(),
                self.reason
            ),
            (BackendKind::File, None) => write!(f, "no store: {}", self.reason),
        }
    }
}

/// Why a secret could not be read, stored, deleted or listed. Names the secret, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("`{0}` is not a secret name: use letters, digits, `_`, `-` and `.` (at most 128)")]
    BadName(String),
    #[error("{backend}: {why}")]
    Store { backend: String, why: String },
}

/// The secret store. `open` chooses the backend once; every call goes to it.
pub struct SecretStore {
    backend: Backend,
    inner: Inner,
}

enum Inner {
    Keychain(keychain::Keychain),
    File(file::FileStore),
    /// No keychain and no data dir: every call fails with the backend's reason.
    None,
}

impl fmt::Debug for SecretStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretStore")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl SecretStore {
    /// The store this process uses: the OS keychain when it answers, else the file store,
    /// as `LIFELINE_SECRETS` allows (`BACKEND_ENV`).
    pub fn open() -> SecretStore {
        let mode = std::env::var(BACKEND_ENV).unwrap_or_default();
        let file_path = std::env::var_os(FILE_ENV)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(default_file_path);
        match mode.as_str() {
            // Said without `=`: `NAME=value` with SECRET in the name has a secret's shape.
            "file" => Self::file_or_none(file_path, format!("{BACKEND_ENV} is set to file")),
            "keychain" => match keychain::Keychain::open() {
                Ok(k) => Self::keychain(k),
                Err(why) => SecretStore {
                    backend: Backend {
                        kind: BackendKind::Keychain,
                        name: keychain::NAME.to_owned(),
                        path: None,
                        reason: format!(
                            "{BACKEND_ENV} is set to keychain, but it is not available: {why}"
                        ),
                    },
                    inner: Inner::None,
                },
            },
            _ => match keychain::Keychain::open() {
                Ok(k) => Self::keychain(k),
                Err(why) => {
                    Self::file_or_none(file_path, format!("no OS keychain is available ({why})"))
                }
            },
        }
    }

    /// The file store at `path`, whatever keychain there is (tests, `LIFELINE_SECRETS=file`).
    pub fn file(path: &Path, reason: impl Into<String>) -> SecretStore {
        SecretStore {
            backend: Backend {
                kind: BackendKind::File,
                name: "file".to_owned(),
                path: Some(path.to_owned()),
                reason: reason.into(),
            },
            inner: Inner::File(file::FileStore::new(path.to_owned())),
        }
    }

    fn keychain(k: keychain::Keychain) -> SecretStore {
        SecretStore {
            backend: Backend {
                kind: BackendKind::Keychain,
                name: keychain::NAME.to_owned(),
                path: None,
                reason: "the OS keychain".to_owned(),
            },
            inner: Inner::Keychain(k),
        }
    }

    fn file_or_none(path: Option<PathBuf>, reason: String) -> SecretStore {
        match path {
            Some(p) => Self::file(&p, reason),
            None => SecretStore {
                backend: Backend {
                    kind: BackendKind::File,
                    name: "file".to_owned(),
                    path: None,
                    reason: format!("{reason}, and this user has no data directory"),
                },
                inner: Inner::None,
            },
        }
    }

    /// Which store is in use, and why.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// The secret `name`, or `None` when none is stored under it.
    pub fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        check(name)?;
        match &self.inner {
            Inner::Keychain(k) => k.get(name),
            Inner::File(f) => f.get(name),
            Inner::None => Err(self.unavailable()),
        }
        .map_err(|why| self.error(why))
    }

    /// Stores `value` under `name`, replacing what was there.
    pub fn set(&self, name: &str, value: &str) -> Result<(), SecretError> {
        check(name)?;
        match &self.inner {
            Inner::Keychain(k) => k.set(name, value),
            Inner::File(f) => f.set(name, value),
            Inner::None => Err(self.unavailable()),
        }
        .map_err(|why| self.error(why))
    }

    /// Removes `name`; false when there was nothing to remove.
    pub fn delete(&self, name: &str) -> Result<bool, SecretError> {
        check(name)?;
        match &self.inner {
            Inner::Keychain(k) => k.delete(name),
            Inner::File(f) => f.delete(name),
            Inner::None => Err(self.unavailable()),
        }
        .map_err(|why| self.error(why))
    }

    /// The names stored, sorted (never the values). OAuth sign-ins (`oauth.…`, kept by
    /// `auth::store`) are Lifeline's own and not listed: `lifeline logout` removes them.
    pub fn list(&self) -> Result<Vec<String>, SecretError> {
        let mut names = match &self.inner {
            Inner::Keychain(k) => k.list(),
            Inner::File(f) => f.list(),
            Inner::None => Err(self.unavailable()),
        }
        .map_err(|why| self.error(why))?;
        names.retain(|n| !n.starts_with(OAUTH_PREFIX));
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// The `${keyring:NAME}` lookup of config expansion: the value, or the message that says
    /// what is missing and how to store it.
    pub fn lookup(&self, name: &str) -> Result<String, String> {
        match self.get(name) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err(format!(
                "there is no secret {name} in {}; store it with `lifeline secrets set {name}`",
                self.where_()
            )),
            Err(e) => Err(format!("the secret {name} could not be read: {e}")),
        }
    }

    fn where_(&self) -> String {
        match (&self.backend.kind, &self.backend.path) {
            (BackendKind::File, Some(p)) => format!("the secrets file {}", p.display()),
            _ => format!("the {}", self.backend.name),
        }
    }

    fn unavailable(&self) -> String {
        self.backend.reason.clone()
    }

    fn error(&self, why: String) -> SecretError {
        SecretError::Store {
            backend: self.where_(),
            why,
        }
    }
}

/// `<data dir>/lifeline/secrets.json` (`~/.local/share/lifeline/secrets.json` on Linux).
pub fn default_file_path() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("lifeline").join("secrets.json"))
}

/// Why `name` cannot name a secret, if it cannot: 1 to 128 ASCII letters, digits, `_`, `-`, `.`.
pub fn check_name(name: &str) -> Option<SecretError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    // A name that is itself token-shaped is not quoted back.
    (!ok).then(|| SecretError::BadName(crate::redact::Redactor::default().scrub(name)))
}

fn check(name: &str) -> Result<(), SecretError> {
    check_name(name).map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests;
