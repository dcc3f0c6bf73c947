//! The loopback redirect listener of a native app's sign-in (RFC 8252 §7.3): one socket on
//! 127.0.0.1 (the configured `callbackPort`, else one the OS picks) that waits for the
//! browser's redirect to `/callback` carrying the `state` sent, answers it with a short page,
//! and hands back the query. Any local process can connect, so nothing one connection does
//! may stop the wait: each is served on its own task within `CONNECTION_DEADLINE` (a client
//! that sends slowly or never is dropped, and the others are served meanwhile); a callback
//! with another `state` gets a page saying it was ignored; other paths get a 404.

use crate::error::Error;
use reqwest::Url;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;

pub const CALLBACK_PATH: &str = "/callback";

/// What the authorization server sent back to the redirect URI. `Debug` leaves out the
/// code and the state, which are secrets, and the server's free text.
#[derive(Default, Clone, PartialEq, Eq)]
pub struct Callback {
    pub code: Option<String>,
    pub state: Option<String>,
    pub iss: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

impl std::fmt::Debug for Callback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callback")
            .field("has_code", &self.code.is_some())
            .field("iss", &self.iss)
            .field(
                "error",
                &self
                    .error
                    .as_deref()
                    .map(|e| super::known_error(e).unwrap_or("?")),
            )
            .finish_non_exhaustive()
    }
}

impl Callback {
    pub fn from_url(url: &Url) -> Callback {
        let mut cb = Callback::default();
        for (k, v) in url.query_pairs() {
            let v = Some(v.into_owned());
            match k.as_ref() {
                "code" => cb.code = v,
                "state" => cb.state = v,
                "iss" => cb.iss = v,
                "error" => cb.error = v,
                "error_description" => cb.error_description = v,
                _ => {}
            }
        }
        cb
    }
}

/// How long one connection may take to send its request and read the answer.
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);
/// The most connections served at once; one more pushes out the oldest, so that a flood of
/// idle ones cannot hold the process's sockets (each leaves within the deadline anyway).
const MAX_CONNECTIONS: usize = 64;
/// The largest request head read.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// A bound listener and the redirect URI that reaches it.
pub struct Listener {
    listener: TcpListener,
    pub redirect_uri: String,
}

impl Listener {
    pub async fn bind(port: Option<u16>) -> Result<Listener, Error> {
        let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
            .await
            .map_err(|e| {
                Error::config(format!(
                    "could not listen on 127.0.0.1:{} for the sign-in redirect ({e}): \
                     choose another oauth.callbackPort",
                    port.unwrap_or(0)
                ))
            })?;
        let port = listener
            .local_addr()
            .map_err(|_| Error::transport("the sign-in redirect listener has no local address"))?;
        Ok(Listener {
            listener,
            redirect_uri: format!("http://127.0.0.1:{}{CALLBACK_PATH}", port.port()),
        })
    }

    /// Waits for the redirect that carries `state`, at most `limit`. Every connection is
    /// served on its own task; those still open when this returns are dropped.
    pub async fn wait(&self, state: &str, limit: Duration) -> Result<Callback, Error> {
        let accept = async {
            let mut conns = JoinSet::new();
            let mut open: VecDeque<AbortHandle> = VecDeque::new();
            loop {
                tokio::select! {
                    accepted = self.accept() => {
                        let Ok(sock) = accepted else {
                            // Out of file descriptors, most likely: let some close.
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        };
                        open.retain(|c| !c.is_finished());
                        if open.len() >= MAX_CONNECTIONS
                            && let Some(oldest) = open.pop_front()
                        {
                            oldest.abort();
                        }
                        open.push_back(conns.spawn(serve(sock, state.to_owned())));
                    }
                    Some(done) = conns.join_next(), if !conns.is_empty() => {
                        if let Ok(Some(cb)) = done {
                            return cb;
                        }
                    }
                }
            }
        };
        tokio::time::timeout(limit, accept).await.map_err(|_| {
            Error::timeout(format!(
                "the sign-in did not come back to Lifeline within {}",
                crate::fmt_duration(limit)
            ))
        })
    }

    /// The next connection, with `TCP_NODELAY` set: its answer is one small write, sent at
    /// once rather than held back by Nagle's algorithm.
    async fn accept(&self) -> std::io::Result<TcpStream> {
        let (sock, _) = self.listener.accept().await?;
        // Without it the answer is only slower: not a reason to drop the connection.
        let _ = sock.set_nodelay(true);
        Ok(sock)
    }
}

