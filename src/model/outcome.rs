//! What happened to each file in a run: the records the JSON output, the text summary
//! and the journal are made from.

#[cfg(not(windows))]
use std::ffi::OsStr;
use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    Python,
    Rust,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Compliant,
    NonCompliant,
    /// The tool cannot decide (multi-GPU by position, a child's env, a package `__init__`):
    /// never counted as compliant, exits 1 until a human closes it.
    NeedsReview,
    /// Every open finding was closed by a human (`noqa`, the baseline, `per-file-ignores`).
    Accepted,
    Fixed,
    WouldFix,
    NoGpuCode,
    Skipped,
    Error,
}

impl FileStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FileStatus::Compliant => "compliant",
            FileStatus::NonCompliant => "non_compliant",
            FileStatus::NeedsReview => "needs_review",
            FileStatus::Accepted => "accepted",
            FileStatus::Fixed => "fixed",
            FileStatus::WouldFix => "would_fix",
            FileStatus::NoGpuCode => "no_gpu_code",
            FileStatus::Skipped => "skipped",
            FileStatus::Error => "error",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FindingRecord {
    pub rule: String,
    pub name: String,
    pub severity: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
    /// What to do about it here when that is not `fix` (the hand edit, the launcher line, why
    /// the fix is withheld); absent when `fix` or the rule's page says it all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// True when `fix` can rewrite it.
    pub fixable: bool,
    /// `safe`, `unsafe` (only `--unsafe-fixes` applies it) or `display_only`; null when the
    /// finding has no fix.
    #[serde(default)]
    pub applicability: Option<crate::model::finding::Applicability>,
    /// True when `fix` rewrote (or, in a dry run, would rewrite) it.
    pub fixed: bool,
    /// The text of the reported line (what a baseline keys on); not in the JSON. Shared by the
    /// findings of one line: 10,000 findings on a 240 KB line hold it once, not 10,000 times.
    #[serde(skip)]
    pub line_text: std::sync::Arc<str>,
    /// About the whole file (no line of its own, e.g. a missing header); not in the JSON.
    #[serde(skip)]
    pub whole_file: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Passed,
    Failed,
    Leak,
    Skipped,
    Error,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CpuCheck {
    pub status: CheckStatus,
    /// Broken invariants, one line each; empty when passed.
    #[serde(default)]
    pub problems: Vec<String>,
}

/// The result of one pass through the GPU slot (see DESIGN.md, "What a GPU check is").
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GpuCheck {
    pub status: Option<CheckStatus>,
    pub device_name: Option<String>,
    pub pci_bus_id: Option<String>,
    pub uuid: Option<String>,
    pub visible_devices: Option<u32>,
    pub mem_before_mib: Option<f64>,
    pub mem_peak_mib: Option<f64>,
    pub mem_after_mib: Option<f64>,
    pub leak_mib: Option<f64>,
    pub started_ms: Option<u64>,
    pub finished_ms: Option<u64>,
    pub message: Option<String>,
    /// The host the check ran on (its name as the system gives it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Every process NVML listed on any card while the check ran: the check's own (its process
    /// tree) and foreign ones (other users', other programs').
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<GpuProcess>,
    /// Why the check's processes could not be told apart (the driver lists none, or lists
    /// them under other pids): the check then rests on the memory counters alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes_unlisted: Option<String>,
}

impl GpuProcess {
    /// `pid 4242 (`python3 worker.py`)`: who it is, for messages.
    pub fn who(&self) -> String {
        match &self.command {
            Some(command) => format!("pid {} (`{command}`)", self.pid),
            None => format!("pid {}", self.pid),
        }
    }

    /// `pid 4242 (`python3 worker.py`) on NVIDIA GeForce RTX 3090 (00000000:02:00.0, GPU-…)
    /// with 350 MiB`: who, on which card, with how much memory.
    pub fn describe(&self) -> String {
        let memory = self
            .peak_mib
            .map_or(String::new(), |m| format!(" with {m:.0} MiB"));
        format!(
            "{} on {} ({}, {}){memory}",
            self.who(),
            self.card,
            self.pci_bus_id,
            self.uuid
        )
    }
}

/// Whose a process seen on a card during a check is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessOrigin {
    /// Started by the check: the probe, the `--gpu-cmd` and everything it started.
    Check,
    /// Anything else on the machine: never fails a check, never counted as its leak.
    Foreign,
}

