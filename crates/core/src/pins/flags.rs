//! Flags: marks on suspicious text in a tool definition (issue 28, "Trust"), each naming the
//! field, the span in characters and why. Shown in the review and on first sight; a flag
//! never blocks by itself. Pure: a `tools/list` entry and a [`Context`] in, flags out.
//!
//! One flag per run of `invisible`, `bidi`, `tag` or `confusable` characters, the why naming
//! them as U+XXXX:
//! - `invisible`: what a reader does not see and the model reads: default-ignorable
//!   characters (zero-width, joiners, fillers, variation selectors: `unicode::INVISIBLE`) and
//!   controls but tab and newlines (an escape sequence can rewrite a terminal). Whitespace never
//!   flags, nor do the selectors and joiners inside an emoji, as emoji in descriptions are
//!   common and harmless and these carry no hidden text: U+FE0E or U+FE0F right after an emoji
//!   symbol (`unicode::EMOJI`: ©, ®, ‼, ⁉, ™, ℹ, U+2190–U+2BFF, 〰, 〽, ㊗, ㊙, U+1F000–U+1FAFF)
//!   or in a keycap (`0`–`9`, `#` or `*`, U+FE0F, U+20E3), and U+200D between two emoji (the
//!   first maybe with its U+FE0F; a skin tone is one). Anywhere else (between letters, at the
//!   start, after ASCII, a second selector in a row) they flag.
//! - `bidi`: U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069: text shows out of order.
//! - `tag`: U+E0000–U+E007F, invisible ASCII; the why spells it (minus 0xE0000), to 80 chars.
//! - `confusable`: any other non-ASCII character in the name (only there: the name is what
//!   one tool imitates of another), with the ASCII character it passes for if it is a
//!   common lookalike. A small table (Cyrillic, Greek, Latin, fullwidth) is enough, as every
//!   non-ASCII character flags anyway and the table only words the why: no confusables crate.
//! - `instruction`: phrases aimed at the model, from `phrases.txt` (its header says how they
//!   match); leftmost longest, not overlapping.
//! - `long`: the top-level description past max(4 × norm, 1000) characters, norm being the
//!   fleet's median ([`norm`]), or past 2000 with no norm: four times the usual leaves room
//!   for honest detail, the floor spares a fleet of terse tools, and room is where
//!   instructions hide.
//! - `base64`: 40 or more characters (30 bytes: longer than words and most identifiers) of
//!   `A–Z a–z 0–9 + /`, or base64url's `- _`, maybe ending in `=` or `==`, with a digit and
//!   with each case at least a quarter of the letters, so identifiers where one case
//!   dominates (snake_case, camelCase, CONSTANT_CASE) do not flag; hex (a digest) never does,
//!   nor a run inside a URL.
//! - `url`: `http://`, `https://`, `ftp://`, `file://` or `javascript:` and something, or
//!   `data:` with a comma (as a data URI has: `data: a list` is not one), not after a letter
//!   or digit, up to whitespace, a quote, `<`, `>`, `]`, `}` or a `)` it did not open, less a
//!   trailing `.,;:!?`. A domain without a scheme does not flag.
//! - `other_tool`: another server's tool name ([`Context::others`]) as a whole word (of
//!   letters, digits, `_`, `-`), case-sensitive, if it has 4 characters or more (`get`, `run`
//!   never flag). A name equal to the tool's own is not a mention.
//!
//! Fields, in order: `name`, `title`, `description`, `annotations.title`, then in
//! `inputSchema` and `outputSchema` each property name (its field is the property's path) and
//! each string under a `description` or `title` key, by path
//! (`inputSchema.properties.path.description`, `outputSchema.anyOf[0].title`, `["…"]` around
//! a key that is not plain).
//! Flags come by field, then by start. Bounds, as a definition is untrusted and may be huge:
//! a field is scanned up to 100,000 characters (`long` counts them all), and a tool has at
//! most 50 flags: enough for a review.

use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::LazyLock;

pub use super::unicode::FlagKind;
use super::unicode::{Hit, QUOTE_MAX, confusables, hidden, listed, quote, runs};

/// A field is scanned up to this many characters.
pub const MAX_FIELD_CHARS: usize = 100_000;
/// A tool has at most this many flags.
pub const MAX_FLAGS: usize = 50;
/// A description is long past max(LONG_FACTOR × norm, LONG_FLOOR), or LONG_UNKNOWN.
const LONG_FACTOR: usize = 4;
const LONG_FLOOR: usize = 1000;
const LONG_UNKNOWN: usize = 2000;
const BASE64_MIN: usize = 40;
const OTHER_TOOL_MIN: usize = 4;

