//! The app's local endpoint, for other Lifeline processes of the same user on this machine
//! (a second app instance asking the first to show itself, `lifeline connect` bridges
//! attaching to the app's supervisors, the app's window process). On Unix it is the socket
//! `app.sock` in the instance directory, 0600 inside a 0700 directory. On Windows it is a
//! named pipe whose name holds the user's SID and a digest of that directory
//! (`\\.\pipe\lifeline-<SID>-<16 hex digits>`), made with a DACL that lets only the current
//! user in, created as the first instance of that name (so a pipe another account made first
//! makes `bind` fail rather than let it hear our clients), refusing remote clients; and a
//! client checks that the process serving the pipe runs as its own user before it sends
//! anything (`windows.rs`). What is said over it is the caller's business: this is bytes
//! both ways.
//!
//! The caller binds only while it holds the instance lock (`private::open_lock` + `try_lock`):
//! on Unix a socket file left by a process that is gone is removed first.

#[cfg(windows)]
mod windows;

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
    return own_pipe(dir).unwrap_or_else(|e| format!("a named pipe ({e})"));
}

/// The named pipe of `user` (a SID) for `dir`: the user, so two accounts never look for
/// the same pipe, and a digest of the directory's path, so two `LIFELINE_HISTORY`
/// directories of one user never share one.
#[cfg_attr(not(windows), allow(dead_code))]
fn pipe_name(user: &str, dir: &Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(dir.to_string_lossy().as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!(r"\\.\pipe\lifeline-{user}-{hex}")
}

/// The pipe for `dir` of the user this process runs as.
#[cfg(windows)]
fn own_pipe(dir: &Path) -> io::Result<String> {
    Ok(pipe_name(windows::current_user()?, dir))
}

/// Listens for local connections.
pub struct Listener {
    #[cfg(unix)]
    inner: tokio::net::UnixListener,
    #[cfg(windows)]
    name: String,
    #[cfg(windows)]
    security: windows::OnlyUser,
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
            let name = own_pipe(dir)?;
            let security = windows::OnlyUser::new(windows::current_user()?)?;
            let next = create_instance(&name, &security, true)?;
            Ok(Listener {
                name,
                security,
                next,
            })
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
            self.next.connect().await?;
            // A new instance of the pipe takes the next client before this one is handed out,
            // so a client never finds the name missing.
            let fresh = create_instance(&self.name, &self.security, false)?;
            Ok(Box::new(std::mem::replace(&mut self.next, fresh)))
        }
    }
}

/// One instance of the pipe `name`, open to `security`'s user only; the first one must be
/// the first of its name, so that a pipe someone else made is never joined.
#[cfg(windows)]
fn create_instance(
    name: &str,
    security: &windows::OnlyUser,
    first: bool,
) -> io::Result<tokio::net::windows::named_pipe::NamedPipeServer> {
    use tokio::net::windows::named_pipe::ServerOptions;
    let mut attributes = security.attributes();
    let mut options = ServerOptions::new();
    options
        .first_pipe_instance(first)
        .reject_remote_clients(true);
    // SAFETY: `attributes` and the descriptor it points to (held by `security`) outlive the
    // call, which copies what it needs into the pipe.
    unsafe { options.create_with_security_attributes_raw(name, (&raw mut attributes).cast()) }
}

/// Connects to the endpoint for `dir`. `NotFound` (Unix) or the pipe's absence (Windows)
/// means no instance listens there.
pub async fn connect(dir: &Path) -> io::Result<Stream> {
    #[cfg(unix)]
    {
        // Nothing is sent to a socket another user made, or could have replaced.
        let path = dir.join(SOCKET_NAME);
        crate::private::check_trusted(
            &path,
            "set LIFELINE_HISTORY to a file in a directory of your own",
        )?;
        let stream = tokio::net::UnixStream::connect(path).await?;
        Ok(Box::new(stream))
    }
    #[cfg(windows)]
    {
        use tokio::net::windows::named_pipe::ClientOptions;
        /// ERROR_PIPE_BUSY: every instance is taken; the server makes a new one at once.
        const PIPE_BUSY: i32 = 231;
        use std::os::windows::io::AsRawHandle;
        let user = windows::current_user()?;
        let name = pipe_name(user, dir);
        let mut tries = 0;
        loop {
            match ClientOptions::new().open(&name) {
                Ok(client) => {
                    // Nothing is sent to a pipe another user serves.
                    windows::check_server(client.as_raw_handle(), user)?;
                    return Ok(Box::new(client));
                }
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
    fn each_user_and_directory_has_its_own_pipe_name() {
        let dir = Path::new(r"C:\Users\ada\AppData\Local\lifeline");
        let ada = "S-1-5-21-1-2-3-1001";
        let a = pipe_name(ada, dir);
        assert_ne!(a, pipe_name(ada, Path::new(r"D:\lifeline-history")));
        assert_ne!(a, pipe_name("S-1-5-21-1-2-3-1002", dir));
        let prefix = format!(r"\\.\pipe\lifeline-{ada}-");
        assert!(
            a.starts_with(&prefix) && a.len() == prefix.len() + 16,
            "{a}"
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
