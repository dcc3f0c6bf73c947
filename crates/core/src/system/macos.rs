//! The macOS sources (issue 29): the machine's sleep and wake from IOKit's root power domain
//! (`IORegisterForSystemPower`), and the network from Network.framework's path monitor
//! (`nw_path_monitor`). Each reports to the process's watch through a `Sink`; what their
//! messages mean is `signals`.
//!
//! IOKit, not NSWorkspace's `NSWorkspaceWillSleepNotification` and `…DidWakeNotification`:
//! NSWorkspace posts those through the main thread's run loop, which the app runs but a bridge
//! (`lifeline connect`), `lifeline serve` and `lifeline watch` never do, so they would hear no
//! sleep at all. IOKit's messages arrive on a run loop of Lifeline's own thread, in every
//! process, and a sleep waits (up to 30 s) until it is acknowledged (`IOAllowPowerChange`), as
//! logind waits for its delay inhibitor: the watch runs its work before the sleep first. The
//! path monitor calls back on a dispatch queue of its own, with no run loop either way.
//!
//! What cannot be had is said in one line naming what Lifeline goes by instead, never as an
//! error: the clock-leap detector for the sleep, failing connections for the network.

use super::leap::{Clocks, slept};
use super::signals::{self, Network, Power, lock};
use super::{Sink, SystemEvent};
use block2::{Block, RcBlock};
use core_foundation_sys::runloop::{
    CFRunLoopAddSource, CFRunLoopGetCurrent, CFRunLoopRun, CFRunLoopSourceRef,
    kCFRunLoopDefaultMode,
};
use std::ffi::{c_char, c_void};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How long the power thread holds a sleep for the watch's work: that work bounds itself at
/// 3 s, and the second more is for the runtime to get to it. macOS waits up to 30 s.
const HOLD: Duration = Duration::from_secs(4);

/// `io_connect_t` and `io_object_t`: Mach ports.
type IoConnect = u32;
type IoObject = u32;
type IoNotificationPort = *mut c_void;
type IoServiceInterestCallback = unsafe extern "C" fn(
    refcon: *mut c_void,
    service: IoObject,
    message: u32,
    argument: *mut c_void,
);

#[link(name = "IOKit", kind = "framework")]
unsafe extern "C" {
    fn IORegisterForSystemPower(
        refcon: *mut c_void,
        port: *mut IoNotificationPort,
        callback: IoServiceInterestCallback,
        notifier: *mut IoObject,
    ) -> IoConnect;
    fn IONotificationPortGetRunLoopSource(port: IoNotificationPort) -> CFRunLoopSourceRef;
    fn IOAllowPowerChange(root: IoConnect, notification: isize) -> i32;
}

/// `nw_path_monitor_t`, `nw_path_t`, `dispatch_queue_t`: retained object pointers.
type NwPathMonitor = *mut c_void;
type NwPath = *mut c_void;
type DispatchQueue = *mut c_void;

#[link(name = "Network", kind = "framework")]
unsafe extern "C" {
    fn nw_path_monitor_create() -> NwPathMonitor;
    fn nw_path_monitor_set_queue(monitor: NwPathMonitor, queue: DispatchQueue);
    fn nw_path_monitor_set_update_handler(monitor: NwPathMonitor, handler: &Block<dyn Fn(NwPath)>);
    fn nw_path_monitor_start(monitor: NwPathMonitor);
    fn nw_path_get_status(path: NwPath) -> i32;
}

// libdispatch, part of libSystem, which every program links.
unsafe extern "C" {
    fn dispatch_queue_create(label: *const c_char, attributes: *mut c_void) -> DispatchQueue;
}

/// What the power thread's callback needs, set before its run loop runs.
struct PowerSource {
    sink: Sink,
    runtime: tokio::runtime::Handle,
    /// The root power domain's connection, which acknowledges a sleep.
    root: IoConnect,
    /// For the time slept: the monotonic clock on macOS stops while the machine sleeps.
    #[allow(clippy::disallowed_types)]
    origin: std::time::Instant,
    /// The clocks when the machine was about to sleep, until it woke.
    fell_asleep: Mutex<Option<Clocks>>,
}

static POWER: OnceLock<PowerSource> = OnceLock::new();
static NETWORK: OnceLock<Network> = OnceLock::new();

/// Starts the macOS sources, for as long as the process runs.
pub(super) fn start(sink: Sink) {
    signals::start("macOS's", sink, |sink, runtime| {
        power(sink, runtime.clone());
        network(sink, &runtime);
    });
}

