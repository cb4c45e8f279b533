//! Arrows point down only (DESIGN.md, Layout): a check over the `crate::` paths of every source
//! file, so a shortcut up the layers fails CI instead of tangling the code again.

use std::path::Path;

/// Every `crate::<module>` a file under `src/<dir>` names.
fn imports_of(dir: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![root.join(dir)];
    if !stack[0].is_dir() {
        stack = vec![root.join(format!("{dir}.rs"))];
    }
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, _) in text.match_indices("crate::") {
            let module: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.push((path.display().to_string(), module));
        }
    }
    out
}

fn assert_never_imports(dir: &str, above: &[&str]) {
    for (file, module) in imports_of(dir) {
        assert!(
            !above.contains(&module.as_str()),
            "{file} imports crate::{module}, a layer above {dir}/"
        );
    }
}

#[test]
fn arrows_point_down_only() {
    assert_never_imports("run", &["commands"]);
    assert_never_imports("report", &["commands", "run", "process", "gpu", "write"]);
    assert_never_imports("journal", &["commands", "run", "report", "process", "gpu"]);
    assert_never_imports("gpu", &["commands", "run", "report", "journal"]);
    assert_never_imports("rust", &["python", "commands", "run", "report", "journal"]);
    assert_never_imports("python", &["rust", "commands", "run", "report", "journal"]);
    assert_never_imports("template", &["python", "rust", "commands", "run"]);
}
