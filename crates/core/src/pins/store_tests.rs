//! The pins file: private, surviving a restart, a corrupt file a notice and a fresh start
//! that approves nothing, two writers keeping both their changes.

use super::*;
use crate::pins::{Standing, review};
use serde_json::json;

fn tools() -> Vec<serde_json::Value> {
    vec![
        json!({"name": "read", "description": "Reads."}),
        json!({"name": "write", "description": "Writes."}),
    ]
}

#[test]
fn pins_survive_a_restart_in_a_private_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(&dir.path().join("lifeline"));
    assert_eq!(
        load(&path, ["fs"]).pins,
        Pins::default(),
        "no file: nothing pinned"
    );
    let first = review(None, &tools(), 100);
    update(&path, ["fs"], |pins| {
        pins.servers
            .insert("fs".to_owned(), first.pins.clone().into_owned());
    })
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    // A restart: the file read again gives the same pins, and the same tools are pinned
    // (still marked new: nobody has looked at them yet).
    let loaded = load(&path, ["fs"]);
    assert_eq!(loaded.problem, None);
    assert_eq!(loaded.pins.servers["fs"], *first.pins);
    let again = review(loaded.pins.servers.get("fs"), &tools(), 200);
    assert!(again.tools.iter().all(|(_, s)| *s == Standing::FirstSight));
    assert!(matches!(again.pins, std::borrow::Cow::Borrowed(_)));
}

#[test]
fn a_corrupt_file_is_a_notice_and_a_fresh_start_that_approves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(dir.path());
    for bad in [
        "{not json",
        r#"{"version": 9, "servers": {}}"#,
        r#"{"servers": []}"#,
    ] {
        std::fs::write(&path, bad).unwrap();
        let loaded = load(&path, ["fs", "git"]);
        let problem = loaded.problem.expect("a notice");
        assert!(problem.contains(&path.display().to_string()), "{problem}");
        assert!(problem.contains("held as new"), "{problem}");
        // Every server counts as seen: its tools are held as new, not pinned on sight.
        let review = review(loaded.pins.servers.get("fs"), &tools(), 100);
        assert!(
            review.tools.iter().all(|(_, s)| *s == Standing::New),
            "{bad}: {:?}",
            review.tools
        );
        assert_eq!(review.newly_held, ["read", "write"]);
    }
    // The next write replaces it with a good file.
    update(&path, ["fs"], |pins| {
        pins.servers.get_mut("fs").unwrap().held.clear();
        pins.servers.remove("git");
    })
    .unwrap();
    let loaded = load(&path, ["fs"]);
    assert_eq!(loaded.problem, None);
    assert!(loaded.pins.servers.contains_key("fs"));
}

#[test]
fn two_writers_keep_both_changes_and_an_unchanged_update_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(dir.path());
    let (a, b) = (
        review(None, &tools(), 100).pins.into_owned(),
        review(None, &tools()[..1], 100).pins.into_owned(),
    );
    update(&path, ["fs", "git"], |p| {
        p.servers.insert("fs".into(), a.clone())
    })
    .unwrap();
    update(&path, ["fs", "git"], |p| {
        p.servers.insert("git".into(), b.clone())
    })
    .unwrap();
    let loaded = load(&path, ["fs", "git"]).pins;
    assert_eq!(loaded.servers["fs"], a);
    assert_eq!(loaded.servers["git"], b);
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let same = update(&path, ["fs"], |p| p.servers.len()).unwrap();
    assert_eq!(same, 2);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        modified
    );
}

#[cfg(unix)]
#[test]
fn a_file_others_may_write_is_refused_and_left_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(dir.path());
    update(&path, ["fs"], |p| {
        p.servers.insert("fs".into(), ServerPins::default())
    })
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let loaded = load(&path, ["fs"]);
    assert!(loaded.problem.is_some(), "planted pins are not trusted");
    assert!(update(&path, ["fs"], |p| p.servers.clear()).is_err());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"fs\""), "left as it was: {text}");
}
