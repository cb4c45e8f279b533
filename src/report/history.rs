//! What the journal says about each file and over time, and the verdict on a file when that
//! is joined with what a fresh scan sees now.

use std::collections::HashMap;

use super::coordinator::RunPoint;
use crate::journal::{FileLine, Journal, RunLine};
use crate::outcome::{CheckStatus, FileOutcome, FileStatus, GpuCheck};

/// One file's journalled history, folded over the real (not dry) runs in order.
#[derive(Debug, Default)]
pub struct History<'a> {
    pub fixed: bool,
    /// The latest line that left the file compliant (fixed by the tool, or found compliant).
    pub good: Option<&'a FileLine>,
    /// The latest line with a CPU check.
    pub cpu: Option<&'a FileLine>,
    /// The latest line whose GPU check ran.
    pub gpu: Option<&'a FileLine>,
    pub last: Option<&'a FileLine>,
}

/// Per path, what the real runs of the journal did; dry runs wrote nothing, so validate nothing.
pub fn histories(lines: &[FileLine]) -> HashMap<&str, History<'_>> {
    let mut map: HashMap<&str, History> = HashMap::new();
    for line in lines.iter().filter(|l| !l.stamp.dry_run) {
        let h = map.entry(line.path.as_str()).or_default();
        h.fixed |= line.status == FileStatus::Fixed;
        if matches!(line.status, FileStatus::Fixed | FileStatus::Compliant) {
            h.good = Some(line);
        }
        if line.cpu_check.is_some() {
            h.cpu = Some(line);
        }
        if gpu_status(line).is_some_and(|s| s != CheckStatus::Skipped) {
            h.gpu = Some(line);
        }
        h.last = Some(line);
    }
    map
}

fn gpu_status(line: &FileLine) -> Option<CheckStatus> {
    line.gpu_check.as_ref().and_then(|g| g.status)
}

/// What the report concludes about one file in scope.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    pub compliant: bool,
    pub fixed: bool,
    pub cpu_validated: bool,
    /// The card its current content passed the GPU check on.
    pub gpu_device: Option<String>,
    /// MiB its latest GPU check leaked, when that is a leak.
    pub leak_mib: Option<f64>,
    pub error: Option<String>,
    /// Compliant once (fixed or validated), edited since, and breaking the rules again.
    pub regressed: bool,
    /// Edited since it was last found compliant, still compliant: to validate again.
    pub changed: bool,
    /// How and when the file was last known good, for messages.
    pub good_when: Option<String>,
}

