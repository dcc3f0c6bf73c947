//! The planner on files shaped as each client writes them, and the write/restore round trip.

use super::backup;
use super::*;
use std::time::{Duration, UNIX_EPOCH};

const LIFELINE: &str = "/opt/lifeline/bin/lifeline";
const CANARY: &str = "sk-canary-5f1d0c9e7b3a4d2f8e6c1b0a9d8e7f6a";

fn request<'a>(
    client: Client,
    text: &'a str,
    choice: &'a Choice,
    lifeline: &'a Value,
) -> Request<'a> {
    Request {
        client,
        path: Path::new("/home/u/client.json"),
        text,
        choice,
        lifeline,
        command: LIFELINE,
        config_arg: None,
    }
}

fn plan_for(client: Client, text: &str, names: &[&str]) -> Plan {
    let choice = Choice::Named(names.iter().map(|s| s.to_string()).collect());
    let ours = json!({ "mcpServers": {} });
    plan(&request(client, text, &choice, &ours)).unwrap()
}

/// Connects `names` and checks the new text is `expect` exactly.
fn check(client: Client, text: &str, names: &[&str], expect: &str) {
    let p = plan_for(client, text, names);
    assert_eq!(p.text, expect, "{}", client.id());
}

#[test]
fn claude_desktop_two_space_indent_and_unknown_keys() {
    let text = r#"{
  "mcpServers": {
    "fs": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
      "disabled": false
    },
    "other": { "command": "uvx", "args": ["x"] }
  },
  "globalShortcut": "Ctrl+Space"
}
"#;
    let expect = r#"{
  "mcpServers": {
    "fs": {
      "command": "/opt/lifeline/bin/lifeline",
      "args": [
        "connect",
        "fs"
      ],
      "disabled": false
    },
    "other": { "command": "uvx", "args": ["x"] }
  },
  "globalShortcut": "Ctrl+Space"
}
"#;
    check(Client::ClaudeDesktop, text, &["fs"], expect);
    let p = plan_for(Client::ClaudeDesktop, text, &["fs"]);
    assert_eq!(p.import.servers.len(), 1);
    assert_eq!(p.import.servers[0].0, "fs");
    assert!(
        p.diff.contains("-      \"command\": \"npx\","),
        "{}",
        p.diff
    );
    assert!(
        p.diff
            .contains("+      \"command\": \"/opt/lifeline/bin/lifeline\",")
    );
}

#[test]
fn cursor_four_space_indent_crlf() {
    let text = "{\r\n    \"mcpServers\": {\r\n        \"gh\": {\r\n            \"url\": \"https://api.example.com/mcp\"\r\n        }\r\n    }\r\n}";
    let expect = "{\r\n    \"mcpServers\": {\r\n        \"gh\": {\r\n            \"command\": \"/opt/lifeline/bin/lifeline\",\r\n            \"args\": [\r\n                \"connect\",\r\n                \"gh\"\r\n            ]\r\n        }\r\n    }\r\n}";
    check(Client::Cursor, text, &["gh"], expect);
}

#[test]
fn vscode_tabs_comments_and_type() {
    let text = "{\n\t// my servers\n\t\"servers\": {\n\t\t\"mem\": {\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \"node\",\n\t\t\t\"args\": [\"mem.js\"],\n\t\t},\n\t},\n\t\"inputs\": []\n}\n";
    let expect = "{\n\t// my servers\n\t\"servers\": {\n\t\t\"mem\": {\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \"/opt/lifeline/bin/lifeline\",\n\t\t\t\"args\": [\n\t\t\t\t\"connect\",\n\t\t\t\t\"mem\"\n\t\t\t]\n\t\t},\n\t},\n\t\"inputs\": []\n}\n";
    check(Client::VsCode, text, &["mem"], expect);
}

#[test]
fn vscode_http_entry_gets_a_stdio_type() {
    let text = "{\n  \"servers\": {\n    \"h\": {\"type\": \"http\", \"url\": \"https://h.example/mcp\"}\n  }\n}\n";
    let p = plan_for(Client::VsCode, text, &["h"]);
    let v: Value = serde_json::from_str(&p.text).unwrap();
    assert_eq!(
        v["servers"]["h"],
        json!({"type": "stdio", "command": LIFELINE, "args": ["connect", "h"]})
    );
}

