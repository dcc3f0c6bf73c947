//! A system bus of a test's own (Linux): `dbus-daemon` listening where the test says, which
//! Lifeline is pointed at with `DBUS_SYSTEM_BUS_ADDRESS`, and on it `lifeline-system-bus`'s
//! stand-ins for logind and NetworkManager, driven by commands and heard line by line.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;
use tokio::sync::mpsc;

/// `dbus-daemon`, with the session bus's permissive policy, ended when dropped.
pub struct Daemon {
    daemon: Child,
}

impl Daemon {
    /// Starts it listening on `address` (`unix:path=…`); returns once it listens.
    pub fn start(address: &str) -> Daemon {
        let mut daemon = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .arg(format!("--address={address}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon runs (the `dbus` package; scripts/setup.sh installs it)");
        let mut said = String::new();
        BufReader::new(daemon.stdout.take().unwrap())
            .read_line(&mut said)
            .unwrap();
        assert!(
            said.starts_with(address),
            "dbus-daemon said {said:?}, not that it listens on {address}"
        );
        Daemon { daemon }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// `lifeline-system-bus` (its path, `exe`, from the test's `CARGO_BIN_EXE_…`) on a bus,
/// ended when dropped.
pub struct StandIns {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<String>,
    /// What they said while `run` waited for its `ok`, in order, for `expect` to read first.
    said: VecDeque<String>,
}

impl StandIns {
    /// Starts the stand-ins on `address` with `args` (`--state N`, `--connectivity N`);
    /// returns once they own their names.
    pub fn start(exe: &Path, address: &str, args: &[&str]) -> StandIns {
        let mut child = Command::new(exe)
            .arg(address)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", exe.display()));
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = out.next().and_then(Result::ok);
        assert_eq!(
            first.as_deref(),
            Some("READY"),
            "the stand-ins did not start"
        );
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in out.map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let stdin = child.stdin.take().unwrap();
        StandIns {
            child,
            stdin,
            lines,
            said: VecDeque::new(),
        }
    }

    /// Sends one command (`sleep`, `nm-state 20`, …) without waiting for it.
    pub fn send(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").expect("the stand-ins read their commands");
    }

    /// Sends a command and waits for its `ok`, keeping what else they say for `expect`
    /// (what Lifeline does about it may come first).
    pub async fn run(&mut self, command: &str, within: Duration) {
        self.send(command);
        let ok = format!("ok {command}");
        let done = tokio::time::timeout(within, async {
            while let Some(line) = self.lines.recv().await {
                if line == ok {
                    return Ok(());
                }
                if line.starts_with("failed ") {
                    return Err(line);
                }
                self.said.push_back(line);
            }
            Err("they ended".to_owned())
        })
        .await;
        match done {
            Ok(Ok(())) => {}
            Ok(Err(why)) => panic!("{command:?}: {why}"),
            Err(_) => panic!("{command:?} not done within {within:?}"),
        }
    }

    /// The next line that begins with `prefix`, the lines before it passed over; panics
    /// naming them when none comes `within`.
    pub async fn expect(&mut self, prefix: &str, within: Duration) -> String {
        let mut passed = Vec::new();
        while let Some(line) = self.said.pop_front() {
            if line.starts_with(prefix) {
                return line;
            }
            passed.push(line);
        }
        let found = tokio::time::timeout(within, async {
            while let Some(line) = self.lines.recv().await {
                if line.starts_with(prefix) {
                    return Some(line);
                }
                passed.push(line);
            }
            None
        })
        .await;
        match found {
            Ok(Some(line)) => line,
            Ok(None) => panic!("the stand-ins ended before {prefix:?}; they said {passed:?}"),
            Err(_) => {
                panic!("no {prefix:?} from the stand-ins within {within:?}; they said {passed:?}")
            }
        }
    }
}

impl Drop for StandIns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
