//! Progress numbers shared by the coordinator report and the end-of-run text: what counts as
//! in scope, per-phase counts, percentages and statuses.

use std::collections::BTreeSet;
use std::fmt::Write;

use serde::Serialize;

use crate::model::outcome::{FileOutcome, FileStatus};
use crate::model::policy::{PhaseSpec, OTHER_PHASE};

/// In scope: declared in a phase, or found to hold GPU code (files without it outside every
/// phase are not part of the mission).
pub fn in_scope(o: &FileOutcome) -> bool {
    o.phase.is_some()
        || matches!(
            o.status,
            FileStatus::Compliant
                | FileStatus::NonCompliant
                | FileStatus::NeedsReview
                | FileStatus::Accepted
                | FileStatus::Fixed
                | FileStatus::WouldFix
                | FileStatus::Error
        )
}

/// The phase a file is reported under.
pub fn phase_name(o: &FileOutcome) -> &str {
    o.phase.as_deref().unwrap_or(OTHER_PHASE)
}

/// The declared phases in config order, then "Other" when some file fell outside them.
pub fn phase_order(specs: &[PhaseSpec], has_other: bool) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for spec in specs {
        if !names.contains(&spec.name) {
            names.push(spec.name.clone());
        }
    }
    if has_other && !names.iter().any(|n| n == OTHER_PHASE) {
        names.push(OTHER_PHASE.to_string());
    }
    names
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    #[default]
    Empty,
    NotStarted,
    InProgress,
    Done,
    /// Something failed, leaked or regressed: a person must look.
    Attention,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Empty => "no files",
            Status::NotStarted => "not started",
            Status::InProgress => "in progress",
            Status::Done => "done",
            Status::Attention => "needs attention",
        }
    }
}

/// The numbers of one phase, or of several added up.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counts {
    pub total: usize,
    pub compliant: usize,
    pub fixed: usize,
    pub cpu_validated: usize,
    pub gpu_validated: usize,
    pub leaks: usize,
    pub errors: usize,
    pub regressed: usize,
    /// Review items: findings the tool leaves to a person.
    pub review: usize,
    /// Files whose every open finding a human closed (noqa, baseline): done, but not compliant.
    pub accepted: usize,
    /// GPU checks ran in some journalled run: done needs every file GPU-validated.
    pub gpu_required: bool,
    /// The cumulative leak drift of the latest GPU checks is over the limit.
    pub drift_failed: bool,
    /// The GPUs the passing checks of these files ran on.
    pub devices: BTreeSet<String>,
    /// Compliant out of total, one decimal.
    pub percent: f64,
    pub status: Status,
}

impl Counts {
    pub fn add(&mut self, other: &Counts) {
        self.total += other.total;
        self.compliant += other.compliant;
        self.fixed += other.fixed;
        self.cpu_validated += other.cpu_validated;
        self.gpu_validated += other.gpu_validated;
        self.leaks += other.leaks;
        self.errors += other.errors;
        self.regressed += other.regressed;
        self.review += other.review;
        self.accepted += other.accepted;
        self.gpu_required |= other.gpu_required;
        self.drift_failed |= other.drift_failed;
        self.devices.extend(other.devices.iter().cloned());
        self.finish();
    }

    /// Fill in the percentage and the status once the counts are in.
    pub fn finish(&mut self) {
        self.percent = percent(self.compliant, self.total);
        self.status = if self.total == 0 {
            Status::Empty
        } else if self.errors + self.leaks + self.regressed > 0 || self.drift_failed {
            Status::Attention
        } else if self.compliant == self.total
            && self.cpu_validated == self.total
            && (!self.gpu_required || self.gpu_validated == self.total)
        {
            Status::Done
        } else if self.compliant == 0 {
            Status::NotStarted
        } else {
            Status::InProgress
        };
    }
}

/// `part` of `total` in percent, one decimal; never 100 unless complete.
pub fn percent(part: usize, total: usize) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let p = (part as f64 * 1000.0 / total as f64).round() / 10.0;
    if part < total {
        p.min(99.9)
    } else {
        p
    }
}

