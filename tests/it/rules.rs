//! Every rule of the catalogue on a small tree of its own, `fixtures/rules/<CODE>/`: code a user
//! could have written, where the rule fires for the reason it exists. For each rule: `scan`
//! reports it, what `scan` prints and what `fix --diff` would change are one snapshot a
//! maintainer reads rule by rule (`it__rules__<CODE>.snap`), the fix takes out every finding of
//! the rule that has a fix and keeps every violation or finding for review that has none, a
//! second fix changes nothing, and `gpu-homogenize rule --all` states the fix safety the fixture
//! shows. A rule with no fixture fails here: a new rule comes with its tree.
//!
//! The Python fixtures whose fix changes what the program does also run, before and after the
//! fix, under the stub GPU frameworks of `fixtures/pystubs` (the mission's machine: PCI bus 0 the
//! forbidden RTX 5060 Ti, bus 1 the RTX 3090).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{copy_dir, fixture, gh, run};

const TARGET_CARD: &str = "NVIDIA GeForce RTX 3090";
const FORBIDDEN_CARD: &str = "NVIDIA GeForce RTX 5060 Ti";

/// Rules whose fixture shows another fix safety than `rule --all` states (code, why). Each entry
/// is checked to still disagree, so it goes the day the catalogue and the fix agree.
const SAFETY_DISAGREES: &[(&str, &str)] = &[];

/// The root of a rule's fixture.
fn rule_fixture(code: &str) -> PathBuf {
    fixture("rules").join(code)
}

/// A temp copy of a rule's fixture, with a `.git` so that the binary takes it as the root.
fn copy_rule(code: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&rule_fixture(code), dir.path());
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    dir
}

/// One finding of a JSON report, as the assertions need it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    path: String,
    rule: String,
    line: u64,
    /// `violation`, `review` or `info`.
    severity: String,
    /// `safe`, `unsafe`, `display_only`, or `None` for a violation whose fix is withheld or
    /// that has none.
    applicability: Option<String>,
}

impl Found {
    /// The finding carries a fix, applied by `fix` (safe) or `fix --unsafe-fixes` (unsafe).
    fn has_fix(&self) -> bool {
        matches!(self.applicability.as_deref(), Some("safe" | "unsafe"))
    }
}

/// Every finding of `scan --touchpoints --format json` (touchpoints included: GH301, GH531, …).
fn scan_findings(root: &Path) -> Vec<Found> {
    let out = run(gh(root).args(["scan", "--no-cache", "--touchpoints", "--format", "json"]));
    assert!(
        out.code == 0 || out.code == 1,
        "scan failed: {}",
        out.stderr
    );
    let doc: serde_json::Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    let mut found = Vec::new();
    for file in doc["files"].as_array().unwrap() {
        for f in file["findings"].as_array().unwrap() {
            found.push(Found {
                path: file["path"].as_str().unwrap().to_string(),
                rule: f["rule"].as_str().unwrap().to_string(),
                line: f["line"].as_u64().unwrap(),
                severity: f["severity"].as_str().unwrap().to_string(),
                applicability: f["applicability"].as_str().map(str::to_string),
            });
        }
    }
    found
}

/// A command line of the snapshot, with what it printed and its exit code.
fn shown(args: &[&str], out: &crate::common::Run) -> String {
    let mut text = format!("$ gpu-homogenize {}  (exit {})\n", args.join(" "), out.code);
    text.push_str(&out.stdout);
    if !out.stdout.is_empty() && !out.stdout.ends_with('\n') {
        text.push('\n');
    }
    for line in out.stderr.lines() {
        text.push_str(&format!("[stderr] {line}\n"));
    }
    text
}

/// The fix safety each rule states in `gpu-homogenize rule --all`, by code.
fn catalogue_safety() -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let out = run(gh(dir.path()).args(["rule", "--all"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
        .lines()
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert!(cols.len() >= 3, "not `CODE\\tNAME\\tSAFETY\\t…`: {line}");
            (cols[0].to_string(), cols[2].to_string())
        })
        .collect()
}

/// The fix safety a rule's own findings show, in the catalogue's words: a safe fix wins over an
/// unsafe one (a rule whose fix is "safe fix, one unsafe part" shows safe findings).
fn shown_safety(own: &[&Found]) -> &'static str {
    let has = |a: &str| own.iter().any(|f| f.applicability.as_deref() == Some(a));
    if has("safe") {
        "safe fix"
    } else if has("unsafe") {
        "unsafe fix"
    } else {
        "no fix"
    }
}

