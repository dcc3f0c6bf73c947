//! What macOS's and Windows' own signals tell (issue 29), apart from the calls that hear them
//! (`macos.rs`, `windows.rs`), and compiled on every OS so that Linux's tests check it too: a
//! power message or event as a `Power`, a network path's status and a routing table as online
//! or not, the network as a source last saw it (`Network`, told again after a wake), and the
//! hold an OS thread keeps on a sleep while the watch does its work before it (`before_sleep`).

use super::{Sink, SystemEvent};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::broadcast;

/// What a power message says Lifeline should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    /// The OS asks whether it may sleep (macOS, an idle sleep): say yes at once, tell nothing
    /// (another process may still say no).
    MaySleep,
    /// It is about to sleep: the watch's `going_to_sleep`, then let it.
    WillSleep,
    /// It woke.
    Woke,
    /// Nothing Lifeline acts on.
    Other,
}

/// IOKit's system power messages (IOKit/IOMessage.h: `iokit_common_msg(0x270)` and on).
pub mod iokit {
    pub const CAN_SYSTEM_SLEEP: u32 = 0xE000_0270;
    pub const SYSTEM_WILL_SLEEP: u32 = 0xE000_0280;
    pub const SYSTEM_WILL_NOT_SLEEP: u32 = 0xE000_0290;
    pub const SYSTEM_HAS_POWERED_ON: u32 = 0xE000_0300;
    pub const SYSTEM_WILL_POWER_ON: u32 = 0xE000_0320;
}

/// A message from `IORegisterForSystemPower`. A sleep another process vetoed
/// (`SYSTEM_WILL_NOT_SLEEP`) was never told, and the wake is told once the machine is on
/// (`SYSTEM_HAS_POWERED_ON`), not as it begins to power on.
pub fn macos_power(message: u32) -> Power {
    match message {
        iokit::CAN_SYSTEM_SLEEP => Power::MaySleep,
        iokit::SYSTEM_WILL_SLEEP => Power::WillSleep,
        iokit::SYSTEM_HAS_POWERED_ON => Power::Woke,
        _ => Power::Other,
    }
}

/// Windows' power broadcast events (WinUser.h).
pub mod pbt {
    pub const APM_SUSPEND: u32 = 0x4;
    pub const APM_RESUME_SUSPEND: u32 = 0x7;
    pub const APM_POWER_STATUS_CHANGE: u32 = 0xA;
    pub const APM_RESUME_AUTOMATIC: u32 = 0x12;
    pub const POWER_SETTING_CHANGE: u32 = 0x8013;
}

/// An event from `PowerRegisterSuspendResumeNotification`. Every resume is
/// `APM_RESUME_AUTOMATIC`; one a person caused is followed by `APM_RESUME_SUSPEND`, the same
/// wake told again (the watch keeps one).
pub fn windows_power(event: u32) -> Power {
    match event {
        pbt::APM_SUSPEND => Power::WillSleep,
        pbt::APM_RESUME_AUTOMATIC | pbt::APM_RESUME_SUSPEND => Power::Woke,
        _ => Power::Other,
    }
}

/// `nw_path_status_t` (Network/path.h).
pub mod nw_path_status {
    pub const INVALID: i32 = 0;
    pub const SATISFIED: i32 = 1;
    pub const UNSATISFIED: i32 = 2;
    pub const SATISFIABLE: i32 = 3;
}

/// Whether a network path's status is online: satisfied is; unsatisfied is not, nor is
/// satisfiable (a connection could be brought up, a VPN on demand, but is not); `None` for an
/// invalid path or a status Network.framework does not define, which say nothing.
pub fn path_online(status: i32) -> Option<bool> {
    match status {
        nw_path_status::SATISFIED => Some(true),
        nw_path_status::UNSATISFIED | nw_path_status::SATISFIABLE => Some(false),
        _ => None,
    }
}

/// One row of Windows' routing table (`MIB_IPFORWARD_ROW2`), as far as the decision reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// `AF_INET` or `AF_INET6`.
    pub family: u16,
    pub prefix_length: u8,
    pub interface: u32,
    /// A route the machine loops back to itself.
    pub loopback: bool,
}

/// One IP interface (`MIB_IPINTERFACE_ROW`), one per interface and family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interface {
    pub family: u16,
    pub index: u32,
    /// Its media is connected: a cable in, an access point joined.
    pub connected: bool,
}

