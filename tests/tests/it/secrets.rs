//! `lifeline secrets` and `${keyring:NAME}` end to end: the real `lifeline` binary against
//! the real OS keychain when the tests run inside scripts/with-keyring.sh (a private
//! gnome-keyring on its own D-Bus session; `LIFELINE_KEYCHAIN_TEST=1`), and against the 0600
//! file fallback with no Secret Service at all (no session bus), where `secrets` and
//! `check` say so.

use crate::cli::{CliRun, lifeline_bin};
use crate::support::{self, TempDirGuard};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

const CANARY: &str = "kr-canary-5Ty8Qw2Lp";

/// Whether this test process runs inside a keyring session.
pub fn in_keyring_session() -> bool {
    std::env::var("LIFELINE_KEYCHAIN_TEST").is_ok_and(|v| v == "1")
}

/// How a `lifeline` run finds its secret store.
pub enum Store<'a> {
    /// Whatever this process has: the keychain in a keyring session, else the file at the path.
    Ambient(&'a Path),
    /// No session bus at all (a headless machine): the file at the path.
    NoBus(&'a Path),
}

/// Runs `lifeline ARGS` with `stdin` piped in, its secret store chosen by `store`.
pub async fn lifeline_secrets(args: &[&str], stdin: &str, store: Store<'_>) -> CliRun {
    let mut cmd = Command::new(lifeline_bin());
    cmd.args(args)
        .env_remove("LIFELINE_SECRETS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    match store {
        Store::Ambient(file) => {
            cmd.env("LIFELINE_SECRETS_FILE", file);
        }
        Store::NoBus(file) => {
            let runtime = file.with_extension("runtime");
            std::fs::create_dir_all(&runtime).unwrap();
            cmd.env("LIFELINE_SECRETS_FILE", file)
                .env_remove("DBUS_SESSION_BUS_ADDRESS")
                .env("XDG_RUNTIME_DIR", runtime);
        }
    }
    let mut child = cmd.spawn().expect("running lifeline");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.as_bytes())
        .await
        .expect("writing stdin");
    drop(input);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("lifeline {args:?} did not finish within 60 s"))
        .expect("lifeline's output");
    CliRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A secret name no other test process uses (they share the keychain).
pub fn unique_name(label: &str) -> String {
    format!("it-{label}-{}", std::process::id())
}

fn secrets_file(dir: &TempDirGuard) -> PathBuf {
    dir.path().join("data").join("secrets.json")
}

#[tokio::test]
async fn set_list_and_delete_go_through_the_store_and_never_print_the_value() {
    let dir = TempDirGuard::new("secrets-cli");
    let file = secrets_file(&dir);
    let store = || Store::Ambient(&file);
    let name = unique_name("cli");
    let set = lifeline_secrets(
        &["secrets", "set", &name, "--json"],
        &format!("{CANARY}\n"),
        store(),
    )
    .await;
    assert_eq!(set.code, 0, "{set:?}");
    let backend = &set.outcome()["result"]["backend"];
    let want = if in_keyring_session() {
        "keychain"
    } else {
        "file"
    };
    assert_eq!(backend["kind"], want, "{set:?}");
    if in_keyring_session() {
        assert!(!file.exists(), "the keychain is used, not the file");
    }
    let list = lifeline_secrets(&["secrets", "list"], "", store()).await;
    assert_eq!(list.code, 0, "{list:?}");
    assert!(list.stdout.lines().any(|l| l == name), "{list:?}");
    // The value is used where a config references it, and never printed.
    let fixture = support::stdio_fixture(&json!({}));
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"kr": {
            "command": fixture.program, "args": fixture.args,
            "env": {"API_TOKEN": format!("${{keyring:{name}}}")},
        }}})
        .to_string(),
    )
    .unwrap();
    let config = config.display().to_string();
    let check = lifeline_secrets(&["check", "--json", "--config", &config], "", store()).await;
    assert_eq!(check.code, 0, "{check:?}");
    assert_eq!(check.outcome()["secrets"]["kind"], want, "{check:?}");
    assert_eq!(check.outcome()["servers"][0]["state"], "ready", "{check:?}");
    for run in [&set, &list, &check] {
        assert!(!run.everything().contains(CANARY), "{run:?}");
    }
    let delete = lifeline_secrets(&["secrets", "delete", &name], "", store()).await;
    assert_eq!(delete.code, 0, "{delete:?}");
    let again = lifeline_secrets(&["secrets", "delete", &name], "", store()).await;
    assert_eq!(again.code, 1, "{again:?}");
    assert!(
        again.stderr.contains(&format!("no secret {name}")),
        "{again:?}"
    );
}

