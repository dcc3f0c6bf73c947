//! One entry for a profile: it takes the place of the entries whose servers it serves, only
//! when they are (or are imported) in Lifeline's config; every other byte stays; a restore
//! puts the file back byte for byte; and the profile an entry serves reads back.

use super::*;
use crate::config::clients::backup;
use std::time::{Duration, UNIX_EPOCH};

const LIFELINE: &str = "/opt/lifeline/bin/lifeline";

fn request<'a>(
    client: Client,
    text: &'a str,
    profile: &'a Profile,
    lifeline: &'a Value,
) -> ProfileRequest<'a> {
    ProfileRequest {
        client,
        path: Path::new("/home/u/client.json"),
        text,
        profile,
        entry: DEFAULT_ENTRY,
        lifeline,
        command: LIFELINE,
        config_arg: None,
    }
}

/// Plans profile `name` of `ours` for `text`.
fn plan_with(client: Client, text: &str, name: &str, ours: &Value) -> Plan {
    let profile = profile_of(ours, name).unwrap();
    plan_profile(&request(client, text, &profile, ours)).unwrap()
}

/// The new text as JSON (JSONC allowed).
fn parsed(text: &str) -> Value {
    serde_json::from_str(&import::jsonc_to_json(text)).unwrap()
}

fn entry(profile: &str, kind: &str) -> Value {
    json!({ "command": LIFELINE,
            "args": ["connect", "--profile", profile, "--client", kind, "--entry", "lifeline"] })
}

fn fields(routed: &[Routed]) -> Vec<&str> {
    routed.iter().map(|r| r.field.as_str()).collect()
}

/// Cursor's file with three servers: `fs` and `gh` in the profile, `notes` not.
const CURSOR: &str = r#"{
  "mcpServers": {
    "fs": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
    },
    "notes": { "command": "notes-mcp" },
    "gh": {
      "command": "gh-mcp",
      "env": { "GITHUB_TOKEN": "sk-profile-canary-3e9a1c" }
    }
  },
  "x-unknown": { "kept": true }
}
"#;

fn coding() -> Value {
    json!({
        "mcpServers": { "fs": { "command": "npx" }, "notes": { "command": "notes-mcp" } },
        "lifeline": { "profiles": { "coding": { "servers": ["fs", "g*"] } } }
    })
}

#[test]
fn one_entry_takes_the_place_of_the_servers_the_profile_serves() {
    let p = plan_with(Client::Cursor, CURSOR, "coding", &coding());
    let expect = r#"{
  "mcpServers": {
    "lifeline": {
      "command": "/opt/lifeline/bin/lifeline",
      "args": [
        "connect",
        "--profile",
        "coding",
        "--client",
        "cursor",
        "--entry",
        "lifeline"
      ]
    },
    "notes": { "command": "notes-mcp" }
  },
  "x-unknown": { "kept": true }
}
"#;
    assert_eq!(p.text, expect);
    assert_eq!(fields(&p.routed), ["mcpServers.lifeline"]);
    assert_eq!(fields(&p.removed), ["mcpServers.fs", "mcpServers.gh"]);
    assert_eq!(
        p.unchanged,
        [(
            "mcpServers.notes".to_owned(),
            "profile coding does not serve it".to_owned()
        )]
    );
    // `fs` is Lifeline's already (started differently: said); `gh` is imported first.
    let imported: Vec<&str> = p.import.servers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(imported, ["gh"]);
    assert_eq!(p.import.warnings.len(), 1, "{:?}", p.import.warnings);
    assert!(!p.diff.contains("sk-profile-canary"), "{}", p.diff);
    assert!(p.diff.contains("+    \"lifeline\": {"), "{}", p.diff);
    assert!(p.diff.contains("-    \"gh\": {"), "{}", p.diff);
    assert!(p.changes());
}

