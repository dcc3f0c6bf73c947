//! The supervisor's actor: the one task per server that owns the live connection, and with
//! the helpers it spawns the only place in the supervisor that sleeps. It turns what
//! happens (attempt outcomes, a session ending, timers, pings, calls, user actions) into
//! `state::Input`s and performs the `Effect`s `state::step` returns. This file is the run
//! loop and a generation's life (attempt, adoption, loss, close, disposal); beside it:
//!
//! - `handle.rs`: `Supervisor`, the handle other crates hold, and its mailbox commands;
//! - `calls.rs`: the call lane (a call on the live session, admitted against the cap);
//! - `requests.rs`: the request lane (any other request on the live session, for the
//!   gateway), and the live session's `initialize` result;
//! - `tools.rs`: the tool registry (listing, re-sync, stale marks, the `tools` event);
//! - `trust.rs`: each list judged against the tool pins, and what hosts are shown;
//! - `health.rs`: health pings and round trips;
//! - `system.rs`: what happened to the machine (a wake probes, a wait loses the sleep);
//! - `stderr.rs`: the stderr tails of the last generations that started a process.
//!
//! Architecture invariants: one generation holds the process slot at a time (an attempt
//! waits for the previous generation's close before it spawns anything); a tool call is
//! never replayed; disposal is bounded.

mod calls;
mod handle;
mod health;
mod requests;
mod stderr;
mod system;
mod tools;
mod trust;

#[cfg(test)]
mod tests;

pub use handle::{CallOptions, Snapshot, Supervisor};
pub use requests::Sent;
pub use stderr::GenerationStderr;
pub use trust::{Held, ReviewedTool};

