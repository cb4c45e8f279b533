//! The content cache never changes a verdict: the same trees through `scan`, `check` and
//! `fix --dry-run` with and without it (cold, warm, after touching and editing files, an
//! imported module among them), a torn cache, two runs at once, `--no-cache`, `cache clean`.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::common::mutants::{mutate, sources, Rng};
use crate::common::{self, copy_fixture, gh, run};

const CACHE: &str = ".gpu-homogenize/cache";

/// An mtime well before any run: a file whose mtime is close to the run's start is never
/// trusted by its metadata alone, and these tests want the metadata path taken.
fn age(root: &Path) {
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    for rel in common::files_under(root, "py")
        .into_iter()
        .chain(common::files_under(root, "rs"))
    {
        let file = std::fs::File::options()
            .append(true)
            .open(root.join(rel))
            .unwrap();
        file.set_modified(old).unwrap();
    }
}

/// Exit status and stdout (the root's path written `<root>`) of the command, with `--no-cache` when `cached` is false.
fn output(root: &Path, args: &[&str], cached: bool) -> (i32, String) {
    let mut cmd = gh(root);
    cmd.args(args);
    if !cached {
        cmd.arg("--no-cache");
    }
    let out = run(&mut cmd);
    (
        out.code,
        crate::common::redact_path(&out.stdout, root, "<root>"),
    )
}

const COMMANDS: &[&[&str]] = &[
    &["scan", "--format", "json"],
    &["scan", "--statistics"],
    &["check", "--gpu", "off", "--format", "json"],
    &["fix", "--dry-run", "--gpu", "off"],
];

/// Every command gives with the cache what it gives without, on the tree as it is now; run
/// twice with the cache (the first run may fill it, the second reads it).
fn same_with_and_without(root: &Path, when: &str) {
    for args in COMMANDS {
        let fresh = output(root, args, false);
        for pass in ["first", "second"] {
            let cached = output(root, args, true);
            assert_eq!(cached, fresh, "{args:?} {when}, {pass} cached run");
        }
    }
}

fn edit(root: &Path, rel: &str, from: &str, to: &str) {
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{rel} has no {from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn the_mission_gives_the_same_verdicts_cold_warm_and_after_edits() {
    let dir = copy_fixture("superwhisper-v6");
    let root = dir.path();
    age(root);
    same_with_and_without(root, "cold");
    assert!(root.join(CACHE).join(".gitignore").is_file());
    // Touched, not changed: the content hash decides.
    let touched = root.join("LLM/llm_manager_enhanced.py");
    std::fs::File::options()
        .append(true)
        .open(&touched)
        .unwrap()
        .set_modified(SystemTime::now())
        .unwrap();
    edit(root, "test_cuda.py", "cuda", "cuda ");
    // A module other files import: its importers' verdicts read it.
    edit(root, "utils/gpu_manager.py", "import", "import os\nimport");
    same_with_and_without(root, "after touching and editing");
}

#[test]
fn a_change_to_an_imported_module_reaches_its_importers() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join("cfg.py"), "DEVICE = \"cuda:1\"\n").unwrap();
    let main = "import torch\nfrom cfg import DEVICE\n\nif __name__ == \"__main__\":\n    torch.zeros(1).to(DEVICE)\n";
    std::fs::write(root.join("train.py"), main).unwrap();
    age(root);
    let args = ["scan", "--format", "json"];
    let before = output(root, &args, true);
    assert!(before.1.contains("GH104"), "{}", before.1);
    edit(root, "cfg.py", "cuda:1", "cuda:0");
    let after = output(root, &args, true);
    assert_eq!(after, output(root, &args, false));
    assert!(
        !after.1.contains("GH104"),
        "train.py kept its old verdict: {}",
        after.1
    );
}

