//! The tool registry under paused time: re-syncs after `list_changed`, their pacing, the
//! capped `tools` event, and a notification flood that outruns the supervisor.

use super::*;
use crate::events::Generation;

/// A healthy server whose nth tool list is `["v{n}"]`, and the count of lists served.
fn counting_lists() -> (Script, Arc<AtomicUsize>) {
    let lists = Arc::new(AtomicUsize::new(0));
    let l = lists.clone();
    let script: Script = Arc::new(move |method, params| match method {
        "tools/list" => {
            let n = l.fetch_add(1, Ordering::SeqCst);
            Some(Ok(json!({"tools": [{"name": format!("v{n}")}]})))
        }
        _ => healthy()(method, params),
    });
    (script, lists)
}

#[tokio::test(start_paused = true)]
async fn list_changed_resyncs_and_swaps_the_tools() {
    let (script, lists) = counting_lists();
    let h = start(script, |_| {});
    until(&h, StateName::Ready).await;
    assert_eq!(h.supervisor.snapshot().tools, ["v0"]);
    // `notify` makes the in-process server announce a changed list twice, then answer.
    h.supervisor.call("notify", json!({})).await.unwrap();
    until_snapshot(&h, "the re-synced tools", |s| s.tools == ["v2"]).await;
    assert_eq!(
        lists.load(Ordering::SeqCst),
        3,
        "one re-sync per notification, one at a time"
    );
    assert_eq!(h.supervisor.snapshot().generation, Generation(1));
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_list_changed_storm_re_lists_at_most_once_a_second() {
    let (script, lists) = counting_lists();
    let h = start(script, |_| {});
    until(&h, StateName::Ready).await;
    let stormed = Instant::now();
    // A notification every 10 ms: 1,000 in 10 s.
    h.supervisor.call("storm", json!({})).await.unwrap();
    h.supervisor.wait_for(|s| s.tools == ["v1"]).await;
    assert_eq!(
        Instant::now() - stormed,
        Duration::ZERO,
        "the first change lists at once"
    );
    h.supervisor.wait_for(|s| s.tools == ["v2"]).await;
    assert_eq!(
        Instant::now() - stormed,
        Duration::from_secs(1),
        "the rest coalesced"
    );
    tokio::time::sleep(Duration::from_millis(8_500)).await;
    // The listing of the handshake, then one at 0 s, 1 s, … 9 s.
    assert_eq!(lists.load(Ordering::SeqCst), 11);
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_tools_event_carries_a_capped_list_and_the_full_count() {
    let script: Script = Arc::new(|method, params| match method {
        "tools/list" => {
            let tools: Vec<Value> = (0..1500)
                .map(|i| json!({"name": format!("t{i}")}))
                .collect();
            Some(Ok(json!({ "tools": tools })))
        }
        _ => healthy()(method, params),
    });
    let h = start(script, |_| {});
    let mut events = h.bus.subscribe();
    until(&h, StateName::Ready).await;
    let (count, names) = loop {
        let e = events.recv().await.unwrap();
        if let crate::events::EventBody::Tools { count, names, .. } = e.body {
            break (count, names);
        }
    };
    assert_eq!(count, 1500);
    assert_eq!(names.len(), crate::events::MAX_TOOL_NAMES);
    assert_eq!((names[0].as_str(), names[999].as_str()), ("t0", "t999"));
    // Nothing is lost to callers: the supervisor still has every definition.
    assert_eq!(h.supervisor.tools().len(), 1500);
    h.supervisor.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_notification_flood_that_outruns_the_supervisor_re_syncs_the_tools() {
    // 40 log messages arrive before the supervisor reads any; it can no longer know whether
    // a `list_changed` was among those it missed, so it re-syncs once.
    let (script, lists) = counting_lists();
    let h = start(script, |_| {});
    until(&h, StateName::Ready).await;
    h.supervisor.call("flood", json!({})).await.unwrap();
    let resynced = tokio::time::timeout(
        Duration::from_secs(60),
        h.supervisor.wait_for(|s| s.tools == ["v1"]),
    )
    .await;
    assert!(resynced.is_ok(), "no re-sync within a minute of the lag");
    assert_eq!(lists.load(Ordering::SeqCst), 2);
    assert_eq!(h.supervisor.snapshot().generation, Generation(1));
    h.supervisor.stop().await;
}
