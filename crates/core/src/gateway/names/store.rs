//! The names given, kept on disk so that a tool's name never changes across restarts unless
//! the tool does: `gateway-names.json` beside the history (the instance directory), 0600 in
//! a 0700 directory, replaced whole by `private::write_atomic` under `private::lock_beside`
//! (several bridges may record at once). One table per list, budget and separator, since a
//! name is only ever right for those:
//!
//! ```json
//! { "version": 1, "tables": { "tools 49 __": [
//!   { "server": "github", "tool": "search_code", "name": "github__search_code", "seen": 20424 }
//! ] } }
//! ```
//!
//! `seen` is the day (since 1970-01-01, UTC) the pair was last named; an entry unseen for
//! 90 days is dropped, and past 20 000 entries the least recently seen go first. A file that
//! cannot be read or is not a names file is a warning and a fresh start, never an error to
//! the host: names are a convenience, and the next `record` writes a good file. Blocking
//! file I/O: call it off the runtime's threads (`spawn_blocking`).

use super::{Names, Remembered, Separator, clamp_budget};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The file's name in the instance directory.
pub const FILE_NAME: &str = "gateway-names.json";
/// The most entries the file keeps, over all its tables.
pub const MAX_ENTRIES: usize = 20_000;
/// How many days an entry is kept after its pair was last named.
pub const FORGET_AFTER_DAYS: u64 = 90;
/// The file format this code writes and reads.
const VERSION: u32 = 1;

/// Where the names of the instance directory `dir` are kept.
pub fn path_in(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// The instance directory's names file (`history::resolve_path()`'s directory).
pub fn default_path() -> Option<PathBuf> {
    crate::history::resolve_path().and_then(|p| p.parent().map(path_in))
}

/// Which list a table names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    Tools,
    Prompts,
    ResourceTemplates,
}

impl List {
    /// What it names, in words: `tool`, `prompt`, `resource template`.
    pub fn noun(self) -> &'static str {
        match self {
            List::Tools => "tool",
            List::Prompts => "prompt",
            List::ResourceTemplates => "resource template",
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            List::Tools => "tools",
            List::Prompts => "prompts",
            List::ResourceTemplates => "templates",
        }
    }
}

/// A table's key in the file: `tools 49 __`.
fn table_key(list: List, budget: usize, separator: &Separator) -> String {
    format!(
        "{} {} {}",
        list.as_str(),
        clamp_budget(budget),
        separator.as_str()
    )
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct File {
    version: u32,
    #[serde(default)]
    tables: BTreeMap<String, Vec<Kept>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Kept {
    server: String,
    tool: String,
    name: String,
    /// The day the pair was last named.
    seen: u64,
}

/// Why the file was not read.
#[derive(Debug)]
enum Unreadable {
    /// Refused by `private::check_trusted`, or the file could not be read.
    Io(io::Error),
    /// Read, but not a names file this code writes.
    NotNames(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Io(e) => write!(f, "cannot be read ({e})"),
            Unreadable::NotNames(why) => write!(f, "is not a names file ({why})"),
        }
    }
}

/// How to put the names elsewhere, for an error refusing where they are.
const ELSEWHERE: &str = "set LIFELINE_HISTORY to a file in a directory of your own";

/// The file, refused when another user owns it or its directory, or may write either
/// (`private::check_trusted`): names someone else planted would be kept.
fn read(path: &Path) -> Result<File, Unreadable> {
    crate::private::check_trusted(path, ELSEWHERE).map_err(Unreadable::Io)?;
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(File {
                version: VERSION,
                tables: BTreeMap::new(),
            });
        }
        Err(e) => return Err(Unreadable::Io(e)),
    };
    let file: File =
        serde_json::from_slice(&bytes).map_err(|e| Unreadable::NotNames(e.to_string()))?;
    if file.version != VERSION {
        return Err(Unreadable::NotNames(format!(
            "version {}, where this Lifeline reads {VERSION}",
            file.version
        )));
    }
    Ok(file)
}

