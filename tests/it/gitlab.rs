//! `--format gitlab`: the GitLab Code Quality report a job uploads as `artifacts: reports:
//! codequality:`. What a GitLab user relies on: the fields GitLab reads, paths from the
//! repository's top, one issue per finding with a fingerprint that stays the same from run to run
//! and when code above it moves (GitLab would call it fixed and new again), but differs for the
//! same finding twice in a file (GitLab keeps only the first issue of a fingerprint); a finding
//! left for review never as `info`; and the exit status of every other format.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::common::{copy_fixture, gh, run, tree, write};

const MISSION: &str = "superwhisper-v6";

fn issues(stdout: &str) -> Vec<Value> {
    let doc: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    doc.as_array().expect("a JSON array").clone()
}

/// Every issue has GitLab's fields, of GitLab's types, and no two share a fingerprint.
fn assert_well_formed(issues: &[Value]) {
    let mut seen = HashSet::new();
    for issue in issues {
        for key in ["description", "check_name", "fingerprint", "severity"] {
            assert!(issue[key].is_string(), "{key} in {issue}");
        }
        assert!(
            matches!(
                issue["severity"].as_str().unwrap(),
                "info" | "minor" | "major" | "critical" | "blocker"
            ),
            "{issue}"
        );
        let path = issue["location"]["path"].as_str().expect("a path");
        assert!(!path.starts_with('/') && !path.starts_with("./"), "{path}");
        assert!(issue["location"]["lines"]["begin"].as_u64().unwrap() >= 1);
        let fingerprint = issue["fingerprint"].as_str().unwrap();
        assert!(seen.insert(fingerprint.to_string()), "twice: {issue}");
    }
}

