//! `lifeline bundle --out FILE.zip`: runs every configured server briefly (until each has
//! settled, or `--for` passed, as `check` does), collects their states, events, failures
//! and stderr tails and the end of the log folder, and writes the diagnostic bundle
//! (docs/bundle.md). Exit 0 once the bundle is written, whatever the servers did: the
//! bundle is how failures get reported.

use crate::fleet;
use crate::output::{EXIT_OK, Out};
use crate::watch::settled;
use lifeline_core::diagnostics::bundle::{self, BundleInput, BundleOptions, ServerInput};
use lifeline_core::events::{Event, EventBody, EventBus, StateName};
use lifeline_core::supervisor::Fleet;
use lifeline_core::{Error, fmt_duration};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Log lines taken from the end of the log folder (the size bound may drop more).
const LOG_LINES: usize = 5000;

#[derive(clap::Args)]
pub struct Args {
    /// The config file (default: $LIFELINE_CONFIG, else the platform config dir's lifeline/config.json)
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where to write the zip, e.g. lifeline-diagnostics.zip
    #[arg(long)]
    pub out: PathBuf,
    /// Run the servers at most this long (less once every server has settled)
    #[arg(long = "for", value_parser = humantime::parse_duration, default_value = "30s")]
    pub duration: Duration,
    /// The log folder to take the tail of (default: the desktop app's log folder)
    #[arg(long)]
    pub logs: Option<PathBuf>,
    /// Print one JSON object: the path, size, file count and diagnostics id
    #[arg(long)]
    pub json: bool,
}

pub async fn run(args: Args) -> i32 {
    let (config, out) = match fleet::load_for_output(args.config.as_deref(), &[], args.json) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let bus = Arc::new(EventBus::new(1 << 16));
    let mut events = bus.subscribe();
    let stopped = fleet::until_stopped(Some(args.duration));
    tokio::pin!(stopped);
    let fleet = match Fleet::start(&config, bus) {
        Ok(f) => f,
        Err(e) => return out.error(&e),
    };
    if !out.json {
        out.note(&format!(
            "running {} server(s) for up to {} to collect diagnostics…",
            fleet.supervisors().len(),
            fmt_duration(args.duration)
        ));
    }
    let mut seen: Vec<Event> = Vec::new();
    {
        let all_settled = async {
            for s in fleet.supervisors() {
                s.wait_for(shown).await;
            }
        };
        tokio::pin!(all_settled);
        loop {
            tokio::select! {
                Ok(ev) = events.recv() => seen.push(ev),
                _ = &mut all_settled => break,
                _ = &mut stopped => break,
            }
        }
    }
    while let Ok(ev) = events.try_recv() {
        seen.push(ev);
    }
    let servers = collect(&fleet, &seen);
    fleet.stop().await;

    let logs = args.logs.or_else(bundle::default_log_dir);
    let input = BundleInput {
        app: "lifeline".into(),
        app_version: env!("CARGO_PKG_VERSION").into(),
        config: Some(config.raw.clone()),
        secrets: config.secrets(),
        servers,
        log_tail: logs
            .as_deref()
            .map(|d| bundle::read_log_tail(d, LOG_LINES))
            .unwrap_or_default(),
    };
    let built = bundle::build(&input, BundleOptions::default());
    match built.write(&args.out) {
        Ok(bytes) => {
            report(&out, &args.out, bytes, built.files().len(), built.id());
            EXIT_OK
        }
        Err(e) => out.error(&Error::from(e)),
    }
}

/// Each supervisor's snapshot, its events and failures, and its stderr tails.
fn collect(fleet: &Fleet, seen: &[Event]) -> Vec<ServerInput> {
    fleet
        .supervisors()
        .iter()
        .map(|s| {
            let mine = seen.iter().filter(|e| e.server == s.name());
            ServerInput {
                name: s.name().to_owned(),
                state: serde_json::to_value(s.snapshot()).unwrap_or(Value::Null),
                events: mine
                    .clone()
                    .filter_map(|e| serde_json::to_value(e).ok())
                    .collect(),
                failures: mine
                    .filter_map(|e| match &e.body {
                        EventBody::Failure { failure } => serde_json::to_value(failure).ok(),
                        _ => None,
                    })
                    .collect(),
                stderr: s.stderr_tails(),
            }
        })
        .collect()
}

fn report(out: &Out, path: &Path, bytes: u64, files: usize, id: &str) {
    let shown = path.display().to_string();
    if out.json {
        out.json_line(&json!({ "ok": true, "result": {
            "path": shown, "bytes": bytes, "files": files, "diagnostics_id": id,
        }}));
    } else {
        out.line(&format!(
            "wrote {shown} ({}, {files} files, diagnostics id {id})",
            human_size(bytes)
        ));
    }
}

fn human_size(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{:.1} MB", b as f64 / (1024.0 * 1024.0)),
    }
}

/// Whether a server has shown what a bundle needs: it settled, or it failed at least once
/// and is retrying (its failure is recorded; waiting out its backoff adds nothing).
fn shown(s: &lifeline_core::supervisor::Snapshot) -> bool {
    settled(s)
        || matches!(
            s.state.state,
            Some(StateName::Retrying | StateName::Reconnecting)
        )
}
