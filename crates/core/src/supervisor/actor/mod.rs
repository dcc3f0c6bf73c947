//! The supervisor's actor: the only place that sleeps, spawns and owns live connections.
//! It turns what happens (attempt outcomes, a session ending, timers, pings, calls, user
//! actions) into `state::Input`s, and performs the `Effect`s `state::step` returns.
//!
//! Architecture invariants: one generation holds the process slot at a time (an attempt
//! waits for the previous generation's close before it spawns anything); a tool call is
//! never replayed; disposal is bounded.

use super::SupervisorConfig;
use super::establish::establish;
use super::relist::Relist;
use super::state::{Effect, Input, State, Status, step};
use crate::diagnostics::redact::Redactor;
use crate::error::{Error, ErrorKind, Phase, Stage};
use crate::events::{
    CallOutcome, EventBody, EventBus, FailureInfo, MAX_TOOL_NAMES, StateInfo, later, millis,
    rfc3339,
};
use crate::policy::{Action, SeededRng, classify};
use crate::protocol::mcp::{Progress, Tool};
use crate::session::{RequestOptions, ServerNotification, Session};
use crate::transport::stdio::StderrTail;
use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::{OwnedMutexGuard, Semaphore, mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// What a consumer (CLI, UI) needs to draw one server right now.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Snapshot {
    pub server: String,
    pub generation: u64,
    #[serde(flatten)]
    pub state: StateInfo,
    pub tools: Vec<String>,
    pub tools_stale: bool,
    pub last_round_trip_ms: Option<u64>,
    pub last_round_trip_at: Option<String>,
}

/// Per-call choices for `Supervisor::call_with`.
#[derive(Default)]
pub struct CallOptions {
    /// Receives the call's `notifications/progress`, in order.
    pub progress: Option<mpsc::UnboundedSender<Progress>>,
    /// Sending `()` cancels the call: a call in flight is abandoned and the server is sent
    /// `notifications/cancelled`; a queued one is never sent. Dropping the sender does not
    /// cancel.
    pub cancel: Option<oneshot::Receiver<()>>,
}

/// The stderr a generation's process wrote, as kept (bounded, scrubbed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct GenerationStderr {
    pub generation: u64,
    pub lines: Vec<String>,
    pub truncated: bool,
}

/// Generations whose stderr is kept: the current one and the four before it (the panel
/// shows two, the diagnostic bundle all).
const STDERR_GENERATIONS: usize = 5;

/// What the actor shares for reading without a round trip through its mailbox: the full
/// tool definitions (the snapshot carries names only) and the stderr tails.
#[derive(Default)]
struct Details {
    tools: Vec<Tool>,
    /// Oldest first; each tail is bounded by the transport and read through the
    /// connection's redactor.
    stderr: VecDeque<(u64, StderrTail, Redactor)>,
}

enum Command {
    Input(Input),
    Call {
        tool: String,
        args: Value,
        opts: CallOptions,
        reply: oneshot::Sender<Result<Value, Error>>,
    },
    Ping {
        reply: oneshot::Sender<Result<Duration, Error>>,
    },
    Stop {
        reply: oneshot::Sender<()>,
    },
}

/// A running supervisor. Dropping it without `stop` aborts the actor; prefer `stop`.
pub struct Supervisor {
    name: String,
    tx: mpsc::UnboundedSender<Command>,
    snapshot: watch::Receiver<Snapshot>,
    details: Arc<Mutex<Details>>,
    lane: CallLane,
    task: tokio::task::JoinHandle<()>,
}

/// What a call needs while the server is ready, shared by the actor so that a call runs in
/// the caller's task (or one task of its own) instead of hopping through the actor's
/// mailbox: the live session, the concurrency cap, and the way back to the actor.
#[derive(Clone)]
struct CallLane {
    /// The live session while the state is `ready`; `None` sends calls through the actor,
    /// which answers with the state and when the next attempt is.
    gate: watch::Receiver<Option<Gate>>,
    calls: Arc<Semaphore>,
    queued: Arc<AtomicUsize>,
    internal_tx: mpsc::UnboundedSender<Internal>,
    name: String,
    max_concurrent: usize,
    max_queued: usize,
    timeout: Duration,
}

