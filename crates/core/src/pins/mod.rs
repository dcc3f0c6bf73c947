//! Tool pins (issue 28, docs/trust.md): a host is shown only the tool definitions the user
//! approved. A definition is what a tool's `tools/list` entry tells the model — its name,
//! title, description, input and output schemas and annotations — and its digest is the
//! SHA-256 of that object in the JSON Canonicalization Scheme (RFC 8785), so the same
//! definition has the same digest whatever order or spacing a server sends it in.
//!
//! A server seen for the first time has every tool pinned as it is (trust on first use),
//! each marked new (`Pin::unreviewed`) until the user has looked at it once. After that, `review` sorts a server's tools:
//! a tool whose digest is its pin's is shown; a changed definition, and a tool new to a
//! pinned server, are held out of every host's list until the user approves it. A held
//! change stays held until it is reviewed, even if the server flips back and forth, so that
//! a server changing a description on every list raises one change, not a storm. A removed
//! tool just goes (its pin is kept: the same definition coming back needs no review). The
//! file holding the pins is `store.rs`; what looks suspicious in a definition, `flags.rs`.

pub mod book;
pub mod flags;
pub mod report;
pub mod store;
mod unicode;

pub use unicode::visible;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

/// The fields of a `tools/list` entry that make its definition; anything else a server
/// adds (`_meta`, icons, …) is not shown to the model and is not pinned.
pub const DEFINITION_FIELDS: [&str; 6] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// The definition of a `tools/list` entry: its `DEFINITION_FIELDS` that are present.
pub fn definition(tool: &Value) -> Value {
    let mut out = Map::new();
    for field in DEFINITION_FIELDS {
        if let Some(v) = tool.get(field) {
            out.insert(field.to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

/// The SHA-256, in lowercase hex, of a tool's definition in RFC 8785 form. The definition
/// is borrowed from the entry, not copied: this runs on every tool of every list.
pub fn digest(tool: &Value) -> String {
    let fields: BTreeMap<&str, &Value> = DEFINITION_FIELDS
        .iter()
        .filter_map(|f| Some((*f, tool.get(*f)?)))
        .collect();
    let canonical = serde_json_canonicalizer::to_vec(&fields)
        // Only a non-finite number fails, and serde_json's Value cannot hold one.
        .unwrap_or_default();
    let hash = Sha256::digest(&canonical);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(64);
    for b in hash {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 0xf)] as char);
    }
    out
}

/// A definition the user approved (or that was pinned on first sight).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pin {
    pub digest: String,
    /// The definition itself, for the diff a change is reviewed with.
    pub definition: Value,
    /// When, in seconds since 1970 (UTC).
    pub at: u64,
    /// Pinned on first sight and not yet looked at: shown to hosts, and marked new in the
    /// dashboard and `lifeline tools review` until it is approved.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreviewed: bool,
}

impl Pin {
    /// `tool` pinned at `at`, as approved.
    pub fn of(tool: &Value, at: u64) -> Pin {
        Pin {
            digest: digest(tool),
            definition: definition(tool),
            at,
            unreviewed: false,
        }
    }
}

/// A definition held out of the hosts' lists until it is reviewed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldChange {
    /// The definition the server serves now (the last one seen while held).
    pub digest: String,
    pub definition: Value,
    /// When it was first held, in seconds since 1970 (UTC).
    pub since: u64,
    /// Whether the user rejected it: it stays out of the lists and is not raised again
    /// while the server serves this digest.
    #[serde(default)]
    pub rejected: bool,
}

/// One server's pins and held changes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerPins {
    /// The approved definitions, by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, Pin>,
    /// The definitions held for review, by tool name.
    #[serde(default)]
    pub held: BTreeMap<String, HeldChange>,
    /// When the server was first seen, in seconds since 1970 (UTC): tools it adds within
    /// `FIRST_SIGHT_GRACE` of it are part of its first sight. `None` for a fresh start
    /// after a corrupt file, which has no first sight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sight: Option<u64>,
}

/// How long after a server's first sight the tools it adds are pinned as first seen rather
/// than held: many servers register some tools only once a client's capabilities are known,
/// and list them moments after the first list. A change to a tool already pinned is held
/// however soon it comes.
pub const FIRST_SIGHT_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Where a tool of a list stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// Its definition is its pin's: shown.
    Approved,
    /// Pinned on the server's first sight and not yet looked at: shown, marked new.
    FirstSight,
    /// Its definition differs from its pin's: held. `before` is the pinned definition.
    Changed { before: Value },
    /// A tool the pinned server did not have: held.
    New,
}

