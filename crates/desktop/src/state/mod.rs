//! The app's one piece of state: the running `Fleet`, what the shell adds to its snapshots
//! (transports, restart counts), the event subscriptions of the webviews, and what the UI
//! should be told about where the servers came from (`AppInfo`, made in `source.rs`). Every
//! command is a method here, so the commands stay one line and this is tested without a
//! window.

use crate::bundle::{BundlePreview, BundleSources, Exported};
use crate::bus::forward;
use crate::error::ErrorView;
use crate::source::{AppInfo, Source};
use crate::view::{Restarts, ServerView};
use lifeline_core::config::Config;
use lifeline_core::events::{Event, EventBus, HostMode};
use lifeline_core::gateway::hosts::{Hosts, HostsView};
use lifeline_core::history::History;
use lifeline_core::redact::Redactor;
use lifeline_core::supervisor::{Fleet, Supervisor};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;
use tokio::process::Child;
use tokio::sync::broadcast;
use tokio::sync::{RwLock, watch};
use tokio::task::JoinHandle;

mod attach;
pub mod clients;
pub mod detail;
mod profile_hosts;
pub mod profiles;
mod shutdown;
pub mod trust;
#[cfg(any(test, feature = "test-support"))]
mod waits;

/// Events buffered per subscriber; a subscriber further behind sees a gap in `seq`.
const BUS_CAPACITY: usize = 1 << 12;

pub struct AppState {
    /// `None` once shut down. Held only briefly (a tool call sends its request under it and
    /// waits without it); `stopping` makes calls in flight give up at shutdown.
    fleet: RwLock<Option<Fleet>>,
    stopping: watch::Sender<bool>,
    /// Changed when the config is applied (`config`).
    transports: Mutex<HashMap<String, &'static str>>,
    restarts: Arc<Mutex<Restarts>>,
    /// The `seq` of the last event `restarts` has seen (tests wait on it).
    #[cfg_attr(
        not(any(test, feature = "test-support")),
        expect(dead_code, reason = "read by tests only")
    )]
    tracked: watch::Receiver<u64>,
    redactor: Mutex<Redactor>,
    info: Mutex<AppInfo>,
    /// One event forwarder per webview (by label): a reloaded page's new subscription
    /// replaces the old one, whose channel would otherwise keep evaluating into the page.
    subscriptions: Mutex<HashMap<String, JoinHandle<()>>>,
    fixtures: Mutex<Vec<Child>>,
    /// The detail panel's tool calls in flight and the servers' configs.
    detail: detail::Detail,
    /// Every event of the bus and every `call_tool`, kept across runs (docs/history.md).
    history: History,
    /// Records the bus into `history`; ends once shutdown closes `bus` and it has handed
    /// the history every event.
    recorder: Mutex<Option<JoinHandle<()>>>,
    /// The fleet's event bus. The fleet is not its only owner: `hosts`, and every host
    /// session of the HTTP endpoint and of the instance socket, hold it too, so it never
    /// ends by being dropped; shutdown closes it once the fleet has stopped.
    bus: Arc<EventBus>,
    /// What the diagnostic bundle is made of besides the fleet (bundle.rs).
    bundle: BundleSources,
    /// The config the fleet runs; held while a change is written or applied, so changes
    /// (the UI's and the file watcher's) apply one at a time.
    live: tokio::sync::Mutex<config::Live>,
    /// Bumped whenever the servers or `info` change; the shell tells the UI.
    changes: watch::Sender<u64>,
    /// The hosts attached through `lifeline connect` and their last hour of calls (the
    /// detail panel's Hosts section), rebuilt from the history at start.
    hosts: Hosts,
    /// The aggregated sessions open now, by profile (the Profiles view).
    profile_sessions: profiles::Sessions,
}

