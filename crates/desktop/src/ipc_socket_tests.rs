//! The window process's protocol over the real local socket: an app (`Core`, no display)
//! answering on the instance socket as the core process does (`launch::serve_socket`), and
//! the window's side of it (`Remote`).

use super::*;
use crate::Core;
use crate::instance::{self, Claim};
use crate::test_support::{block_on, runtime};
use serde_json::json;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;

const PATIENCE: Duration = Duration::from_secs(10);

/// An app (two disabled servers, test_support.rs) answering on a socket in a temp directory.
fn core() -> (tempfile::TempDir, Arc<Core>, Remote) {
    let dir = tempfile::tempdir().unwrap();
    let app = crate::test_support::core();
    let _runtime = runtime().enter();
    let Claim::First(guard) = instance::claim(dir.path()) else {
        panic!("the first claim must win");
    };
    crate::launch::serve_socket(&app, guard);
    let remote = Remote {
        dir: dir.path().to_owned(),
    };
    (dir, app, remote)
}

fn call(command: &str, args: Value) -> Call {
    Call {
        command: command.into(),
        args,
        channels: HashMap::new(),
        caller: "main".into(),
    }
}

fn run(remote: &Remote, call: Call) -> Reply {
    block_on(async {
        tokio::time::timeout(PATIENCE, remote.call(call))
            .await
            .expect("an answer within PATIENCE")
    })
}

#[test]
fn a_command_is_answered_with_its_value_or_its_error() {
    let (_dir, _app, remote) = core();
    let views = run(&remote, call("snapshot", json!({}))).unwrap();
    let names: Vec<_> = views
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["server"])
        .collect();
    assert_eq!(names, [&json!("notes"), &json!("web")]);

    let e = run(&remote, call("reconnect", json!({"server": "nope"}))).unwrap_err();
    assert_eq!(e["kind"], "unknown_server", "{e}");

    let e = run(&remote, call("reconnect", json!({}))).unwrap_err();
    let e = e.as_str().unwrap();
    assert!(
        e.contains("invalid args `server` for command `reconnect`"),
        "{e}"
    );

    let e = run(&remote, call("open_sesame", json!({}))).unwrap_err();
    let e = e.as_str().unwrap();
    assert!(e.contains("no command `open_sesame`"), "{e}");

    // camelCase keys, as the UI sends them.
    let cancelled = run(&remote, call("cancel_call", json!({"callId": "c1"}))).unwrap();
    assert_eq!(cancelled, false);
}

#[test]
fn subscribe_answers_the_snapshot_then_streams_events_until_the_window_goes() {
    let (_dir, app, remote) = core();
    let (tx, events) = std_mpsc::channel::<Value>();
    let mut subscribe = call("subscribe", json!({"channel": "__CHANNEL__:1"}));
    subscribe
        .channels
        .insert("channel".into(), Box::new(move |e| tx.send(e).is_ok()));
    let views = run(&remote, subscribe).unwrap();
    assert_eq!(views.as_array().unwrap().len(), 2);

    // A change after the answer arrives on the stream.
    run(&remote, call("enable", json!({"server": "web"}))).unwrap();
    let enabled = (0..1000)
        .map(|_| {
            events
                .recv_timeout(PATIENCE)
                .expect("the enable's events within PATIENCE")
        })
        .find(|e| e["server"] == "web" && e["type"] == "state" && e["state"] != "disabled")
        .expect("a state event of `web` other than disabled");
    assert!(enabled["seq"].as_u64().is_some(), "{enabled}");

    // The receiver gone (the page went away), the stream ends; the core keeps answering.
    drop(events);
    run(&remote, call("disable", json!({"server": "web"}))).unwrap();
    let views = run(&remote, call("snapshot", json!({}))).unwrap();
    assert_eq!(views.as_array().unwrap().len(), 2);
    drop(app);
}

#[test]
fn a_channel_the_command_does_not_have_is_refused_and_one_it_has_is_optional() {
    let (_dir, _app, remote) = core();
    let e = run(&remote, call("subscribe", json!({"channel": 7}))).unwrap_err();
    assert!(
        e.as_str().unwrap().contains("`channel` is not a Channel"),
        "{e}"
    );

    let mut with_progress = call("call_tool", json!({"server": "notes", "tool": "echo"}));
    with_progress
        .channels
        .insert("progress".into(), Box::new(|_| true));
    let e = run(&remote, with_progress).unwrap_err();
    assert_eq!(e["kind"], "transport", "{e}");
}

#[test]
fn a_request_that_is_not_json_gets_an_error_line() {
    let (dir, _app, _remote) = core();
    let answer = block_on(async {
        let mut stream = lifeline_core::local_socket::connect(dir.path())
            .await
            .unwrap();
        stream
            .write_all(format!("{HELLO}\nnot json\n").as_bytes())
            .await
            .unwrap();
        let mut line = String::new();
        let mut reader = BufReader::new(stream);
        let read = reader.read_line(&mut line);
        tokio::time::timeout(PATIENCE, read).await.unwrap().unwrap();
        line
    });
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let e = answer["err"].as_str().unwrap();
    assert!(
        e.starts_with("not a request of the app's protocol (ipc v1)"),
        "{e}"
    );
}
