//! `report --merge`: the jobs of a CI matrix each scan one shard (`--shard I/N`); the merge of
//! their JSON or SARIF is byte for byte what one unsharded run prints, with its exit status, and
//! anything that would merge into a lie is refused with the file named.

use std::path::{Path, PathBuf};

use crate::common::{self, copy_dir, fixture, gh, run};

/// A monorepo (the config in `svc/`) whose files fall in all three shards: findings, a syntax
/// error, a file with no GPU code, and `svc/a-b.py`, which the walk puts after `svc/a/…`
/// though a string sort would not.
fn tree() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let svc = repo.path().join("svc");
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    for dir in ["a", "b/c"] {
        std::fs::create_dir_all(svc.join(dir)).unwrap();
    }
    std::fs::write(
        svc.join("gpu-homogenize.toml"),
        "[policy]\nscope = \"every-gpu-file\"\n",
    )
    .unwrap();
    let bare = "import torch\nx = torch.zeros(1).cuda(1)\n";
    let files = [
        ("a/m.py", bare),
        ("a/broken.py", "import torch\ndef f(:\n"),
        ("a-b.py", bare),
        ("b/plain.py", "import os\nprint(1)\n"),
        (
            "b/c/d.py",
            "import torch\ndevice = torch.device(\"cuda:1\")\n",
        ),
        ("b/ok.py", "import torch\nx = torch.zeros(1).cuda()\n"),
        (
            "b/env.py",
            "import torch\nimport os\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(svc.join(name), text).unwrap();
    }
    for i in 1..=6 {
        let text = format!("import torch\nx = torch.zeros({i}).cuda(1)\n");
        std::fs::write(svc.join(format!("b/c/f{i}.py")), text).unwrap();
    }
    repo
}

/// A command's output, written where `report --merge` reads it; its exit status.
fn save(cwd: &Path, args: &[&str], out: &Path) -> i32 {
    let result = run(gh(cwd).args(args));
    std::fs::write(out, &result.stdout).unwrap();
    result.code
}

/// `command` (scan, or check without GPU or journal) of `svc` in `format`, whole and in three
/// shards: the whole run's output and status, and the shards' files.
fn whole_and_shards(
    repo: &Path,
    out: &Path,
    command: &str,
    format: &str,
) -> (String, i32, Vec<PathBuf>) {
    let mut base = vec![command, "--output-format", format];
    if command == "check" {
        base.extend(["--gpu", "off", "--no-journal"]);
    }
    let whole = run(gh(repo).args(&base).arg("svc"));
    let shards = ["1/3", "2/3", "3/3"]
        .iter()
        .enumerate()
        .map(|(i, shard)| {
            let path = out.join(format!("{command}-{}.{format}", i + 1));
            let mut args = base.clone();
            args.extend(["--shard", shard, "svc"]);
            save(repo, &args, &path);
            path
        })
        .collect();
    (whole.stdout, whole.code, shards)
}

fn merge(cwd: &Path, files: &[PathBuf], extra: &[&str]) -> common::Run {
    run(gh(cwd).args(["report", "--merge"]).args(files).args(extra))
}

fn redact(text: &str, repo: &Path) -> String {
    crate::common::redact_path(text, repo, "[REPO]").replace(env!("CARGO_PKG_VERSION"), "[VERSION]")
}

/// SARIF without its rule catalogue (the same in every run); JSON as it is.
fn without_rules(text: &str) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(text).unwrap();
    match doc
        .pointer_mut("/runs/0/tool/driver")
        .and_then(serde_json::Value::as_object_mut)
    {
        Some(driver) => {
            driver.remove("rules");
            serde_json::to_string_pretty(&doc).unwrap()
        }
        None => text.to_string(),
    }
}

