//! Issue 31, a tree from a stranger: what the run shares (open files, memory) running out, a
//! file too large for memory, a bug met in one file, a killed backup, CR-only line endings, and
//! the comments a person wrote above a removed write.

use std::path::Path;

use crate::common::{self, gh, run, tree, write};

/// A program that selects its GPU by hand: `fix` rewrites it.
const BAD: &str = "import os\nimport torch\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"\nx = torch.zeros(1).cuda()\n";

/// The binary run through `sh` with `limit` (a `ulimit` option and value) in force.
fn limited(cwd: &Path, limit: &str, args: &[&str]) -> common::Run {
    let bin = assert_cmd::cargo::cargo_bin("gpu-homogenize");
    run(assert_cmd::Command::new("sh")
        .current_dir(cwd)
        .env_remove("GPU_HOMOGENIZE_DRIVER_DIR")
        .env("LD_LIBRARY_PATH", "/nonexistent")
        .arg("-c")
        .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
        .arg(bin)
        .args(args))
}

/// Names under `root` (recursively) that only a run of this tool makes: its temp files and the
/// versions it keeps aside.
fn tool_debris(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
            } else if (name.starts_with(".gpu-homogenize-") && name.ends_with(".tmp"))
                || name.contains(".edit-kept-by-gpu-homogenize-")
            {
                out.push(entry.path().display().to_string());
            }
        }
    }
    out
}

/// Issue 31, item 8: with few descriptors left, half the files were "changed on disk", versions
/// were kept aside and temp files left. Running out of open files is the run's error, said once;
/// every file is as it was or fixed whole, and nothing of the tool is left in the tree.
#[test]
#[cfg_attr(
    windows,
    ignore = "its limit is a `ulimit -n` set by `sh`, a unix resource limit"
)]
fn running_out_of_open_files_is_one_run_error_and_leaves_nothing_behind() {
    let root = tree();
    for i in 0..60 {
        write(root.path(), &format!("m{i:02}.py"), BAD);
    }
    let out = limited(
        root.path(),
        "-n 9",
        &["fix", "--gpu", "off", "--no-journal", "--jobs", "2", "."],
    );
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("error: too many open files: raise `ulimit -n`, now 9 (or lower --jobs), then run again"),
        "{all}"
    );
    assert!(!all.contains("changed on disk"), "{all}");
    assert!(!all.contains("kept as"), "{all}");
    assert_eq!(tool_debris(root.path()), Vec::<String>::new());
    // Each file is what it was, or its whole fix; the next run with descriptors fixes the rest.
    let fixed = run(gh(root.path()).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(fixed.code, 0, "{}{}", fixed.stdout, fixed.stderr);
    assert!(!fixed.stderr.contains("temp file"), "{}", fixed.stderr);
    let first = std::fs::read_to_string(root.path().join("m00.py")).unwrap();
    assert_ne!(first, BAD);
    for i in 0..60 {
        let text = std::fs::read_to_string(root.path().join(format!("m{i:02}.py"))).unwrap();
        assert_eq!(text, first, "m{i:02}.py");
    }
}

/// Issue 31, item 9: a file larger than the memory there is aborted the whole run (134, nothing
/// fixed). It is that file's error; the others are fixed.
#[test]
#[cfg_attr(
    windows,
    ignore = "its limit is a `ulimit -v` set by `sh`, a unix resource limit"
)]
fn a_file_too_large_for_memory_is_its_own_error_and_the_others_are_fixed() {
    let root = tree();
    write(root.path(), "a.py", BAD);
    write(root.path(), "z.py", BAD);
    let huge = std::fs::File::create(root.path().join("huge.py")).unwrap();
    // Sparse: 3 GiB that take no disk, and more than the 1.5 GiB of address space below.
    huge.set_len(3 << 30).unwrap();
    let out = limited(
        root.path(),
        "-v 1500000",
        &[
            "fix",
            "--gpu",
            "off",
            "--no-journal",
            "--no-cache",
            "--jobs",
            "1",
            "--max-file-size",
            "4000000000",
            ".",
        ],
    );
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(
            "error: huge.py: too large to analyse in the memory there is (3221225472 bytes"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout
            .contains("3 files: 2 compliant after the fix, 1 error."),
        "{}",
        out.stdout
    );
    for name in ["a.py", "z.py"] {
        let text = std::fs::read_to_string(root.path().join(name)).unwrap();
        assert!(text.contains("CUDA_DEVICE_ORDER"), "{name}: {text}");
    }
}

/// Issue 31, item 9: a panic in one file ended the whole run. It is that file's error, with its
/// path and a request to report it; the other files are fixed, and the run exits 2.
#[test]
fn a_panic_in_one_file_is_that_files_error_and_the_others_go_on() {
    let root = tree();
    for name in ["a.py", "b.py", "c.py"] {
        write(root.path(), name, BAD);
    }
    let out = run(gh(root.path())
        .env("GPU_HOMOGENIZE_TEST_PANIC", "b.py")
        .args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("error: b.py: panicked while processing this file (test panic for b.py at ")
            && out.stderr.contains(
                "this is a bug in gpu-homogenize; please report it, with this file if you can"
            ),
        "{}",
        out.stderr
    );
    // The default panic report is held back: the file's error says it.
    assert!(!out.stderr.contains("thread '"), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("3 files: 2 compliant after the fix, 1 error."),
        "{}",
        out.stdout
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("b.py")).unwrap(),
        BAD
    );
    for name in ["a.py", "c.py"] {
        assert_ne!(
            std::fs::read_to_string(root.path().join(name)).unwrap(),
            BAD
        );
    }
}

