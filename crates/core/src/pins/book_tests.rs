//! Two processes over one pins file, as a bridge and `lifeline tools approve` are: a first
//! sight seen by both, a change held in one and approved in the other, and the approval
//! reaching the first without being undone.

use super::*;
use serde_json::json;

fn tool(description: &str) -> Value {
    json!({"name": "read", "description": description, "inputSchema": {"type": "object"}})
}

fn standings(judged: &Judged) -> Vec<&Standing> {
    judged.tools.iter().map(|(_, s)| s).collect()
}

#[test]
fn an_approval_in_one_process_reaches_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = store::path_in(dir.path());
    let (bridge, problem) = Book::open(Some(path.clone()), ["fs"]);
    assert_eq!(problem, None);
    let first = bridge.judge("fs", &[tool("Reads.")], 100);
    assert_eq!(standings(&first), [&Standing::FirstSight]);

    // Another process opened after: the tool is pinned already, still marked new until
    // someone looks; looked at (approved) there, it is approved here too.
    let (cli, _) = Book::open(Some(path.clone()), ["fs"]);
    let seen = cli.judge("fs", &[tool("Reads.")], 150);
    assert_eq!(standings(&seen), [&Standing::FirstSight]);
    cli.approve("fs", "read", 160).unwrap();
    assert!(bridge.reload_if_changed());
    let looked = bridge.judge("fs", &[tool("Reads.")], 170);
    assert_eq!(standings(&looked), [&Standing::Approved]);

    // The server changes the description: held, raised once.
    let changed = bridge.judge("fs", &[tool("Reads ~/.ssh too.")], 200);
    assert!(matches!(
        standings(&changed)[..],
        [Standing::Changed { .. }]
    ));
    assert_eq!(changed.newly_held, ["read"]);
    let again = bridge.judge("fs", &[tool("Reads ~/.ssh too.")], 210);
    assert!(again.newly_held.is_empty());

    // Approved in the other process: the bridge sees the file changed, and approves.
    cli.approve("fs", "read", 300).unwrap();
    assert!(
        bridge.reload_if_changed(),
        "the bridge notices the approval"
    );
    let approved = bridge.judge("fs", &[tool("Reads ~/.ssh too.")], 310);
    assert_eq!(standings(&approved), [&Standing::Approved]);
    assert!(!bridge.reload_if_changed(), "nothing changed since");
}

#[test]
fn a_stale_process_judging_does_not_undo_an_approval() {
    let dir = tempfile::tempdir().unwrap();
    let path = store::path_in(dir.path());
    let (bridge, _) = Book::open(Some(path.clone()), ["fs"]);
    bridge.judge("fs", &[tool("Reads.")], 100);
    bridge.judge("fs", &[tool("Reads more.")], 200);
    let (cli, _) = Book::open(Some(path.clone()), ["fs"]);
    cli.approve("fs", "read", 300).unwrap();
    // The bridge judges a third text before it has looked at the file again.
    let third = bridge.judge("fs", &[tool("Reads, third.")], 400);
    assert_eq!(third.newly_held, ["read"]);
    let (fresh, _) = Book::open(Some(path), ["fs"]);
    let pins = fresh.server("fs").unwrap();
    assert_eq!(
        pins.tools["read"].definition["description"], "Reads more.",
        "the approval stands"
    );
    assert_eq!(pins.held["read"].definition["description"], "Reads, third.");
}

#[test]
fn approving_nothing_held_says_so_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = store::path_in(dir.path());
    let (book, _) = Book::open(Some(path.clone()), ["fs"]);
    book.judge("fs", &[tool("Reads.")], 100);
    // Pinned on first sight: approving it marks it looked at; then nothing is waiting.
    book.approve("fs", "read", 150).unwrap();
    let before = std::fs::read_to_string(&path).unwrap();
    let refused = book.approve("fs", "read", 200).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "`fs` has no change of `read` waiting for review: run `lifeline tools review fs` to \
         see what is"
    );
    assert!(book.reject("fs", "nope", 300).is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}

#[test]
fn a_corrupt_file_holds_every_tool_and_a_book_without_a_file_still_judges() {
    let dir = tempfile::tempdir().unwrap();
    let path = store::path_in(dir.path());
    std::fs::write(&path, "{").unwrap();
    let (book, problem) = Book::open(Some(path), ["fs"]);
    assert!(problem.unwrap().contains("held as new"));
    let judged = book.judge("fs", &[tool("Reads.")], 100);
    assert_eq!(standings(&judged), [&Standing::New]);

    let (memory, problem) = Book::open(None, ["fs"]);
    assert_eq!(problem, None);
    let first = memory.judge("fs", &[tool("Reads.")], 100);
    assert_eq!(standings(&first), [&Standing::FirstSight]);
    memory.judge("fs", &[tool("Reads more.")], 200);
    memory.approve("fs", "read", 300).unwrap();
    let approved = memory.judge("fs", &[tool("Reads more.")], 400);
    assert_eq!(standings(&approved), [&Standing::Approved]);
    assert!(!memory.reload_if_changed());
}

#[test]
fn a_decision_on_several_tools_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = store::path_in(dir.path());
    let (book, _) = Book::open(Some(path.clone()), ["fs"]);
    book.judge("fs", &[tool("Reads.")], 100);
    let write = json!({"name": "write", "description": "Writes."});
    book.judge("fs", &[tool("Reads more."), write], 500);
    let before = std::fs::read_to_string(&path).unwrap();
    let both = Which::Tools(vec!["write".into(), "nope".into()]);
    assert!(book.decide("fs", Decision::Approve, &both, 600).is_err());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        before,
        "nothing written"
    );
    assert_eq!(book.review("fs").awaiting(), 2);
    // `write` rejected; then everything still waiting (the change of `read`) approved.
    let write = Which::Tools(vec!["write".into()]);
    assert_eq!(
        book.decide("fs", Decision::Reject, &write, 700).unwrap(),
        ["write"]
    );
    let all = book
        .decide("fs", Decision::Approve, &Which::All, 800)
        .unwrap();
    assert_eq!(all, ["read"]);
    assert_eq!(book.review("fs").awaiting(), 0);
    assert!(book.review("fs").held[0].rejected);
    assert!(!book.knows("nobody"));
    // Nothing kept for a server never seen, even in memory.
    let memory = Book::open(None, std::iter::empty()).0;
    assert!(
        memory
            .decide("ghost", Decision::Approve, &Which::All, 1)
            .unwrap()
            .is_empty()
    );
    assert!(memory.decide("ghost", Decision::Reject, &both, 1).is_err());
    assert!(!memory.knows("ghost"));
}