#[tokio::test]
async fn a_value_is_never_taken_from_the_command_line_nor_empty() {
    let dir = TempDirGuard::new("secrets-argv");
    let file = secrets_file(&dir);
    let argv = lifeline_secrets(&["secrets", "set", "X", CANARY], "", Store::NoBus(&file)).await;
    assert_eq!(argv.code, 2, "{argv:?}");
    let empty = lifeline_secrets(&["secrets", "set", "X"], "\n", Store::NoBus(&file)).await;
    assert_eq!(empty.code, 2, "{empty:?}");
    assert!(empty.stderr.contains("is empty"), "{empty:?}");
    let bad = lifeline_secrets(&["secrets", "set", "a b"], "v", Store::NoBus(&file)).await;
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(!file.exists());
}

#[tokio::test]
async fn without_a_secret_service_the_file_is_used_and_said_so() {
    let dir = TempDirGuard::new("secrets-file");
    let file = secrets_file(&dir);
    let set = lifeline_secrets(&["secrets", "set", "TOKEN"], CANARY, Store::NoBus(&file)).await;
    assert_eq!(set.code, 0, "{set:?}");
    assert!(
        set.stdout.contains("stored TOKEN in the secrets file"),
        "{set:?}"
    );
    assert!(
        set.stderr.contains("not encrypted") && set.stderr.contains("no OS keychain"),
        "{set:?}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(CANARY));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    // A missing secret is a config error naming the server, the field and the command.
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"gh": {
            "url": "http://127.0.0.1:9/mcp",
            "headers": {"Authorization": "Bearer ${keyring:MISSING_TOKEN}"},
        }}})
        .to_string(),
    )
    .unwrap();
    let config = config.display().to_string();
    let check = lifeline_secrets(&["check", "--config", &config], "", Store::NoBus(&file)).await;
    assert_eq!(check.code, 2, "{check:?}");
    for want in [
        "mcpServers.gh.headers.Authorization",
        "no secret MISSING_TOKEN",
        "lifeline secrets set MISSING_TOKEN",
    ] {
        assert!(check.stderr.contains(want), "{want}: {check:?}");
    }
    // With the secret stored, check connects and says where secrets are kept.
    let fixture = support::stdio_fixture(&json!({}));
    let config = dir.path().join("ok.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"local": {
            "command": fixture.program, "args": fixture.args, "env": {"T": "${keyring:TOKEN}"},
        }}})
        .to_string(),
    )
    .unwrap();
    let config = config.display().to_string();
    let check = lifeline_secrets(&["check", "--config", &config], "", Store::NoBus(&file)).await;
    assert_eq!(check.code, 0, "{check:?}");
    assert!(
        check.stderr.contains("note: secrets are kept in the file"),
        "{check:?}"
    );
    assert!(!check.everything().contains(CANARY), "{check:?}");
}

/// A keyring value counts as a secret wherever it is used: here only in an argument, which
/// the server prints to stderr before it crashes, and `check` quotes that line.
#[tokio::test]
async fn a_keyring_value_is_scrubbed_even_where_only_an_argument_holds_it() {
    let dir = TempDirGuard::new("secrets-arg");
    let file = secrets_file(&dir);
    let name = unique_name("arg");
    let set = lifeline_secrets(&["secrets", "set", &name], CANARY, Store::Ambient(&file)).await;
    assert_eq!(set.code, 0, "{set:?}");
    let script = json!({
        "stderr": format!("arg-marker ${{keyring:{name}}}\n"),
        "rules": [{"method": "initialize", "action": {"kind": "crash", "code": 3}}],
    });
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"leaky": {
            "command": support::fixture_bin(),
            "args": ["stdio", "--script", script.to_string()],
            "reconnect": {"initialDelayMs": 20, "maxDelayMs": 100, "maxAttempts": 2},
        }}})
        .to_string(),
    )
    .unwrap();
    let config = config.display().to_string();
    let check = lifeline_secrets(
        &["check", "--json", "--config", &config],
        "",
        Store::Ambient(&file),
    )
    .await;
    assert_ne!(check.code, 0, "{check:?}");
    assert!(
        check.stdout.contains("arg-marker"),
        "the line is shown: {check:?}"
    );
    assert!(!check.everything().contains(CANARY), "{check:?}");
    let _ = lifeline_secrets(&["secrets", "delete", &name], "", Store::Ambient(&file)).await;
}
