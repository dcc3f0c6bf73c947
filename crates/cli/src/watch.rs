//! `lifeline watch` prints every lifecycle event of every configured server until a
//! duration ends or SIGINT/SIGTERM, then disposes of everything and exits 0. `lifeline
//! check` connects all, prints one line per server and exits non-zero naming each failure.

use crate::fleet;
use crate::output::{EXIT_AUTH, EXIT_OK, EXIT_UNAVAILABLE, Out};
use crate::table::Table;
use lifeline_core::events::{AuthChange, Event, EventBody, EventBus, StateName};
use lifeline_core::supervisor::{Fleet, Snapshot};
use serde_json::json;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

pub async fn watch(
    config: Option<PathBuf>,
    targets: &[String],
    json: bool,
    limit: Option<Duration>,
) -> i32 {
    let (config, out) = match fleet::load_for_output(config.as_deref(), targets, json) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if config.servers.is_empty() {
        out.note(
            "no servers are configured; add some under \"mcpServers\" or run `lifeline import`",
        );
    }
    let bus = Arc::new(EventBus::new(1 << 16));
    let mut events = bus.subscribe();
    // Before anything starts, so that from now on a signal always leads to disposal.
    let stopped = fleet::until_stopped(limit);
    tokio::pin!(stopped);
    lifeline_core::system::watch::start(); // the machine's sleep and network, told and acted on
    let supervisors = match Fleet::start(&config, bus) {
        Ok(s) => s,
        Err(e) => return out.error(&e),
    };
    if !json && std::io::stdout().is_terminal() {
        live_table(&out, &supervisors, &mut events, &mut stopped).await;
    } else {
        loop {
            tokio::select! {
                ev = events.recv() => print_event(&out, ev),
                _ = &mut stopped => break,
            }
        }
    }
    // Keep printing while everything is disposed, so the final states are shown too.
    let stopping = tokio::spawn(supervisors.stop());
    tokio::pin!(stopping);
    loop {
        tokio::select! {
            ev = events.recv() => print_event(&out, ev),
            _ = &mut stopping => break,
        }
    }
    while let Ok(ev) = events.try_recv() {
        print_event(&out, Ok(ev));
    }
    EXIT_OK
}

/// Redraws the table on every event and every second (for the countdowns) until stopped.
async fn live_table(
    out: &Out,
    fleet: &Fleet,
    events: &mut tokio::sync::broadcast::Receiver<Event>,
    stopped: &mut std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
) {
    let mut table = Table::new(out.redactor.clone());
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            ev = events.recv() => {
                if let Ok(ev) = ev
                    && !matches!(ev.body, EventBody::RoundTrip { .. } | EventBody::Tools { .. })
                {
                    table.remember(describe(&ev));
                }
            }
            _ = tick.tick() => {}
            _ = stopped.as_mut() => return,
        }
        let rows: Vec<Snapshot> = fleet.supervisors().iter().map(|s| s.snapshot()).collect();
        table.draw(&rows);
    }
}

fn print_event(out: &Out, ev: Result<Event, RecvError>) {
    match ev {
        Ok(ev) if out.json => out.line(&serde_json::to_string(&ev).unwrap_or_default()),
        Ok(ev) => out.line(&describe(&ev)),
        Err(RecvError::Lagged(n)) => out.note(&format!(
            "(missed {n} events: the terminal could not keep up)"
        )),
        Err(RecvError::Closed) => {}
    }
}

/// One line per event for people: "17:05:20.123 github #3 reconnecting 3/10 in 2 s — …".
fn describe(ev: &Event) -> String {
    let time = ev.at.get(11..23).unwrap_or(&ev.at);
    let head = format!("{time} {} #{}", ev.server, ev.generation);
    match &ev.body {
        EventBody::State(s) => {
            let mut line = format!("{head} {}", s.state.map(|s| s.as_str()).unwrap_or("?"));
            if let Some(stage) = s.stage {
                line.push_str(&format!(" ({stage})"));
            }
            if let Some(reason) = &s.reason {
                line.push_str(&format!(" — {reason}"));
            }
            if let (Some(a), Some(m)) = (s.attempt, s.max_attempts) {
                line.push_str(&format!(" attempt {a}/{m}"));
            }
            if s.quarantine_level > 0 {
                line.push_str(&format!(" quarantine {}/3", s.quarantine_level));
            }
            if let Some(ms) = s.delay_ms {
                line.push_str(&format!(
                    " next in {}",
                    lifeline_core::fmt_duration(Duration::from_millis(ms))
                ));
            }
            if let Some(v) = &s.protocol_version
                && s.state == Some(StateName::Ready)
            {
                line.push_str(&format!(" (MCP {v})"));
            }
            line
        }
        EventBody::Failure { failure } => {
            format!("{head} failed: {} ({})", failure.message, failure.kind)
        }
        EventBody::Tools { count, stale, .. } => {
            format!(
                "{head} {count} tools{}",
                if *stale { " (stale)" } else { "" }
            )
        }
        // How long it slept is in `--json`.
        EventBody::System { change, .. } => {
            let change = serde_json::to_value(change).unwrap_or_default();
            format!("{head} machine {}", change.as_str().unwrap_or("?"))
        }
        EventBody::ToolChanged { tools, count } => format!(
            "{head} {} held for review ({count}): lifeline tools review {}",
            tools.join(", "),
            ev.server
        ),
        EventBody::ToolApproved { tools, count } => {
            format!("{head} approved ({count}): {}", tools.join(", "))
        }
        EventBody::ToolRejected { tools, count } => {
            format!("{head} rejected ({count}): {}", tools.join(", "))
        }
        EventBody::Call {
            tool,
            outcome,
            duration_ms,
            ..
        } => {
            format!(
                "{head} call {tool}: {} in {duration_ms} ms",
                serde_json::to_value(outcome)
                    .unwrap_or_default()
                    .as_str()
                    .unwrap_or("?")
            )
        }
        EventBody::RoundTrip { round_trip_ms } => format!("{head} ping {round_trip_ms} ms"),
        EventBody::HostAttached { host } => format!(
            "{head} host {} {} attached (MCP {})",
            host.name, host.version, host.protocol_version
        ),
        EventBody::HostDetached { host } => format!("{head} host {} detached", host.name),
        EventBody::HostCall {
            host,
            tool,
            outcome,
            duration_ms,
            ..
        } => format!(
            "{head} {host} called {tool}: {} in {duration_ms} ms",
            serde_json::to_value(outcome)
                .unwrap_or_default()
                .as_str()
                .unwrap_or("?")
        ),
        EventBody::Auth {
            change,
            auth,
            failure,
        } => {
            let what = match change {
                AuthChange::SignInNeeded => format!(
                    "sign-in needed: run `lifeline login {}` (or Sign in in the app)",
                    ev.server
                ),
                AuthChange::SignedIn => "signed in".to_owned(),
                AuthChange::Refreshed => "token refreshed".to_owned(),
                AuthChange::RefreshFailed => "token refresh failed".to_owned(),
                AuthChange::SignedOut => "signed out".to_owned(),
            };
            let mut line = format!("{head} {what}");
            if let Some(at) = &auth.expires_at {
                line.push_str(&format!(" (expires {at})"));
            }
            if let Some(f) = failure {
                line.push_str(&format!(" — {} ({})", f.message, f.kind));
            }
            line
        }
    }
}

