//! Host-facing names for the aggregated endpoint: one name per (server, tool) pair —
//! `server__tool` by default — that fits the host's budget (`budget.rs`), is unique ignoring
//! case, and never changes across restarts unless the tool does (`store.rs`). Prompts and
//! resource templates are named the same way, each list in a `Names` of its own; resource
//! URIs are mapped in `uris.rs`. All of it is pure (no I/O, no clocks) but `store.rs`.
//!
//! Uniqueness is by construction, never by parsing: `assign` hands out names in a fixed
//! order against a set of the names taken (compared in lowercase, as VS Code compares
//! them), and a call is routed back through the reverse map (`route`), never by splitting a
//! name at its separator (`a__b`+`c` and `a`+`b__c` would both read `a__b__c`). A name
//! over the budget, or one another pair holds, is shortened: cut, with the first 6
//! characters of a hash of the pair at its end (docs/gateway.md, "Names on the aggregated
//! endpoint").

pub mod budget;
pub mod store;
pub mod uris;

#[cfg(test)]
mod assign_props;
#[cfg(test)]
mod tests;

pub use crate::config::{BadSeparator, Separator, ServerClash, fold_server, server_clashes};
pub use budget::{ClientKind, OverLimit, ToolLimit, UnknownKind};

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The fewest characters a name may be given: a budget below it (a host entry name so long
/// that almost nothing is left) is raised to it, and such a host may refuse the names.
pub const MIN_BUDGET: usize = 16;
/// The most: no host takes a longer tool name (Claude's and OpenAI's APIs stop at 64).
pub const MAX_BUDGET: usize = 64;
/// How many characters of the pair's hash a shortened name ends with, at first.
const HASH_LEN: usize = 6;
/// Characters in the whole hash: 256 bits in base32.
const HASH_CHARS: usize = 52;

/// The budget `assign` and the store work with for a host's `budget`: within
/// `MIN_BUDGET..=MAX_BUDGET`.
pub fn clamp_budget(budget: usize) -> usize {
    budget.clamp(MIN_BUDGET, MAX_BUDGET)
}

/// Names kept from an earlier run (`store::load`): (server, original name) → host name.
pub type Remembered = BTreeMap<(String, String), String>;

/// How a pair's host name differs from `server` + separator + name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// It is exactly that.
    None,
    /// Characters other than `A-Z a-z 0-9 _ -` became `_`, or a `t` went first so that the
    /// name starts with a letter.
    Sanitized,
    /// Cut, with a hash of the pair at its end.
    Shortened(Why),
}

/// Why a name was shortened (what the Profiles view shows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The whole name has `len` characters, more than the host's `budget`.
    TooLong { len: usize, budget: usize },
    /// Another pair holds the whole name, or one differing from it only in case.
    Taken { server: String, tool: String },
    /// Shortened on an earlier run for a reason gone since (the other tool went away), and
    /// kept so that the name does not change.
    Remembered,
}

/// One pair and its host name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub server: String,
    /// The name the server gave it, verbatim.
    pub tool: String,
    pub name: String,
    pub change: Change,
}

/// The host names of one list (tools, prompts or resource templates) for one host's budget
/// and separator, and the reverse map calls are routed by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// Sorted by (server, tool), bytewise.
    entries: Vec<Entry>,
    /// Each name in lowercase → its entry; unambiguous, since names are unique ignoring case.
    by_host: HashMap<String, usize>,
    budget: usize,
    separator: Separator,
}