/// A launch command is part of the tree the cache signs: a shell script that starts editing
/// to run a package module makes it a program on the next cached run, as without the cache.
#[test]
fn a_changed_launch_command_reaches_the_program_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::create_dir(root.join("pkg")).unwrap();
    std::fs::write(root.join("pkg/__init__.py"), "").unwrap();
    let gpu = "import torch\n\nprint(torch.zeros(1).cuda())\n";
    std::fs::write(root.join("pkg/train.py"), gpu).unwrap();
    std::fs::write(root.join("run.sh"), "echo nothing yet\n").unwrap();
    age(root);
    let args = ["scan", "--format", "json"];
    let before = output(root, &args, true);
    assert!(before.1.contains("\"evidence\": \"library"), "{}", before.1);
    std::fs::write(root.join("run.sh"), "python -m pkg.train\n").unwrap();
    let after = output(root, &args, true);
    assert_eq!(after, output(root, &args, false));
    assert!(after.1.contains("(run.sh, line 1)"), "{}", after.1);
}

#[test]
fn a_file_is_judged_by_its_metadata_while_size_mtime_and_inode_hold() {
    // What the cache promises and no more, as ruff: an edit that keeps the size, the mtime
    // and the inode is not seen until `--no-cache` or `cache clean`.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    let bad = "import torch\nx = torch.device(\"cuda:1\")\n";
    std::fs::write(root.join("a.py"), bad).unwrap();
    age(root);
    let args = ["scan", "--format", "json"];
    let before = output(root, &args, true);
    assert_eq!(before.0, 1);
    let file = std::fs::File::options()
        .write(true)
        .open(root.join("a.py"))
        .unwrap();
    std::io::Write::write_all(&mut &file, b"#mport torch\n").unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000))
        .unwrap();
    drop(file);
    assert_eq!(output(root, &args, true), before, "the cache was not used");
    let fresh = output(root, &args, false);
    assert_ne!(fresh, before);
    let cleaned = run(gh(root).args(["cache", "clean"]));
    assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
    assert!(
        cleaned
            .stdout
            .starts_with("removed 3 file(s) of the cache at "),
        "{}",
        cleaned.stdout
    );
    assert!(!root.join(CACHE).exists());
    assert_eq!(output(root, &args, true), fresh);
}

#[test]
fn no_cache_keeps_nothing_and_a_torn_cache_is_a_miss() {
    let dir = copy_fixture("superwhisper-v6");
    let root = dir.path();
    age(root);
    let args = ["scan", "--format", "json"];
    let fresh = output(root, &args, false);
    assert!(!root.join(CACHE).exists(), "--no-cache wrote a cache");
    assert_eq!(output(root, &args, true), fresh);
    let file = std::fs::read_dir(root.join(CACHE))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".jsonl") && !name.ends_with(".facts.jsonl")
        })
        .expect("a cache file");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 10, "{} lines", lines.len());
    // The facts beside the records, torn too: a miss, never an error.
    let facts = file.with_extension("facts.jsonl");
    let facts_text = std::fs::read_to_string(&facts).unwrap();
    std::fs::write(&facts, &facts_text[..facts_text.len() / 2]).unwrap();
    // A torn line, a line of garbage, and a file cut short.
    let mut torn: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    torn[3] = torn[3][..torn[3].len() / 2].to_string();
    torn[5] = "{\"rel\": 7}".into();
    torn.truncate(lines.len() - 2);
    let mut cut = torn.join("\n");
    cut.push_str("\n{\"rel\":\"LLM/");
    std::fs::write(&file, cut).unwrap();
    assert_eq!(output(root, &args, true), fresh, "torn cache");
    std::fs::write(&file, b"\xff\x00not a cache").unwrap();
    assert_eq!(output(root, &args, true), fresh, "a cache of garbage");
}