#[test]
fn default_serves_every_server_and_the_file_keeps_its_style() {
    // Tabs, CRLF, comments and trailing commas (JSONC, as Cursor and VS Code allow).
    let text = "{\r\n\t// mine\r\n\t\"servers\": {\r\n\t\t\"a\": {\"command\": \"a\"},\r\n\t\t// b's\r\n\t\t\"b\": {\"command\": \"b\"},\r\n\t},\r\n}\r\n";
    let ours = json!({ "mcpServers": {} });
    let p = plan_with(Client::VsCode, text, "default", &ours);
    let expect = "{\r\n\t// mine\r\n\t\"servers\": {\r\n\t\t\"lifeline\": {\r\n\t\t\t\"type\": \"stdio\",\r\n\t\t\t\"command\": \"/opt/lifeline/bin/lifeline\",\r\n\t\t\t\"args\": [\r\n\t\t\t\t\"connect\",\r\n\t\t\t\t\"--profile\",\r\n\t\t\t\t\"default\",\r\n\t\t\t\t\"--client\",\r\n\t\t\t\t\"vscode\",\r\n\t\t\t\t\"--entry\",\r\n\t\t\t\t\"lifeline\"\r\n\t\t\t]\r\n\t\t}\r\n\t\t// b's\r\n\t},\r\n}\r\n";
    // Comments stay, even one above an entry that went.
    assert_eq!(p.text, expect);
    assert_eq!(fields(&p.removed), ["servers.a", "servers.b"]);
    assert_eq!(p.import.servers.len(), 2);
}

#[test]
fn servers_go_only_when_they_are_or_will_be_in_lifelines_config() {
    // `editor` cannot be imported (an editor variable), `off` is disabled in our config,
    // `paused` in the client's, `mine` is ours already; `new` is imported.
    let text = r#"{
  "mcpServers": {
    "editor": { "command": "x", "args": ["${workspaceFolder}"] },
    "off": { "command": "off" },
    "paused": { "command": "p", "disabled": true },
    "mine": { "command": "mine" },
    "new": { "command": "new" }
  }
}"#;
    let ours = json!({ "mcpServers": {
        "off": { "command": "off", "disabled": true },
        "mine": { "command": "mine" },
    }});
    let p = plan_with(Client::Cursor, text, "default", &ours);
    assert_eq!(fields(&p.removed), ["mcpServers.mine", "mcpServers.new"]);
    let stays: Vec<&str> = p.unchanged.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        stays,
        ["mcpServers.editor", "mcpServers.off", "mcpServers.paused"]
    );
    assert!(
        p.unchanged[0].1.ends_with(", so it stays"),
        "{:?}",
        p.unchanged
    );
    assert!(
        p.unchanged[1]
            .1
            .starts_with("disabled in Lifeline's config")
    );
    assert_eq!(p.unchanged[2].1, "disabled in the client");
    let imported: Vec<&str> = p.import.servers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(imported, ["new"]);
    let v = parsed(&p.text);
    let names: Vec<&String> = v["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["editor", "off", "paused", "lifeline"]);
    assert_eq!(v["mcpServers"]["lifeline"], entry("default", "cursor"));
}

#[test]
fn lifelines_own_entries_go_when_the_profile_serves_them_and_other_profiles_stay() {
    let text = r#"{"mcpServers": {
      "fs": {"command": "/x/lifeline", "args": ["connect", "fs", "--config", "/c.json"]},
      "web": {"command": "lifeline.exe", "args": ["connect", "web"]},
      "lean": {"command": "/x/lifeline", "args": ["connect", "--profile", "lean"]}
    }}"#;
    let ours = json!({ "mcpServers": { "fs": { "command": "npx" } } });
    let p = plan_with(Client::Cursor, text, "default", &ours);
    assert_eq!(fields(&p.removed), ["mcpServers.fs"]);
    assert_eq!(
        p.unchanged,
        [
            (
                "mcpServers.web".to_owned(),
                "Lifeline's config has no server web".to_owned()
            ),
            (
                "mcpServers.lean".to_owned(),
                "another of Lifeline's entries (profile lean)".to_owned()
            ),
        ]
    );
    assert!(p.import.servers.is_empty());
}

