//! What a user of ruff, pre-commit and GitHub Actions expects: paths relative to the
//! repository in every format (a config in a subdirectory of a monorepo), every error visible in
//! every format, stdin, `--show-fixes`, and formats a command cannot honour refused.

use std::path::Path;

use crate::common::{self, gh};

/// The binary's run as the Linux snapshots hold it: on Windows the locations of its text
/// output and the paths of its errors `/`-joined.
fn run(cmd: &mut assert_cmd::Command) -> common::Run {
    let mut out = common::run(cmd);
    out.stdout = common::unix_locations(&out.stdout);
    out.stderr = common::unix_paths(&out.stderr);
    out
}

/// A monorepo: the repository at the top, the config in `svc/`, and in `svc/app/` a file with
/// findings, one with a syntax error and one that is not UTF-8 (an input the tool refuses).
fn monorepo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let app = repo.path().join("svc/app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    std::fs::write(
        repo.path().join("svc/gpu-homogenize.toml"),
        "[policy]\nscope = \"every-gpu-file\"\n",
    )
    .unwrap();
    std::fs::write(
        app.join("m.py"),
        "import torch\nx = torch.zeros(1).cuda(1)\n",
    )
    .unwrap();
    std::fs::write(app.join("broken.py"), "import torch\ndef f(:\n").unwrap();
    std::fs::write(app.join("latin.py"), b"# \xe9\nimport torch\n").unwrap();
    repo
}

fn redact(text: &str, repo: &Path) -> String {
    crate::common::redact_path(text, repo, "[REPO]")
}

/// The SARIF a user sees inline: the invocation (notifications) and the results, without the
/// rule catalogue.
fn sarif_view(stdout: &str) -> String {
    let doc: serde_json::Value = serde_json::from_str(stdout).unwrap();
    let run = &doc["runs"][0];
    let view = serde_json::json!({
        "originalUriBaseIds": run["originalUriBaseIds"],
        "invocations": run["invocations"],
        "results": run["results"],
    });
    serde_json::to_string_pretty(&view).unwrap()
}

/// Run from the repository (as CI does) and from the config's directory (as a developer of that
/// service does): GitHub, SARIF, GitLab and JSON say `svc/app/m.py` both times, and each error is
/// in each format with the exit status 2.
#[test]
fn every_format_names_files_from_the_repository_and_shows_every_error() {
    let repo = monorepo();
    let svc = repo.path().join("svc");
    for (cwd, arg) in [(repo.path(), "svc"), (svc.as_path(), ".")] {
        let github = run(gh(cwd).args(["scan", "--output-format", "github", arg]));
        assert_eq!(github.code, 2);
        insta::assert_snapshot!("monorepo_github", github.stdout);
        let sarif = run(gh(cwd).args(["scan", "--format", "sarif", arg]));
        assert_eq!(sarif.code, 2);
        insta::assert_snapshot!(
            "monorepo_sarif",
            redact(&sarif_view(&sarif.stdout), repo.path())
        );
        let gitlab = run(gh(cwd).args(["scan", "--format", "gitlab", arg]));
        assert_eq!(gitlab.code, 2);
        insta::assert_snapshot!("monorepo_gitlab", gitlab.stdout);
        let json = run(gh(cwd).args(["scan", "--format", "json", arg]));
        assert_eq!(json.code, 2);
        let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
        let files: Vec<String> = doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| format!("{} {} {}", f["path"], f["status"], f["error"]))
            .collect();
        insta::assert_snapshot!("monorepo_json_files", files.join("\n"));
        assert_eq!(doc["repository"], repo.path().display().to_string());
    }
    // Text names files as the user reached them (ruff's way: a path the terminal can open).
    let text = run(gh(repo.path()).args(["scan", "svc"]));
    assert_eq!(text.code, 2);
    insta::assert_snapshot!(
        "monorepo_text",
        format!("{}--- stderr\n{}", text.stdout, text.stderr)
    );
    // Diff headers too: `git apply` from the repository's top takes the patch.
    let repo_diff = run(gh(&repo.path().join("svc")).args(["fix", "--diff"]));
    assert!(
        repo_diff
            .stdout
            .starts_with("--- a/svc/app/m.py\n+++ b/svc/app/m.py\n"),
        "{}",
        repo_diff.stdout
    );
    // The SARIF result's rule id is explained like any rule.
    let rule = run(gh(repo.path()).args(["rule", "GH901"]));
    assert_eq!(rule.code, 0);
    assert!(rule.stdout.starts_with(
        "GH901 (file-not-processed): a SARIF result and a GitLab Code Quality issue only"
    ));
}

