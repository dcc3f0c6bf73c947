//! Reading JSON fields with their types and bounds checked. Each reader records a `Problem`
//! naming the field path, the value and the rule, and returns `None`, so a parse goes on and
//! reports everything wrong with a file at once. Values that may be secrets (strings) are
//! never quoted in a problem.

use super::error::Problem;
use serde_json::{Map, Value};

/// An inclusive range of integers and how to say it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound {
    pub lo: u64,
    pub hi: u64,
    /// Also allow 0, meaning "off".
    pub zero_is_off: bool,
    pub unit: &'static str,
}

impl Bound {
    pub const fn ms(lo: u64, hi: u64) -> Self {
        Bound {
            lo,
            hi,
            zero_is_off: false,
            unit: " ms",
        }
    }

    pub const fn count(lo: u64, hi: u64) -> Self {
        Bound {
            lo,
            hi,
            zero_is_off: false,
            unit: "",
        }
    }

    pub const fn or_off(self) -> Self {
        Bound {
            zero_is_off: true,
            ..self
        }
    }

    fn contains(&self, n: u64) -> bool {
        (self.zero_is_off && n == 0) || (self.lo..=self.hi).contains(&n)
    }

    pub fn describe(&self) -> String {
        let range = format!("between {} and {}{}", self.lo, self.hi, self.unit);
        if self.zero_is_off {
            format!("must be 0 (off) or {range}")
        } else {
            format!("must be {range}")
        }
    }
}

// The bounds of every policy number (docs/config.md copies this table).
pub(crate) const DELAY: Bound = Bound::ms(1, 3_600_000);
pub(crate) const ATTEMPTS: Bound = Bound::count(1, 1000);
pub(crate) const QUARANTINE: Bound = Bound::ms(1, 86_400_000);
pub(crate) const ESTABLISH: Bound = Bound::ms(1000, 600_000);
pub(crate) const REQUEST: Bound = Bound::ms(1000, 600_000);
pub(crate) const PING_INTERVAL: Bound = Bound::ms(1000, 3_600_000).or_off();
pub(crate) const PING_TIMEOUT: Bound = Bound::ms(100, 300_000);
pub(crate) const CONCURRENCY: Bound = Bound::count(1, 64);
pub(crate) const PORT: Bound = Bound::count(0, 65535);
pub(crate) const MAX_NAME_LEN: usize = 64;

/// "a string", "an object": how a JSON value's type is named in a problem.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "true/false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `parent.key`, quoting a key that would make the path ambiguous.
pub(crate) fn join(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let key = if plain {
        key.to_owned()
    } else {
        format!("{key:?}")
    };
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

pub(crate) fn wrong_type(field: &str, expected: &str, found: &Value) -> Problem {
    Problem::new(
        field,
        format!("expected {expected}, found {}", type_name(found)),
    )
}

pub(crate) fn object<'a>(
    v: &'a Value,
    field: &str,
    problems: &mut Vec<Problem>,
) -> Option<&'a Map<String, Value>> {
    let o = v.as_object();
    if o.is_none() {
        problems.push(wrong_type(field, "an object", v));
    }
    o
}

pub(crate) fn string<'a>(
    v: &'a Value,
    field: &str,
    problems: &mut Vec<Problem>,
) -> Option<&'a str> {
    let s = v.as_str();
    if s.is_none() {
        let hint = match v {
            // The value is not quoted: an env value is a secret, even a numeric one.
            Value::Number(_) | Value::Bool(_) => " (write it in quotes)",
            _ => "",
        };
        problems.push(Problem::new(
            field,
            format!("expected a string, found {}{hint}", type_name(v)),
        ));
    }
    s
}

pub(crate) fn boolean(v: &Value, field: &str, problems: &mut Vec<Problem>) -> Option<bool> {
    let b = v.as_bool();
    if b.is_none() {
        problems.push(wrong_type(field, "true or false", v));
    }
    b
}

pub(crate) fn array<'a>(
    v: &'a Value,
    field: &str,
    problems: &mut Vec<Problem>,
) -> Option<&'a [Value]> {
    let a = v.as_array().map(Vec::as_slice);
    if a.is_none() {
        problems.push(wrong_type(field, "an array", v));
    }
    a
}

