//! Variable expansion in config values: `${env:NAME}` and `${NAME}` both read the variable
//! NAME from a lookup (the process environment in production, a map in tests);
//! `${keyring:NAME}` reads the secret NAME from a secret lookup (Lifeline's secret store,
//! `crate::secrets`, in production).
//!
//! There is no escape: a `$` not followed by `{` is kept as it is, `$${A}` is a `$` followed
//! by the value of A, and a `${` without a closing `}` is an error. The substituted text is
//! not expanded again, so a value that must contain `${` can be passed through a variable.

use std::fmt;

/// Where variable values come from: `std::env::var` in production.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Where `${keyring:NAME}` values come from: the value, or why there is none (a message
/// that names the secret and says how to store it, never a value).
pub type SecretLookup<'a> = &'a dyn Fn(&str) -> Result<String, String>;

/// How references are expanded while reading one entry.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub lookup: Lookup<'a>,
    pub secrets: SecretLookup<'a>,
    /// When false (the server is disabled), a reference that cannot be expanded is left as
    /// written instead of being a problem: a server can be turned off because its token is
    /// not available here. The variable must be set before the server is enabled.
    pub strict: bool,
}

/// The lookup a running program uses: the process environment.
pub fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A value after expansion, and the variable and keyring values that went into it. Those
/// values are treated as secrets: a token is often passed as `${env:TOKEN}` in an argument or
/// a URL, and everything from the keychain is one.
#[derive(Clone, PartialEq, Eq)]
pub struct Expanded {
    pub value: String,
    pub substituted: Vec<String>,
}

impl fmt::Debug for Expanded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expanded")
            .field("n_substituted", &self.substituted.len())
            .finish_non_exhaustive()
    }
}

/// Why a reference could not be expanded. Display is the message for one field's problem;
/// it names the variable or the reference, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// The variable is not defined.
    Undefined { name: String, reference: String },
    /// `${…}` with something inside that is not a variable name.
    Unsupported { reference: String },
    /// `${` with no `}` after it.
    Unclosed,
    /// `${keyring:NAME}` whose secret is not stored or cannot be read; `why` says which.
    Secret { reference: String, why: String },
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpandError::Undefined { name, reference } => write!(
                f,
                "variable {name} (from `{reference}`) is not set; set it in the environment \
                 Lifeline runs in, or write the value here"
            ),
            ExpandError::Unsupported { reference } if reference.starts_with("${input:") => write!(
                f,
                "`{reference}` is a VS Code prompt input, which Lifeline cannot ask for; put the \
                 value in an environment variable and write ${{env:NAME}}"
            ),
            ExpandError::Unsupported { reference } if reference.contains(":-") => write!(
                f,
                "`{reference}`: defaults in references are not supported; only ${{env:NAME}} \
                 and ${{NAME}} are"
            ),
            ExpandError::Unsupported { reference } => write!(
                f,
                "`{reference}` is not a variable reference Lifeline understands; only \
                 ${{env:NAME}} and ${{NAME}} (NAME made of letters, digits and _) and \
                 ${{keyring:NAME}} (letters, digits, _, - and .) are"
            ),
            ExpandError::Unclosed => f.write_str("`${` has no closing `}`"),
            ExpandError::Secret { reference, why } => write!(f, "`{reference}`: {why}"),
        }
    }
}

/// Expands every reference in `input`; `${keyring:NAME}` is an error (no secret store).
pub fn expand(input: &str, lookup: Lookup) -> Result<Expanded, Vec<ExpandError>> {
    expand_with(input, lookup, &no_secrets)
}

/// The secret lookup where there is no store: every `${keyring:…}` is an error.
pub fn no_secrets(name: &str) -> Result<String, String> {
    Err(format!(
        "there is no secret store here to read the secret {name} from"
    ))
}

