//! Where backups go: into `backups/` beside `clients.json`, never beside the client's file;
//! names that never collide; and records from before, whose backup sits beside the file,
//! still restore and move on the next write.

use super::*;
use crate::config::clients::backup;
use crate::config::clients::{Choice, Request, plan};
use crate::test_support::entries;
use serde_json::json;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const CANARY: &str = "sk-backup-canary-0b9e4d7c2a1f";

/// A client file with a secret in it, as Cursor writes one.
fn original() -> String {
    format!(
        "{{\n  \"mcpServers\": {{\n    \"gh\": {{\"command\": \"gh-mcp\", \"env\": {{\"GITHUB_TOKEN\": \"{CANARY}\"}}}}\n  }}\n}}\n"
    )
}

fn plan_of(path: &Path, text: &str) -> Plan {
    let choice = Choice::Named(vec!["gh".to_owned()]);
    let ours = json!({ "mcpServers": {} });
    plan(&Request {
        client: Client::Cursor,
        path,
        text,
        choice: &choice,
        lifeline: &ours,
        command: "/opt/lifeline/bin/lifeline",
        config_arg: None,
    })
    .unwrap()
}

const NOW: Duration = Duration::from_secs(1_796_000_000);

/// A project's `.vscode/` (or a dotfiles repository) and Lifeline's data dir, apart.
struct Scratch {
    _dir: tempfile::TempDir,
    project: PathBuf,
    state: PathBuf,
}

impl Scratch {
    /// Writes the client file `path` with `original()` and connects it at `at`, as
    /// `lifeline clients` does: the backup's record.
    fn connect(&self, path: &Path, at: SystemTime) -> backup::Connection {
        fs::write(path, original()).unwrap();
        let p = plan_of(path, &original());
        backup::write(Client::Cursor, path, &original(), &p, &self.state, at).unwrap()
    }

    /// The project's `mcp.json` as Lifeline connected it before backups moved: its path, and
    /// its backup beside it (`old_layout`).
    fn connected_before(&self) -> (PathBuf, PathBuf) {
        let path = fs::canonicalize(&self.project).unwrap().join("mcp.json");
        let written = plan_of(&path, &original()).text;
        let old = old_layout(self, &path, &written);
        (path, old)
    }

    /// Restores the client file `path` and checks it is the original, byte for byte.
    fn restore(&self, path: &Path) {
        backup::restore(Client::Cursor, Some(path), false, &self.state).unwrap();
        assert_eq!(
            fs::read_to_string(path).unwrap(),
            original(),
            "byte for byte"
        );
    }
}

fn scratch() -> Scratch {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("repo").join(".cursor");
    fs::create_dir_all(&project).unwrap();
    let state = dir
        .path()
        .join("data")
        .join("lifeline")
        .join("clients.json");
    Scratch {
        project,
        state,
        _dir: dir,
    }
}

#[test]
fn a_connect_writes_nothing_beside_the_file_and_keeps_the_backup_in_the_data_dir() {
    let s = scratch();
    let path = s.project.join("mcp.json");
    fs::write(&path, original()).unwrap();
    let before = entries(&s.project);
    let rec = s.connect(&path, UNIX_EPOCH + NOW);
    assert_eq!(entries(&s.project), before, "nothing new beside the file");
    let dir = s.state.parent().unwrap().join("backups");
    assert_eq!(backup::backups_dir(&s.state), dir);
    assert_eq!(rec.backup.parent(), Some(dir.as_path()));
    assert_eq!(fs::read_to_string(&rec.backup).unwrap(), original());
    let name = rec
        .backup
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("cursor-"), "{name}");
    assert!(name.ends_with("-20261130T005320Z.json"), "{name}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&rec.backup), 0o600);
    }
    s.restore(&path);
}