/// One suspicious span of a tool definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Flag {
    pub kind: FlagKind,
    /// Where: "name", "title", "description", "annotations.title", or a path into the
    /// schemas such as "inputSchema.properties.path.description".
    pub field: String,
    /// The span in that field's text, in characters (not bytes): start..end.
    pub start: usize,
    pub end: usize,
    /// Why, in words a user reads.
    pub why: String,
}

/// What flags are judged against: the fleet's norm and the other servers' tool names.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The median description length (characters) across the fleet's tools; 0 when unknown.
    pub norm: usize,
    /// Every other configured server's tool names: (server, tool).
    pub others: &'a [(String, String)],
}

/// The flags of one tool definition (the raw JSON of a `tools/list` entry).
pub fn flags(tool: &Value, context: &Context<'_>) -> Vec<Flag> {
    let own = tool.get("name").and_then(Value::as_str).unwrap_or_default();
    let others = others(context.others, own);
    let mut out = Vec::new();
    for (field, text) in fields(tool) {
        let cap = MAX_FLAGS - out.len();
        if cap == 0 {
            break;
        }
        let chars: Vec<char> = text.chars().take(MAX_FIELD_CHARS).collect();
        // Each finder stops at `cap`, so the first `cap` by start are all here.
        let mut hits: Vec<Hit> = Vec::new();
        if field == "description" {
            hits.extend(long(text, context.norm));
        }
        hits.extend(hidden(&chars, cap));
        if field == "name" {
            hits.extend(confusables(&chars, cap));
        }
        hits.extend(instructions(&chars, cap));
        let urls = urls(&chars, cap);
        hits.extend(base64(&chars, &urls, cap));
        hits.extend(urls);
        hits.extend(mentions(&others, &chars, cap));
        hits.sort_by_key(|h| h.1);
        hits.truncate(cap);
        let flag = |(kind, start, end, why)| Flag {
            kind,
            field: field.clone(),
            start,
            end,
            why,
        };
        out.extend(hits.into_iter().map(flag));
    }
    out
}

/// The median of description lengths in characters, for [`Context::norm`]; 0 for none.
/// Empty descriptions are left out: a tool without one says nothing of the fleet's norm.
/// Of an even count, the mean of the middle two, rounded down.
pub fn norm<'a>(descriptions: impl IntoIterator<Item = &'a str>) -> usize {
    let mut lengths: Vec<usize> = descriptions
        .into_iter()
        .map(|d| d.chars().count())
        .filter(|&n| n > 0)
        .collect();
    lengths.sort_unstable();
    match lengths.len() {
        0 => 0,
        n if n % 2 == 1 => lengths[n / 2],
        n => (lengths[n / 2 - 1] + lengths[n / 2]) / 2,
    }
}

/// The texts scanned, in order: (field, text).
fn fields(tool: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    for field in ["name", "title", "description", "annotations.title"] {
        let pointer = format!("/{}", field.replace('.', "/"));
        if let Some(text) = tool.pointer(&pointer).and_then(Value::as_str) {
            out.push((field.to_owned(), text));
        }
    }
    for key in ["inputSchema", "outputSchema"] {
        if let Some(schema) = tool.get(key) {
            walk(key.to_owned(), schema, false, &mut out);
        }
    }
    out
}

/// The property names (`properties`: the keys of a `properties` object) and the
/// `description` and `title` strings of a schema, in document order. Recursive, as serde_json
/// itself is (to drop, clone or compare a value), and bounded as its parser bounds nesting.
fn walk<'v>(path: String, value: &'v Value, properties: bool, out: &mut Vec<(String, &'v str)>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                let at = join(&path, key);
                if properties {
                    out.push((at.clone(), key));
                    walk(at, value, false, out);
                } else if let ("description" | "title", Value::String(text)) = (&**key, value) {
                    out.push((at, text));
                } else if value.is_object() || value.is_array() {
                    walk(at, value, key == "properties", out);
                }
            }
        }
        Value::Array(items) => {
            for (i, value) in items.iter().enumerate() {
                walk(format!("{path}[{i}]"), value, false, out);
            }
        }
        _ => {}
    }
}