/// The power thread: registers with IOKit and runs the run loop its messages arrive on.
#[allow(clippy::disallowed_types)] // the time slept is read off the OS's clocks
fn power(sink: Sink, runtime: tokio::runtime::Handle) {
    let origin = std::time::Instant::now();
    let spawned = std::thread::Builder::new()
        .name("lifeline-power".into())
        .spawn(move || {
            let mut port: IoNotificationPort = std::ptr::null_mut();
            let mut notifier: IoObject = 0;
            // SAFETY: both out-pointers are valid for the call; `on_power` has the signature
            // IOKit calls back with, and ignores the null refcon.
            let root = unsafe {
                IORegisterForSystemPower(std::ptr::null_mut(), &mut port, on_power, &mut notifier)
            };
            if root == 0 || port.is_null() {
                return tracing::info!(
                    "no system power notifications from IOKit: Lifeline notices sleep by the \
                     clock-leap detector"
                );
            }
            let _ = POWER.set(PowerSource {
                sink,
                runtime,
                root,
                origin,
                fell_asleep: Mutex::new(None),
            });
            // SAFETY: `port` is the notification port IOKit just gave, never released, so its
            // source stays valid; it is added to this thread's own run loop, which then runs
            // for as long as the process does (it returns only if every source is removed).
            unsafe {
                let source = IONotificationPortGetRunLoopSource(port);
                CFRunLoopAddSource(CFRunLoopGetCurrent(), source, kCFRunLoopDefaultMode);
                CFRunLoopRun();
            }
        });
    if let Err(e) = spawned {
        tracing::info!(
            "no thread for IOKit's power notifications ({e}): Lifeline notices sleep by the \
             clock-leap detector"
        );
    }
}

/// IOKit's message to the root power domain's interested parties, on the power thread.
unsafe extern "C" fn on_power(
    _refcon: *mut c_void,
    _service: IoObject,
    message: u32,
    argument: *mut c_void,
) {
    let Some(power) = POWER.get() else { return };
    match signals::macos_power(message) {
        Power::MaySleep => allow(power, argument),
        Power::WillSleep => {
            *lock(&power.fell_asleep) = Some(Clocks::now(power.origin));
            signals::before_sleep(power.sink, &power.runtime, HOLD);
            allow(power, argument);
        }
        Power::Woke => {
            let before = lock(&power.fell_asleep).take();
            let slept = before.map(|before| slept(before, Clocks::now(power.origin)));
            (power.sink.tell)(SystemEvent::Awake { slept });
        }
        Power::Other => {}
    }
}

/// Lets the sleep IOKit asked about (`argument`, its notification id) go on.
fn allow(power: &PowerSource, argument: *mut c_void) {
    // SAFETY: `root` is the connection `IORegisterForSystemPower` returned, open for as long as
    // the process runs; the id is the message's argument, passed back as IOKit asks.
    unsafe { IOAllowPowerChange(power.root, argument as isize) };
}

/// The path monitor, on a serial queue of its own: every path it sees is told.
fn network(sink: Sink, runtime: &tokio::runtime::Handle) {
    let network = NETWORK.get_or_init(|| Network::judged(sink.tell));
    // SAFETY: creates a new monitor and a new serial queue (null attributes), both owned
    // here and never released, so they live as long as the process.
    let (monitor, queue) = unsafe {
        (
            nw_path_monitor_create(),
            dispatch_queue_create(c"lifeline.network".as_ptr(), std::ptr::null_mut()),
        )
    };
    if monitor.is_null() || queue.is_null() {
        return tracing::info!(
            "no network path monitor from Network.framework: Lifeline notices a lost network \
             only when connections fail"
        );
    }
    let on_path = RcBlock::new(move |path: NwPath| {
        // SAFETY: the monitor hands its handler a valid path, for the length of the call.
        let status = unsafe { nw_path_get_status(path) };
        network.look(|| signals::path_online(status)); // an invalid path says nothing
    });
    // SAFETY: `monitor` and `queue` are valid (above); the monitor copies the handler block,
    // and calls it on `queue` from `start` on, the current path first.
    unsafe {
        nw_path_monitor_set_queue(monitor, queue);
        nw_path_monitor_set_update_handler(monitor, &on_path);
        nw_path_monitor_start(monitor);
    }
    runtime.spawn(async move { network.follow_wakes(sink).await });
}
