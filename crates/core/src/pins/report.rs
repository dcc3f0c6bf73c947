//! What a review shows (`lifeline tools review NAME`, the dashboard's detail panel) for one
//! server: each held change with a word-level diff of its description and a structural diff
//! of the rest of its definition, each tool pinned on first sight and not yet looked at,
//! and the flags (`flags.rs`) of every definition shown. Pure: the pins in, the report out.
//!
//! Bounds, as definitions are a server's: a description is diffed word by word within
//! `DIFF_TIMEOUT` (past it, the rest is shown as removed and added whole), and a definition
//! has at most `MAX_FIELD_CHANGES` field changes, each value at most `MAX_VALUE_CHARS` of JSON.

use super::flags::{self, Context, Flag};
use super::store::Pins;
use super::{DEFINITION_FIELDS, ServerPins, visible};
use serde::Serialize;
use serde_json::{Map, Value};
use std::time::{Duration, UNIX_EPOCH};

/// How long the word diff of one description may take.
const DIFF_TIMEOUT: Duration = Duration::from_millis(100);
/// The most field changes one definition's review lists.
pub const MAX_FIELD_CHANGES: usize = 200;
/// A changed value is shown up to this many characters of its JSON.
pub const MAX_VALUE_CHARS: usize = 2000;

/// One server's review.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ServerReview {
    pub server: String,
    /// The held definitions, by tool name: those waiting for a decision, then the rejected.
    pub held: Vec<HeldReview>,
    /// Tools pinned on the server's first sight that nobody has looked at yet, by name.
    pub first_seen: Vec<FirstSeen>,
}

impl ServerReview {
    /// Whether there is anything to decide (held and not rejected, or first seen).
    pub fn awaiting(&self) -> usize {
        self.held.iter().filter(|h| !h.rejected).count() + self.first_seen.len()
    }
}

/// A held definition against what was approved.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HeldReview {
    pub tool: String,
    pub kind: HeldKind,
    /// The user rejected it: it stays out of the hosts' lists.
    pub rejected: bool,
    /// When it was first held (RFC 3339).
    pub since: String,
    /// The description, word by word, from the approved one to the held one (all added
    /// for a new tool), hidden characters made visible (`pins::visible`). Empty when
    /// neither has one.
    pub description: Vec<Words>,
    /// Every other difference of the definition, by path, in order.
    pub fields: Vec<FieldChange>,
    /// More differences than `fields` holds.
    pub more_fields: bool,
    /// The held definition.
    #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
    pub definition: Value,
    pub flags: Vec<Flag>,
}

/// Why a definition is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum HeldKind {
    /// It differs from the approved definition.
    Changed,
    /// The server did not have the tool when it was pinned.
    New,
}

/// A run of words a diff kept, removed or added (with the spaces between them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Words {
    pub op: Op,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Same,
    Removed,
    Added,
    Changed,
}

/// One difference of a definition outside its description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FieldChange {
    /// Where, as flags name it: `inputSchema.properties.path.type`, `annotations`.
    pub path: String,
    /// `removed`, `added` or `changed`.
    pub op: Op,
    /// The value before and after, as JSON, hidden characters made visible, each cut at
    /// `MAX_VALUE_CHARS` (ending in `…`).
    pub before: Option<String>,
    pub after: Option<String>,
}

/// A tool pinned on first sight, for the user to look at once.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FirstSeen {
    pub tool: String,
    /// When it was pinned (RFC 3339).
    pub at: String,
    #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
    pub definition: Value,
    pub flags: Vec<Flag>,
}

/// The context flags are judged in for `server`: the median description length over every
/// pinned tool of every server, and the other servers' tool names.
pub fn context_of(pins: &Pins, server: &str) -> (usize, Vec<(String, String)>) {
    let descriptions = (pins.servers.values())
        .flat_map(|s| s.tools.values())
        .filter_map(|p| p.definition.get("description").and_then(Value::as_str));
    let norm = flags::norm(descriptions);
    let others = (pins.servers.iter())
        .filter(|(name, _)| *name != server)
        .flat_map(|(name, s)| s.tools.keys().map(move |t| (name.clone(), t.clone())))
        .collect();
    (norm, others)
}

/// The review of `server` in `pins` (all servers', for the flags' context).
pub fn review_of(pins: &Pins, server: &str) -> ServerReview {
    let (norm, others) = context_of(pins, server);
    let context = Context {
        norm,
        others: &others,
    };
    let empty = ServerPins::default();
    let own = pins.servers.get(server).unwrap_or(&empty);
    report(server, own, &context)
}

