//! The one place secrets are scrubbed from free text (child stderr, server error messages,
//! anything a peer wrote) and from URLs: every configured secret value; URLs re-rendered
//! allow-list first (scheme, host, port, path and query keys survive; userinfo and query
//! values do not); the values of secret-named arguments (`--token=…`, `--api-key VALUE`);
//! and the shapes of common tokens (Bearer credentials, JWTs, well-known key prefixes),
//! whether or not they were configured. Every rule that fires is counted, so a diagnostic
//! bundle can say what was removed without saying what it was.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub const MASK: &str = "***";

/// Values shorter than this are not scrubbed as literals: masking every "1" or "on" would
/// destroy messages and protect nothing.
const MIN_SECRET_LEN: usize = 4;

const KEY_PREFIXES: [&str; 12] = [
    "sk-",
    "sk_live_",
    "sk_test_",
    "pk_live_",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "glpat-",
    "AKIA",
];

/// Why something was masked. The names are part of the bundle's manifest (docs/bundle.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// A value the config holds as a secret (header, env, `${…}` expansion, URL part).
    ConfiguredSecret,
    /// A header value in a config being exported.
    HeaderValue,
    /// An env value in a config being exported.
    EnvValue,
    /// The user name and password of a URL.
    UrlUserinfo,
    /// The value of a URL query parameter (its key is kept).
    UrlQueryValue,
    /// The value of a secret-named argument or assignment (`--token=…`, `API_KEY=…`).
    SecretArgument,
    /// Whatever follows `Bearer` or `Basic`.
    AuthScheme,
    /// A JSON Web Token.
    Jwt,
    /// A word with a well-known key prefix (`sk-`, `ghp_`, `xoxb-`, `AKIA`, …).
    KeyPrefix,
}

const RULES: [Rule; 9] = [
    Rule::ConfiguredSecret,
    Rule::HeaderValue,
    Rule::EnvValue,
    Rule::UrlUserinfo,
    Rule::UrlQueryValue,
    Rule::SecretArgument,
    Rule::AuthScheme,
    Rule::Jwt,
    Rule::KeyPrefix,
];

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::ConfiguredSecret => "configured_secret",
            Rule::HeaderValue => "header_value",
            Rule::EnvValue => "env_value",
            Rule::UrlUserinfo => "url_userinfo",
            Rule::UrlQueryValue => "url_query_value",
            Rule::SecretArgument => "secret_argument",
            Rule::AuthScheme => "auth_scheme",
            Rule::Jwt => "jwt",
            Rule::KeyPrefix => "key_prefix",
        }
    }
}

/// How often each rule fired, shared by every clone of one `Redactor`.
#[derive(Default)]
struct Counts([AtomicU64; RULES.len()]);

/// Replaces secrets in text. Cheap to clone (clones share their counts); built from the
/// values a connection was configured with (header values, env values, URL parts).
#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, so a secret that contains another is replaced whole.
    secrets: Vec<String>,
    counts: Arc<Counts>,
}

impl fmt::Debug for Redactor {
    /// The secrets themselves never print: only how many there are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.len())
            .finish_non_exhaustive()
    }
}

