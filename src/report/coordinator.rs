//! The coordinator report: a fresh scan (what is compliant now) joined with the journal (what
//! was fixed and validated, on which GPU, with what leak, and when), per mission phase.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use super::history::{burndown, histories, judge, FailureKind, History, Verdict};
use super::progress::{in_scope, phase_name, phase_order, Counts};
use crate::journal::Journal;
use crate::model::outcome::{FileOutcome, FileStatus};
use crate::model::policy::{Config, EnvVar, Phases, Policy, OTHER_PHASE};

#[derive(Debug, Serialize)]
pub struct Report {
    pub version: &'static str,
    pub generated_at: String,
    pub root: String,
    pub phases: Vec<PhaseReport>,
    pub overall: Counts,
    /// The declared phases only: the mission as planned, without "Other" (everything when
    /// no phase is declared).
    pub mission: Counts,
    pub runs: Vec<RunPoint>,
    pub alerts: Vec<Alert>,
    /// Findings a person must review (the tool does not rewrite them), file by file.
    pub review: Vec<ReviewItem>,
    pub policy: PolicyView,
    pub gpu: GpuView,
    /// The GPU checks per host, from the tree's journal and those `--journal` adds.
    pub hosts: Vec<super::hosts::HostView>,
    /// What could not be read from the journal.
    pub warnings: Vec<String>,
}

impl Report {
    /// The runs the journal holds (the burndown's starting point is not one).
    pub fn journalled_runs(&self) -> usize {
        self.runs.iter().filter(|r| !r.as_found).count()
    }

    /// Paths relative to the repository (`prefix`: the tree root's place in it, `svc/`), as
    /// every output of the tool has them; the report is built on root-relative ones.
    pub fn place_in_repository(&mut self, prefix: &str) {
        if prefix.is_empty() {
            return;
        }
        let place = |path: &mut String| *path = format!("{prefix}{path}");
        for phase in &mut self.phases {
            phase.remaining.iter_mut().for_each(|r| place(&mut r.path));
        }
        self.review.iter_mut().for_each(|r| place(&mut r.path));
        self.hosts.iter_mut().for_each(|h| {
            h.failures.iter_mut().for_each(|f| place(&mut f.path));
            h.checks.iter_mut().for_each(|c| place(&mut c.path));
        });
        self.alerts
            .iter_mut()
            .filter_map(|a| a.path.as_mut())
            .for_each(place);
    }

    /// Whether gpu-homogenize.toml declares phases (else every file is in "Other").
    pub fn has_declared_phases(&self) -> bool {
        self.phases.iter().any(|p| p.name != OTHER_PHASE)
    }

    /// What the headline counts: the mission, or every file when no phase is declared.
    pub fn mission_label(&self) -> &'static str {
        if self.has_declared_phases() {
            "Mission"
        } else {
            "All files with GPU code (no phase declared)"
        }
    }
}

#[derive(Debug, Serialize)]
pub struct PhaseReport {
    pub name: String,
    #[serde(flatten)]
    pub counts: Counts,
    pub remaining: Vec<Remaining>,
}

/// A file in scope that is not done yet, and why.
#[derive(Debug, Serialize)]
pub struct Remaining {
    pub path: String,
    pub reason: Reason,
    /// Rule codes, e.g. `GH101`.
    pub rules: Vec<String>,
    /// `GH101 device-string-index`, for people.
    #[serde(skip)]
    pub labels: Vec<String>,
    pub regressed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run that recorded the failure, when the reason is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// Why a file remains: the first that applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    InputError,
    Refused,
    GpuFailed,
    Leak,
    /// Breaks the rules (`rules` says which).
    Rules,
    /// Only review items are left: a person must decide.
    Review,
    /// Compliant, but no run ever checked it.
    NeverChecked,
    /// Compliant, but not validated (CPU, or GPU when GPU checks ran) on its current content.
    NotValidated,
}

impl Reason {
    pub fn label(self) -> &'static str {
        match self {
            Reason::InputError => "input error",
            Reason::Refused => "rewrite refused",
            Reason::GpuFailed => "GPU check failed",
            Reason::Leak => "GPU check leaked",
            Reason::Rules => "breaks",
            Reason::Review => "review item",
            Reason::NeverChecked => "never checked (run `gpu-homogenize check`)",
            Reason::NotValidated => {
                "not validated on its current content (run `gpu-homogenize check`)"
            }
        }
    }
}

