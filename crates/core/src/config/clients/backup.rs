//! Writing a client's new file and putting the old one back. Before a write the file is
//! copied to `<file>.lifeline-backup-<UTC time>` (0600), and a record (client, file, backup,
//! the SHA-256 of the text written, a fingerprint of each server and top-level key) goes
//! into `clients.json` in Lifeline's data dir. `restore` puts the latest backup back, but
//! not over a file changed since Lifeline wrote it unless forced; it says what changed.

use super::{Client, ClientError, Plan, spans};
use crate::config::error::Problem;
use crate::config::validate::join;
use crate::private;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One connect that can be undone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    /// `claude-desktop`, `claude-code`, `cursor`, `vscode`.
    pub client: String,
    /// The client's file (symlinks resolved).
    pub path: PathBuf,
    pub backup: PathBuf,
    /// SHA-256 (hex) of the text Lifeline wrote.
    pub sha256: String,
    /// When, RFC 3339 UTC.
    pub at: String,
    /// The servers routed through Lifeline.
    pub servers: Vec<String>,
    /// SHA-256 of each server entry and top-level key as written, to name what changed.
    pub written: BTreeMap<String, String>,
}

/// The records, oldest first.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    connections: Vec<Connection>,
}

/// `<data dir>/lifeline/clients.json`.
pub fn default_state_path() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("lifeline").join("clients.json"))
}

/// Backs up `old` (the file's text as planned from; an error if the file no longer holds
/// it), writes `plan.text` over `path` atomically (keeping
/// the file's permissions) and records both in `state`.
pub fn write(
    client: Client,
    path: &Path,
    old: &str,
    plan: &Plan,
    state: &Path,
    now: SystemTime,
) -> Result<Connection, ClientError> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let fail = |at: &Path, what: &str, e: std::io::Error| io_error(at, what, e);
    // The client may have written its file since it was read (Claude Code does as it
    // runs): never write over that.
    match fs::read_to_string(&target) {
        Ok(current) if current == old => {}
        Ok(_) => {
            return Err(ClientError::new(
                format!("{} changed while Lifeline was planning", path.display()),
                Vec::new(),
                "Nothing was written. Run the command again.",
            ));
        }
        Err(e) => return Err(fail(&target, "could not read", e)),
    }
    let at = humantime::format_rfc3339_seconds(now).to_string();
    let stamp: String = at.chars().filter(|c| !matches!(c, '-' | ':')).collect();
    let backup = backup_path(&target, &stamp, |p| p.exists());
    private::create_new(&backup)
        .and_then(|mut f| std::io::Write::write_all(&mut f, old.as_bytes()))
        .map_err(|e| fail(&backup, "could not write the backup", e))?;
    let mode = fs::metadata(&target).ok().map(|m| m.permissions());
    private::write_atomic(&target, plan.text.as_bytes())
        .map_err(|e| fail(&target, "could not write the file", e))?;
    if let Some(mode) = mode {
        let _ = fs::set_permissions(&target, mode);
    }
    let connection = Connection {
        client: client.id().to_owned(),
        path: target,
        backup,
        sha256: sha256(&plan.text),
        at,
        servers: plan.routed.iter().map(|r| r.name.clone()).collect(),
        written: fingerprint(client, &plan.text),
    };
    let mut records = load(state)?;
    records.connections.push(connection.clone());
    save(state, &records)?;
    Ok(connection)
}

