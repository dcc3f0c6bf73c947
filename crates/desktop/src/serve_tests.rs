//! The app's HTTP endpoint: a real `AppState` supervising the real stdio fixture, the
//! endpoint listening with the app's own resolver (`AppState::attach`), and a host doing
//! raw HTTP/1.1 on loopback — initialize, tools/call — whose call shows on the app's bus.

use super::*;
use crate::test_support::{call_event, fixture_config, start};
use lifeline_core::gateway::http::tokens;
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
    let state = start(fixture_config(), None);
    let dir = tempfile::tempdir().unwrap();
    let tokens_file = tokens::path_in(dir.path());
    let token = tokens::add(&tokens_file, "app-host").unwrap();
    let app = crate::Core::with_served(
        state,
        Served::new(Some(tokens_file)),
        None,
        Arc::new(crate::core_process::Headless::new(|| {})),
    );
    let served = app.served.clone();
    let resolve = resolver(Arc::downgrade(&app));
    crate::test_support::block_on(async {
        let state = &app.state;
        let mut events = state.events().await.unwrap();
        let on = ServeSettings {
            enabled: true,
            port: 0,
        };
        served.apply(on, resolve).await;
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
        let event = call_event(&mut events, "echo").await;
        assert_eq!(event.server, "fixture");
        let (status, _, _) = post(port, "lifeline_wrong", Some(&session), &call).await;
        assert_eq!(status, 401);
        served.stop().await;
        state.shutdown().await;
    });
}

/// An app on a config file in a temp dir (no servers, a `lifeline` block with another key),
/// with its endpoint state on a tokens file in the same dir.
fn app_on_file(dir: &std::path::Path) -> Arc<crate::Core> {
    let path = dir.join("config.json");
    std::fs::write(
        &path,
        "{\n  \"mcpServers\": {},\n  \"lifeline\": {\"requestTimeoutMs\": 5000}\n}\n",
    )
    .unwrap();
    let config = lifeline_core::config::load(&path).unwrap();
    let state = start(config, Some(&path));
    crate::Core::with_served(
        state,
        Served::new(Some(tokens::path_in(dir))),
        None,
        Arc::new(crate::core_process::Headless::new(|| {})),
    )
}

#[test]
fn the_dialog_turns_the_endpoint_on_and_off_live() {
    let dir = tempfile::tempdir().unwrap();
    let core = app_on_file(dir.path());
    let invoke = |cmd: &str, args: Value| crate::test_support::invoke(&core, cmd, args).unwrap();

    let view = invoke("gateway_set", json!({"enabled": true, "port": 0}));
    assert_eq!(view["enabled"], true);
    let port = view["port"].as_u64().expect("listening") as u16;
    assert_eq!(
        view["url"],
        format!("http://127.0.0.1:{port}/servers/NAME/mcp")
    );
    // Written to the file, the other `lifeline` keys kept.
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("config.json")).unwrap())
            .unwrap();
    assert_eq!(
        file["lifeline"],
        json!({"requestTimeoutMs": 5000, "serve": {"enabled": true, "port": 0}})
    );
    // Listening now, without a restart: a request without a token is refused with 401.
    let (status, _, _) = crate::test_support::block_on(post(port, "", None, &json!({})));
    assert_eq!(status, 401);
    assert_eq!(invoke("gateway_endpoint", json!({}))["port"], port);

    let view = invoke("gateway_set", json!({"enabled": false, "port": 0}));
    assert_eq!(view["enabled"], false);
    assert_eq!(view["url"], Value::Null);
    let refused =
        crate::test_support::block_on(tokio::net::TcpStream::connect(("127.0.0.1", port)));
    assert!(refused.is_err(), "the listener is closed");
}

