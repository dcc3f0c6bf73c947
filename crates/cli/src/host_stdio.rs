//! The host's side of `lifeline connect`: its stdin and stdout as async streams.
//!
//! A host starts a stdio server with pipes (Python, Claude Desktop) or socket pairs (Node's
//! `child_process`, so the TypeScript SDK and the editors built on it). On Unix those are
//! driven by tokio's reactor directly, made non-blocking: a message goes from the host's
//! pipe to the gateway's task with no thread in between, which is most of what the bridge
//! adds to a call (docs/benchmarks.md, "Through the gateway"). Anything else — a terminal,
//! a file, Windows' handles — is copied by a thread per direction, as tokio's own `io-std`
//! would do, without enabling that feature for the whole workspace.
//!
//! Making stdin non-blocking changes the open pipe, which only this process reads; a
//! terminal is never touched (it takes the thread path), so a shell is not left with a
//! non-blocking tty.

use std::pin::Pin;
use tokio::io::{AsyncRead, AsyncWrite};

pub struct HostIo {
    pub read: Pin<Box<dyn AsyncRead + Send>>,
    pub write: Pin<Box<dyn AsyncWrite + Send>>,
    /// The thread writing stdout, when stdout is not driven by the reactor: join it after
    /// dropping `write` so that the last bytes reach the host before the process exits.
    pub writer: Option<std::thread::JoinHandle<()>>,
}

pub fn open() -> HostIo {
    #[cfg(unix)]
    if let Some(io) = reactor::open() {
        tracing::debug!("the host's stdio is driven by the reactor");
        return io;
    }
    threaded()
}

#[cfg(unix)]
mod reactor {
    //! stdin/stdout registered with tokio when they are a pipe or a socket.

    use super::*;
    use std::fs::File;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;

    enum Kind {
        Pipe(File),
        Socket(std::os::unix::net::UnixStream),
    }

    /// A duplicate of the descriptor (ours to own and close; it shares the open file with
    /// fd 0 or 1), if it is a pipe or a Unix socket.
    fn classify(fd: std::os::fd::BorrowedFd<'_>) -> Option<Kind> {
        let owned: OwnedFd = fd.try_clone_to_owned().ok()?;
        let file = File::from(owned);
        let kind = file.metadata().ok()?.file_type();
        if kind.is_fifo() {
            Some(Kind::Pipe(file))
        } else if kind.is_socket() {
            Some(Kind::Socket(std::os::unix::net::UnixStream::from(
                OwnedFd::from(file),
            )))
        } else {
            None
        }
    }

    /// Both or neither: each is classified before either is made non-blocking, since a
    /// non-blocking stdin would end the threads' blocking reads at once (`EAGAIN`).
    pub fn open() -> Option<HostIo> {
        let read = classify(std::io::stdin().as_fd())?;
        let write = classify(std::io::stdout().as_fd())?;
        Some(HostIo {
            read: stdin(read)?,
            write: stdout(write)?,
            writer: None,
        })
    }

    fn stdin(kind: Kind) -> Option<Pin<Box<dyn AsyncRead + Send>>> {
        match kind {
            Kind::Pipe(file) => {
                let rx = tokio::net::unix::pipe::Receiver::from_file(file).ok()?;
                Some(Box::pin(rx))
            }
            Kind::Socket(s) => {
                s.set_nonblocking(true).ok()?;
                Some(Box::pin(tokio::net::UnixStream::from_std(s).ok()?))
            }
        }
    }

    fn stdout(kind: Kind) -> Option<Pin<Box<dyn AsyncWrite + Send>>> {
        match kind {
            Kind::Pipe(file) => {
                let tx = tokio::net::unix::pipe::Sender::from_file(file).ok()?;
                Some(Box::pin(tx))
            }
            Kind::Socket(s) => {
                s.set_nonblocking(true).ok()?;
                Some(Box::pin(tokio::net::UnixStream::from_std(s).ok()?))
            }
        }
    }
}

/// A thread per direction copies between the blocking standard streams and an in-process
/// pipe (stdout flushed per write, so each JSON-RPC line leaves at once). stdin's EOF ends
/// the read side. The stdout thread ends once the write side is dropped and drained.
fn threaded() -> HostIo {
    use std::io::{Read, Write};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let handle = tokio::runtime::Handle::current();
    let (read, mut feed) = tokio::io::duplex(1 << 16);
    let (write, mut drain) = tokio::io::duplex(1 << 16);
    let h = handle.clone();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if h.block_on(feed.write_all(&buf[..n])).is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping `feed` is the gateway's EOF.
    });
    let writer = std::thread::spawn(move || {
        let mut stdout = std::io::stdout().lock();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match handle.block_on(drain.read(&mut buf)) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if stdout
                        .write_all(&buf[..n])
                        .and_then(|()| stdout.flush())
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    HostIo {
        read: Box::pin(read),
        write: Box::pin(write),
        writer: Some(writer),
    }
}