/// `<file>.lifeline-backup-<stamp>`, with `-2`, `-3`… when one exists already.
fn backup_path(target: &Path, stamp: &str, exists: impl Fn(&Path) -> bool) -> PathBuf {
    let base = format!("{}.lifeline-backup-{stamp}", target.display());
    let mut p = PathBuf::from(&base);
    let mut n = 2;
    while exists(&p) {
        p = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    p
}

/// Every record, oldest first.
pub fn records(state: &Path) -> Result<Vec<Connection>, ClientError> {
    Ok(load(state)?.connections)
}

/// The latest record for `client` (and `path`, when given), if any.
pub fn latest(
    client: Client,
    path: Option<&Path>,
    state: &Path,
) -> Result<Option<Connection>, ClientError> {
    let path = path.map(|p| fs::canonicalize(p).unwrap_or_else(|_| p.to_owned()));
    Ok(load(state)?
        .connections
        .into_iter()
        .rev()
        .find(|c| c.client == client.id() && path.as_ref().is_none_or(|p| *p == c.path)))
}

/// Whether the client's file is no longer what Lifeline wrote for `record` (edited since,
/// or deleted): a restore then asks before it overwrites (`restore`'s `force`).
pub fn changed_since(record: &Connection) -> bool {
    match fs::read_to_string(&record.path) {
        Ok(t) => sha256(&t) != record.sha256,
        Err(_) => true,
    }
}

/// Puts the latest backup for `client` back and forgets the record. Refuses, naming what
/// changed (names only, never values), when the file is not what Lifeline wrote and
/// `force` is false.
pub fn restore(
    client: Client,
    path: Option<&Path>,
    force: bool,
    state: &Path,
) -> Result<Connection, ClientError> {
    let Some(record) = latest(client, path, state)? else {
        return Err(ClientError::new(
            format!(
                "nothing to restore: Lifeline has not connected {}",
                client.id()
            ),
            Vec::new(),
            format!("Connections are recorded in {}.", state.display()),
        ));
    };
    let read_fail = |p: &Path, e: std::io::Error| io_error(p, "could not read", e);
    let backup = fs::read(&record.backup).map_err(|e| read_fail(&record.backup, e))?;
    let now = match fs::read_to_string(&record.path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(read_fail(&record.path, e)),
    };
    let unchanged = now.as_deref().is_some_and(|t| sha256(t) == record.sha256);
    if !unchanged && !force {
        let problems = match &now {
            Some(t) => changes(&record.written, &fingerprint(client, t)),
            None => vec![Problem::new("", "the file was deleted")],
        };
        return Err(ClientError::new(
            format!(
                "{} changed since Lifeline wrote it at {}; restoring would undo:",
                record.path.display(),
                record.at
            ),
            problems,
            format!(
                "Nothing was restored. To put the backup ({}) back anyway, run `lifeline \
                 clients restore {} --force`.",
                record.backup.display(),
                client.id()
            ),
        ));
    }
    let mode = fs::metadata(&record.path).ok().map(|m| m.permissions());
    private::write_atomic(&record.path, &backup)
        .map_err(|e| io_error(&record.path, "could not write", e))?;
    if let Some(mode) = mode {
        let _ = fs::set_permissions(&record.path, mode);
    }
    let mut records = load(state)?;
    if let Some(i) = records.connections.iter().rposition(|c| *c == record) {
        records.connections.remove(i);
    }
    save(state, &records)?;
    Ok(record)
}

/// What differs between two fingerprints, as problems naming the servers and keys.
fn changes(then: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<Problem> {
    let mut out = Vec::new();
    for (field, hash) in then {
        match now.get(field) {
            None => out.push(Problem::new(field.as_str(), "removed since")),
            Some(h) if h != hash => out.push(Problem::new(field.as_str(), "changed since")),
            Some(_) => {}
        }
    }
    for field in now.keys().filter(|f| !then.contains_key(*f)) {
        out.push(Problem::new(field.as_str(), "added since"));
    }
    if out.is_empty() {
        out.push(Problem::new("", "only its formatting or comments changed"));
    }
    out
}

/// SHA-256 of each server entry (by field) and of every other top-level key.
pub(crate) fn fingerprint(client: Client, text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(root) = spans::parse(text) else {
        return out;
    };
    let key = client.key();
    for m in root.members.iter().flatten() {
        if m.key != key {
            out.insert(m.key.clone(), sha256(&text[m.value.span.clone()]));
        }
    }
    for (section, node) in super::sections(client, &root) {
        for m in node.members.iter().flatten() {
            out.insert(join(&section, &m.key), sha256(&text[m.value.span.clone()]));
        }
    }
    out
}

pub(crate) fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn io_error(at: &Path, what: &str, e: std::io::Error) -> ClientError {
    ClientError::new(
        format!("{what} {}", at.display()),
        vec![Problem::new("", e.to_string())],
        "",
    )
}

fn load(state: &Path) -> Result<State, ClientError> {
    match fs::read_to_string(state) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            ClientError::new(
                format!("{} is not a record Lifeline can read", state.display()),
                vec![Problem::new("", e.to_string())],
                "",
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
        Err(e) => Err(io_error(state, "could not read", e)),
    }
}

fn save(state: &Path, records: &State) -> Result<(), ClientError> {
    let text = serde_json::to_string_pretty(records).expect("the records serialize");
    state
        .parent()
        .map_or(Ok(()), private::create_dir)
        .and_then(|()| private::write_atomic(state, text.as_bytes()))
        .map_err(|e| io_error(state, "could not write", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_never_replaces_another() {
        let t = Path::new("/c/mcp.json");
        let taken = [
            PathBuf::from("/c/mcp.json.lifeline-backup-20261202T031500Z"),
            PathBuf::from("/c/mcp.json.lifeline-backup-20261202T031500Z-2"),
        ];
        let p = backup_path(t, "20261202T031500Z", |p| taken.iter().any(|t| t == p));
        assert_eq!(
            p,
            Path::new("/c/mcp.json.lifeline-backup-20261202T031500Z-3")
        );
    }
}
