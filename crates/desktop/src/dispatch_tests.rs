//! The table against the UI: every command `ui/src/host/tauri.ts` invokes is one the app
//! answers (in the core, or in the window for the dialogs), and every command the table
//! offers a webview is one the UI uses.

use super::*;
use std::collections::BTreeSet;

/// The names the UI's host sends: the first entry of each row of its `COMMANDS` table
/// (`method: ["name", …keys]`), each `call<T>("name", …)` outside it, and each history
/// query's `history("name")`.
fn ui_commands() -> BTreeSet<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ui/src/host/tauri.ts");
    let text = std::fs::read_to_string(path).unwrap();
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let quoted = if line.contains("call<") {
            line.split_once(">(\"").map(|(_, rest)| rest)
        } else if line.contains(": history(\"") {
            line.split_once("history(\"").map(|(_, rest)| rest)
        } else {
            line.trim_start()
                .split_once(": [\"")
                .filter(|(method, _)| method.chars().all(|c| c.is_ascii_alphanumeric()))
                .map(|(_, rest)| rest)
        };
        if let Some(rest) = quoted {
            names.insert(rest.split('"').next().unwrap().to_owned());
        }
    }
    assert!(names.len() > 30, "found only {names:?} in {path}");
    names
}

#[test]
fn every_command_the_ui_invokes_is_answered_and_no_other() {
    let offered: BTreeSet<String> = COMMANDS
        .iter()
        .filter(|c| !INTERNAL.contains(c))
        .chain(WINDOW_COMMANDS)
        .map(|c| c.to_string())
        .collect();
    let ui = ui_commands();
    let missing: Vec<_> = ui.difference(&offered).collect();
    assert!(
        missing.is_empty(),
        "the UI invokes {missing:?}: add them to dispatch.rs's table (or WINDOW_COMMANDS)"
    );
    let unused: Vec<_> = offered.difference(&ui).collect();
    assert!(
        unused.is_empty(),
        "the app offers {unused:?} that the UI never invokes: remove them, or list them in INTERNAL"
    );
}

#[test]
fn the_lists_do_not_overlap_and_name_each_command_once() {
    let mut seen = BTreeSet::new();
    for c in COMMANDS.iter().chain(WINDOW_COMMANDS) {
        assert!(seen.insert(*c), "`{c}` is listed twice");
    }
    for c in INTERNAL {
        assert!(
            COMMANDS.contains(c),
            "the internal `{c}` is not in the table"
        );
    }
}