impl Names {
    /// Names every (server, original name) pair of `pairs` (duplicates count once) within
    /// `budget` (raised or lowered into `MIN_BUDGET..=MAX_BUDGET`). The result depends on
    /// the set of pairs only, never on their order. Names are handed out in four rounds,
    /// each in (server, name) order: the `remembered` name of a pair, when it is one this
    /// scheme gives that pair and is still free; then each whole name that needs no change;
    /// then each sanitized whole name; then, for the rest, a shortened one.
    pub fn assign<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
        budget: usize,
        separator: &Separator,
        remembered: &Remembered,
    ) -> Names {
        let budget = clamp_budget(budget);
        let pairs: Vec<(&str, &str)> = pairs
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let whole: Vec<Whole> = pairs
            .iter()
            .map(|&(s, t)| Whole::of(s, t, separator))
            .collect();
        let mut taken = Taken::default();
        let mut names: Vec<Option<String>> = vec![None; pairs.len()];

        for (i, &(s, t)) in pairs.iter().enumerate() {
            let Some(name) = remembered.get(&(s.to_owned(), t.to_owned())) else {
                continue;
            };
            if is_derived(s, t, &whole[i], name, budget, separator) && taken.take(name, i) {
                names[i] = Some(name.clone());
            }
        }
        for exact_round in [true, false] {
            for (i, w) in whole.iter().enumerate() {
                let fits = w.name.len() <= budget && w.exact == exact_round;
                if names[i].is_none() && fits && taken.take(&w.name, i) {
                    names[i] = Some(w.name.clone());
                }
            }
        }
        for (i, &(s, t)) in pairs.iter().enumerate() {
            if names[i].is_none() {
                let name = free_short(s, t, &whole[i], budget, separator, &taken);
                taken.take(&name, i);
                names[i] = Some(name);
            }
        }

        let mut entries = Vec::with_capacity(pairs.len());
        let mut by_host = HashMap::with_capacity(pairs.len());
        for (i, (&(s, t), name)) in pairs.iter().zip(names).enumerate() {
            let name = name.unwrap_or_default();
            let holder = taken.holder(&whole[i].name).filter(|&j| j != i);
            let change = change_of(&name, &whole[i], holder.map(|j| pairs[j]), budget);
            by_host.insert(name.to_ascii_lowercase(), i);
            entries.push(Entry {
                server: s.to_owned(),
                tool: t.to_owned(),
                name,
                change,
            });
        }
        Names {
            entries,
            by_host,
            budget,
            separator: separator.clone(),
        }
    }

    /// The host name of `tool` on `server`, if the pair was named.
    pub fn host_name(&self, server: &str, tool: &str) -> Option<&str> {
        self.entry(server, tool).map(|e| e.name.as_str())
    }

    /// The pair's entry: its name and how it differs from the whole name.
    pub fn entry(&self, server: &str, tool: &str) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| (e.server.as_str(), e.tool.as_str()).cmp(&(server, tool)))
            .ok()
            .map(|i| &self.entries[i])
    }

    /// The (server, original name) a host name stands for. Case is ignored: names are
    /// unique ignoring case, and some hosts (VS Code) fold it.
    pub fn route(&self, host_name: &str) -> Option<(&str, &str)> {
        let i = *self.by_host.get(&host_name.to_ascii_lowercase())?;
        let e = &self.entries[i];
        Some((e.server.as_str(), e.tool.as_str()))
    }

    /// Every entry, in (server, original name) order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The names as the store keeps them, for the next `assign`.
    pub fn remembered(&self) -> Remembered {
        self.entries
            .iter()
            .map(|e| ((e.server.clone(), e.tool.clone()), e.name.clone()))
            .collect()
    }

    /// The budget the names were given (after `clamp_budget`).
    pub fn budget(&self) -> usize {
        self.budget
    }

    pub fn separator(&self) -> &Separator {
        &self.separator
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// How a pair's `name` differs from its `whole` name, which `holder` holds if another
/// pair does.
fn change_of(name: &str, whole: &Whole, holder: Option<(&str, &str)>, budget: usize) -> Change {
    if name == whole.name {
        return if whole.exact {
            Change::None
        } else {
            Change::Sanitized
        };
    }
    let why = if whole.name.len() > budget {
        Why::TooLong {
            len: whole.name.len(),
            budget,
        }
    } else if let Some((server, tool)) = holder {
        Why::Taken {
            server: server.to_owned(),
            tool: tool.to_owned(),
        }
    } else {
        Why::Remembered
    };
    Change::Shortened(why)
}

/// Whether `b` may appear in a host name.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// `part` with every character that may not appear in a name turned into `_`.
fn sanitize(part: &str) -> String {
    part.chars()
        .map(|c| match u8::try_from(c) {
            Ok(b) if is_name_byte(b) => c,
            _ => '_',
        })
        .collect()
}

/// `name`, with a `t` first unless it starts with a letter (Gemini's rule).
fn lettered(mut name: String) -> String {
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.insert(0, 't');
    }
    name
}

/// A pair's whole name, sanitized, and the parts a shortened one is cut from.
#[derive(Debug)]
struct Whole {
    name: String,
    /// Whether nothing was changed: the name is `server` + separator + tool as they are.
    exact: bool,
    server: String,
    tool: String,
}

