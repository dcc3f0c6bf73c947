//! The one place secrets are scrubbed from free text (child stderr, server error messages,
//! anything a peer wrote) and from URLs. A value is masked when the config holds it as a
//! secret, and, whether configured or not, when it has a secret's shape: the userinfo
//! password of a URL or connection string of any scheme, a URL path segment or query value
//! (`url`), a secret-named argument, JSON field or header line (`fields`), a known token
//! prefix or a JWT (`shapes`). Every rule that fires is counted, so a diagnostic bundle can
//! say what was removed without saying what it was. docs/bundle.md lists the rules.
//!
//! What a rule masks, and every configured secret, is also learned (`learned`): from then
//! on every scrub of this process masks that value in any shape, wherever it turns up.

mod fields;
mod learned;
mod secret;
mod shapes;
mod url;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use fields::is_secret_name;
pub use fields::{is_secret_flag, scrub_args, secret_argument_values};
pub use learned::{MAX_LEARNED, MIN_LEARNED_LEN, json_forms_since, learned_count};
pub use secret::Secret;
pub use shapes::{looks_like_credential, looks_like_secret};
pub use url::connection_password;

pub const MASK: &str = "***";

/// Values shorter than this are not scrubbed as literals: masking every "1" or "on" would
/// destroy messages and protect nothing.
const MIN_SECRET_LEN: usize = 4;

/// Why something was masked. The names are part of the bundle's manifest (docs/bundle.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// A value the config holds as a secret (header, env, `${…}` expansion, URL part).
    ConfiguredSecret,
    /// A header value in a config being exported.
    HeaderValue,
    /// An env value in a config being exported.
    EnvValue,
    /// The user name and password of a URL, the password of a connection string.
    UrlUserinfo,
    /// The value of a URL query parameter or fragment parameter (its key is kept).
    UrlQueryValue,
    /// A URL path segment shaped like a credential (a key in the path).
    UrlPathSegment,
    /// The value of a secret-named argument or assignment (`--token=…`, `API_KEY=…`).
    SecretArgument,
    /// The value of a secret-named JSON field (`"password":"…"`, `"client_secret":"…"`).
    JsonField,
    /// The value of a credential header line (`Cookie: …`, `X-Api-Key: …`).
    HeaderLine,
    /// Whatever follows `Bearer` or `Basic`.
    AuthScheme,
    /// A JSON Web Token.
    Jwt,
    /// A word with a well-known key prefix (`sk-`, `ghp_`, `xoxb-`, `AKIA`, …).
    KeyPrefix,
    /// A high-entropy positional argument in a config being exported.
    HighEntropy,
    /// The value of a key Lifeline does not know, in a config being exported.
    UnknownKey,
    /// A value an earlier scrub learned was a secret (any rule above), wherever it turns
    /// up later: bare, inside a JSON string or URL-encoded.
    LearnedSecret,
}

