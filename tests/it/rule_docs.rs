//! `docs/rules/` is generated from the rule registry: a page per rule and an index. A rule
//! changed without its page (or a page edited by hand) fails here; `GH_UPDATE_RULE_DOCS=1`
//! rewrites the pages, as `INSTA_UPDATE` does snapshots.

use std::collections::BTreeMap;
use std::path::Path;

use gpu_homogenize::model::rules::{all, docs};

#[test]
fn rule_docs_are_generated_from_the_registry() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rules");
    let mut want: BTreeMap<String, String> = all()
        .into_iter()
        .map(|rule| (docs::file_name(rule), docs::page(rule)))
        .collect();
    want.insert("README.md".into(), docs::index());
    if std::env::var_os("GH_UPDATE_RULE_DOCS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !want.contains_key(&name) {
                std::fs::remove_file(&path).unwrap();
            }
        }
        for (name, text) in &want {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    let mut have = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        have.insert(name, std::fs::read_to_string(&path).unwrap());
    }
    let stale: Vec<&String> = want
        .iter()
        .filter(|(name, text)| have.get(*name) != Some(text))
        .map(|(name, _)| name)
        .chain(have.keys().filter(|name| !want.contains_key(*name)))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/rules/ is not what the registry says ({stale:?}): run `GH_UPDATE_RULE_DOCS=1 cargo test --test it rule_docs` and commit the pages"
    );
}

#[test]
fn a_page_shows_before_and_after_for_a_remapping_rule() {
    let rule = gpu_homogenize::model::rules::by_code("GH101").unwrap();
    let page = docs::page(rule);
    assert!(
        page.starts_with("# device-string-index (GH101)\n"),
        "{page}"
    );
    assert!(page.contains("```python\ntorch.device('cuda:1')\n```\n\nAfter the fix:\n\n```python\ntorch.device('cuda:0')\n```"), "{page}");
}