/// The review of one server's pins.
pub fn report(server: &str, pins: &ServerPins, context: &Context<'_>) -> ServerReview {
    let mut held: Vec<HeldReview> = (pins.held.iter())
        .map(|(tool, h)| {
            let before = pins.tools.get(tool).map(|p| &p.definition);
            let none = Value::Object(Map::new());
            let (description, (fields, more_fields)) = (
                words(
                    text(before, "description"),
                    text(Some(&h.definition), "description"),
                ),
                field_changes(before.unwrap_or(&none), &h.definition),
            );
            HeldReview {
                tool: tool.clone(),
                kind: if before.is_some() {
                    HeldKind::Changed
                } else {
                    HeldKind::New
                },
                rejected: h.rejected,
                since: when(h.since),
                description,
                fields,
                more_fields,
                definition: h.definition.clone(),
                flags: flags::flags(&h.definition, context),
            }
        })
        .collect();
    held.sort_by_key(|h| h.rejected);
    let first_seen = (pins.tools.iter())
        .filter(|(tool, p)| p.unreviewed && !pins.held.contains_key(*tool))
        .map(|(tool, p)| FirstSeen {
            tool: tool.clone(),
            at: when(p.at),
            definition: p.definition.clone(),
            flags: flags::flags(&p.definition, context),
        })
        .collect();
    ServerReview {
        server: server.to_owned(),
        held,
        first_seen,
    }
}

fn when(secs: u64) -> String {
    crate::events::rfc3339(UNIX_EPOCH + Duration::from_secs(secs))
}

fn text<'a>(definition: Option<&'a Value>, field: &str) -> &'a str {
    (definition.and_then(|d| d.get(field)))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The word diff of `before` to `after`, runs of one op merged.
fn words(before: &str, after: &str) -> Vec<Words> {
    let diff = similar::TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_words(before, after);
    let mut out: Vec<Words> = Vec::new();
    for change in diff.iter_all_changes() {
        let op = match change.tag() {
            similar::ChangeTag::Equal => Op::Same,
            similar::ChangeTag::Delete => Op::Removed,
            similar::ChangeTag::Insert => Op::Added,
        };
        match out.last_mut() {
            Some(last) if last.op == op => last.text.push_str(&visible(change.value())),
            _ => out.push(Words {
                op,
                text: visible(change.value()),
            }),
        }
    }
    out
}

/// Every difference of two definitions but their descriptions, by path, at most
/// `MAX_FIELD_CHANGES` (and whether there were more).
fn field_changes(before: &Value, after: &Value) -> (Vec<FieldChange>, bool) {
    let mut out = Vec::new();
    let mut more = false;
    for field in DEFINITION_FIELDS.iter().filter(|f| **f != "description") {
        walk(
            field.to_string(),
            before.get(*field),
            after.get(*field),
            &mut out,
            &mut more,
        );
    }
    (out, more)
}

fn walk(
    path: String,
    before: Option<&Value>,
    after: Option<&Value>,
    out: &mut Vec<FieldChange>,
    more: &mut bool,
) {
    let mut push = |op, before: Option<&Value>, after: Option<&Value>| {
        if out.len() == MAX_FIELD_CHANGES {
            *more = true;
            return;
        }
        out.push(FieldChange {
            path: path.clone(),
            op,
            before: before.map(shown),
            after: after.map(shown),
        });
    };
    match (before, after) {
        (None, None) => {}
        (Some(b), None) => push(Op::Removed, Some(b), None),
        (None, Some(a)) => push(Op::Added, None, Some(a)),
        (Some(Value::Object(b)), Some(Value::Object(a))) => {
            let keys = b.keys().chain(a.keys().filter(|k| !b.contains_key(*k)));
            for key in keys {
                walk(join(&path, key), b.get(key), a.get(key), out, more);
            }
        }
        (Some(Value::Array(b)), Some(Value::Array(a))) if b.len() == a.len() => {
            for (i, (x, y)) in b.iter().zip(a).enumerate() {
                walk(format!("{path}[{i}]"), Some(x), Some(y), out, more);
            }
        }
        (Some(b), Some(a)) if b != a => push(Op::Changed, Some(b), Some(a)),
        _ => {}
    }
}

/// `path.key`, or `path["key"]` for a key that is not plain (as `flags` names fields), hidden
/// characters made visible: a server names its schema's properties.
fn join(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match plain {
        true => format!("{path}.{key}"),
        false => format!("{path}[{}]", visible(&Value::from(key).to_string())),
    }
}

/// A value as JSON, hidden characters made visible, cut at `MAX_VALUE_CHARS`.
fn shown(value: &Value) -> String {
    let json = visible(&value.to_string());
    if json.chars().count() <= MAX_VALUE_CHARS {
        return json;
    }
    let mut cut: String = json.chars().take(MAX_VALUE_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
