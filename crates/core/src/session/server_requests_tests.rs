//! The cap on server→client requests: beyond it they are refused with a JSON-RPC error,
//! and a server that floods them and never reads our answers holds a bounded number of
//! tasks (the memory of each blocked answer), not one per request.

use super::super::tests::{next_response, send};
use super::super::{ServerNotification, Session, SessionOptions};
use super::{MAX_IN_FLIGHT, TOO_MANY_REQUESTS};
use crate::protocol::{Message, RequestId};
use crate::transport::memory;
use crate::transport::stdio::{self, StdioConfig};
use serde_json::json;
use std::sync::Arc;

#[tokio::test(start_paused = true)]
async fn requests_beyond_the_cap_are_refused_with_a_json_rpc_error() {
    // An elicitation that waits for a person who never answers: every one stays in flight.
    let never: super::super::Handler = Arc::new(|_| Box::pin(std::future::pending()));
    let options = SessionOptions {
        elicitation: Some(never),
        ..Default::default()
    };
    let (conn, mut server) = memory::pair();
    let session = Session::start(conn, options);
    let n = 100;
    for i in 0..n {
        let ask = Message::request(RequestId::Number(i), "elicitation/create", Some(json!({})));
        send(&server, ask).await;
    }
    let mut refused = Vec::new();
    while refused.len() < (n as usize - MAX_IN_FLIGHT) {
        let r = next_response(&mut server).await;
        let e = r.outcome.expect_err("a refusal");
        assert_eq!(e.code, TOO_MANY_REQUESTS);
        assert!(e.message.contains("too many requests"), "{}", e.message);
        refused.push(r.id);
    }
    // The first 16 are being answered; every later one was refused, in order.
    let expect: Vec<RequestId> = (MAX_IN_FLIGHT as i64..n).map(RequestId::Number).collect();
    assert_eq!(refused, expect);
    // A ping still gets a refusal while the elicitations hold every slot: none is dropped
    // while the server reads.
    send(
        &server,
        Message::request(RequestId::Number(n), "ping", None),
    )
    .await;
    let r = next_response(&mut server).await;
    assert_eq!(r.outcome.map_err(|e| e.code), Err(TOO_MANY_REQUESTS));
    session.close().await;
}

#[tokio::test]
async fn a_flooding_server_that_never_reads_holds_a_bounded_number_of_tasks() {
    // 20,000 pings, then a log message that marks the end of the flood, then silence:
    // the server never reads its stdin, so our answers fill the pipe and block.
    let script = r#"
        i=0
        while [ $i -lt 20000 ]; do
            printf '{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' $i
            i=$((i+1))
        done
        printf '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"done"}}\n'
        exec sleep 600
    "#;
    let mut config = StdioConfig::new("sh", vec!["-c".into(), script.into()]);
    config.shutdown_grace = std::time::Duration::from_millis(200);
    let conn = stdio::spawn(&config).expect("sh starts");
    let session = Session::start(conn, SessionOptions::default());
    let mut notes = session.subscribe();
    let before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    loop {
        match notes.recv().await.expect("the session is open") {
            ServerNotification::Log { data, .. } if data == json!("done") => break,
            _ => {}
        }
    }
    // The reader routed every ping before the marker: each got a task, a queued refusal
    // or nothing, and the tasks are capped (plus the one refusal sender). Without the cap
    // there is one per blocked answer (some 18,000 here: a pipe holds about 2,000 of them).
    let alive = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    assert!(
        alive <= before + MAX_IN_FLIGHT + 1,
        "{alive} tasks alive (was {before} before the flood)"
    );
    session.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_request_the_server_cancels_is_abandoned_unanswered() {
    // The handler notes when its future is dropped (abandoned), and never answers.
    let (dropped_tx, dropped_rx) = tokio::sync::oneshot::channel::<()>();
    let dropped_tx = Arc::new(std::sync::Mutex::new(Some(dropped_tx)));
    let never: super::super::Handler = Arc::new(move |_| {
        struct Guard(Option<tokio::sync::oneshot::Sender<()>>);
        impl Drop for Guard {
            fn drop(&mut self) {
                if let Some(tx) = self.0.take() {
                    let _ = tx.send(());
                }
            }
        }
        let guard = Guard(dropped_tx.lock().unwrap().take());
        Box::pin(async move {
            let _guard = guard;
            std::future::pending().await
        })
    });
    let options = SessionOptions {
        elicitation: Some(never),
        ..Default::default()
    };
    let (conn, mut server) = memory::pair();
    let session = Session::start(conn, options);
    let ask = Message::request(RequestId::Number(7), "elicitation/create", Some(json!({})));
    send(&server, ask).await;
    tokio::task::yield_now().await;
    let cancel = Message::notification(
        "notifications/cancelled",
        Some(json!({"requestId": 7, "reason": "no longer needed"})),
    );
    send(&server, cancel).await;
    dropped_rx.await.expect("the handler was abandoned");
    // The next request is answered; nothing came for 7.
    send(
        &server,
        Message::request(RequestId::Number(8), "ping", None),
    )
    .await;
    let r = next_response(&mut server).await;
    assert_eq!(r.id, RequestId::Number(8), "7 was never answered");
    session.close().await;
}