/// `path.key`, or `path["key"]` (quoted as a why quotes) when the key is not plain.
fn join(path: &str, key: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '$');
    if !key.is_empty() && key.len() <= QUOTE_MAX && key.chars().all(plain) {
        format!("{path}.{key}")
    } else {
        format!("{path}[\"{}\"]", quote(key.chars()))
    }
}

/// The phrases of `phrases.txt`, folded (`fold`).
static PHRASES: LazyLock<Vec<String>> = LazyLock::new(|| {
    let lines = include_str!("phrases.txt").lines().map(str::trim);
    let wanted = |line: &&str| !line.is_empty() && !line.starts_with('#');
    let folded = |line: &str| line.chars().map(fold).collect();
    lines.filter(wanted).map(folded).collect()
});

/// `c` lowercased where that is one character (so offsets stay), `’` as `'`.
fn fold(c: char) -> char {
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some('\u{2019}'), None) => '\'',
        (Some(l), None) => l,
        _ => c,
    }
}

/// Where `phrase` ends if it matches `text` (folded) at `at`.
fn match_at(text: &[char], at: usize, phrase: &str) -> Option<usize> {
    let word = |j: usize| text.get(j).is_some_and(|c| c.is_alphanumeric());
    let prefix = phrase.ends_with('*');
    let phrase = phrase.trim_end_matches('*');
    if phrase.starts_with(char::is_alphanumeric) && at > 0 && word(at - 1) {
        return None;
    }
    let mut j = at;
    for p in phrase.chars() {
        let from = j;
        if p != ' ' && text.get(j) == Some(&p) {
            j += 1;
        }
        while p == ' ' && text.get(j).is_some_and(|c| c.is_whitespace()) {
            j += 1;
        }
        if j == from {
            return None;
        }
    }
    let bounded = prefix || !phrase.ends_with(char::is_alphanumeric) || !word(j);
    bounded.then_some(j)
}

/// Instruction-like phrases: leftmost, longest, not overlapping.
fn instructions(chars: &[char], cap: usize) -> Vec<Hit> {
    let text: Vec<char> = chars.iter().map(|&c| fold(c)).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() && out.len() < cap {
        let matched = PHRASES
            .iter()
            .filter_map(|p| Some((match_at(&text, i, p)?, p)));
        let Some((end, phrase)) = matched.max_by_key(|(end, _)| *end) else {
            i += 1;
            continue;
        };
        let phrase = phrase.trim_end_matches('*');
        let why = format!("instruction-like phrase \"{phrase}\", aimed at the model, not the user");
        out.push((FlagKind::Instruction, i, end, why));
        i = end;
    }
    out
}

/// The schemes of the URLs that flag.
const SCHEMES: &str = "http:// https:// ftp:// file:// data: javascript:";

/// URLs with a scheme of `SCHEMES`.
fn urls(chars: &[char], cap: usize) -> Vec<Hit> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() && out.len() < cap {
        let starts =
            (i == 0 || !chars[i - 1].is_ascii_alphanumeric()) && chars[i].is_ascii_alphabetic();
        let ahead: String = chars[i..]
            .iter()
            .take(if starts { 11 } else { 0 })
            .collect();
        let ahead = ahead.to_ascii_lowercase();
        let Some(scheme) = SCHEMES.split(' ').find(|s| ahead.starts_with(s)) else {
            i += 1;
            continue;
        };
        let from = i + scheme.len();
        let end = url_end(chars, from);
        let body = &chars[from..end];
        let real = match scheme {
            "data:" => {
                let media = |c: &char| c.is_ascii_alphabetic() || matches!(c, ',' | ';');
                body.first().is_some_and(media) && body.contains(&',')
            }
            _ => !body.is_empty(),
        };
        if real {
            let why = format!("a URL: \"{}\"", quote(chars[i..end].iter().copied()));
            out.push((FlagKind::Url, i, end, why));
        }
        i = if real { end } else { i + 1 };
    }
    out
}

/// Where a URL whose scheme ends at `from` ends.
fn url_end(chars: &[char], from: usize) -> usize {
    let (mut j, mut open) = (from, 0usize);
    while let Some(&c) = chars.get(j) {
        open = match c {
            '(' => open + 1,
            ')' if open > 0 => open - 1,
            c if c.is_whitespace() || c.is_control() || "\"'`<>)]}".contains(c) => break,
            _ => open,
        };
        j += 1;
    }
    while j > from && ".,;:!?".contains(chars[j - 1]) {
        j -= 1;
    }
    j
}

