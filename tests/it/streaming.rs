//! `scan`, `check` and `fix` print each file's findings, or its object of the JSON document, as
//! the run hands it on: what they print is what a run that collects every outcome first prints.
//! `--shard 1/1` collects (its document names the shard) and covers every file, so the two
//! documents differ only by the shard's lines.

use std::path::Path;

use crate::common::{self, copy_fixture, gh, run, write};

/// The JSON `scan` streams, and the one it collects with `--shard 1/1` without its `shard`
/// object, in `dir` (the root it is run from).
fn both(dir: &Path) -> (String, String) {
    both_of(&["scan"], dir, dir)
}

/// The JSON the command `args` streams in `streamed`, and the one it collects with
/// `--shard 1/1` in `collected` without its `shard` object (two copies of one tree, for a
/// command that writes).
fn both_of(args: &[&str], streamed: &Path, collected: &Path) -> (String, String) {
    let json = ["--format", "json", "--no-cache"];
    let streamed = run(gh(streamed).args(args).args(json));
    let collected = run(gh(collected).args(args).args(json).args(["--shard", "1/1"]));
    assert_eq!(streamed.code, collected.code, "{}", streamed.stderr);
    assert_eq!(streamed.stderr, collected.stderr);
    let mut lines = collected.stdout.lines();
    let mut without_shard = String::new();
    while let Some(line) = lines.next() {
        if line == "  \"shard\": {" {
            for inner in lines.by_ref() {
                if inner == "  }," {
                    break;
                }
            }
            continue;
        }
        without_shard.push_str(line);
        without_shard.push('\n');
    }
    assert!(
        collected.stdout.contains("\n  \"shard\": {"),
        "the collected document names its shard: {}",
        collected.stdout
    );
    (streamed.stdout, without_shard)
}

#[test]
fn the_streamed_json_is_the_collected_document_byte_for_byte() {
    // The mission: 40 files with findings, fixes and statuses of every kind.
    let mission = copy_fixture("superwhisper-v6");
    let (streamed, collected) = both(mission.path());
    assert_eq!(streamed, collected);
    assert!(common::statuses(&streamed).len() >= 40);

    // A tree with no source file: an empty `files` array.
    let empty = tempfile::tempdir().unwrap();
    write(empty.path(), "notes.txt", "nothing to see\n");
    let (streamed, collected) = both(empty.path());
    assert_eq!(streamed, collected);
    assert!(
        streamed.contains("\n  \"files\": [],\n  \"summary\": {"),
        "{streamed}"
    );

    // A config below the repository's top: every path carries the prefix, errors included.
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    write(
        repo.path(),
        "svc/gpu-homogenize.toml",
        "[policy]\nscope = \"every-gpu-file\"\n",
    );
    write(
        repo.path(),
        "svc/app/m.py",
        "import torch\nx = torch.zeros(1).cuda(1)\n",
    );
    write(repo.path(), "svc/app/broken.py", "import torch\ndef f(:\n");
    let (streamed, collected) = both(&repo.path().join("svc"));
    assert_eq!(streamed, collected);
    let statuses = common::statuses(&streamed);
    assert_eq!(
        statuses.keys().collect::<Vec<_>>(),
        ["svc/app/broken.py", "svc/app/m.py"]
    );
}

#[test]
fn check_and_fix_stream_the_json_they_collect() {
    let mission = copy_fixture("superwhisper-v6");
    let check = ["check", "--gpu", "off", "--no-journal"];
    let (streamed, collected) = both_of(&check, mission.path(), mission.path());
    assert_eq!(streamed, collected);
    assert!(streamed.contains("\"command\": \"check\""), "{streamed}");

    let dry_run = ["fix", "--dry-run"];
    let (streamed, collected) = both_of(&dry_run, mission.path(), mission.path());
    assert_eq!(streamed, collected);
    assert!(streamed.contains("\"would_fix\""), "{streamed}");

    // A fix writes: each run on a copy of its own.
    let other = copy_fixture("superwhisper-v6");
    let fix = ["fix", "--gpu", "off", "--no-journal"];
    let (streamed, collected) = both_of(&fix, mission.path(), other.path());
    let root = |dir: &Path| format!("{:?}", dir.display().to_string());
    let collected = collected.replace(&root(other.path()), &root(mission.path()));
    assert_eq!(streamed, collected);
    assert!(streamed.contains("\"fixed\""), "{streamed}");
}
