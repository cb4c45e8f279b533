//! `init` on the mission fixture without its config: the proposal matches the seed's phases
//! within a few files, and `scan --config` accepts it.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::{copy_fixture, gh, run};

fn phases(text: &str) -> Vec<(String, BTreeSet<String>)> {
    let config: toml::Value = toml::from_str(text).unwrap();
    config["phase"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let files = p["files"].as_array().unwrap();
            (
                p["name"].as_str().unwrap().to_string(),
                files
                    .iter()
                    .map(|f| f.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn init_proposes_the_seed_phases_and_scan_accepts_them() {
    let tree = copy_fixture("superwhisper-v6");
    let seed = std::fs::read_to_string(tree.path().join("gpu-homogenize.toml")).unwrap();
    std::fs::remove_file(tree.path().join("gpu-homogenize.toml")).unwrap();

    let out = run(gh(tree.path()).arg("init"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(tree.path().join("gpu-homogenize.toml")).unwrap();
    // The default scope judges programs: `Orchestrator/fallback_manager.py` is a library its test
    // imports (`from Orchestrator.fallback_manager import …`, a namespace package) and it needs no
    // header of its own, so the core phase has one file less than the seed's every-file mission.
    assert!(
        text.contains("# 12 file(s): 11 library module(s), 1 entry-point script(s)\n"),
        "{text}"
    );
    assert!(text.contains("# 27 test file(s)\n"));
    let (proposed, seed) = (phases(&text), phases(&seed));
    assert_eq!(proposed.len(), 2);
    for ((name, files), (seed_name, seed_files)) in proposed.iter().zip(&seed) {
        assert_eq!(name, seed_name);
        let off = files.symmetric_difference(seed_files).count();
        assert!(off <= 3, "{name}: {off} files differ from the seed");
    }

    let out = run(gh(tree.path()).args([
        "scan",
        "--config",
        "gpu-homogenize.toml",
        "--format",
        "json",
    ]));
    assert_eq!(out.code, 1, "findings, not an error: {}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let in_core = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["phase"] == "Core modules")
        .count();
    assert_eq!(in_core, 12);

    let again = run(gh(tree.path()).arg("init"));
    assert_eq!(again.code, 2, "an existing config is never replaced");
    assert!(again.stderr.contains("--force"), "{}", again.stderr);
    let printed = run(gh(tree.path()).args(["init", "--stdout"]));
    assert_eq!(printed.code, 0);
    assert!(printed.stdout.contains("[[phase]]"));
    assert!(!Path::new(&tree.path().join(".gpu-homogenize/journal.jsonl")).exists());
}

#[test]
fn without_a_driver_init_leaves_the_cards_to_fill_in() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.py"),
        "import torch\nx = torch.zeros(1).cuda()\n",
    )
    .unwrap();
    let out = run(gh(dir.path()).args(["init", "--stdout"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("# No GPU driver here ("),
        "{}",
        out.stdout
    );
    // No card is proposed: every card line is a comment.
    let doc: toml::Table = out.stdout.parse().expect("the proposal is TOML");
    let policy = doc["policy"].as_table().unwrap();
    for key in ["visible_devices", "target", "forbidden"] {
        assert!(!policy.contains_key(key), "{key}: {}", out.stdout);
    }
}
