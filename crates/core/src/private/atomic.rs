//! The one way Lifeline replaces a file: `write_atomic`. A reader, a crash or a power cut
//! sees the old file or the new one, whole, never a part of either; two writers of one file
//! (threads or processes) never share a temporary file. Read-modify-write stores add
//! `lock_beside` around it, so two processes adding at once lose nothing.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The permissions the new file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 0600 whatever was there: Lifeline's own files (tokens, secrets, records, runs).
    Private,
    /// The file's own mode and owner, 0600 for a new file: a person's file (a client's
    /// config) that Lifeline rewrites.
    Keep,
    /// As `Keep`, without any access for group and others: a person's file that now holds
    /// secrets.
    KeepOwnerOnly,
}

/// What went wrong, and where: the temporary file in `at`'s directory, or the replacing.
#[derive(Debug)]
pub struct WriteError {
    /// The directory (`Step::Temporary`) or the file (`Step::Replace`).
    pub at: PathBuf,
    pub step: Step,
    pub source: io::Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Making, filling or flushing the temporary file.
    Temporary,
    /// Renaming it over the file, or flushing the directory.
    Replace,
}

impl Step {
    /// What failed, as the start of a sentence.
    pub fn what(self) -> &'static str {
        match self {
            Step::Temporary => "could not write a temporary file in the directory",
            Step::Replace => "could not replace the file",
        }
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.step.what(),
            self.at.display(),
            self.source
        )
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl From<WriteError> for io::Error {
    fn from(e: WriteError) -> io::Error {
        io::Error::new(e.source.kind(), e.to_string())
    }
}

/// Replaces the file at `path` with `bytes`, durably:
/// - a symlink at `path` is followed (to the end of a chain, even a dangling one), so a
///   file a dotfiles manager links stays where it lives and the link stays a link;
/// - the bytes go to a temporary file of a name no other writer uses (pid, a counter and
///   random digits) in the same directory, created 0600;
/// - before the rename that file gets its permissions (`mode`) and, for `Keep` modes, the
///   old file's owner and group where this process may give them (root, or a group the user
///   is in; refused otherwise, silently);
/// - it is flushed (`sync_all`), renamed over the file, and the directory is flushed, so the
///   rename survives a power cut (Unix; Windows has no directory handle to flush).
///
/// Not kept: extended attributes (ACLs, SELinux labels take the directory's defaults) and
/// hard links (the name gets a new inode). The parent directory must exist.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Mode) -> Result<(), WriteError> {
    let target = resolve(path);
    let dir = parent(&target);
    let temporary = |source| WriteError {
        at: dir.clone(),
        step: Step::Temporary,
        source,
    };
    let old = fs::metadata(&target).ok();
    let (mut file, tmp) = create_temporary(&dir, &target).map_err(temporary)?;
    let filled = prepare(&file, old.as_ref(), mode)
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.sync_all());
    drop(file);
    if let Err(e) = filled {
        let _ = fs::remove_file(&tmp);
        return Err(temporary(e));
    }
    let replace = |source| WriteError {
        at: target.clone(),
        step: Step::Replace,
        source,
    };
    if let Err(e) = rename_over(&tmp, &target) {
        let _ = fs::remove_file(&tmp);
        return Err(replace(e));
    }
    sync_dir(&dir).map_err(replace)
}

/// Renames `tmp` over `target`. On Unix a rename replaces whatever is there. On Windows the
/// replace is refused (access denied) for as long as another writer's replace of the same
/// file, or a reader that did not share deletion (an editor, an antivirus scan), has it open:
/// that is retried, for up to about a second, before it is an error.
fn rename_over(tmp: &Path, target: &Path) -> io::Result<()> {
    #[cfg(windows)]
    {
        let mut wait = std::time::Duration::from_millis(1);
        let mut waited = std::time::Duration::ZERO;
        loop {
            match fs::rename(tmp, target) {
                Err(e)
                    if e.kind() == io::ErrorKind::PermissionDenied
                        && waited < std::time::Duration::from_secs(1) =>
                {
                    // A synchronous write, which already blocks on fsync: this wait is as
                    // rare (two writers of one file at once) and as bounded.
                    #[expect(clippy::disallowed_methods, reason = "a sync fn's bounded retry")]
                    std::thread::sleep(wait);
                    waited += wait;
                    wait = (wait * 2).min(std::time::Duration::from_millis(50));
                }
                done => return done,
            }
        }
    }
    #[cfg(not(windows))]
    fs::rename(tmp, target)
}

