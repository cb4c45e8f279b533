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
    // Under the proposed scope (programs), a library both run and imported that sets the env at
    // import cannot carry a header in a phase (GH013 after the rewrite): left out, and said. So
    // is `LUXA_TTS/tts_handler_coqui.py`, a module that only defines (a class, `DEVICE =
    // "cuda:1"`) and that no program of the tree imports: no script, a library (GH107).
    assert!(
        text.contains("# 9 file(s): 8 library module(s), 1 entry-point script(s)\n"),
        "{text}"
    );
    for left in [
        "STT/stt_manager_robust.py",
        "utils/gpu_manager.py",
        "LUXA_TTS/tts_handler_coqui.py",
    ] {
        assert!(
            out.stderr.contains(&format!("{left}: left out of the phases: in a phase `fix` cannot rewrite it (GH013 still present after the rewrite")),
            "{}",
            out.stderr
        );
    }
    assert!(text.contains("# 27 test file(s)\n"));
    let (proposed, seed) = (phases(&text), phases(&seed));
    assert_eq!(proposed.len(), 2);
    for ((name, files), (seed_name, seed_files)) in proposed.iter().zip(&seed) {
        assert_eq!(name, seed_name);
        // Each file apart from the seed is one named above: the library its test imports and
        // the three left out.
        let mut off: Vec<&String> = files.symmetric_difference(seed_files).collect();
        off.sort();
        let expected: &[&str] = if name == "Core modules" {
            &[
                "LUXA_TTS/tts_handler_coqui.py",
                "Orchestrator/fallback_manager.py",
                "STT/stt_manager_robust.py",
                "utils/gpu_manager.py",
            ]
        } else {
            &[]
        };
        assert_eq!(off, expected, "{name}: the files that differ from the seed");
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
    assert_eq!(in_core, 9);

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

/// A library module that writes a GPU variable at import (issue 34): in a phase `fix` cannot
/// rewrite it (its header would be more import-time writes, GH013), so `init` leaves it out
/// of the phases and says why;
/// `fix` under the proposal (`init --unsafe-fixes`, then `fix --unsafe-fixes`) then refuses no plan, and names what is left.
#[test]
fn init_proposes_phases_under_which_fix_refuses_nothing() {
    let dir = crate::common::tree();
    let root = dir.path();
    crate::common::write(
        root,
        "worker.py",
        "import os\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\nimport torch\n\ndef work():\n    return torch.zeros(1).to(\"cuda:1\")\n",
    );
    crate::common::write(
        root,
        "main.py",
        "import torch\nfrom worker import work\n\nif __name__ == \"__main__\":\n    work()\n",
    );
    let init = run(gh(root).args(["init", "--unsafe-fixes"]));
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert!(
        init.stderr
            .contains("worker.py: left out of the phases: in a phase `fix` cannot rewrite it (GH013 still present after the rewrite)"),
        "{}",
        init.stderr
    );
    let text = std::fs::read_to_string(root.join("gpu-homogenize.toml")).unwrap();
    assert!(
        !phases(&text).iter().any(|(_, f)| f.contains("worker.py")),
        "{text}"
    );

    let fix = run(gh(root).args([
        "fix",
        "--unsafe-fixes",
        "--gpu",
        "off",
        "--no-journal",
        "--format",
        "json",
    ]));
    assert_ne!(fix.code, 2, "{}", fix.stderr);
    let doc: serde_json::Value = serde_json::from_str(&fix.stdout).unwrap();
    for file in doc["files"].as_array().unwrap() {
        assert!(file.get("reason").is_none(), "no plan refused: {file}");
        if file["status"] != "compliant" && file["status"] != "fixed" {
            // What is left is named: the rule that says what to do by hand.
            let rules: Vec<&str> = file["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["fixed"] == false)
                .map(|f| f["rule"].as_str().unwrap())
                .collect();
            assert_eq!(rules, ["GH205"], "{file}");
        }
    }
}
