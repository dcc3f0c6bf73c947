//! Loading a whole file: defaults, overrides, every problem collected with its field path,
//! expansion in every field, secrets. Shared helpers for the other files' tests.

use super::*;
use serde_json::{Value, json};
use std::time::Duration;

/// Variables every test can use.
pub(super) fn lookup(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("CANARY-token-1234".into()),
        "HOST" => Some("mcp.example.com".into()),
        "BIN" => Some("/opt/bin".into()),
        "DIR" => Some("/srv/work".into()),
        "ARG" => Some("CANARY-arg-5678".into()),
        _ => None,
    }
}

pub(super) fn parse_value(v: &Value) -> Result<Config, ConfigError> {
    from_value(v.clone(), Some(PathBuf::from("/c/config.json")), &lookup)
}

/// The problems a file has, one line each; empty when it loads.
pub(super) fn problems(v: Value) -> Vec<String> {
    match parse_value(&v) {
        Ok(_) => Vec::new(),
        Err(e) => e.problems.iter().map(ToString::to_string).collect(),
    }
}

pub(super) fn check(v: Value, expect: &[&str]) {
    assert_eq!(problems(v.clone()), expect, "{v}");
}

pub(super) fn loaded(v: Value) -> Config {
    parse_value(&v).unwrap_or_else(|e| panic!("{v}: {e}"))
}

fn stdio(v: Value) -> Value {
    json!({ "mcpServers": { "x": v } })
}

#[test]
fn an_empty_file_has_no_servers_and_the_design_defaults() {
    let c = loaded(json!({}));
    assert!(c.servers.is_empty());
    let d = &c.defaults;
    assert_eq!(d.reconnect.initial_delay, Duration::from_millis(500));
    assert_eq!(d.reconnect.max_delay, Duration::from_secs(30));
    assert_eq!(d.reconnect.max_attempts, 10);
    assert!(d.reconnect.enabled);
    assert_eq!(
        d.reconnect.quarantine,
        [30, 60, 120].map(Duration::from_secs)
    );
    assert_eq!(d.timeouts.establish, Duration::from_secs(60));
    assert_eq!(d.timeouts.request, Duration::from_secs(60));
    assert_eq!(d.timeouts.ping_interval, Some(Duration::from_secs(30)));
    assert_eq!(d.timeouts.ping_timeout, Duration::from_secs(10));
    assert_eq!(d.max_concurrent_calls, 4);
    assert_eq!(d, &ServerPolicy::default());
}

#[test]
fn servers_keep_file_order_and_inherit_the_defaults() {
    let c = loaded(json!({ "mcpServers": {
        "zeta": { "command": "z" },
        "alpha": { "url": "https://a.example/mcp" },
        "mid": { "type": "sse", "url": "http://127.0.0.1:9/sse" },
    }}));
    let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha", "mid"]);
    let kinds: Vec<&str> = c.servers.iter().map(|s| s.transport.kind()).collect();
    assert_eq!(kinds, ["stdio", "http", "sse"]);
    assert!(
        c.servers
            .iter()
            .all(|s| s.policy == ServerPolicy::default() && !s.disabled)
    );
}

#[test]
fn per_server_values_override_the_global_ones_field_by_field() {
    let c = loaded(json!({
        "lifeline": {
            "reconnect": { "initialDelayMs": 1000, "maxAttempts": 5 },
            "timeouts": { "requestMs": 120000 },
            "maxConcurrentCalls": 8
        },
        "mcpServers": {
            "plain": { "command": "a" },
            "tuned": { "command": "b",
                "reconnect": { "maxAttempts": 3, "enabled": false, "quarantineMs": [1, 2, 3] },
                "timeouts": { "pingIntervalMs": 0, "establishMs": 5000 },
                "maxConcurrentCalls": 1 }
        }
    }));
    let global = &c.defaults;
    assert_eq!(global.reconnect.initial_delay, Duration::from_secs(1));
    assert_eq!(global.reconnect.max_attempts, 5);
    assert_eq!(global.reconnect.max_delay, Duration::from_secs(30));
    assert_eq!(global.timeouts.request, Duration::from_secs(120));
    assert_eq!(global.max_concurrent_calls, 8);
    assert_eq!(&c.servers[0].policy, global);

    let tuned = &c.servers[1].policy;
    assert_eq!(
        tuned.reconnect.initial_delay,
        Duration::from_secs(1),
        "from lifeline"
    );
    assert_eq!(tuned.reconnect.max_attempts, 3);
    assert!(!tuned.reconnect.enabled);
    assert_eq!(
        tuned.reconnect.quarantine,
        [1, 2, 3].map(Duration::from_millis)
    );
    assert_eq!(
        tuned.timeouts.request,
        Duration::from_secs(120),
        "from lifeline"
    );
    assert_eq!(tuned.timeouts.establish, Duration::from_secs(5));
    assert_eq!(tuned.timeouts.ping_interval, None);
    assert_eq!(tuned.max_concurrent_calls, 1);
}