/// Issue 31, item 10: a `fix --backup-dir` killed while staging a backup left its temp copy in
/// the backup directory, and no later run removed it. It is recorded like every temp file, and
/// the next run removes it: in the tree, and in a backup directory outside it.
#[test]
fn a_staged_backup_left_by_a_killed_run_is_removed_by_the_next_run() {
    // The run kills itself from the race hook when its backup is staged: `sh` on unix,
    // `cmd` on Windows (whose positional arguments are in the env).
    let hook = if cfg!(windows) {
        "if \"%GPU_HOMOGENIZE_RACE_STAGE%\"==\"backup\" taskkill /F /PID %GPU_HOMOGENIZE_RACE_PID% >nul"
    } else {
        "[ \"$2\" = backup ] && kill -9 $PPID"
    };
    let outside = tempfile::tempdir().unwrap();
    let outside_dir = outside.path().join("bak");
    for dir in ["bak", outside_dir.to_str().unwrap()] {
        let root = tree();
        write(root.path(), "a.py", BAD);
        let args = [
            "fix",
            "--gpu",
            "off",
            "--no-journal",
            "--backup-dir",
            dir,
            ".",
        ];
        let killed = run(gh(root.path())
            .env("GPU_HOMOGENIZE_TEST_RACE", hook)
            .args(args));
        // Killed: by a signal on unix; on Windows with no summary (`taskkill /F` ends the run
        // with status 1, under Wine 8 with 0).
        let no_summary = killed.stdout.is_empty() && killed.code != 2;
        assert!(
            if cfg!(windows) {
                no_summary
            } else {
                killed.code == -1
            },
            "killed: {} {}{}",
            killed.code,
            killed.stdout,
            killed.stderr
        );
        let backups = root.path().join(dir);
        assert_eq!(tool_debris(&backups).len(), 1, "{dir}: the staged copy");
        let out = run(gh(root.path()).args(args));
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        assert!(
            out.stderr
                .contains("note: removed 1 temp file(s) left by an interrupted run: "),
            "{}",
            out.stderr
        );
        assert_eq!(tool_debris(&backups), Vec::<String>::new(), "{dir}");
        assert_eq!(
            std::fs::read_to_string(backups.join("a.py")).unwrap(),
            BAD,
            "{dir}"
        );
    }
}

/// Issue 31, item 13: a file with CR-only line endings reported every finding on line 1. Each
/// is on its own line, and the fix keeps the file's CR endings.
#[test]
fn a_cr_only_file_reports_each_finding_on_its_own_line() {
    let root = tree();
    let source = "\"\"\"Train.\"\"\"\rimport os\rimport torch\r\ros.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"\rx = torch.device(\"cuda:1\")\r";
    write(root.path(), "cr.py", source);
    let out = run(gh(root.path()).args(["scan", "--no-cache", "."]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    insta::assert_snapshot!("cr_only_scan", out.stdout);
    let json = run(gh(root.path()).args(["scan", "--no-cache", "--format", "json", "."]));
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let places: Vec<(u64, u64)> = doc["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["line"].as_u64().unwrap(), f["column"].as_u64().unwrap()))
        .collect();
    assert_eq!(places, [(5, 1), (5, 1), (6, 18)]);
    let fixed = run(gh(root.path()).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(fixed.code, 0, "{}{}", fixed.stdout, fixed.stderr);
    let text = std::fs::read_to_string(root.path().join("cr.py")).unwrap();
    assert!(!text.contains('\n'), "{text:?}");
    assert!(
        text.ends_with("\rx = torch.device(\"cuda:0\")\r"),
        "{text:?}"
    );
}

/// Issue 31, item 12: the safe fix deleted the comment a person wrote right above a hand-written
/// env write. That comment stays; a banner that only names the GPU configuration goes with it.
#[test]
fn a_comment_above_a_removed_write_stays_and_a_banner_goes() {
    let root = tree();
    let documented = "import os\nimport torch\n\n# Use the second card for the big model\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\nx = torch.zeros(1).cuda()\n";
    let banner = "import os\nimport torch\n\n# ====\n# GPU: RTX 3090 only\n# ====\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\nx = torch.zeros(1).cuda()\n";
    write(root.path(), "documented.py", documented);
    write(root.path(), "banner.py", banner);
    let out = run(gh(root.path()).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let header = "import os\n\n# GPU selection (gpu-homogenize): the RTX 3090 only.\n# Never the RTX 5060 Ti.\n# PCI bus order, then the mask: the RTX 3090 becomes cuda:0.\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\nos.environ[\"CUDA_DEVICE_ORDER\"] = \"PCI_BUS_ID\"\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"max_split_size_mb:1024\"\n\nimport torch\n\n";
    assert_eq!(
        std::fs::read_to_string(root.path().join("documented.py")).unwrap(),
        format!("{header}# Use the second card for the big model\nx = torch.zeros(1).cuda()\n")
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("banner.py")).unwrap(),
        format!("{header}x = torch.zeros(1).cuda()\n")
    );
}