/// Where a write to `path` lands: `path`, or what its symlinks end at.
pub fn resolve(path: &Path) -> PathBuf {
    let mut at = path.to_owned();
    // As many links as Linux follows (MAXSYMLINKS); a loop ends at the 40th.
    for _ in 0..40 {
        match fs::read_link(&at) {
            Ok(to) if to.is_absolute() => at = to,
            Ok(to) => at = parent(&at).join(to),
            Err(_) => break,
        }
    }
    at
}

/// `path`'s directory, `.` for a bare name.
fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// A new file `.<name>.<pid>.<n>.<random>.tmp` in `dir`, 0600. The counter keeps this
/// process's threads apart, the pid other processes, the random digits a pid reused.
fn create_temporary(dir: &Path, target: &Path) -> io::Result<(File, PathBuf)> {
    static N: AtomicU64 = AtomicU64::new(0);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    let mut tries = 0;
    loop {
        let mut random = [0u8; 4];
        getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
        let random: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let n = N.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.{}.{n}.{random}.tmp", std::process::id()));
        match super::create_new(&tmp) {
            Ok(file) => return Ok((file, tmp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Gives the temporary file its owner (first: a chown may clear mode bits) and its mode.
#[cfg(unix)]
fn prepare(file: &File, old: Option<&fs::Metadata>, mode: Mode) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let bits = match (mode, old) {
        (Mode::Private, _) | (_, None) => 0o600,
        (Mode::Keep, Some(m)) => m.mode() & 0o777,
        (Mode::KeepOwnerOnly, Some(m)) => m.mode() & 0o700,
    };
    if let (Mode::Keep | Mode::KeepOwnerOnly, Some(old)) = (mode, old) {
        let now = file.metadata()?;
        if (now.uid(), now.gid()) != (old.uid(), old.gid()) {
            // Only root gives a file away, and a user only to a group of theirs: where this
            // process may not, the file becomes its own, as any editor's save would.
            match std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid())) {
                Err(e) if e.raw_os_error() == Some(rustix::io::Errno::PERM.raw_os_error()) => {
                    let _ = std::os::unix::fs::fchown(file, None, Some(old.gid()));
                }
                other => other?,
            }
        }
    }
    file.set_permissions(fs::Permissions::from_mode(bits))
}

/// Elsewhere the temporary file is as the OS makes it: the user's profile is private.
#[cfg(not(unix))]
fn prepare(_file: &File, _old: Option<&fs::Metadata>, _mode: Mode) -> io::Result<()> {
    Ok(())
}

/// Flushes the directory entry of a rename. A filesystem that cannot flush a directory
/// (some network and FUSE ones answer EINVAL) has nothing more to give.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => Ok(()),
        other => other,
    }
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// The lock of a read-modify-write store, held until dropped.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

/// Waits for, and takes, the exclusive lock of the store at `path`: the file `.NAME.lock`
/// (0600) beside what `path` resolves to, so every writer of one file, through whatever
/// link, takes the same lock. Hold it from before the read to after the `write_atomic`.
pub fn lock_beside(path: &Path) -> io::Result<StoreLock> {
    let target = resolve(path);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    let lock = parent(&target).join(format!(".{name}.lock"));
    let file = super::open_lock(&lock)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot open {}: {e}", lock.display())))?;
    file.lock()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot lock {}: {e}", lock.display())))?;
    Ok(StoreLock { _file: file })
}

#[cfg(test)]
#[path = "atomic_tests.rs"]
mod tests;
