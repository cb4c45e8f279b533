//! What happened to each file in a run: the records the JSON output, the text summary
//! and the journal are made from.

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
