//! Rust sources through the same pipeline: the fixture workspace fixed, idempotent, the
//! async main and NVML cases reported and left alone, every rewrite still Rust.

mod common;

use common::{copy_fixture, files_under, fixture, gh, run};

const FIXTURE: &str = "rust-mission";

#[test]
fn scan_reports_every_rule_with_per_language_counts() {
    let tree = copy_fixture(FIXTURE);
    let out = run(gh(tree.path()).args(["scan", "--format", "json"]));
    assert_eq!(out.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let mut rules: Vec<String> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| {
            f["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["rule"].as_str().unwrap().to_string())
        })
        .collect();
    rules.sort();
    rules.dedup();
    assert_eq!(
        rules,
        ["GH501", "GH502", "GH503", "GH504", "GH511", "GH521"]
    );
    assert_eq!(doc["summary"]["by_language"]["rust"], 6);
    let text = run(gh(tree.path()).args(["scan"]));
    insta::assert_snapshot!("rust_scan_text", text.stdout);
}

#[test]
fn fix_is_complete_idempotent_and_leaves_review_items() {
    let tree = copy_fixture(FIXTURE);
    let root = tree.path();
    let first = run(gh(root).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert!(first.stdout.contains("5 fixed"), "{}", first.stdout);
    for rel in files_under(root, "rs") {
        let text = std::fs::read_to_string(root.join(&rel)).unwrap();
        let shown = text.replace("\r\n", "␍\n");
        let shown = if text.ends_with('\n') {
            shown
        } else {
            format!("{shown}<no final newline>")
        };
        insta::assert_snapshot!(format!("rust_fixed__{}", rel.replace('/', "__")), shown);
    }
    let second = run(gh(root).args(["fix", "--gpu", "off", "--no-journal"]));
    assert!(second.stdout.contains("Fixed 0 files"), "{}", second.stdout);
    let scan = run(gh(root).args(["scan"]));
    assert_eq!(scan.code, 0, "only review items remain: {}", scan.stdout);
    assert!(
        scan.stdout.contains("GH504 [review]"),
        "the async main is reported, not rewritten"
    );
    assert!(
        scan.stdout.contains("GH521 [review] device_by_index(1)"),
        "NVML indices are never rewritten"
    );
    let original = std::fs::read_to_string(fixture(FIXTURE).join("tch-bin/src/main.rs")).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("tch-bin/src/main.rs")).unwrap(),
        original
    );
}

#[test]
fn every_rewrite_parses_and_rustfmt_accepts_its_syntax() {
    let tree = copy_fixture(FIXTURE);
    run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    let rustfmt = std::process::Command::new("rustfmt")
        .arg("--version")
        .output();
    for rel in files_under(tree.path(), "rs") {
        let path = tree.path().join(&rel);
        let text = std::fs::read_to_string(&path).unwrap();
        gpu_homogenize::rust::parse(&text).unwrap_or_else(|e| panic!("{rel}: {e}"));
        if rustfmt.as_ref().is_ok_and(|o| o.status.success()) {
            let edition = gpu_homogenize::rust::edition_of(&path).to_string();
            let out = std::process::Command::new("rustfmt")
                .args(["--edition", &edition, "--emit", "stdout"])
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{rel}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn edition_2024_mains_get_an_unsafe_block_and_2021_mains_do_not() {
    let tree = copy_fixture(FIXTURE);
    run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    let candle = std::fs::read_to_string(tree.path().join("candle-bin/src/main.rs")).unwrap();
    assert!(
        candle.contains(
            "{\r\n    unsafe {\r\n        std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\r\n"
        ),
        "{candle}"
    );
    let cudarc = std::fs::read_to_string(tree.path().join("cudarc-bin/src/main.rs")).unwrap();
    assert!(cudarc.contains("{\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n    std::env::set_var(\"CUDA_DEVICE_ORDER\", \"PCI_BUS_ID\");\n"), "{cudarc}");
    assert!(
        !cudarc.contains("ancienne carte"),
        "the old write goes with its trailing comment"
    );
}

#[test]
fn aliases_suffixes_and_a_shebang_keep_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let src = "#!/usr/bin/env run-cargo-script\nuse std::env;\nuse candle_core::Device as Dev;\nfn main() {\n    env::set_var(\"CUDA_DEVICE_ORDER\", \"FASTEST_FIRST\");\n    let d = Dev::new_cuda(1usize);\n}\n";
    std::fs::write(dir.path().join("tool.rs"), src).unwrap();
    let out = run(gh(dir.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let fixed = std::fs::read_to_string(dir.path().join("tool.rs")).unwrap();
    assert!(
        fixed.starts_with("#!/usr/bin/env run-cargo-script\n// ====="),
        "{fixed}"
    );
    assert!(fixed.contains("let d = Dev::new_cuda(0usize);"), "{fixed}");
    assert!(!fixed.contains("FASTEST_FIRST"), "{fixed}");
}
