//! Per-tool call statistics of one server over the last hour: calls, errors and the latency
//! p50/p95 the dashboard's Hosts section shows. Pure: every method takes `now_ms`
//! (milliseconds since the Unix epoch), so the window is tested with exact times and the
//! history's past calls are replayed at their own.
//!
//! The choice: counts per minute in a ring of 60 slots (exact over the hour, 8 bytes a
//! minute), and the latencies of the latest `MAX_SAMPLES` calls (8 bytes each). Percentiles
//! are then exact (nearest rank) whenever a tool had at most `MAX_SAMPLES` calls in the
//! hour, and over its latest `MAX_SAMPLES` calls otherwise, which is what a dashboard wants
//! of a busy tool. A fixed histogram would be as small but only ever give a bucket's bound.
//! At most `MAX_TOOLS` tools are kept per server (a host may name any tool); the rest are
//! counted under `OTHER`. So one server's statistics stay under
//! (`MAX_TOOLS` + 1) × ~2.6 KB, and a tool no one called costs nothing.

use serde::Serialize;
use std::collections::{HashMap, VecDeque};

/// The window: the current minute and the 59 before it.
pub const WINDOW_MINUTES: u64 = 60;
const MINUTE_MS: u64 = 60_000;
/// The window as a duration (what to read back from the history at start).
pub const WINDOW: std::time::Duration = std::time::Duration::from_secs(WINDOW_MINUTES * 60);
/// The latencies kept per tool for its percentiles.
pub const MAX_SAMPLES: usize = 256;
/// The tools kept per server; calls to any other are counted under `OTHER`.
pub const MAX_TOOLS: usize = 256;
/// Where the calls to tools past `MAX_TOOLS` are counted.
pub const OTHER: &str = "(other tools)";

/// One tool's line in the Hosts section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ToolStats {
    pub tool: String,
    pub calls: u32,
    /// Calls that did not end `ok` (a tool error, or an error the host was answered with).
    pub errors: u32,
    /// Nearest-rank percentiles of the latencies kept (see the module's doc); null when
    /// no call is in the window.
    pub p50_ms: Option<u64>,
    pub p95_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Minute {
    /// Minutes since the epoch this slot counts; a slot of another minute is stale.
    minute: u64,
    calls: u32,
    errors: u32,
}

#[derive(Debug, Clone)]
struct ToolWindow {
    minutes: [Minute; WINDOW_MINUTES as usize],
    /// (minute, latency ms), oldest first.
    samples: VecDeque<(u64, u32)>,
}

impl Default for ToolWindow {
    fn default() -> Self {
        ToolWindow {
            minutes: [Minute::default(); WINDOW_MINUTES as usize],
            samples: VecDeque::new(),
        }
    }
}

/// Whether `minute` is inside the window that ends in `now`'s minute.
fn in_window(minute: u64, now: u64) -> bool {
    minute <= now && now - minute < WINDOW_MINUTES
}

impl ToolWindow {
    fn record(&mut self, minute: u64, duration_ms: u64, ok: bool) {
        let slot = &mut self.minutes[(minute % WINDOW_MINUTES) as usize];
        if slot.minute != minute {
            *slot = Minute {
                minute,
                ..Minute::default()
            };
        }
        slot.calls = slot.calls.saturating_add(1);
        if !ok {
            slot.errors = slot.errors.saturating_add(1);
        }
        if self.samples.len() == MAX_SAMPLES {
            self.samples.pop_front();
        }
        let ms = u32::try_from(duration_ms).unwrap_or(u32::MAX);
        self.samples.push_back((minute, ms));
    }

    /// Drops the samples that left the window; true when nothing is left in it.
    fn expire(&mut self, now: u64) -> bool {
        while self
            .samples
            .front()
            .is_some_and(|&(m, _)| !in_window(m, now))
        {
            self.samples.pop_front();
        }
        !self
            .minutes
            .iter()
            .any(|m| m.calls > 0 && in_window(m.minute, now))
    }

    fn stats(&self, tool: &str, now: u64) -> ToolStats {
        let live = self.minutes.iter().filter(|m| in_window(m.minute, now));
        let (calls, errors) = live.fold((0u32, 0u32), |(c, e), m| {
            (c.saturating_add(m.calls), e.saturating_add(m.errors))
        });
        let mut ms: Vec<u32> = self
            .samples
            .iter()
            .filter(|&&(m, _)| in_window(m, now))
            .map(|&(_, d)| d)
            .collect();
        ms.sort_unstable();
        ToolStats {
            tool: tool.to_owned(),
            calls,
            errors,
            p50_ms: percentile(&ms, 50),
            p95_ms: percentile(&ms, 95),
        }
    }
}

/// The nearest-rank percentile `p` of `sorted` (ascending): the smallest value with at
/// least p % of the values at or below it.
pub fn percentile(sorted: &[u32], p: u64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as u64;
    let rank = (p * n).div_ceil(100).clamp(1, n);
    Some(u64::from(sorted[(rank - 1) as usize]))
}

/// One server's tools.
#[derive(Debug, Clone, Default)]
pub struct ServerStats {
    tools: HashMap<String, ToolWindow>,
}

impl ServerStats {
    /// Counts one call that ended at `now_ms`, took `duration_ms`, and was `ok` or not.
    pub fn record(&mut self, tool: &str, now_ms: u64, duration_ms: u64, ok: bool) {
        let minute = now_ms / MINUTE_MS;
        if !self.tools.contains_key(tool) && self.tools.len() >= MAX_TOOLS {
            // Make room from tools whose calls all left the window before lumping.
            self.tools.retain(|_, w| !w.expire(minute));
        }
        let key = if self.tools.contains_key(tool) || self.tools.len() < MAX_TOOLS {
            tool
        } else {
            OTHER
        };
        self.tools
            .entry(key.to_owned())
            .or_default()
            .record(minute, duration_ms, ok);
    }

    /// Every tool called in the hour before `now_ms`, the most called first (then by
    /// name); tools with no call left in the window are forgotten.
    pub fn view(&mut self, now_ms: u64) -> Vec<ToolStats> {
        let now = now_ms / MINUTE_MS;
        self.tools.retain(|_, w| !w.expire(now));
        let mut rows: Vec<ToolStats> = self.tools.iter().map(|(t, w)| w.stats(t, now)).collect();
        rows.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.tool.cmp(&b.tool)));
        rows
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
#[path = "stats_tests.rs"]
mod tests;
