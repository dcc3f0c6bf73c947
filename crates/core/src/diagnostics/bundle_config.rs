//! The config as it goes into a bundle (`config.redacted.json`), allow-list first: only
//! the keys Lifeline knows (docs/config.md) keep their values, scrubbed; every other key
//! keeps its name and loses its value (`"auth": "***"`: importers copy other clients'
//! blocks, secrets included); in `oauth`, `clientSecret` is masked and only `clientId`,
//! `scopes` and `callbackPort` are shown. Env and header values are masked whole, the
//! URL is shown as `Redactor::url` shows it, and positional arguments are shown unless they
//! are a secret: after a secret flag, a connection string's password, or shaped like a
//! credential.

use crate::redact::{
    MASK, Redactor, Rule, connection_password, is_secret_flag, learn_secret, looks_like_credential,
};
use serde_json::{Map, Value};

/// The top-level keys Lifeline reads.
pub const TOP_KEYS: [&str; 2] = ["mcpServers", "lifeline"];

/// The keys of a server entry (`config::transport`, `config::policy`). `inheritEnv` is
/// the per-server switch of the stdio environment (issue 12, section 3).
pub const SERVER_KEYS: [&str; 15] = [
    "type",
    "protocol",
    "command",
    "args",
    "env",
    "inheritEnv",
    "cwd",
    "url",
    "headers",
    "disabled",
    "reconnect",
    "timeouts",
    "maxConcurrentCalls",
    "trust",
    "oauth",
];

/// The keys of `oauth` (`config::oauth`) whose values a bundle shows; `clientSecret`, the
/// other one, is masked like an unknown key.
pub const OAUTH_KEYS: [&str; 3] = ["clientId", "scopes", "callbackPort"];

/// The app's local HTTP endpoint, `lifeline.serve` (`config::ServeSettings`).
pub const SERVE_KEYS: [&str; 2] = ["enabled", "port"];

/// The keys of `lifeline` besides the policy: `serve`, and the aggregated endpoint's
/// `profiles` and `separator` (`config::profiles`), names and globs, no secrets.
pub const LIFELINE_KEYS: [&str; 3] = ["serve", "profiles", "separator"];

/// The keys of a profile (`config::Profile`).
pub const PROFILE_KEYS: [&str; 2] = ["servers", "tools"];

/// The supervisor settings, in `lifeline` and in a server entry (`config::policy`).
pub const POLICY_KEYS: [&str; 4] = ["reconnect", "timeouts", "maxConcurrentCalls", "trust"];

/// The keys of `reconnect` (`config::ReconnectConfig`).
pub const RECONNECT_KEYS: [&str; 5] = [
    "enabled",
    "initialDelayMs",
    "maxDelayMs",
    "maxAttempts",
    "quarantineMs",
];

/// The keys of `timeouts` (`config::Timeouts`).
pub const TIMEOUT_KEYS: [&str; 4] = [
    "establishMs",
    "requestMs",
    "pingIntervalMs",
    "pingTimeoutMs",
];

/// The config as written, allow-list first (see the module's doc).
pub fn redact_config(raw: &Value, redactor: &Redactor) -> Value {
    let Some(top) = raw.as_object() else {
        return unknown(raw, redactor);
    };
    let entries = top.iter().map(|(key, value)| {
        let shown = match key.as_str() {
            "mcpServers" => match value.as_object() {
                Some(servers) => Value::Object(
                    servers
                        .iter()
                        .map(|(name, entry)| (redactor.scrub(name), server(entry, redactor)))
                        .collect(),
                ),
                None => unknown(value, redactor),
            },
            "lifeline" => section(value, &POLICY_KEYS, redactor),
            _ => unknown(value, redactor),
        };
        (redactor.scrub(key), shown)
    });
    Value::Object(entries.collect())
}

/// A value under a key Lifeline does not know: masked whole, whatever it holds.
fn unknown(_value: &Value, redactor: &Redactor) -> Value {
    redactor.count(Rule::UnknownKey, 1);
    Value::String(MASK.into())
}

fn server(entry: &Value, redactor: &Redactor) -> Value {
    let Some(entry) = entry.as_object() else {
        return unknown(entry, redactor);
    };
    let shown = entry.iter().map(|(key, value)| {
        let shown = match key.as_str() {
            "args" => match value.as_array() {
                Some(args) => positional_args(args, redactor),
                None => scrub_json(value, redactor),
            },
            "env" => masked_values(value, Rule::EnvValue, redactor),
            "headers" => masked_values(value, Rule::HeaderValue, redactor),
            "url" => match value.as_str() {
                Some(url) => {
                    let shown = redactor.url(url);
                    Value::String(redactor.scrub(if shown.starts_with('(') { url } else { &shown }))
                }
                None => scrub_json(value, redactor),
            },
            "reconnect" => section(value, &RECONNECT_KEYS, redactor),
            "timeouts" => section(value, &TIMEOUT_KEYS, redactor),
            "oauth" => section(value, &OAUTH_KEYS, redactor),
            k if SERVER_KEYS.contains(&k) => scrub_json(value, redactor),
            _ => unknown(value, redactor),
        };
        (redactor.scrub(key), shown)
    });
    Value::Object(shown.collect())
}

