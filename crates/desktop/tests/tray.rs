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
use tokio::time::timeout;
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

    /// A connection of the test's own to the bus.
    async fn connect(&self) -> zbus::Connection {
        zbus::connection::Builder::address(self.address.as_str())
            .unwrap()
            .build()
            .await
            .unwrap()
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

/// What `probe` gives, asked again on every signal on `bus` (a name taken, a tooltip or a
/// menu changed: what a panel itself waits on); fails the test saying `what` after
/// `PATIENCE`. Subscribed before the first probe, so a signal between a probe and the wait
/// still wakes it.
async fn on_signal<T, F: std::future::Future<Output = Option<T>>>(
    bus: &zbus::Connection,
    what: &str,
    mut probe: impl FnMut() -> F,
) -> T {
    use futures_util::StreamExt;
    let rule = zbus::MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .build();
    let mut signals = zbus::MessageStream::for_match_rule(rule, bus, None)
        .await
        .expect("subscribing to the bus's signals");
    let found = async {
        loop {
            if let Some(value) = probe().await {
                return value;
            }
            // Any signal, even one zbus could not read, is a reason to look again.
            let _signal = signals
                .next()
                .await
                .expect("the bus connection lives as long as this wait");
        }
    };
    timeout(PATIENCE, found)
        .await
        .unwrap_or_else(|_| panic!("{what} within {PATIENCE:?}"))
}

/// What `probe` gives, asked again on every write in `dir` (inotify); fails the test saying
/// `what` after `PATIENCE`. Watched before the first probe, as `on_signal`.
async fn on_write<T>(dir: &Path, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    use notify::Watcher;
    let (tx, mut written) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
        let _ = tx.send(());
    })
    .unwrap_or_else(|e| panic!("watching {}: {e}", dir.display()));
    watcher
        .watch(dir, notify::RecursiveMode::NonRecursive)
        .unwrap_or_else(|e| panic!("watching {}: {e}", dir.display()));
    let found = async {
        loop {
            if let Some(value) = probe() {
                return value;
            }
            written
                .recv()
                .await
                .expect("the watcher lives as long as this wait");
        }
    };
    timeout(PATIENCE, found)
        .await
        .unwrap_or_else(|_| panic!("{what} within {PATIENCE:?}"))
}

/// The tray item's bus name, once its tooltip says that the config's one server failed.
async fn failed_item(bus: &zbus::Connection) -> String {
    let item = on_signal(bus, "the tray item on the bus", || item_name(bus)).await;
    let said = on_signal(bus, "the tooltip to say the server failed", || async {
        tooltip(bus, &item)
            .await
            .filter(|d| d == "1 failed of 1 server")
    })
    .await;
    assert_eq!(said, "1 failed of 1 server");
    item
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
    app(env!("CARGO_BIN_EXE_lifeline-tray"), bus, home, "stderr.log")
        .arg("--hidden")
        .spawn()
        .unwrap()
}

/// `lifeline-app`, as a person starts it (on Linux it becomes `lifeline-tray`).
fn lifeline_app() -> std::path::PathBuf {
    let built = Path::new(env!("CARGO_BIN_EXE_lifeline-tray")).with_file_name("lifeline-app");
    assert!(
        built.is_file(),
        "{} is missing: build it first (cargo build -p lifeline-app)",
        built.display()
    );
    built
}

