//! The commands over real IPC, on tauri's mock runtime (no display): the same path a
//! webview's `invoke` takes, from the local origin `tauri://localhost`.

use lifeline_core::config;
use lifeline_core::events::StateName;
use lifeline_desktop::Core;
use lifeline_desktop::core_process::Headless;
use lifeline_desktop::source::{AppInfo, Mode, Source};
use lifeline_desktop::state::AppState;
use serde_json::{Value, json};
use std::sync::Arc;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{
    INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder, mock_context, noop_assets,
};
use tauri::webview::InvokeRequest;
use tauri::{App, WebviewWindow, WebviewWindowBuilder};

const CONFIG: &str = r#"{"mcpServers": {
    "notes": {"command": "/nonexistent/lifeline-app-test", "disabled": true},
    "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "disabled": true}
}}"#;

pub(crate) fn app() -> (App<MockRuntime>, WebviewWindow<MockRuntime>) {
    let config = config::parse(CONFIG, None, &|_| None).unwrap();
    let state = tauri::async_runtime::block_on(async {
        let state = AppState::start(Source {
            config,
            info: app_info(),
            fixtures: Vec::new(),
        });
        for server in ["notes", "web"] {
            state
                .wait_for(server, |s| s.state.state == Some(StateName::Disabled))
                .await;
        }
        state
    });
    let (app, webview) = window(state);
    (app, webview)
}

/// The app's commands on tauri's mock runtime, with `state`, and its main window.
pub(crate) fn window(state: AppState) -> (App<MockRuntime>, WebviewWindow<MockRuntime>) {
    let core = Core::new(state, None, Arc::new(Headless::new(|| {})));
    let app = crate::invoke::with_commands(mock_builder())
        .manage(core)
        .build(mock_context(noop_assets()))
        .unwrap();
    let webview = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    (app, webview)
}

pub(crate) fn invoke(
    webview: &WebviewWindow<MockRuntime>,
    cmd: &str,
    args: Value,
) -> Result<Value, Value> {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(args),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    };
    get_ipc_response(webview, request).map(|b| b.deserialize::<Value>().unwrap())
}

#[test]
fn snapshot_lists_the_configured_servers_as_views() {
    let (_app, webview) = app();
    let views = invoke(&webview, "snapshot", json!({})).unwrap();
    let rows: Vec<Value> = views
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            json!([
                v["server"],
                v["transport"],
                v["state"],
                v["generation"],
                v["restarts"],
                v["last_restart_at"]
            ])
        })
        .collect();
    assert_eq!(
        rows,
        [
            json!(["notes", "stdio", "disabled", 0, 0, null]),
            json!(["web", "http", "disabled", 0, 0, null]),
        ]
    );
    // The snapshot's own fields are flattened in, not nested.
    assert_eq!(views[0]["tools"], json!([]));
    assert_eq!(views[0]["quarantine_level"], 0);
}

#[test]
fn failures_are_kind_and_message() {
    let (_app, webview) = app();
    let e = invoke(&webview, "reconnect", json!({"server": "nope"})).unwrap_err();
    assert_eq!(
        e,
        json!({"kind": "unknown_server", "message": "there is no server named `nope` (configured: notes, web)"})
    );
    let e = invoke(
        &webview,
        "call_tool",
        json!({"server": "notes", "tool": "echo"}),
    )
    .unwrap_err();
    assert_eq!(e["kind"], "transport");
    assert!(e["message"].as_str().unwrap().contains("not ready"));
}

#[test]
fn app_info_says_where_the_servers_came_from() {
    let (_app, webview) = app();
    let info = invoke(&webview, "app_info", json!({})).unwrap();
    assert_eq!(info["mode"], "config");
    assert_eq!(info["notices"], json!([]));
}

#[test]
fn subscribe_takes_a_channel_and_returns_the_snapshot() {
    let (_app, webview) = app();
    // What `new Channel()` from @tauri-apps/api serializes to.
    let views = invoke(&webview, "subscribe", json!({"channel": "__CHANNEL__:7"})).unwrap();
    assert_eq!(views.as_array().unwrap().len(), 2);
    let e = invoke(&webview, "subscribe", json!({"channel": 7})).unwrap_err();
    assert!(e.as_str().unwrap().contains("channel"), "{e}");
}

