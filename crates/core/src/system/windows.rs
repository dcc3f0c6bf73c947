//! The Windows sources (issue 29): the machine's suspend and resume from the power manager
//! (`PowerRegisterSuspendResumeNotification` with a callback, so no window and no message loop:
//! the app and every `lifeline` command alike), and the network from the IP helper: on every
//! change of an IP interface or of a route (`NotifyIpInterfaceChange`, `NotifyRouteChange2`),
//! whether a default route leaves by an interface that is connected (`GetIpForwardTable2`,
//! `GetIpInterfaceTable`; `signals::default_route` decides). A machine with no default route
//! since the process started is never called offline (`signals::Network::routed`), as with
//! netlink's routes on Linux. Each reports to the process's watch through a `Sink`.
//!
//! Route changes as well as interface ones: an adapter is connected before DHCP gives it its
//! default route, and only the route's arrival says the network is there. The routes, not
//! `GetNetworkConnectivityHint`: that came with Windows 10 2004, and a function the system
//! does not export stops the whole binary from loading. The callbacks run on the OS's threads;
//! the watch's `tell` is safe from any thread, and a suspend is held back by the callback not
//! having returned, for what Windows gives a process (about 2 s).
//!
//! What cannot be had is said in one line naming what Lifeline goes by instead, never as an
//! error: the clock-leap detector for the sleep, failing connections for the network.

use super::leap::{self, Clocks, slept};
use super::signals::{self, Interface, Network, Power, Route, lock};
use super::{Sink, SystemEvent};
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use windows_sys::Win32::Foundation::{ERROR_NOT_FOUND, ERROR_SUCCESS, HANDLE, WIN32_ERROR};
use windows_sys::Win32::NetworkManagement::IpHelper::{
    FreeMibTable, GetIpForwardTable2, GetIpInterfaceTable, MIB_IPFORWARD_ROW2,
    MIB_IPFORWARD_TABLE2, MIB_IPINTERFACE_ROW, MIB_IPINTERFACE_TABLE, MIB_NOTIFICATION_TYPE,
    NotifyIpInterfaceChange, NotifyRouteChange2,
};
use windows_sys::Win32::Networking::WinSock::AF_UNSPEC;
use windows_sys::Win32::System::Power::{
    DEVICE_NOTIFY_SUBSCRIBE_PARAMETERS, PowerRegisterSuspendResumeNotification,
};
use windows_sys::Win32::System::WindowsProgramming::QueryUnbiasedInterruptTime;
use windows_sys::Win32::UI::WindowsAndMessaging::DEVICE_NOTIFY_CALLBACK;

/// How long the power callback holds a suspend for the watch's work: about what Windows gives
/// a process before it suspends anyway.
const HOLD: Duration = Duration::from_secs(2);

/// What the power callback needs, set before it is registered.
struct PowerSource {
    sink: Sink,
    runtime: tokio::runtime::Handle,
    /// The clocks when the machine was about to sleep, until it woke.
    fell_asleep: Mutex<Option<Clocks>>,
}

static POWER: OnceLock<PowerSource> = OnceLock::new();
static NETWORK: OnceLock<Network> = OnceLock::new();

/// Starts the Windows sources, for as long as the process runs.
pub(super) fn start(sink: Sink) {
    signals::start("Windows'", sink, |sink, runtime| {
        power(sink, runtime.clone());
        network(sink, &runtime);
    });
}

fn power(sink: Sink, runtime: tokio::runtime::Handle) {
    if POWER
        .set(PowerSource {
            sink,
            runtime,
            fell_asleep: Mutex::new(None),
        })
        .is_err()
    {
        return; // registered already
    }
    // Windows reads the recipient when the events come, so it lives as long as the process.
    let recipient = Box::leak(Box::new(DEVICE_NOTIFY_SUBSCRIBE_PARAMETERS {
        Callback: Some(on_power),
        Context: std::ptr::null_mut(),
    }));
    let mut registration: *mut c_void = std::ptr::null_mut();
    // SAFETY: with DEVICE_NOTIFY_CALLBACK the recipient is a DEVICE_NOTIFY_SUBSCRIBE_PARAMETERS,
    // valid for ever (leaked); `on_power` has the callback's signature and ignores the null
    // context; the registration's out-pointer is valid for the call.
    let error = unsafe {
        PowerRegisterSuspendResumeNotification(
            DEVICE_NOTIFY_CALLBACK,
            std::ptr::from_mut(recipient).cast(),
            &mut registration,
        )
    };
    if error != ERROR_SUCCESS {
        tracing::info!(
            "no suspend and resume notifications from Windows (error {error}): Lifeline notices \
             sleep by the clock-leap detector"
        );
    }
}

/// The power manager's event (`PBT_*`), on a thread of its own.
unsafe extern "system" fn on_power(
    _context: *const c_void,
    event: u32,
    _setting: *const c_void,
) -> u32 {
    let Some(power) = POWER.get() else {
        return ERROR_SUCCESS;
    };
    match signals::windows_power(event) {
        Power::WillSleep => {
            *lock(&power.fell_asleep) = Some(clocks());
            signals::before_sleep(power.sink, &power.runtime, HOLD);
        }
        Power::Woke => {
            let before = lock(&power.fell_asleep).take();
            let slept = before.map(|before| slept(before, clocks()));
            (power.sink.tell)(SystemEvent::Awake { slept });
        }
        Power::MaySleep | Power::Other => {}
    }
    ERROR_SUCCESS
}

