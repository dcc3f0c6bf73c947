//! Secrets that a name announces: command-line arguments (`--token=…`, `--api-key V`,
//! `GITHUB_TOKEN=V`), JSON fields (`{"password":"…"}`, `"client_secret": "…"`, any key
//! ending in `_key`, `_secret` or `_token`) and header lines (`Cookie: …`,
//! `X-Api-Key: …`, `Authorization: Bearer …`, which keeps its scheme). The name stays,
//! the value goes.

use super::shapes::{looks_like_credential, looks_like_secret};
use super::url::connection_password;
use super::{MASK, Redactor, Rule, learn_secret};
use regex::{Captures, Regex};
use std::sync::LazyLock;

/// Whether an argument, variable, field or header name says its value is a secret:
/// `--token`, `--api-key`, `--pass`, `GITHUB_TOKEN`, `client_secret`, `clientSecret`,
/// `password`, `Authorization`, `Cookie`, `ssh_key`.
pub(super) fn is_secret_name(name: &str) -> bool {
    let name = kebab(name.trim_start_matches('-'));
    ["key", "pass", "pwd", "cookie", "set-cookie"].contains(&name.as_str())
        || name.ends_with("-key")
        || [
            "token",
            "secret",
            "passw",
            "auth",
            "credential",
            "api-key",
            "apikey",
            "access-key",
            "private-key",
        ]
        .iter()
        .any(|w| name.contains(w))
}

/// `clientSecret`, `CLIENT_SECRET` and `client-secret` all as `client-secret`.
fn kebab(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            out.push('-');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(if c == '_' {
            '-'
        } else {
            c.to_ascii_lowercase()
        });
    }
    out
}

/// A JSON string field, compact or spaced: `"name": "value"` (escapes allowed in the value).
static JSON_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""([A-Za-z0-9_.\-]{1,64})"(\s*:\s*)"((?:[^"\\]|\\.)*)""#).expect("a regex")
});

/// The same field inside a JSON string (`{\"password\":\"…\"}`), as a message that quotes
/// a JSON document shows it.
static ESCAPED_JSON_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\\"([A-Za-z0-9_.\-]{1,64})\\"(\s*:\s*)\\"((?:[^"\\]|\\[^"])*)\\""#)
        .expect("a regex")
});

/// A header line: the name at the start of a line (after the `> ` or `< ` of a verbose
/// HTTP client, or `-H '`), a colon, and the value up to the end of the line.
static HEADER_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?m)^([ \t>*<]*(?:-H[ \t]*)?['"]?)([A-Za-z][A-Za-z0-9\-]{1,63})([ \t]*:[ \t]*)([^\r\n]*)"#,
    )
    .expect("a regex")
});

/// A cookie anywhere in a line (`… Cookie: a=1; session=…`): its value is a list of
/// pairs, so the rest of the line (or of the quoted string) goes.
static COOKIE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b((?:set-)?cookie[ \t]*:[ \t]*)([^\r\n"\\]+)"#).expect("a regex")
});

/// Masks the value of every secret-named JSON string field, escaped or not.
pub(super) fn scrub_json_fields(text: &str, fired: &mut dyn FnMut(Rule, &str)) -> String {
    if !text.contains('"') {
        return text.to_owned();
    }
    let mut replace = |quote: &str, c: &Captures| -> String {
        let (name, separator, value) = (&c[1], &c[2], &c[3]);
        if is_secret_name(name) && !value.is_empty() && value != MASK {
            fired(Rule::JsonField, &json_unescaped(value));
            format!("{quote}\"{name}{quote}\"{separator}{quote}\"{MASK}{quote}\"")
        } else {
            c[0].to_owned()
        }
    };
    let text = ESCAPED_JSON_FIELD.replace_all(text, |c: &Captures| replace("\\", c));
    JSON_FIELD
        .replace_all(&text, |c: &Captures| replace("", c))
        .into_owned()
}

