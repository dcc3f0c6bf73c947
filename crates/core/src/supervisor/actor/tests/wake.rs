//! A wake under paused time (issue 29): a ready connection is pinged once within the probe
//! spread; one that answers stays as it is, one that is silent is lost after that one ping,
//! not two.

use super::*;
use crate::policy::wake::PROBE_SPREAD;
use crate::system::SystemEvent;
use std::sync::atomic::AtomicBool;

#[tokio::test(start_paused = true)]
async fn a_wake_probes_once_and_a_silent_connection_is_lost_after_one_ping() {
    let silent = Arc::new(AtomicBool::new(false));
    let s = silent.clone();
    let script: Script = Arc::new(move |method, params| match method {
        "ping" if s.load(Ordering::SeqCst) => None,
        _ => healthy()(method, params),
    });
    // No idle pings: whatever ping is sent is the wake's.
    let h = start(script, |cfg| cfg.ping_interval = None);
    until(&h, StateName::Ready).await;

    let woke = Instant::now();
    let mut events = h.bus.subscribe();
    h.supervisor.system(SystemEvent::Awake {
        slept: Some(Duration::from_secs(600)),
    });
    until_snapshot(&h, "the wake's round trip", |s| {
        s.last_round_trip_ms.is_some()
    })
    .await;
    assert!(
        Instant::now() - woke <= PROBE_SPREAD,
        "probed within the spread"
    );
    assert_eq!(h.supervisor.snapshot().generation, Generation(1));
    // Told on the server's timeline.
    let told = loop {
        let e = events.try_recv().expect("the system event was published");
        if let crate::events::EventBody::System { change, slept_ms } = e.body {
            break (change, slept_ms);
        }
    };
    assert_eq!(told, (crate::events::SystemChange::Awake, Some(600_000)));

    silent.store(true, Ordering::SeqCst);
    let online = Instant::now();
    h.supervisor.system(SystemEvent::Online);
    until_snapshot(&h, "the silent connection lost", |s| {
        s.state.state == Some(StateName::Reconnecting) || s.generation == Generation(2)
    })
    .await;
    let timeout =
        SupervisorConfig::new("x", Stage::Connect, Arc::new(|| unreachable!())).ping_timeout;
    assert!(
        Instant::now() - online <= PROBE_SPREAD + timeout,
        "lost after one ping's timeout, not two"
    );
    assert_eq!(h.received("ping"), 2, "one ping per wake");
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_in_flight_when_the_machine_sleeps_fails_saying_so() {
    let script: Script = Arc::new(|method, params| match method {
        "tools/call" => None,
        _ => healthy()(method, params),
    });
    let h = start(script, |cfg| cfg.ping_interval = None);
    until(&h, StateName::Ready).await;
    let call = tokio::time::timeout(Duration::from_secs(1), h.supervisor.call("echo", json!({})));
    let sleep = async {
        while h.received("tools/call") == 0 {
            tokio::task::yield_now().await;
        }
        h.supervisor.system(SystemEvent::Sleeping);
    };
    let (answer, ()) = tokio::join!(call, sleep);
    let answer = answer.expect("the call ended at the sleep, not at its timeout");
    let e = answer.expect_err("no answer came");
    assert!(e.by_sleep(), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("the machine went to sleep while tools/call was in flight"),
        "{e}"
    );
    // The connection is not to blame: still ready, same generation, no failure.
    let s = h.supervisor.snapshot();
    assert_eq!(
        (s.state.state, s.generation),
        (Some(StateName::Ready), Generation(1))
    );
    h.supervisor.stop().await;
}
