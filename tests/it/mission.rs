//! The 40-file mission, end to end through the CLI: scan, fix, idempotence, and the fixed
//! bytes of every file (insta snapshots, reviewed by eye).

use crate::common::{copy_fixture, files_under, fixture, gh, run, unix_paths};

const MISSION: &str = "superwhisper-v6";

#[test]
fn scan_lists_every_mission_file_with_its_findings() {
    let tree = copy_fixture(MISSION);
    let out = run(gh(tree.path()).args(["scan"]));
    assert_eq!(out.code, 1, "findings exit 1; stderr: {}", out.stderr);
    insta::assert_snapshot!("scan_text", unix_paths(&out.stdout));
}

#[test]
fn scan_json_reports_forty_non_compliant_files() {
    let tree = copy_fixture(MISSION);
    let out = run(gh(tree.path()).args(["scan", "--format", "json"]));
    assert_eq!(out.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let files = doc["files"].as_array().unwrap();
    let status = |s: &str| files.iter().filter(|f| f["status"] == s).count();
    assert_eq!(status("non_compliant"), 40);
    assert_eq!(status("compliant"), 1);
    assert_eq!(status("no_gpu_code"), 2);
    for f in files.iter().filter(|f| f["status"] == "non_compliant") {
        assert!(f["phase"].is_string(), "{} is in a phase", f["path"]);
        assert!(!f["findings"].as_array().unwrap().is_empty());
    }
    let compliant = files.iter().find(|f| f["status"] == "compliant").unwrap();
    assert_eq!(compliant["path"], "tools/compliant_example.py");
    assert_eq!(compliant["phase"], serde_json::Value::Null);
    let first = &files
        .iter()
        .find(|f| f["path"] == "STT/stt_manager_robust.py")
        .unwrap()["findings"][0];
    for key in ["rule", "line", "column", "message", "fixed"] {
        assert!(first.get(key).is_some(), "finding has `{key}`");
    }
    assert_eq!(doc["summary"]["by_status"]["non_compliant"], 40);
}

#[test]
fn fix_makes_all_forty_compliant_and_a_second_fix_changes_nothing() {
    let tree = copy_fixture(MISSION);
    let root = tree.path();
    let first = run(gh(root).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(
        first.code, 0,
        "stdout: {}\nstderr: {}",
        first.stdout, first.stderr
    );
    assert!(first.stdout.contains("Fixed 40 files"), "{}", first.stdout);
    assert!(
        first
            .stdout
            .contains("40 compliant after the fix, 1 compliant, 2 without GPU code"),
        "{}",
        first.stdout
    );

    let snapshot: Vec<(String, Vec<u8>)> = files_under(root, "py")
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(root.join(&rel)).unwrap();
            (rel, bytes)
        })
        .collect();
    let second = run(gh(root).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(second.code, 0);
    assert!(second.stdout.contains("Fixed 0 files"), "{}", second.stdout);
    for (rel, bytes) in &snapshot {
        assert_eq!(
            &std::fs::read(root.join(rel)).unwrap(),
            bytes,
            "{rel} changed on the second fix"
        );
    }
    let scan = run(gh(root).args(["scan"]));
    assert_eq!(scan.code, 0, "{}", scan.stdout);
    assert!(
        scan.stdout.contains("Found 0 violations"),
        "{}",
        scan.stdout
    );
}

#[test]
fn files_outside_the_mission_stay_byte_identical() {
    let tree = copy_fixture(MISSION);
    run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    for rel in [
        "tools/compliant_example.py",
        "tools/audio_utils.py",
        "LLM/__init__.py",
    ] {
        let original = std::fs::read(fixture(MISSION).join(rel)).unwrap();
        assert_eq!(
            std::fs::read(tree.path().join(rel)).unwrap(),
            original,
            "{rel}"
        );
    }
}

#[test]
fn fixed_files_snapshots() {
    let tree = copy_fixture(MISSION);
    run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    for rel in files_under(tree.path(), "py") {
        let text = std::fs::read_to_string(tree.path().join(&rel)).unwrap();
        // Snapshots show line endings as text so CRLF and a missing final newline are visible.
        let shown = text.replace("\r\n", "␍\n").replace('\u{feff}', "<BOM>");
        let shown = if text.ends_with('\n') {
            shown
        } else {
            format!("{shown}<no final newline>")
        };
        insta::assert_snapshot!(format!("fixed__{}", rel.replace('/', "__")), shown);
    }
}

#[test]
fn byte_level_properties_survive_the_rewrite() {
    let tree = copy_fixture(MISSION);
    run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    let read = |rel: &str| std::fs::read(tree.path().join(rel)).unwrap();
    let crlf = read("LUXA_TTS/tts_handler_coqui.py");
    let lone_lf = crlf
        .windows(2)
        .filter(|w| w[1] == b'\n' && w[0] != b'\r')
        .count()
        + usize::from(crlf.first() == Some(&b'\n'));
    assert_eq!(lone_lf, 0, "every line of the CRLF file still ends in CRLF");
    assert!(
        read("TTS/tts_handler_coqui.py").starts_with("\u{feff}".as_bytes()),
        "BOM kept"
    );
    assert!(
        !read("TTS/tts_handler_piper_fixed.py").ends_with(b"\n"),
        "no final newline kept"
    );
    let tabs = String::from_utf8(read("STT/vad_manager.py")).unwrap();
    assert!(tabs.contains("\n\tdef "), "tab indentation kept");
    let shebang = String::from_utf8(read("test_cuda_debug.py")).unwrap();
    assert!(shebang.starts_with("#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n"));
}

#[test]
fn every_fixed_file_compiles_with_python() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("python3 not found: skipping the py_compile check");
        return;
    }
    let tree = copy_fixture(MISSION);
    run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    let files: Vec<String> = files_under(tree.path(), "py");
    // What `python3 -m py_compile` does, without leaving __pycache__ behind.
    let script =
        "import sys\nfor f in sys.argv[1:]:\n    compile(open(f, 'rb').read(), f, 'exec')\n";
    let out = std::process::Command::new("python3")
        .current_dir(tree.path())
        .arg("-c")
        .arg(script)
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn dry_run_prints_diffs_and_writes_nothing() {
    let tree = copy_fixture(MISSION);
    let out = run(gh(tree.path()).args(["fix", "--dry-run", "STT/vad_manager.py"]));
    assert_eq!(out.code, 1, "would change exits 1");
    assert!(
        out.stdout
            .contains("-t.cuda.set_device(1)\n+t.cuda.set_device(0)\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("Would fix 1 file"), "{}", out.stdout);
    let original = std::fs::read(fixture(MISSION).join("STT/vad_manager.py")).unwrap();
    assert_eq!(
        std::fs::read(tree.path().join("STT/vad_manager.py")).unwrap(),
        original
    );
}

#[test]
fn backup_dir_keeps_the_originals() {
    let tree = copy_fixture(MISSION);
    let backup = tempfile::tempdir().unwrap();
    let out = run(gh(tree.path())
        .args(["fix", "--gpu", "off", "--no-journal", "--backup-dir"])
        .arg(backup.path()));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let original = std::fs::read(fixture(MISSION).join("utils/gpu_manager.py")).unwrap();
    assert_eq!(
        std::fs::read(backup.path().join("utils/gpu_manager.py")).unwrap(),
        original
    );
}

#[test]
fn sarif_lists_rules_and_results() {
    let tree = copy_fixture(MISSION);
    let out = run(gh(tree.path()).args(["scan", "--format", "sarif", "STT/vad_manager.py"]));
    assert_eq!(out.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["version"], "2.1.0");
    let run = &doc["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "gpu-homogenize");
    let results = run["results"].as_array().unwrap();
    let device = results.iter().find(|r| r["ruleId"] == "GH102").unwrap();
    assert_eq!(
        device["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "STT/vad_manager.py"
    );
    assert_eq!(device["level"], "error");
}
