//! Issue 29 end to end: twenty HTTP servers under `lifeline watch`, and the machine's sleep
//! told by stand-ins for logind and NetworkManager (`lifeline-system-bus`) on a system bus of
//! the test's own. While the machine "sleeps", every server process is killed and started
//! again on its port, so every connection and session is gone; after the wake every server is
//! ready again within 3 s on one new connection, and not one attempt was counted.

use crate::supervise::watch::Watch;
use crate::support::{HttpFixture, TempDirGuard, http_fixture, http_fixture_on, write_config};
use lifeline_it::system_bus::{Daemon, StandIns};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const SERVERS: usize = 20;
/// What the issue asks: every server back within 3 s of the wake.
const BACK_WITHIN: Duration = Duration::from_secs(3);
const PATIENCE: Duration = Duration::from_secs(20);

fn stand_ins_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_lifeline-system-bus"))
}

fn is(e: &Value, server: &str, kind: &str) -> bool {
    e["server"] == server && e["type"] == kind
}

/// Every server's latest state is `ready` on a generation past `past`.
fn all_ready_past(events: &[Value], past: u64) -> bool {
    (0..SERVERS).all(|i| {
        let name = format!("s{i:02}");
        events
            .iter()
            .rev()
            .find(|e| is(e, &name, "state"))
            .is_some_and(|e| e["state"] == "ready" && e["generation"].as_u64() > Some(past))
    })
}

fn port_of(fixture: &HttpFixture) -> String {
    let rest = fixture
        .url
        .strip_prefix("http://127.0.0.1:")
        .expect("a loopback URL");
    rest.split('/').next().unwrap().to_owned()
}

#[tokio::test]
async fn twenty_servers_whose_connections_died_in_a_sleep_are_back_at_the_wake_for_free() {
    let dir = TempDirGuard::new("wake");
    let bus = format!("unix:path={}", dir.path().join("system_bus").display());
    let _daemon = Daemon::start(&bus);
    let mut os = StandIns::start(
        stand_ins_bin(),
        &bus,
        &["--state", "70", "--connectivity", "4"],
    );

    let mut fixtures = Vec::new();
    for _ in 0..SERVERS {
        fixtures.push(http_fixture(json!({})).await);
    }
    let servers: serde_json::Map<String, Value> = fixtures
        .iter()
        .enumerate()
        .map(|(i, f)| (format!("s{i:02}"), json!({ "url": f.url })))
        .collect();
    let config = write_config(&dir, Value::Object(servers));
    let mut watch = Watch::start_with_env(&config, "2m", &[("DBUS_SYSTEM_BUS_ADDRESS", &bus)]);
    watch
        .wait_until("every server ready", PATIENCE, |e| all_ready_past(e, 0))
        .await;
    os.expect("inhibitor 1 taken sleep delay", PATIENCE).await;

    os.run("sleep", PATIENCE).await;
    watch
        .wait_for("the machine going to sleep", |e| {
            e["type"] == "system" && e["change"] == "sleeping"
        })
        .await;
    // Lifeline let the machine sleep once it was ready for it.
    os.expect("inhibitor 1 released", PATIENCE).await;

    // Asleep: every server process dies and comes back on its port, knowing no session.
    let ports: Vec<String> = fixtures.iter().map(port_of).collect();
    for f in fixtures {
        f.kill().await;
    }
    let mut again = Vec::new();
    for port in &ports {
        again.push(http_fixture_on(json!({}), port).await);
    }

    os.run("wake", PATIENCE).await;
    watch
        .wait_until(
            "every server ready again after the wake",
            BACK_WITHIN,
            |e| all_ready_past(e, 1),
        )
        .await;
    os.expect("inhibitor 2 taken sleep delay", PATIENCE).await;

    let run = watch.stop().await;
    for i in 0..SERVERS {
        let name = format!("s{i:02}");
        let mine: Vec<&Value> = run.events.iter().filter(|e| e["server"] == name).collect();
        let told: Vec<&Value> = mine
            .iter()
            .copied()
            .filter(|e| e["type"] == "system")
            .collect();
        assert_eq!(
            told.iter()
                .map(|e| e["change"].as_str().unwrap())
                .collect::<Vec<_>>(),
            ["sleeping", "awake"],
            "{name} was told of the sleep and the wake once each"
        );
        let newest = mine.iter().filter_map(|e| e["generation"].as_u64()).max();
        assert_eq!(newest, Some(2), "{name} made one new connection, no more");
        for e in mine.iter().filter(|e| e["type"] == "state") {
            // Connecting is always some round's attempt 1; a spent one would show as 2, or
            // as a wait with its count.
            assert!(
                e["attempt"].is_null() || e["attempt"] == 1 && e["state"] == "connecting",
                "{name} counted an attempt: {e}"
            );
            assert_eq!(e["quarantine_level"], 0, "{name} climbed the ladder: {e}");
        }
    }
    drop(again);
}
