//! The Linux sources (issue 29): on the system bus, logind's `PrepareForSleep` with a delay
//! inhibitor held while awake (`logind.rs`) and NetworkManager's state and connectivity
//! (`network_manager.rs`); where NetworkManager is not on the bus, the kernel's routes
//! (`netlink.rs`, reading `routes.rs`). Each reports to the process's watch through a `Sink`.
//!
//! Whatever is missing — the bus (a container, CI), logind, NetworkManager, netlink — is said
//! in one line naming what Lifeline goes by instead (`rewatch::Said`), never as an error: the
//! clock-leap detector runs everywhere. The bus is looked for again with a backoff
//! (`rewatch::Backoff`); a service that leaves it is followed again when its name has an
//! owner again, after the same backoff, so a service restarting in a loop costs little.

mod logind;
mod netlink;
mod network_manager;
mod rewatch;
mod routes;

use super::{Sink, SystemEvent};
use futures_util::StreamExt;
use rewatch::{Backoff, Part, Said};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use zbus::MessageStream;

const LOGIND: &str = "org.freedesktop.login1";
const NETWORK_MANAGER: &str = "org.freedesktop.NetworkManager";
/// How long the bus or a service on it may take to answer.
const CALL_BOUND: Duration = Duration::from_secs(10);

/// Which source speaks for the network: NetworkManager while it is on the bus, the routes
/// otherwise, neither before the bus has been looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NetworkSource {
    Undecided,
    NetworkManager,
    Routes,
}

/// Starts the Linux sources on tasks of the current runtime, for as long as it runs.
pub(super) fn start(sink: Sink) {
    let said = Arc::new(Mutex::new(Said::default()));
    let (network, turn) = watch::channel(NetworkSource::Undecided);
    let routes_said = Arc::clone(&said);
    tokio::spawn(async move { netlink::follow(sink, turn, &routes_said).await });
    tokio::spawn(async move { system_bus(sink, network, &said).await });
}

/// The bus, connected again with a backoff whenever it is missing or goes away.
async fn system_bus(sink: Sink, network: watch::Sender<NetworkSource>, said: &Mutex<Said>) {
    let mut backoff = Backoff::default();
    loop {
        let began = tokio::time::Instant::now();
        match tokio::time::timeout(CALL_BOUND, zbus::Connection::system()).await {
            Ok(Ok(bus)) => on_bus(&bus, sink, &network, said).await,
            Ok(Err(e)) => tracing::debug!("the system bus: {e}"),
            Err(_) => tracing::debug!("the system bus did not answer"),
        }
        hand(&network, NetworkSource::Routes);
        say(said, Part::Bus, false);
        tokio::time::sleep(backoff.after(began.elapsed())).await;
    }
}

/// Follows logind and NetworkManager on `bus` until the connection closes.
async fn on_bus(
    bus: &zbus::Connection,
    sink: Sink,
    network: &watch::Sender<NetworkSource>,
    said: &Mutex<Said>,
) {
    let looked = async {
        // Subscribed before looking, so that no change falls between.
        let logind_owners = owners(bus, LOGIND).await?;
        let nm_owners = owners(bus, NETWORK_MANAGER).await?;
        let logind = has_owner(bus, LOGIND).await?;
        let nm = has_owner(bus, NETWORK_MANAGER).await?;
        zbus::Result::Ok((logind_owners, nm_owners, logind, nm))
    };
    let (logind_owners, nm_owners, logind, nm) =
        match tokio::time::timeout(CALL_BOUND, looked).await {
            Ok(Ok(looked)) => looked,
            Ok(Err(e)) => return tracing::debug!("the system bus: {e}"),
            Err(_) => return tracing::debug!("the system bus did not answer"),
        };
    if let Some(line) = said.lock().unwrap().connected(logind, nm) {
        tracing::info!("{line}");
    }
    let speaks = |nm: bool| {
        hand(
            network,
            if nm {
                NetworkSource::NetworkManager
            } else {
                NetworkSource::Routes
            },
        )
    };
    speaks(nm);
    let sleep = Service {
        bus,
        part: Part::Logind,
        name: LOGIND,
        said,
    };
    let net = Service {
        bus,
        part: Part::NetworkManager,
        name: NETWORK_MANAGER,
        said,
    };
    tokio::join!(
        sleep.follow(
            logind_owners,
            logind,
            |_| {},
            || logind::follow(bus, sink, said)
        ),
        net.follow(nm_owners, nm, speaks, || network_manager::follow(bus, sink)),
    );
}

/// A service on the bus, followed while its name has an owner.
struct Service<'a> {
    bus: &'a zbus::Connection,
    part: Part,
    name: &'static str,
    said: &'a Mutex<Said>,
}