#[test]
fn the_members_taken_out_leave_valid_json_wherever_they_are() {
    let ours = json!({ "mcpServers": {}, "lifeline": { "profiles": {
        "p": { "servers": ["s*"] } } } });
    let check = |text: &str, kept: &[&str]| {
        let p = plan_with(Client::ClaudeDesktop, text, "p", &ours);
        let v = parsed(&p.text);
        let names: Vec<&str> = v["mcpServers"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(names, kept, "{text}\n=>\n{}", p.text);
        assert!(serde_json::from_str::<Value>(&p.text).is_ok(), "{}", p.text);
    };
    // First, middle, last, several at the end, all; on one line and on many.
    check(
        "{\"mcpServers\": {\"s1\": {\"command\": \"a\"}, \"k\": {\"command\": \"k\"}}}",
        &["lifeline", "k"],
    );
    check(
        "{\n  \"mcpServers\": {\n    \"k\": {\"command\": \"k\"},\n    \"s1\": {\"command\": \"a\"},\n    \"j\": {\"command\": \"j\"},\n    \"s2\": {\"command\": \"b\"},\n    \"s3\": {\"command\": \"c\"}\n  }\n}",
        &["k", "lifeline", "j"],
    );
    check(
        "{\"mcpServers\": {\"k\": {\"command\": \"k\"}, \"j\": {\"command\": \"j\"}, \"s1\": {\"command\": \"a\"}, \"s2\": {\"command\": \"b\"}}}",
        &["k", "j", "lifeline"],
    );
    check(
        "{\n  \"mcpServers\": {\n    \"s1\": {\"command\": \"a\"},\n    \"s2\": {\"command\": \"b\"}\n  }\n}\n",
        &["lifeline"],
    );
    // None served: the entry is added after the last, or into an empty object, or as a new
    // key of the file.
    check(
        "{\n  \"mcpServers\": {\n    \"k\": {\"command\": \"k\"}\n  }\n}\n",
        &["k", "lifeline"],
    );
    check("{\n  \"mcpServers\": {}\n}\n", &["lifeline"]);
    check("{\n  \"globalShortcut\": \"\"\n}\n", &["lifeline"]);
    check("{}", &["lifeline"]);
}

#[test]
fn an_entry_already_there_is_rewritten_and_a_second_connect_changes_nothing() {
    let ours = coding();
    let first = plan_with(Client::Cursor, CURSOR, "coding", &ours);
    let again = plan_with(Client::Cursor, &first.text, "coding", &ours);
    assert!(!again.changes(), "{:?}", again.routed);
    assert_eq!(again.text, first.text);
    assert!(again.diff.is_empty());

    // Another profile: the entry's args change, its own keys stay.
    let text = first.text.replace(
        "      \"args\": [",
        "      \"autoApprove\": [],\n      \"args\": [",
    );
    let p = plan_with(Client::Cursor, &text, "default", &ours);
    assert_eq!(fields(&p.routed), ["mcpServers.lifeline"]);
    let v = parsed(&p.text);
    assert_eq!(v["mcpServers"]["lifeline"]["args"][2], "default");
    assert_eq!(v["mcpServers"]["lifeline"]["autoApprove"], json!([]));
    assert_eq!(fields(&p.removed), ["mcpServers.notes"]);
}

#[test]
fn the_entry_name_is_never_taken_from_a_server_lifeline_does_not_run() {
    let text = "{\"mcpServers\": {\"lifeline\": {\"command\": \"someone-elses\"}}}";
    let ours = json!({ "mcpServers": {} });
    let profile = Profile::everything("default");
    let e = plan_profile(&request(Client::Cursor, text, &profile, &ours)).unwrap_err();
    assert!(e.to_string().contains("--entry"), "{e}");
    let mut req = request(Client::Cursor, text, &profile, &ours);
    req.entry = "mine";
    let p = plan_profile(&req).unwrap();
    assert_eq!(fields(&p.routed), ["mcpServers.mine"]);
    assert_eq!(fields(&p.removed), ["mcpServers.lifeline"]);
    req.entry = "not a name";
    assert!(plan_profile(&req).is_err());
}

#[test]
fn claude_code_projects_lose_their_copies_and_keep_what_differs() {
    let text = r#"{
  "mcpServers": { "a": { "type": "stdio", "command": "a-server" } },
  "projects": {
    "/p": { "mcpServers": {
      "a": { "type": "stdio", "command": "a-server" },
      "b": { "type": "stdio", "command": "b-server" }
    } },
    "/q": { "mcpServers": { "a": { "type": "stdio", "command": "another" } } }
  }
}"#;
    let ours = json!({ "mcpServers": {} });
    let p = plan_with(Client::ClaudeCode, text, "default", &ours);
    assert_eq!(
        fields(&p.removed),
        [
            "mcpServers.a",
            "projects.\"/p\".mcpServers.a",
            "projects.\"/p\".mcpServers.b"
        ]
    );
    assert_eq!(p.unchanged.len(), 1);
    assert!(
        p.unchanged[0]
            .1
            .starts_with("differs from the first server named a")
    );
    let v = parsed(&p.text);
    assert_eq!(v["mcpServers"]["lifeline"]["type"], "stdio");
    assert_eq!(v["projects"]["/p"]["mcpServers"], json!({}));
    assert_eq!(v["projects"]["/q"]["mcpServers"]["a"]["command"], "another");
}

