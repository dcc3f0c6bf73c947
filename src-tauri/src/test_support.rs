//! What the app's tests share: where the fixture server is, and a plain `AppInfo`.

use std::path::PathBuf;

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