/// An object of known keys (`lifeline`, `reconnect`, `timeouts`, `serve`): known keys
/// scrubbed, others masked; `reconnect`, `timeouts` and `serve` inside `lifeline` are
/// sections too.
fn section(value: &Value, keys: &[&str], redactor: &Redactor) -> Value {
    let Some(map) = value.as_object() else {
        return scrub_json(value, redactor);
    };
    let shown = map.iter().map(|(key, value)| {
        let shown = match key.as_str() {
            "reconnect" if keys == POLICY_KEYS => section(value, &RECONNECT_KEYS, redactor),
            "timeouts" if keys == POLICY_KEYS => section(value, &TIMEOUT_KEYS, redactor),
            // Only the `lifeline` block is read with POLICY_KEYS, and only it has `serve`,
            // `profiles` and `separator`.
            "serve" if keys == POLICY_KEYS => section(value, &SERVE_KEYS, redactor),
            "profiles" | "separator" if keys == POLICY_KEYS => scrub_json(value, redactor),
            k if keys.contains(&k) => scrub_json(value, redactor),
            _ => unknown(value, redactor),
        };
        (redactor.scrub(key), shown)
    });
    Value::Object(shown.collect())
}

/// `env` or `headers`: names kept, every value masked.
fn masked_values(value: &Value, rule: Rule, redactor: &Redactor) -> Value {
    let Some(map) = value.as_object() else {
        return unknown(value, redactor);
    };
    let mut out = Map::new();
    for name in map.keys() {
        redactor.count(rule, 1);
        out.insert(redactor.scrub(name), Value::String(MASK.into()));
    }
    Value::Object(out)
}

/// Positional arguments, shown unless they are a secret: the value of a secret flag
/// (`--token V`, `--api-key=V`, `-p V`), a high-entropy or token-shaped word; a
/// connection string keeps everything but its password. Everything else is scrubbed.
fn positional_args(args: &[Value], redactor: &Redactor) -> Value {
    let mut out = Vec::with_capacity(args.len());
    let mut after_secret_flag = false;
    for arg in args {
        let Some(s) = arg.as_str() else {
            after_secret_flag = false;
            out.push(scrub_json(arg, redactor));
            continue;
        };
        let is_flag = s.starts_with('-') && s.len() > 1;
        let shown = if std::mem::take(&mut after_secret_flag) && !is_flag {
            redactor.count(Rule::SecretArgument, 1);
            learn_secret(s);
            MASK.to_owned()
        } else if let Some((flag, value)) = s.split_once('=')
            && is_flag
            && is_secret_flag(flag)
        {
            if !value.is_empty() && value != MASK {
                redactor.count(Rule::SecretArgument, 1);
                learn_secret(value);
            }
            format!("{flag}={MASK}")
        } else if is_flag && is_secret_flag(s) {
            after_secret_flag = true;
            redactor.scrub(s)
        } else if connection_password(s).is_some() {
            // The URL rule masks the password and keeps the rest.
            redactor.scrub(s)
        } else if looks_like_credential(s) {
            redactor.count(Rule::HighEntropy, 1);
            learn_secret(s);
            MASK.to_owned()
        } else {
            redactor.scrub(s)
        };
        out.push(Value::String(shown));
    }
    Value::Array(out)
}