#[test]
fn an_unknown_profile_is_refused_naming_the_profiles() {
    let e = profile_of(&coding(), "writing").unwrap_err();
    assert_eq!(
        e.message,
        "there is no profile `writing` in Lifeline's config; its profiles are: default, coding"
    );
    let bad =
        json!({ "mcpServers": {}, "lifeline": { "profiles": { "p": { "servers": ["nope"] } } } });
    let e = profile_of(&bad, "p").unwrap_err();
    assert!(e.to_string().contains("lifeline.profiles.p"), "{e}");
}

#[test]
fn the_config_argument_is_passed_on() {
    let ours = coding();
    let profile = profile_of(&ours, "coding").unwrap();
    let mut req = request(Client::Cursor, CURSOR, &profile, &ours);
    req.config_arg = Some(Path::new("/etc/l.json"));
    let v = parsed(&plan_profile(&req).unwrap().text);
    let args = v["mcpServers"]["lifeline"]["args"].as_array().unwrap();
    assert_eq!(
        args[args.len() - 2..],
        [json!("--config"), json!("/etc/l.json")]
    );
}

#[test]
fn connect_then_restore_is_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("data").join("clients.json");
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, CURSOR).unwrap();
    let p = plan_with(Client::Cursor, CURSOR, "coding", &coding());
    let now = UNIX_EPOCH + Duration::from_secs(1_796_000_000);
    let rec = backup::write(Client::Cursor, &path, CURSOR, &p, &state, now).unwrap();
    assert_eq!(rec.servers, ["lifeline", "fs", "gh"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), p.text);
    assert_eq!(std::fs::read_to_string(&rec.backup).unwrap(), CURSOR);
    backup::restore(Client::Cursor, Some(&path), false, &state).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), CURSOR);
}

#[test]
fn endpoints_read_back_the_profile_each_entry_serves() {
    let text = r#"{ "mcpServers": {
      "lifeline": { "command": "/x/lifeline", "args": ["connect", "--profile", "coding",
                    "--client", "cursor", "--entry", "lifeline", "--config", "/c.json"] },
      "all": { "command": "lifeline", "args": ["connect", "--all", "--entry=all"] },
      "one": { "command": "lifeline", "args": ["connect", "fs"] },
      "direct": { "command": "npx" }
    } }"#;
    let found = endpoints(Client::Cursor, Path::new("/c"), text).unwrap();
    assert_eq!(
        found,
        [
            Endpoint {
                field: "mcpServers.lifeline".into(),
                profile: "coding".into(),
                kind: Some("cursor".into()),
                entry: "lifeline".into(),
            },
            Endpoint {
                field: "mcpServers.all".into(),
                profile: "default".into(),
                kind: None,
                entry: "all".into(),
            },
        ]
    );
}
