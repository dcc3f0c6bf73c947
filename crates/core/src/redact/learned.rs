//! Secrets learned at run time. When a rule masks a value because of where it stands (a
//! `"password":"…"` field, an `X-Api-Key: …` line, the word after `Bearer`, a `--token=…`
//! argument, a URL's password, a key prefix) or because the config holds it (a header or
//! env value), the value itself is remembered, and every later scrub by any `Redactor` of
//! this process also masks it wherever it turns up, whatever surrounds it: bare (a
//! positional argument, a message), inside a JSON string (escaped once or twice) or
//! URL-encoded.
//!
//! The registry is process-wide, not per fleet or per redactor: a value a server printed
//! must be scrubbed from the CLI's output, the app's events and history, the bundle and
//! the detail panel, and each of those holds its own `Redactor`, built at another time
//! from another part of the config. It lives in memory only: a learned value is never
//! written anywhere, so a restart forgets it (what it scrubbed stays scrubbed).

use super::{MASK, Rule};
use std::sync::{PoisonError, RwLock};

/// A value shorter than this is not learned: masking every "true", "1" or "admin" in
/// every later message would destroy them and protect little.
pub const MIN_LEARNED_LEN: usize = 8;

/// At most this many values are learned. A server that prints a million different
/// `"password":"…"` lines must not make every later scrub a million replacements; the
/// values past the limit are still masked where their rule finds them.
pub const MAX_LEARNED: usize = 1024;

/// Values that stand where a secret would but are placeholders: learning them would mask
/// ordinary words everywhere.
const PLACEHOLDERS: [&str; 10] = [
    "undefined",
    "redacted",
    "[redacted]",
    "<redacted>",
    "required",
    "optional",
    "disabled",
    "enabled",
    "not-set",
    "<hidden>",
];

struct Learned {
    value: String,
    /// It came from the config (`Redactor::new`), not from a rule: whoever wrote with
    /// the config's redactor scrubbed it already.
    configured: bool,
}

struct Registry {
    /// The values as learned, to tell a new one from a known one.
    values: Vec<Learned>,
    /// Every shape of every value, longest first, so a form that contains another is
    /// replaced whole.
    forms: Vec<String>,
}

static REGISTRY: RwLock<Registry> = RwLock::new(Registry {
    values: Vec::new(),
    forms: Vec::new(),
});

/// Whether a masked value is worth masking everywhere (see `MIN_LEARNED_LEN`): not a
/// number, a common word, a placeholder, a path or a web address.
fn learnable(value: &str) -> bool {
    value.chars().count() >= MIN_LEARNED_LEN
        && !value.contains(MASK)
        && value.chars().any(char::is_alphanumeric)
        && !value
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+'))
        && !PLACEHOLDERS.iter().any(|p| value.eq_ignore_ascii_case(p))
        && !super::shapes::is_common_word(value)
        && !super::shapes::is_path(value)
        && !is_web_url(value)
}

/// `"authorization_endpoint":"https://as.example/authorize"` is masked where it stands (its
/// name says auth), but the address is no secret: the URL rules mask what in a URL is.
fn is_web_url(value: &str) -> bool {
    let head = value.get(..8).unwrap_or(value).to_ascii_lowercase();
    head.starts_with("http://") || head.starts_with("https://")
}

/// Remembers `value` (trimmed of spaces and quotes) as a secret a rule found, when it is
/// one worth remembering.
pub(super) fn learn(value: &str) {
    learn_as(value, false);
}

/// Remembers a configured secret (`Redactor::new`).
pub(super) fn learn_configured(value: &str) {
    learn_as(value, true);
}

fn learn_as(value: &str, configured: bool) {
    let value = value.trim().trim_matches(['"', '\'']).trim();
    if !learnable(value) {
        return;
    }
    let known = |r: &Registry| r.values.iter().any(|v| v.value == value);
    if known(&REGISTRY.read().unwrap_or_else(PoisonError::into_inner)) {
        return;
    }
    let mut registry = REGISTRY.write().unwrap_or_else(PoisonError::into_inner);
    if known(&registry) {
        return;
    }
    if registry.values.len() >= MAX_LEARNED {
        return;
    }
    registry.values.push(Learned {
        value: value.to_owned(),
        configured,
    });
    for form in forms(value) {
        if !registry.forms.contains(&form) {
            registry.forms.push(form);
        }
    }
    registry.forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
}

/// Learns what `rule` masked; a cookie list (`theme=dark; session=…`) also teaches each
/// of its values.
pub(super) fn learn_masked(rule: Rule, value: &str) {
    learn(value);
    if rule == Rule::HeaderLine && value.contains(';') {
        for pair in value.split(';') {
            if let Some((_, v)) = pair.split_once('=') {
                learn(v);
            }
        }
    }
}

/// The shapes a value takes elsewhere: bare, escaped inside a JSON string (and inside a
/// JSON string that is itself in one), percent-encoded (upper- and lower-case hex) and
/// form-encoded.
fn forms(value: &str) -> Vec<String> {
    let json = escape_json(value);
    let json_twice = escape_json(&json);
    let upper = percent_encode(value, false);
    let lower = percent_encode(value, true);
    let form = percent_encode(&value.replace(' ', "\u{0}"), false).replace("%00", "+");
    let mut out = vec![value.to_owned()];
    for f in [json, json_twice, upper, lower, form] {
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

fn escape_json(value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or_default()
        .to_owned()
}

/// Every byte but RFC 3986's unreserved characters as `%XX`.
fn percent_encode(value: &str, lower: bool) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else if lower {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `text` with every shape of every learned value masked, and how many were; `None` when
/// nothing was there to mask (the common case costs no copy).
pub(super) fn scrub(text: &str) -> Option<(String, usize)> {
    let registry = REGISTRY.read().unwrap_or_else(PoisonError::into_inner);
    let mut out: Option<String> = None;
    let mut n = 0;
    for form in &registry.forms {
        let current = out.as_deref().unwrap_or(text);
        let found = current.matches(form.as_str()).count();
        if found > 0 {
            n += found;
            out = Some(current.replace(form.as_str(), MASK));
        }
    }
    out.map(|s| (s, n))
}

/// The shapes the values rules learned after the first `from` take inside JSON text
/// (escaped once and twice), and how many values are learned now: what the history
/// rewrites in the rows it stored before it knew them. Configured secrets are left out:
/// the history scrubs them with its own redactor as it writes, and rewriting every row
/// for each at start would stall it.
pub fn json_forms_since(from: usize) -> (Vec<String>, usize) {
    let registry = REGISTRY.read().unwrap_or_else(PoisonError::into_inner);
    let mut out = Vec::new();
    for learned in registry.values.iter().skip(from).filter(|l| !l.configured) {
        let once = escape_json(&learned.value);
        let twice = escape_json(&once);
        out.push(once);
        if !out.contains(&twice) {
            out.push(twice);
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.len()));
    (out, registry.values.len())
}

/// How many values this process has learned.
pub fn learned_count() -> usize {
    REGISTRY
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .values
        .len()
}

#[cfg(test)]
#[path = "learned_tests.rs"]
mod tests;
