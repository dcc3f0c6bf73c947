//! A Streamable HTTP upstream behind `lifeline connect`: the fixture over HTTP on loopback
//! forgets the session mid-way (404 on its session id, `http.session_expires_after`). The
//! request refused with the 404 was never run, so the gateway sends it on the next
//! session; the host's session stays open, its calls succeed, and it hears no
//! `tools/list_changed` (the tool set did not change).

use super::{config, host, text};
use crate::support::{TempDirGuard, events, http_fixture, received};
use lifeline_core::session::{RequestOptions, ServerNotification};
use serde_json::json;

#[tokio::test]
async fn gateway_host_does_not_notice_an_expired_http_session() {
    let dir = TempDirGuard::new("gateway-http");
    // initialize, tools/list and one call per session; the next request gets 404.
    let f = http_fixture(json!({ "http": { "session_expires_after": 3 } })).await;
    let path = config(
        &dir,
        json!({ "fixture": { "url": f.url,
            "reconnect": { "initialDelayMs": 10, "maxDelayMs": 50 } } }),
    );
    let session = host("fixture", &path).await;
    let mut notes = session.subscribe();
    for word in ["one", "two", "three"] {
        let echo = session
            .call_tool("echo", json!({"text": word}), RequestOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{word}: {e}"));
        assert_eq!(text(&echo), word);
    }
    assert!(session.closed().is_none(), "the host's session is open");
    let log = f.log_entries();
    // Each session is forgotten after its third request (the last one after `three`); the
    // calls `two` and `three` were each refused once and run on the next session.
    assert_eq!(events(&log, "session_expired").len(), 3);
    assert_eq!(received(&log, "initialize").len(), 3, "three sessions");
    // The refused call reached the server once refused and once run: its text was
    // answered once, which the host saw.
    let ran = |word: &str| {
        received(&log, "tools/call")
            .iter()
            .filter(|e| e["params"]["arguments"]["text"] == word)
            .count()
    };
    assert_eq!((ran("one"), ran("two"), ran("three")), (1, 2, 2));
    let mut changed = 0;
    while let Ok(n) = notes.try_recv() {
        if n == ServerNotification::ToolsListChanged {
            changed += 1;
        }
    }
    assert_eq!(changed, 0, "the tool set is unchanged: no list_changed");
    session.close().await;
}
