//! Secrets learned at run time (issue 25, item 13), in the outside check's exact shape: a
//! real stdio server writes a password and an API key only to its stderr
//! (`{"password":"…"}`, `x-api-key: …`), is started with the same two values as bare
//! positional arguments, and then says them once more bare (`started with … …`) before
//! it crashes on `initialize`, so the failure quotes that line. No rule catches a bare
//! value; only what the stderr taught does. Neither value may reach any file of a bundle
//! (`lifeline bundle`), `watch --json` or `check --json`, the events, or the history file.

use crate::bundle::unzip;
use crate::cli::CliRun;
use crate::support::{self, PATIENCE, TempDirGuard};
use lifeline_core::events::{Event, EventBus};
use lifeline_core::history::{History, Options, Query};
use lifeline_core::supervisor::Fleet;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

// Under 16 characters and of no token shape: no rule of today's catches them bare.
const PASSWORD: &str = "CANARYpw4Lq9Zx";
const API_KEY: &str = "CANARYky7Vb2Tn";

fn assert_clean(what: &str, text: &str) {
    let leaked: Vec<&str> = [PASSWORD, API_KEY]
        .into_iter()
        .filter(|c| text.contains(c))
        .collect();
    assert!(leaked.is_empty(), "{leaked:?} leaked in {what}:\n{text}");
}

/// The config: the server's script in a file (so no config value holds the canaries but
/// the two positional arguments), and the canaries after `--`.
fn scene(dir: &TempDirGuard) -> PathBuf {
    let script = json!({
        "stderr": format!(
            "{{\"password\":\"{PASSWORD}\"}}\nx-api-key: {API_KEY}\nstarted with {PASSWORD} {API_KEY}\n"
        ),
        "rules": [{"method": "initialize", "action": {"kind": "crash", "code": 3}}],
    });
    let script_file = dir.path().join("script.json");
    std::fs::write(&script_file, script.to_string()).expect("a script file");
    support::write_config(
        dir,
        json!({"leaky": {
            "command": support::fixture_bin(),
            "args": ["stdio", "--script", format!("@{}", script_file.display()),
                     "--", PASSWORD, API_KEY],
            "reconnect": {"initialDelayMs": 20, "maxDelayMs": 100, "maxAttempts": 2,
                          "quarantineMs": [50, 50, 50]},
        }}),
    )
}

async fn run(args: &[&str]) -> CliRun {
    crate::cli::lifeline_with_env(args, &[("LIFELINE_LOG", "trace")]).await
}

#[tokio::test]
async fn stderr_secrets_reach_no_file_of_the_bundle() {
    let dir = TempDirGuard::new("learned-bundle");
    let config = scene(&dir);
    let out = dir.path().join("diagnostics.zip");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).expect("a log folder");
    let bundle = run(&[
        "bundle",
        "--config",
        config.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--for",
        "20s",
        "--logs",
        logs.to_str().expect("utf-8"),
        "--json",
    ])
    .await;
    assert_eq!(bundle.code, 0, "{bundle:?}");
    assert_clean("bundle output", &bundle.everything());
    let files = unzip(&out);
    for (name, bytes) in &files {
        assert_clean(name, &String::from_utf8_lossy(bytes));
    }
    let text = |name: &str| -> String {
        let (_, bytes) = files
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} missing"));
        String::from_utf8_lossy(bytes).into_owned()
    };
    // The places the canaries were are there, masked, so the search above could fail.
    let config: Value = serde_json::from_str(&text("config.redacted.json")).expect("JSON");
    let args = &config["mcpServers"]["leaky"]["args"];
    assert_eq!(args[3], "--", "{args}");
    assert_eq!(
        (&args[4], &args[5]),
        (&json!("***"), &json!("***")),
        "{args}"
    );
    let stderr = text("servers/leaky/stderr-gen-1.txt");
    for shown in [
        "{\"password\":\"***\"}",
        "x-api-key: ***",
        "started with *** ***",
    ] {
        assert!(stderr.contains(shown), "{shown} not in:\n{stderr}");
    }
    assert!(
        text("servers/leaky/failures.jsonl").contains("started with *** ***"),
        "{}",
        text("servers/leaky/failures.jsonl")
    );
}

#[tokio::test]
async fn stderr_secrets_reach_no_watch_or_check_output() {
    let dir = TempDirGuard::new("learned-watch");
    let config = scene(&dir);
    let config = config.to_str().expect("utf-8");
    let watch = run(&["watch", "--json", "--for", "3s", "--config", config]).await;
    assert_eq!(watch.code, 0, "{watch:?}");
    assert_clean("watch --json", &watch.everything());
    assert!(
        watch.stdout.contains("started with *** ***"),
        "the failure quotes the line: {watch:?}"
    );
    let check = run(&["check", "--json", "--config", config]).await;
    assert_ne!(check.code, 0, "{check:?}");
    assert_clean("check --json", &check.everything());
    assert!(check.stdout.contains("started with *** ***"), "{check:?}");
}

/// In process, as the app runs it: every event the bus publishes and every byte of the
/// history file.
#[tokio::test]
async fn stderr_secrets_reach_no_event_or_history_row() {
    let dir = TempDirGuard::new("learned-history");
    let text = std::fs::read_to_string(scene(&dir)).expect("the config");
    let config = lifeline_core::config::parse(&text, None, &|_| None).expect("a config");
    let path = dir.path().join("history.db");
    let options = Options {
        redactor: lifeline_core::redact::Redactor::new(config.secrets()),
        ..Default::default()
    };
    let (history, notice) = History::open(&path, options.clone());
    assert_eq!(notice, None);
    let bus = Arc::new(EventBus::new(1024));
    let mut events = bus.subscribe();
    let recorder = tokio::spawn(history.clone().record_from(bus.subscribe()));
    let fleet = Fleet::start(&config, bus).expect("a fleet");
    let quoted = async {
        fleet
            .get("leaky")
            .expect("the server")
            .wait_for(|s| {
                s.state
                    .cause
                    .as_ref()
                    .is_some_and(|c| c.message.contains("started with"))
            })
            .await;
    };
    tokio::time::timeout(PATIENCE, quoted)
        .await
        .expect("the failure quoting the stderr line within PATIENCE");
    fleet.stop().await;
    tokio::time::timeout(PATIENCE, recorder)
        .await
        .expect("the recorder ends with the bus")
        .expect("the recorder");
    history.close();

    let mut seen: Vec<Event> = Vec::new();
    while let Ok(e) = events.try_recv() {
        seen.push(e);
    }
    let published = serde_json::to_string(&seen).expect("events are JSON");
    assert_clean("the events", &published);
    assert!(published.contains("started with *** ***"), "{published}");

    let (next, _) = History::open(&path, options);
    let query = Query {
        limit: 1000,
        ..Default::default()
    };
    let rows = serde_json::to_string(&next.events(&query).expect("events")).expect("JSON");
    assert_clean("history rows", &rows);
    assert!(rows.contains("started with *** ***"), "{rows}");
    next.close();
    for entry in std::fs::read_dir(dir.path()).expect("the folder") {
        let entry = entry.expect("an entry").path();
        if entry.extension().is_some_and(|e| e == "json") {
            continue;
        }
        let bytes = std::fs::read(&entry).expect("a file");
        assert_clean(
            &entry.display().to_string(),
            &String::from_utf8_lossy(&bytes),
        );
    }
}