/// Whether the machine has a usable default route: one to 0.0.0.0/0 or ::/0, not looped back,
/// out of an interface whose family is connected. A route left on an interface that lost its
/// media does not count.
pub fn default_route(routes: &[Route], interfaces: &[Interface]) -> bool {
    routes
        .iter()
        .filter(|r| r.prefix_length == 0 && !r.loopback)
        .any(|r| {
            interfaces
                .iter()
                .any(|i| i.family == r.family && i.index == r.interface && i.connected)
        })
}

/// The network as an OS source last saw it. A wake, which the supervisors take for the network
/// back, is followed by `Offline` again while the source still sees none.
#[derive(Debug)]
pub struct Network {
    tell: fn(SystemEvent),
    /// Whether no network is told only in a process that has seen one: so for a decision read
    /// off the routes (Windows'), as for netlink's on Linux. A machine with no default route
    /// from the start is a sandbox, a CI runner that reaches only a proxy, a container on an
    /// internal network — not a laptop that lost its network — and calling it offline would
    /// hold every failing remote server there to one try in 30 s.
    routed: bool,
    /// A look reads and tells under this lock, so a look on one OS thread never overtakes a
    /// newer one on another, nor a wake's telling.
    seen: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    /// `Some(online)` once the source has looked.
    last: Option<bool>,
    ever_online: bool,
}