#[test]
fn the_transport_follows_type_or_what_is_given() {
    check(
        stdio(json!({ "command": "a", "url": "http://h/" })),
        &["mcpServers.x: has both `command` and `url`; set `type` to stdio, http or sse"],
    );
    check(
        stdio(json!({})),
        &["mcpServers.x: needs `command` (a stdio server) or `url` (an http or sse server)"],
    );
    check(
        stdio(json!({ "type": "ws", "url": "ws://h/" })),
        &[r#"mcpServers.x.type = "ws": must be one of stdio, http, sse"#],
    );
    check(
        stdio(json!({ "type": "stdio", "command": "a", "url": "ignored" })),
        &[],
    );
    check(
        stdio(json!({ "type": "http" })),
        &["mcpServers.x.url: is required for an http or sse server"],
    );
    check(
        stdio(json!({ "type": "stdio" })),
        &["mcpServers.x.command: is required for a stdio server"],
    );
    check(
        stdio(json!({ "command": "  " })),
        &["mcpServers.x.command: must not be empty"],
    );
    check(
        stdio(json!({ "command": "a", "cwd": "" })),
        &["mcpServers.x.cwd: must not be empty; leave it out instead"],
    );
}

#[test]
fn urls_must_be_http() {
    let url = |u: &str| problems(stdio(json!({ "url": u })));
    assert_eq!(url("https://h.example/mcp"), Vec::<String>::new());
    assert_eq!(url("http://127.0.0.1:8080"), Vec::<String>::new());
    assert_eq!(
        url("ftp://h/"),
        ["mcpServers.x.url: must be an http:// or https:// URL, not ftp:"]
    );
    assert_eq!(
        url("unix:///tmp/s.sock"),
        ["mcpServers.x.url: must be an http:// or https:// URL, not unix:"]
    );
    assert_eq!(
        url("h.example/mcp"),
        ["mcpServers.x.url: is not a valid URL (relative URL without a base)"]
    );
    assert_eq!(
        url("http://"),
        ["mcpServers.x.url: is not a valid URL (empty host)"]
    );
}

#[test]
fn server_names_are_checked() {
    check(
        json!({ "mcpServers": { "my server": { "command": "a" } } }),
        &[
            r#"mcpServers."my server": a server name may contain only letters, digits, `-`, `_` and `.`"#,
        ],
    );
    check(
        json!({ "mcpServers": { "": { "command": "a" } } }),
        &[r#"mcpServers."": a server name must not be empty"#],
    );
    let long = "n".repeat(65);
    assert_eq!(
        problems(json!({ "mcpServers": { long.clone(): { "command": "a" } } })),
        [format!(
            "mcpServers.{long}: a server name must be at most 64 characters (this one has 65)"
        )]
    );
    check(
        json!({ "mcpServers": { "n".repeat(64): { "command": "a" } } }),
        &[],
    );
}

#[test]
fn wrong_types_name_the_field_and_the_expected_type() {
    check(
        json!([]),
        &[r#"the file must hold an object such as {"mcpServers": {}}, not an array"#],
    );
    check(
        json!({ "mcpServers": [] }),
        &["mcpServers: expected an object, found an array"],
    );
    check(
        json!({ "lifeline": 3 }),
        &["lifeline: expected an object, found a number"],
    );
    check(
        json!({ "mcpServers": { "x": "npx" } }),
        &["mcpServers.x: expected an object, found a string"],
    );
    check(
        stdio(json!({
            "command": ["npx"], "args": "a b", "env": { "PORT": 3000, "OK": "1" }, "cwd": 1,
            "disabled": "no", "reconnect": [], "timeouts": { "requestMs": "60s" },
            "maxConcurrentCalls": null,
        })),
        &[
            "mcpServers.x.disabled: expected true or false, found a string",
            "mcpServers.x.command: expected a string, found an array",
            "mcpServers.x.args: expected an array, found a string",
            "mcpServers.x.env.PORT: expected a string, found a number (write it in quotes)",
            "mcpServers.x.cwd: expected a string, found a number (write it in quotes)",
            "mcpServers.x.reconnect: expected an object, found an array",
            "mcpServers.x.timeouts.requestMs: expected a number, found a string",
            "mcpServers.x.maxConcurrentCalls: expected a number, found null",
        ],
    );
    check(
        stdio(json!({ "url": "http://h/", "headers": ["a"] })),
        &["mcpServers.x.headers: expected an object, found an array"],
    );
    check(
        stdio(json!({ "command": "a", "args": ["ok", 2] })),
        &["mcpServers.x.args[1]: expected a string, found a number (write it in quotes)"],
    );
    check(
        stdio(json!({ "command": "a", "inheritEnv": "yes" })),
        &["mcpServers.x.inheritEnv: expected true or false, found a string"],
    );
}

#[test]
fn a_stdio_server_inherits_the_whole_environment_only_when_it_says_so() {
    let inherits = |entry: Value| {
        loaded(stdio(entry)).servers[0]
            .stdio_config()
            .expect("a stdio server")
            .inherit_env
    };
    assert!(!inherits(json!({ "command": "a" })));
    assert!(!inherits(json!({ "command": "a", "inheritEnv": false })));
    assert!(inherits(json!({ "command": "a", "inheritEnv": true })));
}

#[test]
fn every_problem_in_the_file_is_reported_at_once() {
    check(
        json!({
            "lifeline": { "reconnect": { "maxAttempts": 0 } },
            "mcpServers": {
                "a": { "command": "x", "reconnect": { "initialDelayMs": 0 } },
                "b": { "url": "ftp://h/", "timeouts": { "pingTimeoutMs": 99 } },
                "ok": { "command": "fine" },
                "c d": { "command": "x", "maxConcurrentCalls": 65 }
            }
        }),
        &[
            "lifeline.reconnect.maxAttempts = 0: must be between 1 and 1000",
            "mcpServers.a.reconnect.initialDelayMs = 0: must be between 1 and 3600000 ms",
            "mcpServers.b.url: must be an http:// or https:// URL, not ftp:",
            "mcpServers.b.timeouts.pingTimeoutMs = 99: must be between 100 and 300000 ms",
            r#"mcpServers."c d": a server name may contain only letters, digits, `-`, `_` and `.`"#,
            r#"mcpServers."c d".maxConcurrentCalls = 65: must be between 1 and 64"#,
        ],
    );
}

#[test]
fn headers_and_env_names_are_checked() {
    check(
        stdio(json!({ "url": "http://h/", "headers": { "Bad Name": "v", "X-Ok": "a\nb" } })),
        &[
            r#"mcpServers.x.headers."Bad Name": is not a valid HTTP header name"#,
            "mcpServers.x.headers.X-Ok: contains a character a header value cannot hold (a line \
         break or another control character)",
        ],
    );
    check(
        stdio(json!({ "command": "a", "env": { "A=B": "v", "": "w" } })),
        &[
            r#"mcpServers.x.env."A=B": an environment variable name must be non-empty, without `=`"#,
            r#"mcpServers.x.env."": an environment variable name must be non-empty, without `=`"#,
        ],
    );
}

#[test]
fn unknown_keys_are_allowed_and_kept_in_raw() {
    let v = json!({
        "x-custom": { "theme": "dark" },
        "lifeline": { "future": 1 },
        "mcpServers": { "s": { "command": "a", "x-note": "keep", "oauth": {} } }
    });
    let c = loaded(v.clone());
    assert_eq!(c.raw, v);
    assert_eq!(c.path.as_deref(), Some(Path::new("/c/config.json")));
}

#[test]
fn vs_code_shape_in_our_file_is_explained() {
    check(
        json!({ "servers": { "x": { "command": "a" } } }),
        &[
            "servers: Lifeline reads servers from `mcpServers`; `servers` is VS Code's shape: \
         rename the key, or import the file with `lifeline import` (vscode)",
        ],
    );
    check(json!({ "servers": {}, "mcpServers": {} }), &[]);
}

#[test]
fn variables_expand_in_every_field() {
    let c = loaded(json!({ "mcpServers": {
        "s": {
            "command": "${env:BIN}/server",
            "args": ["--token", "${ARG}", "plain"],
            "env": { "API_KEY": "${env:TOKEN}", "LITERAL": "$HOME" },
            "cwd": "${DIR}"
        },
        "h": {
            "url": "https://${HOST}/mcp",
            "headers": { "Authorization": "Bearer ${TOKEN}" }
        }
    }}));
    let s = c.server("s").expect("s").stdio_config().expect("stdio");
    assert_eq!(s.command, "/opt/bin/server");
    assert_eq!(s.args, ["--token", "CANARY-arg-5678", "plain"]);
    assert_eq!(
        s.env,
        [
            ("API_KEY".to_owned(), "CANARY-token-1234".to_owned()),
            ("LITERAL".to_owned(), "$HOME".to_owned())
        ]
    );
    assert_eq!(s.cwd.as_deref(), Some(Path::new("/srv/work")));
    let h = c.server("h").expect("h").http_config().expect("http");
    assert_eq!(h.url, "https://mcp.example.com/mcp");
    assert_eq!(
        h.headers,
        [(
            "Authorization".to_owned(),
            "Bearer CANARY-token-1234".to_owned()
        )]
    );
    assert!(c.server("h").expect("h").stdio_config().is_none());
    assert!(c.server("s").expect("s").http_config().is_none());
}

#[test]
fn an_undefined_variable_names_the_server_the_field_and_the_variable() {
    let undefined = |field: &str, reference: &str, name: &str| {
        format!(
            "{field}: variable {name} (from `{reference}`) is not set; set it in the environment \
             Lifeline runs in, or write the value here"
        )
    };
    let cases = [
        (json!({ "command": "${NOPE}" }), "mcpServers.x.command"),
        (
            json!({ "command": "a", "args": ["${NOPE}"] }),
            "mcpServers.x.args[0]",
        ),
        (
            json!({ "command": "a", "env": { "K": "${NOPE}" } }),
            "mcpServers.x.env.K",
        ),
        (
            json!({ "command": "a", "cwd": "${NOPE}" }),
            "mcpServers.x.cwd",
        ),
        (json!({ "url": "${NOPE}" }), "mcpServers.x.url"),
        (
            json!({ "url": "http://h/", "headers": { "H": "${NOPE}" } }),
            "mcpServers.x.headers.H",
        ),
    ];
    for (entry, field) in cases {
        check(stdio(entry), &[&undefined(field, "${NOPE}", "NOPE")]);
    }
    check(
        stdio(json!({ "command": "${env:NOPE}" })),
        &[&undefined("mcpServers.x.command", "${env:NOPE}", "NOPE")],
    );
    check(
        stdio(json!({ "command": "a", "env": { "K": "${input:key}" } })),
        &[
            "mcpServers.x.env.K: `${input:key}` is a VS Code prompt input, which Lifeline cannot ask \
         for; put the value in an environment variable and write ${env:NAME}",
        ],
    );
}

#[test]
fn a_disabled_server_may_reference_variables_that_are_not_set() {
    let c = loaded(stdio(json!({
        "disabled": true, "url": "${NOPE}", "headers": { "H": "Bearer ${NOPE}" }
    })));
    let s = &c.servers[0];
    assert!(s.disabled);
    assert_eq!(s.http_config().expect("http").url, "${NOPE}");
    // Everything else is still checked.
    check(
        stdio(json!({ "disabled": true, "command": "${NOPE}", "maxConcurrentCalls": 0 })),
        &["mcpServers.x.maxConcurrentCalls = 0: must be between 1 and 64"],
    );
}

#[test]
fn secrets_lists_every_secret_value_once() {
    let c = loaded(json!({ "mcpServers": {
        "s": { "command": "run", "args": ["${ARG}"],
               "env": { "A": "literal-env-v4lue9", "NODE_ENV": "production" } },
        "h": { "url": "https://user:p%40ss@${HOST}/mcp?key=q-secret", "headers": { "X-Key": "${TOKEN}" } },
        "dup": { "command": "run", "env": { "B": "${TOKEN}" } },
    }}));
    let mut secrets = c.secrets();
    secrets.sort();
    assert_eq!(
        secrets,
        [
            "CANARY-arg-5678",
            "CANARY-token-1234",
            "literal-env-v4lue9",
            "mcp.example.com",
            "p%40ss",
            "p@ss",
            "q-secret",
            "user",
        ]
    );
}

#[test]
fn debug_never_shows_a_secret() {
    let c = loaded(json!({ "mcpServers": {
        "s": { "command": "run", "args": ["--token", "${ARG}"], "env": { "A": "CANARY-env-0000" } },
        "h": { "url": "https://CANARY-user:CANARY-pw@h.example/mcp?k=CANARY-q",
               "headers": { "Authorization": "Bearer ${TOKEN}" } },
    }}));
    let debug = format!("{c:?}");
    for canary in [
        "CANARY-arg-5678",
        "CANARY-env-0000",
        "CANARY-user",
        "CANARY-pw",
        "CANARY-q",
        "CANARY-token",
    ] {
        assert!(!debug.contains(canary), "{canary} in {debug}");
    }
    assert!(debug.contains("https://h.example/mcp?k=***"), "{debug}");
    assert!(debug.contains(r#"name: "s""#), "{debug}");
}

#[test]
fn a_missing_file_says_where_it_looked_and_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.json");
    let e = load_with(&path, &lookup).expect_err("missing");
    assert_eq!(e.kind, ConfigErrorKind::NotFound);
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("no config file at {}\n", path.display())),
        "{text}"
    );
    assert!(text.contains("lifeline import"), "{text}");
}

#[test]
fn invalid_json_names_the_line_and_column() {
    let check_syntax = |text: &str, expect: &str| {
        let e = parse(text, Some(PathBuf::from("/c/config.json")), &lookup).expect_err(text);
        assert_eq!(e.kind, ConfigErrorKind::Syntax);
        assert_eq!(e.problems[0].to_string(), expect, "{text}");
        assert!(
            e.to_string()
                .starts_with("/c/config.json is not valid JSON\n"),
            "{e}"
        );
    };
    check_syntax(
        "{\n  \"mcpServers\": {\n    \"a\": 1,\n  }\n}",
        "line 4, column 3: trailing comma",
    );
    check_syntax("{\"a\" 1}", "line 1, column 6: expected `:`");
    check_syntax("", "line 1, column 0: EOF while parsing a value");
}

#[test]
fn a_file_on_disk_loads_with_a_byte_order_mark() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.json");
    std::fs::write(
        &path,
        "\u{feff}{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}",
    )
    .expect("write");
    let c = load_with(&path, &lookup).expect("loads");
    assert_eq!(c.servers[0].name, "a");
    assert_eq!(c.path.as_deref(), Some(path.as_path()));
}

#[test]
fn the_path_comes_from_the_flag_then_the_environment_then_the_default() {
    let flag = Path::new("/flag.json");
    let env = Some(std::ffi::OsString::from("/env.json"));
    let default = Some(PathBuf::from("/default.json"));
    let got = |cli: Option<&Path>, env: Option<std::ffi::OsString>| {
        resolve(cli, env, default.clone()).expect("resolves")
    };
    assert_eq!(got(Some(flag), env.clone()), flag);
    assert_eq!(got(None, env), Path::new("/env.json"));
    assert_eq!(got(None, Some("".into())), Path::new("/default.json"));
    assert_eq!(got(None, None), Path::new("/default.json"));
    let e = resolve(None, None, None).expect_err("no default");
    assert!(
        e.to_string()
            .starts_with("no config file\n  this user has no config directory"),
        "{e}"
    );
    let default = default_path().expect("this machine has a config dir");
    assert!(
        default.ends_with("lifeline/config.json"),
        "{}",
        default.display()
    );
}

#[test]
fn the_example_in_the_docs_loads() {
    let doc = include_str!("../../../../docs/config.md");
    let start = doc.find("```json\n").expect("an example") + "```json\n".len();
    let end = start + doc[start..].find("```").expect("its end");
    let env = |name: &str| match name {
        "HOME" => Some("/home/me".to_owned()),
        "GITHUB_TOKEN" => Some("CANARY-gh-1234".to_owned()),
        _ => None,
    };
    let c = parse(&doc[start..end], None, &env).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["filesystem", "github", "legacy"]);
    assert_eq!(c.defaults.reconnect.max_attempts, 20);
    let github = &c.servers[1].policy;
    assert_eq!(github.reconnect.max_attempts, 20);
    assert_eq!(github.reconnect.max_delay, Duration::from_secs(60));
    assert_eq!(github.timeouts.request, Duration::from_secs(120));
}