/// Every string (keys too) through the redactor.
pub(super) fn scrub_json(v: &Value, redactor: &Redactor) -> Value {
    match v {
        Value::String(s) => Value::String(redactor.scrub(s)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| scrub_json(i, redactor)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (redactor.scrub(k), scrub_json(v, redactor)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redacted(config: Value) -> Value {
        redact_config(&config, &Redactor::default())
    }

    #[test]
    fn unknown_keys_keep_their_names_and_lose_their_values() {
        let shown = redacted(json!({
            "mcpServers": {"gh": {
                "url": "https://h.example/mcp",
                "oauth": {"clientId": "id", "clientSecret": "cs-canary"},
                "auth": "tok-canary",
                "reconnect": {"maxAttempts": 3, "extra": "x-canary"},
            }},
            "lifeline": {"timeouts": {"requestMs": 1000, "other": 1}, "notes": "n-canary",
                         "serve": {"enabled": true, "port": 7424, "token": "t-canary"},
                         "profiles": {"coding": {"servers": ["gh"]}}, "separator": "__"},
            "x-my-notes": "keys Lifeline does not know",
        }));
        assert_eq!(
            shown,
            json!({
                "mcpServers": {"gh": {
                    "url": "https://h.example/mcp",
                    "oauth": {"clientId": "id", "clientSecret": "***"},
                    "auth": "***",
                    "reconnect": {"maxAttempts": 3, "extra": "***"},
                }},
                "lifeline": {"timeouts": {"requestMs": 1000, "other": "***"}, "notes": "***",
                             "serve": {"enabled": true, "port": 7424, "token": "***"},
                             "profiles": {"coding": {"servers": ["gh"]}}, "separator": "__"},
                "x-my-notes": "***",
            })
        );
    }

    #[test]
    fn known_keys_keep_their_scrubbed_values() {
        let shown = redacted(json!({"mcpServers": {"s": {
            "type": "stdio", "command": "npx", "cwd": "/srv", "disabled": false,
            "protocol": "auto", "maxConcurrentCalls": 2,
            "env": {"NODE_ENV": "production"}, "headers": {"X": "y"},
            "timeouts": {"requestMs": 5000},
        }}}));
        assert_eq!(
            shown,
            json!({"mcpServers": {"s": {
                "type": "stdio", "command": "npx", "cwd": "/srv", "disabled": false,
                "protocol": "auto", "maxConcurrentCalls": 2,
                "env": {"NODE_ENV": "***"}, "headers": {"X": "***"},
                "timeouts": {"requestMs": 5000},
            }}})
        );
    }

    #[test]
    fn positional_arguments_are_shown_unless_they_are_secrets() {
        let check = |args: Value, expect: Value| {
            let shown = redacted(json!({"mcpServers": {"s": {"command": "x", "args": args}}}));
            assert_eq!(shown["mcpServers"]["s"]["args"], expect);
        };
        check(
            json!([
                "-y",
                "@modelcontextprotocol/server-postgres",
                "postgresql://app:pw-c4nary@db:5432/app"
            ]),
            json!([
                "-y",
                "@modelcontextprotocol/server-postgres",
                "postgresql://app:***@db:5432/app"
            ]),
        );
        for flag in [
            "--pass",
            "-p",
            "--password",
            "--api-key",
            "--token",
            "--secret",
            "--key",
        ] {
            check(json!([flag, "v4lue", "next"]), json!([flag, "***", "next"]));
            check(
                json!([format!("{flag}=v4lue"), "next"]),
                json!([format!("{flag}=***"), "next"]),
            );
        }
        check(
            json!(["--token", "--verbose"]),
            json!(["--token", "--verbose"]),
        );
        check(
            json!([
                "--port",
                "8080",
                "Zk3xQ9mB7vR2tW5yL8nP4cD6",
                "/home/me/notes",
                "sk-abcdefghijklmnop"
            ]),
            json!(["--port", "8080", "***", "/home/me/notes", "***"]),
        );
    }

    #[test]
    fn urls_lose_credentials_and_credential_shaped_segments() {
        let shown = redacted(json!({"mcpServers": {"s": {
            "url": "https://u:p@h.example/mcp/Zk3xQ9mB7vR2tW5yL8nP4cD6/sse?key=k#f"
        }}}));
        assert_eq!(
            shown["mcpServers"]["s"]["url"],
            "https://h.example/mcp/***/sse?key=***"
        );
    }

    /// Every key docs/config.md documents is one this module knows, so a documented key's
    /// value is never masked as unknown (and a new key cannot be documented without being
    /// added here).
    #[test]
    fn every_documented_key_is_known() {
        let doc = include_str!("../../../../docs/config.md");
        let mut found = 0;
        for line in doc.lines() {
            let Some(cell) = line.strip_prefix("| `") else {
                continue;
            };
            let Some((key, _)) = cell.split_once("` |") else {
                continue;
            };
            if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
                continue;
            }
            found += 1;
            let known = match key.split_once('.') {
                Some(("reconnect", k)) => RECONNECT_KEYS.contains(&k),
                Some(("timeouts", k)) => TIMEOUT_KEYS.contains(&k),
                Some(("oauth", k)) => OAUTH_KEYS.contains(&k) || k == "clientSecret",
                Some(("serve", k)) => SERVE_KEYS.contains(&k),
                Some(("profiles", k)) => {
                    k == "P"
                        || k.strip_prefix("P.")
                            .is_some_and(|k| PROFILE_KEYS.contains(&k))
                }
                Some(_) => false,
                None => {
                    TOP_KEYS.contains(&key)
                        || SERVER_KEYS.contains(&key)
                        || LIFELINE_KEYS.contains(&key)
                }
            };
            assert!(
                known,
                "docs/config.md documents `{key}`, which bundle_config does not know"
            );
        }
        assert!(found >= 20, "only {found} keys found in docs/config.md");
    }
}
