//! The layers of the crate, checked over the `crate::` paths of every source file: a module
//! imports modules of its own layer or of the layers below, never one above, and the modules
//! form no cycle. A shortcut up the layers fails CI instead of tangling the code again.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each layer and its top-level modules, lowest first. A new module is added to one.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "base",
        &[
            "lines",
            "line_index",
            "escape",
            "output",
            "paths",
            "edit",
            "shard",
        ],
    ),
    ("knowledge", &["knowledge"]),
    (
        "model",
        &["finding", "outcome", "rules", "lint", "policy", "summary"],
    ),
    (
        "fs",
        &[
            "confine",
            "tree_file",
            "walk",
            "write",
            "source",
            "state",
            "resources",
            "panics",
        ],
    ),
    ("store", &["journal"]),
    (
        "lang",
        &[
            "lang", "python", "rust", "template", "removal", "add_noqa", "suppress", "nesting",
        ],
    ),
    (
        "engine",
        &["process", "run", "cache", "gpu", "leftovers", "baseline"],
    ),
    ("report", &["report"]),
    ("cli", &["cli"]),
    ("commands", &["commands"]),
];

/// Edges up the layers that are known and owed: the run engine still reads the command line's
/// clap structs (`InputArgs`, `GpuArgs`) rather than settings of its own.
const OWED: &[(&str, &str)] = &[("run", "cli")];

/// The layer of each top-level module, by its rank.
fn ranks() -> BTreeMap<&'static str, usize> {
    LAYERS
        .iter()
        .enumerate()
        .flat_map(|(rank, (_, modules))| modules.iter().map(move |m| (*m, rank)))
        .collect()
}

/// Every `crate::<module>` each top-level module names outside comments, with the file.
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
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let from = first.trim_end_matches(".rs").to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            for (i, _) in code.match_indices("crate::") {
                let module: String = code[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.push((rel.display().to_string(), from.clone(), module));
            }
        }
    }
    out
}

/// Violations of the layers among `edges` (file, from, to), and the cycles among modules.
fn check(edges: &[(String, String, String)]) -> Vec<String> {
    let ranks = ranks();
    let mut problems = Vec::new();
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (file, from, to) in edges {
        if from == to || matches!(from.as_str(), "lib" | "main") {
            continue;
        }
        let (Some(&f), Some(&t)) = (ranks.get(from.as_str()), ranks.get(to.as_str())) else {
            if !ranks.contains_key(from.as_str()) {
                problems.push(format!(
                    "{file}: module `{from}` is in no layer (add it to LAYERS)"
                ));
            }
            continue;
        };
        graph.entry(from).or_default().insert(to);
        if t > f && !OWED.contains(&(from.as_str(), to.as_str())) {
            problems.push(format!(
                "{file}: `{from}` ({}) imports crate::{to} ({}), a layer above it",
                LAYERS[f].0, LAYERS[t].0
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
    let edge = |from: &str, to: &str| (format!("src/{from}.rs"), from.to_string(), to.to_string());
    // `walk` (fs) naming `process` (engine): up the layers.
    let up = check(&[edge("walk", "process")]);
    assert_eq!(
        up,
        ["src/walk.rs: `walk` (fs) imports crate::process (engine), a layer above it"]
    );
    // Two modules of one layer naming each other: a cycle, though neither points up.
    let cycle = check(&[edge("walk", "write"), edge("write", "walk")]);
    assert_eq!(cycle, ["modules in a cycle: walk → write → walk"]);
    // A module the table does not know is named, so that every module has a layer.
    assert_eq!(
        check(&[edge("newmod", "walk")]),
        ["src/newmod.rs: module `newmod` is in no layer (add it to LAYERS)"]
    );
}
