//! What the journal says about each file and over time, and the verdict on a file when that
//! is joined with what a fresh scan sees now.

use std::collections::HashMap;

use serde::Serialize;

use super::coordinator::RunPoint;
use crate::journal::{FileLine, Journal, RunLine};
use crate::model::outcome::{CheckStatus, FileOutcome, FileStatus, GpuCheck};

/// One file's journalled history, folded over the real (not dry) runs in order.
#[derive(Debug, Default)]
pub struct History<'a> {
    pub fixed: bool,
    /// The latest line that left the file compliant (fixed by the tool, or found compliant).
    pub good: Option<&'a FileLine>,
    /// The latest line that left the file compliant with its CPU check passed.
    pub cpu: Option<&'a FileLine>,
    /// The latest line whose GPU check ran.
    pub gpu: Option<&'a FileLine>,
    /// A failure no later run has resolved yet (the latest of [`History::open`]).
    pub failure: Option<Failure<'a>>,
    /// Every failure still open, per host for GPU failures (a check that fails on one host is
    /// resolved by a check that passes on that host, not another's), `None` for the others.
    pub open: Vec<(Option<String>, Failure<'a>)>,
}

/// Why a file failed, and the run that said so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The file could not be read or parsed.
    InputError,
    /// `fix` refused the rewrite: it failed its CPU check, so nothing was written.
    Refused,
    /// The GPU check failed or could not run.
    GpuFailed,
    /// The GPU check left memory behind above the alert threshold.
    Leak,
}

#[derive(Debug, Clone)]
pub struct Failure<'a> {
    pub kind: FailureKind,
    pub line: &'a FileLine,
    pub message: String,
}

impl Failure<'_> {
    /// `` `fix` run 18c…-2a on 2025-01-12T09:30:00Z``: which run said so, for messages.
    pub fn run(&self) -> String {
        run_label(self.line)
    }
}

pub fn run_label(line: &FileLine) -> String {
    format!(
        "`{}` run {} on {}",
        line.stamp.command, line.stamp.run_id, line.stamp.at
    )
}

/// Per path, what the real runs of the journal did; dry runs wrote nothing, so validate nothing.
/// A failure stays open until a later run resolves that file: it passed again, or its content
/// changed and it passed.
pub fn histories(lines: &[FileLine], leak_alert_mib: f64) -> HashMap<&str, History<'_>> {
    let mut map: HashMap<&str, History> = HashMap::new();
    // In the order written (clocks of hosts may disagree): the tree's journal, then each added
    // one; a GPU failure waits for its own host, so hosts need no common order.
    for line in lines.iter().filter(|l| !l.stamp.dry_run) {
        let h = map.entry(line.path.as_str()).or_default();
        h.fixed |= line.status == FileStatus::Fixed;
        let good = matches!(line.status, FileStatus::Fixed | FileStatus::Compliant);
        if good {
            h.good = Some(line);
            if line.cpu_check == Some(CheckStatus::Passed) {
                h.cpu = Some(line);
            }
        }
        if gpu_status(line).is_some_and(|s| s != CheckStatus::Skipped) {
            h.gpu = Some(line);
        }
        let host = host_of(line);
        if let Some(failure) = failure_of(line, leak_alert_mib) {
            let key = failure.kind.on_gpu().then(|| host.clone()).flatten();
            h.open.retain(|(k, _)| *k != key);
            h.open.push((key, failure));
        } else {
            // A host's GPU failure on this content waits for that host; new content, or a
            // failure of no host, is resolved as before.
            h.open.retain(|(k, f)| {
                let applies = k.is_none() || *k == host || !same_content(line, f);
                !(applies && resolves(line, f))
            });
        }
        h.failure = h.open.last().map(|(_, f)| f.clone());
    }
    map
}

/// The host a line's GPU check ran on.
pub fn host_of(line: &FileLine) -> Option<String> {
    line.gpu_check.as_ref().and_then(|g| g.host.clone())
}

fn same_content(line: &FileLine, open: &Failure) -> bool {
    line.content_hash.is_some() && line.content_hash == open.line.content_hash
}