#[test]
fn the_merge_of_three_shards_is_the_unsharded_output() {
    let repo = tree();
    let out = tempfile::tempdir().unwrap();
    for command in ["scan", "check"] {
        for format in ["json", "sarif"] {
            let (whole, code, shards) = whole_and_shards(repo.path(), out.path(), command, format);
            // Each shard says which it is; each holds part of the files.
            for (i, shard) in shards.iter().enumerate() {
                let doc: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(shard).unwrap()).unwrap();
                let said = match format {
                    "json" => &doc["shard"],
                    _ => &doc["runs"][0]["properties"]["shard"],
                };
                assert_eq!(
                    (&said["index"], &said["count"]),
                    (&(i + 1).into(), &3.into())
                );
            }
            let merged = merge(repo.path(), &shards, &[]);
            assert_eq!(merged.stderr, "", "{command} {format}");
            assert_eq!(merged.stdout, whole, "{command} {format}");
            assert_eq!((merged.code, code), (2, 2), "{command} {format}");
            if command == "scan" {
                insta::assert_snapshot!(
                    format!("merged_{format}"),
                    redact(&without_rules(&merged.stdout), repo.path())
                );
            }
        }
    }
}

/// The exit status is the unsharded run's: 1 for findings alone, 0 for a clean tree (a shard
/// with no file at all included), and `--exit-zero` as scan has it.
#[test]
fn the_merge_exits_as_the_unsharded_run() {
    let repo = tree();
    let svc = repo.path().join("svc");
    let out = tempfile::tempdir().unwrap();
    std::fs::remove_file(svc.join("a/broken.py")).unwrap();
    for format in ["json", "sarif"] {
        let (whole, code, shards) = whole_and_shards(repo.path(), out.path(), "scan", format);
        let merged = merge(repo.path(), &shards, &[]);
        assert_eq!((merged.code, code), (1, 1), "{format}");
        assert_eq!(merged.stdout, whole, "{format}");
        let zero = merge(repo.path(), &shards, &["--exit-zero"]);
        assert_eq!(zero.code, 0, "{format}");
    }
    for dir in ["a", "b"] {
        std::fs::remove_dir_all(svc.join(dir)).unwrap();
    }
    std::fs::remove_file(svc.join("a-b.py")).unwrap();
    std::fs::write(svc.join("plain.py"), "print(1)\n").unwrap();
    for format in ["json", "sarif"] {
        let (whole, code, shards) = whole_and_shards(repo.path(), out.path(), "scan", format);
        let merged = merge(repo.path(), &shards, &[]);
        assert_eq!((merged.code, code), (0, 0), "{format}");
        assert_eq!(merged.stdout, whole, "{format}");
    }
}

/// On a real tree of the mission (dozens of files in nested packages), the bytes still agree.
#[test]
fn the_merge_of_a_real_tree_is_its_unsharded_output() {
    let out = tempfile::tempdir().unwrap();
    let repo = out.path();
    copy_dir(&fixture("superwhisper-v6"), &repo.join("svc"));
    std::fs::create_dir(repo.join(".git")).unwrap();
    let shards_dir = tempfile::tempdir().unwrap();
    for format in ["json", "sarif"] {
        let (whole, code, shards) = whole_and_shards(repo, shards_dir.path(), "scan", format);
        let merged = merge(repo, &shards, &[]);
        assert_eq!(merged.stdout, whole, "{format}");
        assert_eq!(merged.code, code, "{format}");
    }
}