impl Redactor {
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Redactor {
            secrets: literals(secrets.into_iter().map(Into::into).collect()),
            counts: Arc::default(),
        }
    }

    /// Adds another redactor's secrets; the counts stay this one's.
    pub fn add(&mut self, other: &Redactor) {
        let mut all = std::mem::take(&mut self.secrets);
        all.extend(other.secrets.iter().cloned());
        self.secrets = literals(all);
    }

    /// Scrubs configured secrets, then URLs, secret-named arguments and token shapes.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            let n = out.matches(s.as_str()).count();
            if n > 0 {
                out = out.replace(s.as_str(), MASK);
                self.count(Rule::ConfiguredSecret, n);
            }
        }
        let out = scrub_urls(&out, &mut |r| self.count(r, 1));
        let out = scrub_arguments(&out, &mut |r| self.count(r, 1));
        scrub_token_shapes(&out, &mut |r| self.count(r, 1))
    }

    /// A URL as it may be shown: scheme, host, port and path; no userinfo; query keys with
    /// their values masked; no fragment. Anything unparsable is not shown at all.
    pub fn url(&self, url: &str) -> String {
        shown_url(url, &mut |r| self.count(r, 1))
    }

    /// Records that `rule` masked `n` values elsewhere (a header value in an exported config).
    pub fn count(&self, rule: Rule, n: usize) {
        let i = RULES.iter().position(|r| *r == rule).unwrap_or(0);
        self.counts.0[i].fetch_add(n as u64, Ordering::Relaxed);
    }

    /// How often each rule fired so far, by rule name; rules that never fired are left out.
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        RULES
            .iter()
            .zip(&self.counts.0)
            .map(|(r, c)| (r.as_str(), c.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// The configured values worth scrubbing, longest first, with the words of each: a header
/// value such as "Bearer abc" also leaks as "abc" alone.
fn literals(mut secrets: Vec<String>) -> Vec<String> {
    secrets.retain(|s| s.len() >= MIN_SECRET_LEN);
    let parts: Vec<String> = secrets
        .iter()
        .flat_map(|s| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|p| p.len() >= MIN_SECRET_LEN)
        .collect();
    secrets.extend(parts);
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    secrets
}

/// See `Redactor::url`; `fired` hears each rule that masked something.
fn shown_url(url: &str, fired: &mut dyn FnMut(Rule)) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return "(not a valid URL)".to_owned();
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        fired(Rule::UrlUserinfo);
        let _ = parsed.set_username("");
        let _ = parsed.set_password(None);
    }
    if let Some(query) = parsed.query() {
        let masked: Vec<String> = query
            .split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) => {
                    if v != MASK {
                        fired(Rule::UrlQueryValue);
                    }
                    format!("{k}={MASK}")
                }
                None => kv.to_owned(),
            })
            .collect();
        parsed.set_query(Some(&masked.join("&")));
    }
    parsed.set_fragment(None);
    parsed.to_string()
}