#[derive(Clone)]
struct Gate {
    session: Arc<Session>,
    generation: u64,
}

impl CallLane {
    /// The call on the live session, if the server is ready: refused at once when the cap
    /// and the queue are full, otherwise run by whoever polls the future.
    fn direct(
        &self,
        tool: &str,
        args: Value,
        opts: CallOptions,
    ) -> Result<impl Future<Output = Result<Value, Error>> + Send + 'static, (Value, CallOptions)>
    {
        let Some(gate) = self.gate.borrow().clone() else {
            return Err((args, opts));
        };
        if let Err(e) = admit(
            &self.queued,
            &self.name,
            self.max_concurrent,
            self.max_queued,
        ) {
            return Ok(futures_util::future::Either::Left(std::future::ready(Err(
                e,
            ))));
        }
        let run = run_call(
            gate,
            self.calls.clone(),
            self.queued.clone(),
            self.internal_tx.clone(),
            self.timeout,
            tool.to_owned(),
            args,
            opts,
        );
        Ok(futures_util::future::Either::Right(run))
    }
}

/// Takes a place among the running and queued calls, or says why there is none.
fn admit(
    queued: &AtomicUsize,
    name: &str,
    max_concurrent: usize,
    max_queued: usize,
) -> Result<(), Error> {
    let limit = max_concurrent + max_queued;
    if queued.fetch_add(1, Ordering::Relaxed) >= limit {
        queued.fetch_sub(1, Ordering::Relaxed);
        return Err(Error::new(
            ErrorKind::RateLimited,
            format!(
                "`{name}` already has {limit} calls running or queued (maxConcurrentCalls = {max_concurrent}); try again when some finish"
            ),
        ));
    }
    Ok(())
}

/// One admitted call on `gate`'s session: waits for a slot (or the cancel), calls, tells
/// the actor how it went (`CallDone`), and frees its place.
#[allow(clippy::too_many_arguments)]
async fn run_call(
    gate: Gate,
    permits: Arc<Semaphore>,
    queued: Arc<AtomicUsize>,
    tx: mpsc::UnboundedSender<Internal>,
    timeout: Duration,
    tool: String,
    args: Value,
    opts: CallOptions,
) -> Result<Value, Error> {
    let Gate {
        session,
        generation,
    } = gate;
    let CallOptions { progress, cancel } = opts;
    let cancelled = cancelled(cancel);
    tokio::pin!(cancelled);
    let permit = tokio::select! {
        permit = permits.acquire_owned() => permit
            .map_err(|_| Error::cancelled("the supervisor is stopping")),
        () = &mut cancelled => Err(Error::cancelled(
            "the call was cancelled while it waited for a free slot; it was never sent",
        )),
    };
    let result = match permit {
        Ok(_permit) => {
            let started = Instant::now();
            let opts = RequestOptions {
                timeout: Some(timeout),
                progress,
            };
            // Dropping the call's future on cancel is what sends the server
            // `notifications/cancelled` (the session's cancel-on-drop).
            let result = tokio::select! {
                result = session.call_tool(&tool, args, opts) => result,
                () = &mut cancelled => Err(Error::cancelled(
                    "the call was cancelled; the server was sent notifications/cancelled",
                )
                .with(|c| {
                    c.phase = Some(Phase::Call);
                    c.method = Some("tools/call".to_owned());
                })),
            };
            let _ = tx.send(Internal::CallDone {
                generation,
                tool,
                elapsed: started.elapsed(),
                result: match &result {
                    Ok(v) => Ok(v.get("isError").and_then(Value::as_bool) == Some(true)),
                    Err(e) => Err(e.clone()),
                },
            });
            result
        }
        Err(e) => Err(e),
    };
    queued.fetch_sub(1, Ordering::Relaxed);
    result
}

impl Supervisor {
    pub fn spawn(cfg: SupervisorConfig, bus: Arc<EventBus>) -> Supervisor {
        let (tx, rx) = mpsc::unbounded_channel();
        let (snapshot_tx, snapshot) = watch::channel(Snapshot {
            server: cfg.name.clone(),
            generation: 0,
            state: StateInfo::default(),
            tools: Vec::new(),
            tools_stale: false,
            last_round_trip_ms: None,
            last_round_trip_at: None,
        });
        let name = cfg.name.clone();
        let details = Arc::new(Mutex::new(Details::default()));
        let actor = Actor::new(cfg, bus, snapshot_tx, details.clone());
        let lane = actor.lane();
        let task = tokio::spawn(actor.run(rx));
        Supervisor {
            name,
            tx,
            snapshot,
            details,
            lane,
            task,
        }
    }

