//! Whether a file Lifeline did not necessarily create may be believed. Lifeline takes trust
//! from some files — the endpoint's tokens, secrets.json, the client records, the runs files
//! it kills processes from — and keeps its socket in a directory. With `LIFELINE_HISTORY`
//! in a shared directory, another user could plant `gateway-tokens.json` with their own
//! token; so a file, and the directory that holds it, must belong to this user (or root)
//! and be writable by nobody else. A directory writable by others but sticky (`/tmp`) is
//! kept: nobody else can replace or remove a file of ours in it, and a file they planted
//! there is theirs, which the file's own check refuses. Only the file's own directory is
//! looked at, never its parents (`/tmp/mine/h.db` works when `/tmp/mine` is ours).

use std::io;
use std::path::Path;

/// Refuses, with an error naming the path and the fix, a file at `path` (when there is
/// one) or the directory holding it that another user owns or that group or others may
/// write. `elsewhere` says how to choose another place ("set LIFELINE_HISTORY to a file in
/// a directory of your own"). The error's kind is `PermissionDenied`.
pub fn check_trusted(path: &Path, elsewhere: &str) -> io::Result<()> {
    let target = super::resolve(path);
    for dir in [parent(path), parent(&target)] {
        check(&dir, Kind::Dir, elsewhere)?;
    }
    match std::fs::metadata(&target) {
        Ok(_) => check(&target, Kind::File, elsewhere),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Refuses a directory (Lifeline's instance or data directory) as `check_trusted` refuses
/// the directory of a file.
pub fn check_trusted_dir(dir: &Path, elsewhere: &str) -> io::Result<()> {
    check(dir, Kind::Dir, elsewhere)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

fn parent(path: &Path) -> std::path::PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => std::path::PathBuf::from("."),
    }
}

#[cfg(unix)]
fn check(path: &Path, kind: Kind, elsewhere: &str) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        // A directory not made yet is made 0700 by whoever makes it.
        Err(e) if e.kind() == io::ErrorKind::NotFound && kind == Kind::Dir => return Ok(()),
        Err(e) => return Err(e),
    };
    let me = rustix::process::geteuid().as_raw();
    let what = if kind == Kind::Dir {
        "directory"
    } else {
        "file"
    };
    let shown = path.display();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(refused(format!(
            "the {what} {shown} is owned by uid {}, not by you (uid {me}), so Lifeline does \
             not trust it: another user could have put it there. Remove it or `chown` it to \
             yourself if it is yours, or {elsewhere}",
            meta.uid()
        )));
    }
    let mode = meta.mode();
    let sticky_dir = kind == Kind::Dir && mode & 0o1000 != 0;
    if mode & 0o022 != 0 && !sticky_dir {
        return Err(refused(format!(
            "the {what} {shown} is writable by {} (mode {:04o}), so Lifeline does not trust \
             it: another user could change what is in it. Fix it with `chmod go-w {shown}`, \
             or {elsewhere}",
            if mode & 0o002 != 0 {
                "others"
            } else {
                "its group"
            },
            mode & 0o7777
        )));
    }
    Ok(())
}

/// Elsewhere than Unix the user's profile is private and files carry no Unix owner.
#[cfg(not(unix))]
fn check(_path: &Path, _kind: Kind, _elsewhere: &str) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn refused(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, message)
}

#[cfg(all(test, unix))]
#[path = "trust_tests.rs"]
mod tests;
