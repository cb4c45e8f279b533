//! One fix plan for every command (issue 34): what `scan` calls fixable (`[*]`, the count,
//! `--show-fixes`) is what `fix --dry-run` would do and what `fix` does; a plan the CPU check
//! refuses is a violation left with its reason (exit 1), never an error (exit 2).

use std::path::Path;

use crate::common::{gh, run, tree, write};

/// A library module and the program that imports it, both in a phase: the library's header
/// fix leaves the import-time writes GH013 reports, so the CPU check refuses it; the
/// importer's fix is fine.
const WORKER: &str = "import os\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\nimport torch\n\ndef work():\n    return torch.zeros(1).to(\"cuda:1\")\n";
const MAIN: &str =
    "import torch\nfrom worker import work\n\nif __name__ == \"__main__\":\n    work()\n";

fn refused_tree() -> tempfile::TempDir {
    let dir = tree();
    write(
        dir.path(),
        "gpu-homogenize.toml",
        "unsafe-fixes = true\n\n[[phase]]\nname = \"Core modules\"\nfiles = [\"main.py\", \"worker.py\"]\n",
    );
    write(dir.path(), "worker.py", WORKER);
    write(dir.path(), "main.py", MAIN);
    dir
}

fn summary(root: &Path, args: &[&str]) -> serde_json::Value {
    let out = run(gh(root).args(args).args(["--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    doc["summary"].clone()
}

#[test]
fn a_refused_plan_is_not_fixable_in_scan_dry_run_or_fix() {
    let dir = refused_tree();
    let root = dir.path();

    let scan = run(gh(root).args(["scan"]));
    assert_eq!(scan.code, 1, "{}{}", scan.stdout, scan.stderr);
    insta::assert_snapshot!("refused_plan_scan", scan.stdout);
    assert_eq!(summary(root, &["scan"])["fixable"], 1);
    let shown = run(gh(root).args(["scan", "--show-fixes"]));
    assert!(
        shown
            .stdout
            .contains("Fixable with `gpu-homogenize fix`:\n- main.py:\n    1 × GH001"),
        "{}",
        shown.stdout
    );
    assert!(!shown.stdout.contains("- worker.py:"), "{}", shown.stdout);

    let dry = run(gh(root).args(["fix", "--dry-run"]));
    assert_eq!(dry.code, 1, "{}{}", dry.stdout, dry.stderr);
    assert!(
        dry.stdout
            .contains("Would fix 1 file (1 of 4 violations), 0 left for review."),
        "{}",
        dry.stdout
    );
    assert_eq!(dry.stderr, "");
    assert_eq!(summary(root, &["fix", "--dry-run"])["fixed"], 1);

    let fix = run(gh(root).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(fix.code, 1, "{}{}", fix.stdout, fix.stderr);
    assert_eq!(fix.stderr, "", "a refused plan is not an error");
    insta::assert_snapshot!("refused_plan_fix", fix.stdout);
    // The phase line counts every file of the phase: the one left non-compliant too.
    assert!(
        fix.stdout
            .contains("Core modules: 1/2 compliant (50%), 1 non-compliant\n"),
        "{}",
        fix.stdout
    );
    assert_eq!(
        std::fs::read_to_string(root.join("worker.py")).unwrap(),
        WORKER
    );
    assert_ne!(std::fs::read_to_string(root.join("main.py")).unwrap(), MAIN);

    // Every run after says the same: the refused file stays, with its reason; exit 1.
    let again = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--format", "json"]));
    assert_eq!(again.code, 1, "{}", again.stderr);
    let doc: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(doc["summary"]["errors"], 0);
    assert_eq!(doc["summary"]["fixable"], 0);
    let worker = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "worker.py")
        .unwrap();
    assert_eq!(worker["status"], "non_compliant");
    assert!(
        worker["reason"]
            .as_str()
            .unwrap()
            .starts_with("fix refused by the CPU check: GH013 still present"),
        "{worker}"
    );
}