pub fn judge(now: &FileOutcome, h: Option<&History>, leak_alert_mib: f64) -> Verdict {
    let empty = History::default();
    let h = h.unwrap_or(&empty);
    let same = |l: &&FileLine| l.content_hash.is_some() && l.content_hash == now.content_hash;
    let compliant = now.status == FileStatus::Compliant;
    let edited = h.good.is_some_and(|g| !same(&g));
    Verdict {
        compliant,
        fixed: h.fixed,
        cpu_validated: h
            .cpu
            .filter(same)
            .is_some_and(|l| l.cpu_check == Some(CheckStatus::Passed)),
        gpu_device: h
            .gpu
            .filter(same)
            .and_then(|l| l.gpu_check.as_ref())
            .filter(|g| g.status == Some(CheckStatus::Passed))
            .map(device_label),
        leak_mib: h
            .gpu
            .and_then(|l| leak(l.gpu_check.as_ref()?, leak_alert_mib)),
        error: error(now, h, same),
        regressed: edited && now.status == FileStatus::NonCompliant,
        changed: edited && compliant,
        good_when: h.good.map(|g| {
            let how = if g.status == FileStatus::Fixed {
                "fixed"
            } else {
                "found compliant"
            };
            format!("{how} by `{}` on {}", g.stamp.command, g.stamp.at)
        }),
    }
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

/// Failing now, or the latest run failed on the very content the file has now.
fn error(now: &FileOutcome, h: &History, same: impl Fn(&&FileLine) -> bool) -> Option<String> {
    if now.status == FileStatus::Error {
        return Some(
            now.error
                .clone()
                .unwrap_or_else(|| "cannot be processed".into()),
        );
    }
    if let Some(last) = h.last.filter(&same) {
        if last.status == FileStatus::Error {
            let why = last.error.as_deref().unwrap_or("failed");
            return Some(format!(
                "`{}` on {}: {why}",
                last.stamp.command, last.stamp.at
            ));
        }
    }
    let gpu = h.gpu.filter(&same)?;
    let check = gpu.gpu_check.as_ref()?;
    matches!(check.status, Some(CheckStatus::Failed | CheckStatus::Error)).then(|| {
        let why = check.message.as_deref().unwrap_or("no message");
        format!("GPU check failed on {}: {why}", gpu.stamp.at)
    })
}

/// One point per journalled run: how many files the journal knew compliant after it.
pub fn burndown(journal: &Journal) -> Vec<RunPoint> {
    let mut by_run: HashMap<&str, Vec<&FileLine>> = HashMap::new();
    for line in &journal.files {
        by_run
            .entry(line.stamp.run_id.as_str())
            .or_default()
            .push(line);
    }
    let mut known: HashMap<&str, bool> = HashMap::new();
    journal
        .runs
        .iter()
        .map(|run| {
            for line in by_run.get(run.stamp.run_id.as_str()).into_iter().flatten() {
                match line.status {
                    FileStatus::Compliant | FileStatus::Fixed => known.insert(&line.path, true),
                    FileStatus::NoGpuCode | FileStatus::Skipped => known.remove(line.path.as_str()),
                    _ => known.insert(&line.path, false),
                };
            }
            point(run, known.values().filter(|&&ok| ok).count())
        })
        .collect()
}

fn point(run: &RunLine, compliant: usize) -> RunPoint {
    RunPoint {
        run_id: run.stamp.run_id.clone(),
        at: run.stamp.at.clone(),
        command: run.stamp.command.clone(),
        dry_run: run.stamp.dry_run,
        files: run.files,
        compliant,
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
        let map = histories(&lines);
        let same = judge(
            &now("a.py", FileStatus::Compliant, "h1"),
            map.get("a.py"),
            100.0,
        );
        assert!(same.compliant && same.fixed && same.cpu_validated);
        assert_eq!(
            same.gpu_device.as_deref(),
            Some("RTX 3090 (00000000:02:00.0)")
        );
        assert!(!same.changed && !same.regressed);
        let edited = judge(
            &now("a.py", FileStatus::Compliant, "h2"),
            map.get("a.py"),
            100.0,
        );
        assert!(edited.changed && !edited.cpu_validated && edited.gpu_device.is_none());
        let broken = judge(
            &now("a.py", FileStatus::NonCompliant, "h3"),
            map.get("a.py"),
            100.0,
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
        let map = histories(&lines);
        let a = judge(
            &now("a.py", FileStatus::Compliant, "h1"),
            map.get("a.py"),
            100.0,
        );
        assert_eq!(a.leak_mib, Some(180.0));
        assert!(a.gpu_device.is_none());
        let b = judge(
            &now("b.py", FileStatus::Compliant, "h2"),
            map.get("b.py"),
            100.0,
        );
        assert_eq!(
            b.error.as_deref(),
            Some("GPU check failed on at-r1: device 0 is the RTX 5060 Ti")
        );
    }

    #[test]
    fn dry_runs_validate_nothing() {
        let mut dry = line("r1", "a.py", "would_fix", "h1", json!(null));
        dry.stamp.dry_run = true;
        let map = histories(std::slice::from_ref(&dry));
        let v = judge(
            &now("a.py", FileStatus::NonCompliant, "h1"),
            map.get("a.py"),
            100.0,
        );
        assert_eq!(v, Verdict::default());
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
        let points: Vec<usize> = burndown(&journal).iter().map(|p| p.compliant).collect();
        assert_eq!(points, [2, 1]);
    }
}