#[test]
fn tokens_are_listed_by_name_and_shown_only_when_made() {
    let dir = tempfile::tempdir().unwrap();
    let core = app_on_file(dir.path());
    let invoke = |cmd: &str, args: Value| crate::test_support::invoke(&core, cmd, args);

    assert_eq!(invoke("gateway_tokens", json!({})).unwrap(), json!([]));
    let made = invoke("gateway_token_add", json!({"client": "cursor"})).unwrap();
    let token = made["token"].as_str().unwrap();
    assert!(token.starts_with("lifeline_"), "{made}");
    let usage = made["usage"].as_str().unwrap();
    assert!(
        usage.contains(&format!("Authorization: Bearer {token}")),
        "{usage}"
    );
    assert!(
        usage.contains("claude mcp add --transport http NAME"),
        "{usage}"
    );
    assert_eq!(
        tokens::get(&tokens::path_in(dir.path()), "cursor")
            .unwrap()
            .as_deref(),
        Some(token)
    );

    let listed = invoke("gateway_tokens", json!({})).unwrap();
    assert_eq!(listed[0]["name"], "cursor");
    assert!(!listed.to_string().contains(token), "{listed}");

    let bad = invoke("gateway_token_add", json!({"client": "no spaces"})).unwrap_err();
    assert_eq!(bad["kind"], "serve");
    assert_eq!(
        invoke("gateway_token_remove", json!({"client": "cursor"})).unwrap(),
        true
    );
    assert_eq!(invoke("gateway_tokens", json!({})).unwrap(), json!([]));
}

#[test]
fn a_port_another_program_holds_is_said_to_the_ui() {
    let dir = tempfile::tempdir().unwrap();
    let core = app_on_file(dir.path());
    let invoke = |cmd: &str, args: Value| crate::test_support::invoke(&core, cmd, args).unwrap();
    // Another program listening on the port the config asks for.
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = taken.local_addr().unwrap().port();
    let view = invoke("gateway_set", json!({"enabled": true, "port": port}));
    assert_eq!(view["enabled"], true);
    assert_eq!(view["url"], Value::Null);
    assert_eq!(view["error"]["kind"], "port_in_use", "{view}");
    let message = view["error"]["message"].as_str().unwrap();
    assert_eq!(
        message,
        format!(
            "port 127.0.0.1:{port} is in use by another program: change `lifeline.serve.port` \
             (here, or in the config), or quit that program"
        )
    );
    // The same on a later look, as the dialog opens.
    assert_eq!(
        invoke("gateway_endpoint", json!({}))["error"],
        view["error"]
    );
    drop(taken);
}

/// A profile attached to the app follows its config: a server added to the file (and so to
/// the `default` profile) is among the servers the session is told of.
#[test]
fn an_attached_profile_follows_the_apps_config() {
    let (_dir, state) = crate::test_support::state_with_file(
        r#"{"mcpServers": {"notes": {"command": "/nonexistent/lifeline-app-test", "disabled": true}}}"#,
    );
    let core = crate::test_support::core_with(state);
    let weak = Arc::downgrade(&core);
    let request = Request {
        target: Target::Profile("default".into()),
        config: None,
    };
    crate::test_support::block_on(async {
        let served = attach(&weak, &request).await.expect("the default profile");
        let gateway::Served::Aggregate(servers, options) = served else {
            panic!("an aggregated session");
        };
        assert!(servers.is_empty(), "the only server is disabled");
        let members = options.members.expect("it follows the config");
        let mut changed = members.changed.clone();
        changed.borrow_and_update();
        let form = crate::state::config::edit::ServerForm {
            name: "more".into(),
            transport: "stdio".into(),
            command: "/nonexistent/lifeline-app-test-2".into(),
            args: vec![],
            env: vec![],
            cwd: None,
            url: String::new(),
            headers: vec![],
            disabled: false,
        };
        core.state.server_add(form).await.expect("added");
        tokio::time::timeout(PATIENCE, changed.changed())
            .await
            .expect("the config's change is told")
            .unwrap();
        let now = (members.current)().await;
        let names: Vec<&str> = now.servers.iter().map(|(s, _)| s.name()).collect();
        assert_eq!(names, ["more"]);
        assert_eq!(now.profile.map(|p| p.name), Some("default".to_owned()));
    });
    let unknown = Request {
        target: Target::Profile("nope".into()),
        config: None,
    };
    let refused = crate::test_support::block_on(attach(&weak, &unknown));
    let Err((Refusal::Unknown, message)) = refused else {
        panic!("an unknown profile is refused");
    };
    assert!(message.contains("there is no profile `nope`"), "{message}");
}
