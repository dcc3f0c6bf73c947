//! Starting at login, on tauri's mock runtime with the real plugin writing the real entry. The
//! plugin writes under $HOME, so the check runs in a child process of this test binary with
//! its own HOME (setting it here would race the other tests' threads).

use super::{enabled, plugin, set};
use tauri::test::{mock_builder, mock_context, noop_assets};

const CHILD: &str = "LIFELINE_AUTOSTART_TEST_HOME";

#[test]
fn start_at_login_is_off_then_writes_a_hidden_entry_then_removes_it() {
    let home = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "autostart::tests::in_child",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD, home.path())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the child test failed:\n{said}");
    assert!(
        said.contains("1 passed"),
        "the child test did not run:\n{said}"
    );
}

/// Run by the test above, in a process whose HOME is a fresh directory.
#[test]
#[ignore = "runs in a child process of start_at_login_…"]
fn in_child() {
    let Some(home) = std::env::var_os(CHILD) else {
        return;
    };
    let autostart = std::path::Path::new(&home).join(".config/autostart");
    let app = mock_builder()
        .plugin(plugin())
        .build(mock_context(noop_assets()))
        .unwrap();
    let app = app.handle();
    assert!(!enabled(app), "starting at login must be opt-in");

    set(app, true).unwrap();
    assert!(enabled(app));
    let entries: Vec<_> = std::fs::read_dir(&autostart).unwrap().flatten().collect();
    assert_eq!(
        entries.len(),
        1,
        "one autostart entry in {}",
        autostart.display()
    );
    let entry = std::fs::read_to_string(entries[0].path()).unwrap();
    assert!(
        entry
            .lines()
            .any(|l| l.starts_with("Exec=") && l.ends_with(" --hidden")),
        "the entry starts the app hidden, in the tray:\n{entry}"
    );

    set(app, false).unwrap();
    assert!(!enabled(app));
    assert_eq!(std::fs::read_dir(&autostart).unwrap().count(), 0);
}
