//! The handle: `Supervisor`, what other crates hold of a running supervisor. It sends
//! inputs and calls to the actor's mailbox, runs a call on the live session itself while the
//! server is ready (the call lane), and reads what the actor shares (snapshot, tools,
//! stderr) without a round trip.

use super::calls::CallLane;
use super::stderr::GenerationStderr;
use super::trust::{Held, ReviewedTool};
use super::{Actor, Details};
use crate::auth::{Authorizer, SignIn};
use crate::error::Error;
use crate::events::{AuthStatus, EventBus, Generation, StateInfo};
use crate::pins::Standing;
use crate::protocol::mcp::{Progress, Tool};
use crate::session::ServerNotification;
use crate::supervisor::state::Input;
use crate::supervisor::{HostSlot, SupervisorConfig};
use serde::Serialize;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

/// Notifications a `Supervisor::notifications` receiver may fall behind by.
const NOTES_CAPACITY: usize = 256;

/// What a consumer (CLI, UI) needs to draw one server right now.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Snapshot {
    pub server: String,
    pub generation: Generation,
    #[serde(flatten)]
    pub state: StateInfo,
    /// The tools hosts are shown, by name.
    pub tools: Vec<String>,
    pub tools_stale: bool,
    /// Listed tools held out of the hosts' lists until the user reviews them (changed, or
    /// new to a pinned server; rejected ones not counted): docs/trust.md.
    pub tools_held: usize,
    /// Tools pinned on the server's first sight that the user has not looked at yet.
    pub tools_new: usize,
    pub last_round_trip_ms: Option<u64>,
    pub last_round_trip_at: Option<String>,
    /// The OAuth sign-in of a server that may use one (an HTTP server without a static
    /// Authorization header); null otherwise.
    pub auth: Option<AuthStatus>,
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
    /// The call's `params._meta` (the gateway passes its host's); the session sets
    /// `progressToken` in it to its own request id.
    pub meta: Option<Box<serde_json::Map<String, Value>>>,
}