/// The journal keeps root-relative keys (the report joins on them) and the repository path next
/// to them; the coordinator report names files from the repository.
#[test]
fn the_journal_and_the_report_name_files_from_the_repository() {
    let repo = monorepo();
    let fix = run(gh(repo.path()).args(["fix", "--gpu", "off", "svc"]));
    assert_eq!(fix.code, 2, "{}", fix.stderr);
    let journal = std::fs::read_to_string(repo.path().join("svc/.gpu-homogenize/journal.jsonl"))
        .expect("the journal is at the tree root");
    let places: Vec<String> = journal
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["type"] == "file")
        .map(|l| format!("{} {}", l["path"], l["repository_path"]))
        .collect();
    assert_eq!(
        places,
        [
            r#""app/broken.py" "svc/app/broken.py""#,
            r#""app/latin.py" "svc/app/latin.py""#,
            r#""app/m.py" "svc/app/m.py""#,
        ]
    );
    let report = run(gh(repo.path()).args(["report", "--format", "json", "svc"]));
    assert_eq!(report.code, 0, "{}", report.stderr);
    let doc: serde_json::Value = serde_json::from_str(&report.stdout).unwrap();
    let mut alerted: Vec<&str> = doc["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["path"].as_str())
        .collect();
    alerted.sort();
    assert_eq!(alerted, ["svc/app/broken.py", "svc/app/latin.py"]);
    let md = run(gh(repo.path()).args(["report", "svc"]));
    assert!(md.stdout.contains("`svc/app/broken.py`"), "{}", md.stdout);
}

/// A file this user cannot read (not as root, who reads everything) is an error in every
/// format too.
// Unix only: links, FIFOs, modes or signals made through unix calls.
#[cfg(unix)]
#[test]
fn an_unreadable_file_is_an_error_in_every_format() {
    use std::os::unix::fs::PermissionsExt;
    let repo = monorepo();
    let locked = repo.path().join("svc/app/locked.py");
    std::fs::write(&locked, "import torch\n").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&locked).is_ok() {
        println!("note: running as root, a mode-000 file is readable; the not-UTF-8 file stands for it in the other tests");
        return;
    }
    let github = run(gh(repo.path()).args(["scan", "--format", "github", "svc"]));
    assert_eq!(github.code, 2);
    assert!(
        github
            .stdout
            .contains("::error title=gpu-homogenize (error),file=svc/app/locked.py,line=1,col=1::"),
        "{}",
        github.stdout
    );
    let sarif = run(gh(repo.path()).args(["scan", "--format", "sarif", "svc"]));
    assert!(sarif_view(&sarif.stdout).contains("svc/app/locked.py: "));
    let json = run(gh(repo.path()).args(["scan", "--format", "json", "svc"]));
    assert!(json.stdout.contains("\"path\": \"svc/app/locked.py\""));
}

