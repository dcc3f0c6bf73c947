//! `lifeline-system-bus ADDRESS [--state N] [--connectivity N]`: logind and NetworkManager as
//! Lifeline's Linux sources see them, for the tests and the benchmark, where neither runs —
//! `org.freedesktop.login1.Manager` (`Inhibit` handing out a real file descriptor, the
//! `PrepareForSleep` signal) and `org.freedesktop.NetworkManager` (`State`, `Connectivity`,
//! `StateChanged`, `PropertiesChanged`) on the bus at ADDRESS (a private `dbus-daemon`, which
//! Lifeline is pointed at with `DBUS_SYSTEM_BUS_ADDRESS`; `lifeline_it::system_bus`).
//!
//! Prints `READY` once it owns both names. Then reads commands, one a line, and prints
//! `ok COMMAND` once each is done:
//!
//! - `sleep`, `wake`: `PrepareForSleep(true)`, `PrepareForSleep(false)`;
//! - `nm-state N`, `nm-connectivity N`: the property set, its change signalled;
//! - `drop-name login1|nm`, `take-name login1|nm`: the service leaves the bus, or is back.
//!
//! And what Lifeline does: `inhibitor N taken WHAT MODE` on each `Inhibit`, `inhibitor N
//! released` when the last copy of that descriptor closes; `nm read NAME` on each read of a
//! property. Ends when stdin closes.

#[cfg(target_os = "linux")]
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    stand_ins::run().await
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("lifeline-system-bus stands in for logind and NetworkManager, on Linux's D-Bus");
    std::process::exit(2);
}

#[cfg(target_os = "linux")]
mod stand_ins {
    use anyhow::{Context, bail};
    use std::borrow::Cow;
    use std::collections::HashMap;
    use std::io::Read;
    use std::sync::atomic::{AtomicU32, Ordering};
    use tokio::io::{AsyncBufReadExt, BufReader};
    use zbus::object_server::SignalEmitter;
    use zbus::zvariant::Value;

    const LOGIND: &str = "org.freedesktop.login1";
    const LOGIND_PATH: &str = "/org/freedesktop/login1";
    const NM: &str = "org.freedesktop.NetworkManager";
    const NM_PATH: &str = "/org/freedesktop/NetworkManager";

    struct Manager {
        inhibitors: AtomicU32,
    }

    #[zbus::interface(name = "org.freedesktop.login1.Manager")]
    impl Manager {
        /// One end of a pipe; the other is read until every copy of this one is closed,
        /// which is what logind's own inhibitor (a FIFO) notices.
        fn inhibit(
            &self,
            what: &str,
            _who: &str,
            _why: &str,
            mode: &str,
        ) -> zbus::fdo::Result<zbus::zvariant::OwnedFd> {
            let (mut reader, writer) =
                std::io::pipe().map_err(|e| zbus::fdo::Error::Failed(e.to_string()))?;
            let n = self.inhibitors.fetch_add(1, Ordering::SeqCst) + 1;
            println!("inhibitor {n} taken {what} {mode}");
            std::thread::spawn(move || {
                let mut buf = [0u8; 64];
                while reader.read(&mut buf).is_ok_and(|read| read > 0) {}
                println!("inhibitor {n} released");
            });
            Ok(std::os::fd::OwnedFd::from(writer).into())
        }

        #[zbus(signal)]
        async fn prepare_for_sleep(emitter: &SignalEmitter<'_>, start: bool) -> zbus::Result<()>;
    }

    struct NetworkManager {
        state: u32,
        connectivity: u32,
    }

    #[zbus::interface(name = "org.freedesktop.NetworkManager")]
    impl NetworkManager {
        #[zbus(property)]
        fn state(&self) -> u32 {
            println!("nm read State");
            self.state
        }

        #[zbus(property)]
        fn connectivity(&self) -> u32 {
            println!("nm read Connectivity");
            self.connectivity
        }

        #[zbus(signal, name = "StateChanged")]
        async fn state_told(emitter: &SignalEmitter<'_>, state: u32) -> zbus::Result<()>;
    }

    struct Args {
        address: String,
        state: u32,
        connectivity: u32,
    }

    fn args() -> anyhow::Result<Args> {
        let mut args = std::env::args().skip(1);
        let address = args.next().context("usage: lifeline-system-bus ADDRESS")?;
        let mut out = Args {
            address,
            state: 70,
            connectivity: 4,
        };
        while let Some(flag) = args.next() {
            let value: u32 = args.next().context("a number after the flag")?.parse()?;
            match flag.as_str() {
                "--state" => out.state = value,
                "--connectivity" => out.connectivity = value,
                _ => bail!("unknown flag {flag}"),
            }
        }
        Ok(out)
    }

    fn name(which: &str) -> anyhow::Result<&'static str> {
        match which {
            "login1" => Ok(LOGIND),
            "nm" => Ok(NM),
            _ => bail!("no service {which:?}: login1 or nm"),
        }
    }

    pub async fn run() -> anyhow::Result<()> {
        let args = args()?;
        let bus = zbus::connection::Builder::address(args.address.as_str())?
            .serve_at(
                LOGIND_PATH,
                Manager {
                    inhibitors: AtomicU32::new(0),
                },
            )?
            .serve_at(
                NM_PATH,
                NetworkManager {
                    state: args.state,
                    connectivity: args.connectivity,
                },
            )?
            .name(LOGIND)?
            .name(NM)?
            .build()
            .await?;
        println!("READY");
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Some(line) = lines.next_line().await? {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            match command(&bus, line).await {
                Ok(()) => println!("ok {line}"),
                Err(e) => println!("failed {line}: {e:#}"),
            }
        }
        Ok(())
    }

    async fn command(bus: &zbus::Connection, line: &str) -> anyhow::Result<()> {
        let (verb, arg) = line.split_once(' ').unwrap_or((line, ""));
        let number = || arg.trim().parse::<u32>().context("a number");
        let server = bus.object_server();
        match verb {
            "sleep" | "wake" => {
                let login = server.interface::<_, Manager>(LOGIND_PATH).await?;
                Manager::prepare_for_sleep(login.signal_emitter(), verb == "sleep").await?;
            }
            "nm-state" | "nm-connectivity" => {
                let value = number()?;
                let nm = server.interface::<_, NetworkManager>(NM_PATH).await?;
                let property = if verb == "nm-state" {
                    nm.get_mut().await.state = value;
                    NetworkManager::state_told(nm.signal_emitter(), value).await?;
                    "State"
                } else {
                    nm.get_mut().await.connectivity = value;
                    "Connectivity"
                };
                // As NetworkManager sends it, the value in the signal (the getters print
                // only what Lifeline reads).
                zbus::fdo::Properties::properties_changed(
                    nm.signal_emitter(),
                    NM.try_into()?,
                    HashMap::from([(property, Value::U32(value))]),
                    Cow::Borrowed(&[]),
                )
                .await?;
            }
            "drop-name" => {
                bus.release_name(name(arg.trim())?).await?;
            }
            "take-name" => {
                bus.request_name(name(arg.trim())?).await?;
            }
            _ => bail!("no command {verb:?}"),
        }
        Ok(())
    }
}
