//! `lifeline-tray`, the app's core on Linux, as a desktop panel and a notification daemon see
//! it: the real binary on a private D-Bus session bus (`dbus-daemon`) with a panel's tray on
//! it (`lifeline-tray-host`, a StatusNotifierWatcher, from lifeline-it), started `--hidden`
//! (no display, no window), with one server that cannot start. The item must register with
//! the watcher; the test reads its tooltip, receives its notification as
//! `org.freedesktop.Notifications` (a canary in the server's config must not be in it),
//! clicks "Start at login" and "Quit Lifeline" in its menu (com.canonical.dbusmenu), and
//! checks the entry written and the clean exit.

#![cfg(target_os = "linux")]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until, timeout};
use zbus::zvariant::{OwnedValue, Value};

const PATIENCE: Duration = Duration::from_secs(20);
const CANARY: &str = "traycanary5Qv8";

/// A private session bus, ended when dropped.
struct Bus {
    daemon: Child,
    address: String,
}

impl Bus {
    fn start() -> Bus {
        let mut daemon = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon runs (the `dbus` package; scripts/setup.sh installs it)");
        let mut address = String::new();
        BufReader::new(daemon.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        assert!(!address.trim().is_empty(), "dbus-daemon said no address");
        Bus {
            daemon,
            address: address.trim().to_owned(),
        }
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// The panel's tray: `lifeline-tray-host` on `bus`, once it owns the watcher's name; the
/// items that register with it, a line each, on the receiver.
struct TrayHost {
    host: Child,
    items: std::sync::mpsc::Receiver<String>,
}

impl TrayHost {
    fn start(bus: &Bus) -> TrayHost {
        let built =
            Path::new(env!("CARGO_BIN_EXE_lifeline-tray")).with_file_name("lifeline-tray-host");
        assert!(
            built.is_file(),
            "{} is missing: build it first (cargo build -p lifeline-it)",
            built.display()
        );
        let mut host = Command::new(&built)
            .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(host.stdout.take().unwrap()).lines();
        let first = lines.next().and_then(Result::ok);
        assert_eq!(
            first.as_deref(),
            Some("READY"),
            "lifeline-tray-host did not start"
        );
        let (tx, items) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Some(item) = line.strip_prefix("ITEM ") {
                    let _ = tx.send(item.to_owned());
                }
            }
        });
        TrayHost { host, items }
    }
}

impl Drop for TrayHost {
    fn drop(&mut self) {
        let _ = self.host.kill();
        let _ = self.host.wait();
    }
}

/// A notification daemon: hands each notification's (summary, body) to the test.
struct Notifications(mpsc::UnboundedSender<(String, String)>);

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Notifications {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        _app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        _actions: Vec<String>,
        _hints: HashMap<String, OwnedValue>,
        _timeout: i32,
    ) -> u32 {
        let _ = self.0.send((summary, body));
        1
    }

    fn get_capabilities(&self) -> Vec<String> {
        vec!["body".into()]
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        ("test".into(), "lifeline".into(), "1".into(), "1.2".into())
    }
}

/// Polls `probe` until it gives a value, or fails the test saying `what`.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut probe: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what} within {PATIENCE:?}");
        sleep_until(Instant::now() + Duration::from_millis(50)).await;
    }
}

/// The tray item's bus name (`org.kde.StatusNotifierItem-PID-N`).
async fn item_name(bus: &zbus::Connection) -> Option<String> {
    let dbus = zbus::fdo::DBusProxy::new(bus).await.ok()?;
    let names = dbus.list_names().await.ok()?;
    names
        .into_iter()
        .map(|n| n.to_string())
        .find(|n| n.starts_with("org.kde.StatusNotifierItem-"))
}

/// A StatusNotifierItem's `ToolTip`: icon name, icon pixmaps, title, description.
type ToolTip = (String, Vec<(i32, i32, Vec<u8>)>, String, String);

async fn tooltip(bus: &zbus::Connection, item: &str) -> Option<String> {
    let props = zbus::fdo::PropertiesProxy::builder(bus)
        .destination(item.to_owned())
        .ok()?
        .path("/StatusNotifierItem")
        .ok()?
        .build()
        .await
        .ok()?;
    let name = zbus::names::InterfaceName::try_from("org.kde.StatusNotifierItem").ok()?;
    let value = props.get(name, "ToolTip").await.ok()?;
    let (_icon, _pixmaps, _title, description): ToolTip = value.try_into().ok()?;
    Some(description)
}

async fn menu(bus: &zbus::Connection, item: &str) -> zbus::Proxy<'static> {
    zbus::Proxy::new(bus, item.to_owned(), "/MenuBar", "com.canonical.dbusmenu")
        .await
        .unwrap()
}

/// A menu item's property, as the panel reads it.
async fn property(menu: &zbus::Proxy<'_>, id: i32, name: &str) -> Option<OwnedValue> {
    menu.call("GetProperty", &(id, name)).await.ok()
}

/// The id of the menu item labelled `label`.
async fn item_id(menu: &zbus::Proxy<'_>, label: &str) -> i32 {
    for id in 1..=20 {
        if let Some(value) = property(menu, id, "label").await
            && String::try_from(value).as_deref() == Ok(label)
        {
            return id;
        }
    }
    panic!("no menu item labelled {label}");
}

