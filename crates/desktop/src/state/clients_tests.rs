//! The "Connect a client" commands against real files in a temp dir (a Cursor config, the
//! connection record, Lifeline's config): list, the masked preview, apply with a backup and
//! an import, restore byte for byte, and the "changed since" refusal then a forced restore.

use super::*;

const CURSOR: &str = r#"{
  // Cursor's servers
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": { "GITHUB_TOKEN": "ghp_supersecretvalue123456" }
    },
    "notes": { "command": "lifeline", "args": ["connect", "notes"] }
  },
  "x-keep": true
}
"#;

struct Temp {
    _dir: tempfile::TempDir,
    env: ClientsEnv,
    cursor: PathBuf,
}

fn temp() -> Temp {
    let dir = tempfile::tempdir().unwrap();
    let cursor = dir.path().join(".cursor").join("mcp.json");
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    std::fs::write(&cursor, CURSOR).unwrap();
    let env = ClientsEnv {
        state: Some(dir.path().join("data").join("clients.json")),
        files: vec![
            (Client::Cursor, vec![cursor.clone()]),
            (Client::VsCode, vec![dir.path().join("nope.json")]),
        ],
        command: Some(PathBuf::from("/opt/lifeline/bin/lifeline")),
        config: dir.path().join("lifeline").join("config.json"),
        config_is_default: false,
    };
    Temp {
        _dir: dir,
        env,
        cursor,
    }
}

#[test]
fn the_clients_are_listed_with_their_servers() {
    let t = temp();
    let all = list(&t.env);
    let ids: Vec<_> = all.iter().map(|c| c.client.as_str()).collect();
    assert_eq!(ids, ["claude-desktop", "claude-code", "cursor", "vscode"]);
    let cursor = &all[2];
    assert_eq!(cursor.label, "Cursor");
    assert_eq!(cursor.path.as_deref(), Some(t.cursor.to_str().unwrap()));
    let servers: Vec<_> = cursor
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.through_lifeline))
        .collect();
    assert_eq!(servers, [("github", false), ("notes", true)]);
    assert!(!cursor.restorable);
    assert_eq!(cursor.backup, None);
    assert_eq!((all[3].path.as_deref(), all[3].servers.len()), (None, 0));
}

#[test]
fn the_preview_is_the_masked_diff_and_writes_nothing() {
    let t = temp();
    let p = preview(&t.env, "cursor", vec!["github".into()]).unwrap();
    assert_eq!(p.routed, ["mcpServers.github"]);
    assert_eq!(p.import, ["github"]);
    assert!(p.diff.contains("/opt/lifeline/bin/lifeline"), "{}", p.diff);
    assert!(p.diff.contains("--config"), "{}", p.diff);
    assert!(!p.diff.contains("ghp_supersecretvalue123456"), "{}", p.diff);
    assert_eq!(std::fs::read_to_string(&t.cursor).unwrap(), CURSOR);
    assert!(!t.env.config.exists());
    let e = preview(&t.env, "cursor", vec!["nope".into()]).unwrap_err();
    assert_eq!(e.kind, "config");
    let e = preview(&t.env, "vscode", vec!["x".into()]).unwrap_err();
    assert!(
        e.message.contains("no VS Code config found"),
        "{}",
        e.message
    );
}

#[test]
fn connect_then_restore_round_trips_byte_for_byte() {
    let t = temp();
    let beside = t.cursor.parent().unwrap().to_owned();
    let before: Vec<_> = std::fs::read_dir(&beside).unwrap().collect();
    let done = connect(&t.env, "cursor", vec!["github".into()]).unwrap();
    assert_eq!(done.imported, ["github"]);
    let backup = PathBuf::from(done.backup.unwrap());
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), CURSOR);
    // In the data dir, beside clients.json; nothing new beside the client's file.
    let data = t.env.state.as_ref().unwrap().parent().unwrap();
    assert_eq!(backup.parent(), Some(data.join("backups").as_path()));
    assert_eq!(std::fs::read_dir(&beside).unwrap().count(), before.len());
    let now = std::fs::read_to_string(&t.cursor).unwrap();
    assert!(now.contains("\"/opt/lifeline/bin/lifeline\""), "{now}");
    assert!(
        !now.contains("ghp_supersecretvalue123456"),
        "moved to Lifeline's config"
    );
    assert!(now.contains("// Cursor's servers") && now.contains("\"x-keep\": true"));
    let ours = std::fs::read_to_string(&t.env.config).unwrap();
    assert!(ours.contains("server-github"), "{ours}");
    assert!(list(&t.env)[2].restorable);
    assert_eq!(
        list(&t.env)[2].backup.as_deref(),
        Some(backup.to_str().unwrap()),
        "the list says where the backup is"
    );
    assert!(list(&t.env)[2].servers.iter().all(|s| s.through_lifeline));

    let restored = restore(&t.env, "cursor", false).unwrap();
    assert_eq!(restored.servers, ["github"]);
    assert_eq!(restored.backup, backup.display().to_string());
    assert_eq!(std::fs::read_to_string(&t.cursor).unwrap(), CURSOR);
    let e = restore(&t.env, "cursor", false).unwrap_err();
    assert!(e.message.contains("nothing to restore"), "{}", e.message);
}

#[test]
fn a_file_changed_since_is_restored_only_when_forced() {
    let t = temp();
    connect(&t.env, "cursor", vec!["github".into()]).unwrap();
    let edited = std::fs::read_to_string(&t.cursor)
        .unwrap()
        .replace("\"x-keep\": true", "\"x-keep\": false");
    std::fs::write(&t.cursor, &edited).unwrap();
    let e = restore(&t.env, "cursor", false).unwrap_err();
    assert_eq!(e.kind, "changed_since");
    assert!(e.message.contains("x-keep: changed since"), "{}", e.message);
    assert_eq!(std::fs::read_to_string(&t.cursor).unwrap(), edited);
    restore(&t.env, "cursor", true).unwrap();
    assert_eq!(std::fs::read_to_string(&t.cursor).unwrap(), CURSOR);
}