/// One process on one card, as NVML's running-process lists showed it during a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuProcess {
    pub pid: u32,
    pub origin: ProcessOrigin,
    /// The command line of a process of the check (bounded); foreign ones are not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The card: NVML index (PCI order), name, PCI bus id, UUID.
    pub card_index: u32,
    pub card: String,
    pub pci_bus_id: String,
    pub uuid: String,
    /// Whether the policy forbids the card.
    pub forbidden: bool,
    /// The most memory NVML showed for it; none where the driver does not say (WDDM).
    pub peak_mib: Option<f64>,
    /// What it still held when the check's command had ended: a lingering child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lingering_mib: Option<f64>,
}

/// How the reason of a file whose planned fix the CPU check refused starts.
pub const FIX_REFUSED: &str = "fix refused by the CPU check: ";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileOutcome {
    /// Relative to the tree root, with `/` separators.
    pub path: String,
    pub language: Option<Language>,
    pub phase: Option<String>,
    pub status: FileStatus,
    pub findings: Vec<FindingRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why the file is a program (what starts it) or a library (what runs it), from the
    /// project index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    pub cpu_check: Option<CpuCheck>,
    pub gpu_check: Option<GpuCheck>,
    /// Findings a human closed (`noqa`, baseline, `per-file-ignores`): not reported, counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub accepted: usize,
    /// Unsafe fixes held back in this file (run with `--unsafe-fixes` to apply them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unsafe_fixes_held: usize,
    /// `fix` rewrote the file on disk (a dry run: would rewrite it), whatever it is left with:
    /// what "Fixed N files" and "Would fix N files" count.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changed: bool,
    /// Hash of the file's content after the run (for detecting hand edits later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    /// Unified diff of the rewrite (dry run or `--diff`); not part of the JSON output.
    #[serde(skip)]
    pub diff: Option<String>,
    /// The path as the user reached it (what text output shows).
    #[serde(skip)]
    pub display: String,
    /// The rewritten source, when the engine keeps it (`fix -`); not part of the JSON output.
    #[serde(skip)]
    pub rewritten: Option<String>,
}

impl FileOutcome {
    /// A blank outcome for a file, before anything is known about it.
    pub fn new(path: &Path, rel: &str) -> FileOutcome {
        FileOutcome {
            path: rel.to_string(),
            language: None,
            phase: None,
            status: FileStatus::Skipped,
            findings: Vec::new(),
            error: None,
            reason: None,
            evidence: None,
            cpu_check: None,
            gpu_check: None,
            content_hash: None,
            accepted: 0,
            unsafe_fixes_held: 0,
            changed: false,
            diff: None,
            display: display_path(path),
            rewritten: None,
        }
    }
}

/// The repository holding `root`: the nearest directory with a `.git` at or above it, else `root`.
pub fn source_root(root: &Path) -> &Path {
    root.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(root)
}

/// Where the tree root sits in its repository, as a prefix of root-relative paths: `svc/` for a
/// config in `svc/`, empty at the top. CI (GitHub annotations, SARIF) resolves paths against the
/// repository, so every format prints `prefix + path`.
pub fn repository_prefix(root: &Path) -> String {
    match root.strip_prefix(source_root(root)) {
        Ok(rel) if !rel.as_os_str().is_empty() => {
            let mut prefix = escape(rel.as_os_str());
            prefix.push('/');
            prefix
        }
        _ => String::new(),
    }
}

