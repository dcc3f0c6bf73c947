//! The call lane under paused time: a call when the server is not ready, a call lost with
//! its connection (never replayed), a refusal that leaves the connection up.

use super::*;
use crate::events::Generation;

#[tokio::test(start_paused = true)]
async fn a_call_when_not_ready_fails_at_once_saying_the_state_and_the_wait() {
    let h = start(
        Arc::new(|_, _| Some(Err(Error::transport("refused")))),
        |_| {},
    );
    until(&h, StateName::Retrying).await;
    let err = h.supervisor.call("echo", json!({})).await.unwrap_err();
    let msg = err.message();
    assert!(msg.contains("is not ready: it is retrying"), "{msg}");
    assert!(
        msg.contains("attempt 1/10") && msg.contains("next attempt is in"),
        "{msg}"
    );
    assert!(msg.contains("was not sent"), "{msg}");
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_lost_with_its_connection_is_never_replayed() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let script: Script = Arc::new(move |method, params| match method {
        // The first call's connection dies under it; later generations are healthy.
        "tools/call" if c.fetch_add(1, Ordering::SeqCst) == 0 => Some(Err(Error::new(
            ErrorKind::ProcessExit,
            "the server process exited",
        ))),
        _ => healthy()(method, params),
    });
    let h = start(script, |_| {});
    until(&h, StateName::Ready).await;
    let err = h.supervisor.call("echo", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProcessExit);
    until_snapshot(&h, "a ready generation 2", |s| {
        s.generation == Generation(2) && s.state.state == Some(StateName::Ready)
    })
    .await;
    assert_eq!(h.received("tools/call"), 1, "{:?}", h.seen.lock().unwrap());
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_403_on_a_call_returns_to_the_caller_and_the_connection_stays() {
    let script: Script = Arc::new(|method, params| match method {
        "tools/call" => Some(Err(
            Error::new(ErrorKind::Permission, "forbidden").with(|c| c.status = Some(403))
        )),
        _ => healthy()(method, params),
    });
    let h = start(script, |_| {});
    until(&h, StateName::Ready).await;
    let err = h.supervisor.call("echo", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permission);
    let snap = h.supervisor.snapshot();
    assert_eq!(
        (snap.state.state, snap.generation),
        (Some(StateName::Ready), Generation(1))
    );
    h.supervisor.stop().await;
}
