//! The tray icon and the desktop notifications. Closing the window does not stop the
//! servers: the app keeps supervising from the tray, whose icon and menu say how the fleet
//! is doing (all ready / some recovering / some failed), and the desktop is told when a
//! server stops trying (retired or gave up). Quit is in the tray menu.
//!
//! What to show is computed by pure functions (`Summary`, `notification_for`, `icon_rgba`),
//! tested without a display; `watch` hands their results to the `Shell`, which draws them
//! (`lifeline-tray`'s StatusNotifierItem on Linux, tauri's tray in `lifeline-app` elsewhere).

use crate::Core;
use lifeline_core::events::{Event, EventBody, StateName};
use std::sync::Arc;

/// The icon's side, in pixels.
pub const ICON_SIZE: u32 = 32;
/// A notification body longer than this is cut; desktops show two or three lines.
const NOTIFICATION_MAX_CHARS: usize = 200;

/// The fleet at a glance, worst first: a failed server outweighs any number recovering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// No servers configured, or all of them disabled.
    Idle,
    AllReady,
    Recovering,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    pub total: usize,
    pub ready: usize,
    /// Starting, connecting, retrying or reconnecting: still trying on its own.
    pub recovering: usize,
    /// Quarantined, gave up or retired: needs a look (what "Reconnect all failed" acts on).
    pub failed: usize,
    pub disabled: usize,
}

impl Summary {
    pub fn of(states: impl IntoIterator<Item = Option<StateName>>) -> Summary {
        let mut s = Summary::default();
        for state in states {
            s.total += 1;
            match state {
                Some(StateName::Ready) => s.ready += 1,
                Some(StateName::Quarantined | StateName::GaveUp | StateName::Retired) => {
                    s.failed += 1
                }
                Some(StateName::Disabled) => s.disabled += 1,
                Some(
                    StateName::Connecting
                    | StateName::Retrying
                    | StateName::Reconnecting
                    | StateName::Stopping,
                )
                | None => s.recovering += 1,
            }
        }
        s
    }

    pub fn health(&self) -> Health {
        if self.failed > 0 {
            Health::Failed
        } else if self.recovering > 0 {
            Health::Recovering
        } else if self.ready > 0 {
            Health::AllReady
        } else {
            Health::Idle
        }
    }

    /// One line for the tooltip and the menu: "All 3 servers ready", "1 failed, 2 recovering
    /// of 6 servers", "No servers configured".
    pub fn label(&self) -> String {
        let servers = |n: usize| if n == 1 { "server" } else { "servers" };
        let active = self.total - self.disabled;
        match self.health() {
            Health::Idle if self.total == 0 => "No servers configured".to_owned(),
            Health::Idle => format!("All {} {} disabled", self.total, servers(self.total)),
            Health::AllReady if active == 1 => "The server is ready".to_owned(),
            Health::AllReady => format!("All {active} {} ready", servers(active)),
            Health::Recovering | Health::Failed => {
                let mut parts = Vec::new();
                if self.failed > 0 {
                    parts.push(format!("{} failed", self.failed));
                }
                if self.recovering > 0 {
                    parts.push(format!("{} recovering", self.recovering));
                }
                format!(
                    "{} of {} {}",
                    parts.join(", "),
                    self.total,
                    servers(self.total)
                )
            }
        }
    }
}

/// The title and body of the desktop notification an event deserves, if any: a server
/// that stopped trying (retired or gave up), or tools held for review (docs/trust.md). The
/// body is the failure's message, which the core has already scrubbed.
pub fn notification_for(event: &Event) -> Option<(String, String)> {
    if let EventBody::ToolChanged { tools, count } = &event.body {
        return Some(held_notification(&event.server, tools, *count));
    }
    let EventBody::State(info) = &event.body else {
        return None;
    };
    // OAuth: the person is the fix, so the notification says what to press.
    if info.state? == StateName::Retired && info.reason.as_deref() == Some("sign_in") {
        return Some((
            format!("{} needs you to sign in", event.server),
            format!(
                "Lifeline holds no valid sign-in for it (expired or revoked). Open Lifeline and \
                 press Sign in, or run `lifeline login {}`.",
                event.server
            ),
        ));
    }
    let (verb, hint) = match info.state? {
        StateName::Retired => (
            "stopped",
            "It will not retry until you fix it and press Reconnect.",
        ),
        StateName::GaveUp => (
            "gave up reconnecting",
            "Press Reconnect in Lifeline to try again.",
        ),
        _ => return None,
    };
    let title = format!("{} {verb}", event.server);
    let mut body = String::new();
    if let Some(reason) = &info.reason {
        body.push_str(&format!("Reason: {reason}. "));
    }
    if let Some(cause) = &info.cause {
        body.push_str(cause.message.trim_end_matches('.'));
        body.push_str(". ");
    }
    body.push_str(hint);
    Some((title, cap(&body)))
}

/// Tools held for review: which (a server's names, so each cut short and only the first
/// few), and how to review them.
fn held_notification(server: &str, tools: &[String], count: usize) -> (String, String) {
    const SHOWN: usize = 3;
    let mut names: Vec<String> = (tools.iter().take(SHOWN))
        .map(|t| format!("`{}`", cap_to(t, 40)))
        .collect();
    if count > names.len() {
        names.push(format!("{} more", count - names.len()));
    }
    let title = match count {
        1 => format!("{server}: a tool changed"),
        n => format!("{server}: {n} tools changed"),
    };
    let body = format!(
        "Lifeline holds {} from your AI clients until you review {}. Open Lifeline, or run \
         `lifeline tools review {server}`.",
        names.join(", "),
        if count == 1 { "it" } else { "them" }
    );
    (title, cap(&body))
}