#[test]
fn the_detail_commands_answer_over_ipc() {
    let (_app, webview) = app();
    // `progress` and `call_id` are optional; a progress that is not a Channel is refused.
    let with_channel =
        json!({"server": "notes", "tool": "echo", "callId": "c1", "progress": "__CHANNEL__:9"});
    let e = invoke(&webview, "call_tool", with_channel).unwrap_err();
    assert_eq!(e["kind"], "transport", "{e}");
    let bad = json!({"server": "notes", "tool": "echo", "progress": 9});
    let e = invoke(&webview, "call_tool", bad).unwrap_err();
    assert!(e.as_str().unwrap().contains("progress"), "{e}");

    let cancelled = invoke(&webview, "cancel_call", json!({"callId": "c1"})).unwrap();
    assert_eq!(cancelled, false);
    assert_eq!(
        invoke(&webview, "tool_list", json!({"server": "notes"})).unwrap(),
        json!([])
    );
    assert_eq!(
        invoke(&webview, "server_stderr", json!({"server": "web"})).unwrap(),
        json!([])
    );
    let command = invoke(&webview, "server_command", json!({"server": "notes"})).unwrap();
    assert_eq!(command["program"], Value::Null);
    assert!(
        command["problem"]
            .as_str()
            .unwrap()
            .contains("does not exist"),
        "{command}"
    );
    assert_eq!(
        invoke(&webview, "server_command", json!({"server": "web"})).unwrap(),
        Value::Null
    );
    let config = invoke(&webview, "server_config", json!({"server": "web"})).unwrap();
    assert_eq!(config["url"], "http://127.0.0.1:9/mcp");
    let e = invoke(&webview, "server_config", json!({"server": "nope"})).unwrap_err();
    assert_eq!(e["kind"], "unknown_server");
}

/// What a test's app says about itself: a config-mode app with no file and no notices.
fn app_info() -> AppInfo {
    AppInfo {
        version: "test",
        mode: Mode::Config,
        config_path: None,
        log_dir: None,
        notices: Vec::new(),
    }
}

/// The app on a real config file in a temp directory.
fn app_with_file(
    text: &str,
) -> (
    tempfile::TempDir,
    App<MockRuntime>,
    WebviewWindow<MockRuntime>,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    std::fs::write(&path, text).unwrap();
    let config = config::load(&path).unwrap();
    let state = tauri::async_runtime::block_on(async {
        let state = AppState::start(Source {
            config,
            info: AppInfo {
                version: "test",
                mode: Mode::Config,
                config_path: Some(path.display().to_string()),
                log_dir: None,
                notices: Vec::new(),
            },
            fixtures: Vec::new(),
        });
        // No other client's files here: the test never reads the real home directory.
        state.set_import_dirs(dir.path(), dir.path()).await;
        state
    });
    let (app, webview) = window(state);
    (dir, app, webview)
}

#[test]
fn config_commands_take_the_documented_arguments_and_refuse_with_fields() {
    let (dir, _app, webview) = app_with_file(
        r#"{"mcpServers": {"web": {"url": "http://127.0.0.1:9/mcp?token=canary-q", "disabled": true,
                                   "headers": {"Authorization": "Bearer canary-h"}}}}"#,
    );
    let view = invoke(&webview, "config_get", json!({})).unwrap();
    assert!(!view.to_string().contains("canary"), "{view}");
    assert_eq!(
        view["servers"][0],
        json!({"name": "web", "transport": "http", "command": "", "args": [], "env": [],
               "cwd": null, "url": "http://127.0.0.1:9/mcp?token=***",
               "headers": [{"key": "Authorization", "value": "***"}], "disabled": true})
    );

    let bad = json!({"name": "files", "transport": "http", "url": "ftp://127.0.0.1/x"});
    let e = invoke(&webview, "server_add", json!({"server": bad})).unwrap_err();
    assert_eq!(e["kind"], "config");
    assert_eq!(e["fields"][0]["field"], "url");

    let mut web = view["servers"][0].clone();
    web["disabled"] = json!(false);
    web["name"] = json!("web2");
    invoke(
        &webview,
        "server_edit",
        json!({"name": "web", "server": web}),
    )
    .unwrap();
    let file = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    assert!(file.contains("canary-q") && file.contains("canary-h") && file.contains("web2"));
    invoke(&webview, "server_remove", json!({"name": "web2"})).unwrap();
    assert_eq!(
        invoke(&webview, "config_get", json!({})).unwrap()["servers"],
        json!([])
    );

    let found = invoke(&webview, "import_detect", json!({})).unwrap();
    assert_eq!(found, json!([]));
    let e = invoke(
        &webview,
        "import_apply",
        json!({"sources": [{"source": "emacs"}]}),
    )
    .unwrap_err();
    assert_eq!(
        e["message"],
        "`emacs` is not a client to import from (known: claude_desktop, claude_code, cursor, vscode)"
    );
}