    /// `stderr()` as text per generation, oldest first (the diagnostic bundle's files).
    pub fn stderr_tails(&self) -> Vec<(u64, String)> {
        self.stderr()
            .into_iter()
            .map(|g| (g.generation, g.lines.join("\n")))
            .collect()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn snapshot(&self) -> Snapshot {
        self.snapshot.borrow().clone()
    }

    pub fn watch(&self) -> watch::Receiver<Snapshot> {
        self.snapshot.clone()
    }

    fn input(&self, input: Input) {
        let _ = self.tx.send(Command::Input(input));
    }

    /// Skip the wait; from gave_up or retired, start a fresh round.
    pub fn reconnect(&self) {
        self.input(Input::ReconnectNow);
    }

    /// Clear the budget and the quarantine ladder (history is kept), then connect.
    pub fn reset(&self) {
        self.input(Input::Reset);
    }

    pub fn disable(&self) {
        self.input(Input::Disable);
    }

    pub fn enable(&self) {
        self.input(Input::Enable);
    }

    /// The full definitions of the tools in the snapshot (name, description, input
    /// schema, annotations), in the server's order; stale while the snapshot says so.
    pub fn tools(&self) -> Vec<Tool> {
        self.details.lock().expect("details lock").tools.clone()
    }

    /// The stderr of the current and the previous generation that started a process
    /// (stdio only), oldest first, scrubbed with the server's secrets. Empty for HTTP.
    pub fn stderr(&self) -> Vec<GenerationStderr> {
        let details = self.details.lock().expect("details lock");
        details
            .stderr
            .iter()
            .map(|(generation, tail, redactor)| {
                let shown = tail.lines(redactor);
                GenerationStderr {
                    generation: *generation,
                    lines: shown.lines,
                    truncated: shown.truncated,
                }
            })
            .collect()
    }

    /// A receiver that changes whenever the newest process's stderr grows
    /// (`StderrTail::grown`), to wait for a line in `stderr()` instead of polling it.
    /// `None` until a process has started (and always for HTTP).
    pub fn stderr_grown(&self) -> Option<watch::Receiver<u64>> {
        let details = self.details.lock().expect("details lock");
        details.stderr.back().map(|(_, tail, _)| tail.grown())
    }

    /// Calls a tool on the current generation. Fails at once, saying the state and when
    /// the next attempt is, unless the server is ready. Never replayed.
    pub async fn call(&self, tool: &str, args: Value) -> Result<Value, Error> {
        self.call_with(tool, args, CallOptions::default()).await
    }

    /// `call` with progress and cancellation (see `CallOptions`).
    pub async fn call_with(
        &self,
        tool: &str,
        args: Value,
        opts: CallOptions,
    ) -> Result<Value, Error> {
        // Ready: the call runs here, in the caller's task (no hop through the actor).
        match self.lane.direct(tool, args, opts) {
            Ok(run) => run.await,
            Err((args, opts)) => self.via_actor(tool, args, opts).await,
        }
    }

    /// `call`, with the request handed to the supervisor before this returns: the future
    /// does not borrow the supervisor, so whoever holds it (the app's lock on its fleet) can
    /// let go while the call runs. A supervisor stopped meanwhile ends the call `cancelled`.
    pub fn send_call(
        &self,
        tool: &str,
        args: Value,
    ) -> impl Future<Output = Result<Value, Error>> + Send + 'static {
        self.send_call_with(tool, args, CallOptions::default())
    }