use super::SupervisorConfig;
use super::establish::establish;
use super::relist::Relist;
use super::state::{Effect, Input, State, Status, step};
use crate::error::{Error, Phase, Stage};
use crate::events::{
    AuthChange, EventBody, EventBus, FailureInfo, Generation, later, millis, rfc3339,
};
use crate::policy::{SeededRng, classify};
use crate::protocol::mcp::Tool;
use crate::redact::Redactor;
use crate::session::Session;
use crate::transport::stdio::StderrTail;
use calls::Gate;
use handle::Command;
use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use stderr::keep_stderr;
use tokio::sync::{OwnedMutexGuard, Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// What the actor shares for reading without a round trip through its mailbox: the full
/// tool definitions (the snapshot carries names only) and the stderr tails.
#[derive(Default)]
struct Details {
    /// What hosts are shown.
    tools: Vec<Tool>,
    /// Every listed tool with where it stands, with pins (empty without).
    reviewed: Vec<ReviewedTool>,
    /// Oldest first; each tail is bounded by the transport and read through the
    /// connection's redactor.
    stderr: VecDeque<(Generation, StderrTail, Redactor)>,
}

/// What the actor's own tasks (attempts, watchers, pings, re-lists, calls) report back;
/// each names its generation, so a report of another one changes nothing.
enum Internal {
    Stage {
        generation: Generation,
        stage: Stage,
    },
    Established {
        generation: Generation,
        session: Arc<Session>,
        tools: Vec<Tool>,
        verdict: Option<trust::Verdict>,
        slot: OwnedMutexGuard<()>,
    },
    AttemptFailed {
        generation: Generation,
        error: Error,
    },
    Ended {
        generation: Generation,
        error: Error,
    },
    Ping {
        generation: Generation,
        result: Result<Duration, Error>,
    },
    ListChanged {
        generation: Generation,
    },
    Synced {
        generation: Generation,
        result: Result<(Vec<Tool>, Option<trust::Verdict>), Error>,
    },
    /// The probe a wake asked for is due (`Effect::Probe`).
    WakeProbe {
        generation: Generation,
    },
    /// A judgment of the list again, after the pins moved (`trust.rs`).
    Judged {
        seq: u64,
        verdict: trust::Verdict,
    },
    CallDone {
        generation: Generation,
        tool: String,
        elapsed: Duration,
        /// `Ok(is_error)`: what the call event needs of a result, not the result itself,
        /// which goes to the caller without being copied.
        result: Result<bool, Error>,
    },
    /// The OAuth sign-in changed (`auth::Authorizer`'s observer).
    Auth {
        change: AuthChange,
        error: Option<Error>,
    },
}

/// The established generation: its session, the process slot it holds until it is
/// closed, and the tasks that watch it.
struct Live {
    generation: Generation,
    session: Arc<Session>,
    slot: OwnedMutexGuard<()>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// How long an attempt waits for the previous generation's process to be gone (the stdio
/// shutdown sequence takes about 4 s) before it refuses to start another.
const REAP_LIMIT: Duration = Duration::from_secs(30);

/// Later than any timer the policy arms can matter (its waits are bounded by a day), and
/// near enough that adding it to an `Instant` cannot overflow.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// How long disposal waits for closes and in-flight work before giving up on them.
const DISPOSE_LIMIT: Duration = Duration::from_secs(10);

struct Actor {
    cfg: SupervisorConfig,
    bus: Arc<EventBus>,
    state: State,
    rng: SeededRng,
    epoch: Instant,
    timer: Option<(u64, Instant)>,
    live: Option<Live>,
    attempt: Option<(Generation, tokio::task::JoinHandle<()>)>,
    /// Held by a generation from before its process starts until it is closed.
    slot: Arc<tokio::sync::Mutex<()>>,
    closing: JoinSet<()>,
    internal_tx: mpsc::UnboundedSender<Internal>,
    internal_rx: mpsc::UnboundedReceiver<Internal>,
    /// `now` of the step being performed.
    step_now: Duration,
    /// The tools hosts are shown: `listed` less what the pins hold.
    tools: Vec<Tool>,
    /// The list as the server gave it.
    listed: Vec<Tool>,
    /// Counts one up for each list taken, so a judgment of an older one is dropped.
    list_seq: u64,
    /// A judgment after the pins moved is running; another is due after it.
    judging: bool,
    judge_pending: bool,
    /// The held changes (name → rejected) as of the last judgment, to tell what changed.
    held_before: Option<std::collections::BTreeMap<String, bool>>,
    /// Listed tools held for review (not rejected), and pinned on first sight, not yet
    /// looked at: for the snapshot.
    tools_held: usize,
    tools_new: usize,
    /// The generation that listed `tools` (a stale list is still that generation's).
    tools_generation: Generation,
    tools_stale: bool,
    /// The pacing of `list_changed` re-lists of the live generation.
    relist: Relist,
    pinging: bool,
    ping_misses: u32,
    last_activity: Instant,
    last_round_trip: Option<(Duration, SystemTime)>,
    calls: Arc<Semaphore>,
    queued: Arc<AtomicUsize>,
    /// The live session while ready, for calls that bypass the mailbox (`CallLane`).
    gate: watch::Sender<Option<Gate>>,
    snapshot: watch::Sender<Snapshot>,
    details: Arc<Mutex<Details>>,
    /// Passes the live generation's notifications on (`Supervisor::notifications`).
    notes: tokio::sync::broadcast::Sender<crate::session::ServerNotification>,
}

impl Actor {
    fn new(
        cfg: SupervisorConfig,
        bus: Arc<EventBus>,
        snapshot: watch::Sender<Snapshot>,
        details: Arc<Mutex<Details>>,
        notes: tokio::sync::broadcast::Sender<crate::session::ServerNotification>,
    ) -> Self {
        let (internal_tx, internal_rx) = mpsc::unbounded_channel();
        let first_stage = cfg.first_stage;
        if let Some(auth) = &cfg.auth {
            let tx = internal_tx.clone();
            auth.observe(Arc::new(move |change, error| {
                let _ = tx.send(Internal::Auth {
                    change,
                    error: error.cloned(),
                });
            }));
        }
        Actor {
            rng: SeededRng::new(cfg.seed),
            calls: Arc::new(Semaphore::new(cfg.max_concurrent_calls.max(1))),
            cfg,
            bus,
            state: State::starting_with(first_stage),
            epoch: Instant::now(),
            timer: None,
            live: None,
            attempt: None,
            slot: Arc::new(tokio::sync::Mutex::new(())),
            closing: JoinSet::new(),
            internal_tx,
            internal_rx,
            step_now: Duration::ZERO,
            tools: Vec::new(),
            listed: Vec::new(),
            list_seq: 0,
            judging: false,
            judge_pending: false,
            held_before: None,
            tools_held: 0,
            tools_new: 0,
            tools_generation: Generation(0),
            tools_stale: false,
            relist: Relist::default(),
            pinging: false,
            ping_misses: 0,
            last_activity: Instant::now(),
            last_round_trip: None,
            queued: Arc::new(AtomicUsize::new(0)),
            gate: watch::channel(None).0,
            snapshot,
            details,
            notes,
        }
    }

    fn now(&self) -> Duration {
        Instant::now() - self.epoch
    }

    /// The instant `at` (time since the epoch) names, saturating far in the future: a
    /// wait of any length arms a timer that never fires rather than panicking.
    fn deadline(&self, at: Duration) -> Instant {
        self.epoch
            .checked_add(at.min(FAR_FUTURE))
            .unwrap_or_else(|| Instant::now() + FAR_FUTURE)
    }

    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        self.feed(Input::Start {
            disabled: self.cfg.disabled,
        });
        let mut pins = self.cfg.pins.as_ref().map(|b| b.changes());
        let mut system = crate::system::watch::subscribe();
        loop {
            let timer_at = self.timer.map(|(_, at)| at);
            let ping_at = self.next_ping();
            let relist_at = self.live.as_ref().and(self.relist.due());
            tokio::select! {
                cmd = commands.recv() => match cmd {
                    Some(Command::Input(input)) => self.feed(input),
                    Some(Command::Call { tool, args, opts, reply }) => self.call(tool, args, opts, reply),
                    Some(Command::Ping { reply }) => self.ping_now(reply),
                    Some(Command::System(event)) => self.system(event),
                    Some(Command::Stop { reply }) => {
                        self.dispose().await;
                        let _ = reply.send(());
                        return;
                    }
                    None => {
                        self.dispose().await;
                        return;
                    }
                },
                Some(msg) = self.internal_rx.recv() => self.internal(msg),
                Some(()) = trust::moved(&mut pins) => self.judge_again(),
                Some(event) = system::told(&mut system) => self.system(event),
                _ = sleep_until(timer_at), if timer_at.is_some() => {
                    if let Some((token, _)) = self.timer.take() {
                        self.feed(Input::Timer { token });
                    }
                }
                _ = sleep_until(ping_at), if ping_at.is_some() => self.ping(),
                _ = sleep_until(relist_at), if relist_at.is_some() => self.relist_due(),
                Some(_) = self.closing.join_next(), if !self.closing.is_empty() => {}
            }
        }
    }

    fn feed(&mut self, input: Input) {
        let now = self.now();
        self.step_now = now;
        let effects = step(&mut self.state, input, now, &self.cfg.policy, &mut self.rng);
        for effect in effects {
            self.perform(effect);
        }
        self.publish_snapshot();
    }

    fn perform(&mut self, effect: Effect) {
        match effect {
            Effect::Attempt { generation } => self.start_attempt(generation),
            Effect::Close { generation } => self.close(generation),
            Effect::Arm { token, at } => self.timer = Some((token, self.deadline(at))),
            Effect::Disarm => self.timer = None,
            Effect::ToolsStale => self.mark_tools_stale(),
            Effect::DropTools => self.drop_tools(),
            Effect::EmitState => self.emit_state(),
            Effect::Probe { generation, after } => {
                let tx = self.internal_tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let _ = tx.send(Internal::WakeProbe { generation });
                });
            }
            Effect::EmitFailure(failure) => {
                // Stamped with the generation that failed: a lost connection may already
                // have started the next one.
                self.bus.emit(
                    &self.cfg.name,
                    failure.generation,
                    EventBody::Failure { failure },
                );
            }
        }
    }

    fn start_attempt(&mut self, generation: Generation) {
        let mut cfg = self.cfg.clone();
        cfg.connector = keep_stderr(cfg.connector, generation, self.details.clone());
        let slot = self.slot.clone();
        let tx = self.internal_tx.clone();
        let epoch = self.epoch;
        let task = tokio::spawn(async move {
            // The previous generation's process must be gone before this one starts.
            let guard = match tokio::time::timeout(REAP_LIMIT, slot.lock_owned()).await {
                Ok(guard) => guard,
                Err(_) => {
                    let error = Error::config(format!(
                        "the previous process of `{}` could not be stopped within {}, so no new one \
                         was started (two must never run at once); stop it by hand, then reset",
                        cfg.name,
                        crate::fmt_duration(REAP_LIMIT)
                    ));
                    let _ = tx.send(Internal::AttemptFailed { generation, error });
                    return;
                }
            };
            let (stage_tx, mut stage_rx) = mpsc::unbounded_channel();
            let relay_tx = tx.clone();
            let relay = tokio::spawn(async move {
                while let Some(stage) = stage_rx.recv().await {
                    let _ = relay_tx.send(Internal::Stage { generation, stage });
                }
            });
            let outcome = establish(&cfg, epoch, &stage_tx).await;
            drop(stage_tx);
            let _ = relay.await;
            let _ = match outcome {
                Ok((session, tools)) => {
                    let verdict = match &cfg.pins {
                        Some(book) => Some(trust::judge(book, &cfg.name, &tools).await),
                        None => None,
                    };
                    tx.send(Internal::Established {
                        generation,
                        session,
                        tools,
                        verdict,
                        slot: guard,
                    })
                }
                Err(error) => {
                    drop(guard);
                    tx.send(Internal::AttemptFailed { generation, error })
                }
            };
        });
        self.attempt = Some((generation, task));
    }

    /// Disposes a generation: an attempt in flight is aborted (its transport's drop kills
    /// the process group); a live session is closed in the background, holding the slot
    /// until its process is gone.
    fn close(&mut self, generation: Generation) {
        if let Some((g, task)) = &self.attempt
            && *g == generation
        {
            task.abort();
            self.attempt = None;
        }
        if let Some(live) = self.live.take_if(|l| l.generation == generation) {
            self.closing.spawn(close_live(live));
        }
    }

    fn internal(&mut self, msg: Internal) {
        match msg {
            Internal::Stage { generation, stage } => self.feed(Input::Stage { generation, stage }),
            Internal::Established {
                generation,
                session,
                tools,
                verdict,
                slot,
            } => {
                self.attempt = None;
                let current = generation == self.state.generation
                    && matches!(self.state.status, Status::Connecting { .. });
                let live = Live {
                    generation,
                    session,
                    slot,
                    tasks: Vec::new(),
                };
                if !current {
                    // Cancelled while the handshake finished: dispose the late client.
                    self.closing.spawn(close_live(live));
                    return;
                }
                self.adopt(live, tools, verdict);
                self.feed(Input::Established { generation });
            }
            Internal::AttemptFailed { generation, error } => {
                if generation == self.state.generation {
                    self.attempt = None;
                }
                let verdict = classify(&error, Phase::Connect, false);
                let failure = FailureInfo::from_error(
                    &error,
                    generation,
                    Some(self.state.failures.saturating_add(1)),
                );
                self.feed(Input::AttemptFailed {
                    generation,
                    verdict,
                    failure,
                });
            }
            Internal::Ended { generation, error } => self.lost(generation, &error),
            Internal::Ping { generation, result } => self.pinged(generation, result),
            Internal::ListChanged { generation } => self.list_changed(generation),
            Internal::Synced { generation, result } => self.synced(generation, result),
            Internal::Judged { seq, verdict } => self.judged(seq, verdict),
            Internal::WakeProbe { generation } => self.wake_probe(generation),
            Internal::CallDone {
                generation,
                tool,
                elapsed,
                result,
            } => self.call_done(generation, tool, elapsed, result),
            Internal::Auth { change, error } => self.auth_changed(change, error.as_ref()),
        }
    }

    /// Tells of a sign-in change; publishes the new status in the snapshot.
    fn auth_changed(&mut self, change: AuthChange, error: Option<&Error>) {
        let Some(auth) = &self.cfg.auth else { return };
        let generation = self.state.generation;
        let body = EventBody::Auth {
            change,
            auth: auth.status(),
            failure: error.map(|e| FailureInfo::from_error(e, generation, None)),
        };
        self.bus.emit(&self.cfg.name, generation, body);
        self.publish_snapshot();
    }

    /// The established connection of `generation` ended or is suspected dead.
    fn lost(&mut self, generation: Generation, error: &Error) {
        let verdict = classify(error, Phase::Call, false);
        let failure = FailureInfo::from_error(error, generation, None);
        self.feed(Input::Lost {
            generation,
            verdict,
            failure,
        });
    }

    /// Takes a freshly established generation: swap the tools atomically, watch for its
    /// end and for `list_changed`.
    fn adopt(&mut self, mut live: Live, tools: Vec<Tool>, verdict: Option<trust::Verdict>) {
        let generation = live.generation;
        let session = live.session.clone();
        let tx = self.internal_tx.clone();
        live.tasks.push(tokio::spawn(async move {
            let error = session.ended().await;
            let _ = tx.send(Internal::Ended { generation, error });
        }));
        self.watch_list_changed(&mut live);
        self.take_tools(generation, tools, verdict);
        self.ping_misses = 0;
        self.pinging = false;
        self.last_activity = Instant::now();
        self.live = Some(live);
        self.emit_tools();
    }

    /// Renders the state as of the step that changed it, so `delay_ms` is the wait that was
    /// decided (and `next_attempt_at` when it ends), not what is left of it by now.
    fn emit_state(&mut self) {
        let elapsed = self.now().saturating_sub(self.step_now);
        let mut info = self.state.info(self.step_now, &self.cfg.policy);
        if let Some(ms) = info.delay_ms {
            let at = later(SystemTime::now(), Duration::from_millis(ms));
            info.next_attempt_at = Some(rfc3339(at.checked_sub(elapsed).unwrap_or(at)));
        }
        info.protocol_version = self.protocol_version();
        self.bus.emit(
            &self.cfg.name,
            self.state.generation,
            EventBody::State(info),
        );
    }

    fn publish_snapshot(&self) {
        self.publish_gate();
        let mut info = self.state.info(self.now(), &self.cfg.policy);
        if let Some(ms) = info.delay_ms {
            info.next_attempt_at =
                Some(rfc3339(later(SystemTime::now(), Duration::from_millis(ms))));
        }
        info.protocol_version = self.protocol_version();
        self.snapshot.send_replace(Snapshot {
            server: self.cfg.name.clone(),
            generation: self.state.generation,
            state: info,
            tools: self.tools.iter().map(|t| t.name.clone()).collect(),
            tools_stale: self.tools_stale,
            tools_held: self.tools_held,
            tools_new: self.tools_new,
            last_round_trip_ms: self.last_round_trip.map(|(d, _)| millis(d)),
            last_round_trip_at: self.last_round_trip.map(|(_, at)| rfc3339(at)),
            auth: self.cfg.auth.as_ref().map(|a| a.status()),
        });
    }

    /// The revision the live session negotiated, shown in events and snapshots.
    fn protocol_version(&self) -> Option<String> {
        self.live
            .as_ref()
            .and_then(|l| l.session.server().map(|s| s.protocol_version.clone()))
    }

    /// Fence, cancel timers, close, await in-flight work — bounded.
    async fn dispose(&mut self) {
        self.feed(Input::Stop);
        if let Some((_, task)) = self.attempt.take() {
            task.abort();
        }
        self.calls.close();
        let closing = std::mem::take(&mut self.closing);
        let _ = tokio::time::timeout(DISPOSE_LIMIT, closing.join_all()).await;
    }
}

async fn close_live(live: Live) {
    for t in &live.tasks {
        t.abort();
    }
    live.session.close().await;
    drop(live.slot);
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
