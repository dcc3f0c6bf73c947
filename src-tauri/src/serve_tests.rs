//! The app's HTTP endpoint: a real `AppState` supervising the real stdio fixture, the
//! endpoint listening with the app's own resolver (`AppState::attach`), and a host doing
//! raw HTTP/1.1 on loopback — initialize, tools/call — whose call shows on the app's bus.

use super::*;
use crate::source::{AppInfo, Mode, Source};
use crate::test_support::fixture;
use lifeline_core::events::EventBody;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PATIENCE: Duration = Duration::from_secs(10);

/// One POST with `Connection: close`: the status, the session header, the body.
async fn post(
    port: u16,
    token: &str,
    session: Option<&str>,
    body: &Value,
) -> (u16, Option<String>, String) {
    let body = body.to_string();
    let mut head = format!(
        "POST /servers/fixture/mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Type: application/json\r\nAccept: application/json\r\n\
         Authorization: Bearer {token}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(s) = session {
        head.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
    }
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream
        .write_all(format!("{head}\r\n{body}").as_bytes())
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(PATIENCE, stream.read_to_string(&mut answer))
        .await
        .expect("an answer within PATIENCE")
        .unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    let session = head.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("mcp-session-id: ")
            .map(str::to_owned)
    });
    (status, session, body.to_owned())
}

#[test]
fn a_host_reaches_the_apps_supervisor_over_http() {
    let text = json!({"mcpServers": {
        "fixture": {"command": fixture(), "args": ["stdio"]}
    }})
    .to_string();
    let config = lifeline_core::config::parse(&text, None, &|_| None).unwrap();
    let state = tauri::async_runtime::block_on(async {
        AppState::start(Source {
            config,
            info: AppInfo {
                version: "test",
                mode: Mode::Config,
                config_path: None,
                log_dir: None,
                notices: Vec::new(),
            },
            fixtures: Vec::new(),
        })
    });
    let (app, _webview) = crate::ipc_tests::window(state);
    let dir = tempfile::tempdir().unwrap();
    let tokens_file = tokens::path_in(dir.path());
    let token = tokens::add(&tokens_file, "app-host").unwrap();
    let served = Arc::new(Served::default());
    let resolve = resolver(app.handle().clone());
    tauri::async_runtime::block_on(async {
        let state = app.state::<AppState>();
        let mut events = state.events().await.unwrap();
        listen(served.clone(), 0, resolve, Some(tokens_file)).await;
        let view = served.view();
        assert!(view.enabled && view.error.is_none(), "{view:?}");
        let port = view.port.unwrap();
        assert_eq!(
            view.url.as_deref(),
            Some(format!("http://127.0.0.1:{port}/servers/NAME/mcp").as_str())
        );

        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "http-host", "version": "1"}}});
        let (status, session, body) = post(port, &token, None, &init).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("lifeline-fixture"), "{body}");
        let session = session.expect("a session id");
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "over http"}}});
        let (status, _, body) = post(port, &token, Some(&session), &call).await;
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["result"]["content"][0]["text"], "over http");
        // The call ran on the app's supervisor: its event is on the app's bus.
        let seen = async {
            loop {
                let event = events.recv().await.expect("the bus is open");
                if matches!(&event.body, EventBody::Call { tool, .. } if tool == "echo") {
                    return event;
                }
            }
        };
        let event = tokio::time::timeout(PATIENCE, seen)
            .await
            .expect("the call's event");
        assert_eq!(event.server, "fixture");
        let (status, _, _) = post(port, "lifeline_wrong", Some(&session), &call).await;
        assert_eq!(status, 401);
        served.stop().await;
        state.shutdown().await;
    });
}
