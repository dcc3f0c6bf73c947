//! One app per history directory. A second `lifeline-app` started while one runs would
//! supervise every server twice (two processes per stdio server, twice the requests) and
//! find the history locked; instead it asks the running one to show its window and exits.
//!
//! The first instance holds an exclusive lock on `app.lock` for its whole life (the OS
//! drops it when the process ends, however it ends) and listens on the directory's local
//! endpoint (`lifeline_core::local_socket`: `app.sock` on Unix, a named pipe on Windows). A
//! later one finds the lock taken, connects, writes `show`, and exits 0.
//!
//! The same endpoint serves `lifeline connect NAME` bridges: a line `attach v1 NAME`
//! (`lifeline_core::gateway::attach`) is answered `ok` and the connection becomes a host's
//! gateway session on the app's own supervisor for NAME (or `error KIND MESSAGE`).
//!
//! And the app's own window process: `window v1` (window.rs) and `ipc v1` (ipc.rs), handed
//! to `Guard::serve`'s `on_line` with the rest of their connection.

use lifeline_core::gateway::attach::{Answer, Refusal, Request};
use lifeline_core::gateway::{self, GatewayOptions};
use lifeline_core::local_socket::{self, Listener, Stream};
use lifeline_core::supervisor::Supervisor;
use std::fs::{File, TryLockError};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How long a second instance keeps trying to reach a first one that holds the lock but
/// is not listening yet (it is starting up).
const REACH_FOR: Duration = Duration::from_secs(3);
const REACH_EVERY: Duration = Duration::from_millis(100);

/// What `claim` found.
pub enum Claim {
    /// This is the only instance; keep the guard for the life of the app.
    First(Guard),
    /// Another instance runs (it was asked to show its window when `shown` is true).
    Running { shown: bool, dir: PathBuf },
}

pub struct Guard {
    /// Held, never read: the lock lives as long as this handle.
    _lock: Option<File>,
    listener: Option<Listener>,
}

/// The directory that makes instances the same: where the history lives.
pub fn dir() -> Option<PathBuf> {
    lifeline_core::history::resolve_path().and_then(|p| p.parent().map(Path::to_owned))
}

/// Claims `dir` for this process. Called within a tokio runtime's context (`Runtime::enter`),
/// not on one of its tasks: the listener is the runtime's. Anything that stops the guard from working (no
/// directory, no lock support) lets the app run unguarded rather than not at all.
pub fn claim(dir: &Path) -> Claim {
    let unguarded = || {
        Claim::First(Guard {
            _lock: None,
            listener: None,
        })
    };
    if lifeline_core::private::create_dir(dir).is_err() {
        return unguarded();
    }
    let Ok(lock) = lifeline_core::private::open_lock(&dir.join("app.lock")) else {
        return unguarded();
    };
    match lock.try_lock() {
        Ok(()) => {
            let listener = Listener::bind(dir)
                .inspect_err(|e| tracing::warn!("instance: cannot listen on {} ({e}); a second instance will not be able to show this window", local_socket::address(dir)))
                .ok();
            Claim::First(Guard {
                _lock: Some(lock),
                listener,
            })
        }
        Err(TryLockError::WouldBlock) => {
            let shown = ask_to_show(dir);
            Claim::Running {
                shown,
                dir: dir.to_owned(),
            }
        }
        Err(TryLockError::Error(e)) => {
            tracing::warn!(
                "instance: cannot lock {} ({e}); running unguarded",
                dir.display()
            );
            unguarded()
        }
    }
}

/// The guard to serve and the directory its socket is in, for the window process to reach
/// this one: the instance directory's socket, or, when there is none (no directory, no lock
/// support, a failed bind), one in a private directory of this process's own, so that the
/// window still opens (a second instance and `lifeline connect` will not find it then).
pub fn endpoint(guard: Option<Guard>, dir: Option<PathBuf>) -> (Guard, Option<PathBuf>) {
    let lock = match (guard, dir) {
        (Some(guard), Some(dir)) if guard.listener.is_some() => return (guard, Some(dir)),
        (guard, _) => guard.and_then(|g| g._lock),
    };
    let own = std::env::temp_dir().join(format!("lifeline-app-{}", std::process::id()));
    let listener = lifeline_core::private::create_dir(&own).and_then(|()| Listener::bind(&own));
    match listener {
        Ok(listener) => {
            tracing::warn!(
                "instance: listening on {} instead; a second instance will not find this one",
                local_socket::address(&own)
            );
            let guard = Guard {
                _lock: lock,
                listener: Some(listener),
            };
            (guard, Some(own))
        }
        Err(e) => {
            tracing::error!(
                "instance: cannot listen on {} either ({e}); the window cannot open",
                local_socket::address(&own)
            );
            let guard = Guard {
                _lock: lock,
                listener: None,
            };
            (guard, None)
        }
    }
}

fn ask_to_show(dir: &Path) -> bool {
    tokio::runtime::Handle::current().block_on(async {
        let tries = REACH_FOR.as_millis() / REACH_EVERY.as_millis();
        for _ in 0..=tries {
            if let Ok(mut s) = local_socket::connect(dir).await {
                return s.write_all(b"show\n").await.is_ok();
            }
            tokio::time::sleep(REACH_EVERY).await;
        }
        false
    })
}

/// What an attach request gets: the supervisor to serve the host with and how, or why not.
pub type Attached = Result<(Arc<Supervisor>, GatewayOptions), (Refusal, String)>;