impl Standing {
    /// Whether hosts are shown the tool.
    pub fn shown(&self) -> bool {
        matches!(self, Standing::Approved | Standing::FirstSight)
    }
}

impl Standing {
    /// The standing in one word, as events, the CLI and the dashboard say it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Standing::Approved => "approved",
            Standing::FirstSight => "first_sight",
            Standing::Changed { .. } => "changed",
            Standing::New => "new",
        }
    }
}

/// What `review` found in one list.
#[derive(Debug, Clone, PartialEq)]
pub struct Review<'a> {
    /// Each tool of the list, in its order, with where it stands.
    pub tools: Vec<(String, Standing)>,
    /// The tools held now that were not held before: what raises `tool_changed` (once per
    /// change, however often the server flips).
    pub newly_held: Vec<String>,
    /// The server's pins after the review (first-sight pins and held changes recorded):
    /// borrowed when they are as given, owned (to be stored) when the review changed them.
    pub pins: Cow<'a, ServerPins>,
}

/// Sorts `tools` (a server's `tools/list` entries) against its pins: `None` when the server
/// was never seen, so every tool is pinned on first sight (an empty list pins nothing and
/// leaves the server unseen). A tool without a string name
/// is left out. Of two entries with one name, the second is held as a change of the first.
pub fn review<'a, T: std::borrow::Borrow<Value>>(
    pins: Option<&'a ServerPins>,
    tools: &[T],
    now: u64,
) -> Review<'a> {
    // An empty list is no sight of anything: the first list with tools is the first sight
    // (a server may list its tools only once it is set up).
    static NOTHING: ServerPins = ServerPins {
        tools: BTreeMap::new(),
        held: BTreeMap::new(),
        first_sight: None,
    };
    let pins = match pins {
        None if tools.is_empty() => Some(&NOTHING),
        pins => pins,
    };
    let first_sight = pins.is_none();
    let mut next = match pins {
        Some(pins) => Cow::Borrowed(pins),
        None => Cow::Owned(ServerPins {
            first_sight: Some(now),
            ..ServerPins::default()
        }),
    };
    let grace =
        (next.first_sight).is_some_and(|t| now < t.saturating_add(FIRST_SIGHT_GRACE.as_secs()));
    let mut out = Vec::with_capacity(tools.len());
    let mut newly_held = Vec::new();
    let mut seen: HashSet<&str> = HashSet::with_capacity(tools.len());
    for tool in tools {
        let tool: &Value = tool.borrow();
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let repeated = !seen.insert(name);
        let mut digested = None;
        let added_in_grace =
            grace && !next.tools.contains_key(name) && !next.held.contains_key(name);
        let standing = if (first_sight || added_in_grace) && !repeated {
            let pin = Pin {
                unreviewed: true,
                ..Pin::of(tool, now)
            };
            next.to_mut().tools.insert(name.to_owned(), pin);
            Standing::FirstSight
        } else {
            // A tool serving its pinned definition is shown, even while a change of it is
            // held (a server flipping back and forth): the change waits for its review.
            // The same JSON is the same canonical form, so the digest is taken only when
            // the definition is not the pinned one value for value (`1` against `1.0`).
            let pinned = |pin: &Pin| match pin.unreviewed {
                true => Standing::FirstSight,
                false => Standing::Approved,
            };
            match next.tools.get(name) {
                Some(pin) if same_definition(&pin.definition, tool) => pinned(pin),
                Some(pin) if pin.digest == *digested.insert(digest(tool)) => pinned(pin),
                Some(pin) => Standing::Changed {
                    before: pin.definition.clone(),
                },
                None => Standing::New,
            }
        };
        if !standing.shown() {
            let digest = digested.unwrap_or_else(|| digest(tool));
            hold(&mut next, name, tool, &digest, now, &mut newly_held);
        }
        out.push((name.to_owned(), standing));
    }
    Review {
        tools: out,
        newly_held,
        pins: next,
    }
}

