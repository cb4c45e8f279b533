//! Which files of a library a program runs: the modules its paths into the library name
//! (`lib::pipelines::sentiment::Model` → `pipelines/sentiment.rs` and what it contains), then
//! every module those files reach in turn (`crate::…`, `super::…`, `self::…`, child modules),
//! with the root's `pub use` re-exports followed. A program that uses a library only for its
//! error type does not run the library's device code.

use std::collections::HashSet;

/// A library's files with their module paths (`[]`: the root).
pub type Modules = [(String, Vec<String>)];

/// What the index knows of one file for this: its paths and its `pub use` re-exports.
pub trait PathsOf {
    fn paths(&self, file: &str) -> &[Vec<String>];
    fn reexports(&self, file: &str) -> &[(String, Vec<String>)];
}

/// The library files reached from `entry` (paths relative to the library root, the crate's
/// name taken off). `None`: the program uses the library in a way not followed here (a glob
/// of the root), so all of it counts.
pub fn reached(
    modules: &Modules,
    entry: &[Vec<String>],
    index: &impl PathsOf,
) -> Option<Vec<String>> {
    let root = modules.iter().find(|(_, m)| m.is_empty())?.0.clone();
    let mut seen: HashSet<Vec<String>> = HashSet::new();
    let mut files: Vec<String> = Vec::new();
    let mut queue: Vec<Vec<String>> = entry.to_vec();
    while let Some(path) = queue.pop() {
        if !seen.insert(path.clone()) || seen.len() > 10_000 {
            continue;
        }
        if path.first().map(String::as_str) == Some("*") {
            return None;
        }
        let found = longest_module(modules, &path);
        let module = match found {
            Some(m) => m,
            None => {
                // An item of the root: the root file, and where a re-export says it lives.
                add(&mut files, &root);
                let name = &path[0];
                for (bound, target) in index.reexports(&root) {
                    if bound == name || bound == "*" {
                        queue.push(absolute(&[], target));
                    }
                }
                continue;
            }
        };
        for (file, m) in modules.iter().filter(|(_, m)| m.starts_with(&module)) {
            if add(&mut files, file) {
                for p in index.paths(file) {
                    queue.push(absolute(m, p));
                }
                for (_, p) in index.reexports(file) {
                    queue.push(absolute(m, p));
                }
            }
        }
    }
    Some(files)
}

fn add(files: &mut Vec<String>, file: &str) -> bool {
    if files.iter().any(|f| f == file) {
        return false;
    }
    files.push(file.to_string());
    true
}

/// The longest module path (at least one segment) that `path` starts with.
fn longest_module(modules: &Modules, path: &[String]) -> Option<Vec<String>> {
    modules
        .iter()
        .map(|(_, m)| m)
        .filter(|m| !m.is_empty() && path.starts_with(m))
        .max_by_key(|m| m.len())
        .cloned()
}

/// A path written in module `at`, relative to the crate root: `crate::a` → `a`,
/// `super::a` → the parent's `a`, `self::a` and a child module's `a::b` → `at::a::b`.
fn absolute(at: &[String], path: &[String]) -> Vec<String> {
    match path.first().map(String::as_str) {
        Some("crate") => path[1..].to_vec(),
        Some("self") => [at, &path[1..]].concat(),
        Some("super") => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = &at[..at.len().saturating_sub(ups)];
            [base, &path[ups..]].concat()
        }
        _ => [at, path].concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    type Reexports = Vec<(String, Vec<String>)>;
    struct Index(HashMap<&'static str, (Vec<Vec<String>>, Reexports)>);
    impl PathsOf for Index {
        fn paths(&self, file: &str) -> &[Vec<String>] {
            self.0.get(file).map_or(&[], |(p, _)| p)
        }
        fn reexports(&self, file: &str) -> &[(String, Vec<String>)] {
            self.0.get(file).map_or(&[], |(_, r)| r)
        }
    }

    fn p(s: &str) -> Vec<String> {
        s.split("::").map(str::to_string).collect()
    }

    fn lib() -> (Vec<(String, Vec<String>)>, Index) {
        let modules = vec![
            ("lib.rs".to_string(), vec![]),
            ("common/mod.rs".to_string(), p("common")),
            ("common/error.rs".to_string(), p("common::error")),
            ("pipelines/mod.rs".to_string(), p("pipelines")),
            (
                "pipelines/sentiment.rs".to_string(),
                p("pipelines::sentiment"),
            ),
            ("pipelines/config.rs".to_string(), p("pipelines::config")),
        ];
        let index = Index(HashMap::from([
            (
                "lib.rs",
                (vec![], vec![("Error".into(), p("common::error::Error"))]),
            ),
            (
                "pipelines/sentiment.rs",
                (vec![p("super::config::Config")], vec![]),
            ),
        ]));
        (modules, index)
    }

    #[test]
    fn an_error_type_reaches_its_module_and_a_pipeline_what_it_calls() {
        let (modules, index) = lib();
        let err = reached(&modules, &[p("Error")], &index).unwrap();
        assert_eq!(err, ["lib.rs", "common/error.rs"]);
        let mut model = reached(&modules, &[p("pipelines::sentiment::Model")], &index).unwrap();
        model.sort();
        assert_eq!(model, ["pipelines/config.rs", "pipelines/sentiment.rs"]);
        assert_eq!(reached(&modules, &[p("*")], &index), None);
    }
}
