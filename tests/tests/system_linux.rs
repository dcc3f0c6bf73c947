//! Lifeline's Linux sources of the machine's sleep and network (issue 29), end to end in this
//! process: the process's watch (`lifeline_core::system::watch`) starts with no system bus at
//! all, says so in one line and goes on; then a private bus comes (`dbus-daemon`, where
//! `DBUS_SYSTEM_BUS_ADDRESS` points), with `lifeline-system-bus`'s stand-ins for logind and
//! NetworkManager on it, and the test walks them through sleeps and wakes, the network going
//! and coming back, each service leaving the bus and coming back, and the bus itself going
//! and coming back. It asserts on what the supervisors hear (`watch::subscribe`), on the
//! inhibitor as logind sees it (its descriptor's other end), and on the log.
//!
//! One test, walked in order: the watch is one per process, and this file is a process of
//! its own. The machine's own routes may speak for the network while NetworkManager does not
//! (netlink), so a network event the test did not cause is passed over; nothing else is.

#![cfg(target_os = "linux")]

use lifeline_core::system::SystemEvent::{self, Awake, Offline, Online, Sleeping};
use lifeline_core::system::watch;
use lifeline_it::system_bus::{Daemon, StandIns};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

const PATIENCE: Duration = Duration::from_secs(20);

