//! `lifeline import`: another client's file merged into ours, atomically, never
//! overwriting a name, saying what was skipped and why, and never printing a secret.

use crate::cli::lifeline;
use crate::support::TempDirGuard;
use serde_json::{Value, json};

const CANARY: &str = "CANARY-import-5e1f02";

fn claude_desktop_file(dir: &TempDirGuard) -> String {
    let path = dir.path().join("claude_desktop_config.json");
    let file = json!({ "mcpServers": {
        "fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
        "gh": { "command": "gh-mcp", "env": { "GITHUB_TOKEN": CANARY } },
        "prompted": { "command": "y", "env": { "K": "${input:key}" } },
    }});
    std::fs::write(&path, file.to_string()).unwrap();
    path.display().to_string()
}

fn servers(path: &std::path::Path) -> Vec<String> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["mcpServers"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[tokio::test]
async fn import_merges_reports_and_never_overwrites() {
    let dir = TempDirGuard::new("import");
    let from = claude_desktop_file(&dir);
    let ours = dir.path().join("lifeline").join("config.json");
    let ours_s = ours.display().to_string();

    let dry = lifeline(&["import", &from, "--config", &ours_s, "--dry-run", "--json"]).await;
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(!ours.exists(), "a dry run writes nothing");

    let run = lifeline(&["import", &from, "--config", &ours_s, "--json"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let result = &run.outcome()["result"];
    assert_eq!(result["added"], json!(["fs", "gh"]));
    let skipped = result["skipped"].as_array().unwrap();
    assert_eq!(skipped[0]["server"], "prompted");
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("${input:key}"),
        "{skipped:?}"
    );
    assert_eq!(servers(&ours), ["fs", "gh"]);
    assert!(
        !run.everything().contains(CANARY),
        "the env value is never printed: {run:?}"
    );

    // Our own edits survive a second import; nothing is overwritten.
    let mut mine: Value = serde_json::from_str(&std::fs::read_to_string(&ours).unwrap()).unwrap();
    mine["mcpServers"]["fs"]["args"] = json!(["mine"]);
    mine["x-custom"] = json!({"kept": true});
    std::fs::write(&ours, mine.to_string()).unwrap();
    let again = lifeline(&["import", &from, "--config", &ours_s]).await;
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.stdout.contains("already configured"), "{again:?}");
    let after: Value = serde_json::from_str(&std::fs::read_to_string(&ours).unwrap()).unwrap();
    assert_eq!(after["mcpServers"]["fs"]["args"], json!(["mine"]));
    assert_eq!(after["x-custom"], json!({"kept": true}));
}

#[tokio::test]
async fn importing_a_missing_file_says_where_it_looked() {
    let dir = TempDirGuard::new("import-missing");
    let missing = dir.path().join("nope.json").display().to_string();
    let ours = dir.path().join("config.json").display().to_string();
    let run = lifeline(&["import", &missing, "--config", &ours]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("nope.json"), "{run:?}");
}
