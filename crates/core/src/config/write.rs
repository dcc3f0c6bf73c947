//! Writing the config file. Edits work on the file's JSON (`Config::raw`), never on the
//! typed config, so keys Lifeline does not know survive; `save` is `private::write_atomic`:
//! a reader, a crash or a power cut sees the old file or the new one, never half of one.

use super::error::{ConfigError, ConfigErrorKind, Problem};
use super::validate;
use crate::private::Mode;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The file's text: pretty JSON, 2-space indent, a final newline.
pub fn to_text(raw: &Value) -> String {
    let mut text = serde_json::to_string_pretty(raw).expect("a JSON value always serializes");
    text.push('\n');
    text
}

/// Writes `raw` to `path` atomically, creating the parent directory. A symlink at `path` is
/// followed, so a config kept in a dotfiles repository stays there. A new file is readable
/// by its owner only (it may hold secrets); an existing file keeps its permissions, except
/// that one written with secrets in it (`holds_secrets`: an `env` or `headers` value, or
/// anything the config's secret finder finds) loses every permission for group and others.
pub fn save(raw: &Value, path: &Path) -> Result<(), ConfigError> {
    let target = crate::private::resolve(path);
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let fail = |at: &Path, what: &str, e: std::io::Error| {
        ConfigError::new(
            ConfigErrorKind::Write,
            Some(path.to_owned()),
            vec![Problem::new(
                at.display().to_string(),
                format!("{what}: {e}"),
            )],
        )
    };
    // A directory made here is the user's alone, like every directory Lifeline makes.
    crate::private::create_dir(&dir)
        .map_err(|e| fail(&dir, "could not create the directory", e))?;
    let mode = if holds_secrets(raw) {
        Mode::KeepOwnerOnly
    } else {
        Mode::Keep
    };
    crate::private::write_atomic(&target, to_text(raw).as_bytes(), mode)
        .map_err(|e| fail(&e.at, e.step.what(), e.source))
}

/// Whether `raw`, as written, holds a secret: what makes the file secret. A server holds
/// one when its `env` or `headers` has a value (the config keeps every such value as a
/// `Secret`, and `config.redacted.json` masks each one), or when the config's own secret
/// finder, `ServerConfig::secrets` (what the redactor masks in logs, events and bundles),
/// finds one in the entry: a secret argument (`--api-key=…`, `--token …`, a bare `sk-…`),
/// a URL's userinfo or query value, `oauth.clientSecret`. References (`${env:TOKEN}`,
/// `${keyring:NAME}`) are read as written, never expanded: a value made only of
/// references is not a secret in the file. An entry the config cannot read counts as
/// holding one, since nothing can be said of what is in it.
fn holds_secrets(raw: &Value) -> bool {
    let Some(servers) = raw.get("mcpServers").and_then(Value::as_object) else {
        return false;
    };
    servers
        .iter()
        .any(|(name, server)| has_secret_values(server) || finds_secrets(name, server))
}

/// A non-empty `env` or `headers` value.
fn has_secret_values(server: &Value) -> bool {
    ["env", "headers"].iter().any(|key| {
        server
            .get(key)
            .and_then(Value::as_object)
            .is_some_and(|pairs| pairs.values().any(|v| v.as_str() != Some("")))
    })
}

/// Whether `ServerConfig::secrets` of the entry as written finds a secret.
fn finds_secrets(name: &str, server: &Value) -> bool {
    let mut problems = Vec::new();
    // Not strict, and nothing to look up: every reference stays as it is written.
    let ctx = super::expand::Ctx {
        lookup: &|_| None,
        secrets: &super::expand::no_secrets,
        strict: false,
    };
    let defaults = super::ServerPolicy::default();
    match super::parse::server("mcpServers", name, server, &defaults, ctx, &mut problems) {
        Some(config) => config.secrets().iter().any(|s| !only_references(s)),
        None => true,
    }
}

/// Whether `value` is nothing but `${…}` references (and white space).
fn only_references(value: &str) -> bool {
    let mut rest = value.trim();
    while let Some(after) = rest.strip_prefix("${") {
        match after.find('}') {
            Some(end) => rest = after[end + 1..].trim_start(),
            None => return false,
        }
    }
    rest.is_empty()
}

/// The `mcpServers` object, created when missing (in an empty or null document too).
pub(crate) fn servers_mut(raw: &mut Value) -> Result<&mut Map<String, Value>, Problem> {
    if raw.is_null() {
        *raw = Value::Object(Map::new());
    }
    let found = validate::type_name(raw);
    let top = raw
        .as_object_mut()
        .ok_or_else(|| Problem::new("", format!("the file must hold an object, not {found}")))?;
    let servers = top
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let found = validate::type_name(servers);
    servers
        .as_object_mut()
        .ok_or_else(|| Problem::new("mcpServers", format!("expected an object, found {found}")))
}

