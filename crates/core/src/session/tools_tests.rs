//! The listing's bounds under paused time: a server that hands out a fresh cursor forever
//! is stopped after `MAX_PAGES` pages, and a slow endless one at the overall deadline.

use super::super::{RequestOptions, Session, SessionOptions};
use super::MAX_PAGES;
use crate::error::ErrorKind;
use crate::protocol::{Message, Response};
use crate::transport::Incoming;
use crate::transport::memory::{self, ServerEnd};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// Answers every `tools/list` after `delay` with one tool and a cursor never seen before.
fn endless(mut server: ServerEnd, delay: Duration) -> Arc<AtomicUsize> {
    let pages = Arc::new(AtomicUsize::new(0));
    let counted = pages.clone();
    tokio::spawn(async move {
        while let Some(msg) = server.from_client.recv().await {
            let Message::Request(r) = msg else { continue };
            let n = counted.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(delay).await;
            let page = json!({"tools": [{"name": format!("t{n}")}], "nextCursor": format!("c{n}")});
            let reply = Message::Response(Response {
                id: r.id,
                outcome: Ok(page),
            });
            if server
                .to_client
                .send(Incoming::Message(reply))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    pages
}

#[tokio::test(start_paused = true)]
async fn an_endless_listing_is_a_protocol_failure_after_the_page_cap() {
    let (conn, server) = memory::pair();
    let pages = endless(server, Duration::ZERO);
    let session = Session::start(conn, SessionOptions::default());
    let e = session.list_tools().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("after 100 pages"), "{e}");
    assert_eq!(e.context().method.as_deref(), Some("tools/list"));
    assert_eq!(pages.load(Ordering::SeqCst), MAX_PAGES);
}

#[tokio::test(start_paused = true)]
async fn a_slow_endless_listing_fails_at_one_overall_deadline() {
    let (conn, server) = memory::pair();
    let pages = endless(server, Duration::from_secs(1));
    let session = Session::start(conn, SessionOptions::default());
    let started = Instant::now();
    let opts = RequestOptions {
        timeout: Some(Duration::from_millis(10_500)),
        ..Default::default()
    };
    let e = session.list_tools_with(opts).await.unwrap_err();
    // Each page is quick enough for the per-request timeout; the listing as a whole is not.
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(e.message().contains("every page together"), "{e}");
    assert_eq!(started.elapsed(), Duration::from_millis(10_500));
    assert_eq!(pages.load(Ordering::SeqCst), 11);
}
