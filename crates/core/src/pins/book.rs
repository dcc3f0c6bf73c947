//! The pins one process works with (`Book`): the file's pins in memory, each list judged
//! against them, what a judgment changes written back under the file's lock, and the file
//! read again when another process (a bridge, `lifeline serve`, the app, `lifeline tools
//! approve`) changed it, so an approval made anywhere reaches every process. A judgment
//! that changes the pins is made again under the lock against the file as it is then, so
//! two processes judging at once never undo each other's approvals. Blocking file I/O:
//! call it off the runtime's threads.

use super::store::{self, Pins};
use super::{ReviewError, ServerPins, Standing, review};
use serde_json::Value;
use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// A server's list as judged: each tool with where it stands, and the tools held now that
/// were not before (what raises `tool_changed`).
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub tools: Vec<(String, Standing)>,
    pub newly_held: Vec<String>,
}

/// The pins of one process, over one file (or none: kept in memory only).
#[derive(Debug)]
pub struct Book {
    path: Option<PathBuf>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    pins: Pins,
    /// The file as last read or written: its modification time and length.
    stamp: Option<(SystemTime, u64)>,
}

/// The pins a review changed; `None` when it left them as they were.
fn owned(pins: Cow<'_, ServerPins>) -> Option<ServerPins> {
    match pins {
        Cow::Borrowed(_) => None,
        Cow::Owned(pins) => Some(pins),
    }
}

/// The file's modification time and length, when it can be read.
fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

impl Book {
    /// The pins at `path` (`store::default_path()` for the app's), for the servers
    /// configured now; what was wrong with the file, for a notice, when it could not be
    /// used (`store::load`).
    pub fn open<'a>(
        path: Option<PathBuf>,
        servers: impl IntoIterator<Item = &'a str>,
    ) -> (Book, Option<String>) {
        let (pins, problem) = match &path {
            Some(p) => {
                let loaded = store::load(p, servers);
                (loaded.pins, loaded.problem)
            }
            None => (Pins::default(), None),
        };
        let stamp = path.as_deref().and_then(stamp);
        let state = Mutex::new(State { pins, stamp });
        (Book { path, state }, problem)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the file again when another process changed it since; whether it did (its
    /// lists should then be judged again, and their hosts told).
    pub fn reload_if_changed(&self) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let now = stamp(path);
        let mut state = self.state();
        if now == state.stamp {
            return false;
        }
        let loaded = store::load(path, state.pins.servers.keys().map(String::as_str));
        if let Some(problem) = &loaded.problem {
            // A file gone bad under us: keep what we had rather than hold everything anew
            // (the next write replaces it).
            tracing::warn!("pins: {problem}");
            state.stamp = now;
            return false;
        }
        let changed = loaded.pins != state.pins;
        state.pins = loaded.pins;
        state.stamp = now;
        changed
    }

    /// The pins of `server` now.
    pub fn server(&self, server: &str) -> Option<ServerPins> {
        self.state().pins.servers.get(server).cloned()
    }

    /// Judges `tools`, the list `server` gave, and keeps what that changes.
    pub fn judge(&self, server: &str, tools: &[Value], now: u64) -> io::Result<Judged> {
        self.reload_if_changed();
        let (judged, changed) = {
            let state = self.state();
            let r = review(state.pins.servers.get(server), tools, now);
            let judged = Judged {
                tools: r.tools,
                newly_held: r.newly_held,
            };
            (judged, owned(r.pins))
        };
        match (changed, &self.path) {
            (None, _) => Ok(judged),
            (Some(pins), None) => {
                self.state().pins.servers.insert(server.to_owned(), pins);
                Ok(judged)
            }
            // Judged again, under the lock, against the file as it is then.
            (Some(_), Some(path)) => self.judge_in_file(path, server, tools, now),
        }
    }

    /// `judge` against the file at `path` under its lock, the change written and taken in.
    fn judge_in_file(
        &self,
        path: &Path,
        server: &str,
        tools: &[Value],
        now: u64,
    ) -> io::Result<Judged> {
        let servers: Vec<String> = self.state().pins.servers.keys().cloned().collect();
        let (judged, pins) = store::update(path, servers.iter().map(String::as_str), |file| {
            let r = review(file.servers.get(server), tools, now);
            let judged = Judged {
                tools: r.tools,
                newly_held: r.newly_held,
            };
            if let Some(pins) = owned(r.pins) {
                file.servers.insert(server.to_owned(), pins);
            }
            (judged, file.clone())
        })?;
        let mut state = self.state();
        state.pins = pins;
        state.stamp = stamp(path);
        Ok(judged)
    }

    /// Approves the held definition of `tool` of `server` (`pins::approve`), for every
    /// process: written at once.
    pub fn approve(&self, server: &str, tool: &str, now: u64) -> Result<(), BookError> {
        self.change(server, |pins| super::approve(pins, server, tool, now))
    }

    /// Rejects it (`pins::reject`).
    pub fn reject(&self, server: &str, tool: &str) -> Result<(), BookError> {
        self.change(server, |pins| super::reject(pins, server, tool))
    }

    fn change(
        &self,
        server: &str,
        f: impl FnOnce(&mut ServerPins) -> Result<(), ReviewError>,
    ) -> Result<(), BookError> {
        let Some(path) = self.path.clone() else {
            let mut state = self.state();
            let pins = state.pins.servers.entry(server.to_owned()).or_default();
            return f(pins).map_err(BookError::Review);
        };
        let servers: Vec<String> = self.state().pins.servers.keys().cloned().collect();
        let (result, pins) = store::update(&path, servers.iter().map(String::as_str), |file| {
            let mut pins = file.servers.get(server).cloned().unwrap_or_default();
            let result = f(&mut pins);
            if result.is_ok() {
                file.servers.insert(server.to_owned(), pins);
            }
            (result, file.clone())
        })
        .map_err(BookError::File)?;
        let mut state = self.state();
        state.pins = pins;
        state.stamp = stamp(&path);
        result.map_err(BookError::Review)
    }
}

/// Why an approval or rejection did not happen.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    #[error(transparent)]
    Review(ReviewError),
    #[error("the pins file could not be written: {0}")]
    File(io::Error),
}

#[cfg(test)]
#[path = "book_tests.rs"]
mod tests;
