//! Writing a client's new file and putting the old one back. Before a write the file is
//! copied into `backups/` beside `clients.json` in Lifeline's data dir (0700, the copy
//! 0600), never beside the file: a client's file may sit in a dotfiles repository or a
//! project's `.vscode/`, where `git add -A` would take a copy full of API keys. The copy's
//! name is the client, a hash of the file's path and the UTC time, so two files of one
//! client never collide. A record (client, file, backup, the SHA-256 of the text written,
//! a fingerprint of each server and top-level key) goes into `clients.json`. `restore` puts
//! the latest backup back, but not over a file changed since Lifeline wrote it unless
//! forced; it says what changed. A record from before (its backup beside the file) still
//! restores, and the next write moves that backup into `backups/`.

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
    /// The servers routed through Lifeline (with a profile: its entry's name, then the
    /// servers taken out of the file).
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

/// `state` (where connections are recorded), or the error saying there is none.
pub fn require_state(state: Option<&Path>) -> Result<&Path, ClientError> {
    state.ok_or_else(|| {
        ClientError::new(
            "this user has no data directory (is HOME set?), so connections cannot be recorded",
            Vec::new(),
            "",
        )
    })
}

/// Backs up `old` (the file's text as planned from; an error if the file no longer holds
/// it) into `backups_dir(state)`, writes `plan.text` over `path` atomically (keeping the
/// file's permissions and owner, `private::Mode::Keep`) and records both in `state`, moving
/// any older record's backup that still sits beside its file into `backups/`.
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
    let dir = backups_dir(state);
    let backup = keep_copy(&dir, client.id(), &target, &stamp_of(&at), old.as_bytes())?;
    private::write_atomic(&target, plan.text.as_bytes(), private::Mode::Keep)
        .map_err(|e| fail(&target, "could not write the file", e.into()))?;
    let connection = Connection {
        client: client.id().to_owned(),
        path: target,
        backup,
        sha256: sha256(&plan.text),
        at,
        servers: (plan.routed.iter().chain(&plan.removed))
            .map(|r| r.name.clone())
            .collect(),
        written: fingerprint(client, &plan.text),
    };
    let _lock = lock(state)?;
    let mut records = load(state)?;
    let moved = adopt_old_backups(&mut records, &dir);
    records.connections.push(connection.clone());
    save(state, &records)?;
    // Only once no record names them: a crash before this leaves a stray copy, never a
    // record without its backup.
    for old in moved {
        let _ = fs::remove_file(old);
    }
    Ok(connection)
}

/// `backups/` beside `clients.json`: where every backup goes.
pub fn backups_dir(state: &Path) -> PathBuf {
    match state.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.join("backups"),
        _ => PathBuf::from("backups"),
    }
}

/// `2026-12-03T14:15:00Z` as `20261203T141500Z`.
fn stamp_of(at: &str) -> String {
    at.chars().filter(|c| !matches!(c, '-' | ':')).collect()
}

/// `<client>-<hash of the file's path>-<stamp>.json`: one client's files never share a
/// name, and the name says nothing of where the file is (the record does).
fn backup_name(client: &str, target: &Path, stamp: &str) -> String {
    let hash = sha256(&target.to_string_lossy());
    format!("{client}-{}-{stamp}.json", &hash[..16])
}

/// Copies `bytes` into `dir` (made 0700) as a new 0600 file named by `backup_name`, with
/// `-2`, `-3`… when that name is taken, never replacing one; on disk before it returns, so
/// the file is never rewritten before its backup is safe.
fn keep_copy(
    dir: &Path,
    client: &str,
    target: &Path,
    stamp: &str,
    bytes: &[u8],
) -> Result<PathBuf, ClientError> {
    let fail = |at: &Path, e: std::io::Error| io_error(at, "could not write the backup", e);
    private::create_dir(dir)
        .and_then(|()| private::restrict(dir, 0o700))
        .map_err(|e| fail(dir, e))?;
    let name = backup_name(client, target, stamp);
    let stem = name.trim_end_matches(".json");
    let mut n = 1u32;
    loop {
        let path = match n {
            1 => dir.join(&name),
            n => dir.join(format!("{stem}-{n}.json")),
        };
        n += 1;
        match private::create_new(&path) {
            Ok(mut f) => {
                std::io::Write::write_all(&mut f, bytes)
                    .and_then(|()| f.sync_all())
                    .map_err(|e| {
                        let _ = fs::remove_file(&path);
                        fail(&path, e)
                    })?;
                #[cfg(unix)]
                if let Ok(d) = fs::File::open(dir) {
                    let _ = d.sync_all();
                }
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(fail(&path, e)),
        }
    }
}

/// Copies every backup that is not in `dir` yet (a record from before backups moved out of
/// the client's directory) into it, and points its record at the copy. Returns the old
/// files, to remove once the records are saved. A backup that cannot be read or copied is
/// left where it is: its record still restores from there.
fn adopt_old_backups(records: &mut State, dir: &Path) -> Vec<PathBuf> {
    let mut moved = Vec::new();
    for record in &mut records.connections {
        if record.backup.parent() == Some(dir) {
            continue;
        }
        let Ok(bytes) = fs::read(&record.backup) else {
            continue;
        };
        let stamp = stamp_of(&record.at);
        if let Ok(copy) = keep_copy(dir, &record.client, &record.path, &stamp, &bytes) {
            moved.push(std::mem::replace(&mut record.backup, copy));
        }
    }
    moved
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

/// The files of `client` that `records` (oldest first) connected somewhere other than one
/// of its well-known paths (`--client-config`): the latest record of each, oldest first.
pub fn elsewhere(client: Client, records: &[Connection]) -> Vec<&Connection> {
    let mut out: Vec<&Connection> = Vec::new();
    for r in records.iter().rev().filter(|r| r.client == client.id()) {
        let at_default = client
            .paths()
            .iter()
            .any(|d| fs::canonicalize(d).ok().as_deref() == Some(r.path.as_path()));
        if !at_default && !out.iter().any(|e| e.path == r.path) {
            out.push(r);
        }
    }
    out.reverse();
    out
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
    private::write_atomic(&record.path, &backup, private::Mode::Keep)
        .map_err(|e| io_error(&record.path, "could not write", e.into()))?;
    let _lock = lock(state)?;
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
    // A record planted by another user would make `restore` write their file over a config.
    private::check_trusted(
        state,
        "move the directory aside so Lifeline makes a new one",
    )
    .map_err(|e| ClientError::new(e.to_string(), Vec::new(), ""))?;
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

/// The records' lock (`private::lock_beside`), held from `load` to `save` so that two
/// processes connecting clients at once both keep their record.
fn lock(state: &Path) -> Result<private::StoreLock, ClientError> {
    state
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or(Ok(()), private::create_dir)
        .and_then(|()| private::lock_beside(state))
        .map_err(|e| io_error(state, "could not lock", e))
}

fn save(state: &Path, records: &State) -> Result<(), ClientError> {
    let text = serde_json::to_string_pretty(records).expect("the records serialize");
    private::write_atomic(state, text.as_bytes(), private::Mode::Private)
        .map_err(|e| io_error(state, "could not write", e.into()))
}

#[cfg(test)]
#[path = "backup_tests.rs"]
mod tests;