/// `program` on `bus` with no display, its files under `home` (the config's one server
/// cannot start), its stderr in `home/<stderr>`.
fn app(program: impl AsRef<std::ffi::OsStr>, bus: &Bus, home: &Path, stderr: &str) -> Command {
    let config = fixture_config(home);
    let log = std::fs::File::create(home.join(stderr)).unwrap();
    let mut command = Command::new(program);
    command
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
        .stderr(log);
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tray_shows_the_fleet_notifies_and_its_menu_works() {
    let bus_daemon = Bus::start();
    let panel = TrayHost::start(&bus_daemon);
    let home = tempfile::tempdir().unwrap();
    let bus = bus_daemon.connect().await;
    let (told, mut notifications) = mpsc::unbounded_channel();
    bus.object_server()
        .at("/org/freedesktop/Notifications", Notifications(told))
        .await
        .unwrap();
    bus.request_name("org.freedesktop.Notifications")
        .await
        .unwrap();

    let tray = start_tray(&bus_daemon, home.path());

    let item = failed_item(&bus).await;
    let registered = panel
        .items
        .recv_timeout(PATIENCE)
        .expect("the item registers with the panel's tray within PATIENCE");
    assert_eq!(registered, item);

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
    // The tick follows what the entry says, once it is written.
    on_signal(&bus, "the tick", || async {
        (ticked(property(&menu, login, "toggle-state").await) == 1).then_some(())
    })
    .await;
    let entry = home.path().join("config/autostart/Lifeline.desktop");
    let text = std::fs::read_to_string(&entry)
        .unwrap_or_else(|e| panic!("the ticked autostart entry {}: {e}", entry.display()));
    let exe = Path::new(env!("CARGO_BIN_EXE_lifeline-tray")).with_file_name("lifeline-app");
    assert!(
        text.contains(&format!("Exec=\"{}\" --hidden", exe.display())),
        "{text}"
    );

    // Quit is answered unless the app was already gone from the bus (it may be that quick).
    let quit = item_id(&menu, "Quit Lifeline").await;
    if let Err(e) = click(&menu, quit).await {
        assert!(e.to_string().contains("NoReply"), "{e}");
    }
    let status = exit_of(tray, "lifeline-tray after Quit").await;
    let said = std::fs::read_to_string(home.path().join("stderr.log")).unwrap();
    assert!(status.success(), "{status}: {said}");
    assert!(said.contains("lifeline-app stopped"), "{said}");
    assert!(!said.contains(CANARY), "a secret in the log: {said}");
}

/// An X server's TCP port (6000 + N) on 127.0.0.1 where something accepts and hangs up at
/// once: the app's display check finds a display there, and GTK, asked to use it, refuses.
/// Returns `DISPLAY` for it.
fn display_gtk_refuses() -> String {
    let (listener, n) = (50..200)
        .find_map(|n| {
            std::net::TcpListener::bind(("127.0.0.1", 6000 + n))
                .ok()
                .map(|l| (l, n))
        })
        .expect("a free port in 6050..6200");
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            drop(conn);
        }
    });
    format!("127.0.0.1:{n}")
}

/// An X display number nothing answers at: no socket file, no abstract socket.
fn unused_display() -> String {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixStream};
    let answers = |n: u16| {
        let path = format!("/tmp/.X11-unix/X{n}");
        Path::new(&path).exists()
            || SocketAddr::from_abstract_name(path.as_bytes())
                .and_then(|a| UnixStream::connect_addr(&a))
                .is_ok()
    };
    let n = (4200..4300)
        .find(|n| !answers(*n))
        .expect("a free X display number in 4200..4300");
    format!(":{n}")
}

/// Sends `child` SIGTERM, as a logout, `systemctl --user stop` or `kill` does.
fn sigterm(child: &Child) {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success(), "kill -TERM {}: {killed}", child.id());
}

/// The process's end, within `PATIENCE`.
async fn exit_of(child: Child, what: &str) -> std::process::ExitStatus {
    let exited = tokio::task::spawn_blocking(move || {
        let mut child = child;
        child.wait()
    });
    timeout(PATIENCE, exited)
        .await
        .unwrap_or_else(|_| panic!("{what} exits within {PATIENCE:?}"))
        .unwrap()
        .unwrap()
}

/// On a bus with no panel's tray (plain GNOME), there is nowhere to come back from: started
/// hidden, the app opens its window instead, and when the window is gone the app quits
/// rather than run on unseen and unquittable. Here the window finds a display GTK refuses:
/// it says so in one line (no panic), and the app ends with `display::EXIT`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_tray_the_app_does_not_stay_hidden() {
    lifeline_app();
    let bus = Bus::start();
    let home = tempfile::tempdir().unwrap();
    let tray = app(
        env!("CARGO_BIN_EXE_lifeline-tray"),
        &bus,
        home.path(),
        "stderr.log",
    )
    .arg("--hidden")
    .env("DISPLAY", display_gtk_refuses())
    .spawn()
    .unwrap();
    let status = exit_of(tray, "lifeline-tray, by itself,").await;
    let said = std::fs::read_to_string(home.path().join("stderr.log")).unwrap();
    assert_eq!(status.code(), Some(3), "{status}: {said}");
    assert!(
        said.contains("nothing on this desktop shows tray icons"),
        "{said}"
    );
    assert!(
        said.contains("window process"),
        "it opened the window: {said}"
    );
    assert!(
        said.contains("lifeline-app: no window can open: GTK cannot open the display"),
        "{said}"
    );
    assert!(
        said.contains("no display for the window and no tray: quitting"),
        "{said}"
    );
    assert!(!said.contains("panicked"), "{said}");
    assert!(said.contains("lifeline-app stopped"), "{said}");
}

