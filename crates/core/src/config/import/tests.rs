//! Each client's importer on a file of that client's shape, and merging.

use super::*;
use serde_json::json;

fn lookup(name: &str) -> Option<String> {
    (name == "SET_HERE").then(|| "v".to_owned())
}

fn import(source: Source, text: &str) -> ImportReport {
    parse_in(
        &source,
        text,
        Path::new("/in.json"),
        Some(Path::new("/home/me")),
        &lookup,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn names(report: &ImportReport) -> Vec<&str> {
    report.servers.iter().map(|(n, _)| n.as_str()).collect()
}

fn skipped(report: &ImportReport) -> Vec<(&str, &str)> {
    report
        .skipped
        .iter()
        .map(|(n, w)| (n.as_str(), w.as_str()))
        .collect()
}

fn warnings(report: &ImportReport) -> Vec<(&str, &str)> {
    report
        .warnings
        .iter()
        .map(|(n, w)| (n.as_str(), w.as_str()))
        .collect()
}

#[test]
fn claude_desktop() {
    let r = import(
        Source::ClaudeDesktop,
        r#"{
          "globalShortcut": "Ctrl+Space",
          "mcpServers": {
            "filesystem": {
              "command": "npx",
              "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/data"],
              "env": { "API_KEY": "abc" }
            },
            "remote": { "url": "https://api.example.com/mcp" },
            "broken": { "args": ["x"] },
            "odd": 3
          }
        }"#,
    );
    assert_eq!(names(&r), ["filesystem", "remote"]);
    assert_eq!(r.servers[0].1["env"]["API_KEY"], "abc");
    assert_eq!(
        skipped(&r),
        [
            (
                "broken",
                "needs `command` (a stdio server) or `url` (an http or sse server)"
            ),
            ("odd", "is not an object but a number"),
        ]
    );
    assert!(r.warnings.is_empty());
}

#[test]
fn claude_code_reads_the_user_scope_and_every_project() {
    let r = import(
        Source::ClaudeCode,
        r#"{
          "numStartups": 12,
          "mcpServers": {
            "local": { "type": "stdio", "command": "node", "args": ["./server.js"],
                       "env": { "DEBUG": "${SET_HERE}" } },
            "remote": { "type": "http", "url": "https://api.example.com/mcp",
                        "headers": { "X-API-Key": "${API_KEY}" },
                        "oauth": { "clientId": "c", "callbackPort": 8765 } },
            "legacy": { "type": "sse", "url": "https://api.example.com/sse" },
            "socket": { "type": "ws", "url": "wss://api.example.com/ws" },
            "defaulted": { "command": "x", "env": { "D": "${DEBUG:-false}" } }
          },
          "projects": {
            "/work/app": {
              "allowedTools": [],
              "mcpServers": {
                "app-db": { "command": "db-mcp", "args": ["--ro"] },
                "local": { "command": "other" }
              }
            },
            "/work/empty": { "mcpServers": {} },
            "/work/none": { "history": [] }
          }
        }"#,
    );
    assert_eq!(names(&r), ["local", "remote", "legacy", "app-db"]);
    assert_eq!(
        r.servers[1].1["oauth"]["callbackPort"], 8765,
        "unknown keys are kept"
    );
    assert_eq!(
        skipped(&r),
        [
            ("socket", r#"type = "ws": must be one of stdio, http, sse"#),
            (
                "defaulted",
                "env.D: `${DEBUG:-false}`: defaults in references are not supported; only \
                 ${env:NAME} and ${NAME} are"
            ),
            (
                "local",
                "a server named local was already imported from this file; the first is kept"
            ),
        ]
    );
    assert_eq!(
        warnings(&r),
        [
            (
                "remote",
                "has `oauth`, which Lifeline ignores: Lifeline does not run OAuth flows yet; a static token header works"
            ),
            (
                "remote",
                "uses the variable API_KEY, which is not set here; set it where Lifeline runs, \
                 or the config will not load (or disable this server)"
            ),
        ]
    );
}

#[test]
fn cursor_allows_comments_and_resolves_the_home_directory() {
    let r = import(
        Source::Cursor,
        r#"{
          // global servers
          "mcpServers": {
            "local": { "command": "npx", "args": ["-y", "mcp-server", "${userHome}/notes"], },
            "remote": { "url": "https://api.example.com/mcp",
                        "headers": { "Authorization": "Bearer ${env:SET_HERE}" } },
            "project": { "command": "tool", "cwd": "${workspaceFolder}" },
          },
        }"#,
    );
    assert_eq!(names(&r), ["local", "remote"]);
    assert_eq!(r.servers[0].1["args"][2], "/home/me/notes");
    assert_eq!(
        skipped(&r),
        [(
            "project",
            "cwd: `${workspaceFolder}` is an editor variable Lifeline cannot know; write the \
             value itself"
        )]
    );
}