    /// `send_call` with progress and cancellation (see `CallOptions`).
    pub fn send_call_with(
        &self,
        tool: &str,
        args: Value,
        opts: CallOptions,
    ) -> impl Future<Output = Result<Value, Error>> + Send + 'static {
        use futures_util::future::Either;
        // Ready: the call starts now on a task of its own (no hop through the actor).
        match self.lane.direct(tool, args, opts) {
            Ok(run) => {
                let task = tokio::spawn(run);
                Either::Left(async move {
                    task.await.unwrap_or_else(|_| {
                        Err(Error::cancelled("the supervisor stopped during the call"))
                    })
                })
            }
            Err((args, opts)) => Either::Right(self.via_actor(tool, args, opts)),
        }
    }

    /// A call handed to the actor, which answers it (not ready: the state and when the
    /// next attempt is) or runs it.
    fn via_actor(
        &self,
        tool: &str,
        args: Value,
        opts: CallOptions,
    ) -> impl Future<Output = Result<Value, Error>> + Send + 'static {
        let (reply, rx) = oneshot::channel();
        let cmd = Command::Call {
            tool: tool.to_owned(),
            args,
            opts,
            reply,
        };
        let refused =
            self.tx.send(cmd).is_err().then(|| {
                Error::cancelled(format!("the supervisor of `{}` has stopped", self.name))
            });
        async move {
            if let Some(e) = refused {
                return Err(e);
            }
            rx.await
                .unwrap_or_else(|_| Err(Error::cancelled("the supervisor stopped during the call")))
        }
    }

    /// Measures a round trip now (a `ping` on the current generation).
    pub async fn ping(&self) -> Result<Duration, Error> {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(Command::Ping { reply }).is_err() {
            return Err(Error::cancelled(format!(
                "the supervisor of `{}` has stopped",
                self.name
            )));
        }
        rx.await
            .unwrap_or_else(|_| Err(Error::cancelled("the supervisor stopped during the ping")))
    }

    /// Resolves once the state satisfies `done` (checked at once, then on every change).
    pub async fn wait_for(&self, mut done: impl FnMut(&Snapshot) -> bool) -> Snapshot {
        let mut rx = self.snapshot.clone();
        match rx.wait_for(|s| done(s)).await {
            Ok(s) => s.clone(),
            Err(_) => self.snapshot(),
        }
    }

    /// Disposes everything: cancels timers, closes the live generation (the stdio
    /// shutdown sequence), waits for in-flight work, bounded.
    pub async fn stop(self) {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(Command::Stop { reply }).is_ok() {
            let _ = rx.await;
        }
        let _ = self.task.await;
    }
}

enum Internal {
    Stage {
        generation: u64,
        stage: Stage,
    },
    Established {
        generation: u64,
        session: Arc<Session>,
        tools: Vec<Tool>,
        slot: OwnedMutexGuard<()>,
    },
    AttemptFailed {
        generation: u64,
        error: Error,
    },
    Ended {
        generation: u64,
        error: Error,
    },
    Ping {
        generation: u64,
        result: Result<Duration, Error>,
    },
    ListChanged {
        generation: u64,
    },
    Synced {
        generation: u64,
        result: Result<Vec<Tool>, Error>,
    },
    CallDone {
        generation: u64,
        tool: String,
        elapsed: Duration,
        /// `Ok(is_error)`: what the call event needs of a result, not the result itself,
        /// which goes to the caller without being copied.
        result: Result<bool, Error>,
    },
}

struct Live {
    generation: u64,
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
    attempt: Option<(u64, tokio::task::JoinHandle<()>)>,
    /// Held by a generation from before its process starts until it is closed.
    slot: Arc<tokio::sync::Mutex<()>>,
    closing: JoinSet<()>,
    internal_tx: mpsc::UnboundedSender<Internal>,
    internal_rx: mpsc::UnboundedReceiver<Internal>,
    /// `now` of the step being performed.
    step_now: Duration,
    tools: Vec<Tool>,
    /// The generation that listed `tools` (a stale list is still that generation's).
    tools_generation: u64,
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
}

