//! A host started from the desktop gives `lifeline connect` the desktop's minimal PATH; the
//! server's command is found anyway, on the PATH the user's login shell builds
//! (`lifeline_core::login_path`). The shell here is a stand-in whose "profile" adds a
//! directory holding the only copy of the server under the name the config uses.

use super::config;
use crate::support::{TempDirGuard, stdio_fixture};
use lifeline_core::transport::stdio::{self, StdioConfig};
use lifeline_core::{Session, SessionOptions};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

#[tokio::test]
async fn connect_finds_a_server_that_only_the_login_shells_path_has() {
    let dir = TempDirGuard::new("login-path");
    let bin = dir.path().join("login-only-bin");
    std::fs::create_dir(&bin).unwrap();
    let fx = stdio_fixture(&json!({}));
    std::os::unix::fs::symlink(&fx.program, bin.join("ll-login-only-server")).unwrap();
    let shell = dir.path().join("shell");
    std::fs::write(
        &shell,
        format!(
            "#!/bin/sh\necho 'a profile that talks'\nPATH={}:$PATH\nexport PATH\neval \"$4\"\n",
            bin.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = config(
        &dir,
        json!({ "fixture": { "command": "ll-login-only-server", "args": fx.args } }),
    );

    let mut cfg = StdioConfig::new(
        crate::cli::lifeline_bin().display().to_string(),
        vec![
            "connect".into(),
            "fixture".into(),
            "--config".into(),
            path.display().to_string(),
        ],
    );
    // As a desktop starts it: no terminal, a minimal PATH, the user's shell.
    cfg.env = vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("SHELL".into(), shell.display().to_string()),
        ("LIFELINE_LOGIN_PATH".into(), "1".into()),
    ];
    let (name, value) = crate::cli::history_env();
    cfg.env.push((name, value));
    let conn = stdio::spawn(&cfg).expect("spawn lifeline connect");
    let host = Session::connect(conn, SessionOptions::default())
        .await
        .expect("the gateway's handshake");
    let tools = tokio::time::timeout(std::time::Duration::from_secs(30), host.list_tools())
        .await
        .expect("tools/list answered within 30 s")
        .expect("the server, found on the login shell's PATH, lists its tools");
    assert!(
        tools.iter().any(|t| t.name == "echo"),
        "the fixture's tools: {tools:?}"
    );
    host.close().await;
}
