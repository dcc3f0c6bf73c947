//! The live table `lifeline watch` draws on a terminal: one row per server, countdowns that
//! tick locally from `next_attempt_at`, and the latest events underneath. Redrawn in place;
//! when stdout is not a terminal, `watch` prints one line per event instead.

use lifeline_core::redact::Redactor;
use lifeline_core::supervisor::Snapshot;
use std::collections::VecDeque;
use std::io::Write;
use std::time::{Duration, SystemTime};

const RECENT: usize = 8;

pub struct Table {
    recent: VecDeque<String>,
    redactor: Redactor,
}

impl Table {
    pub fn new(redactor: Redactor) -> Self {
        Table {
            recent: VecDeque::with_capacity(RECENT),
            redactor,
        }
    }

    pub fn remember(&mut self, line: String) {
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(line);
    }

    /// Clears the screen and draws the table and the recent events.
    pub fn draw(&self, rows: &[Snapshot]) {
        let mut text = String::from("\x1b[H\x1b[2J");
        text.push_str(&format!(
            "{:<20} {:<28} {:>5} {:>8} {:>9} {:>3} {:>7} {:>7}\n",
            "SERVER", "STATE", "GEN", "ATTEMPT", "NEXT IN", "Q", "TOOLS", "RTT"
        ));
        for s in rows {
            text.push_str(&row(s));
            text.push('\n');
        }
        text.push('\n');
        for line in &self.recent {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str("\nCtrl-C stops every server and exits.\n");
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(self.redactor.scrub(&text).as_bytes());
        let _ = stdout.flush();
    }
}

fn row(s: &Snapshot) -> String {
    let info = &s.state;
    let mut state = info
        .state
        .map(|s| s.as_str())
        .unwrap_or("starting")
        .to_owned();
    if let Some(stage) = info.stage {
        state.push_str(&format!(" ({stage})"));
    } else if let Some(reason) = &info.reason {
        state.push_str(&format!(" — {reason}"));
    }
    let attempt = match (info.attempt, info.max_attempts) {
        (Some(a), Some(m)) => format!("{a}/{m}"),
        _ => "-".into(),
    };
    let next = info
        .next_attempt_at
        .as_deref()
        .and_then(|t| humantime::parse_rfc3339(t).ok())
        .map(|at| {
            countdown(
                at.duration_since(SystemTime::now())
                    .unwrap_or(Duration::ZERO),
            )
        })
        .unwrap_or_else(|| "-".into());
    let tools = format!("{}{}", s.tools.len(), if s.tools_stale { "*" } else { "" });
    let rtt = s
        .last_round_trip_ms
        .map(|ms| format!("{ms} ms"))
        .unwrap_or_else(|| "-".into());
    let mut line = format!(
        "{:<20} {:<28} {:>5} {:>8} {:>9} {:>3} {:>7} {:>7}",
        clip(&s.server, 20),
        clip(&state, 28),
        s.generation,
        attempt,
        next,
        info.quarantine_level,
        tools,
        rtt
    );
    if let Some(cause) = &info.cause {
        line.push_str(&format!("  {}", clip(&cause.message, 60)));
    }
    line
}

/// Whole seconds, rounded up, so a countdown never shows 0 while it is still waiting.
fn countdown(d: Duration) -> String {
    let secs = d.as_millis().div_ceil(1000);
    if secs >= 60 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{secs}s")
    }
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn countdowns_round_up_and_clip_marks_the_cut() {
        assert_eq!(countdown(Duration::from_millis(1)), "1s");
        assert_eq!(countdown(Duration::from_millis(59_001)), "1m00s");
        assert_eq!(countdown(Duration::ZERO), "0s");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
    }
}