/// Serves one connection within `CONNECTION_DEADLINE`: the callback it carried if it is the
/// one awaited (its `state` is `state`), answered first.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut sock: S, state: String) -> Option<Callback> {
    let deadline = Instant::now() + CONNECTION_DEADLINE;
    let head = tokio::time::timeout_at(deadline, read_head(&mut sock))
        .await
        .ok()?;
    let (reply, cb) = answer(request_target(&head).as_deref(), &state);
    let _ = tokio::time::timeout_at(deadline, async {
        sock.write_all(reply.as_bytes()).await?;
        sock.shutdown().await
    })
    .await;
    cb
}

/// What to answer a request for `target` (`None`: not a GET request), and the callback if
/// it is the one awaited.
fn answer(target: Option<&str>, state: &str) -> (String, Option<Callback>) {
    let Some(target) = target else {
        return (reply("405 Method Not Allowed", "Not allowed"), None);
    };
    let url = Url::parse("http://127.0.0.1").and_then(|b| b.join(target));
    let Some(url) = url.ok().filter(|u| u.path() == CALLBACK_PATH) else {
        return (reply("404 Not Found", "Not found"), None);
    };
    let cb = Callback::from_url(&url);
    if !cb.state.as_deref().is_some_and(|s| same_secret(s, state)) {
        let page = "This answer was not for the sign-in Lifeline is waiting for, and was \
                    ignored. You can close this window.";
        return (reply("400 Bad Request", page), None);
    }
    let page = if cb.error.is_some() {
        "Sign-in failed; Lifeline shows why. You can close this window."
    } else {
        "Signed in to Lifeline. You can close this window."
    };
    (reply("200 OK", page), Some(cb))
}

/// Compares two secrets in time that does not depend on where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0, |d, (x, y)| d | (x ^ y)) == 0
}

/// The request head, up to its blank line, the end of the stream or `MAX_HEAD_BYTES`.
async fn read_head<S: AsyncRead + Unpin>(sock: &mut S) -> Vec<u8> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD_BYTES {
        match sock.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    head
}

/// The request target of an HTTP/1 GET request head (`GET /callback?… HTTP/1.1`).
fn request_target(head: &[u8]) -> Option<String> {
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?, parts.next()?);
    (method == "GET").then(|| target.to_owned())
}

