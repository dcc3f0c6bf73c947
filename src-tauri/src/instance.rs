//! One app per history directory. A second `lifeline-app` started while one runs would
//! supervise every server twice (two processes per stdio server, twice the requests) and
//! find the history locked; instead it asks the running one to show its window and exits.
//!
//! The first instance holds an exclusive lock on `app.lock` for its whole life (the OS
//! drops it when the process ends, however it ends) and listens on `app.sock` beside it. A
//! later one finds the lock taken, connects, writes `show`, and exits 0.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    listener: Option<UnixListener>,
}

/// The directory that makes instances the same: where the history lives.
pub fn dir() -> Option<PathBuf> {
    lifeline_core::history::resolve_path().and_then(|p| p.parent().map(Path::to_owned))
}

/// Claims `dir` for this process. Anything that stops the guard from working (no
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
    let Ok(lock) = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(dir.join("app.lock"))
    else {
        return unguarded();
    };
    let socket = dir.join("app.sock");
    match lock.try_lock() {
        Ok(()) => {
            // Whatever is at the path is left from an instance that is gone (it held the
            // lock while it ran).
            let _ = std::fs::remove_file(&socket);
            let listener = UnixListener::bind(&socket)
                .and_then(|l| private_socket(&socket).map(|()| l))
                .inspect_err(|e| tracing::warn!("instance: cannot listen on {} ({e}); a second instance will not be able to show this window", socket.display()))
                .ok();
            Claim::First(Guard {
                _lock: Some(lock),
                listener,
            })
        }
        Err(TryLockError::WouldBlock) => {
            let shown = ask_to_show(&socket);
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

/// Only this user may connect: connecting to a Unix socket needs write permission on it.
fn private_socket(socket: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
}

fn ask_to_show(socket: &Path) -> bool {
    tauri::async_runtime::block_on(async {
        let tries = REACH_FOR.as_millis() / REACH_EVERY.as_millis();
        for _ in 0..=tries {
            if let Ok(mut s) = tokio::net::UnixStream::connect(socket).await {
                use tokio::io::AsyncWriteExt;
                return s.write_all(b"show\n").await.is_ok();
            }
            tokio::time::sleep(REACH_EVERY).await;
        }
        false
    })
}

impl Guard {
    /// Answers later instances on a thread of its own: `show` calls `on_show`.
    pub fn serve(mut self, on_show: impl Fn() + Send + 'static) {
        let Some(listener) = self.listener.take() else {
            // Nothing to serve, but the lock must still be held for the app's life.
            std::mem::forget(self);
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("lifeline-instance".into())
            .spawn(move || {
                let _held = self;
                for stream in listener.incoming().flatten() {
                    let mut line = String::new();
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                    if BufReader::new(stream).read_line(&mut line).is_ok() && line.trim() == "show"
                    {
                        tracing::info!("another instance was started; showing this window instead");
                        on_show();
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("instance: no thread to answer later instances ({e})");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_second_instance_asks_the_first_to_show_itself_and_does_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let Claim::First(guard) = claim(dir.path()) else {
            panic!("the first claim must win");
        };
        let (shown_tx, shown) = mpsc::channel();
        guard.serve(move || shown_tx.send(()).unwrap());
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

    #[test]
    fn the_directory_lock_and_socket_are_private() {
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

    #[test]
    fn a_socket_left_by_a_crashed_instance_does_not_stop_the_next() {
        let dir = tempfile::tempdir().unwrap();
        // A crash leaves the socket file; the lock went with the process.
        drop(UnixListener::bind(dir.path().join("app.sock")).unwrap());
        assert!(dir.path().join("app.sock").exists());
        let Claim::First(guard) = claim(dir.path()) else {
            panic!("a stale socket is not a running instance");
        };
        assert!(guard.listener.is_some(), "it listens again");
    }
}