/// Findings a person accepted are counted as accepted, never as compliant, in the file count
/// and in the finding count.
#[test]
fn accepted_findings_are_counted_as_such() {
    let tree = tempfile::tempdir().unwrap();
    let bare = "import torch\nx = torch.zeros(1).cuda(1)\n";
    std::fs::write(tree.path().join("baselined.py"), bare).unwrap();
    std::fs::write(
        tree.path().join("noqa.py"),
        "import torch\nx = torch.zeros(1).cuda(1)  # noqa: GH102\n# gpu-homogenize: noqa: GH001\n",
    )
    .unwrap();
    let out = run(gh(tree.path()).args(["baseline", "baselined.py"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    std::fs::write(tree.path().join("new.py"), bare).unwrap();
    let out = run(gh(tree.path()).args([
        "scan",
        "--baseline",
        "gpu-homogenize-baseline.json",
        "baselined.py",
        "noqa.py",
    ]));
    assert_eq!(out.code, 0);
    insta::assert_snapshot!("accepted_scan", out.stdout);
    let out = run(gh(tree.path()).args([
        "fix",
        "--dry-run",
        "--baseline",
        "gpu-homogenize-baseline.json",
    ]));
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("Would fix 1 file (2 of 2 violations), 0 left for review, 4 findings accepted by noqa/baseline/ignore.\n3 files: 1 compliant after the fix, 2 accepted by noqa/baseline/ignore.\n"),
        "{}",
        out.stdout
    );
}

const DOCUMENTED: &str = "\"\"\"Loads the model.\"\"\"\nimport torch\nx = torch.zeros(1).cuda(1)\n";

/// A finding about the whole file (the missing header) is reported on line 1, the docstring
/// here: editing the docstring leaves it baselined; editing the finding's own line revives that
/// finding only. A version-1 baseline (whole-file findings keyed by line 1) is still read.
#[test]
fn baseline_keys_survive_unrelated_edits() {
    let tree = tempfile::tempdir().unwrap();
    let file = tree.path().join("m.py");
    std::fs::write(&file, DOCUMENTED).unwrap();
    assert_eq!(run(gh(tree.path()).args(["baseline"])).code, 0);
    let baseline =
        std::fs::read_to_string(tree.path().join("gpu-homogenize-baseline.json")).unwrap();
    insta::assert_snapshot!("baseline_v2", baseline);
    let scan = || run(gh(tree.path()).args(["scan", "--baseline", "gpu-homogenize-baseline.json"]));
    std::fs::write(&file, DOCUMENTED.replace("Loads", "Loads and runs")).unwrap();
    assert_eq!(scan().code, 0, "{}", scan().stdout);
    std::fs::write(
        &file,
        DOCUMENTED
            .replace("Loads", "Loads and runs")
            .replace("zeros(1)", "zeros(2)"),
    )
    .unwrap();
    let revived = scan();
    assert_eq!(revived.code, 1);
    assert!(
        revived.stdout.starts_with("m.py:3:25: GH102"),
        "{}",
        revived.stdout
    );
    assert!(!revived.stdout.contains("GH001"), "{}", revived.stdout);
    // Version 1, as older releases wrote it.
    std::fs::write(&file, DOCUMENTED).unwrap();
    std::fs::write(
        tree.path().join("v1.json"),
        r#"{"version": 1, "findings": [
            {"path": "m.py", "rule": "GH001", "line": "\"\"\"Loads the model.\"\"\""},
            {"path": "m.py", "rule": "GH102", "line": "x = torch.zeros(1).cuda(1)"}]}"#,
    )
    .unwrap();
    let old = run(gh(tree.path()).args(["scan", "--baseline", "v1.json"]));
    assert_eq!(old.code, 0, "{}", old.stdout);
}

/// The text output names each unsafe fix it held back; a dry run lists the findings it fixes.
#[test]
fn held_back_fixes_are_named_and_a_dry_run_lists_what_it_fixes() {
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(
        tree.path().join("a.py"),
        "import os\nimport torch\n\ndef f():\n    os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"\n\nif __name__ == \"__main__\":\n    x = torch.zeros(1).cuda()\n",
    )
    .unwrap();
    let out = run(gh(tree.path()).args(["fix", "--dry-run"]));
    assert_eq!(out.code, 1);
    let findings_and_summary = out
        .stdout
        .split_once("\na.py:")
        .map_or("", |(_, rest)| rest);
    insta::assert_snapshot!("held_back_dry_run", format!("a.py:{findings_and_summary}"));
}