impl FailureKind {
    /// A failure of a GPU check, which belongs to the host it ran on.
    pub fn on_gpu(self) -> bool {
        matches!(self, FailureKind::GpuFailed | FailureKind::Leak)
    }
}

fn failure_of(line: &FileLine, leak_alert_mib: f64) -> Option<Failure<'_>> {
    let failure = |kind, message: String| {
        Some(Failure {
            kind,
            line,
            message,
        })
    };
    if line.status == FileStatus::Error {
        let why = line.error.clone().unwrap_or_else(|| "failed".into());
        return if line.cpu_check == Some(CheckStatus::Failed) {
            failure(FailureKind::Refused, why)
        } else {
            failure(FailureKind::InputError, why)
        };
    }
    let check = line.gpu_check.as_ref()?;
    match check.status {
        Some(CheckStatus::Failed | CheckStatus::Error) => failure(
            FailureKind::GpuFailed,
            format!(
                "GPU check failed: {}",
                check.message.as_deref().unwrap_or("no message")
            ),
        ),
        _ => leak(check, leak_alert_mib).and_then(|mib| {
            failure(
                FailureKind::Leak,
                format!("its GPU check leaked {mib:.0} MiB (alert above {leak_alert_mib:.0} MiB)"),
            )
        }),
    }
}

/// A later line without a failure resolves an open one when the file passed: compliant with its
/// CPU check passed; a GPU failure on the same content needs the GPU check to pass again.
fn resolves(line: &FileLine, open: &Failure) -> bool {
    if line.status == FileStatus::NoGpuCode {
        return line.content_hash != open.line.content_hash;
    }
    let passed = matches!(line.status, FileStatus::Fixed | FileStatus::Compliant)
        && line.cpu_check != Some(CheckStatus::Failed);
    let gpu_passed = gpu_status(line) == Some(CheckStatus::Passed);
    let same = line.content_hash.is_some() && line.content_hash == open.line.content_hash;
    match open.kind {
        FailureKind::GpuFailed | FailureKind::Leak if same => passed && gpu_passed,
        _ => passed,
    }
}

fn gpu_status(line: &FileLine) -> Option<CheckStatus> {
    line.gpu_check.as_ref().and_then(|g| g.status)
}

/// What the report concludes about one file in scope.
#[derive(Debug, Default)]
pub struct Verdict {
    pub compliant: bool,
    pub fixed: bool,
    /// Compliant now, and its CPU check passed on the content it has now.
    pub cpu_validated: bool,
    /// The card its current, compliant content passed the GPU check on.
    pub gpu_device: Option<String>,
    /// MiB its latest GPU check leaked, counted into the drift.
    pub drift_mib: f64,
    /// A failure still open: in the scan now, or journalled and not resolved since.
    pub failure: Option<(FailureKind, String, Option<String>)>,
    /// Compliant once (fixed or validated), edited since, and breaking the rules again.
    pub regressed: bool,
    /// Edited since it was last found compliant, still compliant: to validate again.
    pub changed: bool,
    /// How and when the file was last known good, for messages.
    pub good_when: Option<String>,
    /// The journal has never seen this file.
    pub never_checked: bool,
}

pub fn judge(now: &FileOutcome, h: Option<&History>) -> Verdict {
    let empty = History::default();
    let never_checked = h.is_none();
    let h = h.unwrap_or(&empty);
    let same = |l: &&FileLine| l.content_hash.is_some() && l.content_hash == now.content_hash;
    // Accepted (a human closed every finding) counts as done; the report counts it apart.
    let compliant = matches!(now.status, FileStatus::Compliant | FileStatus::Accepted);
    let edited = h.good.is_some_and(|g| !same(&g));
    Verdict {
        compliant,
        fixed: h.fixed,
        cpu_validated: compliant && h.cpu.filter(same).is_some(),
        gpu_device: h
            .gpu
            .filter(|l| compliant && same(l))
            .filter(|l| matches!(l.status, FileStatus::Fixed | FileStatus::Compliant))
            .and_then(|l| l.gpu_check.as_ref())
            .filter(|g| g.status == Some(CheckStatus::Passed))
            .map(device_label),
        drift_mib: h
            .gpu
            .and_then(|l| l.gpu_check.as_ref()?.leak_mib)
            .unwrap_or(0.0)
            .max(0.0),
        failure: failure_now(now, h),
        regressed: edited && now.status == FileStatus::NonCompliant,
        changed: edited && compliant,
        good_when: h.good.map(|g| {
            let how = if g.status == FileStatus::Fixed {
                "fixed"
            } else {
                "found compliant"
            };
            format!("{how} by {}", run_label(g))
        }),
        never_checked,
    }
}

