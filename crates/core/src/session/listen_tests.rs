//! The listen stream's retry loop under paused time, against the in-process transport: each
//! reopen waits exactly what `policy::listen` says for the session's seed, and a refusal
//! ends the loop.

use super::super::tests::{lose, next_request, reply};
use super::super::{Session, SessionOptions};
use crate::policy::{ListenRetry, SeededRng};
use crate::protocol::RpcError;
use crate::transport::memory::{self, ServerEnd};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// A stateless session with `seed`, past discovery of a server that offers
/// `tools/list_changed` (so the listen loop runs).
async fn discovered(seed: u64) -> (Arc<Session>, ServerEnd) {
    let (conn, mut server) = memory::pair();
    let options = SessionOptions {
        jitter_seed: seed,
        ..SessionOptions::default()
    };
    let s = Arc::new(Session::start_stateless(conn, options));
    let s2 = s.clone();
    let discovering = tokio::spawn(async move { s2.discover().await.map_err(|r| r.error) });
    let r = next_request(&mut server).await;
    assert_eq!(r.method, "server/discover");
    let result = json!({
        "resultType": "complete", "supportedVersions": ["2026-07-28"], "ttlMs": 0,
        "cacheScope": "public", "capabilities": { "tools": { "listChanged": true } },
        "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "m", "version": "1" } },
    });
    reply(&server, r.id, Ok(result)).await;
    discovering.await.unwrap().unwrap();
    (s, server)
}

#[tokio::test(start_paused = true)]
async fn the_listen_stream_is_reopened_after_exactly_the_policys_waits() {
    let seed = 7;
    let (_session, mut server) = discovered(seed).await;
    // How long each stream stays open before it ends: the fourth a full minute, which
    // starts the curve over.
    let open_for = [0, 0, 0, 61, 0, 0].map(Duration::from_secs);
    let mut waits = Vec::new();
    let mut ended: Option<Instant> = None;
    for (i, &open) in open_for.iter().enumerate() {
        let r = next_request(&mut server).await;
        assert_eq!(r.method, "subscriptions/listen");
        assert_eq!(
            r.params.as_ref().unwrap()["notifications"]["toolsListChanged"],
            true
        );
        if let Some(ended) = ended {
            waits.push(Instant::now() - ended);
        }
        tokio::time::sleep(open).await;
        // The server closes the stream, or it breaks: both are reopened.
        if i % 2 == 0 {
            reply(&server, r.id, Ok(json!({ "resultType": "complete" }))).await;
        } else {
            lose(&server, r.id).await;
        }
        ended = Some(Instant::now());
    }
    let mut policy = ListenRetry::new();
    let mut rng = SeededRng::new(seed);
    // tokio's timer fires on whole milliseconds, rounding a sleep up.
    let ceil_ms = |d: Duration| Duration::from_millis(d.as_nanos().div_ceil(1_000_000) as u64);
    let expect: Vec<Duration> = open_for[..5]
        .iter()
        .map(|&open| ceil_ms(policy.after_end(open, &mut rng)))
        .collect();
    assert_eq!(waits, expect);
    // Jittered, not the bare curve (1, 2, 4 s, then 1 s again after the long stream).
    assert_ne!(waits[0], Duration::from_secs(1));
    assert!(waits[3] < Duration::from_millis(1200), "{waits:?}");
}

#[tokio::test(start_paused = true)]
async fn a_refused_listen_stream_is_not_asked_again() {
    let (_session, mut server) = discovered(1).await;
    let r = next_request(&mut server).await;
    assert_eq!(r.method, "subscriptions/listen");
    reply(
        &server,
        r.id,
        Err(RpcError::method_not_found("subscriptions/listen")),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(server.from_client.try_recv().is_err(), "asked again");
}
