//! The pins on disk: `pins.json` beside the history (the instance directory), 0600 in a
//! 0700 directory, replaced whole by `private::write_atomic` under `private::lock_beside`
//! (a bridge, `lifeline serve` and the app may write at once), and refused when another
//! user owns it or may write it (`private::check_trusted`): pins someone else planted would
//! approve their definitions.
//!
//! ```json
//! { "version": 1, "servers": { "github": {
//!   "tools": { "search_code": { "digest": "…", "definition": {…}, "at": 1796630400 } },
//!   "held": { "delete_repo": { "digest": "…", "definition": {…}, "since": 1796716800,
//!                              "rejected": false } } } } }
//! ```
//!
//! A file that cannot be parsed is never a crash and never approves anything: `load` says
//! what happened in `Loaded::problem`, and its pins are a fresh start in which every server
//! named (`fresh_start`) counts as seen with nothing pinned, so each of its tools is held
//! as new until reviewed rather than pinned on a first sight that is not one. The next
//! `save` replaces the file. Blocking file I/O: call it off the runtime's threads.

use super::ServerPins;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// The file's name in the instance directory.
pub const FILE_NAME: &str = "pins.json";
/// The file format this code writes and reads.
const VERSION: u32 = 1;
/// How to put the pins elsewhere, for an error refusing where they are.
const ELSEWHERE: &str = "set LIFELINE_HISTORY to a file in a directory of your own";

/// Where the pins of the instance directory `dir` are kept.
pub fn path_in(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// The instance directory's pins file (`history::resolve_path()`'s directory).
pub fn default_path() -> Option<PathBuf> {
    crate::history::resolve_path().and_then(|p| p.parent().map(path_in))
}

/// Every server's pins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pins {
    version: u32,
    #[serde(default)]
    pub servers: BTreeMap<String, ServerPins>,
}

impl Default for Pins {
    fn default() -> Self {
        Pins {
            version: VERSION,
            servers: BTreeMap::new(),
        }
    }
}

impl Pins {
    /// After a file that could not be read: each of `servers` counts as seen with nothing
    /// pinned, so its tools are held as new, not pinned on first sight.
    pub fn fresh_start<'a>(servers: impl IntoIterator<Item = &'a str>) -> Pins {
        let mut pins = Pins::default();
        for server in servers {
            pins.servers
                .insert(server.to_owned(), ServerPins::default());
        }
        pins
    }
}

/// What `load` read.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub pins: Pins,
    /// Why the file could not be used, for a notice; `None` when it was read or absent.
    /// The pins are then `Pins::fresh_start` of the servers given.
    pub problem: Option<String>,
}

/// The pins at `path`; none when there is no file. A file that cannot be used is a
/// problem and a fresh start for `servers` (the servers configured now).
pub fn load<'a>(path: &Path, servers: impl IntoIterator<Item = &'a str>) -> Loaded {
    match read(path) {
        Ok(pins) => Loaded {
            pins,
            problem: None,
        },
        Err(why) => Loaded {
            pins: Pins::fresh_start(servers),
            problem: Some(format!(
                "the pins file {} {why}; every tool of every server is held as new until \
                 you review it (`lifeline tools review NAME`)",
                path.display()
            )),
        },
    }
}

/// Why the file was not read.
#[derive(Debug)]
enum Unreadable {
    /// Refused by `private::check_trusted`, or the file could not be read.
    Io(io::Error),
    /// Read, but not a pins file this code writes.
    NotPins(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Io(e) => write!(f, "cannot be used ({e})"),
            Unreadable::NotPins(why) => write!(f, "is not a pins file ({why})"),
        }
    }
}

fn read(path: &Path) -> Result<Pins, Unreadable> {
    crate::private::check_trusted(path, ELSEWHERE).map_err(Unreadable::Io)?;
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Pins::default()),
        Err(e) => return Err(Unreadable::Io(e)),
    };
    let pins: Pins =
        serde_json::from_slice(&bytes).map_err(|e| Unreadable::NotPins(e.to_string()))?;
    if pins.version != VERSION {
        return Err(Unreadable::NotPins(format!(
            "version {}, where this Lifeline reads {VERSION}",
            pins.version
        )));
    }
    Ok(pins)
}

/// Changes the pins at `path` with `change` under the file's lock, so that two processes
/// changing different servers keep both. A file that is not a pins file is started afresh
/// for `servers` and replaced; one that cannot be read or is refused is an error, and is
/// left as it is. Writes only when `change` changed something or the file is replaced. What `change` returned.
pub fn update<'a, T>(
    path: &Path,
    servers: impl IntoIterator<Item = &'a str>,
    change: impl FnOnce(&mut Pins) -> T,
) -> io::Result<T> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::private::create_dir(dir)?;
    }
    let _lock = crate::private::lock_beside(path)?;
    let (mut pins, replace) = match read(path) {
        Ok(pins) => (pins, false),
        Err(Unreadable::Io(e)) => return Err(e),
        Err(Unreadable::NotPins(_)) => (Pins::fresh_start(servers), true),
    };
    let before = pins.clone();
    let out = change(&mut pins);
    if replace || pins != before {
        let text = serde_json::to_string_pretty(&pins).map_err(io::Error::other)?;
        crate::private::write_atomic(path, text.as_bytes(), crate::private::Mode::Private)
            .map_err(io::Error::from)?;
    }
    Ok(out)
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