/// Expands every reference in `input`, `${keyring:NAME}` from `secrets`. Every failing
/// reference is reported, not just the first.
pub fn expand_with(
    input: &str,
    lookup: Lookup,
    secrets: SecretLookup,
) -> Result<Expanded, Vec<ExpandError>> {
    let mut value = String::with_capacity(input.len());
    let mut substituted = Vec::new();
    let mut errors = Vec::new();
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        value.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            errors.push(ExpandError::Unclosed);
            rest = "";
            break;
        };
        let inner = &after[..end];
        // What is inside a reference is a name, but whatever a person pasted there must
        // not be quoted back if it has a token's shape.
        let reference = crate::redact::Redactor::default().scrub(&format!("${{{inner}}}"));
        if let Some(name) = inner.strip_prefix("keyring:") {
            if crate::secrets::check_name(name).is_some() {
                errors.push(ExpandError::Unsupported { reference });
            } else {
                match secrets(name) {
                    Ok(v) => {
                        value.push_str(&v);
                        substituted.push(v);
                    }
                    Err(why) => errors.push(ExpandError::Secret { reference, why }),
                }
            }
            rest = &after[end + 1..];
            continue;
        }
        let name = inner.strip_prefix("env:").unwrap_or(inner);
        if !is_variable_name(name) {
            errors.push(ExpandError::Unsupported { reference });
        } else if let Some(v) = lookup(name) {
            value.push_str(&v);
            substituted.push(v);
        } else {
            errors.push(ExpandError::Undefined {
                name: name.to_owned(),
                reference,
            });
        }
        rest = &after[end + 1..];
    }
    value.push_str(rest);
    if errors.is_empty() {
        Ok(Expanded { value, substituted })
    } else {
        Err(errors)
    }
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("tok-123".into()),
            "HOME" => Some("/home/me".into()),
            "EMPTY" => Some(String::new()),
            "NESTED" => Some("${TOKEN}".into()),
            _ => None,
        }
    }

    fn check(input: &str, expect: Result<&str, &str>) {
        let got = expand(input, &lookup).map(|e| e.value).map_err(|errs| {
            errs.iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(" | ")
        });
        match (got, expect) {
            (Ok(v), Ok(want)) => assert_eq!(v, want, "{input}"),
            (Err(e), Err(want)) => assert!(e.contains(want), "{input}: {e}"),
            (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn both_syntaxes_expand() {
        check("${env:TOKEN}", Ok("tok-123"));
        check("${TOKEN}", Ok("tok-123"));
        check("Bearer ${env:TOKEN}", Ok("Bearer tok-123"));
        check(
            "${HOME}/bin:${env:HOME}/.local",
            Ok("/home/me/bin:/home/me/.local"),
        );
        check("${EMPTY}x", Ok("x"));
        check("plain", Ok("plain"));
        check("", Ok(""));
    }

    #[test]
    fn a_literal_dollar_is_kept_and_there_is_no_escape() {
        check("$TOKEN", Ok("$TOKEN"));
        check("a$b$", Ok("a$b$"));
        check("$${TOKEN}", Ok("$tok-123"));
        check("{TOKEN}", Ok("{TOKEN}"));
    }

    #[test]
    fn substituted_text_is_not_expanded_again() {
        check("${NESTED}", Ok("${TOKEN}"));
    }

    #[test]
    fn undefined_and_unsupported_references_are_errors() {
        check(
            "${MISSING}",
            Err("variable MISSING (from `${MISSING}`) is not set"),
        );
        check(
            "${env:MISSING}",
            Err("variable MISSING (from `${env:MISSING}`)"),
        );
        check("${input:api-key}", Err("VS Code prompt input"));
        check(
            "${API_KEY:-x}",
            Err("defaults in references are not supported"),
        );
        check("${}", Err("`${}` is not a variable reference"));
        check("${env:}", Err("`${env:}` is not a variable reference"));
        check("${1X}", Err("`${1X}` is not a variable reference"));
        check("abc ${TOKEN", Err("has no closing"));
        check("${A_1} ${B_2}", Err("A_1 (from `${A_1}`) is not set"));
        check("${A_1} ${B_2}", Err("B_2 (from `${B_2}`) is not set"));
    }

    fn secrets(name: &str) -> Result<String, String> {
        match name {
            "gh.token" => Ok("CANARY-kr-1".into()),
            _ => Err(format!(
                "there is no secret {name}; `lifeline secrets set {name}`"
            )),
        }
    }

    #[test]
    fn keyring_references_read_the_secret_store() {
        let e =
            expand_with("Bearer ${keyring:gh.token} ${TOKEN}", &lookup, &secrets).expect("expands");
        assert_eq!(e.value, "Bearer CANARY-kr-1 tok-123");
        assert_eq!(
            e.substituted,
            vec!["CANARY-kr-1".to_owned(), "tok-123".to_owned()]
        );
        let errs = expand_with("${keyring:NOPE} ${keyring:a b}", &lookup, &secrets).unwrap_err();
        let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown[0],
            "`${keyring:NOPE}`: there is no secret NOPE; `lifeline secrets set NOPE`"
        );
        assert!(
            shown[1].contains("is not a variable reference"),
            "{}",
            shown[1]
        );
        // Without a store, a keyring reference is an error, never the text as written.
        let errs = expand("${keyring:gh.token}", &lookup).unwrap_err();
        assert!(
            errs[0].to_string().contains("no secret store"),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn substituted_values_are_reported() {
        let e = expand("${TOKEN}:${HOME}", &lookup).expect("expands");
        assert_eq!(
            e.substituted,
            vec!["tok-123".to_owned(), "/home/me".to_owned()]
        );
        assert!(!format!("{e:?}").contains("tok-123"));
    }
}
