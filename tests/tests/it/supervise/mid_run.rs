//! Runs of `lifeline watch --json` the scenario table cannot describe, because the test acts
//! while `watch` runs: an HTTP server killed and restarted on its port, a server that starts
//! listening only after the first attempts failed, SIGTERM right after the first event.
//! Each run is still held to the stream's invariants (`events::assert_stream`).

use serde_json::{Value, json};

use super::events::{assert_no_early_attempts, assert_stream, is_state, now_ms, outline, typed};
use super::fixtures::{free_port, http_fixture_on, http_server, port_of, stdio_server, with};
use super::watch::Watch;
use crate::support::{self, TempDirGuard, write_config};

// # An HTTP server restarted on the same port

#[tokio::test]
async fn an_http_server_restarted_on_the_same_port_gets_a_new_session_and_generation() {
    let dir = TempDirGuard::new("sup-restart");
    let (log_a, log_b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let mut first = http_fixture_on(0, &json!({}), &log_a).await;
    let port = port_of(&first.url);
    // Idle HTTP connections have nothing to notice a restart with except the health
    // ping (1 s is the smallest interval the config allows).
    let server = with(
        http_server(&first.url),
        json!({"timeouts": {"pingIntervalMs": 1000, "pingTimeoutMs": 500}}),
    );
    let config = write_config(&dir, json!({ "remote": server }));
    let started = now_ms();
    let mut watch = Watch::start(&config, "30s");
    watch.wait_for("ready", is_state("remote", "ready")).await;
    let old_session = support::received(&support::read_log(&log_a), "tools/list")[0]["session_id"]
        .as_str()
        .expect("a session id")
        .to_owned();

    first.child.kill().await.expect("killing the first fixture");
    let _second = http_fixture_on(port, &json!({}), &log_b).await;
    watch
        .wait_for("ready on a new generation", |e| {
            is_state("remote", "ready")(e) && e["generation"].as_u64() > Some(1)
        })
        .await;
    let run = watch.stop().await;

    assert_stream(&run, started, now_ms());
    let outline = outline(&run.events, "remote");
    assert_eq!(outline[..2], ["connecting", "ready"], "{outline:?}");
    assert!(outline[2..].contains(&"ready".to_owned()), "{outline:?}");
    // The restart was noticed by the ping: the new server did not know the old session.
    let log = support::read_log(&log_b);
    let requests = support::events(&log, "received");
    assert_eq!(requests[0]["rpc_method"], "ping", "{requests:?}");
    assert_eq!(requests[0]["session_id"], old_session.as_str());
    let lost = typed(&run.events, "remote", "failure")[0];
    assert_eq!(lost["failure"]["kind"], "session_expired", "{lost}");
    assert_eq!(lost["failure"]["status"], 404, "{lost}");
    // And a new session was made with the new server.
    let inits = support::received(&log, "initialize");
    assert_eq!(inits.len(), 1, "{inits:?}");
    assert!(inits[0]["session_id"].is_null());
    let lists = support::received(&log, "tools/list");
    let new_session = lists[0]["session_id"].as_str().expect("a new session id");
    assert_ne!(new_session, old_session);
    // The failure and the stale list are the old generation's, although the new one
    // started at once (the connection had been up longer than the stability window).
    assert_eq!(lost["generation"], 1, "{lost}");
    let tools = typed(&run.events, "remote", "tools");
    let stale = tools
        .iter()
        .find(|e| e["stale"] == true)
        .expect("a stale list");
    assert_eq!(stale["generation"], 1, "{stale}");
    let last = tools.last().unwrap();
    assert_eq!(
        (last["stale"].as_bool(), last["count"].as_u64()),
        (Some(false), Some(10))
    );
}

#[tokio::test]
async fn an_http_restart_is_noticed_by_the_get_stream_without_pings() {
    let dir = TempDirGuard::new("sup-restart-get");
    let (log_a, log_b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    // A standalone GET stream that asks to be resumed after 100 ms; health pings off.
    let script = json!({"http": {"get": "sse", "sse": {"retry": "100"}}});
    let mut first = http_fixture_on(0, &script, &log_a).await;
    let port = port_of(&first.url);
    let server = with(
        http_server(&first.url),
        json!({"timeouts": {"pingIntervalMs": 0}}),
    );
    let config = write_config(&dir, json!({ "remote": server }));
    let started = now_ms();
    let mut watch = Watch::start(&config, "30s");
    watch.wait_for("ready", is_state("remote", "ready")).await;
    let get = support::wait_for_log(&log_a, "the standalone GET", |e| {
        e["event"] == "received" && e["http_method"] == "GET"
    })
    .await;
    let old_session = get["session_id"].as_str().expect("a session id").to_owned();

    first.child.kill().await.expect("killing the first fixture");
    let _second = http_fixture_on(port, &script, &log_b).await;
    watch
        .wait_for("ready on a new generation", |e| {
            is_state("remote", "ready")(e) && e["generation"].as_u64() > Some(1)
        })
        .await;
    let run = watch.stop().await;

    assert_stream(&run, started, now_ms());
    // The resumed GET met a server that did not know the session; a POST confirmed it
    // (a 404 on a GET alone may only mean the server has no GET route): the connection ended.
    let log = support::read_log(&log_b);
    let requests = support::events(&log, "received");
    assert_eq!(requests[0]["http_method"], "GET", "{requests:?}");
    assert_eq!(requests[0]["session_id"], old_session.as_str());
    assert!(
        requests[0]["last_event_id"].is_string(),
        "a resume: {requests:?}"
    );
    assert_eq!(requests[1]["http_method"], "POST", "{requests:?}");
    assert_eq!(requests[1]["rpc_method"], "ping", "{requests:?}");
    assert_eq!(requests[1]["session_id"], old_session.as_str());
    let lost = typed(&run.events, "remote", "failure")[0];
    assert_eq!(lost["failure"]["kind"], "session_expired", "{lost}");
    assert_eq!(lost["failure"]["method"], "POST", "{lost}");
    assert_eq!(lost["generation"], 1, "{lost}");
    let tools = typed(&run.events, "remote", "tools");
    let stale = tools
        .iter()
        .find(|e| e["stale"] == true)
        .expect("a stale list");
    assert_eq!(stale["generation"], 1, "{stale}");
    assert_eq!(
        support::received(&log, "ping").len(),
        1,
        "one probe, no health pings (they are off)"
    );
    assert_eq!(support::received(&log, "initialize").len(), 1);
}

// # Down at start

#[tokio::test]
async fn a_server_down_at_start_becomes_ready_once_it_listens_never_attempting_early() {
    let dir = TempDirGuard::new("sup-late");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let server = json!({
        "type": "http",
        "url": url,
        "reconnect": {"initialDelayMs": 50, "maxDelayMs": 200, "maxAttempts": 100}
    });
    let config = write_config(&dir, json!({ "late": server }));
    let started = now_ms();
    let mut watch = Watch::start(&config, "30s");
    let first_wait = watch
        .wait_for("retrying", is_state("late", "retrying"))
        .await;
    assert_eq!(first_wait["cause"]["kind"], "transport", "{first_wait}");
    let log = dir.path().join("late.log");
    let fixture = http_fixture_on(port, &json!({}), &log).await;
    assert_eq!(fixture.url, url);
    let ready = watch.wait_for("ready", is_state("late", "ready")).await;
    let run = watch.stop().await;

    assert_stream(&run, started, now_ms());
    assert!(ready["generation"].as_u64() > Some(1), "{ready}");
    let outline = outline(&run.events, "late");
    assert_eq!(
        outline[..2],
        ["connecting", "retrying 1/100"],
        "{outline:?}"
    );
    let waits = outline.iter().filter(|l| l.starts_with("retrying")).count();
    assert_eq!(assert_no_early_attempts(&run.events, "late"), waits);
    // Only the successful attempt reached the server: one initialize, one session.
    assert_eq!(
        support::received(&support::read_log(&log), "initialize").len(),
        1
    );
}

// # A signal right after start still disposes

#[tokio::test]
async fn sigterm_right_after_the_first_event_still_disposes_and_exits_0() {
    let dir = TempDirGuard::new("sup-early-term");
    let fixture = support::stdio_fixture(&json!({}));
    // Many servers emit at once, so `watch` is busy printing when the signal lands.
    let servers: serde_json::Map<String, Value> = (0..10)
        .map(|i| (format!("s{i}"), stdio_server(&fixture)))
        .collect();
    let config = write_config(&dir, Value::Object(servers));
    for round in 0..8 {
        let started = now_ms();
        let mut watch = Watch::start(&config, "30s");
        watch.wait_for("a first event", |_| true).await;
        let run = watch.stop().await;
        assert_eq!(
            run.code, 0,
            "round {round}: SIGTERM killed watch instead of stopping it: {run:?}"
        );
        assert_stream(&run, started, now_ms());
        let last = run.events.last().expect("events");
        assert_eq!(last["state"], "stopping", "round {round}: {last}");
    }
}
