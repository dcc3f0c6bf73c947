//! The app's local endpoint, for other Lifeline processes of the same user on this machine
//! (a second app instance asking the first to show itself; later, `lifeline connect`
//! bridges attaching to the app's supervisors). On Unix it is the socket `app.sock` in the
//! instance directory, 0600 inside a 0700 directory; on Windows it is a named pipe whose
//! name is derived from that directory (`\\.\pipe\lifeline-<16 hex digits>`), created as the
//! first instance of that name (a squatter makes `bind` fail rather than hear our clients)
//! and refusing remote clients. What is said over it is the caller's business: this is bytes
//! both ways.
//!
//! The caller binds only while it holds the instance lock (`private::open_lock` + `try_lock`):
//! on Unix a socket file left by a process that is gone is removed first.

use std::io;
use std::path::Path;
use tokio::io::{AsyncRead, AsyncWrite};

/// One connection, either end.
pub trait Duplex: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Duplex for T {}

pub type Stream = Box<dyn Duplex>;

/// The file name of the socket in the instance directory (Unix).
pub const SOCKET_NAME: &str = "app.sock";

/// Where the endpoint for `dir` is: a path on Unix, a pipe name on Windows. For messages.
pub fn address(dir: &Path) -> String {
    #[cfg(unix)]
    return dir.join(SOCKET_NAME).display().to_string();
    #[cfg(windows)]
    return pipe_name(dir);
}

/// The named pipe for `dir`: a digest of the directory's path, so two users (two profile
/// folders) or two `LIFELINE_HISTORY` directories never share one.
#[cfg_attr(not(windows), allow(dead_code))]
fn pipe_name(dir: &Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(dir.to_string_lossy().as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!(r"\\.\pipe\lifeline-{hex}")
}

/// Listens for local connections.
pub struct Listener {
    #[cfg(unix)]
    inner: tokio::net::UnixListener,
    #[cfg(windows)]
    name: String,
    #[cfg(windows)]
    next: tokio::net::windows::named_pipe::NamedPipeServer,
}

impl Listener {
    /// Listens on the endpoint for `dir`. Must run inside a tokio runtime.
    pub fn bind(dir: &Path) -> io::Result<Listener> {
        #[cfg(unix)]
        {
            let path = dir.join(SOCKET_NAME);
            // Whatever is at the path was left by an instance that is gone: the caller holds
            // the lock that instance held while it ran.
            let _ = std::fs::remove_file(&path);
            let inner = tokio::net::UnixListener::bind(&path)?;
            // Connecting to a Unix socket needs write permission on it: only this user may.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
            Ok(Listener { inner })
        }
        #[cfg(windows)]
        {
            use tokio::net::windows::named_pipe::ServerOptions;
            let name = pipe_name(dir);
            let next = ServerOptions::new()
                .first_pipe_instance(true)
                .reject_remote_clients(true)
                .create(&name)?;
            Ok(Listener { name, next })
        }
    }

    /// The next connection.
    pub async fn accept(&mut self) -> io::Result<Stream> {
        #[cfg(unix)]
        {
            let (stream, _) = self.inner.accept().await?;
            Ok(Box::new(stream))
        }
        #[cfg(windows)]
        {
            use tokio::net::windows::named_pipe::ServerOptions;
            self.next.connect().await?;
            // A new instance of the pipe takes the next client before this one is handed out,
            // so a client never finds the name missing.
            let fresh = ServerOptions::new()
                .reject_remote_clients(true)
                .create(&self.name)?;
            Ok(Box::new(std::mem::replace(&mut self.next, fresh)))
        }
    }
}

/// Connects to the endpoint for `dir`. `NotFound` (Unix) or the pipe's absence (Windows)
/// means no instance listens there.
pub async fn connect(dir: &Path) -> io::Result<Stream> {
    #[cfg(unix)]
    {
        let stream = tokio::net::UnixStream::connect(dir.join(SOCKET_NAME)).await?;
        Ok(Box::new(stream))
    }
    #[cfg(windows)]
    {
        use tokio::net::windows::named_pipe::ClientOptions;
        /// ERROR_PIPE_BUSY: every instance is taken; the server makes a new one at once.
        const PIPE_BUSY: i32 = 231;
        let name = pipe_name(dir);
        let mut tries = 0;
        loop {
            match ClientOptions::new().open(&name) {
                Ok(client) => return Ok(Box::new(client)),
                Err(e) if e.raw_os_error() == Some(PIPE_BUSY) && tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_client_and_the_listener_talk_both_ways_and_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut listener = Listener::bind(dir.path()).unwrap();
        let server = tokio::spawn(async move {
            for _ in 0..2 {
                let mut s = listener.accept().await.unwrap();
                let mut buf = [0u8; 5];
                s.read_exact(&mut buf).await.unwrap();
                s.write_all(&buf.map(|b| b.to_ascii_uppercase()))
                    .await
                    .unwrap();
            }
        });
        for _ in 0..2 {
            let mut c = connect(dir.path()).await.unwrap();
            c.write_all(b"hello").await.unwrap();
            let mut buf = [0u8; 5];
            c.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"HELLO");
        }
        server.await.unwrap();
    }

    #[tokio::test]
    async fn nobody_listening_is_an_error_not_a_wait() {
        let dir = tempfile::tempdir().unwrap();
        assert!(connect(dir.path()).await.is_err());
    }

    #[test]
    fn each_directory_has_its_own_pipe_name() {
        let a = pipe_name(Path::new(r"C:\Users\ada\AppData\Local\lifeline"));
        let b = pipe_name(Path::new(r"C:\Users\bob\AppData\Local\lifeline"));
        assert_ne!(a, b);
        assert!(
            a.starts_with(r"\\.\pipe\lifeline-") && a.len() == r"\\.\pipe\lifeline-".len() + 16
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_socket_is_private_and_a_stale_one_is_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        // A crash leaves the socket file behind.
        drop(std::os::unix::net::UnixListener::bind(dir.path().join(SOCKET_NAME)).unwrap());
        let _listener = Listener::bind(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(SOCKET_NAME))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        connect(dir.path()).await.expect("the new listener answers");
    }
}
