//! Establishment under paused time: the legacy fallback inside one deadline, and the step
//! that worked last (the stateless revision asked once, then remembered; a lying discovery).

use super::*;
use crate::events::Generation;

// # `protocol: "auto"`: the legacy fallback inside one establishment deadline

/// A POST refused the way an older server refuses Streamable HTTP.
fn refused(status: u16) -> Error {
    let kind = match status {
        401 => ErrorKind::Auth,
        _ => ErrorKind::Protocol,
    };
    Error::new(kind, format!("POST /sse: refused ({status})")).with(|c| {
        c.status = Some(status);
        c.method = Some("POST".into());
    })
}

/// A primary connector whose server refuses `initialize` with `status` after `after`, and a
/// fallback connector serving `fallback`; counts what each opened.
fn start_with_fallback(
    status: u16,
    after: Duration,
    fallback: Script,
    edit: impl FnOnce(&mut SupervisorConfig),
) -> (Harness, Arc<AtomicUsize>) {
    let fallbacks = Arc::new(AtomicUsize::new(0));
    let (f, seen) = (fallbacks.clone(), Arc::new(Mutex::new(Vec::new())));
    let h = start(Arc::new(|_, _| None), |c: &mut SupervisorConfig| {
        c.connector = Arc::new(move || {
            let (conn, mut end) = memory::pair();
            tokio::spawn(async move {
                while let Some(msg) = end.from_client.recv().await {
                    let Message::Request(r) = msg else { continue };
                    tokio::time::sleep(after).await;
                    let error = refused(status);
                    let failed = Incoming::RequestFailed { id: r.id, error };
                    let _ = end.to_client.send(failed).await;
                }
            });
            Ok(conn)
        });
        c.fallback = Some(Arc::new(move || {
            f.fetch_add(1, Ordering::SeqCst);
            let (conn, end) = memory::pair();
            tokio::spawn(serve(end, fallback.clone(), seen.clone()));
            Ok(conn)
        }));
        edit(c);
    });
    (h, fallbacks)
}

#[tokio::test(start_paused = true)]
async fn a_405_to_initialize_falls_back_to_a_fresh_connection_that_becomes_ready() {
    let (h, fallbacks) = start_with_fallback(405, Duration::ZERO, healthy(), |_| {});
    until(&h, StateName::Ready).await;
    assert_eq!(fallbacks.load(Ordering::SeqCst), 1);
    assert_eq!(h.supervisor.snapshot().tools, ["echo"]);
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_fallback_runs_in_what_is_left_of_the_same_deadline() {
    let (h, fallbacks) =
        start_with_fallback(404, Duration::from_secs(3), Arc::new(|_, _| None), |c| {
            c.establish = Duration::from_secs(5);
            c.request_timeout = Duration::from_secs(60);
        });
    let started = Instant::now();
    until(&h, StateName::Retrying).await;
    // 3 s for the refusal, then only the 2 s left for the legacy handshake.
    assert_eq!(Instant::now() - started, Duration::from_secs(5));
    assert_eq!(fallbacks.load(Ordering::SeqCst), 1);
    let cause = h.supervisor.snapshot().state.cause.unwrap();
    assert_eq!(cause.kind, "timeout");
    assert!(
        cause.message.contains("establishment deadline") && cause.message.contains("legacy"),
        "{}",
        cause.message
    );
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_auth_denial_never_falls_back() {
    let (h, fallbacks) = start_with_fallback(401, Duration::ZERO, healthy(), |_| {});
    until(&h, StateName::Retired).await;
    assert_eq!(fallbacks.load(Ordering::SeqCst), 0);
    h.supervisor.stop().await;
}

// # `protocol: "auto"` over Streamable HTTP: the stateless revision first, what worked kept

#[tokio::test(start_paused = true)]
async fn an_initialize_only_server_is_asked_stateless_once_and_remembered() {
    let script: Script = Arc::new(|method, params| match method {
        "server/discover" => Some(Err(refused(400))),
        _ => healthy()(method, params),
    });
    let h = start(script, |c| c.stateless_first = true);
    until(&h, StateName::Ready).await;
    assert_eq!(
        h.opened.load(Ordering::SeqCst),
        2,
        "the fallback is a fresh connection"
    );
    assert_eq!(
        h.seen.lock().unwrap()[..3],
        ["server/discover", "initialize", "tools/list"]
    );
    assert_eq!(
        h.supervisor.snapshot().state.protocol_version.as_deref(),
        Some("2025-11-25")
    );
    // The next generation goes straight to what worked.
    h.supervisor.reconnect();
    until_snapshot(&h, "a ready generation 2", |s| {
        s.generation == Generation(2) && s.state.state == Some(StateName::Ready)
    })
    .await;
    assert_eq!(h.opened.load(Ordering::SeqCst), 3);
    assert_eq!(
        h.received("server/discover"),
        1,
        "{:?}",
        h.seen.lock().unwrap()
    );
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_stateless_server_is_ready_in_the_stateless_revision() {
    let script: Script = Arc::new(|method, params| match method {
        "server/discover" => Some(Ok(
            json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
        )),
        "initialize" => Some(Err(refused(400))),
        _ => healthy()(method, params),
    });
    let h = start(script, |c| c.stateless_first = true);
    until(&h, StateName::Ready).await;
    assert_eq!(h.opened.load(Ordering::SeqCst), 1);
    let snap = h.supervisor.snapshot();
    assert_eq!(snap.state.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(snap.tools, ["echo"]);
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_whose_discovery_lies_is_tried_with_initialize_once() {
    // server/discover lists 2026-07-28, but requests in that revision (they carry _meta)
    // are refused the way an older server refuses them.
    let script: Script = Arc::new(|method, params| {
        let stateless = params.as_ref().is_some_and(|p| {
            p.get("_meta")
                .is_some_and(|m| m.get("io.modelcontextprotocol/protocolVersion").is_some())
        });
        match method {
            "server/discover" => Some(Ok(
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {}}),
            )),
            "tools/list" if stateless => Some(Err(refused(400))),
            _ => healthy()(method, params),
        }
    });
    let h = start(script, |c| c.stateless_first = true);
    until(&h, StateName::Ready).await;
    assert_eq!(h.opened.load(Ordering::SeqCst), 2);
    assert_eq!(
        h.seen.lock().unwrap()[..4],
        ["server/discover", "tools/list", "initialize", "tools/list"]
    );
    assert_eq!(
        h.supervisor.snapshot().state.protocol_version.as_deref(),
        Some("2025-11-25")
    );
    h.supervisor.stop().await;
}