#[test]
fn two_runs_at_once_leave_a_cache_that_reads_back() {
    let dir = copy_fixture("superwhisper-v6");
    let root = dir.path();
    age(root);
    let args = ["scan", "--format", "json"];
    let fresh = output(root, &args, false);
    for _ in 0..3 {
        let children: Vec<_> = (0..2)
            .map(|_| {
                std::process::Command::new(env!("CARGO_BIN_EXE_gpu-homogenize"))
                    .current_dir(root)
                    .args(args)
                    .env("LD_LIBRARY_PATH", "/nonexistent")
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8(out.stdout).unwrap();
            let stdout = crate::common::redact_path(&stdout, root, "<root>");
            assert_eq!((out.status.code().unwrap(), stdout), fresh);
        }
    }
    assert_eq!(output(root, &args, true), fresh);
    let leftovers: Vec<_> = std::fs::read_dir(root.join(CACHE))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

// Unix only: links, FIFOs, modes or signals made through unix calls.
#[cfg(unix)]
#[test]
fn the_cache_is_never_written_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(
        root.join("a.py"),
        "import torch\nx = torch.device(\"cuda:1\")\n",
    )
    .unwrap();
    std::fs::create_dir(root.join(".gpu-homogenize")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join(CACHE)).unwrap();
    let args = ["scan", "--format", "json"];
    assert_eq!(output(root, &args, true), output(root, &args, false));
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
}

/// Mutants of the fixtures as one tree: every verdict the same with and without the cache,
/// cold, warm, and after a tenth of them are mutated again.
#[test]
fn mutants_give_the_same_verdicts_with_and_without_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    let sources = sources();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut mutants = Vec::new();
    for n in 0..240 {
        let (origin, bytes) = &sources[n % sources.len()];
        let name = format!(
            "m{}/{n}_{}",
            n % 7,
            origin.file_name().unwrap().to_string_lossy()
        );
        std::fs::create_dir_all(root.join(&name).parent().unwrap()).unwrap();
        std::fs::write(root.join(&name), mutate(&mut rng, bytes)).unwrap();
        mutants.push((name, bytes.clone()));
    }
    age(root);
    same_with_and_without(root, "cold");
    for (name, bytes) in mutants.iter().step_by(10) {
        std::fs::write(root.join(name), mutate(&mut rng, bytes)).unwrap();
    }
    same_with_and_without(root, "after mutating a tenth again");
}

#[test]
fn fix_writes_the_same_files_with_the_cache_and_refreshes_what_it_wrote() {
    let (with, without) = (
        copy_fixture("superwhisper-v6"),
        copy_fixture("superwhisper-v6"),
    );
    age(with.path());
    output(with.path(), &["scan"], true);
    let args = ["fix", "--gpu", "off", "--format", "json"];
    let (a, b) = (
        output(with.path(), &args, true),
        output(without.path(), &args, false),
    );
    assert_eq!(a, b);
    for rel in common::files_under(without.path(), "py") {
        assert_eq!(
            std::fs::read(with.path().join(&rel)).unwrap(),
            std::fs::read(without.path().join(&rel)).unwrap(),
            "{rel}"
        );
    }
    // The next runs see the rewritten files, not the verdicts from before the rewrite.
    for args in [&args[..], &["scan", "--format", "json"]] {
        assert_eq!(
            output(with.path(), args, true),
            output(without.path(), args, false),
            "{args:?} after fix"
        );
    }
}

#[test]
fn shards_split_the_files_between_them_and_judge_each_as_the_whole_run_does() {
    let dir = copy_fixture("superwhisper-v6");
    let root = dir.path();
    let files = |args: &[&str]| -> Vec<serde_json::Value> {
        let (_, stdout) = output(root, args, false);
        let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        doc["files"].as_array().unwrap().clone()
    };
    let whole = files(&["scan", "--format", "json"]);
    let mut merged = Vec::new();
    for shard in ["1/3", "2/3", "3/3"] {
        let part = files(&["scan", "--format", "json", "--shard", shard]);
        assert!(
            !part.is_empty() && part.len() < whole.len(),
            "{shard}: {}",
            part.len()
        );
        merged.extend(part);
    }
    let path = |f: &serde_json::Value| f["path"].as_str().unwrap().to_string();
    merged.sort_by_key(path);
    let mut whole = whole;
    whole.sort_by_key(path);
    assert_eq!(merged, whole);
    let bad = run(gh(root).args(["scan", "--shard", "4/3"]));
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("is not I/N"), "{}", bad.stderr);
}

