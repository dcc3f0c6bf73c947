//! The core's modules form layers (ARCHITECTURE.md, "Layers"): every import between two
//! top-level modules goes down the layer order that section writes, and no two sibling
//! modules import each other, directly or round a longer loop. A child using its parent (or
//! the reverse) is the normal shape of a Rust module and is not counted. This reads the
//! sources (`crate::a::b`, `crate::a::{b, c::{d, e}}`, `super::x`, `super::super::y`, and the
//! names lib.rs re-exports) rather than the compiler's view, so a path a macro builds may be
//! missed; what it finds is real. Doc comments count: a doc link up the layers is a reader's
//! dependency all the same.

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// For each module, each module it names, with the first path that named it.
type Imports = BTreeMap<Module, BTreeMap<Module, String>>;

fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                parts.pop();
            }
            // Tests may reach anywhere.
            if parts.iter().any(|p| {
                p == "tests"
                    || p.ends_with("_tests")
                    || p.ends_with("_canaries")
                    || p.ends_with("_props")
            }) {
                continue;
            }
            out.insert(parts, path);
        }
    }
    out
}

/// The paths a use tree names, `prefix` being where it starts: `a::{b, c::{d, self}}` names
/// `a::b`, `a::c::d` and `a::c`; `super` steps up. Reads one tree from `s[*i..]` and leaves
/// `*i` after it.
fn tree(s: &[u8], i: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let skip_ws = |i: &mut usize| {
        while s.get(*i).is_some_and(u8::is_ascii_whitespace) {
            *i += 1;
        }
    };
    loop {
        skip_ws(i);
        match s.get(*i) {
            Some(b'{') => {
                *i += 1;
                loop {
                    skip_ws(i);
                    match s.get(*i) {
                        None => return,
                        Some(b'}') => {
                            *i += 1;
                            return;
                        }
                        _ => {}
                    }
                    let before = *i;
                    tree(s, i, prefix.clone(), out);
                    // `as name`, then the comma.
                    while let Some(&c) = s.get(*i) {
                        if c == b'}' {
                            break;
                        }
                        *i += 1;
                        if c == b',' {
                            break;
                        }
                    }
                    if *i == before {
                        *i += 1;
                    }
                }
            }
            Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                let start = *i;
                while s
                    .get(*i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                {
                    *i += 1;
                }
                match std::str::from_utf8(&s[start..*i]).unwrap() {
                    "self" => {}
                    "super" => {
                        prefix.pop();
                    }
                    word => prefix.push(word.to_string()),
                }
                if s[*i..].starts_with(b"::") {
                    *i += 2;
                    continue;
                }
                out.push(prefix);
                return;
            }
            _ => {
                // `*`, or the end of the path.
                out.push(prefix);
                return;
            }
        }
    }
}

/// The names lib.rs re-exports (`pub use error::{Error, Result}`), each with its module.
fn reexports(lib: &str) -> BTreeMap<String, Module> {
    let mut out = BTreeMap::new();
    for m in Regex::new(r"\bpub use ").unwrap().find_iter(lib) {
        let mut paths = Vec::new();
        tree(lib.as_bytes(), &mut m.end(), Vec::new(), &mut paths);
        for mut path in paths {
            if let Some(name) = path.pop() {
                out.insert(name, path);
            }
        }
    }
    out
}

/// The longest known module that `path` names (a name lib.rs re-exports names its module).
fn resolve(
    mods: &BTreeMap<Module, PathBuf>,
    reexported: &BTreeMap<String, Module>,
    path: &[String],
) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|i| path[..i].to_vec())
        .find(|m| mods.contains_key(m))
        .or_else(|| {
            let module = reexported.get(path.first()?)?;
            resolve(mods, &BTreeMap::new(), module)
        })
}

fn imports(mods: &BTreeMap<Module, PathBuf>, reexported: &BTreeMap<String, Module>) -> Imports {
    let start = Regex::new(r"\b(crate|super)::").unwrap();
    let test_mod = Regex::new(r"(?s)#\[cfg\(test\)\]\s*mod tests\s*\{.*").unwrap();
    let mut edges = BTreeMap::new();
    for (module, file) in mods {
        let text = std::fs::read_to_string(file).unwrap();
        let text = test_mod.replace(&text, "");
        let mut to = BTreeMap::new();
        for m in start.find_iter(&text) {
            if text[..m.start()].ends_with("::") {
                continue; // the second `super` of `super::super::`, read with the first
            }
            let base: Module = if m.as_str().starts_with("crate") {
                Vec::new()
            } else {
                module[..module.len().saturating_sub(1)].to_vec()
            };
            let mut named = Vec::new();
            let mut end = m.end();
            tree(text.as_bytes(), &mut end, base, &mut named);
            let written = text[m.start()..end]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            for path in named {
                if let Some(target) = resolve(mods, reexported, &path) {
                    to.entry(target).or_insert_with(|| written.clone());
                }
            }
        }
        edges.insert(module.clone(), to);
    }
    edges
}

