//! Files Lifeline keeps, with the real `lifeline` binary: two processes changing one store
//! at once both keep their change, and a tokens file another user could have planted is
//! refused with the path and the fix.

use crate::cli::lifeline_bin;
use crate::support::TempDirGuard;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `lifeline serve token ARGS` with the history (and so the tokens) in `history`'s directory.
fn token(history: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(lifeline_bin());
    cmd.args(["serve", "token"])
        .args(args)
        .env("LIFELINE_HISTORY", history)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn token_adds_started_together_all_land() {
    let dir = TempDirGuard::new("token-adds");
    let history = dir.path().join("lifeline").join("history.db");
    let clients: Vec<String> = (0..8).map(|n| format!("host-{n}")).collect();
    let adders: Vec<_> = clients
        .iter()
        .map(|c| token(&history, &["add", c]).spawn().expect("lifeline runs"))
        .collect();
    for adder in adders {
        let out = adder.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }
    let out = token(&history, &["list"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let listed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    assert_eq!(listed, clients, "every add kept");
}

#[cfg(unix)]
#[test]
fn a_tokens_file_in_a_directory_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDirGuard::new("token-shared");
    let shared = dir.path().join("shared");
    let history = shared.join("history.db");
    let out = token(&history, &["add", "planted"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    for args in [&["list"][..], &["add", "mine"], &["show", "planted"]] {
        let out = token(&history, args).output().unwrap();
        let said = text(&out);
        assert!(!out.status.success(), "{args:?}: {said}");
        assert!(
            said.contains(&format!(
                "lifeline serve token {}: the directory {} is writable by others (mode 0777)",
                args[0],
                shared.display()
            )) && said.contains(&format!("chmod go-w {}", shared.display())),
            "{args:?}: {said}"
        );
        assert!(!said.contains("lifeline_"), "no token shown: {said}");
    }
}