impl Network {
    /// A source whose OS judges the network itself (macOS's path monitor): its word is told.
    pub fn judged(tell: fn(SystemEvent)) -> Network {
        Network {
            tell,
            routed: false,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// A source that reads the routes (`routed`).
    pub fn routed(tell: fn(SystemEvent)) -> Network {
        Network {
            routed: true,
            ..Network::judged(tell)
        }
    }

    /// Reads the network (`read`: online or not, `None` when it cannot tell) and tells what
    /// it read, every time: the watch drops what changes nothing. Whether it could tell.
    pub fn look(&self, read: impl FnOnce() -> Option<bool>) -> bool {
        let mut seen = lock(&self.seen);
        let Some(online) = read() else {
            return false;
        };
        seen.last = Some(online);
        seen.ever_online |= online;
        if online {
            (self.tell)(SystemEvent::Online);
        } else {
            self.offline(&seen);
        }
        true
    }

    /// The machine woke: still no network is told again.
    pub fn woke(&self) {
        let seen = lock(&self.seen);
        if seen.last == Some(false) {
            self.offline(&seen);
        }
    }

    fn offline(&self, seen: &Seen) {
        if seen.ever_online || !self.routed {
            (self.tell)(SystemEvent::Offline);
        }
    }

    /// Hears the watch's wakes, for as long as it tells them.
    pub async fn follow_wakes(&self, sink: Sink) {
        let Some(mut told) = (sink.subscribe)() else {
            return;
        };
        loop {
            match told.recv().await {
                Ok(SystemEvent::Awake { .. }) => self.woke(),
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => self.woke(), // one may be a wake
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}

/// The machine is about to sleep and an OS thread holds it back until this returns: runs the
/// watch's `going_to_sleep` (itself bounded) on `runtime` and waits for it, on this thread,
/// for at most `bound`. A runtime that is shutting down runs nothing and lets the sleep go at
/// once; nothing here can panic, which on an OS thread would end the process.
pub fn before_sleep(sink: Sink, runtime: &tokio::runtime::Handle, bound: Duration) {
    let (done, finished) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        (sink.going_to_sleep)().await;
        let _ = done.send(());
    });
    let _ = finished.recv_timeout(bound);
}

/// Starts `platform`'s sources with the runtime `watch::start` runs on (their OS threads
/// reach it to run the work before a sleep); without one, says the clock-leap detector
/// stands in, and starts nothing.
pub fn start(platform: &str, sink: Sink, sources: fn(Sink, tokio::runtime::Handle)) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => sources(sink, runtime),
        Err(_) => tracing::info!(
            "no runtime for {platform} sleep and network sources: Lifeline notices sleep by the \
             clock-leap detector"
        ),
    }
}

/// A lock that a panic elsewhere did not take away: what it guards is a plain value.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_power_message_is_what_lifeline_does() {
        let table = [
            (macos_power(iokit::CAN_SYSTEM_SLEEP), Power::MaySleep),
            (macos_power(iokit::SYSTEM_WILL_SLEEP), Power::WillSleep),
            (macos_power(iokit::SYSTEM_WILL_NOT_SLEEP), Power::Other),
            (macos_power(iokit::SYSTEM_WILL_POWER_ON), Power::Other),
            (macos_power(iokit::SYSTEM_HAS_POWERED_ON), Power::Woke),
            (macos_power(0), Power::Other),
            (windows_power(pbt::APM_SUSPEND), Power::WillSleep),
            (windows_power(pbt::APM_RESUME_AUTOMATIC), Power::Woke),
            (windows_power(pbt::APM_RESUME_SUSPEND), Power::Woke),
            (windows_power(pbt::APM_POWER_STATUS_CHANGE), Power::Other),
            (windows_power(pbt::POWER_SETTING_CHANGE), Power::Other),
            (windows_power(u32::MAX), Power::Other),
        ];
        for (i, (got, want)) in table.into_iter().enumerate() {
            assert_eq!(got, want, "row {i}");
        }
    }

    #[test]
    fn only_a_satisfied_path_is_online() {
        let table = [
            (nw_path_status::SATISFIED, Some(true)),
            (nw_path_status::UNSATISFIED, Some(false)),
            (nw_path_status::SATISFIABLE, Some(false)),
            (nw_path_status::INVALID, None),
            (4, None),
            (-1, None),
        ];
        for (status, want) in table {
            assert_eq!(path_online(status), want, "status {status}");
        }
    }

    #[test]
    fn the_network_is_a_default_route_out_of_a_connected_interface() {
        const V4: u16 = 2;
        const V6: u16 = 23;
        let route = |family, prefix_length, interface| Route {
            family,
            prefix_length,
            interface,
            loopback: false,
        };
        let up = |family, index| Interface {
            family,
            index,
            connected: true,
        };
        let down = |family, index| Interface {
            connected: false,
            ..up(family, index)
        };
        let looped = Route {
            loopback: true,
            ..route(V4, 0, 1)
        };
        // (routes, interfaces, online)
        let table: [(Vec<Route>, Vec<Interface>, bool); 10] = [
            (vec![], vec![up(V4, 7)], false),               // no routes at all
            (vec![route(V4, 0, 7)], vec![up(V4, 7)], true), // Wi-Fi, IPv4
            (vec![route(V6, 0, 7)], vec![up(V6, 7)], true), // IPv6 only
            (vec![route(V4, 0, 7)], vec![down(V4, 7)], false), // the access point is gone
            (vec![route(V4, 24, 7)], vec![up(V4, 7)], false), // the local subnet only
            (vec![route(V4, 0, 7)], vec![up(V6, 7)], false), // the other family is up
            (vec![route(V4, 0, 7)], vec![], false),         // an interface the table does not list
            (vec![looped], vec![up(V4, 1)], false),
            (
                vec![route(V4, 0, 7), route(V4, 0, 9)], // Wi-Fi down, Ethernet up
                vec![down(V4, 7), up(V4, 9)],
                true,
            ),
            (
                vec![route(V4, 32, 9), route(V6, 0, 7)],
                vec![up(V4, 9), down(V6, 7)],
                false,
            ),
        ];
        for (i, (routes, interfaces, want)) in table.into_iter().enumerate() {
            assert_eq!(default_route(&routes, &interfaces), want, "row {i}");
        }
    }

    thread_local! {
        static TOLD: RefCell<Vec<SystemEvent>> = const { RefCell::new(Vec::new()) };
    }

    fn told(event: SystemEvent) {
        TOLD.with(|t| t.borrow_mut().push(event));
    }

    #[test]
    fn every_look_is_told_and_a_wake_while_offline_says_it_again() {
        use SystemEvent::{Offline, Online};
        let network = Network::judged(told);
        network.woke(); // before the first look: nothing to say
        assert!(!network.look(|| None)); // a table that could not be read
        assert!(network.look(|| Some(false)));
        network.look(|| Some(false)); // again: the watch drops it
        network.woke();
        network.look(|| None); // says nothing, and forgets nothing
        network.woke();
        network.look(|| Some(true));
        network.woke(); // online: the wake said so already
        let heard = TOLD.with(|t| t.take());
        assert_eq!(heard, [Offline, Offline, Offline, Offline, Online]);
    }

    #[test]
    fn no_route_is_offline_only_after_a_route_was_seen() {
        use SystemEvent::{Offline, Online};
        let network = Network::routed(told);
        network.look(|| Some(false)); // a sandbox, not a lost network
        network.woke();
        assert_eq!(TOLD.with(|t| t.take()), []);
        network.look(|| Some(true));
        network.look(|| Some(false)); // the Wi-Fi went
        network.woke();
        assert_eq!(TOLD.with(|t| t.take()), [Online, Offline, Offline]);
    }

    static WAKES: OnceLock<broadcast::Sender<SystemEvent>> = OnceLock::new();

    fn wakes() -> Option<broadcast::Receiver<SystemEvent>> {
        Some(WAKES.get_or_init(|| broadcast::channel(4).0).subscribe())
    }

    /// Lets the spawned tasks of this (current-thread) runtime run until all wait again.
    async fn settle() {
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_wake_the_watch_tells_says_still_offline_again() {
        use SystemEvent::{Awake, Offline, Online};
        let network: &'static Network = Box::leak(Box::new(Network::judged(told)));
        let sink = Sink {
            tell: told,
            going_to_sleep: || Box::pin(async {}),
            subscribe: wakes,
        };
        network.look(|| Some(false));
        let following = tokio::spawn(network.follow_wakes(sink));
        settle().await; // it subscribed
        let watch = WAKES.get().unwrap();
        watch.send(Offline).unwrap(); // not a wake
        watch.send(Awake { slept: None }).unwrap();
        settle().await;
        network.look(|| Some(true));
        watch.send(Awake { slept: None }).unwrap(); // online: nothing to say again
        settle().await;
        following.abort();
        let heard = TOLD.with(|t| t.take());
        assert_eq!(heard, [Offline, Offline, Online]);
    }

    static WENT_TO_SLEEP: AtomicUsize = AtomicUsize::new(0);

    fn no_tell(_: SystemEvent) {}

    fn no_watch() -> Option<broadcast::Receiver<SystemEvent>> {
        None
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn the_os_thread_holds_the_sleep_until_the_work_before_it_is_done() {
        let sink = Sink {
            tell: no_tell,
            going_to_sleep: || {
                Box::pin(async {
                    tokio::task::yield_now().await;
                    WENT_TO_SLEEP.fetch_add(1, Ordering::SeqCst);
                })
            },
            subscribe: no_watch,
        };
        let runtime = tokio::runtime::Handle::current();
        // An OS thread, as IOKit's or Windows' callback runs on.
        std::thread::spawn(move || before_sleep(sink, &runtime, Duration::from_secs(30)))
            .join()
            .unwrap();
        assert_eq!(
            WENT_TO_SLEEP.load(Ordering::SeqCst),
            1,
            "done before it returned"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn work_that_does_not_end_lets_the_sleep_go_at_the_bound() {
        let sink = Sink {
            tell: no_tell,
            going_to_sleep: || Box::pin(std::future::pending()),
            subscribe: no_watch,
        };
        let runtime = tokio::runtime::Handle::current();
        let bound = Duration::from_millis(50);
        // Returns, which is the test: a hold past the bound would keep the machine awake.
        std::thread::spawn(move || before_sleep(sink, &runtime, bound))
            .join()
            .unwrap();
    }

    #[test]
    fn a_runtime_that_is_gone_lets_the_sleep_go_at_once() {
        let sink = Sink {
            tell: no_tell,
            going_to_sleep: || Box::pin(std::future::pending()),
            subscribe: no_watch,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let handle = runtime.handle().clone();
        drop(runtime);
        // The task is dropped unrun, and with it the sender: no wait for the bound.
        let began = tokio::time::Instant::now();
        before_sleep(sink, &handle, Duration::from_secs(20));
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "{:?}",
            began.elapsed()
        );
    }

    #[test]
    fn sources_start_only_with_a_runtime() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let sink = Sink {
            tell: told,
            going_to_sleep: || Box::pin(async {}),
            subscribe: wakes,
        };
        let sources: fn(Sink, tokio::runtime::Handle) = |_, _| {
            STARTED.fetch_add(1, Ordering::SeqCst);
        };
        start("Test's", sink, sources);
        assert_eq!(
            STARTED.load(Ordering::SeqCst),
            0,
            "no runtime: nothing started"
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async { start("Test's", sink, sources) });
        assert_eq!(STARTED.load(Ordering::SeqCst), 1);
    }
}