/// Edges between siblings: `a/x -> b/y` counts as `a -> b` under their common parent.
fn sibling_edges(edges: &Imports) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut out: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (a, targets) in edges {
        for b in targets.keys() {
            let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            if common == a.len() || common == b.len() {
                continue; // ancestor and descendant
            }
            out.entry(a[..=common].to_vec())
                .or_default()
                .insert(b[..=common].to_vec());
        }
    }
    out
}

fn find_cycle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        node: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        path: &mut Vec<Module>,
        done: &mut BTreeSet<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(i) = path.iter().position(|m| m == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|start| visit(start, graph, &mut Vec::new(), &mut done))
}

/// The layer order ARCHITECTURE.md writes: the first fenced block of its "Layers" section,
/// one layer a line, the highest first, each line the top-level modules on it.
fn layer_order(doc: &str) -> Result<Vec<Vec<String>>, String> {
    let mut lines = doc
        .lines()
        .skip_while(|l| l.trim() != "## Layers")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .skip_while(|l| !l.starts_with("```"))
        .skip(1);
    let mut out = Vec::new();
    for line in lines.by_ref() {
        if line.starts_with("```") {
            return Ok(out);
        }
        let names: Vec<String> = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect();
        if !names.is_empty() {
            out.push(names);
        }
    }
    Err(
        "ARCHITECTURE.md has no \"## Layers\" section holding the layer order in a fenced \
         block (one layer a line, the highest first)"
            .into(),
    )
}

/// What breaks the written layer order: a top-level module on no layer or on two, a layer
/// naming no module, and an import that goes up, or across one layer other than the last
/// (the leaf modules, which may use each other as long as no loop forms).
fn layer_violations(
    layers: &[Vec<String>],
    mods: &BTreeMap<Module, PathBuf>,
    edges: &Imports,
) -> Vec<String> {
    const WHERE: &str = "ARCHITECTURE.md, \"Layers\"";
    let mut out = Vec::new();
    let mut layer_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, layer) in layers.iter().enumerate() {
        for name in layer {
            if let Some(j) = layer_of.insert(name.as_str(), i) {
                out.push(format!(
                    "`{name}` is on two layers ({} and {}) in {WHERE}",
                    j + 1,
                    i + 1
                ));
            }
        }
    }
    let tops: BTreeSet<&str> = mods
        .keys()
        .filter_map(|m| m.first())
        .map(String::as_str)
        .collect();
    for top in &tops {
        if !layer_of.contains_key(top) {
            out.push(format!(
                "the core's module `{top}` is on no layer: add it to the line of its layer in \
                 {WHERE} (the highest layer it imports nothing above)"
            ));
        }
    }
    for name in layer_of.keys() {
        if !tops.contains(name) {
            out.push(format!(
                "{WHERE} names `{name}`, which is not a module of crates/core/src"
            ));
        }
    }
    let shown = |i: usize| {
        format!(
            "layer {} of {} ({})",
            i + 1,
            layers.len(),
            layers[i].join(" ")
        )
    };
    let leaf = layers.len().saturating_sub(1);
    for (from, targets) in edges {
        let Some(a) = from.first() else { continue };
        for (to, written) in targets {
            let Some(b) = to.first() else { continue };
            if a == b {
                continue;
            }
            let (Some(&la), Some(&lb)) = (layer_of.get(a.as_str()), layer_of.get(b.as_str()))
            else {
                continue; // reported above
            };
            if la < lb || (la == lb && la == leaf) {
                continue;
            }
            let file = mods
                .get(from)
                .map_or_else(|| from.join("/"), |p| p.display().to_string());
            let (how, fix) = if la == lb {
                (
                    "beside it on",
                    "only the leaf modules (the last line) may use each other",
                )
            } else {
                ("above it, on", "imports go only down")
            };
            out.push(format!(
                "{file} imports `{b}` (`{written}`): `{a}` is on {}, `{b}` {how} {}, and {fix} \
                 ({WHERE}). Move what both need into a module below them both, or change the \
                 order there and say why.",
                shown(la),
                shown(lb),
            ));
        }
    }
    out
}

fn core_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn core_imports() -> (BTreeMap<Module, PathBuf>, Imports) {
    let src = core_src();
    let mods = modules(&src);
    assert!(
        mods.len() > 50,
        "found only {} modules under {}",
        mods.len(),
        src.display()
    );
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let edges = imports(&mods, &reexports(&lib));
    (mods, edges)
}

#[test]
fn no_two_modules_of_the_core_import_each_other() {
    let (_, edges) = core_imports();
    let graph = sibling_edges(&edges);
    if let Some(cycle) = find_cycle(&graph) {
        let shown: Vec<String> = cycle.iter().map(|m| m.join("/")).collect();
        panic!(
            "an import cycle: {}. Move what both sides need into a module below them both.",
            shown.join(" -> ")
        );
    }
}

