//! Bounds a hostile HTTP server must not push the client past, against real loopback
//! servers: redirects (never to another origin, never with credentials or tool arguments)
//! and a standalone GET that is accepted but never answered.

use super::*;
use crate::error::ErrorKind;
use crate::protocol::RequestId;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request as a loopback server saw it: the request line and the header lines.
type Seen = Arc<Mutex<Vec<String>>>;

/// A loopback HTTP/1.1 server: `answer(path)` is the raw response to a request for
/// `path`, or `None` to hold the connection open and never answer. Every request head is
/// recorded.
async fn server(answer: fn(&str) -> Option<String>) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let Ok(n) = socket.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let path = head.split(' ').nth(1).unwrap_or("").to_owned();
                log.lock().unwrap().push(head);
                match answer(&path) {
                    Some(resp) => {
                        let _ = socket.write_all(resp.as_bytes()).await;
                    }
                    None => {
                        let _ = socket.read(&mut chunk).await;
                        std::future::pending::<()>().await;
                    }
                }
            });
        }
    });
    (base, seen)
}

fn redirect_to(location: &str) -> String {
    format!(
        "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    )
}

fn pong() -> Option<String> {
    let body = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    Some(format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ))
}

fn ping() -> Message {
    Message::request(RequestId::Number(1), "ping", None)
}

/// The loopback server other origins redirect to: answers everything, records everything.
async fn elsewhere() -> (String, Seen) {
    server(|_| pong()).await
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_never_followed_with_or_without_credentials() {
    let (other, reached) = elsewhere().await;
    let location = format!("{other}/mcp");
    // fn pointers cannot capture: the redirecting server reads its target from a static.
    static TARGET: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TARGET.set(location).unwrap();
    let (base, seen) = server(|_| Some(redirect_to(TARGET.get().unwrap()))).await;
    for headers in [
        vec![],
        vec![("Authorization".to_owned(), "Bearer CANARY-TOKEN".to_owned())],
    ] {
        let mut config = HttpConfig::new(format!("{base}/mcp"));
        config.headers = headers;
        let conn = connect(&config).unwrap();
        let e = conn.transport.send(&ping()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config, "{e}");
        assert!(e.message().contains("another origin"), "{e}");
        assert!(!e.to_string().contains("CANARY"), "{e}");
    }
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert!(
        reached.lock().unwrap().is_empty(),
        "the other origin was reached"
    );
}

#[tokio::test]
async fn credentials_never_follow_even_a_same_origin_redirect() {
    let (base, seen) = server(|path| match path {
        "/mcp" => Some(redirect_to("/moved")),
        _ => pong(),
    })
    .await;
    let mut config = HttpConfig::new(format!("{base}/mcp"));
    config.headers = vec![("X-Api-Key".to_owned(), "CANARY-KEY".to_owned())];
    let conn = connect(&config).unwrap();
    let e = conn.transport.send(&ping()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert!(e.message().contains("/moved"), "{e}");
    assert!(e.message().contains("only to the URL in the config"), "{e}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
}

#[tokio::test]
async fn a_same_origin_redirect_without_credentials_is_followed_but_not_in_the_stateless_revision()
{
    let (base, seen) = server(|path| match path {
        "/mcp" => Some(redirect_to("/moved")),
        _ => pong(),
    })
    .await;
    let mut conn = connect(&HttpConfig::new(format!("{base}/mcp"))).unwrap();
    conn.transport.send(&ping()).await.unwrap();
    let Some(Incoming::Message(Message::Response(r))) = conn.incoming.recv().await else {
        panic!("the answer arrives")
    };
    assert_eq!(r.id, RequestId::Number(1));
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert!(seen[1].starts_with("POST /moved "), "{seen:?}");
    }
    // Tool arguments ride in `Mcp-Param-*` headers in the stateless revision: no redirect.
    let conn = connect(&HttpConfig::new(format!("{base}/mcp"))).unwrap();
    conn.transport.set_stateless();
    let e = conn.transport.send(&ping()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert_eq!(seen.lock().unwrap().len(), 3);
}

#[test]
fn https_to_http_is_another_origin() {
    let a = reqwest::Url::parse("https://host.example/mcp").unwrap();
    let b = reqwest::Url::parse("http://host.example/mcp").unwrap();
    assert_ne!(a.origin(), b.origin());
}

#[tokio::test(start_paused = true)]
async fn a_get_that_is_accepted_but_never_answered_delays_the_handshake_under_a_second() {
    let (base, _) = server(|_| None).await;
    let conn = connect(&HttpConfig::new(format!("{base}/mcp"))).unwrap();
    let started = tokio::time::Instant::now();
    conn.transport.start_listening().await;
    // Paused time: the only timer that can end the wait is `listen_open_wait`.
    assert_eq!(started.elapsed(), Duration::from_millis(500));
    assert!(started.elapsed() < Duration::from_secs(1));
    conn.transport.close().await;
}