/// A whole HTTP/1.1 response, status line to body, to be sent in one write.
fn reply(status: &str, text: &str) -> String {
    let body = format!("<!doctype html><meta charset=utf-8><title>Lifeline</title><p>{text}</p>");
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends `request` on a new connection and reads the whole answer.
    async fn get(addr: &str, request: &str) -> String {
        let mut sock = TcpStream::connect(addr).await.unwrap();
        sock.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        sock.read_to_string(&mut answer).await.unwrap();
        answer
    }

    fn addr_of(l: &Listener) -> String {
        l.redirect_uri
            .trim_start_matches("http://")
            .trim_end_matches(CALLBACK_PATH)
            .to_owned()
    }

    #[tokio::test]
    async fn hands_back_the_callback_query_and_ignores_other_paths() {
        let l = Listener::bind(None).await.unwrap();
        assert!(l.redirect_uri.starts_with("http://127.0.0.1:"));
        let base = l.redirect_uri.trim_end_matches(CALLBACK_PATH).to_owned();
        let uri = l.redirect_uri.clone();
        let browser = tokio::spawn(async move {
            let http = crate::auth::Http::new().unwrap();
            let c = http.client();
            let other = c.get(format!("{base}/favicon.ico")).send().await.unwrap();
            assert_eq!(other.status(), 404);
            let ok = c
                .get(format!("{uri}?code=c%2B1&state=s&iss=https%3A%2F%2Fas"))
                .send()
                .await
                .unwrap();
            assert_eq!(ok.status(), 200);
        });
        let cb = l.wait("s", Duration::from_secs(30)).await.unwrap();
        browser.await.unwrap();
        assert_eq!(cb.code.as_deref(), Some("c+1"));
        assert_eq!(cb.state.as_deref(), Some("s"));
        assert_eq!(cb.iss.as_deref(), Some("https://as"));
    }

    /// A local process that answers with another state, one that drips a request a byte a
    /// second, and one that never sends anything: the real redirect still gets through.
    #[tokio::test]
    async fn no_other_connection_stops_the_real_redirect() {
        let l = Listener::bind(None).await.unwrap();
        let addr = addr_of(&l);
        let (silent, drip, a) = (addr.clone(), addr.clone(), addr.clone());
        let browser = tokio::spawn(async move {
            let _silent = TcpStream::connect(&silent).await.unwrap();
            let drip = tokio::spawn(async move {
                let mut sock = TcpStream::connect(&drip).await.unwrap();
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                for b in b"GET /callback?state=s&code=slow HTTP/1.1\r\n\r\n" {
                    tick.tick().await;
                    sock.write_all(&[*b]).await.unwrap();
                }
            });
            let wrong = get(&a, "GET /callback?code=evil&state=guess HTTP/1.1\r\n\r\n").await;
            assert!(wrong.starts_with("HTTP/1.1 400 "), "{wrong}");
            assert!(wrong.contains("was ignored"), "{wrong}");
            let no_state = get(&a, "GET /callback?code=evil HTTP/1.1\r\n\r\n").await;
            assert!(no_state.starts_with("HTTP/1.1 400 "), "{no_state}");
            let post = get(&a, "POST /callback?code=evil&state=s HTTP/1.1\r\n\r\n").await;
            assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
            let ok = get(&a, "GET /callback?code=real&state=s HTTP/1.1\r\n\r\n").await;
            assert!(ok.starts_with("HTTP/1.1 200 "), "{ok}");
            drip.abort();
        });
        let cb = l
            .wait("s", Duration::from_secs(20))
            .await
            .expect("the real redirect came through the others");
        assert_eq!(cb.code.as_deref(), Some("real"));
        browser.await.unwrap();
    }

    /// A client that drips its request a byte a second is dropped at the deadline exactly.
    #[tokio::test(start_paused = true)]
    async fn a_slow_connection_is_dropped_at_the_deadline() {
        let (server, mut client) = tokio::io::duplex(64);
        let start = Instant::now();
        let served = tokio::spawn(serve(server, "s".to_owned()));
        let drip = tokio::spawn(async move {
            for b in b"GET /callback?state=s&code=c HTTP/1.1\r\n\r\n".repeat(10) {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if client.write_all(&[b]).await.is_err() {
                    break;
                }
            }
        });
        assert_eq!(
            served.await.unwrap(),
            None,
            "no callback from a dropped client"
        );
        assert_eq!(start.elapsed(), CONNECTION_DEADLINE);
        drip.abort();
    }

    /// With only a silent connection, the wait ends at its limit exactly, as a timeout.
    #[tokio::test(start_paused = true)]
    async fn the_wait_ends_at_its_limit() {
        let l = Listener::bind(None).await.unwrap();
        let _silent = TcpStream::connect(addr_of(&l)).await.unwrap();
        let start = Instant::now();
        let e = l.wait("s", Duration::from_secs(300)).await.unwrap_err();
        assert_eq!(start.elapsed(), Duration::from_secs(300));
        assert_eq!(e.kind(), crate::error::ErrorKind::Timeout, "{e}");
        assert!(e.message().contains("within 5 min"), "{e}");
    }

    #[tokio::test]
    async fn accepted_connections_send_without_delay() {
        let l = Listener::bind(None).await.unwrap();
        let _client = TcpStream::connect(addr_of(&l)).await.unwrap();
        let sock = l.accept().await.unwrap();
        assert!(sock.nodelay().unwrap(), "TCP_NODELAY is set");
    }

    #[test]
    fn answers() {
        let check = |target: Option<&str>, status: &str, code: Option<&str>| {
            let (reply, cb) = answer(target, "st");
            assert!(
                reply.starts_with(&format!("HTTP/1.1 {status} ")),
                "{target:?}: {reply}"
            );
            assert_eq!(cb.and_then(|c| c.code).as_deref(), code, "{target:?}");
            let (head, body) = reply.split_once("\r\n\r\n").unwrap();
            assert!(
                head.contains(&format!("Content-Length: {}", body.len())),
                "{reply}"
            );
        };
        check(Some("/callback?code=c&state=st"), "200", Some("c"));
        check(Some("/callback?error=access_denied&state=st"), "200", None);
        check(Some("/callback?code=c&state=s"), "400", None);
        check(Some("/callback?code=c&state=stt"), "400", None);
        check(Some("/callback?code=c&state="), "400", None);
        check(Some("/callback?code=c"), "400", None);
        check(Some("/callback/x?code=c&state=st"), "404", None);
        check(Some("/favicon.ico"), "404", None);
        check(None, "405", None);
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
    }

    #[test]
    fn request_targets() {
        assert_eq!(
            request_target(b"GET /callback?x=1 HTTP/1.1\r\nHost: h\r\n\r\n").as_deref(),
            Some("/callback?x=1")
        );
        assert_eq!(request_target(b"POST /callback HTTP/1.1\r\n\r\n"), None);
        assert_eq!(request_target(b""), None);
        assert_eq!(request_target(b"\xff\xfe /x"), None);
    }
}
