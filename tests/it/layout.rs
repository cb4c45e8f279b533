//! The layers of the crate, checked over the `crate::` paths of every source file: each layer
//! is a folder of `src/` (or one file), a module imports modules of its own layer or of the
//! layers below, never one above, and the modules form no cycle. A shortcut up the layers
//! fails CI instead of tangling the code again.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first: each is `src/<name>/` or `src/<name>.rs`. A new top-level module
/// is added here, in the layer whose job it does.
const LAYERS: &[&str] = &[
    "base",
    "knowledge",
    "model",
    "fs",
    "journal",
    "lang",
    "engine",
    "report",
    "cli",
    "commands",
];

/// Edges up the layers that are known and owed, as (from module, to module). None today: a
/// new one needs a reason here.
const OWED: &[(&str, &str)] = &[];

/// The module a path names, as the unit the layers and cycles are checked on: `layer::module`
/// where the layer folder holds such a module (`base::lines`, `lang::python`), else the layer
/// (`lang` for `lang/mod.rs`'s own items, `report` for all of `report/`).
fn unit(src: &Path, segments: &[&str]) -> String {
    let layer = segments[0];
    if let Some(second) = segments.get(1).filter(|_| folder_of_modules(layer)) {
        let dir = src.join(layer);
        if dir.join(format!("{second}.rs")).is_file() || dir.join(second).join("mod.rs").is_file() {
            return format!("{layer}::{second}");
        }
    }
    layer.to_string()
}

/// Layers whose folder is a set of modules, each a unit of its own; the others (`report`,
/// `journal`, `knowledge`, `commands`) are one unit each.
fn folder_of_modules(layer: &str) -> bool {
    matches!(layer, "base" | "model" | "fs" | "lang" | "engine")
}

/// The paths named after `crate::` in `code`, a use tree's groups expanded:
/// `crate::{a::b, c::{d, e}}` gives `a::b`, `c::d`, `c::e`.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    fn tree(s: &[u8], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
        let mut path = prefix.to_vec();
        loop {
            while i < s.len() && s[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < s.len() && s[i] == b'{' {
                i += 1;
                loop {
                    i = tree(s, i, &path, out);
                    while i < s.len() && s[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    match s.get(i) {
                        Some(b',') => i += 1,
                        Some(b'}') => return i + 1,
                        _ => return i,
                    }
                    while i < s.len() && s[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    if s.get(i) == Some(&b'}') {
                        return i + 1;
                    }
                }
            }
            let start = i;
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
                i += 1;
            }
            if start == i {
                break;
            }
            path.push(String::from_utf8_lossy(&s[start..i]).into_owned());
            if s[i..].starts_with(b"::") {
                i += 2;
            } else {
                break;
            }
        }
        if path.len() > prefix.len() {
            out.push(path);
        }
        i
    }
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        tree(code.as_bytes(), at + 7, &[], &mut out);
    }
    out
}

/// Every (file, from module, to module) named by a `crate::` path outside comments.
fn imports(src: &Path) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(src).unwrap();
        let mut segments: Vec<&str> = rel
            .iter()
            .map(|c| c.to_str().unwrap().trim_end_matches(".rs"))
            .collect();
        if segments.last() == Some(&"mod") {
            segments.pop();
        }
        let from = unit(src, &segments);
        let text = std::fs::read_to_string(&path).unwrap();
        let code: String = text
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        for target in crate_paths(&code) {
            let target: Vec<&str> = target.iter().map(String::as_str).collect();
            out.push((rel.display().to_string(), from.clone(), unit(src, &target)));
        }
    }
    out
}

/// The rank of a module's layer.
fn rank(module: &str) -> Option<usize> {
    let layer = module.split("::").next().unwrap();
    LAYERS.iter().position(|l| *l == layer)
}

/// Violations of the layers among `edges` (file, from, to), and the cycles among modules.
fn check(edges: &[(String, String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (file, from, to) in edges {
        if from == to || matches!(from.as_str(), "lib" | "main") {
            continue;
        }
        let Some(f) = rank(from) else {
            problems.push(format!(
                "{file}: module `{from}` is in no layer (add it to LAYERS)"
            ));
            continue;
        };
        let Some(t) = rank(to) else {
            // `crate::rule!` and other macros at the root.
            continue;
        };
        graph.entry(from).or_default().insert(to);
        if t > f && !OWED.contains(&(from.as_str(), to.as_str())) {
            problems.push(format!(
                "{file}: `{from}` ({}) imports crate::{to} ({}), a layer above it",
                LAYERS[f], LAYERS[t]
            ));
        }
    }
    for cycle in cycles(&graph) {
        problems.push(format!("modules in a cycle: {}", cycle.join(" → ")));
    }
    problems.sort();
    problems.dedup();
    problems
}

/// The cycles of `graph`: one path back to its start per module that lies on one.
fn cycles<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    let mut found = Vec::new();
    let mut seen_in_cycle = BTreeSet::new();
    for &start in graph.keys() {
        if seen_in_cycle.contains(start) {
            continue;
        }
        // Breadth first from `start`'s successors back to `start`.
        let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue: std::collections::VecDeque<&str> = graph[start].iter().copied().collect();
        for &n in &graph[start] {
            previous.insert(n, start);
        }
        while let Some(n) = queue.pop_front() {
            if n == start {
                let mut path = vec![start];
                let mut at = previous[start];
                while at != start {
                    path.push(at);
                    at = previous[at];
                }
                path.push(start);
                path.reverse();
                seen_in_cycle.extend(path.iter().copied());
                found.push(path);
                break;
            }
            for &m in graph.get(n).into_iter().flatten() {
                if !previous.contains_key(m) {
                    previous.insert(m, n);
                    queue.push_back(m);
                }
            }
        }
    }
    found
}

#[test]
fn every_import_points_down_and_no_module_is_in_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = check(&imports(&src));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn an_upward_import_or_a_cycle_is_caught() {
    let edge =
        |file: &str, from: &str, to: &str| (file.to_string(), from.to_string(), to.to_string());
    // The walk (fs) naming the CPU stage (engine): up the layers.
    let up = check(&[edge("fs/walk.rs", "fs::walk", "engine::process")]);
    assert_eq!(
        up,
        ["fs/walk.rs: `fs::walk` (fs) imports crate::engine::process (engine), a layer above it"]
    );
    // Two modules of one layer naming each other: a cycle, though neither points up.
    let cycle = check(&[
        edge("fs/walk.rs", "fs::walk", "fs::write"),
        edge("fs/write.rs", "fs::write", "fs::walk"),
    ]);
    assert_eq!(
        cycle,
        ["modules in a cycle: fs::walk → fs::write → fs::walk"]
    );
    // A top-level module the table does not know is named, so that every module has a layer.
    assert_eq!(
        check(&[edge("newmod.rs", "newmod", "fs::walk")]),
        ["newmod.rs: module `newmod` is in no layer (add it to LAYERS)"]
    );
}

#[test]
fn use_groups_are_read_path_by_path() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let code = "use crate::{\n    base::{edit::Edit, lines},\n    model::finding::Finding,\n};\nlet x = crate::lang::FileInfo::default();";
    let units: Vec<String> = crate_paths(code)
        .iter()
        .map(|p| unit(&src, &p.iter().map(String::as_str).collect::<Vec<_>>()))
        .collect();
    assert_eq!(
        units,
        ["base::edit", "base::lines", "model::finding", "lang"]
    );
}