#[test]
fn vs_code_reads_servers_and_skips_prompt_inputs() {
    let r = import(
        Source::VsCode,
        r#"{
          "inputs": [
            { "type": "promptString", "id": "api-key", "description": "API Key", "password": true }
          ],
          "servers": {
            "local": {
              "type": "stdio", "command": "npx", "args": ["-y", "@example/mcp"],
              "env": { "API_KEY": "${input:api-key}" },
              "envFile": "${workspaceFolder}/.env"
            },
            "remote": {
              "type": "http", "url": "https://api.example.com/mcp",
              "headers": { "Authorization": "Bearer ${input:api-key}" }
            },
            "plain": { "type": "http", "url": "https://plain.example/mcp", "envFile": "/x/.env",
                       "sandbox": { "network": {} } },
            "sock": { "type": "http", "url": "unix:///tmp/mcp.sock#/mcp" },
            "My Server!": { "command": "ok" }
          }
        }"#,
    );
    assert_eq!(names(&r), ["plain", "My-Server"]);
    let prompt = "`${input:api-key}` is a VS Code prompt input, which Lifeline cannot ask for; \
                  put the value in an environment variable and write ${env:NAME}";
    assert_eq!(
        skipped(&r),
        [
            ("local", format!("env.API_KEY: {prompt}").as_str()),
            (
                "remote",
                format!("headers.Authorization: {prompt}").as_str()
            ),
            ("sock", "url: must be an http:// or https:// URL, not unix:"),
        ]
    );
    assert_eq!(
        warnings(&r),
        [
            (
                "plain",
                "has `envFile`, which Lifeline ignores: its variables will not be set; copy them into `env`"
            ),
            (
                "My-Server",
                r#"imported as My-Server (from "My Server!"): names may hold only letters, digits, `-`, `_` and `.`"#
            ),
        ]
    );
    assert!(
        r.servers[0].1.get("sandbox").is_some(),
        "unknown keys are kept"
    );
}

#[test]
fn a_file_of_either_shape() {
    let r = import(
        Source::File("/x".into()),
        r#"{ "servers": { "a": { "command": "x" } } }"#,
    );
    assert_eq!(names(&r), ["a"]);
    let r = import(
        Source::File("/x".into()),
        r#"{ "mcpServers": { "b": { "type": "streamable-http", "url": "https://h/mcp" } } }"#,
    );
    assert_eq!(names(&r), ["b"]);
    assert_eq!(r.servers[0].1["type"], "http");
    assert_eq!(
        import(Source::VsCode, "{}"),
        ImportReport {
            path: "/in.json".into(),
            ..Default::default()
        }
    );
}

#[test]
fn unreadable_files_are_errors_that_name_the_position_or_the_path() {
    let e = parse_in(
        &Source::ClaudeDesktop,
        "{\n  \"mcpServers\": {\n",
        Path::new("/in.json"),
        None,
        &lookup,
    )
    .expect_err("truncated");
    assert_eq!(e.kind, ConfigErrorKind::Syntax);
    assert_eq!(e.problems[0].field, "line 3, column 0");
    let e = parse_in(
        &Source::Cursor,
        r#"{"mcpServers": []}"#,
        Path::new("/in.json"),
        None,
        &lookup,
    )
    .expect_err("wrong type");
    assert_eq!(
        e.problems[0].to_string(),
        "mcpServers: expected an object, found an array"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope.json");
    let e = read(&Source::File(missing.clone())).expect_err("missing");
    assert_eq!(e.kind, ConfigErrorKind::SourceNotFound);
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "no file to import was found\n  {}: not found",
            missing.display()
        )),
        "{text}"
    );
}

#[test]
fn well_known_paths() {
    let home = Path::new("/h");
    let config = Path::new("/h/.config");
    let check = |source: Source, expect: &[&str]| {
        let got = source.paths_in(Some(home), Some(config));
        let want: Vec<PathBuf> = expect.iter().map(PathBuf::from).collect();
        assert_eq!(got, want, "{source:?}");
    };
    check(
        Source::ClaudeDesktop,
        &["/h/.config/Claude/claude_desktop_config.json"],
    );
    check(Source::ClaudeCode, &["/h/.claude.json"]);
    check(Source::Cursor, &["/h/.cursor/mcp.json"]);
    check(
        Source::VsCode,
        &[
            "/h/.config/Code/User/mcp.json",
            "/h/.config/Code - Insiders/User/mcp.json",
        ],
    );
    check(Source::File("/f.json".into()), &["/f.json"]);
    assert!(Source::Cursor.paths_in(None, None).is_empty());
}

#[test]
fn merge_adds_new_servers_and_never_overwrites_ours() {
    let mut raw = json!({ "x-custom": true, "mcpServers": { "github": { "command": "ours" } } });
    let report = ImportReport {
        path: "/in.json".into(),
        servers: vec![
            ("github".into(), json!({ "command": "theirs" })),
            ("notes".into(), json!({ "command": "notes" })),
        ],
        skipped: vec![("remote".into(), "why".into())],
        warnings: vec![],
    };
    let m = merge(&mut raw, &report).expect("merge");
    assert_eq!(m.added, ["notes"]);
    assert_eq!(m.skipped_existing, ["github"]);
    assert_eq!(m.skipped, [("remote".to_owned(), "why".to_owned())]);
    assert_eq!(
        raw,
        json!({ "x-custom": true, "mcpServers": {
            "github": { "command": "ours" }, "notes": { "command": "notes" } } })
    );
    assert_eq!(
        m.to_string(),
        "added 1 server(s)\n  added notes\n  skipped github: a server with this name is already \
         configured; kept the existing one (rename one of them to keep both)\n  skipped remote: why"
    );
    let again = merge(&mut raw, &report).expect("merge");
    assert!(again.added.is_empty());
}

#[test]
fn an_imported_and_merged_file_loads() {
    let r = import(
        Source::ClaudeCode,
        r#"{ "mcpServers": { "a": { "command": "x", "env": { "K": "${SET_HERE}" } },
                             "b": { "type": "sse", "url": "https://h/sse" } } }"#,
    );
    let mut raw = json!({});
    merge(&mut raw, &r).expect("merge");
    let c = crate::config::from_value(raw, None, &lookup).expect("loads");
    assert_eq!(c.servers.len(), 2);
}