/// Started where there is no display (over SSH, in a container) and no tray, `lifeline-app`
/// says in one line what is missing and what to run instead, and exits non-zero: with no
/// `DISPLAY` or `WAYLAND_DISPLAY` at all, and with a `DISPLAY` nothing answers at.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_display_or_a_tray_the_app_says_so_in_one_line() {
    let program = lifeline_app();
    let bus = Bus::start();
    for (display, missing) in [
        (
            None,
            "neither DISPLAY nor WAYLAND_DISPLAY is set".to_owned(),
        ),
        Some(unused_display())
            .map(|d| {
                (
                    Some(d.clone()),
                    format!("no X server answers at DISPLAY={d}"),
                )
            })
            .unwrap(),
    ] {
        let home = tempfile::tempdir().unwrap();
        let mut command = app(&program, &bus, home.path(), "stderr.log");
        if let Some(display) = &display {
            command.env("DISPLAY", display);
        }
        let status = exit_of(command.spawn().unwrap(), "lifeline-app").await;
        let said = std::fs::read_to_string(home.path().join("stderr.log")).unwrap();
        assert_eq!(status.code(), Some(3), "{display:?}: {status}: {said}");
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(lines.len(), 1, "{display:?}: one line: {said}");
        let line = lines[0];
        assert!(
            line.starts_with("lifeline-app: no window can open: ") && line.contains(&missing),
            "{display:?}: {line}"
        );
        assert!(
            line.contains("`lifeline watch`") && line.contains("`lifeline serve`"),
            "{line}"
        );
        assert!(
            !said.contains("panicked") && !said.contains("backtrace"),
            "{said}"
        );
    }
}

/// With no display but a panel's tray on the session bus, the core stays in the tray: a
/// second start reaches it over its instance socket (it is asked to show its window, which
/// cannot open, and says so), and it runs on until told to quit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_display_the_app_stays_in_the_tray_until_told_to_quit() {
    let program = lifeline_app();
    let bus_daemon = Bus::start();
    let panel = TrayHost::start(&bus_daemon);
    let home = tempfile::tempdir().unwrap();
    let mut core = app(&program, &bus_daemon, home.path(), "stderr.log")
        .spawn()
        .unwrap();
    panel
        .items
        .recv_timeout(PATIENCE)
        .expect("the item registers with the panel's tray within PATIENCE");

    let second = app(&program, &bus_daemon, home.path(), "second.log")
        .spawn()
        .unwrap();
    let status = exit_of(second, "the second lifeline-app").await;
    let said = std::fs::read_to_string(home.path().join("second.log")).unwrap();
    assert!(status.success(), "{status}: {said}");
    assert!(
        said.contains("lifeline-app is already running") && said.contains("showed its window"),
        "the first one's socket did not answer: {said}"
    );
    let log = home.path().join("stderr.log");
    let said = on_write(
        home.path(),
        "the core to say the window cannot open",
        || {
            std::fs::read_to_string(&log).ok().filter(|s| {
                s.contains("supervising from the tray") && s.contains("no display for the window")
            })
        },
    )
    .await;
    assert!(
        said.contains("neither DISPLAY nor WAYLAND_DISPLAY is set"),
        "{said}"
    );
    assert!(!said.contains("panicked"), "{said}");
    assert!(
        core.try_wait().unwrap().is_none(),
        "the core ended without being told to: {said}"
    );

    sigterm(&core);
    let status = exit_of(core, "lifeline-app after SIGTERM").await;
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{status}: {said}");
    assert!(said.contains("lifeline-app stopped"), "{said}");
}

/// This run's events in the history file the app wrote, oldest first.
fn recorded_events(history: &Path) -> Vec<serde_json::Value> {
    let conn = rusqlite::Connection::open(history).unwrap();
    let mut rows = conn
        .prepare("SELECT json FROM events WHERE run = (SELECT MAX(id) FROM runs) ORDER BY id")
        .unwrap();
    rows.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|json| serde_json::from_str(&json.unwrap()).unwrap())
        .collect()
}

/// SIGTERM (a logout, `systemctl --user stop`, `kill`) closes the app as Quit does, and the
/// history then holds the run to its last event, the server's `stopping`. The quit does not
/// wait out the recorder's drain for a bus that never ends (it used to, on every quit, and
/// then warned `history: the last events were not all recorded`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_quits_with_the_last_event_in_the_history_and_no_drain_wait() {
    let bus_daemon = Bus::start();
    let _panel = TrayHost::start(&bus_daemon);
    let home = tempfile::tempdir().unwrap();
    let bus = bus_daemon.connect().await;
    let tray = start_tray(&bus_daemon, home.path());
    failed_item(&bus).await;

    sigterm(&tray);
    let status = exit_of(tray, "lifeline-tray after SIGTERM").await;
    let said = std::fs::read_to_string(home.path().join("stderr.log")).unwrap();
    assert!(status.success(), "{status}: {said}");
    assert!(said.contains("SIGTERM: closing"), "{said}");
    assert!(said.contains("lifeline-app stopped"), "{said}");
    assert!(
        !said.contains("history:"),
        "the quit waited out the history's drain: {said}"
    );

    let events = recorded_events(&home.path().join("history.db"));
    let last = events.last().expect("the run's events are in the history");
    assert_eq!(
        (&last["server"], &last["type"], &last["state"]),
        (&"gone".into(), &"state".into(), &"stopping".into()),
        "the run's last event: {last}"
    );
}