/// A JSON string's content as the value it stands for (`a\"b` is `a"b`); as written when
/// it does not parse.
fn json_unescaped(content: &str) -> String {
    serde_json::from_str::<String>(&format!("\"{content}\"")).unwrap_or_else(|_| content.to_owned())
}

/// Whether a header's value is a credential: `Cookie`, `Set-Cookie`, `Authorization`,
/// and any hyphenated name that says so (`X-Api-Key`, `Proxy-Authorization`,
/// `X-Auth-Token`). A plain word at the start of a line ("Token: expired") is prose.
fn is_secret_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["authorization", "cookie", "set-cookie", "apikey"].contains(&lower.as_str())
        || (lower.contains('-') && is_secret_name(&lower))
}

/// Masks the value of a credential header line to its end; `Authorization: Bearer …`
/// keeps its scheme.
pub(super) fn scrub_header_lines(text: &str, fired: &mut dyn FnMut(Rule, &str)) -> String {
    if !text.contains(':') {
        return text.to_owned();
    }
    let text = HEADER_LINE.replace_all(text, |c: &Captures| {
        let (lead, name, separator, value) = (&c[1], &c[2], &c[3], &c[4]);
        if !is_secret_header(name) {
            return c[0].to_owned();
        }
        let (scheme, credential) = match value.split_once(char::is_whitespace) {
            Some((s, rest)) if is_auth_scheme(s) => (format!("{s} "), rest.trim_start()),
            _ => (String::new(), value),
        };
        if credential.is_empty() || credential == MASK {
            return c[0].to_owned();
        }
        fired(Rule::HeaderLine, credential);
        format!("{lead}{name}{separator}{scheme}{MASK}")
    });
    COOKIE
        .replace_all(&text, |c: &Captures| {
            if c[2].trim() == MASK {
                return c[0].to_owned();
            }
            fired(Rule::HeaderLine, &c[2]);
            format!("{}{MASK}", &c[1])
        })
        .into_owned()
}

fn is_auth_scheme(word: &str) -> bool {
    ["bearer", "basic", "token", "digest", "negotiate"]
        .iter()
        .any(|s| word.eq_ignore_ascii_case(s))
}

/// Masks the value of `--token=VALUE`, `API_KEY=VALUE` and the word after `--api-key`. A
/// word may be quoted or bracketed (`"--token=VALUE"`, as a program echoes its arguments).
pub(super) fn scrub_arguments(text: &str, fired: &mut dyn FnMut(Rule, &str)) -> String {
    let mut out = String::with_capacity(text.len());
    let mut mask_next = false;
    for piece in text.split_inclusive(char::is_whitespace) {
        let word = piece.trim_end_matches(char::is_whitespace);
        let space = &piece[word.len()..];
        if word.is_empty() {
            out.push_str(space);
            continue;
        }
        let (open, inner, close) = unquote(word);
        let is_flag = inner.starts_with('-') && inner.len() > 1;
        out.push_str(open);
        if mask_next && !is_flag {
            // `Authorization: Bearer VALUE`: the scheme stays, the value goes.
            let is_scheme = is_auth_scheme(inner);
            if is_scheme || inner == MASK {
                out.push_str(inner);
            } else {
                fired(Rule::SecretArgument, inner);
                out.push_str(MASK);
            }
            mask_next = is_scheme;
        } else {
            mask_next =
                (is_flag && !inner.contains('=') && is_secret_name(inner)) || is_secret_label(word);
            match inner.split_once('=') {
                Some((name, value))
                    if !value.is_empty()
                        && value != MASK
                        && is_plain_name(name)
                        && is_secret_name(name) =>
                {
                    fired(Rule::SecretArgument, value);
                    out.push_str(name);
                    out.push('=');
                    out.push_str(MASK);
                }
                _ => out.push_str(inner),
            }
        }
        out.push_str(close);
        out.push_str(space);
    }
    out
}

