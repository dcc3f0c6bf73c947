//! What the app's tests share: the fixture server, a plain `AppInfo`, one runtime, an app's
//! state started on a config, and an app (`Core`) to run commands against as the window
//! process would.

use crate::core_process::{Core, Headless};
use crate::dispatch::Call;
use crate::source::Source;
use crate::state::AppState;
use lifeline_core::config::Config;
use lifeline_core::events::{Event, EventBody, StateName};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// The fixture binary next to this test's executable (target/debug/deps/..).
pub fn fixture() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/debug")
        .join("lifeline-fixture");
    assert!(
        path.is_file(),
        "{} is missing: build it first (cargo build -p lifeline-it)",
        path.display()
    );
    path
}

/// A config with one server, `fixture`: the fixture binary speaking stdio.
pub fn fixture_config() -> Config {
    let text = json!({"mcpServers": {
        "fixture": {"command": fixture(), "args": ["stdio"]}
    }})
    .to_string();
    lifeline_core::config::parse(&text, None, &|_| None).unwrap()
}

/// What a test's app says about itself: a config-mode app with no file and no notices.
pub fn app_info() -> crate::source::AppInfo {
    crate::source::AppInfo {
        version: "test",
        mode: crate::source::Mode::Config,
        config_path: None,
        log_dir: None,
        notices: Vec::new(),
    }
}

/// The runtime every test's app runs on: one for the whole test binary, as an app has one,
/// so that what a command spawns outlives the `block_on` that ran it.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    runtime().block_on(future)
}

/// An app's state on `config`, started on the tests' runtime; its file, as the app says it,
/// is `config_path` (none for a config that came from no file).
pub fn start(config: Config, config_path: Option<&Path>) -> AppState {
    block_on(async {
        AppState::start(Source {
            config,
            info: crate::source::AppInfo {
                config_path: config_path.map(|p| p.display().to_string()),
                ..app_info()
            },
            fixtures: Vec::new(),
        })
    })
}

/// The `Call` event of `tool` on the app's bus (`events`, subscribed before the call); fails
/// the test if none comes within 10 s.
pub async fn call_event(events: &mut broadcast::Receiver<Event>, tool: &str) -> Event {
    let seen = async {
        loop {
            let event = events.recv().await.expect("the bus is open");
            if matches!(&event.body, EventBody::Call { tool: t, .. } if t == tool) {
                return event;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), seen)
        .await
        .expect("the call's event on the app's bus")
}

const CONFIG: &str = r#"{"mcpServers": {
    "notes": {"command": "/nonexistent/lifeline-app-test", "disabled": true},
    "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "disabled": true}
}}"#;

/// An app with two disabled servers (`notes`, stdio; `web`, HTTP), settled.
pub fn core() -> Arc<Core> {
    let config = lifeline_core::config::parse(CONFIG, None, &|_| None).unwrap();
    let state = start(config, None);
    block_on(async {
        for server in ["notes", "web"] {
            state
                .wait_for(server, |s| s.state.state == Some(StateName::Disabled))
                .await;
        }
    });
    core_with(state)
}

/// An app on `state`, with no tray and no window process; Quit only logs.
pub fn core_with(state: AppState) -> Arc<Core> {
    let _runtime = runtime().enter();
    Core::new(
        state,
        None,
        Arc::new(Headless::new(|| tracing::info!("quit"))),
    )
}

/// An app's state on the config file `text` (in the returned directory, which also stands
/// for every other client's home: the test never reads the real one), for a test to make its
/// own `Core` of.
pub fn state_with_file(text: &str) -> (tempfile::TempDir, AppState) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    std::fs::write(&path, text).unwrap();
    let config = lifeline_core::config::load(&path).unwrap();
    let state = start(config, Some(&path));
    block_on(state.set_import_dirs(dir.path(), dir.path()));
    (dir, state)
}

/// Runs `command` with `args` as the window process's invoke would (no Channels).
pub fn invoke(core: &Arc<Core>, command: &str, args: Value) -> Result<Value, Value> {
    let call = Call {
        command: command.into(),
        args,
        channels: Default::default(),
        caller: "main".into(),
    };
    block_on(crate::dispatch::run(core, call))
}