/// One rule on its fixture: returns the snapshot text; panics on a broken expectation.
fn check_rule(code: &str, name: &str, stated: Option<&String>) -> String {
    let root_dir = copy_rule(code);
    let root = root_dir.path();

    let before = scan_findings(root);
    let own: Vec<&Found> = before.iter().filter(|f| f.rule == code).collect();
    assert!(
        !own.is_empty(),
        "does not fire on fixtures/rules/{code}; found: {before:?}"
    );

    // The catalogue's fix safety is what the fixture shows.
    let stated = stated.unwrap_or_else(|| panic!("`rule --all` does not list {code}"));
    let stated_kind = if stated.starts_with("safe fix") {
        "safe fix"
    } else {
        stated.as_str()
    };
    let disagrees = SAFETY_DISAGREES.iter().any(|(c, _)| *c == code);
    assert_eq!(
        stated_kind != shown_safety(&own),
        disagrees,
        "`rule --all` says {stated:?}, its findings show {:?}{}",
        shown_safety(&own),
        if disagrees {
            " (listed in SAFETY_DISAGREES: they agree now, take the entry out)"
        } else {
            ""
        }
    );

    // What a user reads: the scan, then what `fix` would change (and, when an unsafe fix is
    // held back, what `--unsafe-fixes` would).
    let mut snap = format!("# fixtures/rules/{code}: {name}\n");
    let scan_args = ["scan", "--no-cache", "--touchpoints"];
    let scan = run(gh(root).args(scan_args));
    snap.push_str(&shown(&scan_args, &scan));
    let fix_args = [
        "fix",
        "--diff",
        "--gpu",
        "off",
        "--no-cache",
        "--no-journal",
    ];
    let fix = run(gh(root).args(fix_args));
    assert!(fix.code == 0 || fix.code == 1, "{}", fix.stderr);
    snap.push('\n');
    snap.push_str(&shown(&fix_args, &fix));
    if fix.stderr.contains("held back") {
        let unsafe_args = [
            "fix",
            "--diff",
            "--unsafe-fixes",
            "--gpu",
            "off",
            "--no-cache",
            "--no-journal",
        ];
        let unsafe_fix = run(gh(root).args(unsafe_args));
        snap.push('\n');
        snap.push_str(&shown(&unsafe_args, &unsafe_fix));
    }

    // The whole fix, written: every finding of the rule that has a fix is gone, every violation
    // or finding for review that has none is still reported (information may change with the
    // file: GH202 speaks of the fix being made, the validation function the fix adds imports
    // torch lazily), and a second fix changes nothing.
    let apply = run(gh(root).args([
        "fix",
        "--unsafe-fixes",
        "--gpu",
        "off",
        "--no-cache",
        "--no-journal",
    ]));
    assert!(apply.code == 0 || apply.code == 1, "{}", apply.stderr);
    let after = scan_findings(root);
    let own_after: Vec<&Found> = after.iter().filter(|f| f.rule == code).collect();
    assert!(
        own_after.iter().all(|f| !f.has_fix()),
        "a finding with a fix is left after `fix --unsafe-fixes`: {own_after:?}"
    );
    let kept = |found: &[&Found]| {
        found
            .iter()
            .filter(|f| !f.has_fix() && f.severity != "info")
            .count()
    };
    assert_eq!(
        kept(&own_after),
        kept(&own),
        "the findings without a fix are not all still reported after the fix: before {own:?}, after {own_after:?}"
    );
    let again = run(gh(root).args([
        "fix",
        "--diff",
        "--unsafe-fixes",
        "--gpu",
        "off",
        "--no-cache",
        "--no-journal",
    ]));
    assert_eq!(again.stdout, "", "a second fix would change the tree again");
    snap
}

