//! What the UI draws for one server: the core `Snapshot` plus what only the shell knows —
//! the transport from the config and the restarts counted from the event stream.

use crate::bus::forward;
use lifeline_core::events::Generation;
use lifeline_core::events::{Event, EventBody};
use lifeline_core::supervisor::Snapshot;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{broadcast, watch};

/// One row of the dashboard. The snapshot's fields are flattened, so the JSON is the
/// snapshot's (`server`, `generation`, `state`, `stage`, …, `tools`) plus three keys.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct ServerView {
    #[serde(flatten)]
    pub snapshot: Snapshot,
    /// `stdio`, `http` or `sse`, as configured.
    #[ts(type = "\"stdio\" | \"http\" | \"sse\"")]
    pub transport: &'static str,
    /// Generations started after the first one: every reconnect, retry, probe or restart.
    pub restarts: u32,
    /// When the latest of those began (the `at` of its first event).
    pub last_restart_at: Option<String>,
}

/// The highest generation each server has reached, and when it was first seen.
#[derive(Debug, Default)]
pub struct Restarts {
    servers: HashMap<String, Seen>,
}

#[derive(Debug, Default, Clone, PartialEq)]
struct Seen {
    generation: Generation,
    since: Option<String>,
    /// Events up to this `seq` came from a supervisor since replaced or removed.
    fence: u64,
}

impl Restarts {
    /// Notes an event. Events of older generations (a failure is stamped with the
    /// generation that failed, which may arrive after the next one started) change nothing.
    pub fn observe(&mut self, event: &Event) {
        let seen = match self.servers.get_mut(&event.server) {
            Some(seen) => seen,
            None => self.servers.entry(event.server.clone()).or_default(),
        };
        if seen.fence > 0 && event.seq <= seen.fence {
            return;
        }
        if event.generation > seen.generation {
            seen.generation = event.generation;
            seen.since = Some(event.at.clone());
        }
    }

    /// The count and time for a server whose snapshot is at `generation`. The snapshot may
    /// be ahead of the events seen (they are read by another task, and a lagging reader
    /// skips some), so the count takes the higher of the two.
    pub fn of(&self, server: &str, generation: Generation) -> (u32, Option<String>) {
        let seen = self.servers.get(server).cloned().unwrap_or_default();
        let highest = seen.generation.max(generation);
        let restarts = u32::try_from(highest.0.saturating_sub(1)).unwrap_or(u32::MAX);
        let since = seen.since.filter(|_| seen.generation > Generation(1));
        (restarts, since)
    }

    /// Forgets a server whose supervisor was replaced or removed: a new one counts its
    /// generations from 1 again. Its old supervisor's events (`seq` up to `fence`) may still
    /// be on their way; they are ignored.
    pub fn forget(&mut self, server: &str, fence: u64) {
        self.servers.insert(
            server.to_owned(),
            Seen {
                fence,
                ..Seen::default()
            },
        );
    }

    pub fn view(&self, snapshot: Snapshot, transport: &'static str) -> ServerView {
        let (restarts, last_restart_at) = self.of(&snapshot.server, snapshot.generation);
        ServerView {
            snapshot,
            transport,
            restarts,
            last_restart_at,
        }
    }
}

/// Counts restarts from the events, and logs what changed.
pub async fn track(
    events: broadcast::Receiver<Event>,
    restarts: Arc<Mutex<Restarts>>,
    tracked: watch::Sender<u64>,
) {
    forward(events, move |event| {
        log_event(&event);
        restarts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(&event);
        tracked.send_replace(event.seq);
        true
    })
    .await
}

