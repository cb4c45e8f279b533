//! The half-migrated tree (fixtures/half-migrated, see its CASES.md): what `fix` makes of a tree
//! that already went through a hand migration. Every file's change is snapshotted as a diff, so
//! a reviewer reads exactly what a maintainer would; hand-written configurations that are right
//! stay byte-identical, whatever their wording.

use crate::common::{copy_fixture, files_under, fixture, gh, run};
use gpu_homogenize::base::edit::unified_diff;
use gpu_homogenize::fs::source::decode;

const TREE: &str = "half-migrated";

/// Right as they stand, in other words than the template's: never touched.
const RIGHT_AS_WRITTEN: &[&str] = &[
    "scripts/gpu_template.py",
    "TTS/tts_xtts_handler.py",
    "TTS/tts_piper_onnx.py",
    "LLM/llm_llama_cpp.py",
    "utils/memory_report.py",
    "tests/test_gpu_echo.py",
    "tests/test_noqa_imports.py",
    "STT/mic_capture.py",
    "tests/test_device_validation.py",
];

#[test]
fn every_change_is_a_reviewed_diff() {
    let tree = copy_fixture(TREE);
    let out = run(gh(tree.path()).args(["fix", "--unsafe-fixes", "--gpu", "off", "--no-journal"]));
    assert!(
        out.code == 0 || out.code == 1,
        "{}{}",
        out.stdout,
        out.stderr
    );
    for rel in files_under(tree.path(), "py") {
        // As text, decoded as the file declares (a Latin-1 file is written back in Latin-1).
        let text = |p: std::path::PathBuf| decode(std::fs::read(p).unwrap()).unwrap().text;
        let (old, new) = (text(fixture(TREE).join(&rel)), text(tree.path().join(&rel)));
        let shown = if old == new {
            "(unchanged)\n".to_string()
        } else {
            unified_diff(&rel, &old, &new).replace('\r', "␍")
        };
        insta::assert_snapshot!(format!("half__{}", rel.replace('/', "__")), shown);
    }
}

#[test]
fn right_configurations_stay_byte_identical_and_a_second_fix_changes_nothing() {
    let tree = copy_fixture(TREE);
    run(gh(tree.path()).args(["fix", "--unsafe-fixes", "--gpu", "off", "--no-journal"]));
    for rel in RIGHT_AS_WRITTEN {
        assert_eq!(
            std::fs::read(tree.path().join(rel)).unwrap(),
            std::fs::read(fixture(TREE).join(rel)).unwrap(),
            "{rel} was right as written"
        );
    }
    let before: Vec<Vec<u8>> = files_under(tree.path(), "py")
        .iter()
        .map(|r| std::fs::read(tree.path().join(r)).unwrap())
        .collect();
    let second =
        run(gh(tree.path()).args(["fix", "--unsafe-fixes", "--gpu", "off", "--no-journal"]));
    assert!(second.stdout.contains("Fixed 0 files"), "{}", second.stdout);
    let after: Vec<Vec<u8>> = files_under(tree.path(), "py")
        .iter()
        .map(|r| std::fs::read(tree.path().join(r)).unwrap())
        .collect();
    assert!(before == after, "a second fix changed files");
}

#[test]
fn one_configuration_per_file_and_nothing_orphaned() {
    let tree = copy_fixture(TREE);
    run(gh(tree.path()).args(["fix", "--unsafe-fixes", "--gpu", "off", "--no-journal"]));
    for rel in files_under(tree.path(), "py") {
        let text = decode(std::fs::read(tree.path().join(&rel)).unwrap())
            .unwrap()
            .text;
        let module_level_masks = text
            .lines()
            .filter(|l| !l.starts_with([' ', '\t']))
            .filter(|l| {
                l.contains("CUDA_VISIBLE_DEVICES")
                    && (l.contains("] =") || l.contains("setdefault("))
            })
            .count();
        assert!(
            module_level_masks <= 1,
            "{rel}: {module_level_masks} masks\n{text}"
        );
        let banners = text.matches("# 🚨 CONFIGURATION CRITIQUE GPU").count();
        assert!(banners <= 1, "{rel}: the banner {banners} times\n{text}");
    }
}

#[test]
fn the_scan_after_fix_agrees_with_what_fix_ended_with() {
    let tree = copy_fixture(TREE);
    let fix = run(gh(tree.path()).args([
        "fix",
        "--unsafe-fixes",
        "--gpu",
        "off",
        "--no-journal",
        "--format",
        "json",
    ]));
    let scan = run(gh(tree.path()).args(["scan", "--format", "json"]));
    let status = |doc: &str| -> Vec<(String, String)> {
        let v: serde_json::Value = serde_json::from_str(doc).unwrap();
        let mut out: Vec<(String, String)> = v["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let s = f["status"].as_str().unwrap();
                let s = if s == "fixed" { "compliant" } else { s };
                (f["path"].as_str().unwrap().to_string(), s.to_string())
            })
            .collect();
        out.sort();
        out
    };
    assert_eq!(status(&fix.stdout), status(&scan.stdout));
    let codes: Vec<String> = {
        let v: serde_json::Value = serde_json::from_str(&scan.stdout).unwrap();
        v["files"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|f| {
                let path = f["path"].as_str().unwrap().to_string();
                f["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(move |g| {
                        format!(
                            "{path}: {} {}",
                            g["rule"].as_str().unwrap(),
                            g["severity"].as_str().unwrap()
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    insta::assert_snapshot!("half__scan_after_fix", codes.join("\n"));
}
