//! The GPU checks per host: a mission run on several machines (a Slurm array, a CI matrix)
//! journals on each; `report --journal` merges them, and this view keeps each host's cards and
//! failures apart.

use std::collections::BTreeMap;

use serde::Serialize;

use super::history::{host_of, run_label};
use crate::journal::FileLine;
use crate::model::outcome::{CheckStatus, GpuProcess, ProcessOrigin};

/// What the checks recorded for a journal line without a host (journals of older versions).
pub const UNKNOWN_HOST: &str = "(host not recorded)";

#[derive(Debug, Serialize)]
pub struct HostView {
    pub host: String,
    /// The cards its checks ran on: UUID → name and PCI bus id.
    pub cards: BTreeMap<String, String>,
    /// Files whose latest check on this host is on record, and how those checks ended.
    pub checked: usize,
    pub passed: usize,
    pub failed: usize,
    pub leaks: usize,
    /// When its latest check ran.
    pub last_at: String,
    /// Its latest check of each file that did not pass.
    pub failures: Vec<HostFailure>,
    /// Its latest check of each file: the card, and every process of the check by card.
    pub checks: Vec<HostCheck>,
}

#[derive(Debug, Serialize)]
pub struct HostCheck {
    pub path: String,
    pub status: CheckStatus,
    /// The card CUDA's device 0 was, and its UUID.
    pub device: String,
    pub uuid: Option<String>,
    /// The processes of the check (the probe, the command and what it started).
    pub processes: Vec<GpuProcess>,
    /// Foreign processes seen meanwhile (not the check's; never blamed).
    pub foreign: usize,
    /// Why processes were not attributed, when they were not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes_unlisted: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct HostFailure {
    pub path: String,
    pub status: CheckStatus,
    pub message: String,
    /// The run that recorded it.
    pub run: String,
}

/// One view per host that has a GPU check on record (real runs only), hosts in name order.
pub fn hosts(lines: &[FileLine]) -> Vec<HostView> {
    let mut latest: BTreeMap<(String, &str), &FileLine> = BTreeMap::new();
    for line in lines.iter().filter(|l| !l.stamp.dry_run) {
        let Some(status) = line.gpu_check.as_ref().and_then(|g| g.status) else {
            continue;
        };
        if status == CheckStatus::Skipped {
            continue;
        }
        let host = host_of(line).unwrap_or_else(|| UNKNOWN_HOST.to_string());
        // The later line of one host's journal is its later check.
        latest.insert((host, line.path.as_str()), line);
    }
    let mut views: BTreeMap<String, HostView> = BTreeMap::new();
    for ((host, path), line) in latest {
        let Some(check) = line.gpu_check.as_ref() else {
            continue;
        };
        let view = views.entry(host.clone()).or_insert_with(|| HostView {
            host,
            cards: BTreeMap::new(),
            checked: 0,
            passed: 0,
            failed: 0,
            leaks: 0,
            last_at: String::new(),
            failures: Vec::new(),
            checks: Vec::new(),
        });
        view.checked += 1;
        if line.stamp.at > view.last_at {
            view.last_at = line.stamp.at.clone();
        }
        if let Some(uuid) = check.uuid.clone().filter(|u| !u.is_empty()) {
            view.cards.insert(uuid, super::history::device_label(check));
        }
        let status = check.status.unwrap_or(CheckStatus::Error);
        match status {
            CheckStatus::Passed => view.passed += 1,
            CheckStatus::Leak => view.leaks += 1,
            _ => view.failed += 1,
        }
        view.checks.push(HostCheck {
            path: path.to_string(),
            status,
            device: super::history::device_label(check),
            uuid: check.uuid.clone(),
            processes: check
                .processes
                .iter()
                .filter(|p| p.origin == ProcessOrigin::Check)
                .cloned()
                .collect(),
            foreign: check
                .processes
                .iter()
                .filter(|p| p.origin == ProcessOrigin::Foreign)
                .count(),
            processes_unlisted: check.processes_unlisted.clone(),
        });
        if status != CheckStatus::Passed {
            view.failures.push(HostFailure {
                path: path.to_string(),
                status,
                message: check.message.clone().unwrap_or_default(),
                run: run_label(line),
            });
        }
    }
    views.into_values().collect()
}

/// One line per process of a check, a forbidden card marked, for the report's lists.
pub fn process_line(p: &GpuProcess) -> String {
    let forbidden = if p.forbidden { " (FORBIDDEN card)" } else { "" };
    format!("{}{forbidden}", p.describe())
}
