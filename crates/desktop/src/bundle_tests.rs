//! `bundle_preview` and `bundle_export` through the command table (as the window process sends them), with canary
//! secrets in the config: the preview's wire payload carries none, and the export writes
//! the previewed files or fails with `{kind, message}` naming the path.

use crate::Core;
use crate::test_support::{block_on, core_with, invoke, start};
use lifeline_core::config;
use lifeline_core::events::{EventBody, StateName};
use serde_json::json;
use std::sync::Arc;

const CANARIES: [&str; 5] = [
    "envcanary4Hq2",
    "argcanary7Lw1",
    "hdrcanary3Zp8",
    "usrcanary6Tm5",
    "qrycanary2Xb9",
];

fn app() -> Arc<Core> {
    let text = json!({"mcpServers": {
        "gone": {"command": "/nonexistent/lifeline-app-test",
                 "args": [format!("--token={}", CANARIES[1])],
                 "env": {"TOKEN": CANARIES[0]}},
        "web": {"url": format!("http://{}:pw@127.0.0.1:9/mcp?key={}", CANARIES[3], CANARIES[4]),
                "headers": {"Authorization": format!("Bearer {}", CANARIES[2])},
                "disabled": true},
    }})
    .to_string();
    let state = start(config::parse(&text, None, &|_| None).unwrap(), None);
    block_on(async {
        state
            .wait_for("gone", |s| s.state.state == Some(StateName::Retired))
            .await;
        state
            .wait_for("web", |s| s.state.state == Some(StateName::Disabled))
            .await;
        // The bundle's events come from a recorder task: wait until it holds the failure.
        state
            .recorded(|e| e.server == "gone" && matches!(e.body, EventBody::Failure { .. }))
            .await;
    });
    core_with(state)
}

#[test]
fn the_preview_lists_every_file_and_carries_no_secret() {
    let core = app();
    let preview = invoke(&core, "bundle_preview", json!({})).unwrap();
    let wire = preview.to_string();
    for canary in CANARIES {
        assert!(!wire.contains(canary), "{canary} in the preview: {wire}");
    }
    let paths: Vec<&str> = preview["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths[..3],
        [
            "manifest.json",
            "config.redacted.json",
            "servers/gone/state.json"
        ]
    );
    assert!(paths.contains(&"servers/gone/failures.jsonl"), "{paths:?}");
    let failures = preview["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "servers/gone/failures.jsonl")
        .unwrap();
    assert!(
        failures["content"]
            .as_str()
            .unwrap()
            .contains("\"kind\":\"spawn\""),
        "the retirement is in the bundle: {failures}"
    );
    assert!(preview["default_path"].as_str().unwrap().ends_with(".zip"));
}

#[test]
fn export_writes_the_previewed_bundle_or_names_what_is_wrong() {
    let core = app();
    let preview = invoke(&core, "bundle_preview", json!({})).unwrap();
    let dir = std::env::temp_dir().join(format!("lifeline-app-bundle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("d.zip");
    let exported = invoke(&core, "bundle_export", json!({"path": path})).unwrap();
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(exported["bytes"], on_disk.len());
    // The manifest written is the one previewed (same id, same bytes, stored deflated).
    let id = preview["diagnostics_id"].as_str().unwrap();
    assert_eq!(id.len(), 16);
    let manifest = &preview["files"][0]["content"];
    assert!(manifest.as_str().unwrap().contains(id));

    // Saving again under a typed name does not replace the file; after the save dialog
    // returned it (it asked the person), it does.
    let e = invoke(&core, "bundle_export", json!({"path": path})).unwrap_err();
    assert_eq!(e["kind"], "config");
    assert!(
        e["message"].as_str().unwrap().contains("already exists"),
        "{e}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), on_disk);
    core.state.bundle_confirm_replace(path.clone());
    invoke(&core, "bundle_export", json!({"path": path})).unwrap();

    let e = invoke(&core, "bundle_export", json!({"path": "relative.zip"})).unwrap_err();
    assert_eq!(e["kind"], "config");
    assert!(
        e["message"].as_str().unwrap().contains("not a full path"),
        "{e}"
    );
    let missing = dir.join("nope").join("d.zip");
    let e = invoke(&core, "bundle_export", json!({"path": missing})).unwrap_err();
    assert_eq!(e["kind"], "config");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains(&missing.display().to_string()) && message.contains("does not exist"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 25, item 13, as the app makes a bundle: a server that writes a password and an
/// API key only to its stderr (`{"password":"…"}`, `x-api-key: …`) and was started with the
/// same values as bare positional arguments. What its stderr taught is masked in every
/// file of the preview, `config.redacted.json` included. Unix only: the server is `sh`.
#[cfg(unix)]
#[test]
fn what_a_server_s_stderr_teaches_is_masked_in_every_file() {
    let (password, api_key) = ("DeskPw5Kq8Zr", "DeskKey3Wm7Tx");
    // It reads `initialize` first, so its exit, not a write to a closed stdin, is the failure.
    let script = r#"read -r _; printf '{"password":"%s"}\nx-api-key: %s\n' "$1" "$2" >&2; exit 3"#;
    let text = json!({"mcpServers": {"leaky": {
        "command": "sh",
        "args": ["-c", script, "leaky", password, api_key],
        "reconnect": {"enabled": false},
    }}})
    .to_string();
    let state = start(config::parse(&text, None, &|_| None).unwrap(), None);
    block_on(async {
        // The failure quotes the last stderr line: by then the stderr is read.
        state
            .recorded(|e| {
                e.server == "leaky"
                    && matches!(&e.body, EventBody::Failure { failure }
                        if failure.message.contains("x-api-key"))
            })
            .await;
    });
    let core = core_with(state);
    let preview = invoke(&core, "bundle_preview", json!({})).unwrap();
    for file in preview["files"].as_array().unwrap() {
        let content = file["content"].as_str().unwrap();
        for canary in [password, api_key] {
            assert!(
                !content.contains(canary),
                "{canary} in {}:\n{content}",
                file["path"]
            );
        }
    }
    let config = preview["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "config.redacted.json")
        .unwrap();
    let config: serde_json::Value =
        serde_json::from_str(config["content"].as_str().unwrap()).unwrap();
    let args = &config["mcpServers"]["leaky"]["args"];
    assert_eq!(
        (&args[3], &args[4]),
        (&json!("***"), &json!("***")),
        "{args}"
    );
}