/// A format a command cannot honour is refused, exit 2, with the reason; never plain text
/// where a machine format was asked for.
#[test]
fn a_format_a_command_cannot_honour_is_refused() {
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(tree.path().join("a.py"), "import torch\n").unwrap();
    let doctor = run(gh(tree.path()).args(["doctor", "--format", "sarif"]));
    assert_eq!((doctor.code, doctor.stdout.as_str()), (2, ""));
    assert!(
        doctor
            .stderr
            .contains("invalid value 'sarif' for '--format <FORMAT>'")
            && doctor.stderr.contains("[possible values: text, json]"),
        "{}",
        doctor.stderr
    );
    for args in [
        &["scan", "--statistics", "--format", "json"][..],
        &["check", "--statistics", "--output-format", "sarif"],
        &["fix", "--diff", "--format", "github"],
    ] {
        let out = run(gh(tree.path()).args(args));
        assert_eq!((out.code, out.stdout.as_str()), (2, ""), "{args:?}");
        assert!(
            out.stderr
                .contains("prints text and cannot be combined with `--format"),
            "{args:?}: {}",
            out.stderr
        );
    }
}

/// `.gpu-homogenize/` says what to commit: the journal (the coordinator's history), not the
/// registry of a running fix's temp files nor any cache; an existing `.gitignore` is kept.
#[test]
fn the_state_directory_says_what_to_commit() {
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(
        tree.path().join("a.py"),
        "import torch\nx = torch.zeros(1).cuda(1)\n",
    )
    .unwrap();
    let out = run(gh(tree.path()).args(["fix", "--gpu", "off"]));
    assert_eq!(out.code, 0, "{}", out.stdout);
    let state = tree.path().join(".gpu-homogenize");
    let ignore = std::fs::read_to_string(state.join(".gitignore")).unwrap();
    insta::assert_snapshot!("state_gitignore", ignore);
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .current_dir(tree.path())
            .args(args)
            .output()
    };
    match git(&["init", "-q"]) {
        Ok(o) if o.status.success() => {
            std::fs::create_dir_all(state.join("temp")).unwrap();
            std::fs::write(state.join("temp/4242"), "1 2 a.py\n").unwrap();
            std::fs::create_dir_all(state.join("cache")).unwrap();
            std::fs::write(state.join("cache/x"), "").unwrap();
            let status = git(&["status", "--porcelain", "--untracked-files=all"]).unwrap();
            let status = String::from_utf8_lossy(&status.stdout).into_owned();
            assert_eq!(
                status,
                "?? .gpu-homogenize/.gitignore\n?? .gpu-homogenize/journal.jsonl\n?? a.py\n"
            );
        }
        _ => println!("note: git is not installed; the ignore rules are not tried with git"),
    }
    std::fs::write(state.join(".gitignore"), "*\n").unwrap();
    run(gh(tree.path()).args(["check", "--gpu", "off"]));
    assert_eq!(
        std::fs::read_to_string(state.join(".gitignore")).unwrap(),
        "*\n"
    );
}

const BARE: &str = "import torch\nx = torch.zeros(1).cuda(1)\n";

/// ruff's stdin: `scan -` judges the piped source as the file `--stdin-filename` names (its
/// config, its repository path); `fix -` prints the fixed source and writes nothing.
#[test]
fn a_source_read_from_stdin_is_judged_as_the_file_it_names() {
    let repo = monorepo();
    let scan = run(gh(repo.path())
        .args(["scan", "-", "--stdin-filename", "svc/app/new.py"])
        .write_stdin(BARE));
    assert_eq!(scan.code, 1, "{}", scan.stderr);
    insta::assert_snapshot!("stdin_scan", scan.stdout);
    let github = run(gh(repo.path())
        .args([
            "scan",
            "--stdin-filename",
            "svc/app/new.py",
            "--format",
            "github",
        ])
        .write_stdin(BARE));
    assert!(
        github
            .stdout
            .starts_with("::error title=gpu-homogenize (GH001),file=svc/app/new.py,line=1,col=1::"),
        "{}",
        github.stdout
    );
    let fix = run(gh(repo.path())
        .args([
            "fix",
            "-",
            "--stdin-filename",
            "svc/app/new.py",
            "--show-fixes",
        ])
        .write_stdin(BARE));
    assert_eq!(fix.code, 0, "{}", fix.stderr);
    insta::assert_snapshot!(
        "stdin_fix",
        format!("{}--- stderr\n{}", fix.stdout, fix.stderr)
    );
    assert!(!repo.path().join("svc/app/new.py").exists());
    // Already compliant: the source comes back byte for byte.
    let again = run(gh(repo.path())
        .args(["fix", "-", "--stdin-filename", "svc/app/new.py"])
        .write_stdin(fix.stdout.as_str()));
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (0, fix.stdout.as_str())
    );
    // `--diff` as ruff: the patch, exit 1; its headers relative to the repository.
    let diff = run(gh(repo.path())
        .args(["fix", "-", "--stdin-filename", "svc/app/new.py", "--diff"])
        .write_stdin(BARE));
    assert_eq!(diff.code, 1);
    assert!(
        diff.stdout
            .starts_with("--- a/svc/app/new.py\n+++ b/svc/app/new.py\n"),
        "{}",
        diff.stdout
    );
    let nameless = run(gh(repo.path()).args(["scan", "-"]).write_stdin(BARE));
    assert_eq!(nameless.code, 2);
    assert!(
        nameless.stderr.contains("needs --stdin-filename PATH"),
        "{}",
        nameless.stderr
    );
}

