//! The endpoint under load, over real loopback TCP: the connection cap (503), the accept
//! backoff (a listener that fails, under paused time), the per-client session cap, a
//! removed token ending its client's streams, and a host that stops reading.

use super::super::accept::{FIRST_WAIT, Failures, Listen, MAX_WAIT, accept_loop};
use super::super::{Auth, Limits, Resolve, State, tokens};
use super::{Host, endpoint_with, events, init};
use crate::gateway::attach::Refusal;
use reqwest::StatusCode;
use serde_json::json;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for what must happen before it fails, naming what did not.
const PATIENCE: Duration = Duration::from_secs(10);

async fn within<F: Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(PATIENCE, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {PATIENCE:?}"))
}

fn limits() -> Limits {
    Limits::default()
}

/// Opens a session for `host`: its id.
async fn open(host: &Host) -> String {
    let r = host.post(None, init(1)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{:?}", r.text().await);
    r.headers()["mcp-session-id"].to_str().unwrap().to_owned()
}

/// The status of a ping in `session`.
async fn ping(host: &Host, session: &str) -> StatusCode {
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    host.post(Some(session), ping)
        .send()
        .await
        .unwrap()
        .status()
}

/// Everything a raw connection receives until the server closes it.
async fn read_all(mut stream: TcpStream) -> String {
    let mut got = Vec::new();
    within(
        "the server closes the connection",
        stream.read_to_end(&mut got),
    )
    .await
    .unwrap();
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn past_the_connection_cap_a_connection_gets_503_and_is_closed() {
    let (ep, hosts, _dir) = endpoint_with(
        Limits {
            connections: 2,
            ..limits()
        },
        &["a"],
    )
    .await;
    let addr = ep.addr();
    let first = TcpStream::connect(addr).await.unwrap();
    let second = TcpStream::connect(addr).await.unwrap();
    let third = TcpStream::connect(addr).await.unwrap();
    let answer = read_all(third).await;
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{answer}"
    );
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("\r\nretry-after: 1\r\n"), "{answer}");
    assert!(lower.contains("\r\nconnection: close\r\n"), "{answer}");
    assert!(answer.contains("2 connections open"), "{answer}");
    // A request sent before the 503 is read still gets it (no reset).
    let mut fourth = TcpStream::connect(addr).await.unwrap();
    fourth
        .write_all(b"GET /servers/mem/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    assert!(read_all(fourth).await.starts_with("HTTP/1.1 503 "));
    // Once a connection ends there is room again.
    drop(first);
    within("a connection is served once one ended", async {
        loop {
            let r = hosts[0].post(None, init(1)).send().await;
            if r.is_ok_and(|r| r.status() == StatusCode::OK) {
                break;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    drop(second);
    ep.stop().await;
}

/// A listener whose first `failing` accepts fail with EMFILE, then one that never accepts.
struct Exhausted {
    calls: Arc<AtomicUsize>,
    failing: usize,
}

impl Listen for Exhausted {
    async fn accept(&self) -> io::Result<TcpStream> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        if n < self.failing {
            return Err(io::Error::from_raw_os_error(24)); // EMFILE
        }
        std::future::pending().await
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_accept_backs_off_instead_of_spinning() {
    let resolve: Resolve =
        Arc::new(|_| Box::pin(async { Err((Refusal::Unknown, "none".to_owned())) }));
    let state = Arc::new(State {
        resolve,
        auth: Auth::Open,
        port: 0,
        limits: limits(),
        sessions: Default::default(),
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let listener = Exhausted {
        calls: calls.clone(),
        failing: 10_000,
    };
    let task = tokio::spawn(accept_loop(listener, state));
    tokio::time::sleep(Duration::from_secs(10)).await;
    let n = calls.load(Ordering::SeqCst);
    // 10 ms doubling to 1 s: 7 waits fill the first 1.27 s, then one a second.
    assert!((10..=20).contains(&n), "{n} accepts in 10 s");
    task.abort();
}

#[test]
fn accept_failures_wait_longer_and_log_once_per_burst() {
    let mut f = Failures::default();
    let waits: Vec<_> = (0..9).map(|_| f.failed()).collect();
    let ms: Vec<_> = waits.iter().map(|(w, _)| w.as_millis()).collect();
    assert_eq!(ms, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
    let logged: Vec<_> = waits.iter().map(|(_, first)| *first).collect();
    assert_eq!(
        logged,
        [true, false, false, false, false, false, false, false, false]
    );
    assert_eq!(f.recovered(), Some(9));
    assert_eq!(f.recovered(), None);
    // A new burst starts from the first wait, and is logged again.
    assert_eq!(f.failed(), (FIRST_WAIT, true));
    for _ in 0..100 {
        assert!(f.failed().0 <= MAX_WAIT);
    }
}

#[tokio::test]
async fn one_client_can_neither_evict_nor_starve_anothers_sessions() {
    let (ep, hosts, _dir) = endpoint_with(
        Limits {
            sessions: 3,
            sessions_per_client: 2,
            ..limits()
        },
        &["a", "b"],
    )
    .await;
    let (a, b) = (&hosts[0], &hosts[1]);
    let b1 = open(b).await;
    let a1 = open(a).await;
    let a2 = open(a).await;
    // Past its cap, A's new session ends A's least recently used idle one, not B's.
    let a3 = open(a).await;
    assert_eq!(ping(a, &a1).await, StatusCode::NOT_FOUND);
    assert_eq!(ping(b, &b1).await, StatusCode::OK);
    assert_eq!(ping(a, &a2).await, StatusCode::OK);
    assert_eq!(ep.sessions(), 3);
    // A's sessions all busy (a GET stream open on each): A is refused, B is not.
    let _s2 = a.get_stream(&a2).send().await.unwrap();
    let _s3 = a.get_stream(&a3).send().await.unwrap();
    let r = a.post(None, init(1)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("a has 2 host sessions open and busy")
    );
    // The endpoint is full, but B's new session ends only B's own idle one.
    let b2 = open(b).await;
    assert_eq!(ping(b, &b2).await, StatusCode::OK);
    assert_eq!(ping(b, &b1).await, StatusCode::NOT_FOUND);
    assert_eq!(ping(a, &a2).await, StatusCode::OK);
    assert_eq!(ping(a, &a3).await, StatusCode::OK);
    ep.stop().await;
}

#[tokio::test]
async fn removing_a_token_ends_that_clients_open_streams_at_once() {
    let (ep, hosts, dir) = endpoint_with(limits(), &["a", "b"]).await;
    let (a, b) = (&hosts[0], &hosts[1]);
    let sa = open(a).await;
    let sb = open(b).await;
    let stream_a = a.get_stream(&sa).send().await.unwrap();
    let mut stream_b = b.get_stream(&sb).send().await.unwrap();
    let primed = within("B's priming event", stream_b.chunk()).await.unwrap();
    assert!(primed.is_some_and(|p| p.ends_with(b"data: \n\n")));
    assert_eq!(stream_a.status(), StatusCode::OK);
    assert!(tokens::remove(&tokens::path_in(dir.path()), "a").unwrap());
    // Nothing is asked of the endpoint: it notices on its own.
    let rest = within("A's GET stream ends", stream_a.text())
        .await
        .unwrap();
    assert!(events(&rest).is_empty(), "{rest}");
    assert_eq!(ep.sessions(), 1);
    assert_eq!(ping(b, &sb).await, StatusCode::OK);
    let still_open = tokio::time::timeout(Duration::from_millis(1), stream_b.chunk()).await;
    assert!(still_open.is_err(), "B's stream is open: {still_open:?}");
    ep.stop().await;
}

/// A raw GET stream on `session` from a host that reads nothing (a small receive buffer).
async fn unread_stream(addr: SocketAddr, host: &Host, session: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let head = format!(
        "GET /servers/mem/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\
         Authorization: Bearer {}\r\nMcp-Session-Id: {session}\r\n\r\n",
        host.token
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

#[tokio::test]
async fn a_stream_whose_host_stopped_reading_is_closed() {
    let (ep, hosts, _dir) = endpoint_with(
        Limits {
            stream_queue: 4,
            ..limits()
        },
        &["a"],
    )
    .await;
    let host = &hosts[0];
    let session = open(host).await;
    let mut stream = unread_stream(ep.addr(), host, &session).await;
    // The GET is taken before the flood starts: the session has its stream.
    within("the GET stream opens", async {
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await.unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
    })
    .await;
    // 200 messages of 64 KiB: far more than the socket buffers and the queue hold.
    let flood = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "flood", "arguments": {"n": 200, "size": 65536}}});
    let r = host
        .post_accepting("application/json", Some(&session), flood)
        .send();
    assert_eq!(
        within("the flood's answer", r).await.unwrap().status(),
        StatusCode::OK
    );
    // Now the host reads: what was queued, then the end of the stream.
    let mut got = Vec::new();
    within("the stream ends", async {
        let mut buf = vec![0u8; 1 << 16];
        while !got.ends_with(b"\r\n0\r\n\r\n") {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "the connection closed before the stream ended");
            got.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    assert!(
        got.len() < 200 * 65536,
        "{} bytes: nothing was dropped",
        got.len()
    );
    // The session lives on; a new GET stream can be opened.
    assert_eq!(ping(host, &session).await, StatusCode::OK);
    ep.stop().await;
}