/// The clocks for the time slept: the unbiased interrupt time, which stops while the machine
/// sleeps, and the wall clock, which does not.
fn clocks() -> Clocks {
    let mut ticks: u64 = 0;
    // SAFETY: writes one u64 through a valid pointer; it cannot fail since Windows 7.
    unsafe { QueryUnbiasedInterruptTime(&mut ticks) };
    Clocks {
        monotonic: Duration::from_nanos(ticks.saturating_mul(100)),
        counting: leap::wall(),
    }
}

/// Registers for interface and route changes, then looks once: the first reading is told too.
fn network(sink: Sink, runtime: &tokio::runtime::Handle) {
    let network = NETWORK.get_or_init(|| Network::routed(sink.tell));
    let mut interfaces: HANDLE = std::ptr::null_mut();
    let mut routes: HANDLE = std::ptr::null_mut();
    // SAFETY: the callbacks have the signatures asked for and ignore the null context; the
    // handles' out-pointers are valid for the calls. The registrations are never cancelled.
    let (by_interface, by_route) = unsafe {
        (
            NotifyIpInterfaceChange(
                AF_UNSPEC,
                Some(on_interface),
                std::ptr::null(),
                false,
                &mut interfaces,
            ),
            NotifyRouteChange2(
                AF_UNSPEC,
                Some(on_route),
                std::ptr::null(),
                false,
                &mut routes,
            ),
        )
    };
    if by_interface != ERROR_SUCCESS || by_route != ERROR_SUCCESS {
        return tracing::info!(
            "no interface and route changes from Windows (errors {by_interface}, {by_route}): \
             Lifeline notices a lost network only when connections fail"
        );
    }
    if !look(network) {
        tracing::info!(
            "Windows' routes and interfaces could not be read: Lifeline notices a lost network \
             only when connections fail"
        );
    }
    runtime.spawn(async move { network.follow_wakes(sink).await });
}

unsafe extern "system" fn on_interface(
    _context: *const c_void,
    _row: *const MIB_IPINTERFACE_ROW,
    _kind: MIB_NOTIFICATION_TYPE,
) {
    if let Some(network) = NETWORK.get() {
        look(network); // one that cannot be read was said at the start
    }
}

unsafe extern "system" fn on_route(
    _context: *const c_void,
    _row: *const MIB_IPFORWARD_ROW2,
    _kind: MIB_NOTIFICATION_TYPE,
) {
    if let Some(network) = NETWORK.get() {
        look(network); // one that cannot be read was said at the start
    }
}

/// Reads the tables and tells whether there is a default route; a table that cannot be read
/// says nothing (`false`).
fn look(network: &Network) -> bool {
    network.look(|| Some(signals::default_route(&routes()?, &interfaces()?)))
}

/// The routing table, both families.
fn routes() -> Option<Vec<Route>> {
    let mut table: *mut MIB_IPFORWARD_TABLE2 = std::ptr::null_mut();
    // SAFETY: the out-pointer is valid; on success `table` is the OS's until `FreeMibTable`.
    let error = unsafe { GetIpForwardTable2(AF_UNSPEC, &mut table) };
    read("routes", error, table, |t| {
        // SAFETY: a table the call returned holds `NumEntries` rows from `Table` on.
        unsafe {
            std::slice::from_raw_parts(
                (&raw const (*t).Table).cast::<MIB_IPFORWARD_ROW2>(),
                (*t).NumEntries as usize,
            )
        }
        .iter()
        .map(|r| Route {
            // SAFETY: every member of the SOCKADDR_INET union begins with its family.
            family: unsafe { r.DestinationPrefix.Prefix.si_family },
            prefix_length: r.DestinationPrefix.PrefixLength,
            interface: r.InterfaceIndex,
            loopback: r.Loopback,
        })
        .collect()
    })
}

/// The IP interfaces, one row per interface and family.
fn interfaces() -> Option<Vec<Interface>> {
    let mut table: *mut MIB_IPINTERFACE_TABLE = std::ptr::null_mut();
    // SAFETY: the out-pointer is valid; on success `table` is the OS's until `FreeMibTable`.
    let error = unsafe { GetIpInterfaceTable(AF_UNSPEC, &mut table) };
    read("interfaces", error, table, |t| {
        // SAFETY: a table the call returned holds `NumEntries` rows from `Table` on.
        unsafe {
            std::slice::from_raw_parts(
                (&raw const (*t).Table).cast::<MIB_IPINTERFACE_ROW>(),
                (*t).NumEntries as usize,
            )
        }
        .iter()
        .map(|i| Interface {
            family: i.Family,
            index: i.InterfaceIndex,
            connected: i.Connected,
        })
        .collect()
    })
}

/// What `rows` takes from the table of `what` the IP helper returned (`error`), which is freed
/// after: nothing found is no rows, another error `None`.
fn read<T, R>(
    what: &str,
    error: WIN32_ERROR,
    table: *mut T,
    rows: impl FnOnce(*mut T) -> Vec<R>,
) -> Option<Vec<R>> {
    match error {
        ERROR_SUCCESS if !table.is_null() => {
            let read = rows(table);
            // SAFETY: `table` came from the IP helper and is freed once, after the last read.
            unsafe { FreeMibTable(table.cast()) };
            Some(read)
        }
        ERROR_NOT_FOUND => Some(Vec::new()),
        _ => {
            tracing::debug!("the IP helper's {what}: error {error}");
            None
        }
    }
}
