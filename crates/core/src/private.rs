//! Files only their owner may read. What Lifeline writes about servers — history, logs, the
//! runs file, bundles, a config that holds secrets — is created 0600 in directories created
//! 0700, so another user on the machine reads none of it. Elsewhere than Unix these are plain
//! file operations (the user's profile folder is already private there).

mod atomic;
mod trust;

pub use atomic::{Mode, Step, StoreLock, WriteError, lock_beside, resolve, write_atomic};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;
pub use trust::{check_trusted, check_trusted_dir};

/// Creates `dir` and its missing parents 0700. A directory that already exists is left as
/// it is: it may be a shared one (`LIFELINE_HISTORY=/tmp/h.db`), and the files Lifeline puts
/// in it are 0600 anyway.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Creates a new directory `<prefix><random>` in `parent`, 0700, that did not exist before
/// (as `mkdtemp`): a name nobody can guess and make first, for the app's fallback socket in
/// a shared `/tmp`.
pub fn create_unique_dir(parent: &Path, prefix: &str) -> io::Result<std::path::PathBuf> {
    let mut tries = 0;
    loop {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
        let name: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let dir = parent.join(format!("{prefix}{name}"));
        #[cfg_attr(not(unix), allow(unused_mut))]
        let mut builder = fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        match builder.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Opens `path` for appending, creating it 0600; an existing file is tightened to 0600.
pub fn open_append(path: &Path) -> io::Result<File> {
    let file = options().append(true).create(true).open(path)?;
    restrict_file(&file, 0o600)?;
    Ok(file)
}

/// Creates `path` 0600, failing with `AlreadyExists` when something is there.
pub fn create_new(path: &Path) -> io::Result<File> {
    options().write(true).create_new(true).open(path)
}

/// Opens (creating 0600, never truncating) a file to hold a lock on with `File::try_lock`.
pub fn open_lock(path: &Path) -> io::Result<File> {
    options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}

/// Takes group and other permissions away from an existing file or directory (`mode` is
/// 0600 or 0700); a path that is already as strict is left alone.
pub fn restrict(path: &Path, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let current = fs::metadata(path)?.permissions().mode() & 0o777;
        if current & 0o077 != 0 {
            fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
        }
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
    Ok(())
}

fn restrict_file(file: &File, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let current = file.metadata()?.permissions().mode() & 0o777;
        if current & 0o077 != 0 {
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
    }
    #[cfg(not(unix))]
    let _ = (file, mode);
    Ok(())
}

fn options() -> OpenOptions {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn what_lifeline_creates_only_its_owner_reads() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("a").join("b");
        create_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&scratch.path().join("a")), 0o700);

        let shared = scratch.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o755)).unwrap();
        create_dir(&shared).unwrap();
        assert_eq!(mode(&shared), 0o755, "an existing directory is left alone");

        let log = dir.join("x.log");
        open_append(&log).unwrap();
        assert_eq!(mode(&log), 0o600);
        fs::set_permissions(&log, fs::Permissions::from_mode(0o644)).unwrap();
        open_append(&log).unwrap();
        assert_eq!(mode(&log), 0o600, "an existing file is tightened");

        let new = dir.join("new");
        create_new(&new).unwrap();
        assert_eq!(mode(&new), 0o600);
        assert_eq!(
            create_new(&new).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );

        let run = dir.join("1.run");
        write_atomic(&run, b"one", Mode::Private).unwrap();
        write_atomic(&run, b"two", Mode::Private).unwrap();
        assert_eq!(fs::read(&run).unwrap(), b"two");
        assert_eq!(mode(&run), 0o600);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 3, "no temp file left");
    }

    #[test]
    fn a_unique_directory_is_new_private_and_unguessable() {
        let scratch = tempfile::tempdir().unwrap();
        let a = create_unique_dir(scratch.path(), "lifeline-app-").unwrap();
        let b = create_unique_dir(scratch.path(), "lifeline-app-").unwrap();
        assert_ne!(a, b);
        assert_eq!(mode(&a), 0o700);
        let name = a.file_name().unwrap().to_string_lossy().into_owned();
        let pid = std::process::id().to_string();
        assert!(
            name.starts_with("lifeline-app-") && name.len() == 13 + 16,
            "{name}"
        );
        assert_ne!(name, format!("lifeline-app-{pid}"));
    }
}
