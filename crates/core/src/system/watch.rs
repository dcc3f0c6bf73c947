//! The process's watch on the machine (issue 29): every source tells what it saw (`tell`),
//! `Machine` keeps one picture of it so that a repeated or late signal — two wakes, the
//! clock-leap detector's wake after logind's, the network back before the wake — is one
//! re-check and not a storm, and what changed goes to every supervisor on one broadcast
//! channel. A process that supervises servers for hosts (the app, a bridge, `lifeline serve`)
//! starts it once (`start`), beside its tool pins; a supervisor in a process that did not (a
//! test, `lifeline watch`) hears nothing.
//!
//! The sources: the clock-leap detector (`leap`, everywhere, every `LOOK_EVERY`) and the OS's
//! own (`crate::system` says which), started here with this module's functions as their
//! sink. Before the machine sleeps, a source that can hold the sleep back a moment (logind's
//! delay inhibitor, IOKit's acknowledgement on macOS, the power callback's return on Windows)
//! runs `going_to_sleep`, which tells the supervisors and runs the hooks a process registered
//! (`before_sleep`: the app checkpoints its history), each bounded.

use super::SystemEvent;
use super::leap::{Clocks, LOOK_EVERY, Leap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::broadcast;

/// Events a slow supervisor may fall behind by; a wake is one event.
const CAPACITY: usize = 16;
/// A second wake told within this much of the first is the same wake (the leap detector
/// looks every 2 s and sees the sleep logind already announced).
pub const SAME_WAKE: Duration = Duration::from_secs(10);
/// How long the hooks run before a sleep may take, all together: logind holds a delay
/// inhibitor for at most 5 s by default (`InhibitDelayMaxSec`).
pub const BEFORE_SLEEP_BOUND: Duration = Duration::from_secs(3);

/// What a process does before the machine sleeps; blocking is fine (it runs off the runtime).
pub type Hook = Arc<dyn Fn() + Send + Sync>;

struct Watch {
    sender: broadcast::Sender<SystemEvent>,
    machine: Mutex<Machine>,
    hooks: Mutex<Vec<Hook>>,
}

static WATCH: OnceLock<Watch> = OnceLock::new();

/// What a supervisor listens to: `None` when this process does not watch the machine.
pub fn subscribe() -> Option<broadcast::Receiver<SystemEvent>> {
    WATCH.get().map(|w| w.sender.subscribe())
}

/// One source's report; told on to the supervisors when it changes the picture.
pub fn tell(event: SystemEvent) {
    let Some(watch) = WATCH.get() else { return };
    let now = tokio::time::Instant::now();
    let told = watch.machine.lock().unwrap().tell(event, now);
    if let Some(event) = told {
        tracing::info!("{}", said(event));
        let _ = watch.sender.send(event);
    }
}

/// Registers what this process does before the machine sleeps (`going_to_sleep`).
pub fn before_sleep(hook: Hook) {
    if let Some(watch) = WATCH.get() {
        watch.hooks.lock().unwrap().push(hook);
    }
}

/// The machine is about to sleep: tells the supervisors, then runs the hooks, all within
/// `BEFORE_SLEEP_BOUND`. The source that holds the sleep back releases it after this.
pub async fn going_to_sleep() {
    tell(SystemEvent::Sleeping);
    let Some(watch) = WATCH.get() else { return };
    let hooks: Vec<Hook> = watch.hooks.lock().unwrap().clone();
    let run = tokio::task::spawn_blocking(move || hooks.iter().for_each(|h| h()));
    if tokio::time::timeout(BEFORE_SLEEP_BOUND, run).await.is_err() {
        tracing::warn!(
            "the work before sleep took over {}; letting the machine sleep",
            crate::fmt_duration(BEFORE_SLEEP_BOUND)
        );
    }
}

/// Starts watching, once per process, on tasks of the current runtime.
#[allow(clippy::disallowed_types)] // the leap detector reads the OS's clocks (`Clocks::now`)
pub fn start() {
    let mut first = false;
    WATCH.get_or_init(|| {
        first = true;
        Watch {
            sender: broadcast::channel(CAPACITY).0,
            machine: Mutex::new(Machine::default()),
            hooks: Mutex::new(Vec::new()),
        }
    });
    if !first {
        return;
    }
    // The OS's own sources; not in a unit test's process, whose supervisors must not hear
    // the test machine's network.
    #[cfg(not(test))]
    {
        let sink = super::Sink {
            tell,
            going_to_sleep: || Box::pin(going_to_sleep()),
            subscribe,
        };
        #[cfg(target_os = "linux")]
        super::linux::start(sink);
        #[cfg(target_os = "macos")]
        super::macos::start(sink);
        #[cfg(windows)]
        super::windows::start(sink);
        #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
        let _ = sink; // the clock-leap detector alone
    }
    tokio::spawn(async move {
        let origin = std::time::Instant::now();
        let mut leap = Leap::default();
        let mut tick = tokio::time::interval(LOOK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Some(slept) = leap.look(Clocks::now(origin)) {
                tell(SystemEvent::Awake { slept: Some(slept) });
            }
        }
    });
}

fn said(event: SystemEvent) -> String {
    match event {
        SystemEvent::Sleeping => "the machine is going to sleep".into(),
        SystemEvent::Awake { slept: Some(s) } => format!(
            "the machine slept for {}; checking every server",
            crate::fmt_duration(s)
        ),
        SystemEvent::Awake { slept: None } => "the machine woke; checking every server".into(),
        SystemEvent::Offline => "the network is gone; remote servers wait for it".into(),
        SystemEvent::Online => "the network is back; checking every remote server".into(),
    }
}

/// The machine as the sources told it: what a new report changes, if anything. Pure.
#[derive(Debug, Default)]
pub struct Machine {
    asleep: bool,
    /// As the supervisors last heard it: a wake tells them the network is there until a
    /// source says otherwise.
    offline: bool,
    last_wake: Option<tokio::time::Instant>,
}

impl Machine {
    /// What to tell the supervisors of `event`, seen at `now`: `None` when it changes nothing
    /// they would act on.
    pub fn tell(&mut self, event: SystemEvent, now: tokio::time::Instant) -> Option<SystemEvent> {
        match event {
            SystemEvent::Sleeping => {
                if self.asleep {
                    return None;
                }
                self.asleep = true;
                Some(event)
            }
            SystemEvent::Awake { slept } => {
                let again = self
                    .last_wake
                    .is_some_and(|w| now.saturating_duration_since(w) < SAME_WAKE);
                if again && !self.asleep {
                    return None;
                }
                self.asleep = false;
                self.offline = false;
                self.last_wake = Some(now);
                Some(SystemEvent::Awake { slept })
            }
            SystemEvent::Offline => {
                if self.offline {
                    return None;
                }
                self.offline = true;
                Some(event)
            }
            SystemEvent::Online => {
                if !self.offline {
                    return None;
                }
                self.offline = false;
                if self.asleep {
                    return None; // the wake re-checks
                }
                Some(event)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SystemEvent::*;

    #[tokio::test]
    async fn a_process_watches_once_and_its_supervisors_listen() {
        super::start();
        super::start();
        let mut rx = super::subscribe().expect("watching");
        assert!(rx.try_recv().is_err(), "nothing told between two looks");
    }

    #[test]
    fn repeated_and_late_signals_are_one_recheck() {
        let t0 = tokio::time::Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let slept = |s: u64| Awake {
            slept: Some(Duration::from_secs(s)),
        };
        // (what a source said, at second, what the supervisors hear)
        let table = [
            (Sleeping, 0, Some(Sleeping)),
            (Sleeping, 0, None),         // logind's, then another source's
            (Offline, 0, Some(Offline)), // NetworkManager goes asleep too
            (Online, 1, None),           // the network is back before the wake
            (Offline, 2, Some(Offline)), // and gone again
            (Awake { slept: None }, 60, Some(Awake { slept: None })), // logind's wake
            (slept(58), 61, None),       // the leap detector's, the same wake
            (Online, 62, None),          // back already: the wake re-checked
            (Offline, 63, Some(Offline)), // NetworkManager connecting after the wake
            (Online, 66, Some(Online)),
            (Offline, 70, Some(Offline)),
            (Offline, 71, None),
            (Online, 75, Some(Online)),
            (slept(300), 400, Some(slept(300))), // a wake no source announced
            (slept(300), 420, Some(slept(300))), // a second, SAME_WAKE later
        ];
        let mut machine = Machine::default();
        for (i, (event, s, heard)) in table.into_iter().enumerate() {
            assert_eq!(
                machine.tell(event, at(s)),
                heard,
                "row {i}: {event:?} at {s} s"
            );
        }
    }
}
