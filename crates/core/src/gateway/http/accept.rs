//! The endpoint's accept loop: every accepted connection is served on its own task, at
//! most `Limits::connections` at once; past that a connection is answered `503` with
//! `Retry-After` and closed. When `accept` itself fails for want of resources (EMFILE,
//! ENFILE, ENOBUFS, ENOMEM) the loop waits, doubling from `FIRST_WAIT` to `MAX_WAIT`,
//! rather than spinning, and logs once per burst of failures (and once when it recovers).

use super::State;
use super::reply::refuse;
use hyper::StatusCode;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// The first wait after `accept` failed; it doubles with each failure in a row.
pub(super) const FIRST_WAIT: Duration = Duration::from_millis(10);

/// The longest wait between two failed accepts.
pub(super) const MAX_WAIT: Duration = Duration::from_secs(1);

/// At most this many connections are being refused (503) at once; past it a connection
/// is closed without an answer.
const MAX_REFUSING: usize = 32;

/// How long a refused connection is given to take its 503.
const REFUSE_WAIT: Duration = Duration::from_secs(2);

/// What the loop accepts from: a `TcpListener`, or in tests one that fails on purpose.
pub(super) trait Listen: Send + Sync + 'static {
    fn accept(&self) -> impl Future<Output = io::Result<TcpStream>> + Send;
}

impl Listen for TcpListener {
    async fn accept(&self) -> io::Result<TcpStream> {
        TcpListener::accept(self).await.map(|(stream, _)| stream)
    }
}

/// A burst of failed accepts: how long to wait next, and whether to log.
#[derive(Debug, Default)]
pub(super) struct Failures {
    /// Failures in a row since the last accepted connection.
    n: u32,
}

impl Failures {
    /// One more failure: how long to wait before accepting again, and whether this is the
    /// first of its burst (the one to log).
    pub(super) fn failed(&mut self) -> (Duration, bool) {
        let first = self.n == 0;
        let wait = FIRST_WAIT
            .saturating_mul(1u32 << self.n.min(16))
            .min(MAX_WAIT);
        self.n = self.n.saturating_add(1);
        (wait, first)
    }

    /// A connection was accepted: how many failures the burst it ends had, if any.
    pub(super) fn recovered(&mut self) -> Option<u32> {
        let n = std::mem::take(&mut self.n);
        (n > 0).then_some(n)
    }
}

/// Failures of one connection (it was reset before it was accepted, say): the next
/// accept is tried at once.
fn of_one_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

pub(super) async fn accept_loop<L: Listen>(listener: L, state: Arc<State>) {
    let open = Arc::new(Semaphore::new(state.limits.connections));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    // Dropped with this task: every connection ends with the endpoint.
    let mut connections = JoinSet::new();
    let mut failures = Failures::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let stream = match accepted {
            Ok(stream) => {
                let _ = stream.set_nodelay(true); // no delayed-ACK wait (reply.rs)
                if let Some(n) = failures.recovered() {
                    tracing::info!("gateway: accepting connections again (after {n} failures)");
                }
                stream
            }
            Err(e) if of_one_connection(&e) => continue,
            Err(e) => {
                let (wait, first) = failures.failed();
                if first {
                    tracing::warn!(
                        "gateway: accepting a connection failed ({e}); trying again every {} \
                         at most until it works (raise the open-files limit, `ulimit -n`, if \
                         this goes on)",
                        crate::fmt_duration(MAX_WAIT)
                    );
                }
                tokio::time::sleep(wait).await;
                continue;
            }
        };
        match open.clone().try_acquire_owned() {
            Ok(permit) => {
                connections.spawn(super::serve(state.clone(), stream, permit));
            }
            Err(_) => {
                if let Ok(permit) = refusing.clone().try_acquire_owned() {
                    let limit = state.limits.connections;
                    connections.spawn(async move {
                        busy(stream, limit).await;
                        drop(permit);
                    });
                }
            }
        }
    }
}

/// Answers a connection past the cap with `503` and `Retry-After`, and closes it; what
/// the client sent meanwhile is read and dropped (bounded), so the close does not reset
/// the connection before the client read the answer.
async fn busy(mut stream: TcpStream, limit: usize) {
    let body = refuse(
        StatusCode::SERVICE_UNAVAILABLE,
        -32000,
        format!("Lifeline's endpoint has {limit} connections open: try again in a second"),
    );
    let body = http_body_util::BodyExt::collect(body.into_body())
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSE_WAIT, async {
        stream.write_all(&[head.as_bytes(), &body].concat()).await?;
        stream.shutdown().await?;
        let mut buf = [0u8; 4096];
        let mut left: usize = 64 * 1024;
        while left > 0 {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            left = left.saturating_sub(n);
        }
        Ok::<_, io::Error>(())
    })
    .await;
}
