//! The window process's `window v1` connection over the real local socket: the core pushes
//! `show` when the window should come to the front and `config_changed` when the config
//! changed, and the window process sees the end of the connection when the core goes.

use super::*;
use crate::core_process::Headless;
use crate::instance::{self, Claim};
use crate::test_support::{block_on, runtime};
use lifeline_core::local_socket;
use serde_json::json;
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

const PATIENCE: Duration = Duration::from_secs(10);

/// The next push on the link, within PATIENCE; `None` when the core ended it.
async fn next(link: &mut BufReader<Stream>) -> Option<Push> {
    let mut line = String::new();
    let read = link.read_line(&mut line);
    match tokio::time::timeout(PATIENCE, read)
        .await
        .expect("a push within PATIENCE")
    {
        Ok(n) if n > 0 => Some(serde_json::from_str(&line).expect("a push")),
        _ => None,
    }
}

#[test]
fn the_core_pushes_show_and_config_changes_and_the_window_sees_it_go() {
    let (dir, state) = crate::test_support::state_with_file(
        r#"{"mcpServers": {"web": {"url": "http://127.0.0.1:9/mcp", "disabled": true}}}"#,
    );
    let socket = dir.path().join("socket");
    let _runtime = runtime().enter();
    let Claim::First(guard) = instance::claim(&socket) else {
        panic!("the first claim must win");
    };
    let windows = Windows::new(PathBuf::from("/nonexistent/lifeline-app"), socket.clone());
    let app = Core::new(state, Some(windows), Arc::new(Headless::new(|| {})));
    crate::launch::serve_socket(&app, guard);
    let windows = app.windows.as_ref().unwrap();
    // As if this core had started the window process, which now connects.
    windows.slot().running = true;
    let mut link = block_on(async {
        let mut stream = local_socket::connect(&socket).await.unwrap();
        stream
            .write_all(format!("{HELLO}\n").as_bytes())
            .await
            .unwrap();
        BufReader::new(stream)
    });
    // Once the core holds the link, "show" reaches the window.
    block_on(async {
        tokio::time::timeout(PATIENCE, windows.linked.notified())
            .await
            .expect("the core took the window's link within PATIENCE of its hello");
    });
    show(&app);
    let shown = block_on(next(&mut link));
    assert!(matches!(shown, Some(Push::Show)), "{shown:?}");

    let form = json!({"name": "files", "transport": "http", "url": "http://127.0.0.1:9/files",
                      "disabled": true});
    let call = crate::dispatch::Call {
        command: "server_add".into(),
        args: json!({"server": form}),
        channels: Default::default(),
        caller: LABEL.into(),
    };
    block_on(crate::dispatch::run(&app, call)).unwrap();
    let pushed = match block_on(next(&mut link)) {
        Some(Push::ConfigChanged(info)) => info,
        other => panic!("config_changed after server_add, not {other:?}"),
    };
    assert_eq!(pushed["mode"], "config", "{pushed}");

    // The window process gone, the core lets go of its link: the link's task ends, which
    // closes the channel the slot's sender feeds (after it has emptied the slot).
    let pushes = windows
        .slot()
        .link
        .clone()
        .expect("the core holds the window's link");
    drop(link);
    block_on(async {
        tokio::time::timeout(PATIENCE, pushes.closed())
            .await
            .expect("the core's link task ended within PATIENCE of the window going");
    });
    assert!(
        windows.slot().link.is_none(),
        "the link outlived the window"
    );
    drop(dir);
}
