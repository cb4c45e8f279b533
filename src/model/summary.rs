//! Counts over a run's outcomes: the end-of-run summary (LibCST-style) and the JSON `summary`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::outcome::{CheckStatus, FileOutcome, FileStatus, Language};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct GpuSummary {
    /// `ran`, or `skipped` with `reason`.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub checks: usize,
    pub passed: usize,
    pub failed: usize,
    pub leaks: usize,
    pub errors: usize,
    pub skipped: usize,
    /// Sum of the leaks of every check, MiB.
    pub drift_mib: f64,
    pub leak_alert_mib: f64,
    pub leak_fail_mib: f64,
    /// The cumulative drift passed `leak_fail_mib`.
    pub drift_failed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

impl GpuSummary {
    /// Counts and the leak ledger over the checks of a run (seed 001: alert above
    /// `leak_alert_mib` for one check, fail when the cumulative drift passes `leak_fail_mib`).
    pub fn ran(
        outcomes: &[FileOutcome],
        device: Option<String>,
        policy: &crate::model::policy::Policy,
    ) -> GpuSummary {
        let mut s = GpuSummary::running(policy);
        for o in outcomes {
            s.add(o);
        }
        s.ended(device, policy);
        s
    }

    /// The ledger of a run whose checks are counted as they end ([`GpuSummary::add`]).
    pub fn running(policy: &crate::model::policy::Policy) -> GpuSummary {
        GpuSummary {
            state: "ran".into(),
            leak_alert_mib: policy.leak_alert_mib,
            leak_fail_mib: policy.leak_fail_mib,
            ..GpuSummary::default()
        }
    }

    /// Counts the file's check, if it had one.
    pub fn add(&mut self, outcome: &FileOutcome) {
        let Some(check) = &outcome.gpu_check else {
            return;
        };
        self.checks += 1;
        match check.status {
            Some(CheckStatus::Passed) => self.passed += 1,
            Some(CheckStatus::Failed) => self.failed += 1,
            Some(CheckStatus::Leak) => self.leaks += 1,
            Some(CheckStatus::Error) => self.errors += 1,
            Some(CheckStatus::Skipped) | None => self.skipped += 1,
        }
        self.drift_mib += check.leak_mib.unwrap_or(0.0).max(0.0);
    }

    /// Every check is counted: the device they ran on, and whether the drift failed the run.
    pub fn ended(&mut self, device: Option<String>, policy: &crate::model::policy::Policy) {
        self.device = device;
        self.drift_failed = self.drift_mib > policy.leak_fail_mib;
    }
}

/// The one count of a run, in the one vocabulary every command and format prints: violations
/// (open before the run), fixable, fixed, left for review, information, errors; and the files
/// `fix` rewrote (or would).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub files: usize,
    pub by_status: BTreeMap<&'static str, usize>,
    pub by_language: BTreeMap<&'static str, usize>,
    pub violations: usize,
    pub fixable: usize,
    /// Violations `fix` fixed (a dry run: would fix).
    pub fixed: usize,
    /// Files `fix` rewrote on disk (a dry run: would rewrite).
    pub files_fixed: usize,
    /// Findings left for a person to review.
    pub review: usize,
    /// Findings for information only.
    pub info: usize,
    /// Findings a human closed (`noqa`, baseline, `per-file-ignores`).
    pub accepted: usize,
    pub errors: usize,
    pub cpu_failed: usize,
    /// Unsafe fixes held back (`--unsafe-fixes` applies them).
    pub unsafe_fixes_held: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuSummary>,
    pub interrupted: bool,
    /// `--shard I/N`: the part of the tree this run covered (JSON and SARIF say it apart).
    #[serde(skip)]
    pub shard: Option<crate::base::shard::Shard>,
}

impl Summary {
    pub fn of(outcomes: &[FileOutcome], gpu: Option<GpuSummary>, interrupted: bool) -> Summary {
        let mut s = Summary::default();
        for o in outcomes {
            s.add(o);
        }
        s.gpu = gpu;
        s.interrupted = interrupted;
        s
    }

    /// Counts one more outcome (a run that hands its outcomes on keeps only the counts).
    pub fn add(&mut self, o: &FileOutcome) {
        self.files += 1;
        *self.by_status.entry(o.status.as_str()).or_default() += 1;
        if let Some(lang) = o.language {
            let name = match lang {
                Language::Python => "python",
                Language::Rust => "rust",
            };
            *self.by_language.entry(name).or_default() += 1;
        }
        for f in &o.findings {
            match f.severity.as_str() {
                "violation" => {
                    self.violations += 1;
                    self.fixable += usize::from(f.fixable);
                    self.fixed += usize::from(f.fixed);
                }
                "review" => self.review += 1,
                _ => self.info += 1,
            }
        }
        self.files_fixed += usize::from(o.changed);
        self.errors += usize::from(o.status == FileStatus::Error);
        self.accepted += o.accepted;
        self.unsafe_fixes_held += o.unsafe_fixes_held;
        self.cpu_failed += usize::from(
            o.cpu_check
                .as_ref()
                .is_some_and(|c| c.status == CheckStatus::Failed),
        );
    }

    pub fn count(&self, status: FileStatus) -> usize {
        self.by_status.get(status.as_str()).copied().unwrap_or(0)
    }
}