#[test]
fn the_linux_sources_follow_the_system_bus_and_do_without_it() {
    let dir = std::env::temp_dir().join(format!("lifeline-system-linux-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("system_bus_socket");
    let address = format!("unix:path={}", socket.display());
    // SAFETY: this file's one test sets it before its runtime, or any thread of its own, runs.
    unsafe { std::env::set_var("DBUS_SYSTEM_BUS_ADDRESS", &address) };
    let logs = Logs::install();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(walk(&address, &socket, logs));
    let _ = std::fs::remove_dir_all(&dir);
}

async fn walk(address: &str, socket: &Path, mut logs: Logs) {
    let exe = Path::new(env!("CARGO_BIN_EXE_lifeline-system-bus"));

    // No bus: one line, and the watch goes on.
    watch::start();
    let mut heard = watch::subscribe().expect("this process watches");
    let hooks = Arc::new(AtomicUsize::new(0));
    let ran = Arc::clone(&hooks);
    watch::before_sleep(Arc::new(move || {
        ran.fetch_add(1, Ordering::SeqCst);
    }));
    logs.expect(
        "no D-Bus system bus: Lifeline notices sleep by the clock-leap detector and follows \
         the network by netlink's routes",
    )
    .await;

    // The bus comes, with logind and NetworkManager: an inhibitor is taken.
    let daemon = Daemon::start(address);
    let mut services = StandIns::start(exe, address, &[]);
    services
        .expect("inhibitor 1 taken sleep delay", PATIENCE)
        .await;
    logs.expect("the D-Bus system bus is back").await;

    // A sleep: told, the hook runs, and only then is the inhibitor let go.
    services.run("sleep", PATIENCE).await;
    expect(&mut heard, "sleeping", |e| e == Sleeping).await;
    services.expect("inhibitor 1 released", PATIENCE).await;
    assert_eq!(
        hooks.load(Ordering::SeqCst),
        1,
        "the hook ran before the inhibitor was released"
    );

    // The wake: told with the time slept (none to speak of), and a new inhibitor.
    services.run("wake", PATIENCE).await;
    let woke = expect(&mut heard, "awake", |e| matches!(e, Awake { .. })).await;
    assert!(
        matches!(woke, Awake { slept: Some(s) } if s < Duration::from_secs(5)),
        "{woke:?}: measured, and short, as this machine did not sleep"
    );
    services
        .expect("inhibitor 2 taken sleep delay", PATIENCE)
        .await;

    // NetworkManager's state and connectivity.
    for (command, want) in [
        ("nm-state 20", Offline),
        ("nm-state 70", Online),
        ("nm-connectivity 2", Offline),
        ("nm-connectivity 4", Online),
        ("nm-state 40", Offline),
    ] {
        services.run(command, PATIENCE).await;
        expect(&mut heard, command, |e| e == want).await;
    }

    // Still offline after a wake, which takes the network for back: told again.
    services.run("sleep", PATIENCE).await;
    expect(&mut heard, "sleeping", |e| e == Sleeping).await;
    services.expect("inhibitor 2 released", PATIENCE).await;
    services.run("wake", PATIENCE).await;
    expect(&mut heard, "awake", |e| matches!(e, Awake { .. })).await;
    expect(&mut heard, "offline again", |e| e == Offline).await;
    services.expect("inhibitor 3 taken", PATIENCE).await;
    services.run("nm-state 70", PATIENCE).await;
    expect(&mut heard, "online", |e| e == Online).await;

    // NetworkManager leaves the bus (netlink's routes speak meanwhile) and comes back.
    services.run("drop-name nm", PATIENCE).await;
    logs.expect("NetworkManager went away: Lifeline follows the network by netlink's routes")
        .await;
    services.run("take-name nm", PATIENCE).await;
    logs.expect("NetworkManager is back on the system bus")
        .await;
    services.expect("nm read State", PATIENCE).await;
    services.run("nm-state 20", PATIENCE).await;
    expect(&mut heard, "offline from the NetworkManager back", |e| {
        e == Offline
    })
    .await;
    services.run("nm-state 70", PATIENCE).await;
    expect(&mut heard, "online from the NetworkManager back", |e| {
        e == Online
    })
    .await;

    // logind leaves (its inhibitor goes with it) and comes back, and a sleep still works.
    services.run("drop-name login1", PATIENCE).await;
    services.expect("inhibitor 3 released", PATIENCE).await;
    logs.expect("logind went away: Lifeline notices sleep by the clock-leap detector")
        .await;
    services.run("take-name login1", PATIENCE).await;
    services.expect("inhibitor 4 taken", PATIENCE).await;
    logs.expect("logind is back on the system bus").await;
    services.run("sleep", PATIENCE).await;
    expect(&mut heard, "sleeping", |e| e == Sleeping).await;
    services.expect("inhibitor 4 released", PATIENCE).await;
    assert_eq!(
        hooks.load(Ordering::SeqCst),
        3,
        "the hook ran at each sleep"
    );
    services.run("wake", PATIENCE).await;
    expect(&mut heard, "awake", |e| matches!(e, Awake { .. })).await;
    services.expect("inhibitor 5 taken", PATIENCE).await;

    // The bus goes away and comes back.
    drop(services);
    drop(daemon);
    logs.expect("the D-Bus system bus went away").await;
    let _ = std::fs::remove_file(socket);
    let _daemon = Daemon::start(address);
    let mut services = StandIns::start(exe, address, &[]);
    services.expect("inhibitor 1 taken", PATIENCE).await;
    logs.expect("the D-Bus system bus is back").await;
    services.run("nm-state 20", PATIENCE).await;
    expect(&mut heard, "offline on the bus that is back", |e| {
        e == Offline
    })
    .await;

    // Said once each, and never as a warning or an error.
    let all = logs.all();
    eprintln!("DEBUG {all:#?}");
    let count = |part: &str| all.iter().filter(|l| l.contains(part)).count();
    assert_eq!(count("no D-Bus system bus"), 1, "{all:#?}");
    assert_eq!(count("the D-Bus system bus went away"), 1, "{all:#?}");
    assert!(
        !all.iter()
            .any(|l| l.contains("WARN") || l.contains("ERROR")),
        "{all:#?}"
    );
}

/// Waits for what the supervisors hear to match `want`; a network event before it passes
/// (the machine's own routes), anything else fails, as does nothing within `PATIENCE`.
async fn expect(
    heard: &mut broadcast::Receiver<SystemEvent>,
    what: &str,
    want: impl Fn(SystemEvent) -> bool,
) -> SystemEvent {
    let mut passed = Vec::new();
    let found = tokio::time::timeout(PATIENCE, async {
        loop {
            let event = heard.recv().await.expect("the watch goes on");
            if want(event) {
                return event;
            }
            assert!(
                matches!(event, Online | Offline),
                "{what}: heard {event:?} first (and before it {passed:?})"
            );
            passed.push(event);
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("{what}: not heard within {PATIENCE:?}; heard {passed:?}"))
}

/// The log lines of `lifeline_core::system`, as they are written.
struct Logs {
    all: Arc<Mutex<Vec<String>>>,
    lines: mpsc::UnboundedReceiver<String>,
}

#[derive(Clone)]
struct Writer {
    all: Arc<Mutex<Vec<String>>>,
    tx: mpsc::UnboundedSender<String>,
}

impl std::io::Write for Writer {
    /// One event's line, whole (the formatter writes each at once).
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let line = String::from_utf8_lossy(buf).trim_end().to_owned();
        self.all.lock().unwrap().push(line.clone());
        let _ = self.tx.send(line);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Writer {
    type Writer = Writer;

    fn make_writer(&'a self) -> Writer {
        self.clone()
    }
}

impl Logs {
    fn install() -> Logs {
        let all = Arc::new(Mutex::new(Vec::new()));
        let (tx, lines) = mpsc::unbounded_channel();
        let writer = Writer {
            all: Arc::clone(&all),
            tx,
        };
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "lifeline_core::system=info",
            ))
            .with_writer(writer)
            .with_ansi(false)
            .without_time()
            .finish();
        tracing_subscriber::util::SubscriberInitExt::init(subscriber);
        Logs { all, lines }
    }

    /// Waits for a line that has `part` in it, the lines before it passed over.
    async fn expect(&mut self, part: &str) {
        let found = tokio::time::timeout(PATIENCE, async {
            while let Some(line) = self.lines.recv().await {
                if line.contains(part) {
                    return;
                }
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "no log line with {part:?} within {PATIENCE:?}; the log: {:#?}",
            self.all()
        );
    }

    fn all(&self) -> Vec<String> {
        self.all.lock().unwrap().clone()
    }
}
