//! The history file against real servers: secrets that a server leaks (a stdio server
//! printing its environment, a connection string, a compact JSON password and an OAuth
//! fragment to stderr; an HTTP server quoting the Authorization header in a 401; a key in
//! a URL's path) are scrubbed before they are written, so no byte of the file holds them.

use std::sync::Arc;

use lifeline_core::config;
use lifeline_core::events::{EventBus, StateName};
use lifeline_core::history::{History, Options, Query};
use lifeline_core::redact::Redactor;
use lifeline_core::supervisor::Fleet;
use serde_json::json;

use crate::support::{self, PATIENCE, TempDirGuard};

const HEADER: &str = "hdrcanary-history-4Kp9";
const ENV: &str = "envcanary-history-7Wd2";
// Caught by their shapes alone (issue 12).
const PATH_KEY: &str = "pathkey5Hq8Zr2Lw7Mc4Tb";
const CONN: &str = "connpw3Jx9Rk";
const JSON_FIELD: &str = "jsonpw8Dm2Wq";
const FRAGMENT: &str = "fragtok7Nb4Ys";

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn no_canary_secret_reaches_the_history_file() {
    let dir = TempDirGuard::new("history-canary");
    let body = json!({"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32001, "message": format!("body-marker: token {HEADER} rejected")
    }});
    let http = support::http_fixture(json!({
        "rules": [{"method": "initialize", "action": {
            "kind": "http_status", "status": 401, "body": body.to_string()
        }}]
    }))
    .await;
    // The stdio fixture prints its secret to stderr and crashes on initialize, so the
    // failure's message carries its last stderr line.
    let script = json!({
        "stderr": format!(
            "stderr-marker token={ENV} redis://:{CONN}@cache:6379 {{\"password\":\"{JSON_FIELD}\"}} /cb#access_token={FRAGMENT}\n"
        ),
        "rules": [{"method": "initialize", "action": {"kind": "crash", "code": 3}}]
    });
    let text = json!({"mcpServers": {
        "remote": {"type": "http", "url": http.url,
                   "headers": {"Authorization": format!("Bearer {HEADER}")}},
        "pathkey": {"url": format!("{}/{PATH_KEY}/sse", http.url),
                    "reconnect": {"enabled": false}},
        "leaky": {
            "command": support::fixture_bin(),
            // The script as an argument: an env value that looks like a secret is one, and
            // every word of it would be scrubbed as configured, hiding the shapes under test.
            "args": ["stdio", "--script", script.to_string()],
            "env": {"API_TOKEN": ENV},
            "reconnect": {"initialDelayMs": 20, "maxDelayMs": 100, "maxAttempts": 2,
                          "quarantineMs": [20, 20, 20]},
        },
    }})
    .to_string();
    let config = config::parse(&text, None, &|_| None).unwrap();

    let path = dir.path().join("history.db");
    let options = Options {
        redactor: Redactor::new(config.secrets()),
        ..Default::default()
    };
    let (history, notice) = History::open(&path, options.clone());
    assert_eq!(notice, None);
    let bus = Arc::new(EventBus::new(1024));
    let recorder = tokio::spawn(history.clone().record_from(bus.subscribe()));
    let fleet = Fleet::start(&config, bus).unwrap();
    let settled = async {
        fleet
            .get("remote")
            .unwrap()
            .wait_for(|s| s.state.state == Some(StateName::Retired))
            .await;
        fleet
            .get("leaky")
            .unwrap()
            .wait_for(|s| {
                s.state
                    .cause
                    .as_ref()
                    .is_some_and(|c| c.kind == "process_exit")
            })
            .await;
    };
    let settled = async {
        settled.await;
        fleet
            .get("pathkey")
            .unwrap()
            .wait_for(|s| s.state.cause.is_some())
            .await;
    };
    tokio::time::timeout(PATIENCE, settled)
        .await
        .expect("both servers failed");
    fleet.stop().await;
    // The fleet held the last reference to the bus: the recorder drains it and ends.
    tokio::time::timeout(PATIENCE, recorder)
        .await
        .unwrap()
        .unwrap();
    history.close();

    // Read back by the next run, as the app would.
    let (next, _) = History::open(&path, options);
    let query = Query {
        limit: 1000,
        ..Default::default()
    };
    let failures = next.failures(&query).unwrap();
    let messages: Vec<&str> = failures
        .iter()
        .filter_map(|f| f.failure["message"].as_str())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("stderr-marker token=***")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("body-marker")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("/mcp/***/sse")),
        "{messages:?}"
    );
    next.close();

    // The file and its WAL: rows may still be in either.
    let mut written = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        written.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    for canary in [HEADER, ENV, PATH_KEY, CONN, JSON_FIELD, FRAGMENT] {
        assert!(!contains(&written, canary), "{canary} reached the history");
    }
    assert!(
        contains(&written, "stderr-marker"),
        "the place it would have been is in the file"
    );
}
