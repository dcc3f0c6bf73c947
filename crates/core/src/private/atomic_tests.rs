//! `write_atomic` and `lock_beside` against real files, real threads and real processes:
//! this test binary started again as a writer (`CHILD`), so a writer can be killed in the
//! middle of a write and two processes can race on one store.

use super::*;
use crate::test_support::entries;
use std::process::{Command, Stdio};

/// Set in a child copy of this test binary: what it does (`loop`, `tokens`) and on what.
const CHILD: &str = "LIFELINE_ATOMIC_TEST_CHILD";

#[cfg(unix)]
fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
#[test]
fn each_mode_gives_the_permissions_it_names() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // (mode, the file's mode before or None for a new file, after)
    let check = |mode: Mode, before: Option<u32>, after: u32| {
        let path = dir.path().join("f.json");
        let _ = fs::remove_file(&path);
        if let Some(bits) = before {
            fs::write(&path, "old").unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(bits)).unwrap();
        }
        write_atomic(&path, b"new", mode).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(mode_of(&path), after, "{mode:?} from {before:?}");
    };
    check(Mode::Private, None, 0o600);
    check(Mode::Private, Some(0o644), 0o600);
    check(Mode::Keep, None, 0o600);
    check(Mode::Keep, Some(0o644), 0o644);
    check(Mode::Keep, Some(0o640), 0o640);
    check(Mode::Keep, Some(0o755), 0o755);
    check(Mode::KeepOwnerOnly, None, 0o600);
    check(Mode::KeepOwnerOnly, Some(0o644), 0o600);
    check(Mode::KeepOwnerOnly, Some(0o750), 0o700);
    assert_eq!(entries(dir.path()), ["f.json"], "no temporary file left");
}

#[cfg(unix)]
#[test]
fn the_owner_is_kept_where_this_process_may_give_it() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.json");
    fs::write(&path, "old").unwrap();
    let root = rustix::process::geteuid().is_root();
    let (uid, gid) = if root {
        // Another user's file, as root edits it (`sudo lifeline clients connect`).
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        (65534, 65534)
    } else {
        let m = fs::metadata(&path).unwrap();
        (m.uid(), m.gid())
    };
    write_atomic(&path, b"new", Mode::Keep).unwrap();
    let m = fs::metadata(&path).unwrap();
    assert_eq!((m.uid(), m.gid()), (uid, gid));
    // Lifeline's own files are its own, whoever had them before.
    write_atomic(&path, b"newer", Mode::Private).unwrap();
    let me = rustix::process::geteuid().as_raw();
    assert_eq!(fs::metadata(&path).unwrap().uid(), me);
}

#[cfg(unix)]
#[test]
fn a_symlinked_target_stays_a_link_and_gets_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let dotfiles = dir.path().join("dotfiles");
    fs::create_dir(&dotfiles).unwrap();
    let real = dotfiles.join("claude.json");
    fs::write(&real, "old").unwrap();
    // home/.claude.json -> ../dotfiles/link.json -> claude.json (relative, then a chain).
    let home = dir.path().join("home");
    fs::create_dir(&home).unwrap();
    std::os::unix::fs::symlink("claude.json", dotfiles.join("link.json")).unwrap();
    let link = home.join(".claude.json");
    std::os::unix::fs::symlink("../dotfiles/link.json", &link).unwrap();
    write_atomic(&link, b"new", Mode::Keep).unwrap();
    let is_link = |p: &Path| fs::symlink_metadata(p).unwrap().file_type().is_symlink();
    assert!(is_link(&link) && is_link(&dotfiles.join("link.json")));
    assert_eq!(fs::read(&real).unwrap(), b"new");
    assert_eq!(entries(&home), [".claude.json"]);
    assert_eq!(entries(&dotfiles), ["claude.json", "link.json"]);

    // A dangling link is a file not made yet: it is made where the link points.
    let later = home.join("later.json");
    std::os::unix::fs::symlink(dotfiles.join("later.json"), &later).unwrap();
    write_atomic(&later, b"first", Mode::Private).unwrap();
    assert!(is_link(&later));
    assert_eq!(fs::read(dotfiles.join("later.json")).unwrap(), b"first");
}

