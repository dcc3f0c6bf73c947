//! Desktop notifications never carry a secret: a real stdio fixture server that writes
//! secrets in every shape of issue 12 to stderr, then crashes until it gives up; the
//! notification its last state event raises is searched for each canary.

use super::notification_for;
use crate::test_support::fixture;
use lifeline_core::config;
use lifeline_core::events::EventBus;
use lifeline_core::supervisor::Fleet;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Each caught by its shape alone: none is configured as a secret.
const CANARIES: [&str; 6] = [
    "pathkey3Wq8Zr5Lm2Xc7Tb",
    "connpw6Hd2Ks",
    "jsonpw4Lp9Vx",
    "cookie8Qm3Rt",
    "fragtok2Zn6Yw",
    "hf_Fixture0123456789abcdefghijklmnop",
];

#[tokio::test]
async fn no_canary_reaches_a_notification() {
    let [key, conn, json_pw, cookie, fragment, prefixed] = CANARIES;
    // One server per shape, each shape on the last stderr line, the one a crash's failure
    // quotes (a notification is cut at 200 characters).
    let lines = [
        format!("notify-marker GET https://h.example/mcp/{key}/sse"),
        format!("notify-marker postgres://app:{conn}@db/app"),
        format!("notify-marker {{\"password\":\"{json_pw}\"}}"),
        format!("Cookie: session={cookie}"),
        format!("notify-marker /cb#access_token={fragment}"),
        format!("notify-marker {prefixed}"),
    ];
    let servers: serde_json::Map<String, serde_json::Value> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let script = json!({
                "stderr": format!("{line}\n"),
                "rules": [{"method": "initialize", "action": {"kind": "crash", "code": 3}}],
            });
            let entry = json!({
                "command": fixture(),
                // An argument, not an env value: every word of an env value that looks like
                // a secret is scrubbed as configured, which would hide the shapes under test.
                "args": ["stdio", "--script", script.to_string()],
                "reconnect": {"initialDelayMs": 10, "maxDelayMs": 20, "maxAttempts": 1,
                              "quarantineMs": [10, 10, 10]},
            });
            (format!("s{i}"), entry)
        })
        .collect();
    let text = json!({ "mcpServers": servers }).to_string();
    let config = config::parse(&text, None, &|_| None).expect("a config");
    let bus = Arc::new(EventBus::new(4096));
    let mut events = bus.subscribe();
    let fleet = Fleet::start(&config, bus).expect("started");
    let notifications = tokio::time::timeout(Duration::from_secs(30), async {
        let mut seen: Vec<(String, String)> = Vec::new();
        while seen.len() < lines.len() {
            let event = events.recv().await.expect("the bus is open");
            if let Some(n) = notification_for(&event) {
                seen.push(n);
            }
        }
        seen
    })
    .await
    .expect("every server gave up and notified");
    fleet.stop().await;

    for (title, body) in &notifications {
        for canary in CANARIES {
            assert!(
                !title.contains(canary) && !body.contains(canary),
                "{canary} reached the notification: {title}: {body}"
            );
        }
        // The line is there, scrubbed, so this test could have failed.
        assert!(
            body.contains("notify-marker") || body.contains("Cookie: ***"),
            "{title}: {body}"
        );
    }
}
