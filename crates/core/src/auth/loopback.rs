//! The loopback redirect listener of a native app's sign-in (RFC 8252 §7.3): one socket on
//! 127.0.0.1 (the configured `callbackPort`, else one the OS picks) that waits for the
//! browser's redirect to `/callback`, answers it with a short page, and hands back the
//! query. Anything else that connects gets a 404 and the wait goes on.

use crate::error::Error;
use reqwest::Url;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

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

    /// Waits for the redirect, at most `limit`.
    pub async fn wait(&self, limit: Duration) -> Result<Callback, Error> {
        let accept = async {
            loop {
                let Ok((mut sock, _)) = self.listener.accept().await else {
                    continue;
                };
                let Some(target) = read_request_target(&mut sock).await else {
                    continue;
                };
                let url = Url::parse("http://127.0.0.1").and_then(|b| b.join(&target));
                match url {
                    Ok(url) if url.path() == CALLBACK_PATH => {
                        let cb = Callback::from_url(&url);
                        let page = if cb.error.is_some() {
                            "Sign-in failed; Lifeline shows why. You can close this window."
                        } else {
                            "Signed in to Lifeline. You can close this window."
                        };
                        respond(&mut sock, "200 OK", page).await;
                        return cb;
                    }
                    _ => respond(&mut sock, "404 Not Found", "Not found").await,
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
}

/// The request target of an HTTP/1 request head (`GET /callback?… HTTP/1.1`).
async fn read_request_target(sock: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?, parts.next()?);
    (method == "GET").then(|| target.to_owned())
}

async fn respond(sock: &mut tokio::net::TcpStream, status: &str, text: &str) {
    let body = format!("<!doctype html><meta charset=utf-8><title>Lifeline</title><p>{text}</p>");
    let resp = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    let _ = sock.write_all(resp.as_bytes()).await;
    let _ = sock.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let cb = l.wait(Duration::from_secs(30)).await.unwrap();
        browser.await.unwrap();
        assert_eq!(cb.code.as_deref(), Some("c+1"));
        assert_eq!(cb.state.as_deref(), Some("s"));
        assert_eq!(cb.iss.as_deref(), Some("https://as"));
    }
}