#[test]
fn threads_writing_one_file_never_share_a_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.json");
    let contents: Vec<Vec<u8>> = (0..8u8).map(|i| vec![b'a' + i; 64 * 1024]).collect();
    std::thread::scope(|s| {
        for bytes in &contents {
            let path = &path;
            s.spawn(move || {
                for _ in 0..25 {
                    write_atomic(path, bytes, Mode::Private).expect("every write succeeds");
                }
            });
        }
    });
    let last = fs::read(&path).unwrap();
    assert!(contents.contains(&last), "the file is one writer's, whole");
    assert_eq!(
        entries(dir.path()),
        ["tokens.json"],
        "no temporary file left"
    );
}

#[test]
fn a_missing_directory_names_the_directory_and_the_step() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gone");
    let e = write_atomic(&missing.join("f"), b"x", Mode::Private).unwrap_err();
    assert_eq!(
        (e.step, e.at.as_path()),
        (Step::Temporary, missing.as_path())
    );
    let text = io::Error::from(e).to_string();
    assert!(
        text.starts_with(&format!(
            "could not write a temporary file in the directory ({}): ",
            missing.display()
        )),
        "{text}"
    );
}

/// This test binary again, running only the test `name` with `CHILD` set to `what`.
fn child(name: &str, what: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, what);
    cmd
}

/// In a child: `loop PATH`: writes 4 MiB of `a`, then of `b`, and so on for ever, saying
/// `wrote` on stdout after each. `tokens PATH PREFIX`: adds 100 entries to a read-modify-
/// write store at PATH under its lock. Elsewhere: nothing.
#[test]
fn child_writer() {
    let Ok(what) = std::env::var(CHILD) else {
        return;
    };
    let words: Vec<&str> = what.split('\n').collect();
    match words.as_slice() {
        ["loop", path] => {
            let path = Path::new(path);
            for n in 0usize.. {
                let byte = if n % 2 == 0 { b'a' } else { b'b' };
                write_atomic(path, &vec![byte; 4 << 20], Mode::Private).unwrap();
                println!("wrote");
            }
        }
        ["tokens", path, prefix] => {
            let path = Path::new(path);
            for n in 0..100 {
                let _lock = lock_beside(path).unwrap();
                let mut text = fs::read_to_string(path).unwrap_or_default();
                text.push_str(&format!("{prefix}{n}\n"));
                write_atomic(path, text.as_bytes(), Mode::Private).unwrap();
            }
        }
        _ => panic!("unknown child task {what:?}"),
    }
}

#[cfg(unix)]
#[test]
fn a_writer_killed_mid_write_leaves_the_old_or_the_new_file_whole() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secrets.json");
    let whole = |bytes: &[u8]| {
        bytes.len() == 4 << 20
            && (bytes.iter().all(|b| *b == b'a') || bytes.iter().all(|b| *b == b'b'))
    };
    for round in 0..3 {
        let mut writer = child(
            "private::atomic::tests::child_writer",
            &format!("loop\n{}", path.display()),
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
        let mut lines = BufReader::new(writer.stdout.take().unwrap()).lines();
        // Killed right after a write was reported: the next one is under way. (The test
        // harness prints its own lines too.)
        let mut wrote = 0;
        while wrote <= round {
            let line = lines
                .next()
                .expect("the writer reports each write")
                .unwrap();
            wrote += usize::from(line == "wrote");
        }
        use rustix::process::{Pid, Signal, kill_process};
        kill_process(Pid::from_child(&writer), Signal::KILL).expect("kill the writer");
        let status = writer.wait().unwrap();
        assert!(!status.success(), "killed, not finished: {status:?}");
        let bytes = fs::read(&path).unwrap();
        assert!(
            whole(&bytes),
            "round {round}: {} bytes, not one whole file",
            bytes.len()
        );
    }
}

#[test]
fn two_processes_adding_under_the_lock_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clients.json");
    let adders: Vec<_> = ["x", "y"]
        .iter()
        .map(|prefix| {
            child(
                "private::atomic::tests::child_writer",
                &format!("tokens\n{}\n{prefix}", path.display()),
            )
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for mut adder in adders {
        assert!(adder.wait().unwrap().success());
    }
    let text = fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    let mut expect: Vec<String> = ["x", "y"]
        .iter()
        .flat_map(|p| (0..100).map(move |n| format!("{p}{n}")))
        .collect();
    expect.sort();
    assert_eq!(lines, expect, "every add of both processes is in the file");
    assert_eq!(entries(dir.path()), [".clients.json.lock", "clients.json"]);
}