/// Runs that look like base64 or base64url, outside `urls`.
fn base64(chars: &[char], urls: &[Hit], cap: usize) -> Vec<Hit> {
    let mut found: Vec<(usize, usize, usize, bool)> = Vec::new();
    for url_safe in [false, true] {
        let symbols = if url_safe { "-_" } else { "+/" };
        let member = |c: char| c.is_ascii_alphanumeric() || symbols.contains(c);
        let key = |i: usize| member(chars[i]).then_some(());
        for (_, start, body) in runs(chars.len(), key) {
            let is_pad = |k: &usize| chars.get(body + k) == Some(&'=');
            let pad = (0..2).take_while(is_pad).count();
            let in_url = urls.iter().any(|u| start < u.2 && u.1 < body + pad);
            if looks_like_base64(&chars[start..body]) && !in_url {
                found.push((start, body, body + pad, url_safe));
            }
        }
    }
    // Where the two alphabets found overlapping runs, the first and longest stands.
    found.sort_by_key(|r| (r.0, std::cmp::Reverse(r.2)));
    let mut out: Vec<Hit> = Vec::new();
    for (start, body, end, url_safe) in found {
        if out.len() == cap || out.last().is_some_and(|h| start < h.2) {
            continue;
        }
        let (n, alphabet) = (body - start, if url_safe { "base64url" } else { "base64" });
        let why = format!("{n} characters of {alphabet}, which can hide text");
        out.push((FlagKind::Base64, start, end, why));
    }
    out
}

/// A digit, and both cases each at least a quarter of the letters; not all hex digits.
fn looks_like_base64(run: &[char]) -> bool {
    let count = |f: fn(&char) -> bool| run.iter().filter(|c| f(c)).count();
    let upper = count(char::is_ascii_uppercase);
    let lower = count(char::is_ascii_lowercase);
    let letters = upper + lower;
    run.len() >= BASE64_MIN
        && count(char::is_ascii_digit) > 0
        && letters > 0
        && upper * 4 >= letters
        && lower * 4 >= letters
        && !run.iter().all(char::is_ascii_hexdigit)
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-')
}

/// Other servers' tool names that can be mentioned (of word characters only: no other can
/// be a whole word), with the servers that have each.
type Others<'a> = HashMap<&'a str, Vec<&'a str>>;

fn others<'a>(others: &'a [(String, String)], own: &str) -> Others<'a> {
    let mut names = Others::new();
    for (server, tool) in others {
        let short = tool.chars().count() < OTHER_TOOL_MIN;
        if short || tool == own || !tool.chars().all(word_char) {
            continue;
        }
        let servers = names.entry(tool).or_default();
        if !servers.contains(&server.as_str()) {
            servers.push(server);
        }
    }
    names
}

/// Whole-word mentions of other servers' tools.
fn mentions(others: &Others<'_>, chars: &[char], cap: usize) -> Vec<Hit> {
    let key = |i: usize| word_char(chars[i]).then_some(());
    let mut word = String::new();
    let found = runs(chars.len(), key).filter_map(|(_, start, end)| {
        word.clear();
        word.extend(&chars[start..end]);
        Some(mention(start, end, &word, others.get(word.as_str())?))
    });
    found.take(cap).collect()
}

fn mention(start: usize, end: usize, tool: &str, servers: &[&str]) -> Hit {
    let s = if servers.len() == 1 { "" } else { "s" };
    let listed = listed(servers.iter().map(|s| format!("\"{s}\"")));
    let why = format!("mentions \"{tool}\", a tool of server{s} {listed}");
    (FlagKind::OtherTool, start, end, why)
}

/// A description longer than the fleet's norm allows.
fn long(text: &str, norm: usize) -> Option<Hit> {
    let len = text.chars().count();
    let (limit, usual) = match norm {
        0 => (LONG_UNKNOWN, String::new()),
        _ => (
            norm.saturating_mul(LONG_FACTOR).max(LONG_FLOOR),
            format!("the fleet's usual is {norm}; "),
        ),
    };
    let why = format!("the description is {len} characters long ({usual}flagged past {limit})");
    (len > limit).then_some((FlagKind::Long, 0, len, why))
}

#[cfg(test)]
#[path = "flags_tests.rs"]
mod tests;