/// Events replayed to a new subscriber before the live ones (the UI's feed holds 200 lines).
const REPLAYED_EVENTS: usize = 500;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AppState {
    /// Starts every supervisor, with this run's history in memory only. Must run inside the
    /// tokio runtime (the core process's).
    // `allow`, not `expect`: the app itself starts with a history file.
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "tests run without a history file")
    )]
    pub fn start(source: Source) -> AppState {
        AppState::start_with_history(source, |options| (History::in_memory(options), None))
    }

    /// Starts every supervisor, recording into the history `open` returns (given the
    /// options that scrub the config's secrets); its notice, if any, joins `info.notices`.
    pub fn start_with_history(
        source: Source,
        open: impl FnOnce(lifeline_core::history::Options) -> (History, Option<ErrorView>),
    ) -> AppState {
        let Source {
            config,
            mut info,
            fixtures,
        } = source;
        let (history, notice) = open(lifeline_core::history::Options {
            redactor: Redactor::new(config.secrets()),
            ..Default::default()
        });
        info.notices.extend(notice);
        let bus = Arc::new(EventBus::new(BUS_CAPACITY));
        let recorder = tokio::spawn(history.clone().record_from(bus.subscribe()));
        let hosts = Hosts::new(bus.clone(), HostMode::App);
        hosts.replay_history(&history);
        let restarts = Arc::new(Mutex::new(Restarts::default()));
        // Subscribed before the fleet starts, so the count sees every generation.
        let (tracked_tx, tracked) = watch::channel(0);
        tokio::spawn(crate::view::track(
            bus.subscribe(),
            restarts.clone(),
            tracked_tx,
        ));
        let bundle = BundleSources::start(&config, &bus, info.log_dir.as_deref());
        let fleet = Fleet::start(&config, bus.clone()).unwrap_or_else(|e| {
            info.notices
                .push(ErrorView::from_core(&e, &Redactor::default()));
            Fleet::start(&Config::empty(), bus.clone()).expect("an empty fleet starts")
        });
        AppState {
            fleet: RwLock::new(Some(fleet)),
            stopping: watch::Sender::new(false),
            transports: Mutex::new(config::transports(&config)),
            restarts,
            tracked,
            redactor: Mutex::new(Redactor::new(config.secrets())),
            detail: detail::Detail::new(&config),
            live: tokio::sync::Mutex::new(config::Live::new(config, &info)),
            info: Mutex::new(info),
            subscriptions: Mutex::new(HashMap::new()),
            fixtures: Mutex::new(fixtures),
            history,
            recorder: Mutex::new(Some(recorder)),
            bus,
            bundle,
            changes: watch::Sender::new(0),
            hosts,
            profile_sessions: profiles::Sessions::default(),
        }
    }

    /// `server`'s Hosts section: the hosts attached now, their calls in flight, the last
    /// hour's calls by tool.
    pub fn server_hosts(&self, server: &str) -> HostsView {
        self.hosts.view(server, SystemTime::now())
    }

    pub fn history(&self) -> History {
        self.history.clone()
    }

    pub fn info(&self) -> AppInfo {
        lock(&self.info).clone()
    }

    fn views_of(&self, fleet: &Fleet) -> Vec<ServerView> {
        let restarts = lock(&self.restarts);
        let transports = lock(&self.transports);
        fleet
            .supervisors()
            .iter()
            .map(|s| {
                let transport = transports.get(s.name()).copied().unwrap_or("stdio");
                restarts.view(s.snapshot(), transport)
            })
            .collect()
    }

    pub async fn views(&self) -> Result<Vec<ServerView>, ErrorView> {
        let fleet = self.fleet.read().await;
        Ok(self.views_of(running(&fleet)?))
    }

    /// The snapshot, and from now on every event through `sink`, in `seq` order, until
    /// `sink` returns false or `key` subscribes again. Subscribed before the snapshot is
    /// taken, so no event falls between the two (some may already be in the snapshot).
    pub async fn subscribe(
        &self,
        key: &str,
        sink: impl FnMut(Event) -> bool + Send + 'static,
    ) -> Result<Vec<ServerView>, ErrorView> {
        let fleet = self.fleet.read().await;
        let fleet = running(&fleet)?;
        // This run's latest events first, as the mock host does: a window opened (or
        // reloaded) after the servers started shows what already happened in its feed, not
        // "nothing yet". The UI applies them in `seq` order and drops the ones it sees again.
        let (backlog, events) = self.backlog(fleet).await;
        let views = self.views_of(fleet);
        let replayed = backlog.last().map(|e| e.seq);
        let task = tokio::spawn(async move {
            let mut sink = sink;
            for event in backlog {
                if !sink(event) {
                    return;
                }
            }
            // The live stream began before the backlog was read: skip what both hold.
            let fresh = move |e: Event| replayed.is_some_and(|r| e.seq <= r) || sink(e);
            forward(events, fresh).await
        });
        if let Some(old) = lock(&self.subscriptions).insert(key.to_owned(), task) {
            old.abort();
        }
        Ok(views)
    }

    /// Runs `action` on the supervisor called `server`.
    pub async fn act(&self, server: &str, action: fn(&Supervisor)) -> Result<(), ErrorView> {
        let fleet = self.fleet.read().await;
        action(supervisor(running(&fleet)?, server)?);
        Ok(())
    }

    /// A handle on `server`'s supervisor that does not hold the fleet's lock, for an action
    /// that takes long (a sign-in waits for a person).
    pub async fn shared(&self, server: &str) -> Result<Supervisor, ErrorView> {
        let fleet = self.fleet.read().await;
        Ok(supervisor(running(&fleet)?, server)?.share())
    }

    pub async fn reconnect_all_failed(&self) -> Result<Vec<String>, ErrorView> {
        let fleet = self.fleet.read().await;
        Ok(running(&fleet)?.reconnect_all_failed())
    }

    /// One tool call, never replayed. The result is the MCP `CallToolResult` (a tool's own
    /// failure is a result with `isError: true`), its text scrubbed of configured secrets.
    /// The command names calls and streams progress: `call_tool_with` (state/detail.rs).
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        args: Value,
    ) -> Result<Value, ErrorView> {
        self.call_tool_with(server, tool, args, None, |_| {}).await
    }

    /// Every server's snapshot, in config order.
    /// Each server's snapshot as it changes (the tray's picture of the fleet); a server that
    /// is removed ends its receiver.
    pub async fn snapshot_watches(
        &self,
    ) -> Result<Vec<watch::Receiver<lifeline_core::supervisor::Snapshot>>, ErrorView> {
        let fleet = self.fleet.read().await;
        Ok(running(&fleet)?
            .supervisors()
            .iter()
            .map(Supervisor::watch)
            .collect())
    }

    pub async fn snapshots(&self) -> Result<Vec<lifeline_core::supervisor::Snapshot>, ErrorView> {
        let fleet = self.fleet.read().await;
        Ok(running(&fleet)?
            .supervisors()
            .iter()
            .map(Supervisor::snapshot)
            .collect())
    }

    /// The fleet's events from now on (for the tray and notifications).
    pub async fn events(&self) -> Result<broadcast::Receiver<Event>, ErrorView> {
        let fleet = self.fleet.read().await;
        Ok(running(&fleet)?.bus().subscribe())
    }

    /// This run's latest events (at most `REPLAYED_EVENTS`), then the live ones, with none
    /// lost between the two; the live stream repeats the backlog's last few, which the reader
    /// skips (`seq` at most the backlog's last).
    pub async fn events_with_backlog(
        &self,
    ) -> Result<(Vec<Event>, broadcast::Receiver<Event>), ErrorView> {
        let fleet = self.fleet.read().await;
        Ok(self.backlog(running(&fleet)?).await)
    }

    /// The live stream is subscribed first; the backlog is read once the recorder (a task of
    /// its own) holds every event emitted before, so an event is in one or the other.
    async fn backlog(&self, fleet: &Fleet) -> (Vec<Event>, broadcast::Receiver<Event>) {
        let events = fleet.bus().subscribe();
        self.bundle.caught_up(fleet.bus().last_seq()).await;
        (self.bundle.recent(REPLAYED_EVENTS), events)
    }
}

impl AppState {
    pub async fn bundle_preview(&self) -> Result<BundlePreview, ErrorView> {
        let fleet = self.fleet.read().await;
        Ok(self.bundle.preview(running(&fleet)?))
    }

    pub async fn bundle_export(&self, path: &str) -> Result<Exported, ErrorView> {
        let fleet = self.fleet.read().await;
        self.bundle.export(running(&fleet)?, path)
    }

    /// The save dialog returned an existing file: the next export may replace it.
    pub fn bundle_confirm_replace(&self, path: std::path::PathBuf) {
        self.bundle.confirm_replace(path);
    }
}

fn closing() -> ErrorView {
    ErrorView::new(
        "cancelled",
        "the app is closing; nothing more is sent to the servers",
    )
}

fn running(fleet: &Option<Fleet>) -> Result<&Fleet, ErrorView> {
    fleet.as_ref().ok_or_else(closing)
}

fn supervisor<'a>(fleet: &'a Fleet, name: &str) -> Result<&'a Supervisor, ErrorView> {
    fleet.get(name).ok_or_else(|| {
        ErrorView::unknown_server(name, fleet.supervisors().iter().map(|s| s.name()))
    })
}

#[cfg(test)]
mod tests;

pub mod config;
