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
use lifeline_core::gateway::{self, Served};
use lifeline_core::lines::{LineRead, fmt_bytes, read_line_capped};
use lifeline_core::local_socket::{self, Listener, Stream};
use std::fs::{File, TryLockError};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};

/// How long a second instance keeps trying to reach a first one that holds the lock but
/// is not listening yet (it is starting up).
const REACH_FOR: Duration = Duration::from_secs(3);
const REACH_EVERY: Duration = Duration::from_millis(100);

/// How to choose another instance directory, for an error refusing one.
const ELSEWHERE: &str = "set LIFELINE_HISTORY to a file in a directory of your own";

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
    // Another user's directory, or one others may write, could hold their socket in place
    // of ours: the app runs on a private socket of its own instead (`endpoint`).
    if let Err(e) = lifeline_core::private::check_trusted_dir(dir, ELSEWHERE) {
        tracing::warn!("instance: {e}");
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
    // A new directory of a random name: a predictable one (`lifeline-app-<pid>`) could be
    // made first, by another user, in the shared temporary directory.
    let listener =
        lifeline_core::private::create_unique_dir(&std::env::temp_dir(), "lifeline-app-")
            .and_then(|own| Listener::bind(&own).map(|l| (l, own)));
    match listener {
        Ok((listener, own)) => {
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
                "instance: cannot listen in a new directory in {} either ({e}); the window cannot open",
                std::env::temp_dir().display()
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

/// What an attach request gets: what serves the host (a supervisor, or a profile's) and
/// how, or why not.
pub type Attached = Result<Served, (Refusal, String)>;

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
                    let mut reader = BufReader::new(stream);
                    let Some(line) = first_line(&mut reader).await else {
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

/// The longest first line a connection may send: `show`, `attach v1 NAME CONFIG-PATH`,
/// `window v1`, `ipc v1`. Anything longer is not one of them, and is not buffered.
const FIRST_LINE_MAX: usize = 64 * 1024;

/// How long a connection may take to send its first line.
const FIRST_LINE_WITHIN: Duration = Duration::from_secs(2);

/// A connection's first line, with its `\n`; `None` (the connection is dropped) when it
/// does not come in time, is longer than `FIRST_LINE_MAX` (said in the log), or is not UTF-8.
async fn first_line(reader: &mut BufReader<Stream>) -> Option<String> {
    let mut line = Vec::new();
    let read = read_line_capped(reader, &mut line, FIRST_LINE_MAX);
    match tokio::time::timeout(FIRST_LINE_WITHIN, read).await {
        Ok(Ok(LineRead::Line)) => {}
        Ok(Ok(LineRead::TooLong)) => {
            tracing::warn!(
                "instance: a connection sent a first line longer than {}; closed it",
                fmt_bytes(FIRST_LINE_MAX)
            );
            return None;
        }
        _ => return None,
    }
    line.push(b'\n');
    String::from_utf8(line).ok()
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
            let name = request.target.shown();
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
    let (name, served) = match attached {
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
    tracing::info!("a host attached to {name} (lifeline connect)");
    let (read, write) = tokio::io::split(reader);
    gateway::serve_session(served.start(), read, write).await;
    tracing::info!("a host detached from {name}");
}

#[cfg(test)]
#[path = "instance_tests.rs"]
mod attach_tests;

#[cfg(test)]
#[path = "instance_claim_tests.rs"]
mod tests;