/// A server is settled for `check` once it is ready or can no longer get there by itself.
pub(crate) fn settled(s: &Snapshot) -> bool {
    matches!(
        s.state.state,
        Some(
            StateName::Ready
                | StateName::Retired
                | StateName::GaveUp
                | StateName::Disabled
                | StateName::Quarantined
        )
    )
}

pub async fn check(
    config: Option<PathBuf>,
    targets: &[String],
    json: bool,
    deadline: Duration,
) -> i32 {
    let (config, out) = match fleet::load_for_output(config.as_deref(), targets, json) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let bus = Arc::new(EventBus::new(1 << 12));
    let fleet = match Fleet::start(&config, bus) {
        Ok(s) => s,
        Err(e) => return out.error(&e),
    };
    let _ = tokio::time::timeout(deadline, async {
        for s in fleet.supervisors() {
            s.wait_for(settled).await;
        }
    })
    .await;
    let mut rows = Vec::new();
    for s in fleet.supervisors() {
        let mut snap = s.snapshot();
        if snap.state.state == Some(StateName::Ready)
            && let Ok(rtt) = s.ping().await
        {
            snap.last_round_trip_ms = Some(rtt.as_millis() as u64);
        }
        rows.push(snap);
    }
    fleet.stop().await;

    let failed: Vec<&Snapshot> = rows
        .iter()
        .filter(|s| !matches!(s.state.state, Some(StateName::Ready | StateName::Disabled)))
        .collect();
    let auth = failed.iter().any(|s| {
        matches!(
            s.state.reason.as_deref(),
            Some("auth" | "permission" | "sign_in")
        )
    });
    // Where `${keyring:NAME}` values and sign-in tokens are kept; the file fallback is said
    // plainly (docs/secrets.md). Only for a config: TARGETs given on the command line use none.
    let secrets = targets.is_empty().then(|| {
        lifeline_core::secrets::SecretStore::open()
            .backend()
            .clone()
    });
    if out.json {
        out.json_line(&json!({ "ok": failed.is_empty(), "servers": rows, "secrets": secrets }));
    } else {
        for s in &rows {
            out.line(&row(s));
        }
        if let Some(b) = &secrets {
            let lead = if b.is_fallback() {
                "note: secrets are kept in"
            } else {
                "secrets:"
            };
            out.note(&format!("{lead} {b}"));
        }
        for s in &failed {
            if s.auth.as_ref().is_some_and(|a| a.needs_sign_in) {
                out.note(&format!(
                    "{}: sign-in needed — run `lifeline login {}`",
                    s.server, s.server
                ));
                continue;
            }
            let why = s
                .state
                .cause
                .as_ref()
                .map(|c| c.message.as_str())
                .unwrap_or("did not become ready in time");
            out.note(&format!("{}: {why}", s.server));
        }
        if config.serve.enabled {
            let url = lifeline_core::gateway::http::url(config.serve.port, "NAME");
            out.note(&format!(
                "the Lifeline app serves these servers over HTTP at {url} (lifeline.serve; \
                 each client needs its own token, from `lifeline serve token add CLIENT`)"
            ));
        }
    }
    match (failed.is_empty(), auth) {
        (true, _) => EXIT_OK,
        (false, true) => EXIT_AUTH,
        (false, false) => EXIT_UNAVAILABLE,
    }
}

/// "github  ready  #1  12 tools  3 ms  MCP 2025-11-25"
fn row(s: &Snapshot) -> String {
    let state = s.state.state.map(|s| s.as_str()).unwrap_or("connecting");
    let mut state = state.to_owned();
    if let Some(reason) = &s.state.reason {
        state.push_str(&format!(" — {reason}"));
    }
    let rtt = s
        .last_round_trip_ms
        .map(|ms| format!("{ms} ms"))
        .unwrap_or_else(|| "-".into());
    let protocol = s.state.protocol_version.as_deref().unwrap_or("-");
    format!(
        "{:20} {:24} #{:<4} {:>3} tools  {rtt:>6}  MCP {protocol}",
        s.server,
        state,
        s.generation,
        s.tools.len()
    )
}