#[cfg(unix)]
#[test]
fn a_backups_directory_others_can_read_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let s = scratch();
    let dir = backup::backups_dir(&s.state);
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    s.connect(&s.project.join("mcp.json"), UNIX_EPOCH);
    let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn backups_of_two_files_or_one_file_twice_in_a_second_never_collide() {
    let s = scratch();
    let other = s.project.parent().unwrap().join("other");
    fs::create_dir_all(&other).unwrap();
    let mut made = Vec::new();
    for path in [
        s.project.join("mcp.json"),
        other.join("mcp.json"),
        s.project.join("mcp.json"),
    ] {
        let rec = s.connect(&path, UNIX_EPOCH);
        made.push(
            rec.backup
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        );
    }
    assert_ne!(made[0], made[1], "two files: two hashes");
    assert_eq!(made[2], made[0].replace(".json", "-2.json"), "{made:?}");
    assert_eq!(entries(&backup::backups_dir(&s.state)).len(), 3);
}

/// A record as Lifeline wrote it before backups moved: the backup beside the file.
fn old_layout(s: &Scratch, path: &Path, written: &str) -> PathBuf {
    let backup = PathBuf::from(format!(
        "{}.lifeline-backup-20261202T031500Z",
        path.display()
    ));
    fs::write(&backup, original()).unwrap();
    fs::write(path, written).unwrap();
    let record = json!({ "connections": [{
        "client": "cursor", "path": path, "backup": backup,
        "sha256": sha256(written), "at": "2026-12-02T03:15:00Z",
        "servers": ["gh"], "written": fingerprint(Client::Cursor, written),
    }]});
    fs::create_dir_all(s.state.parent().unwrap()).unwrap();
    fs::write(&s.state, record.to_string()).unwrap();
    backup
}

#[test]
fn an_old_layout_record_still_restores() {
    let s = scratch();
    let (path, old) = s.connected_before();
    let rec = backup::restore(Client::Cursor, Some(&path), false, &s.state).unwrap();
    assert_eq!(rec.backup, old);
    assert_eq!(fs::read_to_string(&path).unwrap(), original());
}

#[test]
fn the_next_write_moves_an_old_layout_backup_into_the_data_dir() {
    let s = scratch();
    let (path, old) = s.connected_before();

    // Another client's file is connected: the write also moves the old backup.
    s.connect(&s.project.join("second.json"), UNIX_EPOCH);
    assert!(!old.exists(), "the old backup left the client's directory");
    assert_eq!(
        entries(&s.project),
        ["mcp.json", "second.json"],
        "no backup beside either file"
    );
    let records = backup::records(&s.state).unwrap();
    let first = records.iter().find(|r| r.path == path).unwrap();
    assert_eq!(
        first.backup.parent(),
        Some(backup::backups_dir(&s.state).as_path())
    );
    assert!(
        first
            .backup
            .to_string_lossy()
            .ends_with("-20261202T031500Z.json"),
        "{}",
        first.backup.display()
    );
    assert_eq!(fs::read_to_string(&first.backup).unwrap(), original());

    s.restore(&path);
}

#[test]
fn an_old_backup_that_is_gone_leaves_its_record_alone() {
    let s = scratch();
    let (path, old) = s.connected_before();
    fs::remove_file(&old).unwrap();
    s.connect(&s.project.join("second.json"), UNIX_EPOCH);
    let records = backup::records(&s.state).unwrap();
    assert_eq!(records.iter().find(|r| r.path == path).unwrap().backup, old);
    let e = backup::restore(Client::Cursor, Some(&path), false, &s.state).unwrap_err();
    assert!(e.to_string().contains(&old.display().to_string()), "{e}");
}

/// A record someone else could have written would make `restore` write their file over a
/// client's config: it is refused, naming the file and the fix.
#[cfg(unix)]
#[test]
fn a_record_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("clients.json");
    save(&state, &State::default()).unwrap();
    assert_eq!(records(&state).unwrap(), Vec::new());
    fs::set_permissions(&state, fs::Permissions::from_mode(0o646)).unwrap();
    let e = records(&state).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "the file {} is writable by others (mode 0646)",
            state.display()
        )),
        "{e}"
    );
}