#[test]
fn the_cores_imports_go_down_the_layers_architecture_md_writes() {
    let (mods, edges) = core_imports();
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    let layers = layer_order(&doc).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        layers.len() >= 3,
        "{layers:?}: too few layers to be the order"
    );
    let violations = layer_violations(&layers, &mods, &edges);
    assert!(violations.is_empty(), "\n{}\n", violations.join("\n"));
}

#[test]
fn the_check_sees_a_cycle_when_there_is_one() {
    let m = |s: &str| s.split('/').map(String::from).collect::<Module>();
    let edge = |to: &[&str]| -> BTreeMap<Module, String> {
        to.iter().map(|t| (m(t), String::new())).collect()
    };
    let mut edges = BTreeMap::new();
    edges.insert(m("config/types"), edge(&["transport/stdio"]));
    edges.insert(m("transport/stdio"), edge(&["config/types", "transport"]));
    let graph = sibling_edges(&edges);
    let cycle = find_cycle(&graph).expect("config <-> transport is a cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert!(
        find_cycle(&sibling_edges(&BTreeMap::from([(
            m("transport/stdio"),
            edge(&["transport"])
        )])))
        .is_none()
    );
}

#[test]
fn use_trees_are_read_whole() {
    let check = |text: &str, expect: &[&str]| {
        let mut out = Vec::new();
        let mut i = 0;
        tree(text.as_bytes(), &mut i, vec!["m".into()], &mut out);
        let got: Vec<String> = out.iter().map(|p| p.join("::")).collect();
        assert_eq!(got, expect, "{text}");
    };
    check("a::b;", &["m::a::b"]);
    check(
        "{a::{b, c as d}, e::*, self};",
        &["m::a::b", "m::a::c", "m::e", "m"],
    );
    check(
        "{\n    a::{\n        b::{c, d},\n    },\n    f,\n};",
        &["m::a::b::c", "m::a::b::d", "m::f"],
    );
    check("super::x::Y", &["x::Y"]);
    check("fmt_duration(d)", &["m::fmt_duration"]);
    let lib = "pub use error::{Error, Result};\npub use session::Session;\n";
    let re = reexports(lib);
    assert_eq!(re.get("Error"), Some(&vec!["error".to_string()]));
    assert_eq!(re.get("Session"), Some(&vec!["session".to_string()]));
}

#[test]
fn the_layer_check_names_an_import_that_goes_up() {
    let m = |s: &str| s.split('/').map(String::from).collect::<Module>();
    let doc = "# x\n\n## Layers\n\nText.\n\n```text\ngateway\nsession, config\nerror redact\n```\n";
    let layers = layer_order(doc).unwrap();
    assert_eq!(layers.len(), 3);
    let mods: BTreeMap<Module, PathBuf> = [
        "gateway",
        "session",
        "session/engine",
        "config",
        "error",
        "redact",
    ]
    .iter()
    .map(|s| (m(s), PathBuf::from(format!("src/{s}.rs"))))
    .collect();
    let imports = |pairs: &[(&str, &str)]| -> Imports {
        let mut out: Imports = BTreeMap::new();
        for (a, b) in pairs {
            out.entry(m(a))
                .or_default()
                .insert(m(b), format!("crate::{}::X", b.replace('/', "::")));
        }
        out
    };
    // Down, and between leaves: allowed.
    let fine = imports(&[
        ("gateway", "session"),
        ("session/engine", "error"),
        ("error", "redact"),
    ]);
    assert_eq!(
        layer_violations(&layers, &mods, &fine),
        Vec::<String>::new()
    );
    // Up: named with both modules and both layers.
    let up = layer_violations(&layers, &mods, &imports(&[("session/engine", "gateway")]));
    assert_eq!(up.len(), 1, "{up:?}");
    for part in [
        "src/session/engine.rs",
        "`gateway`",
        "crate::gateway::X",
        "layer 2 of 3 (session config)",
        "layer 1 of 3 (gateway)",
    ] {
        assert!(up[0].contains(part), "{part} not in {}", up[0]);
    }
    // Across a layer that is not the leaves'.
    let across = layer_violations(&layers, &mods, &imports(&[("config", "session")]));
    assert!(across[0].contains("beside it on"), "{across:?}");
    // A module on no layer, and a layer naming no module.
    let mut more = mods.clone();
    more.insert(m("nofile"), PathBuf::from("src/nofile.rs"));
    more.remove(&m("redact"));
    let v = layer_violations(&layers, &more, &BTreeMap::new());
    assert!(
        v.iter().any(|s| s.contains("`nofile` is on no layer")),
        "{v:?}"
    );
    assert!(v.iter().any(|s| s.contains("names `redact`")), "{v:?}");
    // A map without the section says so.
    assert!(layer_order("# x\n\n## Code map\n\n```\na\n```\n").is_err());
}
