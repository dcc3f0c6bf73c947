//! The network as the kernel's routes say it, where NetworkManager is not on the system bus
//! (systemd-networkd, iwd, a container): a netlink socket told of every route and link
//! change, and on each, a fresh dump of the routes (`routes.rs` reads it). No default route
//! is `Offline`, one again `Online`. It speaks only while the bus source says NetworkManager
//! is not there (`NetworkSource::Routes`), so the two never disagree. A machine that has had
//! no default route since the process started (a sandbox, a CI runner that reaches only a
//! proxy, a container on an internal network) is never called offline: it is no laptop that
//! lost its network, and calling it offline would hold every failing remote server there to
//! one try in 30 s.

use super::super::{Sink, SystemEvent};
use super::rewatch::{Backoff, Part, Said};
use super::routes::{self, Dump, GROUP_IPV4_ROUTE, GROUP_IPV6_ROUTE, GROUP_LINK};
use super::{NetworkSource, next_wake, say};
use rustix::io::Errno;
use rustix::net::netlink::SocketAddrNetlink;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};
use std::io;
use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::watch;

/// Whether this process has seen a default route: only then is none `Offline`.
static EVER_ROUTED: AtomicBool = AtomicBool::new(false);

/// What the routes say, if anything (see the module's doc).
fn heard(online: bool) -> Option<SystemEvent> {
    if online {
        EVER_ROUTED.store(true, Ordering::Relaxed);
        return Some(SystemEvent::Online);
    }
    EVER_ROUTED
        .load(Ordering::Relaxed)
        .then_some(SystemEvent::Offline)
}

/// How long the kernel may take to answer a dump.
const DUMP_BOUND: Duration = Duration::from_secs(5);
/// The datagrams read: the kernel sends a dump in parts of at most 32 KiB.
const DATAGRAM: usize = 64 * 1024;

/// Follows the routes whenever `network` says it is their turn, for as long as the process
/// runs; a socket that fails is opened again after a backoff.
pub async fn follow(sink: Sink, mut network: watch::Receiver<NetworkSource>, said: &Mutex<Said>) {
    let mut backoff = Backoff::default();
    loop {
        if network
            .wait_for(|n| *n == NetworkSource::Routes)
            .await
            .is_err()
        {
            return; // the bus source ended: the process is ending
        }
        let began = tokio::time::Instant::now();
        match routes_until_handed_over(sink, &mut network, said).await {
            Ok(()) => continue,
            Err(e) => {
                tracing::debug!("netlink: {e}");
                say(said, Part::Netlink, false);
            }
        }
        tokio::time::sleep(backoff.after(began.elapsed())).await;
    }
}

/// Tells what the routes say, and again on every change, until NetworkManager takes over
/// (`Ok`) or the socket fails.
async fn routes_until_handed_over(
    sink: Sink,
    network: &mut watch::Receiver<NetworkSource>,
    said: &Mutex<Said>,
) -> io::Result<()> {
    let changes = socket(GROUP_LINK | GROUP_IPV4_ROUTE | GROUP_IPV6_ROUTE)?;
    let dumps = socket(0)?;
    let loopback = rustix::net::netdevice::name_to_index(dumps.get_ref(), "lo").unwrap_or(1);
    let mut wakes = (sink.subscribe)();
    let mut seq = 0u32;
    let mut online = dump(&dumps, &mut seq, loopback).await?;
    say(said, Part::Netlink, true);
    loop {
        // Not if NetworkManager took over while the dump ran.
        if *network.borrow() == NetworkSource::Routes
            && let Some(event) = heard(online)
        {
            (sink.tell)(event);
        }
        loop {
            tokio::select! {
                changed = changes.readable() => {
                    let mut guard = changed?;
                    let any = drain(guard.get_inner())?; // until EAGAIN
                    guard.clear_ready();
                    if any {
                        break;
                    }
                }
                handed = network.changed() => {
                    if handed.is_err() || *network.borrow() != NetworkSource::Routes {
                        return Ok(());
                    }
                }
                woke = next_wake(&mut wakes) => {
                    // A wake takes the network for back: still none is said again.
                    if woke && let Some(event) = heard(online).filter(|_| !online) {
                        (sink.tell)(event);
                    }
                }
            }
        }
        online = dump(&dumps, &mut seq, loopback).await?;
    }
}

/// A netlink route socket, nonblocking, in `groups`, read when the runtime says it is ready.
fn socket(groups: u32) -> io::Result<AsyncFd<OwnedFd>> {
    let fd = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None, // NETLINK_ROUTE
    )?;
    rustix::net::bind(&fd, &SocketAddrNetlink::new(0, groups))?;
    // SAFETY: an `OwnedFd` is an open descriptor that stays open, and the same one, until
    // it is dropped, which only the `AsyncFd` that owns it does.
    Ok(unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }?)
}

/// Reads every change told so far: whether there was any. A full queue (`ENOBUFS`: changes
/// were lost) is a change too, as the dump that follows reads them all.
fn drain(fd: &OwnedFd) -> io::Result<bool> {
    let mut buf = vec![0u8; DATAGRAM];
    let mut any = false;
    loop {
        match rustix::net::recv(fd, &mut buf[..], RecvFlags::empty()) {
            Ok(_) => any = true,
            Err(Errno::NOBUFS) => any = true,
            Err(Errno::AGAIN) => return Ok(any),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Asks the kernel for every route and reads its answer: whether there is a default route.
async fn dump(fd: &AsyncFd<OwnedFd>, seq: &mut u32, loopback: u32) -> io::Result<bool> {
    *seq = seq.wrapping_add(1);
    let mut answer = Dump::new(*seq, loopback);
    drain(fd.get_ref())?; // what an earlier dump that failed left
    rustix::net::send(
        fd.get_ref(),
        &routes::dump_request(*seq),
        SendFlags::empty(),
    )?;
    let read = async {
        let mut buf = vec![0u8; DATAGRAM];
        while !answer.done {
            let mut guard = fd.readable().await?;
            match guard.try_io(|fd| {
                Ok(rustix::net::recv(
                    fd.get_ref(),
                    &mut buf[..],
                    RecvFlags::empty(),
                )?)
            }) {
                Ok(Ok((n, _))) => answer.read(&buf[..n]),
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => {}
            }
        }
        Ok(())
    };
    match tokio::time::timeout(DUMP_BOUND, read).await {
        Ok(read) => read?,
        Err(_) => {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no answer to a dump",
            ));
        }
    }
    match answer.failed {
        Some(errno) => Err(io::Error::from_raw_os_error(errno)),
        None => Ok(answer.default_route),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_route_is_offline_only_after_a_route_was_seen() {
        use super::heard;
        use crate::system::SystemEvent::{Offline, Online};
        assert_eq!(
            heard(false),
            None,
            "never routed: a sandbox, not a lost network"
        );
        assert_eq!(heard(true), Some(Online));
        assert_eq!(heard(false), Some(Offline));
    }
}