/// Fingerprint → (check, line) of each issue.
fn by_fingerprint(issues: &[Value]) -> BTreeMap<String, (String, u64)> {
    issues
        .iter()
        .map(|i| {
            (
                i["fingerprint"].as_str().unwrap().to_string(),
                (
                    i["check_name"].as_str().unwrap().to_string(),
                    i["location"]["lines"]["begin"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

#[test]
fn the_mission_is_one_issue_per_finding_with_the_scans_exit_status() {
    let tree = copy_fixture(MISSION);
    let out = run(gh(tree.path()).args(["scan", "--format", "gitlab"]));
    assert_eq!(out.code, 1, "findings exit 1 as in text; {}", out.stderr);
    assert_eq!(out.stderr, "");
    let report = issues(&out.stdout);
    assert_well_formed(&report);
    // The findings of the JSON output, one issue each, in the same order, the severity mapped.
    let json = run(gh(tree.path()).args(["scan", "--format", "json"]));
    let doc: Value = serde_json::from_str(&json.stdout).unwrap();
    let mut expected = Vec::new();
    for file in doc["files"].as_array().unwrap() {
        for f in file["findings"].as_array().unwrap() {
            let severity = match f["severity"].as_str().unwrap() {
                "violation" => "major",
                "review" => "minor",
                _ => "info",
            };
            expected.push((
                file["path"].clone(),
                f["line"].clone(),
                f["rule"].clone(),
                severity,
            ));
        }
    }
    let got: Vec<_> = report
        .iter()
        .map(|i| {
            (
                i["location"]["path"].clone(),
                i["location"]["lines"]["begin"].clone(),
                i["check_name"].clone(),
                i["severity"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(report.len(), 99);
    insta::assert_snapshot!("gitlab_mission", out.stdout);
    // `--exit-zero` changes the status, not the report.
    let zero = run(gh(tree.path()).args(["scan", "--format", "gitlab", "--exit-zero"]));
    assert_eq!((zero.code, &zero.stdout), (0, &out.stdout));
}

/// The same finding on two identical lines, and a finding about the whole file; then code
/// inserted above them. Run twice before (the second from the cache) and once after.
#[test]
fn fingerprints_are_unique_and_survive_code_inserted_above() {
    let dir = tree();
    let before = "import torch\n\na = torch.zeros(1).cuda(1)\na = torch.zeros(1).cuda(1)\nb = torch.device(\"cuda:1\")\n";
    write(dir.path(), "app.py", before);
    let scan = |root: &Path| {
        let out = run(gh(root).args(["scan", "--format", "gitlab"]));
        assert_eq!(out.code, 1, "{}", out.stderr);
        out.stdout
    };
    let first = scan(dir.path());
    let report = issues(&first);
    assert_well_formed(&report);
    let lines: Vec<(String, u64)> = by_fingerprint(&report).into_values().collect();
    let mut lines_sorted = lines.clone();
    lines_sorted.sort();
    assert_eq!(
        lines_sorted,
        [
            ("GH001".to_string(), 1),
            ("GH101".to_string(), 5),
            ("GH102".to_string(), 3),
            ("GH102".to_string(), 4),
        ],
        "the repeated finding is two issues: {first}"
    );
    assert!(dir.path().join(".gpu-homogenize/cache").is_dir());
    assert_eq!(
        scan(dir.path()),
        first,
        "a run from the cache says the same"
    );

    let inserted = "\n\ndef unrelated():\n    return 2\n";
    write(
        dir.path(),
        "app.py",
        &before.replacen("\n\n", &format!("\n{inserted}\n"), 1),
    );
    let after = issues(&scan(dir.path()));
    assert_well_formed(&after);
    let (was, now) = (by_fingerprint(&report), by_fingerprint(&after));
    assert_eq!(
        was.keys().collect::<Vec<_>>(),
        now.keys().collect::<Vec<_>>(),
        "the same issues, not fixed and new ones"
    );
    for (fingerprint, (check, line)) in &was {
        let shift = if *line == 1 { 0 } else { 4 };
        assert_eq!(
            now[fingerprint],
            (check.clone(), line + shift),
            "{fingerprint}"
        );
    }

    // The finding's own line changed: a new issue (and the old one fixed).
    write(
        dir.path(),
        "app.py",
        &before.replace(
            "b = torch.device(\"cuda:1\")",
            "c = torch.device(\"cuda:1\")",
        ),
    );
    let changed = by_fingerprint(&issues(&scan(dir.path())));
    assert_eq!(changed.keys().filter(|k| was.contains_key(*k)).count(), 3);
}

/// The exit status is the text output's in every case; what fails the run is never `info`.
#[test]
fn each_verdict_keeps_its_exit_status_and_its_weight() {
    // Nothing to report: an empty report, exit 0.
    let clean = tree();
    write(clean.path(), "cpu.py", "import math\nprint(math.pi)\n");
    let out = run(gh(clean.path()).args(["scan", "--format", "gitlab"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "[]\n"));

    // A file the tool cannot decide on (needs_review): exit 1, and `minor`, not `info`.
    let review = tree();
    write(
        review.path(),
        "train.py",
        "import os\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\nos.environ[\"CUDA_DEVICE_ORDER\"] = \"PCI_BUS_ID\"\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"max_split_size_mb:1024\"\nimport json\nimport torch\n\nwith open(\"c.json\") as f:\n    opts = json.load(f)\ntorch.cuda.set_device(opts.get(\"gpu\"))\n",
    );
    let text = run(gh(review.path()).args(["scan"]));
    assert!(text.stdout.contains("1 needing review"), "{}", text.stdout);
    let out = run(gh(review.path()).args(["scan", "--format", "gitlab"]));
    assert_eq!(out.code, text.code);
    assert_eq!(out.code, 1);
    let report = issues(&out.stdout);
    assert_eq!(report.len(), 1, "{}", out.stdout);
    assert_eq!(report[0]["check_name"], "GH111");
    assert_eq!(report[0]["severity"], "minor");
    assert_eq!(report[0]["location"]["lines"]["begin"], 10);
    let description = report[0]["description"].as_str().unwrap();
    assert!(description.starts_with("GH111 [review] "), "{description}");

    // A file it cannot parse: exit 2, a `critical` issue at the syntax error's line.
    let broken = tree();
    write(broken.path(), "broken.py", "import torch\ndef f(:\n");
    let out = run(gh(broken.path()).args(["scan", "--format", "gitlab"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    let report = issues(&out.stdout);
    assert_well_formed(&report);
    assert_eq!(report.len(), 1, "{}", out.stdout);
    assert_eq!(report[0]["check_name"], "GH901");
    assert_eq!(report[0]["severity"], "critical");
    assert_eq!(report[0]["location"]["path"], "broken.py");
    assert_eq!(report[0]["location"]["lines"]["begin"], 2);
    let description = report[0]["description"].as_str().unwrap();
    assert!(
        description.starts_with(
            "GH901 file not processed, nothing in it was checked: syntax error at 2:7"
        ),
        "{description}"
    );
    // `--statistics` prints text: refused with the machine format, as with the others.
    let out = run(gh(broken.path()).args(["scan", "--format", "gitlab", "--statistics"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("cannot be combined with `--format gitlab`"),
        "{}",
        out.stderr
    );
}

/// `fix --dry-run` reports the tree as it is; `fix` what it left, with the fingerprints the next
/// scan gives (the header it inserted moved them down).
#[test]
fn fix_reports_what_is_left_in_the_tree() {
    let tree = copy_fixture(MISSION);
    let root = tree.path();
    let scan = run(gh(root).args(["scan", "--format", "gitlab"]));
    let dry = run(gh(root).args(["fix", "--dry-run", "--format", "gitlab"]));
    assert_eq!(dry.code, 1);
    assert_eq!(dry.stdout, scan.stdout);

    let fixed = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--format", "gitlab"]));
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    let left = issues(&fixed.stdout);
    assert_well_formed(&left);
    assert_eq!(left.len(), 10);
    assert!(left.iter().all(|i| i["severity"] == "info"), "{left:?}");
    let next = run(gh(root).args(["scan", "--format", "gitlab"]));
    assert_eq!(next.code, 0);
    let next = issues(&next.stdout);
    let fingerprints = |report: &[Value]| -> Vec<Value> {
        let mut all: Vec<Value> = report.iter().map(|i| i["fingerprint"].clone()).collect();
        all.sort_by_key(|v| v.to_string());
        all
    };
    assert_eq!(fingerprints(&left), fingerprints(&next));
}

/// Shards' GitLab reports are not merged: each job uploads its own, and the merge says so.
#[test]
fn report_merge_refuses_a_gitlab_report_and_says_what_to_do() {
    let tree = copy_fixture(MISSION);
    let shard = run(gh(tree.path()).args(["scan", "--shard", "1/2", "--format", "gitlab"]));
    assert_eq!(shard.code, 1, "{}", shard.stderr);
    assert_well_formed(&issues(&shard.stdout));
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("1.json"), &shard.stdout).unwrap();
    let merged = run(gh(out.path()).args(["report", "--merge", "1.json"]));
    assert_eq!(merged.code, 2);
    assert!(
        merged
            .stderr
            .contains("1.json: a GitLab Code Quality report, which is not merged: upload each shard's as its job's `codequality` report"),
        "{}",
        merged.stderr
    );
}
