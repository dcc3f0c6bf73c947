//! The pins one process works with (`Book`): the file's pins in memory, each list judged
//! against them, what a judgment changes written back under the file's lock, and the file
//! read again when another process (a bridge, `lifeline serve`, the app, `lifeline tools
//! approve`) changed it, so an approval made anywhere reaches every process. A judgment
//! that changes the pins is made again under the lock against the file as it is then, so
//! two processes judging at once never undo each other's approvals. Every change a process
//! takes in (its own, or another's read from the file) moves the book's revision
//! (`Book::changes`), so that each supervisor judges its list again and tells its hosts.
//! A process that puts its hosts in front of servers (the app, a bridge, `lifeline serve`)
//! opens one book for all of them (`install`) and watches the file (`watch`). Blocking
//! file I/O: call it off the runtime's threads.

use super::store::{self, Pins};
use super::{ReviewError, ServerPins, Standing, review};
use serde_json::Value;
use std::borrow::{Borrow, Cow};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};
use tokio::sync::watch;

/// A server's list as judged: each tool with where it stands, the tools held now that
/// were not before (what raises `tool_changed`), and every held change of the server's
/// (listed or not) with whether it was rejected.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub tools: Vec<(String, Standing)>,
    pub newly_held: Vec<String>,
    pub held: BTreeMap<String, bool>,
}

impl Judged {
    /// What `review` found, and the pins it changed (`None` when it left them as they were).
    fn of(review: super::Review<'_>) -> (Judged, Option<ServerPins>) {
        let held = (review.pins.held.iter())
            .map(|(name, h)| (name.clone(), h.rejected))
            .collect();
        let judged = Judged {
            tools: review.tools,
            newly_held: review.newly_held,
            held,
        };
        (judged, owned(review.pins))
    }
}

/// The pins of one process, over one file (or none: kept in memory only).
#[derive(Debug)]
pub struct Book {
    path: Option<PathBuf>,
    state: Mutex<State>,
    /// Moved whenever the pins in memory change (`changes`).
    revision: watch::Sender<u64>,
}

/// How often a watching process looks at the file for another process's approval: an
/// approval reaches every process within a second.
pub const WATCH_EVERY: Duration = Duration::from_millis(500);

static SHARED: OnceLock<Arc<Book>> = OnceLock::new();

/// Opens this process's book at `path` for the servers configured now, once; later calls
/// return the first. What was wrong with the file, for a notice, when it could not be used.
pub fn install<'a>(
    path: Option<PathBuf>,
    servers: impl IntoIterator<Item = &'a str>,
) -> (Arc<Book>, Option<String>) {
    let mut problem = None;
    let book = SHARED.get_or_init(|| {
        let (book, p) = Book::open(path, servers);
        problem = p;
        Arc::new(book)
    });
    (book.clone(), problem)
}

/// `install` for a process that puts hosts in front of servers (the app, a bridge,
/// `lifeline serve`), before it starts any: the file (`store::default_path()`, or memory
/// only with `None`) watched for other processes' changes every `WATCH_EVERY`. Within a
/// tokio runtime's context. What was wrong with the file, for a notice.
pub fn open_for_hosts<'a>(
    path: Option<PathBuf>,
    servers: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let first = SHARED.get().is_none();
    let (book, problem) = install(path, servers);
    if first {
        book.watch(WATCH_EVERY);
    }
    problem
}