/// The scan's own error first (it is about the content now), else the journal's open failure
/// with the run that recorded it.
fn failure_now(now: &FileOutcome, h: &History) -> Option<(FailureKind, String, Option<String>)> {
    if now.status == FileStatus::Error {
        let why = now
            .error
            .clone()
            .unwrap_or_else(|| "cannot be processed".into());
        // The journal names the run that hit it first, when one did.
        let run = h.failure.as_ref().map(Failure::run);
        return Some((FailureKind::InputError, why, run));
    }
    h.failure
        .as_ref()
        .map(|f| (f.kind, f.message.clone(), Some(f.run())))
}

pub fn device_label(g: &GpuCheck) -> String {
    match (&g.device_name, &g.pci_bus_id) {
        (Some(name), Some(bus)) => format!("{name} ({bus})"),
        (Some(name), None) => name.clone(),
        (None, Some(bus)) => format!("GPU {bus}"),
        (None, None) => "unnamed GPU".to_string(),
    }
}

fn leak(g: &GpuCheck, alert_mib: f64) -> Option<f64> {
    let mib = g.leak_mib.unwrap_or(0.0);
    (g.status == Some(CheckStatus::Leak) || mib > alert_mib).then_some(mib)
}

/// One point per journalled run: how many files the journal knew compliant after it; first,
/// when the first run fixed files, the tree as it found them.
pub fn burndown(journal: &Journal) -> Vec<RunPoint> {
    let mut by_run: HashMap<&str, Vec<&FileLine>> = HashMap::new();
    for line in &journal.files {
        by_run
            .entry(line.stamp.run_id.as_str())
            .or_default()
            .push(line);
    }
    let mut known: HashMap<&str, bool> = HashMap::new();
    // When the journal's first run fixed files, the tree as that run found it is the starting
    // point: without it the line would start after the fixes, flat.
    let start = journal.runs.first().and_then(|run| {
        let lines = by_run.get(run.stamp.run_id.as_str())?;
        lines
            .iter()
            .any(|l| l.status == FileStatus::Fixed)
            .then(|| {
                let found = lines
                    .iter()
                    .filter(|l| l.status == FileStatus::Compliant)
                    .count();
                RunPoint {
                    as_found: true,
                    ..point(run, found)
                }
            })
    });
    let runs = journal.runs.iter().map(|run| {
        for line in by_run.get(run.stamp.run_id.as_str()).into_iter().flatten() {
            match line.status {
                FileStatus::Compliant | FileStatus::Fixed => known.insert(&line.path, true),
                FileStatus::NoGpuCode | FileStatus::Skipped => known.remove(line.path.as_str()),
                _ => known.insert(&line.path, false),
            };
        }
        point(run, known.values().filter(|&&ok| ok).count())
    });
    start.into_iter().chain(runs).collect()
}