fn log_event(event: &Event) {
    let head = format!("{} #{}", event.server, event.generation);
    match &event.body {
        EventBody::State(s) => {
            let mut line = format!("{head} {}", s.state.map_or("starting", |s| s.as_str()));
            if let Some(stage) = s.stage {
                line.push_str(&format!(" ({stage})"));
            }
            if let Some(reason) = &s.reason {
                line.push_str(&format!(" - {reason}"));
            }
            tracing::info!("{line}");
        }
        EventBody::Failure { failure } => {
            tracing::info!("{head} failed ({}): {}", failure.kind, failure.message);
        }
        _ => tracing::debug!("{head} {:?}", event.body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lifeline_core::events::{EventBody, FailureInfo, StateInfo, StateName};
    use serde_json::json;

    fn event(server: &str, generation: u64, at: &str) -> Event {
        Event {
            v: 1,
            seq: 0,
            at: at.to_owned(),
            server: server.to_owned(),
            generation: Generation(generation),
            body: EventBody::RoundTrip { round_trip_ms: 1 },
        }
    }

    /// Feeds `(server, generation, at)` events, then asks about `server` at `snapshot_gen`.
    fn check(
        events: &[(&str, u64, &str)],
        server: &str,
        snapshot_gen: u64,
        expect: (u32, Option<&str>),
    ) {
        let mut r = Restarts::default();
        for (s, g, at) in events {
            r.observe(&event(s, *g, at));
        }
        let (n, at) = r.of(server, Generation(snapshot_gen));
        assert_eq!((n, at.as_deref()), expect, "events {events:?}");
    }

    #[test]
    fn counts_generations_beyond_the_first() {
        check(&[], "a", 0, (0, None));
        check(&[("a", 1, "t1")], "a", 1, (0, None));
        check(&[("a", 1, "t1"), ("a", 1, "t2")], "a", 1, (0, None));
        check(
            &[("a", 1, "t1"), ("a", 2, "t2"), ("a", 2, "t3")],
            "a",
            2,
            (1, Some("t2")),
        );
        check(
            &[("a", 1, "t1"), ("a", 2, "t2"), ("a", 3, "t3")],
            "a",
            3,
            (2, Some("t3")),
        );
    }

    #[test]
    fn late_events_of_older_generations_change_nothing() {
        check(
            &[("a", 1, "t1"), ("a", 3, "t3"), ("a", 2, "t4")],
            "a",
            3,
            (2, Some("t3")),
        );
    }

    #[test]
    fn servers_are_counted_apart() {
        let events = [
            ("a", 1, "t1"),
            ("b", 1, "t2"),
            ("b", 2, "t3"),
            ("a", 4, "t4"),
        ];
        check(&events, "a", 4, (3, Some("t4")));
        check(&events, "b", 2, (1, Some("t3")));
        check(&events, "c", 0, (0, None));
    }

    #[test]
    fn a_snapshot_ahead_of_the_events_wins_the_count() {
        // Missed events (a lagging reader): the count follows the snapshot, the time is the
        // latest one known.
        check(&[("a", 1, "t1"), ("a", 2, "t2")], "a", 5, (4, Some("t2")));
        check(&[], "a", 3, (2, None));
    }

    #[test]
    fn a_view_is_the_flat_snapshot_plus_transport_and_restarts() {
        let mut r = Restarts::default();
        r.observe(&event("gh", 1, "2026-11-29T17:00:00.000Z"));
        r.observe(&event("gh", 2, "2026-11-29T17:00:05.000Z"));
        let snapshot = Snapshot {
            server: "gh".into(),
            generation: Generation(2),
            state: StateInfo {
                state: Some(StateName::Reconnecting),
                attempt: Some(1),
                max_attempts: Some(10),
                cause: Some(FailureInfo {
                    kind: "process_exit".into(),
                    generation: Generation(1),
                    message: "exited".into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            tools: vec!["echo".into()],
            tools_stale: true,
            tools_held: 2,
            tools_new: 0,
            last_round_trip_ms: None,
            last_round_trip_at: None,
            auth: None,
        };
        let v = serde_json::to_value(r.view(snapshot, "stdio")).unwrap();
        assert_eq!(v["server"], "gh");
        assert_eq!(v["state"], "reconnecting");
        assert_eq!(v["attempt"], 1);
        assert_eq!(v["cause"]["kind"], "process_exit");
        assert_eq!(v["tools"], json!(["echo"]));
        assert_eq!(v["tools_held"], 2);
        assert_eq!(v["transport"], "stdio");
        assert_eq!(v["restarts"], 1);
        assert_eq!(v["last_restart_at"], "2026-11-29T17:00:05.000Z");
    }

    #[test]
    fn a_replaced_servers_old_events_are_ignored_and_the_count_starts_over() {
        let mut r = Restarts::default();
        for (seq, g) in [(1, 1), (2, 2), (3, 3)] {
            r.observe(&Event {
                seq,
                ..event("a", g, "t")
            });
        }
        r.forget("a", 4);
        // The old supervisor's last event, read after the swap, and the new one's first.
        r.observe(&Event {
            seq: 4,
            ..event("a", 3, "old")
        });
        r.observe(&Event {
            seq: 5,
            ..event("a", 1, "new")
        });
        assert_eq!(r.of("a", Generation(1)), (0, None));
        r.observe(&Event {
            seq: 6,
            ..event("a", 2, "t2")
        });
        assert_eq!(r.of("a", Generation(2)), (1, Some("t2".to_owned())));
    }
}