/// The names kept for `list` at `budget` (clamped as `Names::assign` clamps it) and
/// `separator`; none when there are none, or when the file cannot be read (logged).
pub fn load(path: &Path, list: List, budget: usize, separator: &Separator) -> Remembered {
    match read(path) {
        Ok(mut file) => file
            .tables
            .remove(&table_key(list, budget, separator))
            .unwrap_or_default()
            .into_iter()
            .map(|k| ((k.server, k.tool), k.name))
            .collect(),
        Err(why) => {
            tracing::warn!(
                "gateway: the names file {} {why}; names are given afresh and may differ \
                 from the last run's",
                path.display()
            );
            Remembered::new()
        }
    }
}

/// Keeps `names` (of `list`) as the names of their pairs, seen on `now`'s day, and drops
/// what is too old or too many. Writes only when something changed, so a host that keeps
/// reconnecting writes at most once a day. A file that is not a names file is replaced
/// (logged); one that cannot be read or written is an error, and the file is left as it is.
pub fn record(path: &Path, list: List, names: &Names, now: SystemTime) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::private::create_dir(dir)?;
    }
    let _lock = crate::private::lock_beside(path)?;
    let mut file = match read(path) {
        Ok(file) => file,
        Err(Unreadable::Io(e)) => return Err(e),
        Err(why @ Unreadable::NotNames(_)) => {
            tracing::warn!(
                "gateway: the names file {} {why}; writing a new one",
                path.display()
            );
            File {
                version: VERSION,
                tables: BTreeMap::new(),
            }
        }
    };
    let key = table_key(list, names.budget(), names.separator());
    if !update(&mut file, &key, names, day(now), MAX_ENTRIES) {
        return Ok(());
    }
    let text = serde_json::to_string_pretty(&file).map_err(io::Error::other)?;
    crate::private::write_atomic(path, text.as_bytes(), crate::private::Mode::Private)
        .map_err(io::Error::from)
}

/// Days since 1970-01-01 (UTC) on `now`; 0 before it.
fn day(now: SystemTime) -> u64 {
    now.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400)
}

/// Puts `names` in table `key` as seen on `today`, drops the table's other pairs that held
/// one of those names (they lost it), every entry unseen for `FORGET_AFTER_DAYS`, and then
/// the least recently seen beyond `cap`. Whether anything changed. Pure.
fn update(file: &mut File, key: &str, names: &Names, today: u64, cap: usize) -> bool {
    let before = file.clone();
    let table = file.tables.entry(key.to_owned()).or_default();
    let held: HashSet<String> = names
        .entries()
        .iter()
        .map(|e| e.name.to_ascii_lowercase())
        .collect();
    let mut kept: BTreeMap<(String, String), Kept> = std::mem::take(table)
        .into_iter()
        .filter(|k| !held.contains(&k.name.to_ascii_lowercase()))
        .map(|k| ((k.server.clone(), k.tool.clone()), k))
        .collect();
    for e in names.entries() {
        let pair = (e.server.clone(), e.tool.clone());
        kept.insert(
            pair,
            Kept {
                server: e.server.clone(),
                tool: e.tool.clone(),
                name: e.name.clone(),
                seen: today,
            },
        );
    }
    *table = kept.into_values().collect();

    for table in file.tables.values_mut() {
        table.retain(|k| today.saturating_sub(k.seen) <= FORGET_AFTER_DAYS);
    }
    let total: usize = file.tables.values().map(Vec::len).sum();
    if total > cap {
        let mut all: Vec<(u64, &str, &str, &str)> = file
            .tables
            .iter()
            .flat_map(|(key, t)| {
                t.iter()
                    .map(move |k| (k.seen, key.as_str(), k.server.as_str(), k.tool.as_str()))
            })
            .collect();
        all.sort_unstable();
        let dropped: HashSet<(String, String, String)> = all[..total - cap]
            .iter()
            .map(|&(_, key, s, t)| (key.to_owned(), s.to_owned(), t.to_owned()))
            .collect();
        for (key, table) in file.tables.iter_mut() {
            table.retain(|k| !dropped.contains(&(key.clone(), k.server.clone(), k.tool.clone())));
        }
    }
    file.tables.retain(|_, t| !t.is_empty());
    file.version = VERSION;
    *file != before
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