const RULES: [Rule; 15] = [
    Rule::ConfiguredSecret,
    Rule::HeaderValue,
    Rule::EnvValue,
    Rule::UrlUserinfo,
    Rule::UrlQueryValue,
    Rule::UrlPathSegment,
    Rule::SecretArgument,
    Rule::JsonField,
    Rule::HeaderLine,
    Rule::AuthScheme,
    Rule::Jwt,
    Rule::KeyPrefix,
    Rule::HighEntropy,
    Rule::UnknownKey,
    Rule::LearnedSecret,
];

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::ConfiguredSecret => "configured_secret",
            Rule::HeaderValue => "header_value",
            Rule::EnvValue => "env_value",
            Rule::UrlUserinfo => "url_userinfo",
            Rule::UrlQueryValue => "url_query_value",
            Rule::UrlPathSegment => "url_path_segment",
            Rule::SecretArgument => "secret_argument",
            Rule::JsonField => "json_field",
            Rule::HeaderLine => "header_line",
            Rule::AuthScheme => "auth_scheme",
            Rule::Jwt => "jwt",
            Rule::KeyPrefix => "key_prefix",
            Rule::HighEntropy => "high_entropy",
            Rule::UnknownKey => "unknown_key",
            Rule::LearnedSecret => "learned_secret",
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
    /// A redactor of these configured secrets. Each is also learned (`learned`), so every
    /// other redactor of this process masks it too.
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let secrets: Vec<String> = secrets.into_iter().map(Into::into).collect();
        for s in &secrets {
            learned::learn_configured(s);
        }
        Redactor {
            secrets: literals(secrets),
            counts: Arc::default(),
        }
    }

    /// Adds another redactor's secrets; the counts stay this one's.
    pub fn add(&mut self, other: &Redactor) {
        let mut all = std::mem::take(&mut self.secrets);
        all.extend(other.secrets.iter().cloned());
        self.secrets = literals(all);
    }

    /// `v` with every string in it, keys too, scrubbed (`scrub`); its structure untouched.
    pub fn scrub_value(&self, v: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::String(s) => Value::String(self.scrub(s)),
            Value::Array(a) => a.iter().map(|x| self.scrub_value(x)).collect(),
            Value::Object(o) => o
                .iter()
                .map(|(k, x)| (self.scrub(k), self.scrub_value(x)))
                .collect(),
            other => other.clone(),
        }
    }

    /// Scrubs configured secrets, then URLs and connection strings, bare query and
    /// fragment parameters, header lines, JSON fields, secret-named arguments and token
    /// shapes, and last every learned secret: those the rules just learned too, since a
    /// value may also stand bare earlier in the same text. Learned ones go last so that a
    /// value a rule finds is counted under that rule.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            let n = out.matches(s.as_str()).count();
            if n > 0 {
                out = out.replace(s.as_str(), MASK);
                self.count(Rule::ConfiguredSecret, n);
            }
        }
        let fired = &mut |r, value: &str| self.fired(r, value);
        let out = url::scrub_urls(&out, fired);
        let out = url::scrub_bare_params(&out, fired);
        let out = fields::scrub_header_lines(&out, fired);
        let out = fields::scrub_json_fields(&out, fired);
        let out = fields::scrub_arguments(&out, fired);
        let out = shapes::scrub_token_shapes(&out, fired);
        self.scrub_learned(out)
    }

    fn scrub_learned(&self, text: String) -> String {
        match learned::scrub(&text) {
            Some((out, n)) => {
                self.count(Rule::LearnedSecret, n);
                out
            }
            None => text,
        }
    }

    /// A URL as it may be shown: scheme, host, port and path, with a path segment shaped
    /// like a credential masked; no userinfo; query keys with their values masked; no
    /// fragment. A connection string of another scheme keeps its user name and loses its
    /// password. Anything unparsable is not shown at all.
    pub fn url(&self, url: &str) -> String {
        url::shown_url(url, &mut |r, value| self.fired(r, value))
    }

    /// A URL's path as it may be shown: segments shaped like a credential masked.
    pub fn url_path(&self, path: &str) -> String {
        url::mask_path(path, &mut |r, value| self.fired(r, value))
    }

    /// A rule masked `value`: counted, and learned (`learned`) so that every later scrub
    /// masks it wherever it stands.
    fn fired(&self, rule: Rule, value: &str) {
        self.count(rule, 1);
        learned::learn_masked(rule, value);
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

/// Learns the secrets in `text` (what the rules would mask), without counting anything:
/// a bundle reads everything it will hold through this before it writes a file, so a
/// value learned from the last stderr file is masked in the config too.
pub fn learn_from(text: &str) {
    let _ = Redactor::default().scrub(text);
}

/// Learns one value known to be a secret (a positional argument after `--token`), so
/// every later scrub of this process masks it.
pub fn learn_secret(value: &str) {
    learned::learn(value);
}

/// `text` with every learned secret masked, and nothing else changed: for what was
/// scrubbed before the value was learned (history rows, events as they are published).
pub fn scrub_learned(text: &str) -> String {
    match learned::scrub(text) {
        Some((out, _)) => out,
        None => text.to_owned(),
    }
}

/// The values of an environment that are secrets, for the redactor: a value whose
/// variable is named like a secret (`API_TOKEN`), a value that looks like one (see
/// `looks_like_secret`: `NODE_ENV=production` is not), and the password of a connection
/// string. Masking every "production" in a tool result would protect nothing.
pub fn env_secrets<'a>(env: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, value) in env {
        if (fields::is_secret_name(name) && shapes::could_be_named_secret(value))
            || looks_like_secret(value)
        {
            out.push(value.to_owned());
        }
        out.extend(connection_password(value).map(str::to_owned));
    }
    out
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
