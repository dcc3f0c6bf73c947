//! The one place secrets are scrubbed from free text (child stderr, server error messages,
//! anything a peer wrote): every configured secret value, and the shapes of common tokens
//! (Bearer credentials, JWTs, well-known key prefixes), whether or not they were configured.

/// Replaces secrets in text. Cheap to clone; built from the values a connection was
/// configured with (header values, env values).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Longest first, so a secret that contains another is replaced whole.
    secrets: Vec<String>,
}

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

impl Redactor {
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .map(Into::into)
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        // A header value such as "Bearer abc" also leaks as "abc" alone.
        let parts: Vec<String> = secrets
            .iter()
            .flat_map(|s| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .filter(|p| p.len() >= MIN_SECRET_LEN)
            .collect();
        secrets.extend(parts);
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    pub fn add(&mut self, other: &Redactor) {
        let mut all = std::mem::take(&mut self.secrets);
        all.extend(other.secrets.iter().cloned());
        *self = Redactor::new(all);
    }

    /// Scrubs configured secrets, then token shapes.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), MASK);
            }
        }
        scrub_token_shapes(&out)
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '+' | '/' | '=')
}

fn looks_like_token(word: &str) -> bool {
    let is_jwt = word.starts_with("eyJ") && word.matches('.').count() == 2 && word.len() > 20;
    let has_prefix = KEY_PREFIXES
        .iter()
        .any(|p| word.starts_with(p) && word.len() >= p.len() + 8);
    is_jwt || has_prefix
}

/// Masks token-shaped words and whatever follows "Bearer " or "Basic ".
fn scrub_token_shapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut mask_next = false;
    while !rest.is_empty() {
        let start = rest.find(is_token_char).unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(|c| !is_token_char(c)).unwrap_or(rest.len());
        let word = &rest[..end];
        if word.is_empty() {
            break;
        }
        if (mask_next && word.len() >= MIN_SECRET_LEN) || looks_like_token(word) {
            out.push_str(MASK);
        } else {
            out.push_str(word);
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
    fn cap_cuts_on_a_char_boundary() {
        assert_eq!(cap("abc", 10), "abc");
        assert_eq!(cap("ééé", 3), "é… (4 bytes cut)");
    }
}
