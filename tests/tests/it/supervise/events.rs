//! Reading what `watch --json` printed: one server's events, state labels and outlines,
//! event times, and the checks every event stream must pass (gap-free `seq`, schema v1,
//! RFC 3339 times, no attempt before the wait it announced ran out).

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::watch::WatchRun;
use crate::support;

/// Every tool of the fixture, in its order.
pub const TOOLS: [&str; 10] = [
    "echo",
    "add",
    "slow",
    "progress",
    "fail",
    "crash",
    "stderr",
    "list_changed",
    "log",
    "ask",
];

/// A state event's `delay_ms` is the wait that was decided, but its `at` is stamped a moment
/// after the decision (a few ms on a loaded machine), so `next_attempt_at - at` may fall
/// short of `delay_ms` by this much (never exceed it).
pub const RENDER_LAG_MS: i64 = 20;

pub fn of<'a>(events: &'a [Value], server: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["server"] == server).collect()
}

pub fn typed<'a>(events: &'a [Value], server: &str, kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["server"] == server && e["type"] == kind)
        .collect()
}

pub fn states<'a>(events: &'a [Value], server: &str) -> Vec<&'a Value> {
    typed(events, server, "state")
}

/// The first state event of `server` in `state`.
pub fn first_state<'a>(events: &'a [Value], server: &str, state: &str) -> &'a Value {
    states(events, server)
        .into_iter()
        .find(|e| e["state"] == state)
        .unwrap_or_else(|| panic!("{server} was never {state}"))
}

/// One state event as a short label: `connecting(spawn)`, `retrying 2/3`,
/// `quarantined 1`, `retired auth`, `ready`.
pub fn label(e: &Value) -> String {
    let state = e["state"].as_str().unwrap_or("?");
    match state {
        "connecting" => format!("connecting({})", e["stage"].as_str().unwrap_or("?")),
        "retrying" | "reconnecting" => format!("{state} {}/{}", e["attempt"], e["max_attempts"]),
        "quarantined" => format!("quarantined {}", e["quarantine_level"]),
        "retired" => format!("retired {}", e["reason"].as_str().unwrap_or("?")),
        _ => state.to_owned(),
    }
}

/// The state labels of `server`, in order.
pub fn labels(events: &[Value], server: &str) -> Vec<String> {
    states(events, server).into_iter().map(label).collect()
}

/// The state labels with the stages of each attempt folded into one `connecting`.
pub fn outline(events: &[Value], server: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in states(events, server) {
        let l = if e["state"] == "connecting" {
            "connecting".to_owned()
        } else {
            label(e)
        };
        if l == "connecting" && out.last().is_some_and(|p| p == "connecting") {
            continue;
        }
        out.push(l);
    }
    out
}

pub fn is_state(server: &str, state: &str) -> impl Fn(&Value) -> bool + use<> {
    let (server, state) = (server.to_owned(), state.to_owned());
    move |e| e["server"] == server.as_str() && e["type"] == "state" && e["state"] == state.as_str()
}

/// `at` as milliseconds since the epoch; panics unless it is RFC 3339 UTC with
/// milliseconds ("2026-11-29T17:05:20.123Z"), the form events.md promises.
pub fn epoch_ms(at: &str) -> i64 {
    let b = at.as_bytes();
    let shape = b.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z';
    assert!(shape, "not RFC 3339 UTC with milliseconds: {at:?}");
    let n = |from: usize, to: usize| -> i64 {
        at[from..to]
            .parse()
            .unwrap_or_else(|_| panic!("not RFC 3339: {at:?}"))
    };
    let (y, mo, d) = (n(0, 4), n(5, 7), n(8, 10));
    let (h, mi, s, ms) = (n(11, 13), n(14, 16), n(17, 19), n(20, 23));
    assert!(
        (1..=12).contains(&mo) && (1..=31).contains(&d) && h < 24 && mi < 60 && s < 61,
        "not a valid time: {at:?}"
    );
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((mo + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    ((days * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms
}

pub fn at_ms(e: &Value) -> i64 {
    epoch_ms(e["at"].as_str().unwrap_or_else(|| panic!("no `at` in {e}")))
}

pub fn now_ms() -> i64 {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(d.as_millis()).unwrap()
}

/// What every run of `watch` shows: it exited 0 on SIGTERM; `seq` is 1, 2, 3, … without
/// gaps; every event is schema v1 with the common keys and a known `type`; and `at` is
/// RFC 3339 UTC, never goes backwards and lies within the run (`started`..`ended`, epoch
/// ms).
pub fn assert_stream(run: &WatchRun, started: i64, ended: i64) {
    assert_eq!(run.code, 0, "{run:?}");
    let seqs: Vec<u64> = run
        .events
        .iter()
        .map(|e| e["seq"].as_u64().unwrap_or_else(|| panic!("no seq: {e}")))
        .collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "seq must be 1, 2, 3, … without gaps");
    let mut last = i64::MIN;
    for e in &run.events {
        assert_eq!(e["v"], 1, "{e}");
        for key in ["seq", "at", "server", "generation", "type"] {
            assert!(!e[key].is_null(), "event without {key}: {e}");
        }
        let at = at_ms(e);
        assert!(
            (started - 1..=ended + 1).contains(&at),
            "`at` is not the current UTC time: {e}"
        );
        assert!(at >= last, "`at` went backwards at {e}");
        last = at;
        let kind = e["type"].as_str().unwrap();
        assert!(
            ["state", "failure", "tools", "call", "round_trip"].contains(&kind),
            "unknown type: {e}"
        );
    }
}

/// For every wait (retrying, reconnecting, quarantined) of `server` that was followed by
/// an attempt, the attempt did not start before the announced `next_attempt_at` (both to
/// the millisecond). Returns how many waits were checked.
pub fn assert_no_early_attempts(events: &[Value], server: &str) -> usize {
    let states = states(events, server);
    let mut checked = 0;
    for pair in states.windows(2) {
        let (wait, next) = (pair[0], pair[1]);
        if !matches!(
            wait["state"].as_str(),
            Some("retrying" | "reconnecting" | "quarantined")
        ) || next["state"] != "connecting"
        {
            continue;
        }
        let announced = epoch_ms(
            wait["next_attempt_at"]
                .as_str()
                .unwrap_or_else(|| panic!("a wait without next_attempt_at: {wait}")),
        );
        let started = at_ms(next);
        assert!(
            started >= announced,
            "attempt at {} began {} ms before the announced next_attempt_at {}:\n{wait}\n{next}",
            next["at"],
            announced - started,
            wait["next_attempt_at"]
        );
        // The announcement is `at` + delay_ms.
        let delay = wait["delay_ms"].as_i64().expect("delay_ms");
        let off = announced - at_ms(wait) - delay;
        assert!(
            (-RENDER_LAG_MS..=1).contains(&off),
            "next_attempt_at is not at + delay_ms ({off} ms off): {wait}"
        );
        checked += 1;
    }
    checked
}

/// The pids of the processes a stdio fixture log says were started, in order.
pub fn started_pids(log: &Path) -> Vec<u32> {
    support::events(&support::read_log(log), "started")
        .iter()
        .map(|e| {
            let pid = e["pid"].as_u64().expect("a pid");
            u32::try_from(pid).expect("a pid fits in u32")
        })
        .collect()
}

pub fn names(tools_event: &Value) -> Vec<&str> {
    tools_event["names"]
        .as_array()
        .unwrap_or_else(|| panic!("no names in {tools_event}"))
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect()
}