async fn click(menu: &zbus::Proxy<'_>, id: i32) -> zbus::Result<()> {
    menu.call("Event", &(id, "clicked", Value::from(0i32), 0u32))
        .await
}

fn fixture_config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("config.json");
    let config = serde_json::json!({"mcpServers": {
        "gone": {"command": dir.join("no-such-server"), "args": [format!("--token={CANARY}")],
                 "env": {"TOKEN": CANARY}}
    }});
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// `lifeline-tray --hidden` on `bus`, its files under `home`, its stderr in `home/stderr.log`.
fn start_tray(bus: &Bus, home: &Path) -> Child {
    let config = fixture_config(home);
    let log = std::fs::File::create(home.join("stderr.log")).unwrap();
    Command::new(env!("CARGO_BIN_EXE_lifeline-tray"))
        .arg("--hidden")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_RUNTIME_DIR", home)
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
        .env("LIFELINE_CONFIG", &config)
        .env("LIFELINE_HISTORY", home.join("history.db"))
        .env("LIFELINE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tray_shows_the_fleet_notifies_and_its_menu_works() {
    let bus_daemon = Bus::start();
    let panel = TrayHost::start(&bus_daemon);
    let home = tempfile::tempdir().unwrap();
    let bus = zbus::connection::Builder::address(bus_daemon.address.as_str())
        .unwrap()
        .build()
        .await
        .unwrap();
    let (told, mut notifications) = mpsc::unbounded_channel();
    bus.object_server()
        .at("/org/freedesktop/Notifications", Notifications(told))
        .await
        .unwrap();
    bus.request_name("org.freedesktop.Notifications")
        .await
        .unwrap();

    let mut tray = start_tray(&bus_daemon, home.path());

    let item = eventually("the tray item on the bus", || item_name(&bus)).await;
    let registered = panel
        .items
        .recv_timeout(PATIENCE)
        .expect("the item registers with the panel's tray within PATIENCE");
    assert_eq!(registered, item);
    let said = eventually("the tooltip to say the server failed", || async {
        tooltip(&bus, &item)
            .await
            .filter(|d| d == "1 failed of 1 server")
    })
    .await;
    assert_eq!(said, "1 failed of 1 server");

    let (summary, body) = timeout(PATIENCE, notifications.recv())
        .await
        .expect("a notification within PATIENCE")
        .unwrap();
    assert_eq!(summary, "gone stopped");
    assert!(body.contains("press Reconnect"), "{body}");
    assert!(!body.contains(CANARY), "a secret in a notification: {body}");

    let menu = menu(&bus, &item).await;
    let login = item_id(&menu, "Start at login").await;
    let ticked = |v: Option<OwnedValue>| v.and_then(|v| i32::try_from(v).ok()).unwrap_or(0);
    assert_eq!(ticked(property(&menu, login, "toggle-state").await), 0);
    click(&menu, login).await.unwrap();
    let entry = home.path().join("config/autostart/Lifeline.desktop");
    let text = eventually("the autostart entry", || async {
        std::fs::read_to_string(&entry).ok()
    })
    .await;
    let exe = Path::new(env!("CARGO_BIN_EXE_lifeline-tray")).with_file_name("lifeline-app");
    assert!(
        text.contains(&format!("Exec=\"{}\" --hidden", exe.display())),
        "{text}"
    );
    eventually("the tick", || async {
        (ticked(property(&menu, login, "toggle-state").await) == 1).then_some(())
    })
    .await;

    // Quit is answered unless the app was already gone from the bus (it may be that quick).
    let quit = item_id(&menu, "Quit Lifeline").await;
    if let Err(e) = click(&menu, quit).await {
        assert!(e.to_string().contains("NoReply"), "{e}");
    }
    let exited = tokio::task::spawn_blocking(move || tray.wait());
    let status = timeout(PATIENCE, exited)
        .await
        .expect("lifeline-tray exits within PATIENCE after Quit")
        .unwrap()
        .unwrap();
    let said = std::fs::read_to_string(home.path().join("stderr.log")).unwrap();
    assert!(status.success(), "{status}: {said}");
    assert!(said.contains("lifeline-app stopped"), "{said}");
    assert!(!said.contains(CANARY), "a secret in the log: {said}");
}

/// On a bus with no panel's tray (plain GNOME), there is nowhere to come back from: started
/// hidden, the app opens its window instead (here, with no display, the window cannot open),
/// and when the window is gone the app quits rather than run on unseen and unquittable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_tray_the_app_does_not_stay_hidden() {
    let bus = Bus::start();
    let home = tempfile::tempdir().unwrap();
    let tray = start_tray(&bus, home.path());
    let exited = tokio::task::spawn_blocking(move || {
        let mut tray = tray;
        tray.wait()
    });
    let status = timeout(PATIENCE, exited)
        .await
        .expect("lifeline-tray quits by itself within PATIENCE")
        .unwrap()
        .unwrap();
    let said = std::fs::read_to_string(home.path().join("stderr.log")).unwrap();
    assert!(status.success(), "{status}: {said}");
    assert!(
        said.contains("nothing on this desktop shows tray icons"),
        "{said}"
    );
    assert!(
        said.contains("window process"),
        "it opened the window: {said}"
    );
    assert!(
        said.contains("quitting (no tray to come back from)"),
        "{said}"
    );
    assert!(said.contains("lifeline-app stopped"), "{said}");
}
