//! Writing a built bundle: a zip (deflate) written to a temporary file in the target
//! folder, flushed to disk, then moved into place (by `private::write_atomic` when it
//! replaces a file), so a reader never sees half a bundle
//! and a failure (full disk, read-only folder, missing folder) leaves nothing behind. Each
//! failure is an error naming the path and what to do. A bundle never silently replaces a
//! file: `write` refuses an existing one (the name comes from a person typing or from
//! `--out`), and only `write_over` — for a path the person confirmed in the platform's save
//! dialog — replaces. The zip is created 0600: it describes the user's servers.

use super::bundle::Bundle;
use crate::error::{Error, ErrorKind};
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

/// Why a bundle could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteErrorKind {
    /// The folder to write into does not exist.
    MissingFolder,
    /// The folder is read-only or this user may not write there.
    NotWritable,
    /// The disk (or the user's quota) is full.
    DiskFull,
    /// The path names a folder, not a file.
    IsAFolder,
    /// A file is already there (only `write` refuses it).
    Exists,
    /// Any other I/O failure.
    Io,
}

/// A bundle that was not written; nothing was left at `path` or beside it.
#[derive(Debug, Clone)]
pub struct WriteError {
    pub kind: WriteErrorKind,
    pub path: PathBuf,
    /// The OS's words for an `Io` failure.
    detail: String,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        let folder = folder_of(&self.path);
        let folder = folder.display();
        match self.kind {
            WriteErrorKind::MissingFolder => write!(
                f,
                "could not write the diagnostic bundle {path}: the folder {folder} does not \
                 exist; create it or choose another path"
            ),
            WriteErrorKind::NotWritable => write!(
                f,
                "could not write the diagnostic bundle {path}: the folder {folder} is read-only \
                 or not writable by this user; choose another folder"
            ),
            WriteErrorKind::DiskFull => write!(
                f,
                "could not write the diagnostic bundle {path}: the disk is full; free some \
                 space or choose a folder on another disk"
            ),
            WriteErrorKind::IsAFolder => write!(
                f,
                "could not write the diagnostic bundle {path}: that is a folder; give a file \
                 name such as {}",
                self.path.join("lifeline-diagnostics.zip").display()
            ),
            WriteErrorKind::Exists => write!(
                f,
                "did not write the diagnostic bundle {path}: a file with that name already \
                 exists and was left as it is; choose another name, or delete or move that file \
                 first"
            ),
            WriteErrorKind::Io => write!(
                f,
                "could not write the diagnostic bundle {path}: {}; choose another path",
                self.detail
            ),
        }
    }
}

impl std::error::Error for WriteError {}

impl From<WriteError> for Error {
    /// A bad output path is the caller's to fix, like a bad argument.
    fn from(e: WriteError) -> Self {
        Error::new(ErrorKind::Config, e.to_string())
    }
}

impl Bundle {
    /// Writes the zip to `path` atomically; returns its size in bytes. A file already at
    /// `path` is an `Exists` error and stays untouched, even when it appears while the zip
    /// is being written.
    pub fn write(&self, path: &Path) -> Result<u64, WriteError> {
        self.write_with(path, |file| file)
    }

    /// `write`, replacing a file at `path`: only for a path a person chose, knowing it
    /// exists (the platform's save dialog asks before it returns such a path). Replacing is
    /// `private::write_atomic`'s, the one way Lifeline replaces a file, so the zip is made
    /// in memory first (a bundle is held under its `limit_bytes`).
    pub fn write_over(&self, path: &Path) -> Result<u64, WriteError> {
        let error = |e: &io::Error| WriteError {
            kind: kind_of(e),
            path: path.to_owned(),
            detail: e.to_string(),
        };
        self.check_target(path)?;
        let mut zip = io::Cursor::new(Vec::new());
        self.zip_into(&mut zip).map_err(|e| error(&e))?;
        let zip = zip.into_inner();
        crate::private::write_atomic(path, &zip, crate::private::Mode::Private)
            .map_err(|e| error(&e.source))?;
        Ok(zip.len() as u64)
    }

