//! What the app's tests share: where the fixture server is.

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
