//! The webview's capabilities grant only what the UI uses: every `@tauri-apps/*` import in
//! ui/src is one this list knows, and the capability file grants exactly the permissions
//! those imports need. A new API in the UI fails here until its permission is added on
//! purpose (and an unused permission fails here too).

use serde_json::Value;
use std::path::{Path, PathBuf};

/// What each import the UI may use needs from the capability file.
const USED: [(&str, &[&str]); 2] = [
    // `invoke` of the app's own commands needs no permission (no app manifest); a
    // Channel's deliveries are always allowed.
    (
        "import { Channel, invoke } from \"@tauri-apps/api/core\";",
        &[],
    ),
    (
        "import { listen } from \"@tauri-apps/api/event\";",
        &["core:event:allow-listen", "core:event:allow-unlisten"],
    ),
];

fn ui_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            ui_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "ts" || e == "svelte") {
            out.push(path);
        }
    }
}

#[test]
fn the_webview_may_use_only_what_the_ui_imports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    ui_sources(&root.join("../ui/src"), &mut files);
    let mut imports: Vec<String> = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for line in text.lines().filter(|l| l.contains("from \"@tauri-apps/")) {
            assert!(
                USED.iter().any(|(import, _)| line.trim() == *import),
                "{} imports `{}`: add its permissions to capabilities/default.json and USED",
                file.display(),
                line.trim()
            );
            imports.push(line.trim().to_owned());
        }
    }
    let mut needed: Vec<&str> = USED
        .iter()
        .filter(|(import, _)| imports.iter().any(|i| i == import))
        .flat_map(|(_, permissions)| permissions.iter().copied())
        .collect();
    needed.sort_unstable();
    let capability: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("capabilities/default.json")).unwrap(),
    )
    .unwrap();
    let mut granted: Vec<&str> = capability["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    granted.sort_unstable();
    assert_eq!(granted, needed);
    assert_eq!(capability["windows"], serde_json::json!(["main"]));
    let all: Vec<_> = std::fs::read_dir(root.join("capabilities"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(all, ["default.json"], "one capability file");
}