/// A finding the tool leaves to a person.
#[derive(Debug, Serialize)]
pub struct ReviewItem {
    pub path: String,
    pub line: usize,
    pub rule: String,
    pub message: String,
}

/// Alerts shown in full per kind before the rest of that kind is folded into a <details>.
pub const ALERTS_SHOWN: usize = 3;

/// The alerts in groups of one kind, in their order (they are sorted by kind, then path).
pub fn alert_groups(alerts: &[Alert]) -> Vec<&[Alert]> {
    alerts.chunk_by(|a, b| a.kind == b.kind).collect()
}

/// One point of the burndown: a journalled run.
#[derive(Debug, Serialize)]
pub struct RunPoint {
    pub run_id: String,
    pub at: String,
    pub command: String,
    pub dry_run: bool,
    /// Files in scope that this run looked at.
    pub files: usize,
    /// Files known compliant after this run: the journal's latest word on every file.
    pub compliant: usize,
    /// The tree as the first run found it, before its fixes: the burndown's starting point
    /// (`compliant` counts the files that run found compliant, not those it fixed).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub as_found: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    Failing,
    Regressed,
    Leak,
    Drift,
    Changed,
    Missing,
}

#[derive(Debug, Serialize)]
pub struct Alert {
    pub kind: AlertKind,
    pub path: Option<String>,
    pub message: String,
    /// The run that raised it, e.g. `` `check` run 18c…-2a on 2025-01-12T09:30:00.000Z``.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct PolicyView {
    #[serde(flatten)]
    pub policy: Policy,
    /// What the header sets each variable to.
    pub env: BTreeMap<&'static str, String>,
}

#[derive(Debug, Serialize)]
pub struct GpuView {
    /// The cards the latest GPU checks ran on, with how many files each.
    pub devices: BTreeMap<String, usize>,
    /// Files with a GPU check on record.
    pub checked: usize,
    /// Sum of the leaks of the latest GPU check of every file, MiB.
    pub drift_mib: f64,
    /// The drift is above `leak_fail_mib`: the mission cannot be done.
    pub drift_failed: bool,
    /// Some journalled run ran GPU checks: files must be GPU-validated to be done.
    pub required: bool,
    pub leak_alert_mib: f64,
    pub leak_fail_mib: f64,
}

pub fn json(report: &Report) -> String {
    let mut out =
        crate::base::escape::json(report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    out.push('\n');
    out
}

/// The tree a report is about: its root and its config.
pub struct Tree<'a> {
    pub root: &'a std::path::Path,
    pub config: &'a Config,
}

pub fn build(
    setup: &Tree,
    scan: &[FileOutcome],
    journal: &Journal,
    generated_at: String,
) -> Report {
    let policy = &setup.config.policy;
    let history = histories(&journal.files, policy.leak_alert_mib);
    let files: Vec<&FileOutcome> = scan.iter().filter(|o| in_scope(o)).collect();
    let mut gpu = gpu_view(&files, &history, policy);
    gpu.required = journal
        .runs
        .iter()
        .any(|r| r.gpu.as_ref().is_some_and(|g| g.state == "ran"));
    let (by_name, mut alerts) = judge_all(&files, &history, &gpu);
    alerts.extend(missing(setup, scan));
    alerts.extend(drift_alert(&gpu, journal));
    alerts.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
    let has_other = files.iter().any(|f| f.phase.is_none());
    let phases = in_order(by_name, &setup.config.phases, has_other);
    let mut review: Vec<ReviewItem> = files
        .iter()
        .flat_map(|f| {
            f.findings
                .iter()
                .filter(|r| r.severity == "review")
                .map(|r| ReviewItem {
                    path: f.path.clone(),
                    line: r.line,
                    rule: format!("{} {}", r.rule, r.name),
                    message: r.message.clone(),
                })
        })
        .collect();
    review.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    Report {
        version: env!("CARGO_PKG_VERSION"),
        generated_at,
        root: setup.root.display().to_string(),
        overall: with_drift(total(&phases, |_| true), &gpu),
        mission: with_drift(
            if setup.config.phases.is_empty() {
                total(&phases, |_| true)
            } else {
                total(&phases, |p| p.name != OTHER_PHASE)
            },
            &gpu,
        ),
        phases,
        runs: burndown(journal),
        alerts,
        review,
        policy: policy_view(policy),
        hosts: super::hosts::hosts(&journal.files),
        gpu,
        warnings: journal.warnings.clone(),
    }
}