/// Re-renders every `http://` or `https://` URL in free text through `shown_url`. A URL
/// ends at whitespace or at a character that closes a quotation.
fn scrub_urls(text: &str, fired: &mut dyn FnMut(Rule)) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = find_url(rest) {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .unwrap_or(rest.len());
        let (url, trailing) = split_trailing_punctuation(&rest[..end]);
        if url.contains(['@', '?']) {
            let shown = shown_url(url, fired);
            out.push_str(if shown.starts_with('(') { MASK } else { &shown });
        } else {
            out.push_str(url);
        }
        out.push_str(trailing);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Where the first `http://` or `https://` (any case) starts. Found through `://`, so long
/// text with many URLs is scanned once, not once per URL.
fn find_url(text: &str) -> Option<usize> {
    text.match_indices("://").find_map(|(i, _)| {
        let before = &text.as_bytes()[..i];
        [b"https".as_slice(), b"http".as_slice()]
            .into_iter()
            .find(|scheme| {
                before.len() >= scheme.len()
                    && before[before.len() - scheme.len()..].eq_ignore_ascii_case(scheme)
            })
            .map(|scheme| i - scheme.len())
    })
}

/// A sentence's closing punctuation is not part of the URL it ends with.
fn split_trailing_punctuation(url: &str) -> (&str, &str) {
    let cut = url.trim_end_matches(['.', ',', ';', ')', ']', '}']).len();
    url.split_at(cut)
}

/// Whether an argument or variable name says its value is a secret: `--token`,
/// `--api-key`, `GITHUB_TOKEN`, `client_secret`, `password`, `Authorization`.
fn is_secret_name(name: &str) -> bool {
    let name = name
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('_', "-");
    name == "key"
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

/// Masks the value of `--token=VALUE`, `API_KEY=VALUE` and the word after `--api-key`. A
/// word may be quoted or bracketed (`"--token=VALUE"`, as a program echoes its arguments).
fn scrub_arguments(text: &str, fired: &mut dyn FnMut(Rule)) -> String {
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
            let is_scheme = ["bearer", "basic", "token", "digest"]
                .iter()
                .any(|s| inner.eq_ignore_ascii_case(s));
            if is_scheme || inner == MASK {
                out.push_str(inner);
            } else {
                fired(Rule::SecretArgument);
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
                    fired(Rule::SecretArgument);
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

/// The values of secret-named arguments in an argument list (`--token=V`, `--api-key V`),
/// for the redactor to scrub wherever else they turn up.
pub fn secret_argument_values(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut next_is_secret = false;
    for arg in args {
        let is_flag = arg.starts_with('-') && arg.len() > 1;
        if next_is_secret && !is_flag {
            out.push(arg.clone());
        }
        next_is_secret = is_flag && !arg.contains('=') && is_secret_name(arg);
        if let Some((name, value)) = arg.split_once('=')
            && is_plain_name(name)
            && is_secret_name(name)
            && !value.is_empty()
        {
            out.push(value.to_owned());
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

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '+' | '/' | '=')
}

fn token_rule(word: &str) -> Option<Rule> {
    if word.starts_with("eyJ") && word.matches('.').count() == 2 && word.len() > 20 {
        return Some(Rule::Jwt);
    }
    KEY_PREFIXES
        .iter()
        .any(|p| word.starts_with(p) && word.len() >= p.len() + 8)
        .then_some(Rule::KeyPrefix)
}

/// Masks token-shaped words and whatever follows "Bearer " or "Basic ".
fn scrub_token_shapes(text: &str, fired: &mut dyn FnMut(Rule)) -> String {
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
                fired(rule);
                out.push_str(MASK);
            }
            None => out.push_str(word),
        }
        mask_next = word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("basic");
        rest = &rest[end..];
    }
    out
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

fn is_secret_flag(flag: &str) -> bool {
    let name = flag.trim_start_matches('-').to_ascii_lowercase();
    flag.starts_with('-') && SECRET_FLAG_WORDS.iter().any(|w| name.contains(w))
}

/// A command line safe to show: configured secrets and token shapes scrubbed, and the value
/// of a flag named like a secret (`--token=…`, `--api-key …`, `-p` is left alone) masked.
pub fn scrub_args(args: &[String], redactor: &Redactor) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut mask_next = false;
    for arg in args {
        if std::mem::take(&mut mask_next) && !arg.starts_with('-') {
            out.push(MASK.to_owned());
            continue;
        }
        match arg.split_once('=') {
            Some((flag, _)) if is_secret_flag(flag) => out.push(format!("{flag}={MASK}")),
            Some(_) => out.push(redactor.scrub(arg)),
            None => {
                mask_next = is_secret_flag(arg);
                out.push(redactor.scrub(arg));
            }
        }
    }
    out
}

/// Caps a message at `max` bytes on a character boundary, saying that it was cut.
pub fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes cut)", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_named_like_secrets_lose_their_values() {
        let check = |args: &[&str], expect: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            assert_eq!(
                scrub_args(&args, &Redactor::new(["hunter2-canary"])),
                expect
            );
        };
        check(&["--token=abc", "--port=80"], &["--token=***", "--port=80"]);
        check(&["--api-key", "abc", "x"], &["--api-key", "***", "x"]);
        check(&["--password", "--verbose"], &["--password", "--verbose"]);
        check(&["-p", "8080", "hunter2-canary"], &["-p", "8080", "***"]);
        check(
            &["--db=postgres://u:hunter2-canary@h"],
            &["--db=postgres://u:***@h"],
        );
    }

    fn check(secrets: &[&str], input: &str, expect: &str) {
        assert_eq!(
            Redactor::new(secrets.iter().copied()).scrub(input),
            expect,
            "{input}"
        );
    }

    #[test]
    fn configured_secrets_and_their_parts() {
        check(
            &["CANARY-1234"],
            "token CANARY-1234 leaked",
            "token *** leaked",
        );
        check(&["Bearer CANARY-xyz"], "got CANARY-xyz", "got ***");
        check(
            &["abc"],
            "abc is too short to mask",
            "abc is too short to mask",
        );
        check(&["CANARY-12", "CANARY-1234"], "CANARY-1234", "***");
    }

    #[test]
    fn token_shapes_without_configuration() {
        check(
            &[],
            "Authorization: Bearer abcdef123456",
            "Authorization: Bearer ***",
        );
        check(&[], "key sk-abcdefghijklmnop here", "key *** here");
        check(&[], "ghp_0123456789abcdef", "***");
        check(&[], "xoxb-123456789012-abc", "***");
        check(
            &[],
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
            "jwt ***",
        );
        check(
            &[],
            "connection refused (os error 111)",
            "connection refused (os error 111)",
        );
        check(&[], "sk-short", "sk-short");
    }

    #[test]
    fn urls_keep_scheme_host_port_path_and_query_keys() {
        let check = |url: &str, expect: &str| {
            assert_eq!(Redactor::default().url(url), expect, "{url}");
        };
        check("https://h.example/mcp", "https://h.example/mcp");
        check(
            "https://u:p@h.example:8443/a/b?k=v&x=y&flag#frag",
            "https://h.example:8443/a/b?k=***&x=***&flag",
        );
        check("http://user@127.0.0.1:9/", "http://127.0.0.1:9/");
        check("not a url", "(not a valid URL)");
    }

    #[test]
    fn urls_in_free_text_are_rerendered() {
        check(
            &[],
            "GET https://u:CANARYpw@h.example/mcp?sig=abc&k=v failed.",
            "GET https://h.example/mcp?sig=***&k=*** failed.",
        );
        check(
            &[],
            "see \"http://h/x?a=1\" (and http://h/plain)",
            "see \"http://h/x?a=***\" (and http://h/plain)",
        );
        check(
            &[],
            "ftp://a?b=1 then HTTPS://h/p?q=2",
            "ftp://a?b=1 then https://h/p?q=***",
        );
    }

    #[test]
    fn secret_named_arguments_lose_their_values() {
        check(
            &[],
            "run --token=abc123 --port=80",
            "run --token=*** --port=80",
        );
        check(&[], "run --api-key abc123 -v", "run --api-key *** -v");
        check(&[], "GITHUB_TOKEN=abc123 npx x", "GITHUB_TOKEN=*** npx x");
        check(&[], "--password\tp4ss\n", "--password\t***\n");
        check(&[], "--verbose value", "--verbose value");
        check(&[], "a == b", "a == b");
        check(&[], "--api-key --other", "--api-key --other");
        check(&[], "--token  two-spaces", "--token  ***");
        check(
            &[],
            "unknown argument \"--token=abc123\", (--api-key abc)",
            "unknown argument \"--token=***\", (--api-key ***)",
        );
        check(
            &[],
            "X-Api-Key: abc123 Authorization: Basic dXNlcjpw {\"password\": \"hunter2\", \"n\": 1}",
            "X-Api-Key: *** Authorization: Basic *** {\"password\": \"***\", \"n\": 1}",
        );
        check(
            &[],
            "needs valid credentials: check the Authorization header",
            "needs valid credentials: check the Authorization header",
        );
        let args: Vec<String> = ["run", "--token=t1", "--api-key", "k2", "-v", "--port=1"]
            .map(String::from)
            .to_vec();
        assert_eq!(secret_argument_values(&args), ["t1", "k2"]);
    }

    #[test]
    fn rules_that_fired_are_counted_across_clones() {
        let r = Redactor::new(["CANARY-secret"]);
        let clone = r.clone();
        clone.scrub("CANARY-secret and CANARY-secret, Bearer abcdefgh");
        r.scrub("https://u:p@h/?a=1&b=2 --token=x");
        let counts = r.counts();
        assert_eq!(counts.get("configured_secret"), Some(&2));
        assert_eq!(counts.get("auth_scheme"), Some(&1));
        assert_eq!(counts.get("url_userinfo"), Some(&1));
        assert_eq!(counts.get("url_query_value"), Some(&2));
        assert_eq!(counts.get("secret_argument"), Some(&1));
        assert_eq!(counts.get("jwt"), None);
    }

    #[test]
    fn debug_never_shows_the_secrets() {
        let debug = format!("{:?}", Redactor::new(["CANARY-dbg-1"]));
        assert!(!debug.contains("CANARY"), "{debug}");
    }

    #[test]
    fn cap_cuts_on_a_char_boundary() {
        assert_eq!(cap("abc", 10), "abc");
        assert_eq!(cap("ééé", 3), "é… (4 bytes cut)");
    }
}
