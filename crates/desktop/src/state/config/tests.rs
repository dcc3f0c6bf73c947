//! Changing the config of a running `AppState`: real `lifeline-fixture` servers (built next
//! to the test binary by `cargo build --workspace`), real files in a temp directory, a real
//! watcher. Nothing sleeps: every wait is on a snapshot, a change count or a file.

use super::edit::KeyValue;
use super::*;
use crate::source::{AppInfo, Source};
use lifeline_core::config::Config;
use lifeline_core::events::Generation;
use lifeline_core::events::StateName;
use lifeline_core::supervisor::Snapshot;
use notify::EventKind;
use std::fs;
use std::time::Duration;
use tokio::process::Command;

/// `target/debug/lifeline-fixture`: the test binary is in `target/debug/deps`.
fn fixture() -> String {
    let exe = std::env::current_exe().expect("exe");
    let path = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/debug")
        .join("lifeline-fixture");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p lifeline-it`",
        path.display()
    );
    path.display().to_string()
}

struct Setup {
    dir: tempfile::TempDir,
    state: AppState,
}

impl Setup {
    fn path(&self) -> PathBuf {
        self.dir.path().join("lifeline").join("config.json")
    }

    fn file(&self) -> Value {
        serde_json::from_str(&fs::read_to_string(self.path()).expect("read")).expect("json")
    }

    fn names(views: &[crate::view::ServerView]) -> Vec<&str> {
        views.iter().map(|v| v.snapshot.server.as_str()).collect()
    }

    async fn names_now(&self) -> Vec<String> {
        let views = self.state.views().await.expect("views");
        Setup::names(&views)
            .into_iter()
            .map(str::to_owned)
            .collect()
    }
}

fn info(path: &Path, mode: Mode) -> AppInfo {
    AppInfo {
        version: "test",
        mode,
        config_path: Some(path.display().to_string()),
        log_dir: None,
        notices: Vec::new(),
    }
}

/// The app on a config file holding `text`.
fn with_file(text: &str) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("lifeline").join("config.json");
    fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    fs::write(&path, text).expect("write");
    let config = config::load(&path).expect("loads");
    let state = AppState::start(Source {
        config,
        info: info(&path, Mode::Config),
        fixtures: Vec::new(),
    });
    Setup { dir, state }
}

fn stdio_form(name: &str, command: &str, args: &[&str]) -> ServerForm {
    ServerForm {
        name: name.into(),
        transport: "stdio".into(),
        command: command.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: Vec::new(),
        cwd: None,
        url: String::new(),
        headers: Vec::new(),
        disabled: false,
    }
}

fn in_state(state: StateName) -> impl FnMut(&Snapshot) -> bool {
    move |s| s.state.state == Some(state)
}

#[tokio::test]
async fn add_edit_remove_restart_only_the_server_that_changed() {
    let fx = fixture();
    let text = format!(
        r#"{{"x-mine": [1, 2], "mcpServers": {{
            "a": {{"command": "{fx}", "args": ["stdio"]}},
            "b": {{"command": "{fx}", "args": ["stdio"], "x-note": "kept"}}
        }}}}"#
    );
    let s = with_file(&text);
    s.state.wait_for("a", in_state(StateName::Ready)).await;
    s.state.wait_for("b", in_state(StateName::Ready)).await;

    let mut b = s.state.config_get().await.unwrap().servers[1].clone();
    b.env.push(KeyValue {
        key: "MODE".into(),
        value: "edited".into(),
    });
    s.state.server_edit("b", b).await.unwrap();
    assert_eq!(s.file()["mcpServers"]["b"]["env"]["MODE"], "edited");
    assert_eq!(s.file()["mcpServers"]["b"]["x-note"], "kept");
    assert_eq!(s.file()["x-mine"], json!([1, 2]));
    // `b` is a new supervisor (generation 1 again, after the old one's); `a` was not touched.
    s.state.wait_for("b", in_state(StateName::Ready)).await;
    let a = s.state.wait_for("a", |_| true).await;
    assert_eq!(
        (a.generation, a.state.state),
        (Generation(1), Some(StateName::Ready))
    );

    s.state
        .server_add(stdio_form("c", &fx, &["stdio"]))
        .await
        .unwrap();
    assert_eq!(s.names_now().await, ["a", "b", "c"]);
    s.state.wait_for("c", in_state(StateName::Ready)).await;

    s.state.server_remove("c").await.unwrap();
    assert_eq!(s.names_now().await, ["a", "b"]);
    assert!(s.file()["mcpServers"].get("c").is_none());
    let a = s.state.wait_for("a", |_| true).await;
    assert_eq!(
        (a.generation, a.state.state),
        (Generation(1), Some(StateName::Ready))
    );

    let e = s.state.server_remove("c").await.unwrap_err();
    assert_eq!(e.kind, "unknown_server");
    s.state.shutdown().await;
}

#[tokio::test]
async fn a_tool_call_in_flight_does_not_hold_up_an_edit() {
    let fx = fixture();
    let s = with_file(&format!(
        r#"{{"mcpServers": {{"a": {{"command": "{fx}", "args": ["stdio"]}}}}}}"#
    ));
    s.state.wait_for("a", in_state(StateName::Ready)).await;
    let mut call = std::pin::pin!(s.state.call_tool("a", "slow", json!({"ms": 600_000})));
    // Polled first: the call takes the fleet, sends its request and waits for the answer.
    tokio::select! {
        biased;
        _ = &mut call => panic!("a ten-minute call answered"),
        () = std::future::ready(()) => {}
    }
    let mut off = stdio_form("b", &fx, &["stdio"]);
    off.disabled = true;
    // A guard, not a wait: the edit needs the fleet that the call would have held.
    tokio::time::timeout(Duration::from_secs(60), s.state.server_add(off))
        .await
        .expect("the edit went through while the call ran")
        .unwrap();
    assert_eq!(s.names_now().await, ["a", "b"]);
    s.state.shutdown().await;
    assert_eq!(call.await.unwrap_err().kind, "cancelled");
}

#[tokio::test]
async fn invalid_edits_are_refused_with_the_field_named_and_nothing_written() {
    let s = with_file(r#"{"mcpServers": {"a": {"command": "/nonexistent/lifeline-a"}}}"#);
    let before = fs::read_to_string(s.path()).unwrap();
    let check = |e: ErrorView, field: &str, says: &str| {
        assert_eq!(e.kind, "config");
        let fields: Vec<&str> = e.fields.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, [field], "{e:?}");
        assert!(e.message.contains(says), "{}", e.message);
    };

    let mut web = stdio_form("web", "", &[]);
    web.transport = "http".into();
    web.url = "ftp://127.0.0.1/mcp".into();
    let e = s.state.server_add(web).await.unwrap_err();
    check(e, "url", "url");

    let e = s
        .state
        .server_add(stdio_form("a b", "x", &[]))
        .await
        .unwrap_err();
    check(e, "name", "letters, digits");

    let e = s
        .state
        .server_add(stdio_form("a", "x", &[]))
        .await
        .unwrap_err();
    check(e, "name", "already exists");

    let e = s
        .state
        .server_add(stdio_form("new", " ", &[]))
        .await
        .unwrap_err();
    check(e, "command", "command: is empty");

    let mut unset = stdio_form("new", "x", &[]);
    unset.env.push(KeyValue {
        key: "TOKEN".into(),
        value: "${env:LIFELINE_TEST_SURELY_UNSET}".into(),
    });
    let e = s.state.server_add(unset).await.unwrap_err();
    check(e, "env.TOKEN", "LIFELINE_TEST_SURELY_UNSET");

    assert_eq!(fs::read_to_string(s.path()).unwrap(), before);
    assert_eq!(s.names_now().await, ["a"]);
    s.state.shutdown().await;
}

#[tokio::test]
async fn config_get_masks_every_secret_and_an_unchanged_mask_keeps_it() {
    let s = with_file(
        r#"{"mcpServers": {
        "local": {"command": "/nonexistent/x", "env": {"API_KEY": "canary-env-1", "HOME_REF": "${env:HOME}"}},
        "web": {"url": "http://canary-user:canary-pass@127.0.0.1:9/mcp?key=canary-query", "disabled": true,
                "headers": {"Authorization": "Bearer canary-header"}}
    }}"#,
    );
    let view = s.state.config_get().await.unwrap();
    let shown = serde_json::to_string(&view).unwrap();
    assert!(!shown.contains("canary"), "{shown}");
    assert!(shown.contains("${env:HOME}"), "{shown}");
    assert_eq!(view.servers[1].url, "http://***@127.0.0.1:9/mcp?key=***");

    let mut web = view.servers[1].clone();
    web.headers.push(KeyValue {
        key: "X-Trace".into(),
        value: "1".into(),
    });
    s.state.server_edit("web", web).await.unwrap();
    let entry = &s.file()["mcpServers"]["web"];
    assert_eq!(
        entry["url"],
        "http://canary-user:canary-pass@127.0.0.1:9/mcp?key=canary-query"
    );
    assert_eq!(entry["headers"]["Authorization"], "Bearer canary-header");
    assert_eq!(entry["headers"]["X-Trace"], "1");
    s.state.shutdown().await;
}

#[tokio::test]
async fn an_external_edit_applies_live_and_a_broken_one_keeps_the_servers() {
    let s = with_file(r#"{"mcpServers": {"a": {"command": "/nonexistent/lifeline-a"}}}"#);
    let watch = s.state.watch_config().unwrap();
    let mut changes = s.state.changes();
    let edits = async {
        s.state.wait_for("a", in_state(StateName::Retired)).await;
        fs::write(
            s.path(),
            r#"{"mcpServers": {"a": {"command": "/nonexistent/lifeline-a"},
                               "b": {"command": "/nonexistent/lifeline-b", "disabled": true}}}"#,
        )
        .unwrap();
        changes
            .wait_for(|_| s.state.info().notices.is_empty() && runs(&s, "b"))
            .await
            .unwrap();
        s.state.wait_for("b", in_state(StateName::Disabled)).await;
        // `a` was not restarted by the reload.
        assert_eq!(
            s.state.wait_for("a", |_| true).await.generation,
            Generation(1)
        );

        fs::write(s.path(), r#"{"mcpServers": {"#).unwrap();
        changes
            .wait_for(|_| !s.state.info().notices.is_empty())
            .await
            .unwrap();
        let notice = &s.state.info().notices[0];
        assert_eq!(notice.kind, "config");
        assert!(
            notice.message.contains("keep running") && notice.message.contains("line 1"),
            "{}",
            notice.message
        );
        assert_eq!(s.names_now().await, ["a", "b"]);

        fs::write(
            s.path(),
            r#"{"mcpServers": {"b": {"command": "/nonexistent/lifeline-b", "disabled": true}}}"#,
        )
        .unwrap();
        changes
            .wait_for(|_| s.state.info().notices.is_empty())
            .await
            .unwrap();
        assert_eq!(s.names_now().await, ["b"]);
        s.state.shutdown().await;
    };
    tokio::join!(watch.run(&s.state), edits);
}

/// Whether the fleet runs `name` (the change count is bumped once the fleet changed).
fn runs(s: &Setup, name: &str) -> bool {
    s.state
        .fleet
        .try_read()
        .map(|f| f.as_ref().is_some_and(|f| f.get(name).is_some()))
        .unwrap_or(false)
}

#[tokio::test]
async fn reloading_the_apps_own_save_changes_nothing() {
    let s = with_file(r#"{"mcpServers": {"a": {"command": "/nonexistent/lifeline-a"}}}"#);
    s.state.wait_for("a", in_state(StateName::Retired)).await;
    let mut off = stdio_form("b", "/nonexistent/lifeline-b", &[]);
    off.disabled = true;
    s.state.server_add(off).await.unwrap();
    let changes = s.state.changes();
    let before = *changes.borrow();
    // What the watcher does when it sees the app's own save.
    s.state.reload().await;
    assert_eq!(*changes.borrow(), before);
    assert_eq!(
        s.state.wait_for("a", |_| true).await.generation,
        Generation(1)
    );
    s.state.shutdown().await;
}

#[tokio::test]
async fn the_first_add_in_demo_mode_creates_the_file_and_ends_the_demo() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lifeline").join("config.json");
    let demo_config = config::parse(
        r#"{"mcpServers": {"healthy": {"command": "/nonexistent/demo"}}}"#,
        None,
        &|_| None,
    )
    .unwrap();
    let fixture = Command::new(fixture())
        .arg("stdio")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = fixture.id().unwrap();
    let mut info = info(&path, Mode::Demo);
    info.notices
        .push(ErrorView::new(demo::NOTICE_DEMO, "a demo"));
    let state = AppState::start(Source {
        config: demo_config,
        info,
        fixtures: vec![fixture],
    });
    assert!(state.config_get().await.unwrap().servers.is_empty());

    let mut changes = state.changes();
    let mut off = stdio_form("mine", "/nonexistent/mine", &[]);
    off.disabled = true;
    state.server_add(off).await.unwrap();
    assert!(changes.has_changed().unwrap());
    changes.mark_unchanged();

    let file: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        file,
        json!({"mcpServers": {"mine": {"command": "/nonexistent/mine", "disabled": true}}})
    );
    let info = state.info();
    assert_eq!(info.mode, Mode::Config);
    assert!(info.notices.is_empty(), "{:?}", info.notices);
    let views = state.views().await.unwrap();
    assert_eq!(Setup::names(&views), ["mine"]);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the demo's fixture was killed and reaped"
    );
    state.shutdown().await;
}

#[tokio::test]
async fn import_detects_client_files_and_adds_without_overwriting() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let xdg = home.join(".config");
    let path = xdg.join("lifeline").join("config.json");
    fs::create_dir_all(xdg.join("Claude")).unwrap();
    fs::write(
        home.join(".claude.json"),
        r#"{"mcpServers": {
            "notes": {"command": "/nonexistent/notes", "env": {"KEY": "canary-import"}},
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                    "headers": {"Authorization": "Bearer ${LIFELINE_TEST_SURELY_UNSET}"}}
        }}"#,
    )
    .unwrap();
    fs::write(
        xdg.join("Claude").join("claude_desktop_config.json"),
        r#"{"mcpServers": {"notes": {"command": "/nonexistent/other"},
                           "files": {"command": "/nonexistent/files"}}}"#,
    )
    .unwrap();
    let state = AppState::start(Source {
        config: Config::empty(),
        info: info(&path, Mode::Demo),
        fixtures: Vec::new(),
    });
    state.set_import_dirs(&home, &xdg).await;

    let found = state.import_detect().await.unwrap();
    let summary: Vec<(&str, Vec<&str>)> = found
        .iter()
        .map(|d| {
            (
                d.source,
                d.servers.iter().map(|s| s.name.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("claude_desktop", vec!["notes", "files"]),
            ("claude_code", vec!["notes", "web"]),
        ]
    );
    assert!(
        found
            .iter()
            .flat_map(|d| &d.servers)
            .all(|s| s.conflict.is_none())
    );
    assert!(!serde_json::to_string(&found).unwrap().contains("canary"));

    // Choosing nothing writes nothing: the demo goes on.
    let nothing = state
        .import_apply(vec![ImportChoice {
            source: "claude_code".into(),
            servers: Some(Vec::new()),
        }])
        .await
        .unwrap();
    assert!(nothing.added.is_empty());
    assert!(!path.exists());
    assert_eq!(state.info().mode, Mode::Demo);

    let outcome = state
        .import_apply(vec![
            ImportChoice {
                source: "claude_code".into(),
                servers: None,
            },
            ImportChoice {
                source: "claude_desktop".into(),
                servers: None,
            },
        ])
        .await
        .unwrap();
    assert_eq!(outcome.added, ["notes", "web", "files"]);
    let conflicts: Vec<&str> = outcome.conflicts.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(conflicts, ["notes"]);
    assert!(outcome.conflicts[0].reason.contains("from Claude Desktop"));
    let disabled: Vec<&str> = outcome.disabled.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(disabled, ["web"]);

    let file: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(file["mcpServers"]["notes"]["command"], "/nonexistent/notes");
    assert_eq!(file["mcpServers"]["web"]["disabled"], true);
    assert_eq!(state.info().mode, Mode::Config);
    let views = state.views().await.unwrap();
    assert_eq!(Setup::names(&views), ["notes", "web", "files"]);

    let again = state.import_detect().await.unwrap();
    assert!(
        again
            .iter()
            .flat_map(|d| &d.servers)
            .all(|s| s.conflict.is_some())
    );
    let e = state
        .import_apply(vec![ImportChoice {
            source: "cursor".into(),
            servers: None,
        }])
        .await
        .unwrap_err();
    assert!(e.message.contains("no Cursor config"), "{}", e.message);
    state.shutdown().await;
}

#[tokio::test]
async fn fixing_a_file_that_was_broken_at_start_starts_its_servers_and_clears_the_notice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    fs::write(&path, r#"{"mcpServers": []}"#).unwrap();
    let mut info = info(&path, Mode::Config);
    info.notices
        .push(ErrorView::new("config", "mcpServers: expected an object"));
    let state = AppState::start(Source {
        config: Config::empty(),
        info,
        fixtures: Vec::new(),
    });
    fs::write(
        &path,
        r#"{"mcpServers": {"a": {"command": "/nonexistent/a", "disabled": true}}}"#,
    )
    .unwrap();
    state.reload().await;
    assert!(state.info().notices.is_empty());
    state.wait_for("a", in_state(StateName::Disabled)).await;
    state.shutdown().await;
}

#[test]
fn only_changes_to_the_config_file_itself_trigger_a_reload() {
    use notify::event::{AccessKind, CreateKind, ModifyKind, RenameMode};
    let name = Some(std::ffi::OsStr::new("config.json"));
    let check = |kind: EventKind, path: &str, expect: bool| {
        let event = notify::Event::new(kind).add_path(PathBuf::from(path));
        assert_eq!(
            super::file_watch::changes_file(&event, name),
            expect,
            "{kind:?} {path}"
        );
    };
    check(EventKind::Modify(ModifyKind::Any), "/c/config.json", true);
    check(EventKind::Create(CreateKind::File), "/c/config.json", true);
    check(
        EventKind::Modify(ModifyKind::Name(RenameMode::To)),
        "/c/config.json",
        true,
    );
    check(EventKind::Access(AccessKind::Any), "/c/config.json", false);
    check(
        EventKind::Modify(ModifyKind::Any),
        "/c/.config.json.1.0.tmp",
        false,
    );
    check(EventKind::Modify(ModifyKind::Any), "/c/other.json", false);
}
