//! How many writes an answer takes, counted through hyper itself: a request's event stream
//! served by `http1` over a stream that counts its writes (a vectored write is one, as
//! `writev` is one system call on a socket). And that the endpoint's accepted sockets set
//! `TCP_NODELAY`. Each write after the first unacknowledged one waits for the host's
//! delayed ACK on a kept-alive connection (issue 25 item 9).

use super::*;
use crate::gateway::http::streams::{EventId, frame, priming};
use crate::protocol::Message;
use hyper::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf};
use tokio::sync::mpsc;

/// The server's half of a connection, counting the writes that put bytes on it.
struct Counted {
    inner: DuplexStream,
    writes: Arc<AtomicUsize>,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            self.writes.fetch_add(1, Ordering::SeqCst);
        }
        written
    }

    /// All the slices in one write, as `writev` does on a socket.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let all: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
        self.poll_write(cx, &all)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A connection whose every request is answered by `request_stream`; the test gets each
/// request's sender (the session's side of its stream) once hyper has handed it over.
struct Served {
    host: DuplexStream,
    writes: Arc<AtomicUsize>,
    streams: mpsc::UnboundedReceiver<mpsc::Sender<Bytes>>,
    received: Vec<u8>,
}

fn serve() -> Served {
    serve_priming(None)
}

/// `serve`, each request's stream starting with `priming` when there is one.
fn serve_priming(priming: Option<Bytes>) -> Served {
    let (host, server) = tokio::io::duplex(1 << 20);
    let writes = Arc::new(AtomicUsize::new(0));
    let (streams_tx, streams) = mpsc::unbounded_channel();
    let io = Counted {
        inner: server,
        writes: writes.clone(),
    };
    let service = service_fn(move |_req: Request<Incoming>| {
        let (tx, rx) = mpsc::channel(64);
        let _ = streams_tx.send(tx);
        let priming = priming.clone();
        async move { Ok::<_, Infallible>(request_stream(priming, rx).await) }
    });
    tokio::spawn(async move {
        let _ = http1::Builder::new()
            .serve_connection(TokioIo::new(io), service)
            .await;
    });
    Served {
        host,
        writes,
        streams,
        received: Vec::new(),
    }
}

impl Served {
    /// Posts a request and waits until hyper has handed it to the service.
    async fn post(&mut self) -> mpsc::Sender<Bytes> {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#;
        let head = format!(
            "POST /servers/x/mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        self.host.write_all(head.as_bytes()).await.unwrap();
        self.streams
            .recv()
            .await
            .expect("the request reached the service")
    }

    /// Reads until what the host received ends with `end`.
    async fn read_until_end(&mut self, end: &[u8]) -> String {
        let read = async {
            while !self.received.ends_with(end) {
                let mut buf = [0u8; 4096];
                let n = self.host.read(&mut buf).await.unwrap();
                assert!(n > 0, "the connection closed before the answer ended");
                self.received.extend_from_slice(&buf[..n]);
            }
        };
        tokio::time::timeout(Duration::from_secs(600), read)
            .await
            .expect("the answer within the bound");
        String::from_utf8(std::mem::take(&mut self.received)).unwrap()
    }

    fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }
}

/// Under paused time the clock moves only once every task waits, so this returns when
/// hyper has written everything it would before the next event (and no keepalive is due).
async fn quiescent() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

fn answer(id: i64) -> Bytes {
    let msg = json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}});
    frame(
        EventId { stream: 7, n: 2 },
        &Message::from_value(msg).unwrap(),
    )
}

fn progress() -> Bytes {
    let msg = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                     "params": {"progressToken": 1, "progress": 1}});
    frame(
        EventId { stream: 7, n: 1 },
        &Message::from_value(msg).unwrap(),
    )
}

