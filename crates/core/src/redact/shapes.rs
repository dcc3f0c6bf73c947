//! What a secret looks like without being configured: a well-known key prefix, a JWT, a
//! high-entropy token (in URL paths and arguments, where a random word is a key more often
//! than not), and the test an env value passes to become a secret scrubbed everywhere.

use super::{MASK, MIN_SECRET_LEN, Rule};

/// A key prefix and how many characters must follow it. Prefixes that begin ordinary
/// identifiers too (`hf_hub_download`, `npm_config_cache`) need a token's full length of
/// letters and digits after them.
struct Prefix {
    prefix: &'static str,
    min_rest: usize,
    /// The rest must be letters and digits only.
    alphanumeric: bool,
}

const fn loose(prefix: &'static str) -> Prefix {
    Prefix {
        prefix,
        min_rest: 8,
        alphanumeric: false,
    }
}

const fn strict(prefix: &'static str, min_rest: usize) -> Prefix {
    Prefix {
        prefix,
        min_rest,
        alphanumeric: true,
    }
}

const KEY_PREFIXES: [Prefix; 21] = [
    loose("sk-ant-"),
    loose("sk-"),
    loose("sk_live_"),
    loose("sk_test_"),
    loose("pk_live_"),
    loose("rk_live_"),
    loose("rk_test_"),
    loose("ghp_"),
    loose("gho_"),
    loose("ghs_"),
    loose("ghu_"),
    loose("ghr_"),
    loose("github_pat_"),
    loose("xoxb-"),
    loose("xoxp-"),
    loose("xoxa-"),
    loose("glpat-"),
    loose("AKIA"),
    // Google API keys: `AIza` and 35 characters of `[A-Za-z0-9_-]`.
    Prefix {
        prefix: "AIza",
        min_rest: 30,
        alphanumeric: false,
    },
    strict("hf_", 30),
    strict("npm_", 30),
];

/// Words that configure rather than authenticate: an env value equal to one of these is
/// never a secret, whatever its variable is called.
const COMMON_WORDS: [&str; 24] = [
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "none",
    "null",
    "production",
    "development",
    "staging",
    "test",
    "testing",
    "debug",
    "info",
    "warn",
    "error",
    "trace",
    "enabled",
    "disabled",
    "default",
    "local",
    "localhost",
    "bearer",
];

pub(super) fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '+' | '/' | '=')
}

/// The rule a word's shape alone triggers: a JWT or a known key prefix.
pub(super) fn token_rule(word: &str) -> Option<Rule> {
    if word.starts_with("eyJ") && word.matches('.').count() == 2 && word.len() > 20 {
        return Some(Rule::Jwt);
    }
    KEY_PREFIXES
        .iter()
        .any(|p| {
            word.strip_prefix(p.prefix).is_some_and(|rest| {
                rest.len() >= p.min_rest
                    && (!p.alphanumeric || rest.chars().all(|c| c.is_ascii_alphanumeric()))
            })
        })
        .then_some(Rule::KeyPrefix)
}

/// Masks token-shaped words and whatever follows "Bearer " or "Basic ".
pub(super) fn scrub_token_shapes(text: &str, fired: &mut dyn FnMut(Rule, &str)) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut mask_next = false;
    while !rest.is_empty() {
        let start = rest.find(is_token_char).unwrap_or(rest.len());
        // Only the word right after "Bearer " is its credential: "Bearer ***, next" is done.
        if !rest[..start].chars().all(char::is_whitespace) {
            mask_next = false;
        }
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(|c| !is_token_char(c)).unwrap_or(rest.len());
        let word = &rest[..end];
        if word.is_empty() {
            break;
        }
        let rule = if mask_next && word.len() >= MIN_SECRET_LEN {
            Some(Rule::AuthScheme)
        } else {
            token_rule(word)
        };
        match rule {
            Some(rule) => {
                fired(rule, word);
                out.push_str(MASK);
            }
            None => out.push_str(word),
        }
        mask_next = word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("basic");
        rest = &rest[end..];
    }
    out
}

/// Whether a word (a URL path segment, a positional argument) is shaped like a
/// credential: a known token shape, or a long random-looking string.
pub fn looks_like_credential(word: &str) -> bool {
    word != MASK && (token_rule(word).is_some() || is_high_entropy(word))
}

/// A random-looking string: at least 16 characters with no spaces, letters and digits
/// mixed inside one part (`a1b2…`, a UUID, base64), varied enough (Shannon entropy of at
/// least 3 bits a character), and not a path. Words joined by `-`, `_` or `.`
/// (`server-filesystem`, `v2-release-2024`) are not random; 40 characters of anything
/// but a path are.
pub(super) fn is_high_entropy(word: &str) -> bool {
    let n = word.chars().count();
    if n < 16 || !word.chars().all(is_token_char) || is_path(word) {
        return false;
    }
    if n >= 40 && !is_wordy(word) {
        return true;
    }
    let digits = word.chars().filter(char::is_ascii_digit).count();
    let letters = word.chars().filter(char::is_ascii_alphabetic).count();
    digits >= 2 && letters >= 2 && !is_wordy(word) && entropy(word) >= 3.0
}

/// Shannon entropy in bits per character.
fn entropy(word: &str) -> f64 {
    let mut counts = [0u32; 128];
    let mut n = 0u32;
    for b in word.bytes() {
        counts[usize::from(b & 0x7f)] += 1;
        n += 1;
    }
    let n = f64::from(n.max(1));
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Made of words: every part between `-`, `_`, `.`, `:` or `/` is a lower-case,
/// Capitalized or UPPER-CASE word, a number, or at most 3 characters (`v2`, `eu`).
fn is_wordy(value: &str) -> bool {
    value
        .split(['-', '_', '.', ':', '/', '@', ' '])
        .all(|part| {
            let letters = part.chars().all(|c| c.is_ascii_alphabetic());
            let cased = part.chars().skip(1).all(|c| c.is_ascii_lowercase())
                || part.chars().all(|c| c.is_ascii_uppercase());
            part.len() <= 3 || part.chars().all(|c| c.is_ascii_digit()) || (letters && cased)
        })
}

/// A filesystem path: absolute, home- or dot-relative, or with a drive letter.
pub(super) fn is_path(value: &str) -> bool {
    value.starts_with(['/', '~', '\\'])
        || value.starts_with("./")
        || value.starts_with("../")
        || (value.len() > 2
            && value.as_bytes()[0].is_ascii_alphabetic()
            && value[1..].starts_with([':'])
            && value[2..].starts_with(['\\', '/']))
}

/// Whether an env value is worth scrubbing everywhere: at least 8 characters and not a
/// common word, a number, a path or words joined by separators (`production`, `true`,
/// `3000`, `/usr/bin`, `us-east-1`). Scrubbing those would blank out tool results and
/// protect nothing.
pub fn looks_like_secret(value: &str) -> bool {
    value.len() >= 8
        && !is_common_word(value)
        && !is_number(value)
        && !is_path(value)
        && !is_wordy(value)
}

/// Whether the value of a variable named like a secret (`PASSWORD`, `API_TOKEN`) is
/// scrubbed: anything of 4 characters or more that is not a common word.
pub(super) fn could_be_named_secret(value: &str) -> bool {
    value.len() >= MIN_SECRET_LEN && !is_common_word(value)
}

pub(super) fn is_common_word(value: &str) -> bool {
    COMMON_WORDS.iter().any(|w| value.eq_ignore_ascii_case(w))
}

fn is_number(value: &str) -> bool {
    let v = value.trim_start_matches(['-', '+']);
    !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.')
}
