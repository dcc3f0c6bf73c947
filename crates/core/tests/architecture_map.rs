//! ARCHITECTURE.md is the map, and this keeps it true: every module of crates/core/src,
//! crates/cli/src, crates/desktop/src and src-tauri/src is named in the code map's section
//! for its part (a core module's own section, or its crate's), and no line of the map is
//! wider than 100 characters. A new module fails here until the map says what it holds.
//! (The layer order is checked against the imports in `module_cycles.rs`.)

use std::path::{Path, PathBuf};

/// A part of the code the map covers: its sources, relative to the repository root, and
/// whether each top-level module has a section of its own (the core) or the crate has one.
struct Part {
    src: &'static str,
    /// The section's heading begins a code span with this (for the core, the module's own
    /// `crates/core/src/NAME/` or `crates/core/src/NAME.rs`).
    heading: Option<&'static str>,
}

const PARTS: [Part; 4] = [
    Part {
        src: "crates/core/src",
        heading: None,
    },
    Part {
        src: "crates/cli/src",
        heading: Some("crates/cli/"),
    },
    Part {
        src: "crates/desktop/src",
        heading: Some("crates/desktop/"),
    },
    Part {
        src: "src-tauri/src",
        heading: Some("src-tauri/"),
    },
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, relative to it, tests left out (they may be anywhere).
fn rs_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(dir).unwrap().to_owned());
            }
        }
    }
    out.retain(|p| {
        !p.with_extension("").components().any(|c| {
            let c = c.as_os_str().to_string_lossy();
            c == "tests"
                || c.ends_with("_tests")
                || c.ends_with("_canaries")
                || c.ends_with("_props")
        })
    });
    out.sort();
    out
}

/// The map's `###` sections: heading and body (up to the next heading outside a fence).
fn sections(doc: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    let mut fenced = false;
    let mut current: Option<usize> = None;
    for line in doc.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && line.starts_with('#') {
            current = line.starts_with("### ").then(|| {
                out.push((line, String::new()));
                out.len() - 1
            });
            continue;
        }
        if let Some(i) = current {
            out[i].1.push_str(line);
            out[i].1.push('\n');
        }
    }
    out
}

/// Whether a code span of `body` names `token` (`stdio.rs`, `http/`) as a whole path
/// component: `transport/http/legacy.rs` names `legacy.rs` and `http/`.
fn names(body: &str, token: &str) -> bool {
    body.split('`').skip(1).step_by(2).any(|span| {
        span.match_indices(token)
            .any(|(i, _)| i == 0 || span.as_bytes()[i - 1] == b'/')
    })
}

/// What a file is called on the map: `name.rs`, or `dir/` for a `dir/mod.rs` (or a binary's
/// `dir/main.rs`); `None` for the crate's root and for a core module's own file (its section
/// is its mention).
fn token(part: &Part, file: &Path) -> Option<String> {
    let parts: Vec<String> = file
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let (last, dirs) = parts.split_last()?;
    let root = matches!(last.as_str(), "mod.rs" | "lib.rs" | "main.rs");
    if dirs.is_empty() && (root || part.heading.is_none()) {
        return None;
    }
    if root {
        if part.heading.is_none() && dirs.len() == 1 {
            return None; // crates/core/src/NAME/mod.rs
        }
        return Some(format!("{}/", dirs.last()?));
    }
    Some(last.clone())
}

/// The headings a file's section may have.
fn headings(part: &Part, file: &Path) -> Vec<String> {
    match part.heading {
        Some(h) => vec![h.to_string()],
        None => {
            let top = file
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            let top = top.trim_end_matches(".rs");
            vec![
                format!("{}/{top}/", part.src),
                format!("{}/{top}.rs", part.src),
            ]
        }
    }
}