/// Whether `tool`'s definition is `pinned`, field for field, as JSON values.
fn same_definition(pinned: &Value, tool: &Value) -> bool {
    DEFINITION_FIELDS
        .iter()
        .all(|f| match (pinned.get(*f), tool.get(*f)) {
            (Some(a), Some(b)) => same(a, b),
            (a, b) => a.is_none() && b.is_none(),
        })
}

/// `a == b`, walking objects whose keys come in one order pair by pair: a server sends a
/// tool in the order it was pinned in, and comparing in order needs no lookup per key.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            if x.len() != y.len() {
                return false;
            }
            if x.keys().zip(y.keys()).all(|(k, l)| k == l) {
                x.values().zip(y.values()).all(|(v, w)| same(v, w))
            } else {
                a == b
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        _ => a == b,
    }
}

/// Records `tool` as held under `name`: a new hold is `newly_held`; a held one follows
/// the server's current definition without being raised again (a rejected one is raised
/// again only when the server serves something other than what was rejected). Copies the
/// pins only when something changes.
fn hold(
    pins: &mut Cow<'_, ServerPins>,
    name: &str,
    tool: &Value,
    digest: &str,
    now: u64,
    newly_held: &mut Vec<String>,
) {
    match pins.held.get(name) {
        Some(held) if held.digest == digest => {}
        Some(held) if !held.rejected => {
            let held = pins.to_mut().held.get_mut(name).expect("held above");
            held.digest = digest.to_owned();
            held.definition = definition(tool);
        }
        _ => {
            pins.to_mut().held.insert(
                name.to_owned(),
                HeldChange {
                    digest: digest.to_owned(),
                    definition: definition(tool),
                    since: now,
                    rejected: false,
                },
            );
            newly_held.push(name.to_owned());
        }
    }
}

/// What approving or rejecting found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    #[error(
        "`{server}` has no change of `{tool}` waiting for review: run `lifeline tools review \
         {server}` to see what is"
    )]
    NothingHeld { server: String, tool: String },
}

impl ReviewError {
    fn nothing_held(server: &str, tool: &str) -> ReviewError {
        ReviewError::NothingHeld {
            server: server.to_owned(),
            tool: tool.to_owned(),
        }
    }
}

/// Approves the held definition of `tool`, what the user reviewed: it becomes the pin, and
/// hosts are shown it while the server still serves it. A tool pinned on first sight and not yet looked at is marked reviewed.
pub fn approve(
    pins: &mut ServerPins,
    server: &str,
    tool: &str,
    now: u64,
) -> Result<(), ReviewError> {
    if let Some(held) = pins.held.remove(tool) {
        let pin = Pin {
            digest: held.digest,
            definition: held.definition,
            at: now,
            unreviewed: false,
        };
        pins.tools.insert(tool.to_owned(), pin);
        return Ok(());
    }
    match pins.tools.get_mut(tool) {
        Some(pin) if pin.unreviewed => {
            pin.unreviewed = false;
            Ok(())
        }
        _ => Err(ReviewError::nothing_held(server, tool)),
    }
}

/// What `approve` would take for `server`: every held change that was not rejected and
/// every tool still marked new, by name (for "Approve all" and `--all`).
pub fn awaiting(pins: &ServerPins) -> Vec<String> {
    let held = (pins.held.iter())
        .filter(|(_, h)| !h.rejected)
        .map(|(n, _)| n.clone());
    let new = (pins.tools.iter())
        .filter(|(n, p)| p.unreviewed && !pins.held.contains_key(*n))
        .map(|(n, _)| n.clone());
    held.chain(new).collect()
}

/// Rejects the held definition of `tool`: the tool stays out of the lists, and this
/// definition is not raised again. A tool pinned on first sight and not yet looked at is
/// unpinned and held, rejected, the same way.
pub fn reject(
    pins: &mut ServerPins,
    server: &str,
    tool: &str,
    now: u64,
) -> Result<(), ReviewError> {
    if let Some(held) = pins.held.get_mut(tool) {
        held.rejected = true;
        return Ok(());
    }
    match pins.tools.remove(tool) {
        Some(pin) if pin.unreviewed => {
            let held = HeldChange {
                digest: pin.digest,
                definition: pin.definition,
                since: now,
                rejected: true,
            };
            pins.held.insert(tool.to_owned(), held);
            Ok(())
        }
        pin => {
            if let Some(pin) = pin {
                pins.tools.insert(tool.to_owned(), pin);
            }
            Err(ReviewError::nothing_held(server, tool))
        }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
