//! `report` driven like a coordinator drives the mission on a copy of the 40-file fixture:
//! nothing done, the 13 core modules fixed, everything fixed, one file broken again by hand.
//! Also: what a damaged, foreign or missing journal does to the report.

use crate::common::{self, copy_dir};

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/superwhisper-v6");
const CORE: &str = "TTS/tts_handler_coqui.py";

/// A scratch copy of the fixture, named like the original so the report's title is stable.
fn mission() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("superwhisper-v6");
    copy_dir(Path::new(FIXTURE), &tree);
    (dir, tree)
}

fn tool(tree: &Path, args: &[&str]) -> std::process::Output {
    crate::common::output(
        Command::cargo_bin("gpu-homogenize")
            .unwrap()
            .current_dir(tree)
            .args(args),
    )
}

/// The files of the first phase, read from the fixture's config.
fn core_files(tree: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(tree.join("gpu-homogenize.toml")).unwrap();
    let config: toml::Value = toml::from_str(&text).unwrap();
    config["phase"][0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

fn fix(tree: &Path, paths: &[String]) -> String {
    let mut args = vec!["fix", "--gpu", "off"];
    args.extend(paths.iter().map(String::as_str));
    let out = tool(tree, &args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn report_json(tree: &Path) -> (Value, String) {
    let out = tool(tree, &["report", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = serde_json::from_slice(&out.stdout).unwrap();
    (json, String::from_utf8(out.stderr).unwrap())
}

fn phase<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name}"))
}

/// (compliant, total) of a phase, or of `overall` / `mission`.
fn score(report: &Value, name: &str) -> (u64, u64) {
    let counts = match name {
        "overall" | "mission" => &report[name],
        _ => phase(report, name),
    };
    (
        counts["compliant"].as_u64().unwrap(),
        counts["total"].as_u64().unwrap(),
    )
}

fn runs(report: &Value) -> Vec<u64> {
    let runs = report["runs"].as_array().unwrap();
    runs.iter()
        .map(|r| r["compliant"].as_u64().unwrap())
        .collect()
}

fn break_by_hand(tree: &Path) {
    let path = tree.join(CORE);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#"to(device="cuda:0")"#));
    std::fs::write(
        &path,
        text.replace(r#"to(device="cuda:0")"#, r#"to(device="cuda:1")"#),
    )
    .unwrap();
}

#[test]
fn the_mission_as_a_coordinator_sees_it() {
    let (_dir, tree) = mission();

    let (r, stderr) = report_json(&tree);
    assert!(stderr.contains("no journal yet"), "{stderr}");
    assert_eq!(score(&r, "mission"), (0, 40));
    assert_eq!(score(&r, "Core modules"), (0, 13));
    assert_eq!(score(&r, "Test scripts"), (0, 27));
    assert_eq!(score(&r, "Other"), (1, 1), "tools/compliant_example.py");
    assert_eq!(score(&r, "overall"), (1, 41));
    assert_eq!(
        phase(&r, "Core modules")["remaining"]
            .as_array()
            .unwrap()
            .len(),
        13
    );
    assert!(runs(&r).is_empty());

    let stdout = fix(&tree, &core_files(&tree));
    assert!(
        stdout.contains("Core modules: 13/13 compliant (100%)\n"),
        "{stdout}"
    );
    assert!(tree.join(".gpu-homogenize/journal.jsonl").is_file());
    let (r, stderr) = report_json(&tree);
    assert_eq!(stderr, "");
    assert_eq!(score(&r, "Core modules"), (13, 13));
    assert_eq!(phase(&r, "Core modules")["fixed"], 13);
    assert_eq!(phase(&r, "Core modules")["cpu_validated"], 13);
    assert_eq!(phase(&r, "Core modules")["status"], "done");
    assert_eq!(score(&r, "Test scripts"), (0, 27));
    assert_eq!(score(&r, "mission"), (13, 40));
    // The burndown starts from the tree as that fix found it: none of the 13 compliant.
    assert_eq!(runs(&r), [0, 13]);
    assert_eq!(r["runs"][0]["as_found"], true);
    assert!(r["runs"][1].get("as_found").is_none());

    let stdout = fix(&tree, &[".".to_string()]);
    assert!(
        stdout.contains("Test scripts: 27/27 compliant (100%)\n"),
        "{stdout}"
    );
    let (r, _) = report_json(&tree);
    assert_eq!(score(&r, "mission"), (40, 40));
    assert_eq!(score(&r, "overall"), (41, 41));
    assert_eq!(r["overall"]["fixed"], 40);
    assert_eq!(r["overall"]["cpu_validated"], 41);
    assert_eq!(r["overall"]["status"], "done");
    assert_eq!(runs(&r), [0, 13, 41]);
    assert_eq!(r["alerts"], Value::Array(Vec::new()));

    break_by_hand(&tree);
    let (r, _) = report_json(&tree);
    assert_eq!(score(&r, "mission"), (39, 40));
    assert_eq!(score(&r, "Core modules"), (12, 13));
    let core = phase(&r, "Core modules");
    assert_eq!(
        (core["regressed"].as_u64(), core["status"].as_str()),
        (Some(1), Some("attention"))
    );
    assert_eq!(core["remaining"][0]["path"], CORE);
    assert_eq!(core["remaining"][0]["rules"], serde_json::json!(["GH101"]));
    assert_eq!(r["alerts"].as_array().unwrap().len(), 1);
    assert_eq!(r["alerts"][0]["kind"], "regressed");
    assert_eq!(r["alerts"][0]["path"], CORE);

    let out = tool(&tree, &["report"]);
    insta::assert_snapshot!(
        "mission_regressed",
        redact(&String::from_utf8(out.stdout).unwrap(), &tree)
    );

    let html = tree.join("report.html");
    tool(
        &tree,
        &[
            "report",
            "--format",
            "html",
            "--out",
            html.to_str().unwrap(),
        ],
    );
    check_html(&std::fs::read_to_string(html).unwrap());
}

/// Stable text for a snapshot: no scratch path, no clock.
fn redact(text: &str, tree: &Path) -> String {
    let text = text.replace(tree.to_str().unwrap(), "[ROOT]");
    // Run ids: ` run <hex>-<hex> on`.
    let text = text
        .split(" run ")
        .enumerate()
        .map(|(i, part)| match part.split_once(' ') {
            Some((id, rest))
                if i > 0
                    && id.contains('-')
                    && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') =>
            {
                format!("[RUN] {rest}")
            }
            _ => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" run ");
    let shape = "0000-00-00T00:00:00.000Z".as_bytes();
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < text.len() {
        let fits = bytes.len() >= i + shape.len()
            && shape.iter().zip(&bytes[i..]).all(|(s, b)| match s {
                b'0' => b.is_ascii_digit(),
                s => s == b,
            });
        if fits {
            out.push_str("[TIME]");
            i += shape.len();
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Well-formed (every tag closed, in order; every `&` an entity) and self-contained.
fn check_html(html: &str) {
    for banned in ["http://", "https://", "src=", "<script", "<link", "url("] {
        assert!(!html.contains(banned), "external resource: {banned}");
    }
    let mut open: Vec<&str> = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').expect("unclosed <") + start;
        let tag = &rest[start + 1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') || tag.ends_with('/') {
            continue;
        }
        let name = tag.split_whitespace().next().unwrap();
        match name.strip_prefix('/') {
            Some(closing) => assert_eq!(open.pop(), Some(closing), "misnested </{closing}>"),
            None => open.push(name),
        }
    }
    assert!(open.is_empty(), "never closed: {open:?}");
    for (i, _) in html.match_indices('&') {
        let entity = &html[i..html[i..].find(';').map_or(html.len(), |e| i + e + 1)];
        assert!(
            ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].contains(&entity),
            "bare &: {entity}"
        );
    }
    assert_eq!(
        html.matches("<div class=\"phase\">").count(),
        4,
        "3 phases and overall"
    );
    assert!(
        html.contains("<svg") && html.contains("<polyline"),
        "burndown chart"
    );
    assert!(html.contains("12/13 compliant (92.3%)"));
}

/// A tree after the first mission step, with its journal's path.
fn after_core_fix() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (dir, tree) = mission();
    fix(&tree, &core_files(&tree));
    let journal = tree.join(".gpu-homogenize/journal.jsonl");
    (dir, tree, journal)
}

#[test]
fn a_corrupted_line_and_a_torn_last_line_are_warnings() {
    let (_dir, tree, journal) = after_core_fix();
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "{\"type\": \"file\", garbage";
    let damaged = format!("{}\n{{\"type\":\"run\",\"sch", lines.join("\n"));
    std::fs::write(&journal, damaged).unwrap();
    let (r, stderr) = report_json(&tree);
    assert!(
        stderr.contains("journal.jsonl:4: unreadable line skipped"),
        "{stderr}"
    );
    assert!(
        stderr.contains("journal.jsonl:15: incomplete last line"),
        "{stderr}"
    );
    assert_eq!(r["warnings"].as_array().unwrap().len(), 2);
    assert_eq!(
        score(&r, "Core modules"),
        (13, 13),
        "the scan decides compliance"
    );
    assert_eq!(phase(&r, "Core modules")["fixed"], 12, "one line lost");
    assert_eq!(runs(&r), [0, 12]);
}

// Unix only: links, FIFOs, modes or signals made through unix calls.
#[cfg(unix)]
#[test]
fn a_journal_from_another_version_is_read_with_a_warning() {
    let (_dir, tree, journal) = after_core_fix();
    let version = format!("\"tool_version\":\"{}\"", env!("CARGO_PKG_VERSION"));
    let text = std::fs::read_to_string(&journal).unwrap();
    let old = text.replace(&version, "\"tool_version\":\"0.0.9\"");
    let future = "{\"type\":\"file\",\"schema\":7,\"path\":\"a.py\"}\n";
    std::fs::write(&journal, format!("{old}{future}")).unwrap();
    let (r, stderr) = report_json(&tree);
    assert!(
        stderr.contains("14 lines (from line 1) written by gpu-homogenize 0.0.9"),
        "{stderr}"
    );
    assert!(
        stderr.contains("journal.jsonl:15: unreadable line skipped: journal schema 7"),
        "{stderr}"
    );
    assert_eq!(phase(&r, "Core modules")["fixed"], 13);
    assert_eq!(phase(&r, "Core modules")["cpu_validated"], 13);
}

/// Every entry under `root` with its kind, size, mode, mtime and bytes: what a command that
/// must write nothing has to leave as it was.
fn listing(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let under = path.strip_prefix(root).unwrap();
            let rel = under.display().to_string();
            // The content cache is the one thing a run that writes nothing keeps.
            if under.starts_with(Path::new(".gpu-homogenize").join("cache")) {
                continue;
            }
            if under == Path::new(".gpu-homogenize") {
                dirs.push(path);
                continue;
            }
            #[cfg(unix)]
            let mut what = {
                use std::os::unix::fs::MetadataExt;
                format!(
                    "{:o} {} {} {}",
                    meta.mode(),
                    meta.len(),
                    meta.mtime(),
                    meta.mtime_nsec()
                )
            };
            #[cfg(windows)]
            let mut what = {
                use std::os::windows::fs::MetadataExt;
                format!(
                    "{:x} {} {}",
                    meta.file_attributes(),
                    meta.len(),
                    meta.last_write_time()
                )
            };
            if meta.is_dir() {
                dirs.push(path);
            } else {
                what.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
            }
            out.push((rel, what));
        }
    }
    out.sort();
    out
}

#[test]
fn dry_runs_and_scans_leave_the_tree_byte_identical() {
    let (_dir, tree) = mission();
    let before = listing(&tree);
    let out = tool(&tree, &["fix", "--dry-run"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("Core modules: 0/13 compliant (0%), 13 would fix\n"),
        "{stdout}"
    );
    assert_eq!(listing(&tree), before, "fix --dry-run wrote something");
    let out = tool(&tree, &["scan", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(listing(&tree), before, "scan wrote something");
    assert!(!tree.join(".gpu-homogenize/journal.jsonl").exists());
    let (r, _) = report_json(&tree);
    assert_eq!(r["runs"].as_array().unwrap().len(), 0);
}

#[test]
fn no_journal_writes_nothing_and_a_subdirectory_journals_at_the_root() {
    let (_dir, tree) = mission();
    tool(
        &tree,
        &["fix", "--gpu", "off", "--no-journal", "test_cuda.py"],
    );
    assert!(!tree.join(".gpu-homogenize/journal.jsonl").exists());
    let out = tool(&tree.join("tests"), &["check", "--gpu", "off", "."]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the tests/ files are not fixed yet"
    );
    assert!(tree.join(".gpu-homogenize/journal.jsonl").is_file());
    assert!(!tree.join("tests/.gpu-homogenize").exists());
    let (r, _) = report_json(&tree.join("tests"));
    assert_eq!(runs(&r), [0]);
    assert_eq!(r["runs"][0]["files"], 9);
}

#[test]
fn a_root_that_is_not_a_directory_is_an_error() {
    let (_dir, tree) = mission();
    let out = tool(&tree, &["report", "no-such-dir"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr,
        "error: no-such-dir: not a directory; give the root of the tree\n"
    );
    assert!(out.stdout.is_empty());
}

fn markdown(tree: &Path) -> String {
    let out = tool(tree, &["report"]);
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8(out.stdout).unwrap()
}

fn alert_kinds(report: &Value) -> Vec<(String, String)> {
    report["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap().to_string(),
                a["path"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

const OTHER_CORE: &str = "STT/vad_manager.py";

#[test]
fn an_input_error_stays_failing_after_an_unrelated_check_until_the_file_passes() {
    let (_dir, tree) = mission();
    let path = tree.join(CORE);
    let good = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{good}\nif (:\n")).unwrap();
    let out = tool(&tree, &["fix", "--gpu", "off"]);
    assert_eq!(out.status.code(), Some(2), "an input error");
    let (r, _) = report_json(&tree);
    assert_eq!(r["mission"]["status"], "attention");
    assert_eq!(phase(&r, "Core modules")["errors"], 1);
    assert_eq!(alert_kinds(&r), [("failing".into(), CORE.into())]);
    assert!(
        r["alerts"][0]["run"]
            .as_str()
            .unwrap()
            .starts_with("`fix` run "),
        "{}",
        r["alerts"][0]
    );
    let remaining = &phase(&r, "Core modules")["remaining"][0];
    assert_eq!(
        (&remaining["path"], &remaining["reason"]),
        (&Value::from(CORE), &Value::from("input_error"))
    );

    let out = tool(&tree, &["check", "--gpu", "off", OTHER_CORE]);
    assert_eq!(out.status.code(), Some(0));
    let (r, _) = report_json(&tree);
    assert_eq!(
        r["mission"]["status"], "attention",
        "the error is still open"
    );
    assert_eq!(phase(&r, "Core modules")["errors"], 1);
    let md = markdown(&tree);
    assert!(md.contains("— ⚠️ needs attention\n"), "{md}");
    assert!(!md.contains("No alerts"), "{md}");
    // The answer first: the status, a line naming the alerts, the phase table, then the alerts.
    let pointer = md
        .find("alert needs attention** (failures, leaks or regressions)")
        .expect(&md);
    let table = md.find("## Progress by phase").unwrap();
    assert!(pointer < table, "{md}");
    assert!(table < md.find("## Alerts").unwrap(), "{md}");
    let html = String::from_utf8(tool(&tree, &["report", "--format", "html"]).stdout).unwrap();
    let pointer = html.find("alert needs attention</a>").expect(&html);
    let table = html.find("<h2>Progress by phase</h2>").unwrap();
    assert!(pointer < table && table < html.find("<h2 id=\"alerts\">Alerts</h2>").unwrap());

    std::fs::write(&path, &good).unwrap();
    fix(&tree, &[CORE.to_string()]);
    let (r, _) = report_json(&tree);
    assert_eq!(phase(&r, "Core modules")["errors"], 0);
    assert_eq!(r["mission"]["status"], "done");
    assert_eq!(r["alerts"], Value::Array(Vec::new()));
    assert!(markdown(&tree).contains("— ✅ done\n"));
}

/// A `fix` run that refused to rewrite `path` (its CPU check failed), as `fix` journals it.
fn journal_refusal(tree: &Path, path: &str) {
    let bytes = std::fs::read(tree.join(path)).unwrap();
    let stamp = serde_json::json!({
        "schema": 1, "run_id": "refusal-1", "at": "2025-01-12T09:30:00.000Z",
        "tool_version": env!("CARGO_PKG_VERSION"), "command": "fix",
    });
    let mut file = stamp.clone();
    file["type"] = "file".into();
    file["path"] = path.into();
    file["phase"] = "Core modules".into();
    file["status"] = "error".into();
    file["cpu_check"] = "failed".into();
    file["content_hash"] = gpu_homogenize::engine::process::content_hash(&bytes).into();
    file["error"] = "rewrite refused by the CPU check: the prologue moved".into();
    let mut run = stamp;
    run["type"] = "run".into();
    let text = format!("{file}\n{run}\n");
    std::fs::create_dir_all(tree.join(".gpu-homogenize")).unwrap();
    let target = tree.join(".gpu-homogenize/journal.jsonl");
    // Appended, never read and rewritten: under Wine the journal of the run that just ended
    // can still be held for a moment (a sharing violation), and a failed read must not
    // become an empty journal. A refused open is retried, then fails the test.
    use std::io::Write;
    let mut tries = 0;
    let mut journal = loop {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&target)
        {
            Ok(file) => break file,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("{}: {e}", target.display()),
        }
    };
    journal.write_all(text.as_bytes()).unwrap();
}

#[test]
fn a_refused_rewrite_stays_until_the_file_is_fixed_by_hand_and_checked() {
    let (_dir, tree) = mission();
    fix(&tree, &[".".to_string()]);
    std::fs::write(
        tree.join(CORE),
        std::fs::read_to_string(fixture_path(CORE)).unwrap(),
    )
    .unwrap();
    journal_refusal(&tree, CORE);
    let out = tool(&tree, &["check", "--gpu", "off"]);
    assert_eq!(out.status.code(), Some(1), "the file is not compliant");
    let (r, _) = report_json(&tree);
    assert_eq!(r["mission"]["status"], "attention");
    let core = phase(&r, "Core modules");
    assert_eq!(
        (core["errors"].as_u64(), core["status"].as_str()),
        (Some(1), Some("attention"))
    );
    let remaining = &core["remaining"][0];
    assert_eq!(remaining["reason"], "refused");
    assert_eq!(
        remaining["run"],
        "`fix` run refusal-1 on 2025-01-12T09:30:00.000Z"
    );
    let md = markdown(&tree);
    assert!(md.contains(&format!(
        "1. `{CORE}` **regressed**: rewrite refused: rewrite refused by the CPU check: the prologue moved (`fix` run refusal-1 on 2025-01-12T09:30:00.000Z); breaks GH"
    )), "{md}");
    assert!(alert_kinds(&r).contains(&("failing".into(), CORE.into())));

    // Fixed by hand (here: by the tool, unjournalled), then checked: resolved.
    let out = tool(&tree, &["fix", "--gpu", "off", "--no-journal", CORE]);
    assert_eq!(out.status.code(), Some(0));
    let (r, _) = report_json(&tree);
    assert_eq!(r["mission"]["status"], "attention", "not checked since");
    let out = tool(&tree, &["check", "--gpu", "off", CORE]);
    assert_eq!(out.status.code(), Some(0));
    let (r, _) = report_json(&tree);
    assert_eq!(phase(&r, "Core modules")["errors"], 0);
    assert_eq!(r["mission"]["status"], "done");
    assert_eq!(r["mission"]["cpu_validated"], 40);
}

#[test]
fn a_compliant_file_never_checked_remains_and_says_so() {
    let (_dir, tree) = mission();
    fix(&tree, &[".".to_string()]);
    let (r, _) = report_json(&tree);
    let other = phase(&r, "Other");
    assert_eq!(other["status"], "done");
    // The mission's multi-GPU code adapts to the visible cards (GH201, information): nothing
    // is left for a person.
    assert_eq!(r["review"].as_array().unwrap().len(), 0);
    let hand_made = tree.join("STT/new_module.py");
    std::fs::write(&hand_made, std::fs::read(tree.join(OTHER_CORE)).unwrap()).unwrap();
    let (r, _) = report_json(&tree);
    let other = phase(&r, "Other");
    assert_eq!(other["status"], "in_progress");
    assert_eq!(other["remaining"][0]["path"], "STT/new_module.py");
    assert_eq!(other["remaining"][0]["reason"], "never_checked");
}

fn fixture_path(rel: &str) -> PathBuf {
    Path::new(FIXTURE).join(rel)
}

/// The HTML page on a narrow screen: a viewport, the status column next to the phase (and the
/// table and chart scrolling sideways rather than losing columns or shrinking labels), alerts
/// grouped by kind with all but the first three of a kind folded away.
#[test]
fn the_html_page_fits_a_phone_and_folds_long_alert_lists() {
    let (_dir, tree) = mission();
    fix(&tree, &[".".to_string()]);
    assert_eq!(
        tool(&tree, &["check", "--gpu", "off"]).status.code(),
        Some(0)
    );
    let edited: Vec<String> = common::files_under(&tree, "py")
        .into_iter()
        .filter(|f| f.starts_with("test_"))
        .take(5)
        .collect();
    for file in &edited {
        let path = tree.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}# edited by hand\n")).unwrap();
    }
    let out = tool(&tree, &["report", "--format", "html"]);
    let html = String::from_utf8(out.stdout).unwrap();
    check_html_shape(&html);
    assert!(
        html.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>")
    );
    assert!(html.contains(
        "<div class=\"scroll\"><table>\n<tr><th>Phase</th><th>Status</th><th>Files</th>"
    ));
    assert!(html.contains("<h2>Burndown</h2>\n<div class=\"scroll\">\n<svg class=\"burndown\""));
    assert!(
        html.contains("<h3><span class=\"kind\">changed by hand</span> (5)</h3>"),
        "{html}"
    );
    assert!(html.contains("<details><summary>2 more changed by hand alerts</summary>"));
    let folded = html.split("<details>").nth(1).unwrap();
    let folded = folded.split("</details>").next().unwrap();
    assert_eq!(folded.matches("<li>").count(), 2, "{folded}");
}

/// Well-formed and self-contained (the mission-independent half of `check_html`).
fn check_html_shape(html: &str) {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').expect("unclosed <") + start;
        let tag = &rest[start + 1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') || tag.ends_with('/') {
            continue;
        }
        let name = tag.split_whitespace().next().unwrap();
        match name.strip_prefix('/') {
            Some(closing) => assert_eq!(open.pop(), Some(closing), "misnested </{closing}>"),
            None => open.push(name),
        }
    }
    assert!(open.is_empty(), "never closed: {open:?}");
}