/// `X-Api-Key:`, `Authorization:`, `"password":`: a header line or a JSON key whose value
/// follows. Plain words ending in a colon ("credentials:") are prose, not labels: only
/// quoted keys, names with `-` or `_`, and a few well-known names count.
fn is_secret_label(word: &str) -> bool {
    let Some(label) = word.strip_suffix(':') else {
        return false;
    };
    let quoted = label.starts_with('"') || label.starts_with('\'');
    let label = label.trim_matches(['"', '\'', '{', '[', ',']);
    let known = [
        "authorization",
        "token",
        "password",
        "passwd",
        "secret",
        "apikey",
        "cookie",
    ]
    .iter()
    .any(|k| label.eq_ignore_ascii_case(k));
    is_plain_name(label) && is_secret_name(label) && (quoted || known || label.contains(['-', '_']))
}

/// Splits the quotes and brackets around a word from the word.
fn unquote(word: &str) -> (&str, &str, &str) {
    let quotes = ['"', '\'', '`', '(', '[', '{', ')', ']', '}', ',', ';'];
    let inner = word.trim_start_matches(quotes);
    let open = &word[..word.len() - inner.len()];
    let trimmed = inner.trim_end_matches(quotes);
    let close = &inner[trimmed.len()..];
    (open, trimmed, close)
}

/// The values in an argument list the redactor should scrub wherever they turn up: those
/// of secret-named arguments (`--token=V`, `--api-key V`), of `-p V` when V looks like a
/// secret, the password of a connection string, and any argument shaped like a credential.
pub fn secret_argument_values(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut next_is_secret = false;
    let mut next_may_be_secret = false;
    for arg in args {
        let is_flag = arg.starts_with('-') && arg.len() > 1;
        if !is_flag && (next_is_secret || (next_may_be_secret && looks_like_secret(arg))) {
            out.push(arg.clone());
        }
        next_is_secret = is_flag && !arg.contains('=') && is_secret_name(arg);
        next_may_be_secret = arg == "-p";
        if let Some((name, value)) = arg.split_once('=')
            && is_plain_name(name)
            && is_secret_name(name)
            && !value.is_empty()
        {
            out.push(value.to_owned());
        }
        out.extend(connection_password(arg).map(str::to_owned));
        if looks_like_credential(arg) {
            out.push(arg.clone());
        }
    }
    out
}

/// A flag or variable name, not a URL or an expression that happens to hold `=`.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

/// Words that make a command-line flag's value a secret (`--token=…`, `--api-key …`).
const SECRET_FLAG_WORDS: [&str; 7] = [
    "token",
    "secret",
    "password",
    "passwd",
    "key",
    "auth",
    "credential",
];

fn names_a_secret(flag: &str) -> bool {
    let name = flag.trim_start_matches('-').to_ascii_lowercase();
    flag.starts_with('-')
        && (SECRET_FLAG_WORDS.iter().any(|w| name.contains(w)) || is_secret_name(flag))
}

/// Whether the value of this flag (`--flag=V` or the next argument) is a secret in an
/// exported config: any flag named like a secret (`--pass`, `--password`, `--api-key`,
/// `--token`, `--secret`, `--key`, `--auth-header`), and `-p`, which is a password as often
/// as a port.
pub fn is_secret_flag(flag: &str) -> bool {
    flag == "-p" || names_a_secret(flag)
}

/// A command line safe to show: configured secrets and token shapes scrubbed, and the value
/// of a flag named like a secret (`--token=…`, `--api-key …`, `-p` is left alone) masked.
pub fn scrub_args(args: &[String], redactor: &Redactor) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut mask_next = false;
    for arg in args {
        if std::mem::take(&mut mask_next) && !arg.starts_with('-') {
            learn_secret(arg);
            out.push(MASK.to_owned());
            continue;
        }
        match arg.split_once('=') {
            Some((flag, value)) if names_a_secret(flag) => {
                learn_secret(value);
                out.push(format!("{flag}={MASK}"));
            }
            Some(_) => out.push(redactor.scrub(arg)),
            None => {
                mask_next = names_a_secret(arg);
                out.push(redactor.scrub(arg));
            }
        }
    }
    out
}
