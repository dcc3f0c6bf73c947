//! The Hosts section's numbers: exact nearest-rank percentiles on known inputs, the hour
//! window, the bounds on samples and tools.

use super::*;

const MIN: u64 = 60_000;
/// Some minute boundary, far from the epoch.
const T0: u64 = 29_000_000 * MIN;

fn check_percentiles(values: &[u32], expect: (Option<u64>, Option<u64>)) {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    assert_eq!(
        (percentile(&sorted, 50), percentile(&sorted, 95)),
        expect,
        "{values:?}"
    );
}

#[test]
fn percentiles_are_nearest_rank() {
    check_percentiles(&[], (None, None));
    check_percentiles(&[7], (Some(7), Some(7)));
    check_percentiles(&[1, 2], (Some(1), Some(2)));
    check_percentiles(&[3, 1, 2], (Some(2), Some(3)));
    check_percentiles(
        &[100, 90, 80, 70, 60, 50, 40, 30, 20, 10],
        (Some(50), Some(100)),
    );
    let hundred: Vec<u32> = (1..=100).collect();
    check_percentiles(&hundred, (Some(50), Some(95)));
    let twenty: Vec<u32> = (1..=20).collect();
    check_percentiles(&twenty, (Some(10), Some(19)));
}

#[test]
fn a_tool_counts_calls_errors_and_latencies() {
    let mut s = ServerStats::default();
    for (i, ms) in [10, 20, 30, 40, 50, 60, 70, 80, 90, 100].iter().enumerate() {
        s.record("search", T0 + i as u64 * 1000, *ms, i % 4 != 0);
    }
    s.record("fetch", T0 + 5 * MIN, 5, true);
    assert_eq!(
        s.view(T0 + 5 * MIN),
        vec![
            ToolStats {
                tool: "search".into(),
                calls: 10,
                errors: 3,
                p50_ms: Some(50),
                p95_ms: Some(100),
            },
            ToolStats {
                tool: "fetch".into(),
                calls: 1,
                errors: 0,
                p50_ms: Some(5),
                p95_ms: Some(5),
            },
        ]
    );
}

#[test]
fn calls_leave_the_window_after_an_hour() {
    let mut s = ServerStats::default();
    s.record("a", T0, 100, false);
    s.record("a", T0 + 30 * MIN, 10, true);
    // 59 minutes and 59 seconds on, the first call's minute is still in the window.
    let row = &s.view(T0 + 60 * MIN - 1000)[0];
    assert_eq!((row.calls, row.errors, row.p95_ms), (2, 1, Some(100)));
    // A minute later it is gone, with its error and its latency.
    let row = &s.view(T0 + 60 * MIN)[0];
    assert_eq!((row.calls, row.errors, row.p50_ms), (1, 0, Some(10)));
    // Another half hour and the tool is forgotten.
    assert_eq!(s.view(T0 + 90 * MIN), vec![]);
    assert!(s.is_empty());
}

#[test]
fn a_slot_reused_an_hour_later_starts_from_zero() {
    let mut s = ServerStats::default();
    s.record("a", T0, 1, false);
    s.record("a", T0 + 60 * MIN, 2, true);
    let row = &s.view(T0 + 60 * MIN)[0];
    assert_eq!((row.calls, row.errors, row.p50_ms), (1, 0, Some(2)));
}

#[test]
fn percentiles_use_the_latest_samples_of_a_busy_tool() {
    let mut s = ServerStats::default();
    // MAX_SAMPLES slow calls, then MAX_SAMPLES fast ones: only the fast ones are kept.
    for _ in 0..MAX_SAMPLES {
        s.record("busy", T0, 1000, true);
    }
    for _ in 0..MAX_SAMPLES {
        s.record("busy", T0 + MIN, 1, true);
    }
    let row = &s.view(T0 + MIN)[0];
    assert_eq!(row.calls as usize, 2 * MAX_SAMPLES);
    assert_eq!((row.p50_ms, row.p95_ms), (Some(1), Some(1)));
}

#[test]
fn tools_past_the_cap_are_counted_together() {
    let mut s = ServerStats::default();
    for i in 0..MAX_TOOLS + 3 {
        s.record(&format!("t{i}"), T0, 1, true);
    }
    let rows = s.view(T0);
    assert_eq!(rows.len(), MAX_TOOLS + 1);
    let other = rows.iter().find(|r| r.tool == OTHER).unwrap();
    assert_eq!(other.calls, 3);
    // Once the old tools left the window, a new one gets its own line again.
    s.record("fresh", T0 + 61 * MIN, 1, true);
    assert_eq!(s.view(T0 + 61 * MIN)[0].tool, "fresh");
}