/// `47.5%`, `100%`.
pub fn format_percent(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// The short form of the report at the end of `fix` and `check`: one line per phase the run
/// touched, e.g. `Core modules: 13/13 compliant (100%)`.
pub fn phase_lines(specs: &[PhaseSpec], outcomes: &[FileOutcome]) -> String {
    let mut tally = PhaseTally::default();
    outcomes.iter().for_each(|o| tally.add(o));
    tally.lines(specs)
}

/// The counts [`PhaseTally::lines`] prints, kept file by file as a run streams its outcomes.
#[derive(Debug, Default)]
pub struct PhaseTally {
    /// Per phase name: files in scope, then those of each status counted.
    of_phase: std::collections::HashMap<String, (usize, [usize; 8])>,
}

/// What a phase line counts apart, so that its parts sum to its files: compliant (compliant
/// or fixed), then would fix, non-compliant, needing review, accepted, errors, and the files a
/// phase names that hold no GPU code or were skipped.
const TALLIED: [&[FileStatus]; 8] = [
    &[FileStatus::Compliant, FileStatus::Fixed],
    &[FileStatus::WouldFix],
    &[FileStatus::NonCompliant],
    &[FileStatus::NeedsReview],
    &[FileStatus::Accepted],
    &[FileStatus::Error],
    &[FileStatus::NoGpuCode],
    &[FileStatus::Skipped],
];

impl PhaseTally {
    pub fn add(&mut self, o: &FileOutcome) {
        if !in_scope(o) {
            return;
        }
        let (total, counts) = self.of_phase.entry(phase_name(o).to_string()).or_default();
        *total += 1;
        for (n, statuses) in counts.iter_mut().zip(TALLIED) {
            *n += usize::from(statuses.contains(&o.status));
        }
    }

    /// One line per phase with files, in the config's order, "Other" last.
    pub fn lines(&self, specs: &[PhaseSpec]) -> String {
        let has_other = self.of_phase.contains_key(OTHER_PHASE);
        let mut out = String::new();
        for name in phase_order(specs, has_other) {
            let Some(&(total, [compliant, rest @ ..])) = self.of_phase.get(&name) else {
                continue;
            };
            let _ = write!(
                out,
                "{}: {compliant}/{total} compliant ({})",
                crate::base::escape::printable(&name),
                format_percent(percent(compliant, total))
            );
            let labels = [
                "would fix",
                "non-compliant",
                "needing review",
                "accepted",
                "errors",
                "without GPU code",
                "skipped",
            ];
            for (n, label) in rest.into_iter().zip(labels) {
                if n > 0 {
                    let label = if label == "errors" && n == 1 {
                        "error"
                    } else {
                        label
                    };
                    let _ = write!(out, ", {n} {label}");
                }
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_rounds_but_never_claims_done_early() {
        assert_eq!(percent(19, 40), 47.5);
        assert_eq!(percent(13, 13), 100.0);
        assert_eq!(percent(1999, 2000), 99.9);
        assert_eq!(percent(0, 0), 0.0);
        assert_eq!(format_percent(47.5), "47.5%");
        assert_eq!(format_percent(100.0), "100%");
    }

    #[test]
    fn status_follows_the_counts() {
        let mut c = Counts {
            total: 13,
            compliant: 13,
            cpu_validated: 13,
            ..Counts::default()
        };
        c.finish();
        assert_eq!(c.status, Status::Done);
        c.regressed = 1;
        c.finish();
        assert_eq!(c.status, Status::Attention);
        let mut none = Counts {
            total: 27,
            ..Counts::default()
        };
        none.finish();
        assert_eq!(none.status, Status::NotStarted);
    }

    #[test]
    fn phase_lines_count_fixed_as_compliant() {
        let spec = PhaseSpec {
            name: "Core modules".into(),
            ..PhaseSpec::default()
        };
        let mut fixed = FileOutcome::new(std::path::Path::new("a.py"), "a.py");
        fixed.phase = Some("Core modules".into());
        fixed.status = FileStatus::Fixed;
        let mut other = FileOutcome::new(std::path::Path::new("b.py"), "b.py");
        other.status = FileStatus::NonCompliant;
        let text = phase_lines(&[spec], &[fixed, other]);
        assert_eq!(
            text,
            "Core modules: 1/1 compliant (100%)\nOther: 0/1 compliant (0%), 1 non-compliant\n"
        );
    }
}
