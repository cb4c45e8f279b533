//! `--format gitlab`: a GitLab Code Quality report, the file a job names under
//! `artifacts: reports: codequality:` (what `ruff check --output-format gitlab` writes). One JSON
//! array with an issue per finding, per file not processed and per GPU check that did not pass,
//! each with GitLab's fields (`description`, `check_name`, `fingerprint`, `severity`,
//! `location.path`, `location.lines.begin`) and Code Climate's `type` and `categories`.
//!
//! GitLab tells a new issue from an old one by its fingerprint alone, and keeps only the first
//! issue of a fingerprint. So a fingerprint is made of what identifies the finding in the tree,
//! as the baseline keys it (`engine/baseline.rs`): the file, the rule and the text of the
//! reported line (not its number: code inserted above leaves it as it was), and which
//! occurrence of that same finding in the file it is (two identical lines, two issues).
//!
//! GitLab shows the path and the description in the merge request: text from the tree reaches
//! them as every format prints it (`base/escape.rs`): a name escaped as git quotes it, a message
//! made printable, and the document's strings with `\uXXXX` for what a log would act on.

use std::collections::HashMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::sarif::{FILE_ERROR, GPU_CHECK};
use crate::base::escape::printable;
use crate::model::outcome::{CheckStatus, FileOutcome, GpuCheck};

#[derive(Serialize)]
struct Issue<'a> {
    description: String,
    check_name: &'a str,
    fingerprint: String,
    severity: &'static str,
    location: Location<'a>,
    /// Code Climate's: every entry of the report is an issue.
    #[serde(rename = "type")]
    kind: &'static str,
    /// Code Climate's: a card chosen wrong is a bug risk (the only category that fits).
    categories: [&'static str; 1],
    /// Code Climate's longer text (GitLab shows it under the description): the finding's help.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Content>,
}

#[derive(Serialize)]
struct Content {
    body: String,
}

#[derive(Serialize)]
struct Location<'a> {
    path: &'a str,
    lines: Lines,
}

#[derive(Serialize)]
struct Lines {
    begin: usize,
}

impl<'a> Issue<'a> {
    fn new(
        check_name: &'a str,
        description: String,
        severity: &'static str,
        path: &'a str,
        line: usize,
        fingerprint: String,
    ) -> Issue<'a> {
        Issue {
            description,
            check_name,
            fingerprint,
            severity,
            location: Location {
                path,
                lines: Lines { begin: line.max(1) },
            },
            kind: "issue",
            categories: ["Bug Risk"],
            content: None,
        }
    }
}

/// GitLab's severity (`info`, `minor`, `major`, `critical`, `blocker`) of a finding: a violation
/// is `major`; a finding left for review is `minor`, never `info`, since the run fails on it as
/// on a violation; `info` is information. A file not processed (nothing in it was checked) and a
/// GPU check that did not pass (the card it lands on, measured) are `critical`.
fn severity(finding: &str) -> &'static str {
    match finding {
        "violation" => "major",
        "review" => "minor",
        _ => "info",
    }
}

/// The report: `prefix` is the tree root's place in the repository (`svc/`), since GitLab reads
/// paths from the repository's top; `rewritten`: `fix` wrote its fixes, so the findings it fixed
/// are gone from the tree and are not issues (a dry run leaves them all).
pub fn render(prefix: &str, files: &[FileOutcome], rewritten: bool) -> serde_json::Result<String> {
    let paths: Vec<String> = files
        .iter()
        .map(|f| format!("{prefix}{}", f.path))
        .collect();
    let mut issues = Vec::new();
    for (file, path) in files.iter().zip(&paths) {
        if let Some(error) = &file.error {
            let (line, _) = crate::model::outcome::error_position(error);
            let description = format!(
                "{FILE_ERROR} file not processed, nothing in it was checked: {}",
                printable(error)
            );
            let fingerprint = fingerprint(&["file-not-processed", path]);
            issues.push(Issue::new(
                FILE_ERROR,
                description,
                "critical",
                path,
                line,
                fingerprint,
            ));
        }
        // Which occurrence of the same finding (rule, line text) in this file each one is,
        // counting those reported (after `fix`, as the next scan counts them).
        let mut seen: HashMap<(&str, &str, bool), usize> = HashMap::new();
        for f in file.findings.iter().filter(|f| !(rewritten && f.fixed)) {
            let line_text = if f.whole_file { "" } else { &*f.line_text };
            let nth = seen.entry((&f.rule, line_text, f.whole_file)).or_default();
            *nth += 1;
            let scope = if f.whole_file { "file" } else { "line" };
            let fingerprint =
                fingerprint(&["finding", path, &f.rule, scope, line_text, &nth.to_string()]);
            // As text labels them; GitLab shows the description, not `check_name`.
            let label = match f.severity.as_str() {
                "violation" => String::new(),
                other => format!(" [{other}]"),
            };
            let description = format!("{}{label} {}", f.rule, printable(&f.message));
            let severity = severity(&f.severity);
            let mut issue = Issue::new(&f.rule, description, severity, path, f.line, fingerprint);
            issue.content = f.help.as_deref().map(|help| Content {
                body: printable(help).into_owned(),
            });
            issues.push(issue);
        }
        if let Some(text) = file.gpu_check.as_ref().and_then(gpu_failure) {
            let fingerprint = fingerprint(&["gpu-check", path]);
            let description = format!("{GPU_CHECK} {text}");
            issues.push(Issue::new(
                GPU_CHECK,
                description,
                "critical",
                path,
                1,
                fingerprint,
            ));
        }
    }
    let mut out = crate::base::escape::json(&issues)?;
    out.push('\n');
    Ok(out)
}

/// What a GPU check that did not pass says (failed, leaked, could not run); `None` when it
/// passed or was skipped: a Code Quality report lists problems only.
fn gpu_failure(check: &GpuCheck) -> Option<String> {
    let device = printable(check.device_name.as_deref().unwrap_or("no device"));
    let message = printable(check.message.as_deref().unwrap_or(""));
    let what = match check.status? {
        CheckStatus::Passed | CheckStatus::Skipped => return None,
        CheckStatus::Failed => format!("GPU check failed on {device}"),
        CheckStatus::Leak => format!("GPU check leaked memory on {device}"),
        CheckStatus::Error => "GPU check could not run".to_string(),
    };
    Some(if message.is_empty() {
        what
    } else {
        format!("{what}: {message}")
    })
}

/// 128 bits of SHA-256 over the parts, each prefixed with its length (no two lists of parts
/// hash the same bytes): the same on every machine and every run, unlike std's hasher.
fn fingerprint(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"gpu-homogenize");
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn parts_are_delimited_by_their_lengths() {
        assert_ne!(
            super::fingerprint(&["ab", "c"]),
            super::fingerprint(&["a", "bc"])
        );
        assert_eq!(super::fingerprint(&["a"]).len(), 32);
    }
}