/// Where a file's error points: the position of a syntax error (`syntax error at 2:7: …`, as
/// `lang::SyntaxError` writes it), else the file's start.
pub fn error_position(error: &str) -> (usize, usize) {
    let position = error.strip_prefix("syntax error at ").and_then(|rest| {
        let (line, rest) = rest.split_once(':')?;
        let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
        Some((line.parse().ok()?, column.parse().ok()?))
    });
    position.unwrap_or((1, 1))
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A path as text output shows it: as the user reached it, without a leading `./`.
#[cfg(not(windows))]
pub fn display_path(path: &Path) -> String {
    // Bytes that are not UTF-8 are escaped, as git does, never replaced lossily; `./` goes
    // first, so that what follows is escaped as the start of a line.
    let bytes = path.as_os_str().as_encoded_bytes();
    let shown = match bytes.strip_prefix(b"./") {
        // SAFETY: split right after ASCII, from bytes `as_encoded_bytes` gave.
        Some(rest) if !rest.is_empty() => unsafe { OsStr::from_encoded_bytes_unchecked(rest) },
        _ => path.as_os_str(),
    };
    quoted(&escape(shown)).into_owned()
}

/// A path as text output shows it on Windows: as a Windows user reads it, `tools\x.py` (as
/// `dir` and ruff print it), without a leading `.\`. Each name is escaped as on unix; when one
/// had to be, the path is quoted and its separators are written `\\` too, so that no escape is
/// mistaken for a separator.
#[cfg(windows)]
pub fn display_path(path: &Path) -> String {
    use std::path::Component;
    let mut components: Vec<Component> = path.components().collect();
    if components.len() > 1 && components[0] == Component::CurDir {
        components.remove(0);
    }
    let names: Vec<String> = components
        .iter()
        .map(|c| match c {
            Component::Normal(name) => escape(name),
            other => other.as_os_str().to_string_lossy().into_owned(),
        })
        .collect();
    let escaped = components.iter().zip(&names).any(|(c, name)| {
        matches!(c, Component::Normal(_)) && name.as_bytes() != c.as_os_str().as_encoded_bytes()
    });
    let separator = if escaped { "\\\\" } else { "\\" };
    let mut shown = String::new();
    // No separator after a drive (`C:`) or the root; one between names.
    let mut between = false;
    for (component, name) in components.iter().zip(&names) {
        match component {
            Component::Prefix(_) => {
                shown.push_str(name);
                between = false;
            }
            Component::RootDir => {
                shown.push_str(separator);
                between = false;
            }
            _ => {
                if between {
                    shown.push_str(separator);
                }
                shown.push_str(name);
                between = true;
            }
        }
    }
    if escaped {
        format!("\"{shown}\"")
    } else {
        shown
    }
}

/// Names and text from the tree, as every output prints them (see [`crate::base::escape`]).
pub use crate::base::escape::{name as escape, printable, quoted};

impl FileOutcome {
    /// Why the planned fix of this file is not made (its violations stay, none fixable).
    pub fn fix_refused(&self) -> Option<&str> {
        self.reason
            .as_deref()
            .and_then(|r| r.strip_prefix(FIX_REFUSED))
    }
}

#[cfg(all(test, windows))]
mod windows_tests {
    use super::display_path;
    use std::path::Path;

    #[test]
    fn paths_are_shown_as_windows_users_read_them() {
        assert_eq!(display_path(Path::new(r".\LLM\a.py")), r"LLM\a.py");
        assert_eq!(display_path(Path::new(r"C:\Dev\a.py")), r"C:\Dev\a.py");
        assert_eq!(display_path(Path::new(r"C:a.py")), r"C:a.py");
        assert_eq!(display_path(Path::new(".")), ".");
        // A name that must be escaped quotes the path; its separators are escaped too.
        assert_eq!(display_path(Path::new("d\\a\nb.py")), "\"d\\\\a\\nb.py\"");
    }
}