#[test]
fn claude_code_user_and_project_servers() {
    let text = r#"{
  "numStartups": 12,
  "mcpServers": {
    "a": {
      "type": "stdio",
      "command": "a-server",
      "args": [],
      "env": {}
    }
  },
  "projects": {
    "/home/u/p": {
      "allowedTools": [],
      "mcpServers": {
        "a": {
          "type": "stdio",
          "command": "a-server",
          "args": [],
          "env": {}
        },
        "b": {
          "type": "stdio",
          "command": "b-server",
          "args": [],
          "env": {}
        }
      }
    }
  }
}
"#;
    let p = plan_for(Client::ClaudeCode, text, &["a"]);
    let fields: Vec<&str> = p.routed.iter().map(|r| r.field.as_str()).collect();
    assert_eq!(
        fields,
        ["mcpServers.a", "projects.\"/home/u/p\".mcpServers.a"]
    );
    assert_eq!(
        p.import.servers.len(),
        1,
        "the same server is imported once"
    );
    let v: Value = serde_json::from_str(&p.text).unwrap();
    let routed = json!({"type": "stdio", "command": LIFELINE, "args": ["connect", "a"]});
    assert_eq!(v["mcpServers"]["a"], routed);
    assert_eq!(v["projects"]["/home/u/p"]["mcpServers"]["a"], routed);
    // The untouched entry is byte-identical.
    let b = "\"b\": {\n          \"type\": \"stdio\",\n          \"command\": \"b-server\",\n          \"args\": [],\n          \"env\": {}\n        }";
    assert!(p.text.contains(b));
    assert!(p.text.starts_with("{\n  \"numStartups\": 12,\n"));
}

#[test]
fn a_project_server_that_differs_is_left_alone() {
    let text = r#"{"mcpServers": {"a": {"command": "one"}}, "projects": {"/p": {"mcpServers": {"a": {"command": "two"}}}}}"#;
    let p = plan_for(Client::ClaudeCode, text, &["a"]);
    assert_eq!(p.routed.len(), 1);
    assert_eq!(p.unchanged[0].0, "projects.\"/p\".mcpServers.a");
    assert!(p.text.contains(r#"{"a": {"command": "two"}}"#));
    assert!(
        p.text
            .contains(r#"{"a": {"command":"/opt/lifeline/bin/lifeline","args":["connect","a"]}}"#)
    );
}

#[test]
fn secrets_never_show_in_the_diff() {
    let text = format!(
        r#"{{
  "mcpServers": {{
    "api": {{
      "command": "api-server",
      "args": ["--token={CANARY}"],
      "env": {{ "API_KEY": "{CANARY}", "SHORT": "pw-123456789" }}
    }},
    "web": {{
      "url": "https://x.example/mcp",
      "headers": {{ "Authorization": "Bearer {CANARY}" }}
    }}
  }}
}}
"#
    );
    let p = plan_for(Client::Cursor, &text, &["api", "web"]);
    assert_eq!(p.routed.len(), 2);
    assert!(!p.diff.contains(CANARY), "{}", p.diff);
    assert!(!p.diff.contains("pw-123456789"), "{}", p.diff);
    assert!(p.diff.contains("-      \"command\": \"api-server\","));
    // The import keeps them, as the importer does.
    let imported = serde_json::to_string(&p.import.servers).unwrap();
    assert!(imported.contains(CANARY));
}

#[test]
fn a_second_connect_changes_nothing() {
    let text =
        "{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\", \"args\": [\"fs\"]}\n  }\n}\n";
    let first = plan_for(Client::ClaudeDesktop, text, &["fs"]);
    let choice = Choice::Named(vec!["fs".into()]);
    let ours = json!({ "mcpServers": { "fs": first.import.servers[0].1.clone() } });
    let second = plan(&request(Client::ClaudeDesktop, &first.text, &choice, &ours)).unwrap();
    assert_eq!(second.text, first.text);
    assert!(!second.changes());
    assert_eq!(second.diff, "");
    assert_eq!(second.unchanged[0].1, "already goes through Lifeline");
    let all = plan(&request(
        Client::ClaudeDesktop,
        &first.text,
        &Choice::All,
        &ours,
    ))
    .unwrap();
    assert_eq!(all.text, first.text);
}

#[test]
fn a_server_lifeline_has_is_not_imported_again() {
    let text = r#"{"mcpServers": {"fs": {"command": "npx"}}}"#;
    let choice = Choice::Named(vec!["fs".into()]);
    let ours = json!({ "mcpServers": { "fs": { "command": "mine" } } });
    let p = plan(&request(Client::Cursor, text, &choice, &ours)).unwrap();
    assert!(p.import.servers.is_empty());
    assert_eq!(p.routed[0].name, "fs");
    assert!(p.import.warnings[0].1.contains("started differently"));
    let same = json!({ "mcpServers": { "fs": { "command": "npx", "disabled": true } } });
    let p = plan(&request(Client::Cursor, text, &choice, &same)).unwrap();
    assert!(p.import.warnings.is_empty());
}

#[test]
fn unknown_and_unrunnable_names_are_errors() {
    let text = r#"{"mcpServers": {"fs": {"command": "npx"}, "bad": {"command": 3}, "odd": 7}}"#;
    let choice = Choice::Named(vec!["nope".into(), "bad".into(), "odd".into()]);
    let ours = json!({ "mcpServers": {} });
    let e = plan(&request(Client::Cursor, text, &choice, &ours)).unwrap_err();
    let shown = e.to_string();
    assert!(shown.contains("nope"), "{shown}");
    assert!(shown.contains("mcpServers.bad"), "{shown}");
    assert!(
        shown.contains("mcpServers.odd: is not an object"),
        "{shown}"
    );
    // --all routes what it can and says why it left the rest.
    let p = plan(&request(Client::Cursor, text, &Choice::All, &ours)).unwrap();
    assert_eq!(p.routed.len(), 1);
    assert_eq!(p.unchanged[0].0, "mcpServers.bad");
    assert_eq!(p.unchanged[1].0, "mcpServers.odd");
}

#[test]
fn the_config_argument_is_passed_on() {
    let text = r#"{"mcpServers": {"fs": {"command": "npx"}}}"#;
    let choice = Choice::All;
    let ours = json!({ "mcpServers": {} });
    let mut req = request(Client::Cursor, text, &choice, &ours);
    req.config_arg = Some(Path::new("/etc/l.json"));
    let p = plan(&req).unwrap();
    let v: Value = serde_json::from_str(&p.text).unwrap();
    assert_eq!(
        v["mcpServers"]["fs"]["args"],
        json!(["connect", "fs", "--config", "/etc/l.json"])
    );
}

#[test]
fn connect_then_restore_is_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("data").join("clients.json");
    let texts = [
        "{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\", \"args\": [\"fs\"]}\n  },\n  \"x\": 1\n}\n",
        "{\r\n\t\"mcpServers\": {\r\n\t\t\"fs\": {\r\n\t\t\t\"command\": \"npx\"\r\n\t\t}\r\n\t}\r\n}",
    ];
    for (i, original) in texts.iter().enumerate() {
        let path = dir.path().join(format!("c{i}.json"));
        fs::write(&path, original).unwrap();
        let p = plan_for(Client::Cursor, original, &["fs"]);
        let now = UNIX_EPOCH + Duration::from_secs(1_796_000_000);
        let rec = backup::write(Client::Cursor, &path, original, &p, &state, now).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), p.text);
        assert_eq!(fs::read_to_string(&rec.backup).unwrap(), *original);
        assert_eq!(
            rec.backup.parent(),
            Some(backup::backups_dir(&state).as_path())
        );
        backup::restore(Client::Cursor, Some(&path), false, &state).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), *original);
    }
}

