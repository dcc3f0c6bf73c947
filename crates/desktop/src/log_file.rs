//! The app's log file, bounded: `lifeline-app.log` grows to `MAX_BYTES`, then becomes
//! `lifeline-app.1.log` (older ones shift to `.2`, `.3`, …) and a new one starts; only
//! `KEEP_FILES` files are kept, so the folder never holds more than `KEEP_FILES × MAX_BYTES`.
//! tracing-appender's rolling appender rotates by time only, and a chatty day (a crash loop
//! at debug level) must not fill the disk. Files are created 0600 in a 0700 folder.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// One file's size cap.
pub const MAX_BYTES: u64 = 10 * 1024 * 1024;
/// The current file and the rotated ones.
pub const KEEP_FILES: usize = 5;

pub struct LogFile {
    dir: PathBuf,
    prefix: String,
    file: File,
    /// Bytes in the current file.
    written: u64,
    max_bytes: u64,
    keep: usize,
}

impl LogFile {
    /// Opens (appending) or creates `<dir>/<prefix>.log`, creating `dir`.
    pub fn open(dir: &Path, prefix: &str, max_bytes: u64, keep: usize) -> io::Result<LogFile> {
        lifeline_core::private::create_dir(dir)?;
        let path = name(dir, prefix, 0);
        let file = lifeline_core::private::open_append(&path)?;
        let written = file.metadata()?.len();
        Ok(LogFile {
            dir: dir.to_owned(),
            prefix: prefix.to_owned(),
            file,
            written,
            max_bytes,
            keep: keep.max(1),
        })
    }

    /// `.log` → `.1.log` → … → `.{keep-1}.log`; the oldest is deleted.
    fn rotate(&mut self) -> io::Result<()> {
        let oldest = name(&self.dir, &self.prefix, self.keep - 1);
        match fs::remove_file(&oldest) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        for n in (0..self.keep - 1).rev() {
            let from = name(&self.dir, &self.prefix, n);
            if from.exists() {
                fs::rename(&from, name(&self.dir, &self.prefix, n + 1))?;
            }
        }
        self.file = lifeline_core::private::open_append(&name(&self.dir, &self.prefix, 0))?;
        self.written = 0;
        Ok(())
    }
}

fn name(dir: &Path, prefix: &str, n: usize) -> PathBuf {
    match n {
        0 => dir.join(format!("{prefix}.log")),
        n => dir.join(format!("{prefix}.{n}.log")),
    }
}

impl Write for LogFile {
    /// tracing writes one whole line per call, so a line is never split across files.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let len = buf.len() as u64;
        if self.written > 0 && self.written.saturating_add(len) > self.max_bytes {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &Path) -> Vec<(String, u64)> {
        let mut all: Vec<(String, u64)> = fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().into_string().unwrap(),
                    e.metadata().unwrap().len(),
                )
            })
            .collect();
        all.sort();
        all
    }

    /// One line in one write, as tracing's writer hands them over.
    fn line(log: &mut LogFile, i: usize) {
        let text = format!("line {i:02} {}\n", "x".repeat(30));
        log.write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn files_are_capped_in_size_and_in_number() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("logs");
        let mut log = LogFile::open(&dir, "app", 100, 3).unwrap();
        for i in 0..20 {
            line(&mut log, i);
        }
        // 39-byte lines, two to a 100-byte file: 20 lines made 10 files, 3 are kept.
        let names: Vec<String> = files(&dir).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["app.1.log", "app.2.log", "app.log"]);
        assert!(files(&dir).iter().all(|(_, len)| *len <= 100));
        let newest = fs::read_to_string(dir.join("app.log")).unwrap();
        assert!(
            newest.starts_with("line 18 ") && newest.contains("line 19 "),
            "{newest}"
        );
        let older = fs::read_to_string(dir.join("app.1.log")).unwrap();
        assert!(older.starts_with("line 16 "), "{older}");

        // Reopening appends to the current file and keeps counting its size.
        drop(log);
        let mut log = LogFile::open(&dir, "app", 100, 3).unwrap();
        line(&mut log, 20);
        let newest = fs::read_to_string(dir.join("app.log")).unwrap();
        assert!(newest.starts_with("line 20 "), "{newest}");
    }

    #[cfg(unix)]
    #[test]
    fn the_folder_and_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("logs");
        let mut log = LogFile::open(&dir, "app", 10, 2).unwrap();
        log.write_all(b"one line\n").unwrap();
        log.write_all(b"another line\n").unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("app.log")), 0o600);
        assert_eq!(mode(&dir.join("app.1.log")), 0o600);
    }
}