/// A whole number within `bound`.
pub(crate) fn integer(
    v: &Value,
    field: &str,
    bound: Bound,
    problems: &mut Vec<Problem>,
) -> Option<u64> {
    let Value::Number(n) = v else {
        problems.push(wrong_type(field, "a number", v));
        return None;
    };
    match n.as_u64() {
        Some(u) if bound.contains(u) => Some(u),
        Some(_) => {
            problems.push(Problem::new(field, bound.describe()).with_value(n));
            None
        }
        None if n.is_i64() => {
            problems.push(Problem::new(field, bound.describe()).with_value(n));
            None
        }
        None => {
            problems.push(
                Problem::new(
                    field,
                    format!("must be a whole number; {}", bound.describe()),
                )
                .with_value(n),
            );
            None
        }
    }
}

/// Why a server name is not allowed, if it is not.
pub(crate) fn check_name(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a server name must not be empty".to_owned());
    }
    if name.chars().count() > MAX_NAME_LEN {
        return Some(format!(
            "a server name must be at most {MAX_NAME_LEN} characters (this one has {})",
            name.chars().count()
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Some("a server name may contain only letters, digits, `-`, `_` and `.`".to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check_integer(v: Value, bound: Bound, expect: Result<u64, &str>) {
        let mut problems = Vec::new();
        let got = integer(&v, "f", bound, &mut problems);
        match expect {
            Ok(n) => assert_eq!((got, problems), (Some(n), vec![]), "{v}"),
            Err(msg) => {
                assert_eq!(got, None, "{v}");
                assert_eq!(problems.len(), 1, "{v}");
                assert_eq!(problems[0].to_string(), msg, "{v}");
            }
        }
    }

    #[test]
    fn integers_are_checked_against_their_bound() {
        check_integer(json!(1), DELAY, Ok(1));
        check_integer(json!(3_600_000), DELAY, Ok(3_600_000));
        check_integer(
            json!(0),
            DELAY,
            Err("f = 0: must be between 1 and 3600000 ms"),
        );
        check_integer(
            json!(-5),
            DELAY,
            Err("f = -5: must be between 1 and 3600000 ms"),
        );
        check_integer(
            json!(1.5),
            DELAY,
            Err("f = 1.5: must be a whole number; must be between 1 and 3600000 ms"),
        );
        check_integer(
            json!("5"),
            DELAY,
            Err("f: expected a number, found a string"),
        );
        check_integer(json!(0), PING_INTERVAL, Ok(0));
        check_integer(
            json!(999),
            PING_INTERVAL,
            Err("f = 999: must be 0 (off) or between 1000 and 3600000 ms"),
        );
        check_integer(
            json!(65),
            CONCURRENCY,
            Err("f = 65: must be between 1 and 64"),
        );
    }

    #[test]
    fn paths_quote_keys_that_would_be_ambiguous() {
        assert_eq!(join("", "mcpServers"), "mcpServers");
        assert_eq!(join("mcpServers", "git-hub.v2"), "mcpServers.git-hub.v2");
        assert_eq!(join("mcpServers", "my server"), r#"mcpServers."my server""#);
        assert_eq!(join("env", ""), r#"env."""#);
    }

    #[test]
    fn server_names() {
        let check = |name: &str, ok: bool| assert_eq!(check_name(name).is_none(), ok, "{name}");
        check("github", true);
        check("a-b_c.d9", true);
        check(&"x".repeat(64), true);
        check(&"x".repeat(65), false);
        check("", false);
        check("my server", false);
        check("ünï", false);
        check("a/b", false);
    }

    #[test]
    fn type_errors_name_the_expected_type() {
        let mut p = Vec::new();
        string(&json!(3000), "env.PORT", &mut p);
        boolean(&json!("yes"), "disabled", &mut p);
        array(&json!("a b"), "args", &mut p);
        object(&json!([]), "env", &mut p);
        let lines: Vec<String> = p.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "env.PORT: expected a string, found a number (write it in quotes)",
                "disabled: expected true or false, found a string",
                "args: expected an array, found a string",
                "env: expected an object, found an array",
            ]
        );
    }
}
