//! `check_trusted` on real files and directories; another user is simulated with `chown` to
//! uid 65534 (nobody), which needs root: CI runs as root, and a root Lifeline must refuse
//! another user's file as any other would.

use super::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;

const ELSEWHERE: &str = "choose another LIFELINE_HISTORY";

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn chmod(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// A 0700 directory of ours with `gateway-tokens.json` 0600 in it.
fn tokens_in_own_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("lifeline");
    fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o700);
    let file = dir.join("gateway-tokens.json");
    fs::write(&file, "{}").unwrap();
    chmod(&file, 0o600);
    (scratch, file)
}

fn refused(file: &Path) -> String {
    let e = check_trusted(file, ELSEWHERE).expect_err("refused");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
    e.to_string()
}

#[test]
fn a_file_and_directory_of_ours_that_only_we_write_are_trusted() {
    let (_scratch, file) = tokens_in_own_dir();
    check_trusted(&file, ELSEWHERE).unwrap();
    // Readable by others is not a question of trust (the stores tighten it themselves).
    chmod(&file, 0o644);
    chmod(file.parent().unwrap(), 0o755);
    check_trusted(&file, ELSEWHERE).unwrap();
    // A file not made yet, in a directory not made yet.
    check_trusted(&file.parent().unwrap().join("x").join("y"), ELSEWHERE).unwrap();
}

#[test]
fn a_file_or_directory_others_may_write_is_refused_with_the_fix() {
    let (_scratch, file) = tokens_in_own_dir();
    let dir = file.parent().unwrap().to_owned();
    chmod(&file, 0o666);
    let text = refused(&file);
    assert_eq!(
        text,
        format!(
            "the file {f} is writable by others (mode 0666), so Lifeline does not trust it: \
             another user could change what is in it. Fix it with `chmod go-w {f}`, or \
             {ELSEWHERE}",
            f = file.display()
        )
    );
    chmod(&file, 0o620);
    assert!(refused(&file).contains("is writable by its group (mode 0620)"));
    chmod(&file, 0o600);
    chmod(&dir, 0o777);
    let text = refused(&file);
    assert!(
        text.starts_with(&format!(
            "the directory {} is writable by others (mode 0777)",
            dir.display()
        )),
        "{text}"
    );
    assert!(check_trusted_dir(&dir, ELSEWHERE).is_err());
}

#[test]
fn a_sticky_shared_directory_holds_our_files_but_not_theirs() {
    // `/tmp/h.db` itself: /tmp is world-writable and sticky.
    let (_scratch, file) = tokens_in_own_dir();
    let dir = file.parent().unwrap().to_owned();
    chmod(&dir, 0o1777);
    check_trusted(&file, ELSEWHERE).unwrap();
    check_trusted_dir(&dir, ELSEWHERE).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        assert!(refused(&file).contains("is owned by uid 65534"));
    }
}

#[test]
fn another_users_file_or_directory_is_refused_even_by_root() {
    if !is_root() {
        // Only root can make a file another user's; as anyone else, nothing to simulate.
        return;
    }
    let (_scratch, file) = tokens_in_own_dir();
    let dir = file.parent().unwrap().to_owned();
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    let text = refused(&file);
    assert_eq!(
        text,
        format!(
            "the file {} is owned by uid 65534, not by you (uid 0), so Lifeline does not \
             trust it: another user could have put it there. Remove it or `chown` it to \
             yourself if it is yours, or {ELSEWHERE}",
            file.display()
        )
    );
    std::os::unix::fs::chown(&file, Some(0), Some(0)).unwrap();
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    assert!(refused(&file).starts_with(&format!(
        "the directory {} is owned by uid 65534",
        dir.display()
    )));
}

#[test]
fn a_symlink_is_judged_by_where_it_leads() {
    let (scratch, file) = tokens_in_own_dir();
    let link = scratch.path().join("link.json");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    check_trusted(&link, ELSEWHERE).unwrap();
    chmod(&file, 0o646);
    assert!(refused(&link).contains(&format!("the file {}", file.display())));
}