/// What the handle asks of the actor through its mailbox.
pub(super) enum Command {
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
    /// What happened to the machine (`Supervisor::system`).
    System(crate::system::SystemEvent),
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
    notes: broadcast::Sender<ServerNotification>,
    pub(super) lane: CallLane,
    hosts: Arc<HostSlot>,
    auth: Option<Arc<Authorizer>>,
    /// The actor's task; `None` in a `share`d handle, which does not own the actor.
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Supervisor {
    pub fn spawn(cfg: SupervisorConfig, bus: Arc<EventBus>) -> Supervisor {
        let (tx, rx) = mpsc::unbounded_channel();
        let (snapshot_tx, snapshot) = watch::channel(Snapshot {
            server: cfg.name.clone(),
            generation: Generation(0),
            state: StateInfo::default(),
            tools: Vec::new(),
            tools_stale: false,
            tools_held: 0,
            tools_new: 0,
            last_round_trip_ms: None,
            last_round_trip_at: None,
            auth: cfg.auth.as_ref().map(|a| a.status()),
        });
        let name = cfg.name.clone();
        let hosts = cfg.hosts.clone();
        let auth = cfg.auth.clone();
        let details = Arc::new(Mutex::new(Details::default()));
        let (notes, _) = broadcast::channel(NOTES_CAPACITY);
        let actor = Actor::new(cfg, bus, snapshot_tx, details.clone(), notes.clone());
        let lane = actor.lane();
        let task = tokio::spawn(actor.run(rx));
        Supervisor {
            name,
            tx,
            snapshot,
            details,
            notes,
            lane,
            hosts,
            auth,
            task: Some(task),
        }
    }

    /// Another handle on this supervisor, for someone who uses it without owning it (the
    /// app's gateway sessions for attached hosts). Calls, requests, snapshots and actions
    /// reach the same actor; dropping it changes nothing. Once the owner stops the
    /// supervisor, its calls fail `cancelled` and its `watch` ends.
    pub fn share(&self) -> Supervisor {
        Supervisor {
            name: self.name.clone(),
            tx: self.tx.clone(),
            snapshot: self.snapshot.clone(),
            details: self.details.clone(),
            notes: self.notes.clone(),
            lane: self.lane.clone(),
            hosts: self.hosts.clone(),
            auth: self.auth.clone(),
            task: None,
        }
    }

    /// Whether `other` is a handle on this very supervisor (not another of the same name).
    pub fn same_as(&self, other: &Supervisor) -> bool {
        Arc::ptr_eq(&self.hosts, &other.hosts)
    }

    /// The live generation's notifications other than progress and `tools/list_changed`
    /// (which the supervisor handles itself): logging messages, resource and prompt
    /// changes, and any other the server sends. A slow receiver sees `Lagged`.
    pub fn notifications(&self) -> broadcast::Receiver<ServerNotification> {
        self.notes.subscribe()
    }

    /// `stderr()` as text per generation, oldest first (the diagnostic bundle's files).
    pub fn stderr_tails(&self) -> Vec<(Generation, String)> {
        self.stderr()
            .into_iter()
            .map(|g| (g.generation, g.lines.join("\n")))
            .collect()
    }

    /// The hosts attached through the gateway (`supervisor::hosts`).
    pub fn hosts(&self) -> &Arc<HostSlot> {
        &self.hosts
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

    /// Whether this server may sign in with OAuth (an HTTP server without a static
    /// Authorization header).
    pub fn uses_sign_in(&self) -> bool {
        self.auth.is_some()
    }

    /// Signs in the way `mode` says (the system browser, for a person) and, once signed in,
    /// connects again with a cleared budget (a server retired as `sign_in` comes back).
    pub async fn sign_in(&self, mode: &SignIn) -> Result<AuthStatus, Error> {
        let auth = self.auth.as_ref().ok_or_else(no_sign_in)?;
        let status = auth.sign_in_now(mode).await?;
        self.reset();
        Ok(status)
    }

    /// Forgets the sign-in (revoking it where the authorization server offers that) and
    /// reconnects, which then needs a new sign-in. True if there was one.
    pub async fn sign_out(&self) -> Result<bool, Error> {
        let auth = self.auth.as_ref().ok_or_else(no_sign_in)?;
        let had = auth.sign_out().await?;
        self.reconnect();
        Ok(had)
    }

    /// The full definitions of the tools in the snapshot (name, description, input
    /// schema, annotations), in the server's order; stale while the snapshot says so.
    pub fn tools(&self) -> Vec<Tool> {
        self.details.lock().expect("details lock").tools.clone()
    }

    /// Tells the supervisor what happened to the machine (issue 29): a wake, or the network
    /// back, probes a ready connection and cuts a running wait by the time slept.
    pub fn system(&self, event: crate::system::SystemEvent) {
        let _ = self.tx.send(Command::System(event));
    }

    /// Every tool the server lists, with where it stands against the pins (docs/trust.md):
    /// what the dashboard and `lifeline tools review` show. Empty without pins (`trust:
    /// "off"`), where `tools` is the whole list.
    pub fn reviewed(&self) -> Vec<ReviewedTool> {
        self.details.lock().expect("details lock").reviewed.clone()
    }

    /// The listed tools the pins hold out of the hosts' lists, by name (rejected ones too).
    pub fn held_tools(&self) -> Vec<String> {
        let details = self.details.lock().expect("details lock");
        (details.reviewed.iter())
            .filter(|r| !r.standing.shown())
            .map(|r| r.tool.name.clone())
            .collect()
    }

    /// Why `tool` is not shown to hosts, if the pins hold it: a host calling it is refused.
    pub fn held(&self, tool: &str) -> Option<Held> {
        let details = self.details.lock().expect("details lock");
        let r = details.reviewed.iter().find(|r| r.tool.name == tool)?;
        match (&r.standing, r.rejected) {
            (s, _) if s.shown() => None,
            (_, true) => Some(Held::Rejected),
            (Standing::Changed { .. }, _) => Some(Held::Changed),
            _ => Some(Held::New),
        }
    }

    /// Whether it has a tool list (without copying it).
    pub fn has_tools(&self) -> bool {
        !self.details.lock().expect("details lock").tools.is_empty()
    }

    /// The stderr of the current and the previous generation that started a process
    /// (stdio only), oldest first, scrubbed with the server's secrets. Empty for HTTP.
    pub fn stderr(&self) -> Vec<GenerationStderr> {
        self.details.lock().expect("details lock").stderr_shown()
    }

    /// A receiver that changes whenever the newest process's stderr grows
    /// (`StderrTail::grown`), to wait for a line in `stderr()` instead of polling it.
    /// `None` until a process has started (and always for HTTP).
    pub fn stderr_grown(&self) -> Option<watch::Receiver<u64>> {
        self.details.lock().expect("details lock").stderr_grown()
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
        if let Some(task) = self.task {
            let _ = task.await;
        }
    }
}

fn no_sign_in() -> Error {
    Error::config(
        "this server does not sign in with OAuth: only an HTTP server without a static \
         Authorization header does",
    )
}