#[test]
fn protocol_is_auto_by_default_and_a_pin_must_be_known_and_fit_the_transport() {
    use crate::protocol::revision::{ProtocolChoice, Revision};
    let c = loaded(stdio(json!({"url": "http://h/mcp"})));
    assert_eq!(c.servers[0].protocol, ProtocolChoice::Auto);
    let c = loaded(stdio(
        json!({"url": "http://h/sse", "protocol": "2024-11-05"}),
    ));
    assert_eq!(
        c.servers[0].protocol,
        ProtocolChoice::Pinned(Revision::V2024_11_05)
    );
    let c = loaded(stdio(json!({"command": "x", "protocol": "2025-06-18"})));
    assert_eq!(c.servers[0].protocol.pinned(), Some(Revision::V2025_06_18));

    let p = problems(stdio(json!({"url": "http://h/mcp", "protocol": "latest"})));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with(
            "mcpServers.x.protocol = \"latest\": must be one of auto, 2026-07-28, 2025-11-25"
        ),
        "{p:?}"
    );
    let c = loaded(stdio(
        json!({"url": "http://h/mcp", "protocol": "2026-07-28"}),
    ));
    assert!(c.servers[0].protocol.is_stateless());
    let p = problems(stdio(
        json!({"type": "sse", "url": "http://h/sse", "protocol": "2026-07-28"}),
    ));
    assert!(p[0].contains("speaks 2024-11-05 only"), "{p:?}");
    let p = problems(stdio(json!({"url": "http://h/mcp", "protocol": 2025})));
    assert!(p[0].starts_with("mcpServers.x.protocol"), "{p:?}");
    let p = problems(stdio(
        json!({"type": "sse", "url": "http://h/sse", "protocol": "2025-11-25"}),
    ));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].contains("speaks 2024-11-05 only"), "{p:?}");
}

#[test]
fn the_apps_http_endpoint_is_off_unless_the_file_turns_it_on() {
    use crate::config::ServeSettings;
    let serve = |v: Value| loaded(v).serve;
    assert_eq!(serve(json!({})), ServeSettings::default());
    assert!(!ServeSettings::default().enabled);
    assert_eq!(ServeSettings::default().port, 7424);
    let on = serve(json!({"lifeline": {"serve": {"enabled": true, "port": 0}}}));
    assert_eq!((on.enabled, on.port), (true, 0));
    check(
        json!({"lifeline": {"serve": {"enabled": "yes", "port": 70000}}}),
        &[
            "lifeline.serve.enabled: expected true or false, found a string",
            "lifeline.serve.port = 70000: must be between 0 and 65535",
        ],
    );
}