impl Actor {
    fn new(
        cfg: SupervisorConfig,
        bus: Arc<EventBus>,
        snapshot: watch::Sender<Snapshot>,
        details: Arc<Mutex<Details>>,
    ) -> Self {
        let (internal_tx, internal_rx) = mpsc::unbounded_channel();
        let first_stage = cfg.first_stage;
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
            tools_generation: 0,
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
        }
    }

    /// The handle's side of the calls: the live session as it changes, the cap, the way
    /// back here.
    fn lane(&self) -> CallLane {
        CallLane {
            gate: self.gate.subscribe(),
            calls: self.calls.clone(),
            queued: self.queued.clone(),
            internal_tx: self.internal_tx.clone(),
            name: self.cfg.name.clone(),
            max_concurrent: self.cfg.max_concurrent_calls,
            max_queued: self.cfg.max_queued_calls,
            timeout: self.cfg.request_timeout,
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
        if self.cfg.disabled {
            self.state.status = Status::Disabled;
            self.emit_state();
            self.publish_snapshot();
        } else {
            self.feed(Input::Start);
        }
        loop {
            let timer_at = self.timer.map(|(_, at)| at);
            let ping_at = self.next_ping();
            let relist_at = self.live.as_ref().and(self.relist.due());
            tokio::select! {
                cmd = commands.recv() => match cmd {
                    Some(Command::Input(input)) => self.feed(input),
                    Some(Command::Call { tool, args, opts, reply }) => self.call(tool, args, opts, reply),
                    Some(Command::Ping { reply }) => self.ping_now(reply),
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
                _ = sleep_until(timer_at), if timer_at.is_some() => {
                    if let Some((token, _)) = self.timer.take() {
                        self.feed(Input::Timer { token });
                    }
                }
                _ = sleep_until(ping_at), if ping_at.is_some() => self.ping(),
                _ = sleep_until(relist_at), if relist_at.is_some() => {
                    if self.relist.start(Instant::now()) {
                        self.sync_tools();
                    }
                }
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
            Effect::ToolsStale => {
                self.tools_stale = true;
                self.emit_tools();
            }
            Effect::DropTools => {
                if !self.tools.is_empty() {
                    self.tools.clear();
                    self.tools_stale = false;
                    self.emit_tools();
                }
            }
            Effect::EmitState => self.emit_state(),
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

    fn start_attempt(&mut self, generation: u64) {
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
                Ok((session, tools)) => tx.send(Internal::Established {
                    generation,
                    session,
                    tools,
                    slot: guard,
                }),
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
    fn close(&mut self, generation: u64) {
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
                self.adopt(live, tools);
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
            Internal::Ping { generation, result } => {
                self.pinging = false;
                if self.live.as_ref().map(|l| l.generation) != Some(generation) {
                    return;
                }
                match result {
                    Ok(rtt) => {
                        self.ping_misses = 0;
                        self.round_trip(rtt);
                    }
                    Err(_) => {
                        self.ping_misses += 1;
                        self.last_activity = Instant::now();
                        if self.ping_misses >= 2 {
                            let error = Error::timeout(format!(
                                "two health pings in a row got no answer within {}; the connection is treated as lost",
                                crate::fmt_duration(self.cfg.ping_timeout)
                            ));
                            self.lost(generation, &error);
                        }
                    }
                }
            }
            Internal::ListChanged { generation } => {
                if self.live.as_ref().map(|l| l.generation) == Some(generation)
                    && self.relist.changed(Instant::now())
                {
                    self.sync_tools();
                }
            }
            Internal::Synced { generation, result } => {
                // A stale generation's re-list: the live one's pacing started afresh.
                if self.live.as_ref().map(|l| l.generation) != Some(generation) {
                    return;
                }
                let again = self.relist.finished(Instant::now());
                if let Ok(tools) = result {
                    self.tools = tools;
                    self.tools_stale = false;
                    self.emit_tools();
                    self.publish_snapshot();
                }
                if again {
                    self.sync_tools();
                }
            }
            Internal::CallDone {
                generation,
                tool,
                elapsed,
                result,
            } => {
                let (outcome, error) = match &result {
                    Ok(true) => (CallOutcome::ToolError, None),
                    Ok(false) => (CallOutcome::Ok, None),
                    Err(e) => (
                        CallOutcome::Error,
                        Some(FailureInfo::from_error(e, generation, None)),
                    ),
                };
                let body = EventBody::Call {
                    tool,
                    outcome,
                    duration_ms: millis(elapsed),
                    error,
                };
                self.bus.emit(&self.cfg.name, generation, body);
                match result {
                    Ok(_) => self.last_activity = Instant::now(),
                    Err(e) => {
                        let verdict = classify(&e, Phase::Call, false);
                        if matches!(
                            verdict.action,
                            Action::ReturnAndReconnect | Action::Retire(_)
                        ) {
                            self.lost(generation, &e);
                        }
                    }
                }
            }
        }
    }

    /// The established connection of `generation` ended or is suspected dead.
    fn lost(&mut self, generation: u64, error: &Error) {
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
    fn adopt(&mut self, mut live: Live, tools: Vec<Tool>) {
        let generation = live.generation;
        let session = live.session.clone();
        let tx = self.internal_tx.clone();
        live.tasks.push(tokio::spawn(async move {
            let error = session.ended().await;
            let _ = tx.send(Internal::Ended { generation, error });
        }));
        let mut notes = live.session.subscribe();
        let tx = self.internal_tx.clone();
        live.tasks.push(tokio::spawn(async move {
            loop {
                match notes.recv().await {
                    // A lag may have skipped a `list_changed`: re-sync to be sure (re-syncs
                    // are serialized, so a burst costs at most one more).
                    Ok(ServerNotification::ToolsListChanged)
                    | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        let _ = tx.send(Internal::ListChanged { generation });
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        }));
        self.tools = tools;
        self.tools_generation = generation;
        self.tools_stale = false;
        self.ping_misses = 0;
        self.pinging = false;
        self.relist = Relist::default();
        self.last_activity = Instant::now();
        self.live = Some(live);
        self.emit_tools();
    }

    /// Lists the live generation's tools again, as `relist` decided (one at a time, at
    /// most one a second, notifications in between coalesced).
    fn sync_tools(&mut self) {
        let Some(live) = self.live.as_ref() else {
            return;
        };
        let generation = live.generation;
        let session = live.session.clone();
        let tx = self.internal_tx.clone();
        let timeout = self.cfg.request_timeout;
        tokio::spawn(async move {
            let result = session
                .list_tools_with(RequestOptions {
                    timeout: Some(timeout),
                    ..Default::default()
                })
                .await;
            let _ = tx.send(Internal::Synced { generation, result });
        });
    }

    fn next_ping(&self) -> Option<Instant> {
        let interval = self.cfg.ping_interval?;
        (self.live.is_some() && !self.pinging && matches!(self.state.status, Status::Ready { .. }))
            .then(|| self.last_activity + interval)
    }

    fn ping(&mut self) {
        let Some(live) = &self.live else { return };
        self.pinging = true;
        let ping = timed_ping(live.session.clone(), self.cfg.ping_timeout);
        let generation = live.generation;
        let tx = self.internal_tx.clone();
        tokio::spawn(async move {
            let result = ping.await;
            let _ = tx.send(Internal::Ping { generation, result });
        });
    }

    fn ping_now(&mut self, reply: oneshot::Sender<Result<Duration, Error>>) {
        let live = match (&self.state.status, &self.live) {
            (Status::Ready { .. }, Some(live)) => live,
            _ => {
                let _ = reply.send(Err(self.not_ready()));
                return;
            }
        };
        let ping = timed_ping(live.session.clone(), self.cfg.ping_timeout);
        tokio::spawn(async move {
            let _ = reply.send(ping.await);
        });
    }

    fn round_trip(&mut self, rtt: Duration) {
        self.last_activity = Instant::now();
        self.last_round_trip = Some((rtt, SystemTime::now()));
        let body = EventBody::RoundTrip {
            round_trip_ms: millis(rtt),
        };
        self.bus.emit(&self.cfg.name, self.state.generation, body);
        self.publish_snapshot();
    }

    fn call(
        &mut self,
        tool: String,
        args: Value,
        opts: CallOptions,
        reply: oneshot::Sender<Result<Value, Error>>,
    ) {
        let gate = match (&self.state.status, &self.live) {
            (Status::Ready { .. }, Some(live)) => Gate {
                session: live.session.clone(),
                generation: live.generation,
            },
            _ => {
                let _ = reply.send(Err(self.not_ready()));
                return;
            }
        };
        let c = &self.cfg;
        if let Err(e) = admit(
            &self.queued,
            &c.name,
            c.max_concurrent_calls,
            c.max_queued_calls,
        ) {
            let _ = reply.send(Err(e));
            return;
        }
        let run = run_call(
            gate,
            self.calls.clone(),
            self.queued.clone(),
            self.internal_tx.clone(),
            c.request_timeout,
            tool,
            args,
            opts,
        );
        tokio::spawn(async move {
            let _ = reply.send(run.await);
        });
    }

    /// The error a call gets when the server is not ready: the state, and when the next
    /// attempt is, in words.
    fn not_ready(&self) -> Error {
        let info = self.state.info(self.now(), &self.cfg.policy);
        let state = info.state.map(|s| s.as_str()).unwrap_or("starting");
        let mut what = format!("`{}` is not ready: it is {state}", self.cfg.name);
        if let Some(stage) = info.stage {
            what.push_str(&format!(" ({stage})"));
        }
        if let (Some(a), Some(m)) = (info.attempt, info.max_attempts) {
            what.push_str(&format!(", attempt {a}/{m}"));
        }
        if let Some(ms) = info.delay_ms {
            what.push_str(&format!(
                "; the next attempt is in {}",
                crate::fmt_duration(Duration::from_millis(ms))
            ));
        }
        if let Some(reason) = &info.reason {
            what.push_str(&format!(" ({reason})"));
        }
        if let Some(cause) = &info.cause {
            what.push_str(&format!("; last failure: {}", cause.message));
        }
        what.push_str(". The call was not sent.");
        Error::new(ErrorKind::Transport, what).with(|c| {
            c.phase = Some(Phase::Call);
            c.retry_after = info.delay_ms.map(Duration::from_millis);
        })
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

    fn emit_tools(&self) {
        self.details.lock().expect("details lock").tools = self.tools.clone();
        // Capped: an event goes to every subscriber and into the history on every change.
        let names: Vec<String> = (self.tools.iter())
            .take(MAX_TOOL_NAMES)
            .map(|t| t.name.clone())
            .collect();
        let body = EventBody::Tools {
            count: self.tools.len(),
            stale: self.tools_stale,
            names,
        };
        self.bus.emit(&self.cfg.name, self.tools_generation, body);
    }

    fn publish_snapshot(&self) {
        let gate = match (&self.state.status, &self.live) {
            (Status::Ready { .. }, Some(live)) => Some(Gate {
                session: live.session.clone(),
                generation: live.generation,
            }),
            _ => None,
        };
        self.gate.send_if_modified(|g| {
            let same = match (&*g, &gate) {
                (Some(a), Some(b)) => {
                    a.generation == b.generation && Arc::ptr_eq(&a.session, &b.session)
                }
                (None, None) => true,
                _ => false,
            };
            if !same {
                *g = gate;
            }
            !same
        });
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
            last_round_trip_ms: self.last_round_trip.map(|(d, _)| millis(d)),
            last_round_trip_at: self.last_round_trip.map(|(_, at)| rfc3339(at)),
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

/// A `ping` with its own timeout; resolves to the round trip.
async fn timed_ping(session: Arc<Session>, timeout: Duration) -> Result<Duration, Error> {
    let started = Instant::now();
    let opts = RequestOptions {
        timeout: Some(timeout),
        ..Default::default()
    };
    session
        .request("ping", None, opts)
        .await
        .map(|_| started.elapsed())
}

async fn close_live(live: Live) {
    for t in &live.tasks {
        t.abort();
    }
    live.session.close().await;
    drop(live.slot);
}

/// Resolves when `cancel` fires; never when there is none or its sender was dropped.
async fn cancelled(cancel: Option<oneshot::Receiver<()>>) {
    let fired = match cancel {
        Some(rx) => rx.await.is_ok(),
        None => false,
    };
    if !fired {
        std::future::pending::<()>().await;
    }
}

/// Wraps a connector so that each process it starts has its stderr tail recorded under
/// `generation`, with the connection's redactor; only the last `STDERR_GENERATIONS` are
/// kept.
fn keep_stderr(
    open: super::Connector,
    generation: u64,
    details: Arc<Mutex<Details>>,
) -> super::Connector {
    Arc::new(move || {
        let conn = open()?;
        if let Some(tail) = conn.transport.stderr() {
            let mut details = details.lock().expect("details lock");
            details.stderr.retain(|(g, _, _)| *g != generation);
            details
                .stderr
                .push_back((generation, tail, conn.redactor.clone()));
            while details.stderr.len() > STDERR_GENERATIONS {
                details.stderr.pop_front();
            }
        }
        Ok(conn)
    })
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