/// How long after a server's held-tools notification another one for it waits: a server
/// changing tools one by one raises one notification per burst.
pub const HELD_BURST: std::time::Duration = std::time::Duration::from_secs(60);

/// The servers whose held-tools notification was raised lately (`HELD_BURST`).
#[derive(Default)]
pub struct Bursts(std::collections::HashMap<String, tokio::time::Instant>);

impl Bursts {
    /// Whether `event`'s notification should be raised at `now`: always, but for held tools
    /// of a server notified within `HELD_BURST`.
    pub fn admit(&mut self, event: &Event, now: tokio::time::Instant) -> bool {
        if !matches!(event.body, EventBody::ToolChanged { .. }) {
            return true;
        }
        match self.0.get(&event.server) {
            Some(at) if now.duration_since(*at) < HELD_BURST => false,
            _ => {
                self.0.insert(event.server.clone(), now);
                true
            }
        }
    }
}

fn cap_to(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

fn cap(text: &str) -> String {
    cap_to(text, NOTIFICATION_MAX_CHARS)
}

/// The tray icon: a filled disc in the health's colour (grey, green, amber, red) with a
/// light ring, so it reads on dark and light panels. RGBA, `ICON_SIZE` square.
pub fn icon_rgba(health: Health) -> Vec<u8> {
    let fill: [u8; 3] = match health {
        Health::Idle => [0x8a, 0x8f, 0x98],
        Health::AllReady => [0x2e, 0x9d, 0x5b],
        Health::Recovering => [0xd0, 0x8a, 0x00],
        Health::Failed => [0xd6, 0x45, 0x45],
    };
    let size = ICON_SIZE as f32;
    let center = (size - 1.0) / 2.0;
    let radius = size / 2.0 - 1.0;
    let mut rgba = Vec::with_capacity((ICON_SIZE * ICON_SIZE * 4) as usize);
    for y in 0..ICON_SIZE {
        for x in 0..ICON_SIZE {
            let d = ((x as f32 - center).powi(2) + (y as f32 - center).powi(2)).sqrt();
            // Coverage for a one-pixel soft edge; the outer 2 px are the ring.
            let alpha = (radius - d + 0.5).clamp(0.0, 1.0);
            let color = if d > radius - 2.0 {
                [0xf4, 0xf5, 0xf7]
            } else {
                fill
            };
            rgba.extend_from_slice(&color);
            rgba.push((alpha * 255.0).round() as u8);
        }
    }
    rgba
}

/// Keeps the tray in step with the fleet and raises the notifications, until the app ends.
/// Within a tokio runtime.
pub fn watch(core: Arc<Core>) {
    tokio::spawn(notify_from_events(core.clone()));
    tokio::spawn(show_the_fleet(core));
}

/// The tray's picture, from the servers' snapshots: recomputed whenever one changes (a
/// snapshot is published after the step's events, so the snapshots, not the events, say
/// what the step ended in), and the servers collected again when the config changes.
async fn show_the_fleet(core: Arc<Core>) {
    let state = &core.state;
    let mut applied = state.changes();
    let mut shown = None;
    loop {
        let Ok(mut servers) = state.snapshot_watches().await else {
            return; // shutting down
        };
        loop {
            let summary = Summary::of(
                servers
                    .iter_mut()
                    .map(|s| s.borrow_and_update().state.state),
            );
            if shown != Some(summary) {
                core.shell().show(&summary);
                shown = Some(summary);
            }
            let changed = async {
                if servers.is_empty() {
                    return std::future::pending().await;
                }
                let changes = servers.iter_mut().map(|s| Box::pin(s.changed()));
                futures_util::future::select_all(changes).await.0
            };
            tokio::select! {
                server = changed => match server {
                    Ok(()) => continue,
                    // A server removed (or the fleet stopped): collect them again.
                    Err(_) => break,
                },
                config = applied.changed() => match config {
                    Ok(()) => break,
                    Err(_) => return,
                },
            }
        }
    }
}

/// Raises a notification for each event that deserves one, from the run's first event: a
/// server that stopped trying before this task got here (a command that does not exist
/// fails in a millisecond) still notifies.
async fn notify_from_events(core: Arc<Core>) {
    let Ok((backlog, mut events)) = core.state.events_with_backlog().await else {
        return;
    };
    let replayed = backlog.last().map_or(0, |e| e.seq);
    let mut bursts = Bursts::default();
    let mut notify = |event: &Event| {
        if let Some((title, body)) = notification_for(event)
            && bursts.admit(event, tokio::time::Instant::now())
        {
            core.shell().notify(&title, &body);
        }
    };
    backlog.iter().for_each(&mut notify);
    loop {
        match events.recv().await {
            Ok(event) if event.seq > replayed => notify(&event),
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!("the tray fell {n} events behind; their notifications are lost")
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

#[cfg(test)]
#[path = "tray_canaries.rs"]
mod canaries;

#[cfg(test)]
#[path = "tray_tests.rs"]
mod tests;
