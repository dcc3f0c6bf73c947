//! `lifeline-tray-host`: a desktop panel's tray, as far as an app can tell — the
//! `org.kde.StatusNotifierWatcher` on the session bus (`$DBUS_SESSION_BUS_ADDRESS`), with
//! which tray items register. For the tests and the benchmark, where no desktop runs: with
//! it, `lifeline-tray` has a tray to live in, as under KDE or GNOME with the AppIndicator
//! extension; without it, closing the window quits. Prints `READY` once it owns the name,
//! then `ITEM SERVICE` for each item that registers.

#[cfg(target_os = "linux")]
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    watcher::run().await
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("lifeline-tray-host is a StatusNotifierWatcher, for Linux desktops' D-Bus");
    std::process::exit(2);
}

#[cfg(target_os = "linux")]
mod watcher {
    use zbus::message::Header;
    use zbus::object_server::SignalEmitter;

    struct Watcher {
        items: Vec<String>,
    }

    #[zbus::interface(name = "org.kde.StatusNotifierWatcher")]
    impl Watcher {
        /// `service` is the item's bus name, or an object path on the caller's connection.
        async fn register_status_notifier_item(
            &mut self,
            service: &str,
            #[zbus(header)] header: Header<'_>,
            #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
        ) {
            let item = match header.sender() {
                Some(sender) if service.starts_with('/') => format!("{sender}{service}"),
                _ => service.to_owned(),
            };
            println!("ITEM {item}");
            self.items.push(item.clone());
            let _ = Self::status_notifier_item_registered(&emitter, &item).await;
        }

        fn register_status_notifier_host(&self, _service: &str) {}

        #[zbus(property)]
        fn registered_status_notifier_items(&self) -> Vec<String> {
            self.items.clone()
        }

        #[zbus(property)]
        fn is_status_notifier_host_registered(&self) -> bool {
            true
        }

        #[zbus(property)]
        fn protocol_version(&self) -> i32 {
            0
        }

        #[zbus(signal)]
        async fn status_notifier_item_registered(
            emitter: &SignalEmitter<'_>,
            service: &str,
        ) -> zbus::Result<()>;
    }

    pub async fn run() -> anyhow::Result<()> {
        let _bus = zbus::connection::Builder::session()?
            .serve_at("/StatusNotifierWatcher", Watcher { items: Vec::new() })?
            .name("org.kde.StatusNotifierWatcher")?
            .build()
            .await?;
        println!("READY");
        std::future::pending::<()>().await;
        Ok(())
    }
}
