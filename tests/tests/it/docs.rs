//! ARCHITECTURE.md is the map, so every file and directory it names in backticks must exist
//! (as a path ending in what it names, since sections name files relative to their
//! directory). Names of files inside the diagnostic bundle are not repository files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Files that live in a bundle zip, not in the repository.
const IN_THE_BUNDLE: &[&str] = &["config.redacted.json", "manifest.json"];

const EXTENSIONS: &[&str] = &[
    "rs", "ts", "md", "sh", "json", "mjs", "py", "svelte", "toml", "yml", "css", "html",
];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// Every file and directory of the repository, as paths relative to its root.
fn tree(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if matches!(
                name.as_str(),
                "target" | "node_modules" | ".git" | ".tools" | "dist"
            ) {
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                out.insert(format!("{rel}/"));
                stack.push(path);
            } else {
                out.insert(rel);
            }
        }
    }
    out
}

/// The backticked names that look like a path: a known extension, or a trailing `/`.
fn named_paths(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, chunk) in text.split('`').enumerate() {
        if i % 2 == 0 || chunk.contains(char::is_whitespace) || chunk.contains(['*', '<', '{']) {
            continue;
        }
        let dir = chunk.ends_with('/') && chunk.len() > 1;
        let file = chunk
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && EXTENSIONS.contains(&ext));
        if (dir || file) && !chunk.contains("://") && !IN_THE_BUNDLE.contains(&chunk) {
            out.insert(chunk.trim_start_matches("./").to_string());
        }
    }
    out
}

#[test]
fn architecture_md_names_only_files_that_exist() {
    let root = repository();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let tree = tree(&root);
    let named = named_paths(&text);
    assert!(
        named.len() > 40,
        "found only {} paths in ARCHITECTURE.md",
        named.len()
    );
    let missing: Vec<&String> = named
        .iter()
        .filter(|n| {
            !tree
                .iter()
                .any(|p| *p == **n || p.ends_with(&format!("/{n}")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names files that do not exist: {missing:?}. Fix the map (or the name)."
    );
}

#[test]
fn the_check_sees_a_missing_file() {
    let named = named_paths("see `supervisor/stderr.rs` and `crates/core/` and `a b.rs`");
    assert_eq!(
        named,
        BTreeSet::from([
            "supervisor/stderr.rs".to_string(),
            "crates/core/".to_string()
        ])
    );
}