impl PhaseReport {
    fn new(name: &str) -> PhaseReport {
        PhaseReport {
            name: name.to_string(),
            counts: Counts::default(),
            remaining: Vec::new(),
        }
    }
}

/// Every file's verdict, counted into its phase, and the alerts it raises.
fn judge_all<'a>(
    files: &[&'a FileOutcome],
    history: &HashMap<&str, History>,
    gpu: &GpuView,
) -> (HashMap<&'a str, PhaseReport>, Vec<Alert>) {
    let mut phases: HashMap<&str, PhaseReport> = HashMap::new();
    let mut alerts = Vec::new();
    for file in files {
        let verdict = judge(file, history.get(file.path.as_str()));
        let name = phase_name(file);
        let phase = phases.entry(name).or_insert_with(|| PhaseReport::new(name));
        phase.counts.gpu_required = gpu.required;
        phase.counts.drift_failed |= gpu.drift_failed && verdict.drift_mib > 0.0;
        tally(phase, file, &verdict, gpu.required);
        alerts.extend(file_alerts(file, &verdict));
    }
    (phases, alerts)
}

/// The declared phases in config order (even when empty), then "Other".
fn in_order(
    mut by_name: HashMap<&str, PhaseReport>,
    specs: &[crate::model::policy::PhaseSpec],
    has_other: bool,
) -> Vec<PhaseReport> {
    phase_order(specs, has_other)
        .into_iter()
        .map(|name| {
            let mut phase = by_name
                .remove(name.as_str())
                .unwrap_or_else(|| PhaseReport::new(&name));
            phase.counts.finish();
            phase.remaining.sort_by(|a, b| a.path.cmp(&b.path));
            phase
        })
        .collect()
}

/// The drift is the mission's: over the limit, nothing is done.
fn with_drift(mut counts: Counts, gpu: &GpuView) -> Counts {
    counts.gpu_required = gpu.required;
    counts.drift_failed = gpu.drift_failed;
    counts.finish();
    counts
}

fn total(phases: &[PhaseReport], keep: impl Fn(&PhaseReport) -> bool) -> Counts {
    let mut sum = Counts::default();
    for phase in phases.iter().filter(|p| keep(p)) {
        sum.add(&phase.counts);
    }
    sum.finish();
    sum
}

fn drift_alert(gpu: &GpuView, journal: &Journal) -> Option<Alert> {
    let run = journal
        .runs
        .iter()
        .rev()
        .find(|r| r.gpu.as_ref().is_some_and(|g| g.state == "ran"))
        .map(|r| {
            format!(
                "`{}` run {} on {}",
                r.stamp.command, r.stamp.run_id, r.stamp.at
            )
        });
    gpu.drift_failed.then(|| Alert {
        kind: AlertKind::Drift,
        path: None,
        message: format!(
            "the latest GPU checks of these files leaked {:.0} MiB in all, above the {:.0} MiB limit; the mission is not done until they are checked again without it",
            gpu.drift_mib, gpu.leak_fail_mib
        ),
        run,
    })
}

fn tally(phase: &mut PhaseReport, file: &FileOutcome, v: &Verdict, gpu_required: bool) {
    let c = &mut phase.counts;
    c.total += 1;
    c.compliant += usize::from(v.compliant);
    c.fixed += usize::from(v.fixed);
    c.cpu_validated += usize::from(v.cpu_validated);
    c.gpu_validated += usize::from(v.gpu_device.is_some());
    let failure = v.failure.as_ref().map(|f| f.0);
    c.leaks += usize::from(failure == Some(FailureKind::Leak));
    c.errors += usize::from(failure.is_some_and(|k| k != FailureKind::Leak));
    c.regressed += usize::from(v.regressed);
    c.accepted += usize::from(file.status == FileStatus::Accepted);
    c.review += file
        .findings
        .iter()
        .filter(|f| f.severity == "review")
        .count();
    c.devices.extend(v.gpu_device.clone());
    let validated = v.cpu_validated && (!gpu_required || v.gpu_device.is_some());
    if !(v.compliant && validated && failure.is_none()) {
        phase.remaining.push(remaining(file, v));
    }
}