#[tokio::test(start_paused = true)]
async fn an_answer_alone_goes_out_with_its_headers_in_one_write() {
    let mut served = serve();
    let stream = served.post().await;
    quiescent().await;
    assert_eq!(served.writes(), 0, "the headers wait for the first event");
    stream.try_send(answer(1)).unwrap();
    drop(stream);
    let event = answer(1);
    let got = served.read_until_end(&event).await;
    assert_eq!(
        served.writes(),
        1,
        "headers and answer in one write: {got:?}"
    );
    let (head, body) = got.split_once("\r\n\r\n").unwrap();
    let head = head.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(
        head.contains(&format!("content-length: {}", event.len())),
        "{head}"
    );
    assert_eq!(body.as_bytes(), &event[..]);

    // The connection is kept alive: the next call is one write too.
    let stream = served.post().await;
    stream.try_send(answer(1)).unwrap();
    drop(stream);
    served.read_until_end(&event).await;
    assert_eq!(served.writes(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_stream_starts_with_its_headers_and_ends_with_its_terminator() {
    let mut served = serve();
    let stream = served.post().await;
    quiescent().await;
    assert_eq!(served.writes(), 0, "the headers wait for the first event");
    stream.try_send(progress()).unwrap();
    quiescent().await;
    // A chunk's data ends with `\r\n` after the event.
    let first = served
        .read_until_end(&[&progress()[..], b"\r\n"].concat())
        .await;
    assert_eq!(
        served.writes(),
        1,
        "headers and first event in one write: {first:?}"
    );
    assert!(
        first
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{first}"
    );
    stream.try_send(answer(1)).unwrap();
    drop(stream);
    let last = served.read_until_end(b"0\r\n\r\n").await;
    assert_eq!(
        served.writes(),
        2,
        "the last event and the terminator in one write: {last:?}"
    );
    assert!(last.contains("\"result\""), "{last}");
}

#[tokio::test(start_paused = true)]
async fn a_quiet_call_gets_its_headers_with_the_first_keepalive() {
    let mut served = serve();
    let stream = served.post().await;
    tokio::time::sleep(KEEPALIVE).await;
    let first = served.read_until_end(b": keepalive\n\n\r\n").await;
    assert_eq!(served.writes(), 1, "{first:?}");
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    stream.try_send(answer(1)).unwrap();
    drop(stream);
    let last = served.read_until_end(b"0\r\n\r\n").await;
    assert!(last.contains("\"result\""), "{last}");
}

#[tokio::test(start_paused = true)]
async fn a_primed_quick_answer_goes_out_with_its_headers_and_priming_in_one_write() {
    let mut served = serve_priming(Some(priming(7)));
    let stream = served.post().await;
    quiescent().await;
    assert_eq!(
        served.writes(),
        0,
        "the headers and priming wait for the first event"
    );
    stream.try_send(answer(1)).unwrap();
    drop(stream);
    let body = [&priming(7)[..], &answer(1)[..]].concat();
    let got = served.read_until_end(&body).await;
    assert_eq!(served.writes(), 1, "one write: {got:?}");
    let (head, rest) = got.split_once("\r\n\r\n").unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("content-length: {}", body.len())),
        "{head}"
    );
    assert_eq!(rest.as_bytes(), &body[..]);
    assert!(
        rest.starts_with("id: 7-0\nretry: 1000\ndata: \n\n"),
        "{rest}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_primed_slow_call_gets_its_priming_event_after_the_hold() {
    let mut served = serve_priming(Some(priming(7)));
    let stream = served.post().await;
    tokio::time::sleep(PRIMING_HOLD).await;
    let first = served
        .read_until_end(&[&priming(7)[..], b"\r\n"].concat())
        .await;
    assert_eq!(
        served.writes(),
        1,
        "headers and priming in one write: {first:?}"
    );
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    stream.try_send(answer(1)).unwrap();
    drop(stream);
    let last = served.read_until_end(b"0\r\n\r\n").await;
    assert!(last.contains("id: 7-2\nevent: message\n"), "{last}");
}

/// The endpoint's side of a connection: found among this process's descriptors by its
/// addresses (Linux: /proc/self/fd).
#[cfg(target_os = "linux")]
fn server_side(
    endpoint: std::net::SocketAddr,
    client: std::net::SocketAddr,
) -> Option<std::net::TcpStream> {
    use std::os::fd::BorrowedFd;
    for entry in std::fs::read_dir("/proc/self/fd").ok()? {
        let Some(fd) = entry
            .ok()
            .and_then(|e| e.file_name().to_str()?.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: the descriptor is open for the `dup` below (this process's, just listed)
        // and only borrowed; the duplicate is owned by the stream made from it (closed when
        // it drops) and the original is left as it was.
        let Ok(dup) = rustix::io::dup(unsafe { BorrowedFd::borrow_raw(fd) }) else {
            continue;
        };
        // For a descriptor that is not a TCP socket, the address calls below fail.
        let sock = std::net::TcpStream::from(dup);
        if sock.local_addr().ok() == Some(endpoint) && sock.peer_addr().ok() == Some(client) {
            return Some(sock);
        }
    }
    None
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn accepted_connections_send_without_delay() {
    use super::super::{Auth, Endpoint, Resolve};
    use crate::gateway::GatewayOptions;
    use crate::gateway::tests::upstream;
    let sup = Arc::new(upstream(Default::default()));
    let resolve: Resolve = Arc::new(move |_| {
        let sup = sup.clone();
        Box::pin(async move { Ok(super::super::Served::Server(sup, GatewayOptions::default())) })
    });
    let ep = Endpoint::bind(0, resolve, Auth::Open).await.unwrap();
    let mut client = tokio::net::TcpStream::connect(ep.addr()).await.unwrap();
    // Answered (a 404 or 405): the endpoint has accepted the connection by then.
    client
        .write_all(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(30), client.read(&mut buf))
        .await
        .expect("an answer within 30 s")
        .unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 "));
    let sock = server_side(ep.addr(), client.local_addr().unwrap())
        .expect("the endpoint's side of the connection is open in this process");
    assert!(
        sock.nodelay().unwrap(),
        "TCP_NODELAY is set on accepted sockets"
    );
    drop(sock);
    ep.stop().await;
}