    /// `write`, with the file wrapped by `wrap` (a test injects a failing writer).
    pub(super) fn write_with<W: Write + Seek>(
        &self,
        path: &Path,
        wrap: impl FnOnce(File) -> W,
    ) -> Result<u64, WriteError> {
        let error = |kind: WriteErrorKind, e: Option<&io::Error>| WriteError {
            kind,
            path: path.to_owned(),
            detail: e.map(ToString::to_string).unwrap_or_default(),
        };
        self.check_target(path)?;
        if fs::symlink_metadata(path).is_ok() {
            return Err(error(WriteErrorKind::Exists, None));
        }
        let folder = folder_of(path);
        let temp = temp_path(path);
        let file = crate::private::create_new(&temp).map_err(|e| error(kind_of(&e), Some(&e)))?;
        let written = self
            .zip_into(wrap(file))
            // Write access: Windows refuses to flush a handle opened only for reading
            // (FlushFileBuffers: access denied).
            .and_then(|()| fs::OpenOptions::new().write(true).open(&temp)?.sync_all())
            .and_then(|()| move_no_replace(&temp, path));
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(error(kind_of(&e), Some(&e)));
        }
        // The rename is durable once the folder itself is flushed; best effort.
        if let Ok(dir) = File::open(&folder) {
            let _ = dir.sync_all();
        }
        fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| error(kind_of(&e), Some(&e)))
    }

    /// A path that is a folder, or in one that does not exist, takes no bundle.
    fn check_target(&self, path: &Path) -> Result<(), WriteError> {
        let error = |kind: WriteErrorKind| WriteError {
            kind,
            path: path.to_owned(),
            detail: String::new(),
        };
        if path.is_dir() {
            return Err(error(WriteErrorKind::IsAFolder));
        }
        if !folder_of(path).is_dir() {
            return Err(error(WriteErrorKind::MissingFolder));
        }
        Ok(())
    }

    fn zip_into<W: Write + Seek>(&self, out: W) -> io::Result<()> {
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .last_modified_time(zip_time(self.created));
        let mut zip = ZipWriter::new(out);
        for file in self.files() {
            zip.start_file(file.path.as_str(), options)
                .map_err(io_error)?;
            zip.write_all(file.content.as_bytes())?;
        }
        let mut out = zip.finish().map_err(io_error)?;
        out.flush()
    }
}

/// Renames `from` to `to` unless something is at `to`: a hard link fails when the name is
/// taken, atomically. A file system without hard links (FAT) gets a check, then a rename.
fn move_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    match fs::hard_link(from, to) {
        Ok(()) => fs::remove_file(from),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        Err(_) if fs::symlink_metadata(to).is_ok() => {
            Err(io::Error::from(io::ErrorKind::AlreadyExists))
        }
        Err(_) => fs::rename(from, to),
    }
}

fn io_error(e: zip::result::ZipError) -> io::Error {
    match e {
        zip::result::ZipError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    }
}

fn kind_of(e: &io::Error) -> WriteErrorKind {
    use io::ErrorKind as K;
    match e.kind() {
        K::NotFound => WriteErrorKind::MissingFolder,
        K::PermissionDenied | K::ReadOnlyFilesystem => WriteErrorKind::NotWritable,
        K::StorageFull | K::QuotaExceeded => WriteErrorKind::DiskFull,
        K::IsADirectory => WriteErrorKind::IsAFolder,
        K::AlreadyExists => WriteErrorKind::Exists,
        _ => WriteErrorKind::Io,
    }
}

/// The folder a path is in; "." for a bare file name.
fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// A hidden name beside the target, unique to this process, so the rename stays on one
/// file system and two writers never share a temporary file.
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle.zip".into());
    folder_of(path).join(format!(".{name}.{}.partial", std::process::id()))
}

/// The creation time as a zip timestamp (UTC; the format has no zone).
fn zip_time(t: std::time::SystemTime) -> DateTime {
    let s = humantime::format_rfc3339_seconds(t).to_string();
    let part = |range: std::ops::Range<usize>| s.get(range).and_then(|p| p.parse::<u16>().ok());
    let fields = (
        part(0..4),
        part(5..7),
        part(8..10),
        part(11..13),
        part(14..16),
        part(17..19),
    );
    match fields {
        (Some(y), Some(mo), Some(d), Some(h), Some(mi), Some(sec)) => {
            DateTime::from_date_and_time(y, mo as u8, d as u8, h as u8, mi as u8, sec as u8)
                .unwrap_or_default()
        }
        _ => DateTime::default(),
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostics::bundle::{BundleInput, BundleOptions, build};
    use crate::test_support::entries;

    fn bundle() -> super::Bundle {
        build(&BundleInput::default(), BundleOptions::default())
    }

    #[test]
    fn an_existing_file_is_never_replaced_unless_the_person_chose_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.zip");
        std::fs::write(&path, "a person's file").unwrap();
        let e = bundle().write(&path).expect_err("the name is taken");
        assert_eq!(e.kind, super::WriteErrorKind::Exists);
        let text = e.to_string();
        assert!(
            text.contains(&path.display().to_string())
                && text.contains("already exists")
                && text.contains("choose another name"),
            "{text}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a person's file");
        assert_eq!(entries(dir.path()), ["b.zip"], "no temporary file is left");

        bundle().write_over(&path).expect("replaced when chosen");
        assert_ne!(std::fs::read(&path).unwrap(), b"a person's file");
        assert_eq!(entries(dir.path()), ["b.zip"]);
    }

    #[test]
    fn a_file_that_appears_while_the_zip_is_written_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.zip");
        let temp = dir.path().join("temp");
        std::fs::write(&temp, "zip").unwrap();
        std::fs::write(&path, "arrived meanwhile").unwrap();
        let e = super::move_no_replace(&temp, &path).expect_err("taken");
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "arrived meanwhile");
    }

    #[cfg(unix)]
    #[test]
    fn the_zip_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.zip");
        bundle().write(&path).unwrap();
        let mode = || std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(), 0o600);
        // Replacing a person's readable file makes it private too.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let size = bundle().write_over(&path).unwrap();
        assert_eq!(mode(), 0o600);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
    }
}