fn remaining(file: &FileOutcome, v: &Verdict) -> Remaining {
    let mut rules: Vec<(String, String)> = file
        .findings
        .iter()
        .filter(|f| f.severity == "violation")
        .map(|f| (f.rule.clone(), format!("{} {}", f.rule, f.name)))
        .collect();
    rules.sort();
    rules.dedup();
    let has_review = file.findings.iter().any(|f| f.severity == "review");
    let reason = match &v.failure {
        Some((FailureKind::InputError, ..)) => Reason::InputError,
        Some((FailureKind::Refused, ..)) => Reason::Refused,
        Some((FailureKind::GpuFailed, ..)) => Reason::GpuFailed,
        Some((FailureKind::Leak, ..)) => Reason::Leak,
        None if !rules.is_empty() => Reason::Rules,
        None if !v.compliant && has_review => Reason::Review,
        None if v.never_checked => Reason::NeverChecked,
        None => Reason::NotValidated,
    };
    let (error, run) = match &v.failure {
        Some((_, message, run)) => (Some(message.clone()), run.clone()),
        None => (file.reason.clone().or_else(|| file.error.clone()), None),
    };
    Remaining {
        path: file.path.clone(),
        reason,
        rules: rules.iter().map(|(code, _)| code.clone()).collect(),
        labels: rules.into_iter().map(|(_, label)| label).collect(),
        regressed: v.regressed,
        error,
        run,
    }
}

fn file_alerts(file: &FileOutcome, v: &Verdict) -> Vec<Alert> {
    let alert = |kind, message: String, run: Option<String>| Alert {
        kind,
        path: Some(file.path.clone()),
        message,
        run,
    };
    let when = v
        .good_when
        .as_deref()
        .unwrap_or("compliant in an earlier run");
    let mut alerts = Vec::new();
    if let Some((kind, message, run)) = &v.failure {
        let message = match run {
            Some(run) => format!("{message} ({run}; open until a later run passes it)"),
            None => format!("{message} (in this scan)"),
        };
        let kind = if *kind == FailureKind::Leak {
            AlertKind::Leak
        } else {
            AlertKind::Failing
        };
        alerts.push(alert(kind, message, run.clone()));
    }
    if v.regressed {
        let rules = remaining(file, v).rules.join(", ");
        alerts.push(alert(
            AlertKind::Regressed,
            format!("{when}, edited by hand since: breaks {rules} again"),
            None,
        ));
    }
    if v.changed {
        alerts.push(alert(
            AlertKind::Changed,
            format!("edited by hand since it was {when}; still compliant: run `gpu-homogenize check` on it to validate it again"),
            None,
        ));
    }
    alerts
}

/// Files a phase lists by name that the scan did not find.
fn missing(setup: &Tree, scan: &[FileOutcome]) -> Vec<Alert> {
    let found: HashSet<&str> = scan.iter().map(|o| o.path.as_str()).collect();
    let phases = Phases::new(&setup.config.phases);
    phases
        .listed_files()
        .filter(|(_, path)| !found.contains(path))
        .map(|(phase, path)| Alert {
            kind: AlertKind::Missing,
            path: Some(path.to_string()),
            message: format!("listed in phase \"{phase}\" but not found under the root"),
            run: None,
        })
        .collect()
}

fn gpu_view(files: &[&FileOutcome], history: &HashMap<&str, History>, policy: &Policy) -> GpuView {
    let mut view = GpuView {
        devices: BTreeMap::new(),
        checked: 0,
        drift_mib: 0.0,
        drift_failed: false,
        required: false,
        leak_alert_mib: policy.leak_alert_mib,
        leak_fail_mib: policy.leak_fail_mib,
    };
    let checks = files
        .iter()
        .filter_map(|f| history.get(f.path.as_str())?.gpu?.gpu_check.as_ref());
    for check in checks {
        view.checked += 1;
        *view
            .devices
            .entry(super::history::device_label(check))
            .or_default() += 1;
        view.drift_mib += check.leak_mib.unwrap_or(0.0).max(0.0);
    }
    view.drift_failed = view.drift_mib > view.leak_fail_mib;
    view
}

fn policy_view(policy: &Policy) -> PolicyView {
    let env = EnvVar::ALL
        .into_iter()
        .filter_map(|var| Some((var.name(), policy.env_value(var)?.to_string())))
        .collect();
    PolicyView {
        policy: policy.clone(),
        env,
    }
}

#[cfg(test)]
mod tests;
