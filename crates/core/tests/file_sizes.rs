//! Files stay small enough to read in one sitting (ARCHITECTURE.md, "Layers"): a front end
//! (crates/cli, crates/desktop, src-tauri) parses, calls the core and prints, so none of its
//! files passes 350 lines; no other source file passes 600. Tests, test support and generated
//! files are left out. A file over its limit fails here with what to do.

use std::path::{Path, PathBuf};

const FRONT_END: [&str; 3] = ["crates/cli/src", "crates/desktop/src", "src-tauri/src"];
const OTHERS: [&str; 2] = ["crates/core/src", "ui/src"];
const FRONT_END_LINES: usize = 350;
const LINES: usize = 600;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `path` (relative to the repository) is a test, test support or generated.
fn exempt(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let stem = name.split('.').next().unwrap_or_default();
    path.components().any(|c| {
        let c = c.as_os_str();
        c == "tests" || c == "test" || c == "e2e" || c == "node_modules" || c == "target"
    }) || stem == "tests"
        || stem == "test_support"
        || stem.ends_with("_tests")
        || stem.ends_with("_canaries")
        || stem.ends_with("_props")
        || name.contains(".test.")
        || name == "generated.ts"
}

/// Every source file under `dir` (relative to the repository) with its line count.
fn sources(dir: &str) -> Vec<(PathBuf, usize)> {
    let root = repo();
    let mut out = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(&root).unwrap().to_owned();
            if exempt(&rel) {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if path
                .extension()
                .is_some_and(|e| e == "rs" || e == "ts" || e == "svelte")
            {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((rel, text.lines().count()));
            }
        }
    }
    out
}

fn over(dirs: &[&str], limit: usize) -> Vec<String> {
    let mut out: Vec<String> = dirs
        .iter()
        .flat_map(|d| sources(d))
        .filter(|(_, lines)| *lines > limit)
        .map(|(path, lines)| format!("{} has {lines} lines (at most {limit})", path.display()))
        .collect();
    out.sort();
    out
}

#[test]
fn no_source_file_passes_its_size() {
    let mut too_long = over(&FRONT_END, FRONT_END_LINES);
    too_long.extend(over(&OTHERS, LINES));
    assert!(
        too_long.is_empty(),
        "split these into modules that each hold one part (a front end's logic belongs in \
         the core):\n  {}",
        too_long.join("\n  ")
    );
}

#[test]
fn the_size_check_sees_the_sources_and_skips_the_tests() {
    let core = sources("crates/core/src");
    let has = |p: &str| core.iter().any(|(path, _)| path == Path::new(p));
    assert!(has("crates/core/src/lib.rs"), "lib.rs is counted");
    assert!(!has("crates/core/src/supervisor/tests.rs"), "tests are not");
    let ui = sources("ui/src");
    assert!(ui.iter().any(|(p, _)| p.ends_with("host/mock.ts")));
    assert!(!ui.iter().any(|(p, _)| p.ends_with("host/generated.ts")));
}
