//! One count everywhere (issue 34): `scan`, `fix --dry-run` and `fix`, in text and in JSON,
//! say the same numbers (violations, fixable, fixed, left for review, information, errors);
//! "would fix N files" and "Fixed N files" are the files that change on disk; `--statistics`
//! counts what the summary counts, review and information in rows of their own.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{gh, run, tree, write};

/// A tree where the counts used to disagree: a file with several findings (evaluate.py), a fix
/// that leaves a finding for review (launch.py: the `--gpus` option then selects no card), a
/// file whose only other finding is information (spread.py), and a plan the CPU check refuses
/// (worker.py, a library in a phase).
fn counts_tree() -> tempfile::TempDir {
    let dir = tree();
    let root = dir.path();
    write(
        root,
        "gpu-homogenize.toml",
        "unsafe-fixes = true\n\n[[phase]]\nname = \"Core modules\"\nfiles = [\"main.py\", \"worker.py\"]\n",
    );
    write(
        root,
        "worker.py",
        "import os\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\nimport torch\n\ndef work():\n    return torch.zeros(1).to(\"cuda:1\")\n",
    );
    write(
        root,
        "main.py",
        "import torch\nfrom worker import work\n\nif __name__ == \"__main__\":\n    work()\n",
    );
    write(
        root,
        "launch.py",
        "import argparse\nimport os\n\nimport torch\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"-g\", \"--gpus\", default=\"0\")\n    args = parser.parse_args()\n    os.environ[\"CUDA_VISIBLE_DEVICES\"] = args.gpus\n    print(torch.cuda.device_count())\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    write(
        root,
        "evaluate.py",
        "import torch\n\na = torch.zeros(1).to(\"cuda:1\")\nb = torch.ones(1, device=\"cuda:1\")\n\nif __name__ == \"__main__\":\n    print(a, b)\n",
    );
    write(
        root,
        "spread.py",
        "import torch\n\ndef shards(model):\n    for i in range(torch.cuda.device_count()):\n        model.to(f\"cuda:{i}\")\n\nshards(torch.nn.Linear(1, 1))\n",
    );
    dir
}

fn sources(root: &Path) -> BTreeMap<String, String> {
    [
        "worker.py",
        "main.py",
        "launch.py",
        "evaluate.py",
        "spread.py",
    ]
    .iter()
    .map(|f| {
        (
            f.to_string(),
            std::fs::read_to_string(root.join(f)).unwrap(),
        )
    })
    .collect()
}

fn json(root: &Path, args: &[&str]) -> serde_json::Value {
    let out = run(gh(root).args(args).args(["--format", "json"]));
    assert_ne!(out.code, 2, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The counting words of a summary line, in the one vocabulary every command prints.
fn tail(s: &serde_json::Value) -> String {
    let mut out = format!("{} left for review", s["review"]);
    if s["info"].as_u64().unwrap_or(0) > 0 {
        out += &format!(", {} for information", s["info"]);
    }
    out
}

#[test]
fn scan_dry_run_and_fix_say_the_same_numbers_in_text_and_json() {
    let dir = counts_tree();
    let root = dir.path();
    let before = sources(root);

    let scan = json(root, &["scan"])["summary"].clone();
    let dry = json(root, &["fix", "--dry-run"])["summary"].clone();
    let (violations, fixable) = (&scan["violations"], &scan["fixable"]);
    assert_eq!(*violations, 11, "{scan}");
    assert_eq!(*fixable, 8, "{scan}");
    assert_eq!(scan["info"], 1, "{scan}");
    assert_eq!(dry["violations"], *violations);
    assert_eq!(
        dry["fixed"], *fixable,
        "what scan calls fixable, the dry run fixes"
    );

    // Text and JSON of the same command: the same numbers.
    let scan_text = run(gh(root).args(["scan"]));
    assert_eq!(scan_text.code, 1);
    let found = format!(
        "Found {violations} violations in 5 files ({fixable} fixable with `gpu-homogenize fix`), {}.\n",
        tail(&scan)
    );
    assert!(scan_text.stdout.contains(&found), "{}", scan_text.stdout);
    let dry_text = run(gh(root).args(["fix", "--dry-run"]));
    assert_eq!(dry_text.code, 1);
    assert_eq!(sources(root), before, "a dry run writes nothing");

    // Fix the same tree twice over (text, JSON): each time the files that change on disk are
    // the dry run's "would fix".
    let copy = tree();
    crate::common::copy_dir(root, copy.path());
    let fix_text = run(gh(root).args(["fix", "--gpu", "off", "--no-journal"]));
    let fix = json(copy.path(), &["fix", "--gpu", "off", "--no-journal"])["summary"].clone();
    let changed =
        |now: BTreeMap<String, String>| now.iter().filter(|(f, text)| before[*f] != **text).count();
    let changed_text = changed(sources(root));
    assert_eq!(changed_text, changed(sources(copy.path())));
    assert_eq!(
        changed_text, 4,
        "evaluate, launch, main, spread; worker is refused"
    );
    assert_eq!(fix["files_fixed"], changed_text);
    assert_eq!(dry["files_fixed"], changed_text);
    assert_eq!(fix["fixed"], *fixable);
    assert_eq!(fix["violations"], *violations);
    assert_eq!(
        fix["review"], dry["review"],
        "the dry run counts what fix leaves"
    );
    assert_eq!(fix["info"], dry["info"]);
    let would = format!(
        "Would fix {changed_text} files ({fixable} of {violations} violations), {}.\n",
        tail(&dry)
    );
    assert!(dry_text.stdout.contains(&would), "{}", dry_text.stdout);
    let fixed = format!(
        "Fixed {changed_text} files ({fixable} of {violations} violations), {}.\n",
        tail(&fix)
    );
    assert!(fix_text.stdout.contains(&fixed), "{}", fix_text.stdout);
    assert_eq!(fix_text.code, 1, "worker.py is left, with its reason");
}

/// `--statistics`: one row per rule and severity, review and information apart; each group
/// sums to the summary's count of it.
#[test]
fn statistics_count_what_the_summary_counts() {
    let dir = counts_tree();
    let root = dir.path();
    let summary = json(root, &["scan"])["summary"].clone();
    let out = run(gh(root).args(["scan", "--statistics"]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    let mut sums: BTreeMap<&str, u64> = BTreeMap::new();
    for row in out.stdout.lines().filter(|l| l.contains('\t')) {
        let count: u64 = row.split('\t').next().unwrap().trim().parse().unwrap();
        let group = if row.contains("[review]") {
            "review"
        } else if row.contains("[info]") {
            "info"
        } else {
            "violations"
        };
        *sums.entry(group).or_default() += count;
    }
    for group in ["violations", "review", "info"] {
        assert_eq!(
            sums.get(group).copied().unwrap_or(0),
            summary[group].as_u64().unwrap(),
            "{group}: {}",
            out.stdout
        );
    }
    assert!(
        out.stdout.contains(&format!(
            "Found 11 violations in 5 files (8 fixable with `gpu-homogenize fix`), {}.\n",
            tail(&summary)
        )),
        "{}",
        out.stdout
    );
}
