//! The secret store: the file fallback everywhere, and the real OS keychain where the test
//! runs inside a keyring session (`scripts/with-keyring.sh`, which `make check` and `make
//! test` use, sets `LIFELINE_KEYCHAIN_TEST=1`; without it those tests say so and pass).

use super::*;

const CANARY: &str = "CANARY-keyring-7f3a9c1e5b";

fn file_store(dir: &tempfile::TempDir) -> SecretStore {
    SecretStore::file(&dir.path().join("sub").join("secrets.json"), "test")
}

#[test]
fn the_file_store_sets_gets_lists_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir);
    assert_eq!(store.backend().kind, BackendKind::File);
    assert!(store.backend().is_fallback());
    assert_eq!(store.get("GH_TOKEN").unwrap(), None);
    assert_eq!(store.list().unwrap(), Vec::<String>::new());
    store.set("GH_TOKEN", CANARY).unwrap();
    store.set("a.b-c_1", "second").unwrap();
    assert_eq!(store.get("GH_TOKEN").unwrap().as_deref(), Some(CANARY));
    assert_eq!(store.list().unwrap(), vec!["GH_TOKEN", "a.b-c_1"]);
    store.set("GH_TOKEN", "replaced").unwrap();
    assert_eq!(store.get("GH_TOKEN").unwrap().as_deref(), Some("replaced"));
    assert!(store.delete("GH_TOKEN").unwrap());
    assert!(!store.delete("GH_TOKEN").unwrap());
    assert_eq!(store.list().unwrap(), vec!["a.b-c_1"]);
    // A second store on the same file sees the same secrets.
    let again = file_store(&dir);
    assert_eq!(again.get("a.b-c_1").unwrap().as_deref(), Some("second"));
}

#[cfg(unix)]
#[test]
fn the_file_and_its_directory_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir);
    store.set("X", CANARY).unwrap();
    let path = store.backend().path.clone().unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    // A file made readable by others is tightened when it is next read.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    store.get("X").unwrap();
    assert_eq!(mode(&path), 0o600);
}

/// A secrets file someone else could have written (planted a value sent to a server as
/// this user's) is refused, naming the file and the fix; the value is never quoted.
#[cfg(unix)]
#[test]
fn a_secrets_file_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir);
    store.set("X", CANARY).unwrap();
    let path = store.backend().path.clone().unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o662)).unwrap();
    for e in [
        store.get("X").unwrap_err().to_string(),
        store.set("Y", "v").unwrap_err().to_string(),
    ] {
        assert!(
            e.contains(&format!(
                "the file {} is writable by others (mode 0662)",
                path.display()
            )) && e.contains("set LIFELINE_SECRETS_FILE to a file in a directory of your own"),
            "{e}"
        );
        assert!(!e.contains(CANARY), "{e}");
    }
}

#[test]
fn bad_names_are_refused_without_touching_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir);
    for name in ["", "has space", "a/b", "ü", &"x".repeat(129)] {
        let e = store.set(name, "v").unwrap_err();
        assert!(matches!(e, SecretError::BadName(_)), "{name}: {e}");
    }
    assert!(!store.backend().path.clone().unwrap().exists());
}

#[test]
fn a_broken_file_is_an_error_that_quotes_no_value() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir);
    let path = store.backend().path.clone().unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, format!("{{\"secrets\": {{\"A\": \"{CANARY}\"")).unwrap();
    let e = store.get("A").unwrap_err().to_string();
    assert!(e.contains("not valid JSON"), "{e}");
    assert!(e.contains(&path.display().to_string()), "{e}");
    assert!(!e.contains(CANARY), "{e}");
}

#[test]
fn the_lookup_says_how_to_store_a_missing_secret() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir);
    store.set("HAVE", CANARY).unwrap();
    assert_eq!(store.lookup("HAVE").unwrap(), CANARY);
    let why = store.lookup("MISSING").unwrap_err();
    assert!(why.contains("no secret MISSING"), "{why}");
    assert!(why.contains("lifeline secrets set MISSING"), "{why}");
    assert!(format!("{store:?}").contains("File"));
}

#[test]
fn the_backend_says_where_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let store = SecretStore::file(&dir.path().join("s.json"), "no OS keychain is available");
    let shown = store.backend().to_string();
    assert!(
        shown.contains("s.json") && shown.contains("not encrypted"),
        "{shown}"
    );
    assert!(shown.contains("no OS keychain is available"), "{shown}");
    let json = serde_json::to_value(store.backend()).unwrap();
    assert_eq!(json["kind"], "file");
}

/// Whether this test process runs inside a keyring session (scripts/with-keyring.sh).
fn in_keyring_session() -> bool {
    let yes = std::env::var("LIFELINE_KEYCHAIN_TEST").is_ok_and(|v| v == "1");
    if !yes {
        eprintln!("not in a keyring session (scripts/with-keyring.sh): keychain test skipped");
    }
    yes
}

#[test]
fn the_real_keychain_round_trips_a_secret() {
    if !in_keyring_session() {
        return;
    }
    let store = SecretStore::open();
    assert_eq!(
        store.backend().kind,
        BackendKind::Keychain,
        "{}",
        store.backend()
    );
    assert!(!store.backend().is_fallback());
    let name = format!("lifeline-test.{}", std::process::id());
    assert_eq!(store.get(&name).unwrap(), None);
    store.set(&name, CANARY).unwrap();
    assert_eq!(store.get(&name).unwrap().as_deref(), Some(CANARY));
    assert!(store.list().unwrap().contains(&name));
    store.set(&name, "replaced").unwrap();
    assert_eq!(store.get(&name).unwrap().as_deref(), Some("replaced"));
    // A second store (as another process would open) sees it.
    assert_eq!(
        SecretStore::open().get(&name).unwrap().as_deref(),
        Some("replaced")
    );
    assert!(store.delete(&name).unwrap());
    assert!(!store.delete(&name).unwrap());
    assert_eq!(store.get(&name).unwrap(), None);
    assert!(!store.list().unwrap().contains(&name));
}
