//! What the app's tests share: the fixture server, a plain `AppInfo`, one runtime, and an app
//! (`Core`) to run commands against as the window process would.

use crate::core_process::{Core, Headless};
use crate::dispatch::Call;
use crate::source::Source;
use crate::state::AppState;
use lifeline_core::events::StateName;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

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

const CONFIG: &str = r#"{"mcpServers": {
    "notes": {"command": "/nonexistent/lifeline-app-test", "disabled": true},
    "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "disabled": true}
}}"#;

/// An app with two disabled servers (`notes`, stdio; `web`, HTTP), settled.
pub fn core() -> Arc<Core> {
    let config = lifeline_core::config::parse(CONFIG, None, &|_| None).unwrap();
    let state = block_on(async {
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
    let state = block_on(async {
        let state = AppState::start(Source {
            config,
            info: crate::source::AppInfo {
                config_path: Some(path.display().to_string()),
                ..app_info()
            },
            fixtures: Vec::new(),
        });
        state.set_import_dirs(dir.path(), dir.path()).await;
        state
    });
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