/// `check -` as `scan -`: the piped source is what is checked (not the file of that name on disk,
/// which may not exist), judged as the file it names; its fixed form passes; nothing is journalled
/// (an editor's buffer is not the file's history); `--gpu-cmd` cannot run a source that is not on
/// disk.
#[test]
fn check_reads_a_source_from_stdin() {
    let repo = monorepo();
    let check = |source: &str, extra: &[&str]| {
        run(gh(repo.path())
            .args([
                "check",
                "-",
                "--stdin-filename",
                "svc/app/m.py",
                "--gpu",
                "off",
            ])
            .args(extra)
            .write_stdin(source))
    };
    let bare = check(BARE, &[]);
    assert_eq!(bare.code, 1, "{}", bare.stderr);
    insta::assert_snapshot!(
        "stdin_check",
        format!("{}--- stderr\n{}", bare.stdout, bare.stderr)
    );
    let fixed = run(gh(repo.path())
        .args(["fix", "-", "--stdin-filename", "svc/app/m.py"])
        .write_stdin(BARE));
    // svc/app/m.py on disk is still the bare file; the piped, fixed source passes.
    let passed = check(&fixed.stdout, &["-q"]);
    assert_eq!(
        (passed.code, passed.stdout.as_str()),
        (0, ""),
        "{}",
        passed.stderr
    );
    let new = check(&fixed.stdout, &["--output-format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&new.stdout).unwrap();
    assert_eq!(
        (
            &doc["files"][0]["path"],
            &doc["files"][0]["status"],
            new.code
        ),
        (&"svc/app/m.py".into(), &"compliant".into(), 0)
    );
    assert!(!repo
        .path()
        .join("svc/.gpu-homogenize/journal.jsonl")
        .exists());
    let cmd = check(BARE, &["--gpu-cmd", "python3 {file}"]);
    assert_eq!(cmd.code, 2);
    assert_eq!(
        cmd.stderr,
        "error: --gpu-cmd runs the file itself; it cannot run a source read from stdin\n"
    );
}

/// `--show-fixes`, as ruff enumerates them: per file, per rule, what was or would be fixed.
#[test]
fn show_fixes_lists_the_fixes_per_file() {
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(tree.path().join("a.py"), BARE).unwrap();
    std::fs::write(tree.path().join("b.py"), "import torch\n").unwrap();
    let scan = run(gh(tree.path()).args(["scan", "--show-fixes", "-q"]));
    insta::assert_snapshot!("show_fixes_scan", scan.stdout);
    let dry = run(gh(tree.path()).args(["fix", "--dry-run", "--show-fixes", "-q"]));
    assert!(
        dry.stdout.contains("Would fix 2 findings:\n- a.py:\n    1 × GH001 (header-missing)\n    1 × GH102 (device-call-index)\n"),
        "{}",
        dry.stdout
    );
    let fix = run(gh(tree.path()).args(["fix", "--gpu", "off", "--show-fixes", "-q"]));
    assert_eq!(fix.code, 0, "{}", fix.stdout);
    assert!(fix.stdout.starts_with("Fixed "), "{}", fix.stdout);
    let again = run(gh(tree.path()).args(["fix", "--gpu", "off", "--show-fixes", "-q"]));
    assert_eq!(again.stdout, "No fixes applied.\n");
}