/// The book `install` opened, if this process put one in its hosts' path.
pub fn shared() -> Option<Arc<Book>> {
    SHARED.get().cloned()
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
        let revision = watch::channel(0).0;
        let book = Book {
            path,
            state,
            revision,
        };
        (book, problem)
    }

    /// Whether it keeps its pins in memory only (no file: nothing blocks).
    pub fn in_memory(&self) -> bool {
        self.path.is_none()
    }

    /// A receiver that changes whenever the pins in memory change: judge again.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.revision.subscribe()
    }

    /// The revision now, to compare with one a judgment was made at.
    pub fn revision(&self) -> u64 {
        *self.revision.borrow()
    }

    fn moved(&self) {
        self.revision.send_modify(|r| *r = r.wrapping_add(1));
    }

    /// Looks at the file every `every` for another process's change, on a task of the
    /// current runtime, for as long as the book lives.
    pub fn watch(self: &Arc<Self>, every: Duration) {
        if self.path.is_none() {
            return;
        }
        let book = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(book) = book.upgrade() else { return };
                let _ = tokio::task::spawn_blocking(move || book.reload_if_changed()).await;
            }
        });
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
        drop(state);
        if changed {
            self.moved();
        }
        changed
    }

    /// The pins of `server` now.
    pub fn server(&self, server: &str) -> Option<ServerPins> {
        self.state().pins.servers.get(server).cloned()
    }

    /// Judges `tools`, the list `server` gave, and keeps what that changes. A file that
    /// cannot be written keeps the change in this process only, said in the log: holds
    /// still hold here, and nothing is approved that was not.
    pub fn judge<T: Borrow<Value>>(&self, server: &str, tools: &[T], now: u64) -> Judged {
        self.reload_if_changed();
        let Some(path) = &self.path else {
            return self.judge_in_memory(server, tools, now);
        };
        let (judged, changed) = {
            let state = self.state();
            Judged::of(review(state.pins.servers.get(server), tools, now))
        };
        if changed.is_none() {
            return judged;
        }
        // Judged again, under the lock, against the file as it is then.
        self.judge_in_file(path, server, tools, now)
            .unwrap_or_else(|e| {
                tracing::warn!(
                    "pins: {} could not be written ({e}); `{server}`'s pins are kept in this \
                     process only",
                    path.display()
                );
                self.judge_in_memory(server, tools, now)
            })
    }

    /// `judge` against the pins in memory, the change kept there: under one hold of the
    /// lock, so two judgments at once never both raise one change.
    fn judge_in_memory<T: Borrow<Value>>(&self, server: &str, tools: &[T], now: u64) -> Judged {
        let mut state = self.state();
        let (judged, changed) = Judged::of(review(state.pins.servers.get(server), tools, now));
        if let Some(pins) = changed {
            state.pins.servers.insert(server.to_owned(), pins);
            drop(state);
            self.moved();
        }
        judged
    }

    /// `judge` against the file at `path` under its lock, the change written and taken in.
    fn judge_in_file<T: Borrow<Value>>(
        &self,
        path: &Path,
        server: &str,
        tools: &[T],
        now: u64,
    ) -> io::Result<Judged> {
        let servers: Vec<String> = self.state().pins.servers.keys().cloned().collect();
        let (judged, pins) = store::update(path, servers.iter().map(String::as_str), |file| {
            let (judged, changed) = Judged::of(review(file.servers.get(server), tools, now));
            if let Some(pins) = changed {
                file.servers.insert(server.to_owned(), pins);
            }
            (judged, file.clone())
        })?;
        self.take_in(path, pins);
        Ok(judged)
    }

    /// Takes in `pins`, just written to `path`: the revision moves (the file may also have
    /// held another process's change to another server).
    fn take_in(&self, path: &Path, pins: Pins) {
        let mut state = self.state();
        state.pins = pins;
        state.stamp = stamp(path);
        drop(state);
        self.moved();
    }

    /// Approves the held definition of `tool` of `server` (`pins::approve`), for every
    /// process: written at once.
    pub fn approve(&self, server: &str, tool: &str, now: u64) -> Result<(), BookError> {
        self.change(server, |pins| super::approve(pins, server, tool, now))
    }

    /// Rejects it (`pins::reject`).
    pub fn reject(&self, server: &str, tool: &str, now: u64) -> Result<(), BookError> {
        self.change(server, |pins| super::reject(pins, server, tool, now))
    }

    /// Approves or rejects `which` of `server`'s tools in one write, all or none: each
    /// named tool must be waiting for review (held, or marked new). `Which::All` takes
    /// every one waiting (`pins::awaiting`). The tools decided, by name.
    pub fn decide(
        &self,
        server: &str,
        decision: Decision,
        which: &Which,
        now: u64,
    ) -> Result<Vec<String>, BookError> {
        let mut decided = Vec::new();
        self.change(server, |pins| {
            let tools = match which {
                Which::All => super::awaiting(pins),
                Which::Tools(tools) => tools.clone(),
            };
            for tool in &tools {
                match decision {
                    Decision::Approve => super::approve(pins, server, tool, now)?,
                    Decision::Reject => super::reject(pins, server, tool, now)?,
                }
            }
            decided = tools;
            Ok(())
        })?;
        Ok(decided)
    }

    /// What a review of `server` shows now (`report::review_of`).
    pub fn review(&self, server: &str) -> super::report::ServerReview {
        super::report::review_of(&self.state().pins, server)
    }

    /// Whether `server` has pins (its tools were ever seen).
    pub fn knows(&self, server: &str) -> bool {
        self.state().pins.servers.contains_key(server)
    }

    fn change(
        &self,
        server: &str,
        f: impl FnOnce(&mut ServerPins) -> Result<(), ReviewError>,
    ) -> Result<(), BookError> {
        let Some(path) = self.path.clone() else {
            let mut state = self.state();
            let mut pins = state.pins.servers.get(server).cloned().unwrap_or_default();
            f(&mut pins).map_err(BookError::Review)?;
            if keeps(state.pins.servers.contains_key(server), &pins) {
                state.pins.servers.insert(server.to_owned(), pins);
            }
            drop(state);
            self.moved();
            return Ok(());
        };
        let servers: Vec<String> = self.state().pins.servers.keys().cloned().collect();
        let (result, pins) = store::update(&path, servers.iter().map(String::as_str), |file| {
            let mut pins = file.servers.get(server).cloned().unwrap_or_default();
            let result = f(&mut pins);
            if result.is_ok() && keeps(file.servers.contains_key(server), &pins) {
                file.servers.insert(server.to_owned(), pins);
            }
            (result, file.clone())
        })
        .map_err(BookError::File)?;
        self.take_in(&path, pins);
        result.map_err(BookError::Review)
    }
}

/// Whether a decision's pins are kept: not for a server never seen that it left empty, which
/// would count as seen and hold its first tools instead of pinning them.
fn keeps(seen: bool, pins: &ServerPins) -> bool {
    seen || *pins != ServerPins::default()
}

/// Approve or reject (`Book::decide`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Reject,
}

/// Which tools `Book::decide` takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Which {
    /// Every tool waiting for review.
    All,
    Tools(Vec<String>),
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