/// `check` on every item, a few at a time (each is a handful of runs of a program): the
/// failures, each named by its item, in item order. A panic is a failure of its item only.
fn each_in_parallel<T: Sync>(
    items: &[T],
    name: impl Fn(&T) -> String + Sync,
    check: impl Fn(&T) + Sync,
) -> Vec<String> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let checked =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(item)));
                if let Err(e) = checked {
                    let why = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    failed
                        .lock()
                        .unwrap()
                        .push((i, format!("{}: {why}", name(item))));
                }
            });
        }
    });
    let mut failed = failed.into_inner().unwrap();
    failed.sort();
    failed.into_iter().map(|(_, why)| why).collect()
}

#[test]
fn every_rule_fires_on_its_fixture_and_its_fix_is_a_snapshot() {
    let safety = catalogue_safety();
    let failed = each_in_parallel(
        &gpu_homogenize::model::rules::all(),
        |rule| rule.code.to_string(),
        |rule| {
            let code = rule.code;
            assert!(
                rule_fixture(code).is_dir(),
                "no fixture; add fixtures/rules/{code}/, a small tree where {code} fires"
            );
            let snap = check_rule(code, rule.name, safety.get(code));
            insta::assert_snapshot!(code, crate::common::unix_locations(&snap));
        },
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn every_rule_fixture_is_a_rule_of_the_catalogue() {
    let codes: Vec<&str> = gpu_homogenize::model::rules::all()
        .iter()
        .map(|r| r.code)
        .collect();
    for entry in std::fs::read_dir(fixture("rules")).unwrap() {
        let entry = entry.unwrap();
        if !entry.file_type().unwrap().is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            codes.contains(&name.as_str()),
            "fixtures/rules/{name} is no rule of the catalogue"
        );
    }
    for (code, _) in SAFETY_DISAGREES {
        assert!(codes.contains(code), "SAFETY_DISAGREES names {code}");
    }
}

/// What the unfixed program does under the stubs.
#[derive(Clone, Copy)]
enum Before {
    /// Uses, or reads through NVML, the forbidden card.
    UsesForbiddenCard,
    /// CPython refuses the file.
    SyntaxError,
    /// Already lands on the target card, by luck or by design: not run.
    NotChecked,
}

/// Python fixtures run before and after `fix --unsafe-fixes` (rule, script, arguments, what the
/// original does). After the fix each must exit 0 having used the RTX 3090 only, with the
/// policy's env at its first CUDA use.
const RUNS: &[(&str, &str, &[&str], Before)] = &[
    ("GH001", "transcribe.py", &[], Before::NotChecked),
    ("GH002", "train.py", &[], Before::NotChecked),
    ("GH005", "serve.py", &[], Before::UsesForbiddenCard),
    ("GH015", "infer.py", &[], Before::SyntaxError),
    (
        "GH017",
        "transcribe.py",
        &["-g", "0"],
        Before::UsesForbiddenCard,
    ),
    ("GH101", "embed.py", &[], Before::UsesForbiddenCard),
    // A device chosen inside an assert runs, and a device compared there is renumbered.
    ("GH101", "selftest.py", &[], Before::UsesForbiddenCard),
    ("GH102", "denoise.py", &[], Before::UsesForbiddenCard),
    ("GH102", "search.py", &[], Before::UsesForbiddenCard),
    ("GH102", "pin.py", &[], Before::UsesForbiddenCard),
    ("GH103", "chat.py", &[], Before::UsesForbiddenCard),
    (
        "GH103",
        "transcribe_list.py",
        &[],
        Before::UsesForbiddenCard,
    ),
    ("GH104", "tts.py", &[], Before::UsesForbiddenCard),
    ("GH104", "serve_llm.py", &[], Before::UsesForbiddenCard),
    ("GH109", "gpu_monitor.py", &[], Before::UsesForbiddenCard),
    ("GH201", "batch_infer.py", &[], Before::UsesForbiddenCard),
    ("GH302", "cli.py", &["gpu"], Before::NotChecked),
    // The env its `__main__` block sets, after the module's import of torch.
    (
        "GH206",
        "transcriber/transcribe.py",
        &["a.wav"],
        Before::NotChecked,
    ),
];

struct PyRun {
    code: Option<i32>,
    stderr: String,
    /// The stub log: one JSON object per event (`cuda_init`, `device`, `nvml`, `forbidden`, …).
    events: Vec<serde_json::Value>,
}

fn run_python(root: &Path, script: &str, args: &[&str]) -> PyRun {
    let log = root.join(".stub-log.jsonl");
    let _ = std::fs::remove_file(&log);
    let pythonpath = std::env::join_paths([fixture("pystubs"), root.to_path_buf()]).unwrap();
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .current_dir(root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("PYTHONPATH", pythonpath)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUTF8", "1")
        .env("GPU_STUB_LOG", &log)
        .output()
        .expect("python3 runs");
    let events = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    PyRun {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        events,
    }
}

#[test]
#[cfg_attr(
    windows,
    ignore = "it runs the fixed fixtures with the Linux python3, which a Windows program under Wine cannot start"
)]
fn fixed_python_fixtures_run_on_the_target_card_only() {
    let failed = each_in_parallel(
        RUNS,
        |run| run.0.to_string(),
        |&(code, script, args, before)| {
            let root_dir = copy_rule(code);
            let root = root_dir.path();
            match before {
                Before::UsesForbiddenCard => {
                    let original = run_python(root, script, args);
                    assert!(
                        original.events.iter().any(|e| e["card"] == FORBIDDEN_CARD),
                        "the original of {script} does not touch the forbidden card: {:?}",
                        original.events
                    );
                }
                Before::SyntaxError => {
                    let original = run_python(root, script, args);
                    assert!(
                        original.code != Some(0) && original.stderr.contains("SyntaxError"),
                        "the original of {script} is not refused by CPython: {}",
                        original.stderr
                    );
                }
                Before::NotChecked => {}
            }
            let fix = run(gh(root).args([
                "fix",
                "--unsafe-fixes",
                "--gpu",
                "off",
                "--no-cache",
                "--no-journal",
            ]));
            assert!(fix.code == 0 || fix.code == 1, "{}", fix.stderr);
            let fixed = run_python(root, script, args);
            let mut wrong: Vec<String> = Vec::new();
            if fixed.code != Some(0) {
                wrong.push(format!("exit {:?}: {}", fixed.code, fixed.stderr));
            }
            let mut used = 0;
            for e in &fixed.events {
                match e["event"].as_str().unwrap_or_default() {
                    "import" => {}
                    "cuda_init" => {
                        let policy = serde_json::json!({
                            "CUDA_VISIBLE_DEVICES": "1",
                            "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                            "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:1024",
                        });
                        if e["env"] != policy || e["visible"] != serde_json::json!([TARGET_CARD]) {
                            wrong.push(format!("CUDA starts with {}", e));
                        }
                    }
                    "device" | "nvml" if e["card"] == TARGET_CARD => used += 1,
                    _ => wrong.push(format!("{e}")),
                }
            }
            if used == 0 {
                wrong.push("no card used".into());
            }
            assert!(wrong.is_empty(), "fixed {script}: {}", wrong.join("; "));
        },
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// A finding's message is one short line that says what is wrong (ruff's are ~30 characters;
/// what to do goes in its help, why in `rule CODE`), and a violation never advises marking it
/// `# noqa`: the tool knows the line is wrong, and a `noqa` there would call the file accepted
/// (findings for review, which the tool cannot settle, may say how to accept them).
#[test]
fn messages_are_short_and_no_violation_advises_noqa() {
    let mut advising = Vec::new();
    let mut long = Vec::new();
    let mut lengths = Vec::new();
    for rule in gpu_homogenize::model::rules::all() {
        let root_dir = copy_rule(rule.code);
        let out = run(gh(root_dir.path()).args(["scan", "--no-cache", "--format", "json"]));
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        for file in doc["files"].as_array().unwrap() {
            for f in file["findings"].as_array().unwrap() {
                let message = f["message"].as_str().unwrap_or_default();
                let help = f["help"].as_str().unwrap_or_default();
                if f["severity"] == "violation"
                    && (message.contains("noqa") || help.contains("noqa"))
                {
                    advising.push(format!("{}: {} {message}", file["path"], f["rule"]));
                }
                let chars = message.chars().count();
                lengths.push(chars);
                if chars > 170 || message.contains('\n') {
                    long.push(format!(
                        "{}: {} ({chars}) {message}",
                        file["path"], f["rule"]
                    ));
                }
            }
        }
    }
    assert!(advising.is_empty(), "{}", advising.join("\n"));
    assert!(long.is_empty(), "{}", long.join("\n"));
    lengths.sort_unstable();
    let median = lengths[lengths.len() / 2];
    assert!(median <= 80, "median message length {median}");
}