impl Service<'_> {
    /// Runs `follow` while the name has an owner (`there`, to begin with), and again after a
    /// backoff when it has one again; `seen` hears each look. Returns when the connection
    /// closes.
    async fn follow<F, Fut>(
        &self,
        mut owners: MessageStream,
        mut there: bool,
        seen: impl Fn(bool),
        follow: F,
    ) where
        F: Fn() -> Fut,
        Fut: Future<Output = zbus::Result<()>>,
    {
        let mut backoff = Backoff::default();
        // How long the last follow ran, once one ended: the next waits for the backoff.
        let mut lasted = None;
        loop {
            if !there {
                if !changed(&mut owners).await {
                    return;
                }
            } else if let Some(lasted) = lasted.take() {
                if !pause(&mut owners, backoff.after(lasted)).await {
                    return;
                }
            } else {
                let began = tokio::time::Instant::now();
                tokio::select! {
                    followed = follow() => match followed {
                        Ok(()) => return, // its signals ended with the connection
                        Err(e) => tracing::debug!("{}: {e}", self.name),
                    },
                    open = changed(&mut owners) => if !open {
                        return;
                    },
                }
                lasted = Some(began.elapsed());
            }
            let Some(now) = self.look(&mut owners, &mut backoff).await else {
                return;
            };
            there = now;
            say(self.said, self.part, there);
            seen(there);
        }
    }

    /// Whether the name has an owner now, asked again after the backoff while the bus does
    /// not answer; `None` when the connection closed.
    async fn look(&self, owners: &mut MessageStream, backoff: &mut Backoff) -> Option<bool> {
        loop {
            match tokio::time::timeout(CALL_BOUND, has_owner(self.bus, self.name)).await {
                Ok(Ok(there)) => return Some(there),
                Ok(Err(e)) => tracing::debug!("{}'s owner: {e}", self.name),
                Err(_) => tracing::debug!("{}'s owner: the bus did not answer", self.name),
            }
            if !pause(owners, backoff.after(Duration::ZERO)).await {
                return None;
            }
        }
    }
}

/// A signal, as a match rule names it.
struct Signal {
    sender: &'static str,
    path: &'static str,
    interface: &'static str,
    member: &'static str,
}

impl Signal {
    /// `member` of `interface`, sent by `sender` from `path`.
    const fn of(
        sender: &'static str,
        path: &'static str,
        interface: &'static str,
        member: &'static str,
    ) -> Signal {
        Signal {
            sender,
            path,
            interface,
            member,
        }
    }
}

/// The signals `signal` names (with `arg0` when given) on `bus`. The bus matches the
/// sender's well-known name against its owner of the moment. Match rules and `call`, not
/// zbus's proxies, on purpose: the proxies' machinery cost the app's core, over its size
/// budget already, another 70 KB for the same few calls.
async fn signals(
    bus: &zbus::Connection,
    signal: &Signal,
    arg0: Option<&str>,
) -> zbus::Result<MessageStream> {
    let mut rule = zbus::MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .sender(signal.sender)?
        .path(signal.path)?
        .interface(signal.interface)?
        .member(signal.member)?;
    if let Some(arg0) = arg0 {
        rule = rule.arg(0, arg0)?;
    }
    MessageStream::for_match_rule(rule.build(), bus, None).await
}

/// A method call on `bus`: its reply, or the error it was answered with.
async fn call<B>(
    bus: &zbus::Connection,
    (destination, path, interface, method): (&str, &str, &str, &str),
    body: &B,
) -> zbus::Result<zbus::Message>
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
{
    bus.call_method(Some(destination), path, Some(interface), method, body)
        .await
}

/// The next message of `stream`: `false` when the connection closed.
async fn changed(stream: &mut MessageStream) -> bool {
    matches!(stream.next().await, Some(Ok(_)))
}

const DBUS: &str = "org.freedesktop.DBus";

/// The owner changes of `name`.
async fn owners(bus: &zbus::Connection, name: &str) -> zbus::Result<MessageStream> {
    let signal = Signal {
        sender: DBUS,
        path: "/org/freedesktop/DBus",
        interface: DBUS,
        member: "NameOwnerChanged",
    };
    signals(bus, &signal, Some(name)).await
}

async fn has_owner(bus: &zbus::Connection, name: &str) -> zbus::Result<bool> {
    let asked = (DBUS, "/org/freedesktop/DBus", DBUS, "NameHasOwner");
    call(bus, asked, &name).await?.body().deserialize()
}

/// Waits `wait`, reading the owner changes meanwhile (a look follows it): `false` when the
/// connection closed.
async fn pause(owners: &mut MessageStream, wait: Duration) -> bool {
    let until = tokio::time::sleep(wait);
    tokio::pin!(until);
    loop {
        tokio::select! {
            () = &mut until => return true,
            open = changed(owners) => if !open {
                return false;
            },
        }
    }
}

/// Gives the network to `to`'s source, waking the routes' only when it changes.
fn hand(network: &watch::Sender<NetworkSource>, to: NetworkSource) {
    network.send_if_modified(|n| std::mem::replace(n, to) != to);
}

/// Logs what `Said` has to say of `part`, if anything.
fn say(said: &Mutex<Said>, part: Part, there: bool) {
    if let Some(line) = said.lock().unwrap().seen(part, there) {
        tracing::info!("{line}");
    }
}

/// Whether the machine woke: `false` for anything else; pending forever without a watch.
async fn next_wake(wakes: &mut Option<broadcast::Receiver<SystemEvent>>) -> bool {
    let Some(rx) = wakes else {
        return std::future::pending().await;
    };
    match rx.recv().await {
        Ok(event) => matches!(event, SystemEvent::Awake { .. }),
        Err(broadcast::error::RecvError::Lagged(_)) => false,
        Err(broadcast::error::RecvError::Closed) => {
            *wakes = None;
            false
        }
    }
}