fn check_entry(name: &str, server: &Value) -> Result<(), Problem> {
    let field = validate::join("mcpServers", name);
    if let Some(why) = validate::check_name(name) {
        return Err(Problem::new(field, why));
    }
    if !server.is_object() {
        return Err(validate::wrong_type(&field, "an object", server));
    }
    Ok(())
}

/// Adds a server at the end; an existing server of that name is an error, never replaced.
pub fn add_server(raw: &mut Value, name: &str, server: Value) -> Result<(), Problem> {
    check_entry(name, &server)?;
    let servers = servers_mut(raw)?;
    if servers.contains_key(name) {
        return Err(Problem::new(
            validate::join("mcpServers", name),
            "a server with this name already exists; remove it first or pick another name",
        ));
    }
    servers.insert(name.to_owned(), server);
    Ok(())
}

/// Adds a server, or replaces the one of that name where it stands. Returns the old entry.
pub fn set_server(raw: &mut Value, name: &str, server: Value) -> Result<Option<Value>, Problem> {
    check_entry(name, &server)?;
    Ok(servers_mut(raw)?.insert(name.to_owned(), server))
}

/// Removes a server, keeping the order of the others. Returns the removed entry.
pub fn remove_server(raw: &mut Value, name: &str) -> Result<Option<Value>, Problem> {
    Ok(servers_mut(raw)?.shift_remove(name))
}

/// Sets or clears `disabled` on a server, keeping everything else in its entry.
pub fn set_disabled(raw: &mut Value, name: &str, disabled: bool) -> Result<(), Problem> {
    let field = validate::join("mcpServers", name);
    let entry = servers_mut(raw)?
        .get_mut(name)
        .ok_or_else(|| Problem::new(&field, "no server with this name"))?;
    let entry = entry
        .as_object_mut()
        .ok_or_else(|| Problem::new(&field, "expected an object"))?;
    if disabled {
        entry.insert("disabled".to_owned(), Value::Bool(true));
    } else {
        entry.shift_remove("disabled");
    }
    Ok(())
}

/// Why `read_raw` could not give a config file's JSON.
#[derive(Debug)]
pub enum RawError {
    /// The file is there but could not be read.
    Read(std::io::Error),
    /// The file is not JSON: where it stops being so.
    Json { line: usize, column: usize },
}

