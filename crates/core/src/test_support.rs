//! What tests across the core's modules share (test builds only): a directory's file names,
//! for the tests that check what a write left behind.

use std::path::Path;

/// The names of the files and directories in `dir`, sorted.
pub(crate) fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