/// Each file of `part` the map does not name, saying where to name it.
fn unmapped(doc: &str, part: &Part, files: &[PathBuf]) -> Vec<String> {
    let sections = sections(doc);
    let mut out = Vec::new();
    for file in files {
        if matches!(file.to_str(), Some("lib.rs" | "main.rs")) {
            continue; // the crate's root
        }
        let shown = format!("{}/{}", part.src, file.display());
        let wanted = headings(part, file);
        let mine: Vec<&(&str, String)> = sections
            .iter()
            .filter(|(h, _)| wanted.iter().any(|w| h.contains(&format!("`{w}"))))
            .collect();
        if mine.is_empty() {
            out.push(format!(
                "{shown}: ARCHITECTURE.md has no section for it; add \"### `{}`\" to the code map, \
                 saying what it holds and its architecture invariant",
                wanted.last().unwrap()
            ));
            continue;
        }
        let Some(token) = token(part, file) else {
            continue;
        };
        if !mine.iter().any(|(_, body)| names(body, &token)) {
            out.push(format!(
                "{shown} is not on the map: name `{token}` in ARCHITECTURE.md's section \"{}\" \
                 and say what it holds",
                mine[0].0
            ));
        }
    }
    out
}

#[test]
fn every_module_is_on_the_map() {
    let doc = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let mut missing = Vec::new();
    for part in &PARTS {
        let files = rs_files(&repo().join(part.src));
        assert!(files.len() > 5, "found only {files:?} in {}", part.src);
        missing.extend(unmapped(&doc, part, &files));
    }
    assert!(missing.is_empty(), "\n{}\n", missing.join("\n"));
}

#[test]
fn no_line_of_the_map_is_wider_than_100_characters() {
    let doc = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let wide: Vec<String> = doc
        .lines()
        .enumerate()
        .filter(|(_, l)| l.chars().count() > 100)
        .map(|(i, l)| {
            format!(
                "ARCHITECTURE.md:{}: {} characters; wrap it",
                i + 1,
                l.chars().count()
            )
        })
        .collect();
    assert!(wide.is_empty(), "\n{}\n", wide.join("\n"));
}

#[test]
fn the_map_check_names_what_is_missing_and_where() {
    let doc = "# Map\n\n## Code map\n\n### `crates/core/src/transport/`\n\n`stdio.rs` and \
               `http/` (`http/legacy.rs`).\n\n```\n# not a heading\n```\n`spawn.rs`\n\n\
               ### `crates/cli/`\n\n`src/watch.rs`.\n\n## Cross-cutting\n\n`serve.rs`\n";
    let core = &PARTS[0];
    let files: Vec<PathBuf> = [
        "lib.rs",
        "transport/mod.rs",
        "transport/stdio.rs",
        "transport/spawn.rs",
        "transport/http/mod.rs",
        "transport/http/legacy.rs",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    assert_eq!(unmapped(doc, core, &files), Vec::<String>::new());
    let more = [
        PathBuf::from("transport/tree.rs"),
        PathBuf::from("gloss.rs"),
    ];
    let missing = unmapped(doc, core, &more);
    assert_eq!(missing.len(), 2, "{missing:?}");
    assert!(
        missing[0].contains("crates/core/src/transport/tree.rs is not on the map")
            && missing[0].contains("`tree.rs`")
            && missing[0].contains("### `crates/core/src/transport/`"),
        "{}",
        missing[0]
    );
    assert!(
        missing[1].contains("add \"### `crates/core/src/gloss.rs`\""),
        "{}",
        missing[1]
    );
    // Another crate's files are named in its section only.
    let cli = &PARTS[1];
    let cli_files = [
        PathBuf::from("main.rs"),
        PathBuf::from("watch.rs"),
        PathBuf::from("serve.rs"),
    ];
    let missing = unmapped(doc, cli, &cli_files);
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert!(
        missing[0].contains("crates/cli/src/serve.rs"),
        "{}",
        missing[0]
    );
    // A token is a whole path component.
    assert!(names("`http/legacy.rs`", "legacy.rs"));
    assert!(!names("`http/notlegacy.rs`", "legacy.rs"));
}
