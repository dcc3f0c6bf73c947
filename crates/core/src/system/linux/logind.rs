//! logind on the system bus (`org.freedesktop.login1`): `PrepareForSleep(true)` before a
//! suspend, `PrepareForSleep(false)` after it. While the machine is awake Lifeline holds a
//! *delay* inhibitor (a file descriptor; closing it lets the sleep go on), so that before it
//! sleeps the process's watch tells the supervisors and runs its hooks (the history's
//! checkpoint), bounded well inside logind's own limit (`InhibitDelayMaxSec`, 5 s by default).

use super::super::leap::{Clocks, slept};
use super::super::{Sink, SystemEvent};
use super::rewatch::{Part, Said};
use super::{CALL_BOUND, LOGIND, Signal, call, say, signals};
use futures_util::StreamExt;
use std::sync::Mutex;
use zbus::zvariant::OwnedFd;

const PATH: &str = "/org/freedesktop/login1";
const MANAGER: &str = "org.freedesktop.login1.Manager";
const PREPARE_FOR_SLEEP: Signal = Signal::of(LOGIND, PATH, MANAGER, "PrepareForSleep");
/// `Inhibit(what, who, why, mode)`, as `systemd-inhibit --list` shows it.
const INHIBIT: (&str, &str, &str, &str) = (
    "sleep",
    "Lifeline",
    "checkpoint the history and tell the servers",
    "delay",
);

/// Follows logind's sleeps on `bus` until the connection closes (`Ok`), holding an inhibitor
/// while awake; dropped when logind leaves the bus, which closes the inhibitor with it.
pub async fn follow(bus: &zbus::Connection, sink: Sink, said: &Mutex<Said>) -> zbus::Result<()> {
    let mut told = signals(bus, &PREPARE_FOR_SLEEP, None).await?;
    let mut inhibitor = inhibit(bus, said).await;
    // The clocks when the machine was about to sleep, until it woke.
    let mut fell_asleep: Option<Clocks> = None;
    while let Some(Ok(signal)) = told.next().await {
        let Ok(going) = signal.body().deserialize::<bool>() else {
            continue; // not what logind sends: nothing to go by
        };
        match (going, fell_asleep) {
            (true, None) => {
                fell_asleep = Some(clocks());
                (sink.going_to_sleep)().await;
                drop(inhibitor.take()); // the sleep goes on
            }
            (false, before) => {
                fell_asleep = None;
                let slept = before.map(|before| slept(before, clocks()));
                (sink.tell)(SystemEvent::Awake { slept });
                if inhibitor.is_none() {
                    inhibitor = inhibit(bus, said).await;
                }
            }
            (true, Some(_)) => {} // told already
        }
    }
    Ok(())
}

/// Takes a delay inhibitor: `None` when logind gives none (a policy may refuse it), which
/// costs the hooks their head start and nothing else.
async fn inhibit(bus: &zbus::Connection, said: &Mutex<Said>) -> Option<OwnedFd> {
    let asked = async {
        let reply = call(bus, (LOGIND, PATH, MANAGER, "Inhibit"), &INHIBIT).await?;
        reply.body().deserialize::<OwnedFd>()
    };
    match tokio::time::timeout(CALL_BOUND, asked).await {
        Ok(Ok(fd)) => {
            say(said, Part::Inhibitor, true);
            Some(fd)
        }
        Ok(Err(e)) => {
            tracing::debug!("logind's Inhibit: {e}");
            if refused(&e) {
                say(said, Part::Inhibitor, false);
            }
            None
        }
        Err(_) => {
            tracing::debug!("logind's Inhibit did not answer");
            None
        }
    }
}

/// Whether logind answered no (a policy, a bad request), rather than went away meanwhile
/// (which its owner's change tells).
fn refused(e: &zbus::Error) -> bool {
    const GONE: [&str; 4] = [
        "org.freedesktop.DBus.Error.NoReply",
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
        "org.freedesktop.DBus.Error.Disconnected",
    ];
    match e {
        zbus::Error::MethodError(name, _, _) => !GONE.contains(&name.as_str()),
        _ => false,
    }
}

/// The clocks now (CLOCK_MONOTONIC and CLOCK_BOOTTIME; the origin is for other systems).
#[allow(clippy::disallowed_types)]
fn clocks() -> Clocks {
    Clocks::now(std::time::Instant::now())
}