#[test]
fn a_packaging_file_that_makes_a_module_a_program_is_seen_though_no_source_changed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("pkg")).unwrap();
    std::fs::write(root.join("pkg/__init__.py"), "").unwrap();
    let cli = "import torch\n\n\ndef main():\n    torch.zeros(1).cuda()\n";
    std::fs::write(root.join("pkg/cli.py"), cli).unwrap();
    age(root);
    let args = ["scan", "--format", "json"];
    let before = output(root, &args, true);
    assert_eq!(output(root, &args, true), before);
    // A console script now starts a process in pkg/cli.py; its mtime as old as the rest, so
    // only the packaging file's metadata can tell.
    let pyproject = root.join("pyproject.toml");
    std::fs::write(
        &pyproject,
        "[project]\nname = \"pkg\"\n[project.scripts]\ntool = \"pkg.cli:main\"\n",
    )
    .unwrap();
    std::fs::File::options()
        .append(true)
        .open(&pyproject)
        .unwrap()
        .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000))
        .unwrap();
    let after = output(root, &args, true);
    assert_eq!(after, output(root, &args, false));
    assert_ne!(
        after, before,
        "the script made no difference: the test proves nothing"
    );
}

/// `scan` in `root` with the cache in `dir`, by the binary at `bin` (the build's own when none):
/// stdout, and the cache's trace line.
fn scan_with_cache_dir(root: &Path, dir: &Path, bin: Option<&Path>) -> (String, String) {
    let mut cmd = gh(root);
    if let Some(bin) = bin {
        let mut other = assert_cmd::Command::new(bin);
        other
            .current_dir(root)
            .env_remove("GPU_HOMOGENIZE_DRIVER_DIR")
            .env("LD_LIBRARY_PATH", "/nonexistent");
        cmd = other;
    }
    let out = run(cmd
        .env("GPU_HOMOGENIZE_TRACE", "cache")
        .args(["scan", "--format", "json", "--cache-dir"])
        .arg(dir));
    let trace = out
        .stderr
        .lines()
        .find(|l| l.starts_with("cache: "))
        .unwrap_or_else(|| panic!("no trace line: {}", out.stderr))
        .to_string();
    (
        crate::common::redact_path(&out.stdout, root, "<root>"),
        trace,
    )
}

#[test]
fn a_cache_made_in_one_checkout_is_valid_in_another_at_another_path() {
    // What a CI cache does: restored from an earlier job into a fresh checkout, elsewhere.
    let cache = tempfile::tempdir().unwrap();
    let first = copy_fixture("superwhisper-v6");
    let (made, trace) = scan_with_cache_dir(first.path(), cache.path(), None);
    assert!(trace.contains(" 0 verdict(s) from the cache"), "{trace}");
    // Another checkout: another path, fresh inodes and modification times; and the same build
    // installed afresh (another file: another inode), as on a new runner.
    let second = copy_fixture("superwhisper-v6");
    drop(first);
    let install = tempfile::tempdir().unwrap();
    let bin = install.path().join("gpu-homogenize");
    std::fs::copy(assert_cmd::cargo::cargo_bin("gpu-homogenize"), &bin).unwrap();
    let (reused, trace) = scan_with_cache_dir(second.path(), cache.path(), Some(&bin));
    assert!(trace.contains(", 0 file(s) analysed"), "{trace}");
    assert!(!trace.starts_with("cache: 0 verdict"), "{trace}");
    assert_eq!(reused, made, "the same verdicts");
    assert!(
        !second.path().join(CACHE).exists(),
        "nothing is written in the tree"
    );
    // An edit in that checkout is analysed again, and only it.
    edit(second.path(), "STT/vad_manager.py", "import", "import  ");
    let (_, trace) = scan_with_cache_dir(second.path(), cache.path(), Some(&bin));
    assert!(trace.contains(", 1 file(s) analysed"), "{trace}");
}