#[test]
fn restore_refuses_over_later_edits_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("clients.json");
    let path = dir.path().join("mcp.json");
    let original = "{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\"}\n  }\n}\n";
    fs::write(&path, original).unwrap();
    let p = plan_for(Client::Cursor, original, &["fs"]);
    backup::write(Client::Cursor, &path, original, &p, &state, UNIX_EPOCH).unwrap();
    let edited = p.text.replace(
        "\n  }\n}",
        &format!(
            ",\n    \"new\": {{\"command\": \"n\", \"env\": {{\"K\": \"{CANARY}\"}}}}\n  }}\n}}"
        ),
    );
    fs::write(&path, &edited).unwrap();
    let e = backup::restore(Client::Cursor, Some(&path), false, &state).unwrap_err();
    let shown = e.to_string();
    assert!(shown.contains("mcpServers.new: added since"), "{shown}");
    assert!(shown.contains("--force"), "{shown}");
    assert!(!shown.contains(CANARY));
    assert_eq!(fs::read_to_string(&path).unwrap(), edited);
    backup::restore(Client::Cursor, Some(&path), true, &state).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), original);
    // The record is gone: nothing more to restore.
    assert!(backup::restore(Client::Cursor, Some(&path), true, &state).is_err());
}

#[test]
fn a_file_changed_since_it_was_read_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let original = r#"{"mcpServers": {"fs": {"command": "npx"}}}"#;
    let p = plan_for(Client::Cursor, original, &["fs"]);
    let meanwhile = r#"{"mcpServers": {"fs": {"command": "npx"}}, "new": 1}"#;
    fs::write(&path, meanwhile).unwrap();
    let state = dir.path().join("s.json");
    let e = backup::write(Client::Cursor, &path, original, &p, &state, UNIX_EPOCH).unwrap_err();
    assert!(e.to_string().contains("changed while"), "{e}");
    assert_eq!(fs::read_to_string(&path).unwrap(), meanwhile);
    assert!(!state.exists());
}

#[cfg(unix)]
#[test]
fn backups_are_private_and_the_file_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let original = r#"{"mcpServers": {"fs": {"command": "npx"}}}"#;
    fs::write(&path, original).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let p = plan_for(Client::Cursor, original, &["fs"]);
    let state = dir.path().join("s.json");
    let rec = backup::write(Client::Cursor, &path, original, &p, &state, UNIX_EPOCH).unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&rec.backup), 0o600);
    assert_eq!(mode(&state), 0o600);
    assert_eq!(mode(&path), 0o644);
}

use std::fs;

#[test]
fn a_file_that_is_not_json_is_never_planned() {
    let choice = Choice::All;
    let ours = json!({ "mcpServers": {} });
    let text = "{\n  \"mcpServers\": {\n    \"é\": ]\n}\n";
    let e = plan(&request(Client::Cursor, text, &choice, &ours)).unwrap_err();
    assert!(e.to_string().contains("line 3"), "{e}");
    let e = plan(&request(Client::Cursor, "[1]", &choice, &ours)).unwrap_err();
    assert!(e.to_string().contains("does not hold a JSON object"), "{e}");
}