impl Whole {
    fn of(server: &str, tool: &str, sep: &Separator) -> Whole {
        let (server_part, tool_part) = (sanitize(server), sanitize(tool));
        let name = lettered(format!("{server_part}{}{tool_part}", sep.as_str()));
        let exact = name == format!("{server}{}{tool}", sep.as_str());
        Whole {
            name,
            exact,
            server: server_part,
            tool: tool_part,
        }
    }
}

/// The names handed out so far, in lowercase, each with the pair holding it.
#[derive(Debug, Default)]
struct Taken(HashMap<String, usize>);

impl Taken {
    /// Takes `name` for pair `i` when it is free (ignoring case); whether it was.
    fn take(&mut self, name: &str, i: usize) -> bool {
        match self.0.entry(name.to_ascii_lowercase()) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
                true
            }
        }
    }

    fn is_free(&self, name: &str) -> bool {
        !self.0.contains_key(&name.to_ascii_lowercase())
    }

    fn holder(&self, name: &str) -> Option<usize> {
        self.0.get(&name.to_ascii_lowercase()).copied()
    }
}

/// The lowercase base32 (RFC 4648 alphabet, no padding) of SHA-256 over the server, a zero
/// byte and the original name: 52 characters, of which a shortened name ends with a few.
fn pair_hash(server: &str, tool: &str) -> String {
    let mut h = Sha256::new();
    h.update(server.as_bytes());
    h.update([0u8]);
    h.update(tool.as_bytes());
    base32(&h.finalize())
}

/// RFC 4648 base32 in lowercase, without padding.
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
        buffer &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

/// The hash lengths a shortened name tries, in order: 6, 8, 10, … while one leaves room
/// for at least one character and the `_` before the hash.
fn hash_lengths(budget: usize) -> impl Iterator<Item = usize> {
    let most = HASH_CHARS.min(budget.saturating_sub(2));
    (HASH_LEN..=most).step_by(2)
}

/// The shortened name of a pair with `len` characters of its hash, and a counter after it
/// when every length was taken: `head_hash` or `head_hash_N`. The head is the sanitized
/// server cut to `max(8, room / 3)`, the separator and the sanitized tool, cut to the room
/// left, with no `_` or `-` at its end. It starts with a letter. A counter below ten million
/// always fits the budget (`MIN_BUDGET`); one that high would take ten million pairs whose
/// hashes agree.
fn short(
    whole: &Whole,
    hash: &str,
    len: usize,
    counter: Option<u64>,
    budget: usize,
    sep: &Separator,
) -> String {
    let mut suffix = format!("_{}", &hash[..len]);
    if let Some(n) = counter {
        suffix.push_str(&format!("_{n}"));
    }
    let room = budget.saturating_sub(suffix.len()).max(1);
    let server_room = whole.server.len().min(8.max(room / 3));
    let mut head = lettered(format!(
        "{}{}{}",
        &whole.server[..server_room],
        sep.as_str(),
        whole.tool
    ));
    head.truncate(room);
    while head.len() > 1 && head.ends_with(['_', '-']) {
        head.pop();
    }
    head + &suffix
}

/// The first free shortened name of a pair: 6 characters of its hash, then 8, 10, …, then
/// the longest with a counter.
fn free_short(
    server: &str,
    tool: &str,
    whole: &Whole,
    budget: usize,
    sep: &Separator,
    taken: &Taken,
) -> String {
    let hash = pair_hash(server, tool);
    for len in hash_lengths(budget) {
        let name = short(whole, &hash, len, None, budget, sep);
        if taken.is_free(&name) {
            return name;
        }
    }
    (2u64..)
        .map(|n| short(whole, &hash, HASH_LEN, Some(n), budget, sep))
        .find(|name| taken.is_free(name))
        .unwrap_or_default()
}

/// Whether `name` is one this scheme gives the pair under `budget` and `sep` — its whole
/// name, or one of its shortened ones. A remembered name is kept only then, so a names file
/// someone edited can never call one tool by another's name.
fn is_derived(
    server: &str,
    tool: &str,
    whole: &Whole,
    name: &str,
    budget: usize,
    sep: &Separator,
) -> bool {
    if name.len() > budget {
        return false;
    }
    if name == whole.name {
        return true;
    }
    let hash = pair_hash(server, tool);
    if hash_lengths(budget).any(|len| short(whole, &hash, len, None, budget, sep) == name) {
        return true;
    }
    let counter = name
        .rsplit_once('_')
        .and_then(|(_, n)| n.parse::<u64>().ok())
        .filter(|&n| n >= 2);
    counter.is_some_and(|n| short(whole, &hash, HASH_LEN, Some(n), budget, sep) == name)
}
