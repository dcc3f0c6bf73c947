//! The core's modules form layers: no two sibling modules import each other, directly or
//! round a longer loop (ARCHITECTURE.md, "Layers"). A child using its parent (or the
//! reverse) is the normal shape of a Rust module and is not counted. This reads the sources
//! (`crate::a::b`, `crate::a::{b, c}`, `super::x`) rather than the compiler's view, so a
//! path written in a macro or a doc comment may be missed; what it finds is real.

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

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
            if parts
                .iter()
                .any(|p| p == "tests" || p.ends_with("_tests") || p.ends_with("_canaries"))
            {
                continue;
            }
            out.insert(parts, path);
        }
    }
    out
}

/// The longest known module that `path` names.
fn resolve(mods: &BTreeMap<Module, PathBuf>, path: &[String]) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|i| path[..i].to_vec())
        .find(|m| mods.contains_key(m))
}

fn imports(mods: &BTreeMap<Module, PathBuf>) -> BTreeMap<Module, BTreeSet<Module>> {
    let path_re = Regex::new(
        r"\b(crate|super)::((?:[A-Za-z_][A-Za-z0-9_]*::)*)(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)",
    )
    .unwrap();
    let test_mod = Regex::new(r"(?s)#\[cfg\(test\)\]\s*mod tests\s*\{.*").unwrap();
    let mut edges = BTreeMap::new();
    for (module, file) in mods {
        let text = std::fs::read_to_string(file).unwrap();
        let text = test_mod.replace(&text, "");
        let is_mod_rs = file.file_stem().is_some_and(|s| s == "mod" || s == "lib");
        let mut to = BTreeSet::new();
        for c in path_re.captures_iter(&text) {
            let mut base: Module = if &c[1] == "crate" {
                Vec::new()
            } else if is_mod_rs {
                module[..module.len().saturating_sub(1)].to_vec()
            } else {
                module[..module.len() - 1].to_vec()
            };
            base.extend(c[2].split("::").filter(|s| !s.is_empty()).map(String::from));
            let tails: Vec<String> = match c[3].strip_prefix('{') {
                Some(group) => group
                    .trim_end_matches('}')
                    .split(',')
                    .filter_map(|i| i.trim().split([':', ' ']).next().map(String::from))
                    .filter(|i| !i.is_empty() && i != "self")
                    .collect(),
                None => vec![c[3].to_string()],
            };
            for tail in tails {
                let mut path = base.clone();
                path.push(tail);
                if let Some(target) = resolve(mods, &path) {
                    to.insert(target);
                }
            }
        }
        edges.insert(module.clone(), to);
    }
    edges
}

/// Edges between siblings: `a/x -> b/y` counts as `a -> b` under their common parent.
fn sibling_edges(edges: &BTreeMap<Module, BTreeSet<Module>>) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut out: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (a, targets) in edges {
        for b in targets {
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

#[test]
fn no_two_modules_of_the_core_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    assert!(
        mods.len() > 50,
        "found only {} modules under {}",
        mods.len(),
        src.display()
    );
    let graph = sibling_edges(&imports(&mods));
    if let Some(cycle) = find_cycle(&graph) {
        let shown: Vec<String> = cycle.iter().map(|m| m.join("/")).collect();
        panic!(
            "an import cycle: {}. Move what both sides need into a module below them both.",
            shown.join(" -> ")
        );
    }
}

#[test]
fn the_check_sees_a_cycle_when_there_is_one() {
    let m = |s: &str| s.split('/').map(String::from).collect::<Module>();
    let mut edges = BTreeMap::new();
    edges.insert(m("config/types"), BTreeSet::from([m("transport/stdio")]));
    edges.insert(
        m("transport/stdio"),
        BTreeSet::from([m("config/types"), m("transport")]),
    );
    let graph = sibling_edges(&edges);
    let cycle = find_cycle(&graph).expect("config <-> transport is a cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert!(
        find_cycle(&sibling_edges(&BTreeMap::from([(
            m("transport/stdio"),
            BTreeSet::from([m("transport")])
        )])))
        .is_none()
    );
}