/// What cannot be merged truthfully, each refused with exit 2 and a message naming the file.
#[test]
fn what_cannot_be_merged_is_refused_naming_the_file() {
    let repo = tree();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path();
    let (_, _, json) = whole_and_shards(repo.path(), dir, "scan", "json");
    let (_, _, sarif) = whole_and_shards(repo.path(), dir, "scan", "sarif");
    let (_, _, check) = whole_and_shards(repo.path(), dir, "check", "json");
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).unwrap();
        dir.join(name)
    };
    let read = |path: &PathBuf| std::fs::read_to_string(path).unwrap();
    // Cut inside the policy, past the paths (whose length is the platform's and the temp dir's).
    let shard = read(&json[1]);
    let torn = write(
        "torn.json",
        &shard[..shard.find("\"policy\"").unwrap() + 60],
    );
    let old = write(
        "old.json",
        &read(&json[1]).replacen(
            &format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION")),
            "\"version\": \"0.0.1\"",
            1,
        ),
    );
    let whole = dir.join("whole.json");
    save(
        repo.path(),
        &["scan", "--output-format", "json", "svc"],
        &whole,
    );
    let halves = dir.join("half-2.json");
    save(
        repo.path(),
        &["scan", "--output-format", "json", "--shard", "2/2", "svc"],
        &halves,
    );
    let selected = dir.join("selected-2.json");
    save(
        repo.path(),
        &[
            "scan",
            "--output-format",
            "json",
            "--shard",
            "2/3",
            "--select",
            "GH0",
            "svc",
        ],
        &selected,
    );
    std::fs::write(dir.join("other.toml"), "[policy]\nscope = \"programs\"\n").unwrap();
    let policy = dir.join("policy-2.json");
    save(
        repo.path(),
        &[
            "scan",
            "--output-format",
            "json",
            "--shard",
            "2/3",
            "--config",
            &dir.join("other.toml").display().to_string(),
            "svc",
        ],
        &policy,
    );
    let elsewhere = tree();
    let other_tree = dir.join("elsewhere-2.json");
    save(
        elsewhere.path(),
        &["scan", "--output-format", "json", "--shard", "2/3", "svc"],
        &other_tree,
    );
    // Another tree of the same repository: SARIF names only the repository.
    let svc2 = repo.path().join("svc2");
    std::fs::create_dir(&svc2).unwrap();
    std::fs::write(svc2.join("gpu-homogenize.toml"), "[policy]\n").unwrap();
    std::fs::write(svc2.join("m.py"), "import torch\n").unwrap();
    let sibling = dir.join("svc2-2.sarif");
    save(
        repo.path(),
        &["scan", "--output-format", "sarif", "--shard", "2/3", "svc2"],
        &sibling,
    );
    let cases: Vec<(&str, Vec<&PathBuf>, &[&str])> = vec![
        ("torn", vec![&json[0], &torn, &json[2]], &[]),
        ("mixed formats", vec![&json[0], &sarif[1], &json[2]], &[]),
        ("another version", vec![&json[0], &old, &json[2]], &[]),
        ("another command", vec![&json[0], &check[1], &json[2]], &[]),
        ("another tree", vec![&json[0], &other_tree, &json[2]], &[]),
        (
            "another tree of the repository",
            vec![&sarif[0], &sibling, &sarif[2]],
            &[],
        ),
        ("another policy", vec![&json[0], &policy, &json[2]], &[]),
        (
            "another rule selection",
            vec![&json[0], &selected, &json[2]],
            &[],
        ),
        ("another split", vec![&json[0], &halves, &json[2]], &[]),
        ("a shard missing", vec![&json[0], &json[2]], &[]),
        (
            "a shard twice",
            vec![&json[0], &json[1], &json[1], &json[2]],
            &[],
        ),
        ("not a shard", vec![&json[0], &whole], &[]),
        ("md asked", json.iter().collect(), &["--format", "md"]),
        (
            "json asked of SARIF",
            sarif.iter().collect(),
            &["--format", "json"],
        ),
    ];
    let mut seen = String::new();
    for (case, files, extra) in cases {
        let files: Vec<PathBuf> = files.into_iter().cloned().collect();
        let refused = merge(dir, &files, extra);
        assert_eq!((refused.code, refused.stdout.as_str()), (2, ""), "{case}");
        let stderr = redact(&refused.stderr, repo.path())
            .replace(&elsewhere.path().display().to_string(), "[OTHER]")
            .replace(&dir.display().to_string(), "[OUT]");
        seen.push_str(&format!("{case}:\n{stderr}"));
    }
    let alone = run(gh(dir).args(["report", "--format", "sarif"]));
    assert_eq!(alone.code, 2);
    seen.push_str(&format!("sarif without --merge:\n{}", alone.stderr));
    insta::assert_snapshot!("refusals", common::unix_paths(&seen));
}
