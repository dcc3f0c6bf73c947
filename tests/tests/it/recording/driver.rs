//! Runs real supervisors against real fixture processes on a paused tokio clock that moves
//! only when the driver moves it, so a recording is the same on every run.
//!
//! Paused time alone is not enough with real processes: tokio jumps the clock to the next
//! timer whenever the runtime is idle, and it is idle while a fixture process is starting
//! or answering, so a request timeout (or another server's backoff) would fire during a
//! handshake that takes a few real milliseconds. A spinner task keeps the runtime busy
//! (`yield_now` never lets the clock jump), and the driver advances the clock itself, only
//! when every supervisor is waiting on a timer the driver knows of: the deadline its last
//! state event announced (`delay_ms`). While a supervisor connects, the clock stands still,
//! so every attempt takes 0 ms of recorded time and its outcome is the same every run.
//!
//! Health pings are off in the recorded servers: a ping in flight is not visible from
//! outside, so the driver could not tell when its answer has arrived.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use lifeline_core::events::{Event, EventBody, EventBus, StateName};
use lifeline_core::supervisor::Supervisor;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long (real time) the driver waits for a supervisor to do what it must do next (a
/// handshake with a local fixture, a process exit) before failing the recording.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// One event, stamped with the paused clock's time since the recording started.
pub struct Stamped {
    pub ms: u64,
    pub event: Event,
}

pub struct Driver {
    pub bus: Arc<EventBus>,
    start: Instant,
    rx: broadcast::Receiver<Event>,
    pub events: Vec<Stamped>,
    /// By server: the time of its latest state event and its `delay_ms`, if it waits.
    waits: BTreeMap<String, (u64, Option<u64>)>,
    /// Shared: a recorded host's gateway session holds its server's (recording/host.rs).
    pub supervisors: Vec<Arc<Supervisor>>,
    spinner: JoinHandle<()>,
}

impl Driver {
    /// Must run on a paused current-thread runtime (`#[tokio::test(start_paused = true)]`).
    pub fn new() -> Driver {
        let bus = Arc::new(EventBus::new(1 << 16));
        let rx = bus.subscribe();
        let spinner = tokio::spawn(async {
            loop {
                tokio::task::yield_now().await;
            }
        });
        Driver {
            bus,
            start: Instant::now(),
            rx,
            events: Vec::new(),
            waits: BTreeMap::new(),
            supervisors: Vec::new(),
            spinner,
        }
    }

    /// Milliseconds of paused time since the recording started.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).expect("a short recording")
    }

    pub fn supervisor(&self, name: &str) -> &Supervisor {
        self.supervisors
            .iter()
            .find(|s| s.name() == name)
            .unwrap_or_else(|| panic!("no supervisor named {name}"))
    }

    /// Moves the paused clock `ms` on from now, firing no deadline the driver knows of:
    /// the caller makes sure none falls in between (a host call's latency, host.rs).
    pub async fn advance_by(&mut self, ms: u64) {
        let now = self.now_ms();
        self.advance_to(now + ms).await;
    }

    /// Takes every event published so far, stamped with the current paused time.
    fn drain(&mut self) {
        loop {
            match self.rx.try_recv() {
                Ok(event) => {
                    let ms = self.now_ms();
                    if let EventBody::State(s) = &event.body {
                        let wait = matches!(
                            s.state,
                            Some(
                                StateName::Retrying
                                    | StateName::Reconnecting
                                    | StateName::Quarantined
                            )
                        );
                        let delay = s.delay_ms.filter(|_| wait);
                        self.waits.insert(event.server.clone(), (ms, delay));
                    }
                    self.events.push(Stamped { ms, event });
                }
                Err(broadcast::error::TryRecvError::Empty) => return,
                Err(e) => panic!("the recording lost events: {e}"),
            }
        }
    }

    /// Yields (real time passes, paused time does not) until `done`, draining events; fails
    /// naming `what` after `PATIENCE` of real time.
    #[expect(
        clippy::disallowed_types,
        reason = "the bound is real time: the paused clock stands still while this spins"
    )]
    pub async fn spin_until(&mut self, what: &str, mut done: impl FnMut(&Driver) -> bool) {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            self.drain();
            if done(self) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the recording waited {PATIENCE:?} for {what}; states: {:?}",
                self.states()
            );
            tokio::task::yield_now().await;
        }
    }

    fn states(&self) -> Vec<(String, Option<StateName>)> {
        self.supervisors
            .iter()
            .map(|s| (s.name().to_owned(), s.snapshot().state.state))
            .collect()
    }

    /// Whether a supervisor is doing something the clock must wait for.
    fn busy(&self) -> bool {
        self.supervisors.iter().any(|s| {
            matches!(
                s.snapshot().state.state,
                None | Some(StateName::Connecting | StateName::Stopping)
            )
        })
    }

    /// Waits until no supervisor is connecting or stopping, then lets the tasks that follow
    /// a state change (tool-list updates, process reaping) run to their end.
    pub async fn settle(&mut self) {
        self.spin_until("every supervisor to settle", |d| !d.busy())
            .await;
        self.yield_a_while().await;
        if self.busy() {
            Box::pin(self.settle()).await;
        }
    }

    /// The earliest announced end of a wait, with the servers waiting until then.
    fn next_deadline(&self) -> Option<(u64, Vec<String>)> {
        let mut deadlines: Vec<(u64, &String)> = self
            .waits
            .iter()
            .filter_map(|(server, (at, delay))| Some((at + (*delay)?, server)))
            .collect();
        deadlines.sort();
        let first = deadlines.first()?.0;
        let servers = deadlines
            .iter()
            .filter(|(at, _)| *at == first)
            .map(|(_, s)| (*s).clone())
            .collect();
        Some((first, servers))
    }

    /// Moves the paused clock to `target_ms`, stopping at every announced deadline on the
    /// way to let the supervisors whose wait ends there start their next attempt.
    pub async fn run_to(&mut self, target_ms: u64) {
        loop {
            self.settle().await;
            match self.next_deadline() {
                Some((at, servers)) if at <= target_ms => {
                    let count = |d: &Driver, s: &str| {
                        d.events.iter().filter(|e| e.event.server == s).count()
                    };
                    let before: Vec<usize> = servers.iter().map(|s| count(self, s)).collect();
                    let started =
                        |d: &Driver| servers.iter().zip(&before).all(|(s, n)| count(d, s) > *n);
                    // The wait is over: the state events that follow announce the next one.
                    for s in &servers {
                        self.waits.insert(s.clone(), (at, None));
                    }
                    self.advance_to(at).await;
                    self.yield_a_while().await;
                    if !started(self) {
                        // `delay_ms` is whole milliseconds of a longer wait: the timer fires
                        // within the next millisecond.
                        self.advance_to(at + 1).await;
                    }
                    let what = format!("{servers:?} to start the attempt due at {at} ms");
                    self.spin_until(&what, started).await;
                }
                _ => {
                    self.advance_to(target_ms).await;
                    return;
                }
            }
        }
    }

    async fn advance_to(&mut self, ms: u64) {
        let now = self.now_ms();
        if ms > now {
            tokio::time::advance(Duration::from_millis(ms - now)).await;
        }
    }

    /// Lets every task that is ready run (a fired timer's supervisor, a state change's
    /// follow-ups): the spinner yields too, so this many rounds reach them all.
    async fn yield_a_while(&mut self) {
        for _ in 0..200 {
            tokio::task::yield_now().await;
        }
        self.drain();
    }

    /// Settles and takes the events recorded so far; what happens after is not recorded.
    pub async fn take_events(&mut self) -> Vec<Stamped> {
        self.settle().await;
        self.drain();
        std::mem::take(&mut self.events)
    }

    /// Stops every supervisor (each bounded) and the spinner. Every other holder of a
    /// supervisor (a host's gateway session) must be gone.
    pub async fn stop(mut self) {
        let supervisors = std::mem::take(&mut self.supervisors);
        for s in supervisors {
            let name = s.name().to_owned();
            match Arc::try_unwrap(s) {
                Ok(s) => s.stop().await,
                Err(_) => panic!("{name}'s supervisor is still shared at the end"),
            }
        }
        self.spinner.abort();
    }
}