/// Answers an attach request (the app: `AppState::attach`).
pub type OnAttach =
    Arc<dyn Fn(Request) -> Pin<Box<dyn Future<Output = Attached> + Send>> + Send + Sync>;

/// Serves a connection whose first line (given, trimmed) is neither `show` nor an attach
/// request: the window process's (`ipc v1`, `window v1`). Ignores lines it does not know.
pub type OnLine = Arc<
    dyn Fn(String, BufReader<Stream>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync,
>;

impl Guard {
    /// Answers later instances and bridges on a task of its own: `show` calls `on_show`;
    /// `attach v1 NAME` asks `on_attach` and serves the host on the connection; any other
    /// line goes to `on_line` with the connection.
    pub fn serve(
        mut self,
        on_show: impl Fn() + Send + Sync + 'static,
        on_attach: OnAttach,
        on_line: OnLine,
    ) {
        let Some(mut listener) = self.listener.take() else {
            // Nothing to serve, but the lock must still be held for the app's life.
            std::mem::forget(self);
            return;
        };
        let on_show = std::sync::Arc::new(on_show);
        tokio::spawn(async move {
            let _held = self;
            loop {
                let stream = match listener.accept().await {
                    Ok(stream) => stream,
                    Err(e) => {
                        tracing::warn!("instance: a later instance could not connect ({e})");
                        continue;
                    }
                };
                let on_show = on_show.clone();
                let on_attach = on_attach.clone();
                let on_line = on_line.clone();
                tokio::spawn(async move {
                    let mut line = String::new();
                    let mut reader = BufReader::new(stream);
                    let read = reader.read_line(&mut line);
                    let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), read).await else {
                        return;
                    };
                    if line.trim() == "show" {
                        tracing::info!("another instance was started; showing this window instead");
                        on_show();
                    } else if let Some(request) = Request::parse(&line) {
                        attach(reader, request, &on_attach).await;
                    } else {
                        on_line(line.trim().to_owned(), reader).await;
                    }
                });
            }
        });
    }
}

/// Answers an attach request and, when it is granted, serves the host on the connection
/// until the bridge closes it. Whatever the reader buffered past the request line is the
/// host's: the reader itself is the session's input.
async fn attach(
    mut reader: BufReader<Stream>,
    request: Result<Request, Refusal>,
    on_attach: &OnAttach,
) {
    let attached = match request {
        Ok(request) => {
            let name = request.name.clone();
            on_attach(request).await.map(|a| (name, a))
        }
        Err(kind) => Err((
            kind,
            format!(
                "this app speaks attach {}; update lifeline and lifeline-app to the same version",
                lifeline_core::gateway::attach::VERSION
            ),
        )),
    };
    let (name, (supervisor, options)) = match attached {
        Ok(a) => a,
        Err((kind, message)) => {
            tracing::info!("a bridge could not attach: {} {message}", kind.as_str());
            let line = Answer::Refused { kind, message }.to_line();
            let _ = reader.write_all(line.as_bytes()).await;
            let _ = reader.shutdown().await;
            return;
        }
    };
    if reader
        .write_all(Answer::Ok.to_line().as_bytes())
        .await
        .is_err()
    {
        return;
    }
    tracing::info!("a host attached to `{name}` (lifeline connect)");
    let (read, write) = tokio::io::split(reader);
    gateway::serve(supervisor, read, write, options).await;
    tracing::info!("a host detached from `{name}`");
}

#[cfg(test)]
#[path = "instance_tests.rs"]
mod attach_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn refuse_all() -> OnAttach {
        Arc::new(|_| Box::pin(async { Err((Refusal::Unknown, "none here".into())) }))
    }

    fn ignore_lines() -> OnLine {
        Arc::new(|_, _| Box::pin(async {}))
    }

    #[test]
    fn a_second_instance_asks_the_first_to_show_itself_and_does_not_run() {
        let _runtime = crate::test_support::runtime().enter();
        let dir = tempfile::tempdir().unwrap();
        let Claim::First(guard) = claim(dir.path()) else {
            panic!("the first claim must win");
        };
        let (shown_tx, shown) = mpsc::channel();
        guard.serve(
            move || shown_tx.send(()).unwrap(),
            refuse_all(),
            ignore_lines(),
        );
        match claim(dir.path()) {
            Claim::Running { shown, dir: d } => {
                assert!(shown);
                assert_eq!(d, dir.path());
            }
            Claim::First(_) => panic!("a second claim must find the first"),
        }
        shown
            .recv_timeout(Duration::from_secs(10))
            .expect("the first instance was asked to show");
    }

    #[cfg(unix)]
    #[test]
    fn the_directory_lock_and_socket_are_private() {
        let _runtime = crate::test_support::runtime().enter();
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("lifeline");
        let Claim::First(_guard) = claim(&dir) else {
            panic!("the first claim must win");
        };
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("app.lock")), 0o600);
        assert_eq!(mode(&dir.join("app.sock")), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn a_socket_left_by_a_crashed_instance_does_not_stop_the_next() {
        let _runtime = crate::test_support::runtime().enter();
        let dir = tempfile::tempdir().unwrap();
        // A crash leaves the socket file; the lock went with the process.
        drop(std::os::unix::net::UnixListener::bind(dir.path().join("app.sock")).unwrap());
        assert!(dir.path().join("app.sock").exists());
        let Claim::First(guard) = claim(dir.path()) else {
            panic!("a stale socket is not a running instance");
        };
        assert!(guard.listener.is_some(), "it listens again");
    }
}