fn point(run: &RunLine, compliant: usize) -> RunPoint {
    RunPoint {
        run_id: run.stamp.run_id.clone(),
        at: run.stamp.at.clone(),
        command: run.stamp.command.clone(),
        dry_run: run.stamp.dry_run,
        files: run.files,
        compliant,
        as_found: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(run: &str, path: &str, status: &str, hash: &str, gpu: serde_json::Value) -> FileLine {
        serde_json::from_value(json!({
            "schema": 1, "run_id": run, "at": format!("at-{run}"), "tool_version": "0.1.0",
            "command": "fix", "path": path, "status": status, "cpu_check": "passed",
            "content_hash": hash, "gpu_check": gpu,
        }))
        .unwrap()
    }

    fn now(path: &str, status: FileStatus, hash: &str) -> FileOutcome {
        let mut o = FileOutcome::new(std::path::Path::new(path), path);
        o.status = status;
        o.content_hash = Some(hash.into());
        o
    }

    fn passed_on(device: &str) -> serde_json::Value {
        json!({"status": "passed", "device_name": device, "pci_bus_id": "00000000:02:00.0", "leak_mib": 0.0})
    }

    #[test]
    fn a_validation_holds_only_for_the_content_it_saw() {
        let lines = [line("r1", "a.py", "fixed", "h1", passed_on("RTX 3090"))];
        let map = histories(&lines, 100.0);
        let same = judge(&now("a.py", FileStatus::Compliant, "h1"), map.get("a.py"));
        assert!(same.compliant && same.fixed && same.cpu_validated);
        assert_eq!(
            same.gpu_device.as_deref(),
            Some("RTX 3090 (00000000:02:00.0)")
        );
        assert!(!same.changed && !same.regressed);
        let edited = judge(&now("a.py", FileStatus::Compliant, "h2"), map.get("a.py"));
        assert!(edited.changed && !edited.cpu_validated && edited.gpu_device.is_none());
        let broken = judge(
            &now("a.py", FileStatus::NonCompliant, "h3"),
            map.get("a.py"),
        );
        assert!(broken.regressed && broken.fixed && !broken.changed);
    }

    #[test]
    fn leaks_and_failed_gpu_checks_are_reported() {
        let leak = json!({"status": "leak", "device_name": "RTX 3090", "leak_mib": 180.0});
        let failed = json!({"status": "failed", "message": "device 0 is the RTX 5060 Ti"});
        let lines = [
            line("r1", "a.py", "compliant", "h1", leak),
            line("r1", "b.py", "compliant", "h2", failed),
        ];
        let map = histories(&lines, 100.0);
        let a = judge(&now("a.py", FileStatus::Compliant, "h1"), map.get("a.py"));
        assert_eq!(a.drift_mib, 180.0);
        assert_eq!(a.failure.as_ref().map(|f| f.0), Some(FailureKind::Leak));
        assert!(a.gpu_device.is_none());
        let b = judge(&now("b.py", FileStatus::Compliant, "h2"), map.get("b.py"));
        let (kind, message, run) = b.failure.unwrap();
        assert_eq!(kind, FailureKind::GpuFailed);
        assert_eq!(message, "GPU check failed: device 0 is the RTX 5060 Ti");
        assert_eq!(run.as_deref(), Some("`fix` run r1 on at-r1"));
    }

    fn refused(run: &str, hash: &str) -> FileLine {
        let mut l = line(run, "a.py", "error", hash, json!(null));
        l.cpu_check = Some(CheckStatus::Failed);
        l.error = Some("rewrite refused by the CPU check: prologue moved".into());
        l
    }

    #[test]
    fn a_failure_stays_until_a_later_run_passes_the_file() {
        let mut check = line("r2", "a.py", "non_compliant", "h1", json!(null));
        check.cpu_check = None;
        let lines = [refused("r1", "h1"), check];
        let map = histories(&lines, 100.0);
        let v = judge(
            &now("a.py", FileStatus::NonCompliant, "h1"),
            map.get("a.py"),
        );
        assert_eq!(v.failure.map(|f| f.0), Some(FailureKind::Refused));
        let lines = [
            refused("r1", "h1"),
            line("r2", "a.py", "compliant", "h2", json!(null)),
        ];
        let map = histories(&lines, 100.0);
        let v = judge(&now("a.py", FileStatus::Compliant, "h2"), map.get("a.py"));
        assert!(v.failure.is_none() && v.cpu_validated);
    }

    #[test]
    fn a_gpu_failure_on_the_same_content_needs_the_gpu_to_pass_again() {
        let failed = json!({"status": "failed", "message": "wrong card"});
        let skipped = json!({"status": "skipped", "message": "--gpu off"});
        let lines = [
            line("r1", "a.py", "compliant", "h1", failed.clone()),
            line("r2", "a.py", "compliant", "h1", skipped),
        ];
        let map = histories(&lines, 100.0);
        let v = judge(&now("a.py", FileStatus::Compliant, "h1"), map.get("a.py"));
        assert_eq!(v.failure.map(|f| f.0), Some(FailureKind::GpuFailed));
        let lines = [
            line("r1", "a.py", "compliant", "h1", failed),
            line("r2", "a.py", "compliant", "h1", passed_on("RTX 3090")),
        ];
        let map = histories(&lines, 100.0);
        let v = judge(&now("a.py", FileStatus::Compliant, "h1"), map.get("a.py"));
        assert!(v.failure.is_none() && v.gpu_device.is_some());
    }

    #[test]
    fn gpu_validated_only_when_compliant_on_the_validated_content() {
        let lines = [line(
            "r1",
            "a.py",
            "non_compliant",
            "h1",
            passed_on("RTX 3090"),
        )];
        let map = histories(&lines, 100.0);
        let v = judge(
            &now("a.py", FileStatus::NonCompliant, "h1"),
            map.get("a.py"),
        );
        assert!(v.gpu_device.is_none());
    }

    #[test]
    fn dry_runs_validate_nothing() {
        let mut dry = line("r1", "a.py", "would_fix", "h1", json!(null));
        dry.stamp.dry_run = true;
        let map = histories(std::slice::from_ref(&dry), 100.0);
        let v = judge(
            &now("a.py", FileStatus::NonCompliant, "h1"),
            map.get("a.py"),
        );
        assert!(!v.fixed && !v.cpu_validated && v.gpu_device.is_none() && v.failure.is_none());
    }

    #[test]
    fn the_burndown_remembers_files_a_partial_run_did_not_see() {
        let run = |id: &str| -> RunLine {
            serde_json::from_value(json!({"schema": 1, "run_id": id, "at": "t", "tool_version": "0.1.0", "command": "fix"}))
                .unwrap()
        };
        let journal = Journal {
            files: vec![
                line("r1", "a.py", "fixed", "h", json!(null)),
                line("r1", "b.py", "fixed", "h", json!(null)),
                line("r2", "a.py", "non_compliant", "h", json!(null)),
            ],
            runs: vec![run("r1"), run("r2")],
            warnings: Vec::new(),
        };
        let points: Vec<(usize, bool)> = burndown(&journal)
            .iter()
            .map(|p| (p.compliant, p.as_found))
            .collect();
        // The tree as r1 found it (both files non-compliant), after r1, after r2.
        assert_eq!(points, [(0, true), (2, false), (1, false)]);
    }

    #[test]
    fn the_burndown_starts_where_the_first_fix_found_the_tree() {
        let run = |id: &str, command: &str| -> RunLine {
            serde_json::from_value(json!({"schema": 1, "run_id": id, "at": "t", "tool_version": "0.1.0", "command": command}))
                .unwrap()
        };
        let lines = |id: &str| {
            vec![
                line(id, "a.py", "compliant", "h", json!(null)),
                line(id, "b.py", "fixed", "h", json!(null)),
                line(id, "c.py", "non_compliant", "h", json!(null)),
            ]
        };
        let journal = Journal {
            files: lines("r1"),
            runs: vec![run("r1", "fix")],
            warnings: Vec::new(),
        };
        let points: Vec<(usize, bool)> = burndown(&journal)
            .iter()
            .map(|p| (p.compliant, p.as_found))
            .collect();
        assert_eq!(points, [(1, true), (2, false)]);
        // A first run that fixed nothing found the tree as it left it: no starting point.
        let mut checked = lines("r0");
        checked[1].status = FileStatus::NonCompliant;
        let journal = Journal {
            files: checked,
            runs: vec![run("r0", "check")],
            warnings: Vec::new(),
        };
        assert_eq!(burndown(&journal).len(), 1);
    }
}