/// A config file's JSON for an edit (a leading BOM dropped), `{"mcpServers": {}}` when
/// there is no file yet. The callers say what to do about a `RawError`.
pub fn read_raw(path: &Path) -> Result<Value, RawError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(serde_json::json!({ "mcpServers": {} }));
        }
        Err(e) => return Err(RawError::Read(e)),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    serde_json::from_str(text).map_err(|e| RawError::Json {
        line: e.line(),
        column: e.column(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::lookup;
    use crate::test_support::entries;
    use serde_json::json;
    use std::fs;

    const FILE: &str = r#"{
  "x-custom": {
    "keep": [1, 2, {"deep": true}]
  },
  "mcpServers": {
    "zeta": {
      "command": "z",
      "x-note": "mine",
      "env": { "TOKEN": "CANARY-1234" }
    },
    "alpha": { "url": "https://a.example/mcp", "x-extra": {"a": 1} }
  },
  "lifeline": { "maxConcurrentCalls": 2, "x-future": null }
}
"#;

    #[test]
    fn a_round_trip_keeps_unknown_keys_and_order_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.json");
        fs::write(&path, FILE).expect("write");
        let mut config = crate::config::load_with(&path, &lookup).expect("loads");
        add_server(&mut config.raw, "new", json!({ "command": "n" })).expect("add");
        save(&config.raw, &path).expect("save");

        let text = fs::read_to_string(&path).expect("read");
        let back: Value = serde_json::from_str(&text).expect("json");
        let mut expect: Value = serde_json::from_str(FILE).expect("json");
        expect["mcpServers"]["new"] = json!({ "command": "n" });
        assert_eq!(back, expect);
        let order: Vec<&String> = back.as_object().expect("object").keys().collect();
        assert_eq!(order, ["x-custom", "mcpServers", "lifeline"]);
        let servers: Vec<&String> = back["mcpServers"]
            .as_object()
            .expect("object")
            .keys()
            .collect();
        assert_eq!(servers, ["zeta", "alpha", "new"]);
        assert!(
            text.starts_with("{\n  \"x-custom\": {\n    \"keep\": [\n"),
            "{text}"
        );
        assert!(text.ends_with("}\n"), "{text}");
        assert_eq!(entries(dir.path()), ["config.json"]);
        assert_eq!(to_text(&back), text, "saving again changes nothing");
    }

    #[test]
    fn saving_into_a_missing_directory_creates_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a").join("b").join("config.json");
        save(&json!({ "mcpServers": {} }), &path).expect("save");
        assert_eq!(
            fs::read_to_string(&path).expect("read"),
            "{\n  \"mcpServers\": {}\n}\n"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_new_file_is_private_and_an_existing_one_keeps_its_mode_until_it_holds_secrets() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.json");
        let mode = |p: &Path| fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        save(&json!({}), &path).expect("save");
        assert_eq!(mode(&path), 0o600);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
        save(&json!({ "a": 1 }), &path).expect("save");
        assert_eq!(mode(&path), 0o640);
        // Headers with a value make it secret: group and others lose access.
        let token = json!({ "mcpServers": { "w": {
            "url": "https://h/mcp", "headers": { "Authorization": "Bearer x" } } } });
        save(&token, &path).expect("save");
        assert_eq!(mode(&path), 0o600);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        let env = json!({ "mcpServers": { "s": { "command": "a", "env": { "K": "v" } } } });
        save(&env, &path).expect("save");
        assert_eq!(mode(&path), 0o600);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o750)).expect("chmod");
        save(&env, &path).expect("save");
        assert_eq!(mode(&path), 0o700, "the owner's own bits are kept");
    }

    /// Every place a server entry can hold a secret makes an existing 0644 file 0600; an
    /// entry with none, or with only references to secrets, leaves it 0644.
    #[cfg(unix)]
    #[test]
    fn a_secret_anywhere_in_an_entry_makes_the_file_private() {
        use std::os::unix::fs::PermissionsExt;
        let check = |server: Value, expect: u32| {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("config.json");
            fs::write(&path, "{}").expect("write");
            fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
            save(&json!({ "mcpServers": { "s": server.clone() } }), &path).expect("save");
            let mode = fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
            assert_eq!(mode, expect, "{server}");
        };
        let stdio = |args: Value| json!({ "command": "npx", "args": args });
        check(stdio(json!(["-y", "srv", "--api-key=k3y-CANARY"])), 0o600);
        check(stdio(json!(["srv", "--token", "t0k-CANARY"])), 0o600);
        check(stdio(json!(["srv", "sk-CANARYabcdefghijklmnop"])), 0o600);
        check(stdio(json!(["postgresql://app:pw-CANARY@db/app"])), 0o600);
        check(
            json!({ "url": "https://h.example/mcp?api_key=CANARY-q" }),
            0o600,
        );
        check(
            json!({ "url": "https://user:pass-CANARY@h.example/mcp" }),
            0o600,
        );
        check(
            json!({ "url": "https://h.example/mcp",
                    "oauth": { "clientId": "id", "clientSecret": "cs-CANARY" } }),
            0o600,
        );
        check(
            json!({ "type": "sse", "url": "https://h.example/sse?key=CANARY-k" }),
            0o600,
        );
        // The same shapes on a disabled server, whose references need not resolve.
        check(
            json!({ "disabled": true, "command": "x", "args": ["--token=t0k-CANARY"] }),
            0o600,
        );
        // An entry the config cannot read may hold anything.
        check(
            json!({ "command": 5, "args": ["--token=t0k-CANARY"] }),
            0o600,
        );
        // No secrets: the mode stays.
        check(
            stdio(json!([
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/home/me"
            ])),
            0o644,
        );
        check(stdio(json!(["--port", "8080", "--verbose"])), 0o644);
        check(
            json!({ "url": "https://h.example/mcp", "oauth": { "clientId": "id" } }),
            0o644,
        );
        check(json!({ "url": "https://h.example/mcp?x=" }), 0o644);
        check(
            json!({ "env": {}, "command": "x", "headers": { "X": "" } }),
            0o644,
        );
        // References are not secrets in the file: the values live elsewhere.
        check(
            stdio(json!([
                "--token=${env:GITHUB_TOKEN}",
                "--api-key",
                "${keyring:k}"
            ])),
            0o644,
        );
        check(
            json!({ "url": "https://h.example/mcp?api_key=${env:KEY}" }),
            0o644,
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_config_is_written_through_the_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("dotfiles").join("lifeline.json");
        fs::create_dir_all(real.parent().expect("parent")).expect("mkdir");
        fs::write(&real, "{}").expect("write");
        let link = dir.path().join("config.json");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        save(&json!({ "mcpServers": {} }), &link).expect("save");
        assert!(
            fs::symlink_metadata(&link)
                .expect("meta")
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            fs::read_to_string(&real).expect("read"),
            "{\n  \"mcpServers\": {}\n}\n"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_config_directory_made_by_saving_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = tempfile::tempdir().expect("tempdir");
        let path = scratch
            .path()
            .join("config")
            .join("lifeline")
            .join("config.json");
        save(&json!({ "mcpServers": {} }), &path).expect("save");
        for dir in [
            path.parent().unwrap(),
            path.parent().unwrap().parent().unwrap(),
        ] {
            let mode = fs::metadata(dir).expect("meta").permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", dir.display());
        }
    }

    /// A directory this process cannot create files in. chmod is not enough for root,
    /// which ignores permission bits; /sys refuses everyone.
    #[cfg(unix)]
    fn read_only_dir(scratch: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch.join("ro");
        fs::create_dir(&dir).expect("mkdir");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o555)).expect("chmod");
        if fs::File::create(dir.join("probe")).is_err() {
            return dir;
        }
        let _ = fs::remove_file(dir.join("probe"));
        let sys = PathBuf::from("/sys");
        assert!(
            fs::File::create(sys.join("probe")).is_err(),
            "no read-only directory found"
        );
        sys
    }

    #[cfg(unix)]
    #[test]
    fn saving_into_a_read_only_directory_names_the_path() {
        let scratch = tempfile::tempdir().expect("tempdir");
        let dir = read_only_dir(scratch.path());
        let path = dir.join("config.json");
        let e = save(&json!({}), &path).expect_err("read-only");
        assert_eq!(e.kind, ConfigErrorKind::Write);
        let text = e.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("could not save {}", path.display()));
        assert!(
            lines[1].starts_with(&format!(
                "  {}: could not write a temporary file in the directory: ",
                dir.display()
            )),
            "{text}"
        );
        assert!(
            lines[2].starts_with("Check that the directory exists and is writable"),
            "{text}"
        );
        assert!(!path.exists());
    }

    #[test]
    fn a_file_where_the_directory_should_be_is_a_clear_error() {
        let scratch = tempfile::tempdir().expect("tempdir");
        let blocker = scratch.path().join("lifeline");
        fs::write(&blocker, "").expect("write");
        let e = save(&json!({}), &blocker.join("config.json")).expect_err("not a dir");
        assert_eq!(e.problems[0].field, blocker.display().to_string());
        assert!(
            e.problems[0]
                .message
                .starts_with("could not create the directory: "),
            "{e}"
        );
    }

    #[test]
    fn servers_are_added_replaced_and_removed_in_place() {
        let mut raw = json!({ "x-top": 1, "mcpServers": { "a": { "command": "1" }, "b": { "command": "2" } } });
        add_server(&mut raw, "c", json!({ "command": "3" })).expect("add");
        let e = add_server(&mut raw, "a", json!({ "command": "other" })).expect_err("exists");
        assert_eq!(
            e.to_string(),
            "mcpServers.a: a server with this name already exists; remove it first or pick another name"
        );
        let old = set_server(&mut raw, "a", json!({ "url": "http://h/" })).expect("set");
        assert_eq!(old, Some(json!({ "command": "1" })));
        assert_eq!(
            remove_server(&mut raw, "b").expect("remove"),
            Some(json!({ "command": "2" }))
        );
        assert_eq!(remove_server(&mut raw, "b").expect("remove"), None);
        set_disabled(&mut raw, "c", true).expect("disable");
        let names: Vec<&String> = raw["mcpServers"]
            .as_object()
            .expect("object")
            .keys()
            .collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(
            raw,
            json!({ "x-top": 1, "mcpServers": {
                "a": { "url": "http://h/" }, "c": { "command": "3", "disabled": true } } })
        );
        set_disabled(&mut raw, "c", false).expect("enable");
        assert_eq!(raw["mcpServers"]["c"], json!({ "command": "3" }));
        assert_eq!(
            set_disabled(&mut raw, "zz", true)
                .expect_err("missing")
                .to_string(),
            "mcpServers.zz: no server with this name"
        );
    }

    #[test]
    fn edits_check_the_name_and_the_shape() {
        let check = |raw: Value, name: &str, server: Value, expect: &str| {
            let mut raw = raw;
            assert_eq!(
                add_server(&mut raw, name, server)
                    .expect_err(expect)
                    .to_string(),
                expect
            );
        };
        check(
            json!({}),
            "a b",
            json!({}),
            r#"mcpServers."a b": a server name may contain only letters, digits, `-`, `_` and `.`"#,
        );
        check(
            json!({}),
            "a",
            json!("npx"),
            "mcpServers.a: expected an object, found a string",
        );
        check(
            json!([]),
            "a",
            json!({}),
            "the file must hold an object, not an array",
        );
        check(
            json!({ "mcpServers": [] }),
            "a",
            json!({}),
            "mcpServers: expected an object, found an array",
        );
        let mut empty = Value::Null;
        add_server(&mut empty, "a", json!({ "command": "x" })).expect("a new document");
        assert_eq!(empty, json!({ "mcpServers": { "a": { "command": "x" } } }));
    }
}
