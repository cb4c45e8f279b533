//! The text a person reads: one line per finding (`path:line:col: CODE message`), diffs when
//! asked, per-file errors, and an end-of-run count.

use std::fmt::Write;

use crate::base::escape::printable;
use crate::model::outcome::{CheckStatus, FileOutcome, FileStatus};
use crate::model::summary::Summary;

/// ANSI colour for the parts of a finding line, as ruff colours them; off when piped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Paint {
    pub color: bool,
}

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    pub fn path(self, text: &str) -> String {
        self.wrap("1", text)
    }
    pub fn code(self, text: &str) -> String {
        self.wrap("1;31", text)
    }
    pub fn mark(self, text: &str) -> String {
        self.wrap("36", text)
    }
}

/// Finding lines for `scan` / `check` (and fix's leftovers), ruff-style.
pub fn findings(files: &[FileOutcome], only_unfixed: bool, paint: Paint) -> String {
    let mut out = String::new();
    for file in files {
        for f in &file.findings {
            if only_unfixed && f.fixed {
                continue;
            }
            let mark = match (f.severity.as_str(), f.fixable) {
                ("violation", true) => format!(" {}", paint.mark("[*]")),
                ("review", _) => " [review]".to_string(),
                ("info", _) => " [info]".to_string(),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "{}:{}:{}: {}{} {}",
                paint.path(&file.display),
                f.line,
                f.column,
                paint.code(&f.rule),
                mark,
                printable(&f.message)
            );
            if let Some(help) = &f.help {
                let _ = writeln!(out, "  {} {}", paint.mark("help:"), printable(help));
            }
        }
        if let Some(why) = file.fix_refused() {
            let _ = writeln!(
                out,
                "{}: fix refused by the CPU check, its violations stay: {}",
                paint.path(&file.display),
                printable(why)
            );
        }
    }
    out
}

/// `--statistics`: one line per rule, as ruff prints them: the violations first (`[*]` when
/// `fix` rewrites some), then what is left for review, then information, each group the most
/// frequent first; each group sums to the summary's count of it.
pub fn statistics(files: &[FileOutcome], paint: Paint) -> String {
    type Row<'a> = ((u8, &'a str, &'a str), (usize, bool));
    let mut counts: std::collections::BTreeMap<(u8, &str, &str), (usize, bool)> =
        Default::default();
    for f in files.iter().flat_map(|file| &file.findings) {
        let group = match f.severity.as_str() {
            "violation" => 0,
            "review" => 1,
            _ => 2,
        };
        let entry = counts
            .entry((group, f.rule.as_str(), f.name.as_str()))
            .or_default();
        entry.0 += 1;
        entry.1 |= f.fixable;
    }
    let mut rows: Vec<Row> = counts.into_iter().collect();
    rows.sort_by(|a, b| (a.0 .0, b.1 .0, a.0).cmp(&(b.0 .0, a.1 .0, b.0)));
    let width = rows
        .iter()
        .map(|r| r.1 .0.to_string().len())
        .max()
        .unwrap_or(1);
    let mut out = String::new();
    for ((group, code, name), (count, fixable)) in rows {
        let mark = match (group, fixable) {
            (0, true) => paint.mark("[*]     "),
            (0, false) => " ".repeat(8),
            (1, _) => "[review]".to_string(),
            _ => "[info]  ".to_string(),
        };
        let _ = writeln!(out, "{count:>width$}\t{}\t{mark} {name}", paint.code(code));
    }
    out
}

/// The unsafe fixes held back, one line each (`--unsafe-fixes` applies them): a finding whose
/// own fix is unsafe, and the unsafe part of a file's header fix (the validation call).
pub fn held_fixes(files: &[FileOutcome]) -> String {
    let mut out = String::new();
    for file in files.iter().filter(|f| f.unsafe_fixes_held > 0) {
        let held: Vec<_> = file
            .findings
            .iter()
            .filter(|f| {
                f.applicability == Some(crate::model::finding::Applicability::Unsafe) && !f.fixable
            })
            .collect();
        for f in &held {
            let _ = writeln!(
                out,
                "  {}:{}:{}: {} {} (unsafe fix held back)",
                file.display, f.line, f.column, f.rule, f.name
            );
        }
        if file.unsafe_fixes_held > held.len() {
            let header = file.findings.iter().find(|f| {
                crate::model::rules::by_code(&f.rule)
                    .is_some_and(|r| r.subject == crate::model::finding::Subject::Header)
            });
            let (at, rule) = header.map_or((String::new(), "GH001"), |f| {
                (format!(":{}:{}", f.line, f.column), f.rule.as_str())
            });
            let _ = writeln!(
                out,
                "  {}{at}: {rule} the validation call in the `__main__` block (unsafe part of the header fix, held back)",
                file.display
            );
        }
    }
    out
}

/// `--show-fixes`, as ruff enumerates them: per file, how many findings of each rule were
/// fixed (`fix`), would be (`fix --dry-run`), or can be (`scan`).
pub fn fixes(files: &[FileOutcome], command: &str) -> String {
    let (done, heading) = match command {
        "fix" => (true, "Fixed"),
        "fix --dry-run" => (true, "Would fix"),
        _ => (false, "Fixable with `gpu-homogenize fix`:"),
    };
    let mut out = String::new();
    let mut total = 0;
    for file in files {
        let mut counts: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
        let fixes = file
            .findings
            .iter()
            .filter(|f| if done { f.fixed } else { f.fixable });
        for f in fixes {
            *counts.entry((&f.rule, &f.name)).or_default() += 1;
        }
        if counts.is_empty() {
            continue;
        }
        let _ = writeln!(out, "- {}:", file.display);
        for ((rule, name), n) in counts {
            total += n;
            let _ = writeln!(out, "    {n} × {rule} ({name})");
        }
    }
    if total == 0 {
        return match done {
            true => "No fixes applied.\n".to_string(),
            false => "No fixes available.\n".to_string(),
        };
    }
    let head = if done {
        format!("{heading} {total} finding{}:\n", plural(total))
    } else {
        format!("{heading}\n")
    };
    head + &out
}

/// `scan --verbose`: why each file is a program or a library, and how a program reaches GPU
/// code, with the file's status: the `evidence` of the JSON output, as lines.
pub fn evidence(files: &[FileOutcome]) -> String {
    let mut out = String::new();
    for file in files {
        let Some(evidence) = &file.evidence else {
            continue;
        };
        let _ = writeln!(
            out,
            "- {} ({}): {}",
            file.display,
            file.status.as_str(),
            printable(evidence)
        );
    }
    if out.is_empty() {
        return "No file has evidence: the tree holds no program or library the index knows (a Python module or a file of a Cargo package).\n".into();
    }
    format!("Why each file is what it is:\n{out}")
}

/// One line per file that could not be processed, for stderr.
pub fn errors(files: &[FileOutcome]) -> String {
    let mut out = String::new();
    for file in files.iter().filter(|f| f.status == FileStatus::Error) {
        let message = file.error.as_deref().unwrap_or("unknown error");
        let message = printable(message);
        let _ = writeln!(out, "error: {}: {message}", file.display);
    }
    out
}

/// GPU check lines: one per file that went through the slot.
pub fn gpu_checks(files: &[FileOutcome]) -> String {
    let mut out = String::new();
    for file in files {
        let Some(check) = &file.gpu_check else {
            continue;
        };
        let Some(status) = check.status else { continue };
        // Like ruff, a file that passes gets no line: the summary counts it.
        if matches!(status, CheckStatus::Skipped | CheckStatus::Passed) {
            continue;
        }
        let status = match status {
            CheckStatus::Passed => "passed",
            CheckStatus::Failed => "FAILED",
            CheckStatus::Leak => "LEAK",
            CheckStatus::Error => "ERROR",
            CheckStatus::Skipped => "skipped",
        };
        let device = printable(check.device_name.as_deref().unwrap_or("-"));
        let leak = check
            .leak_mib
            .map_or(String::new(), |l| format!(", leak {l:.0} MiB"));
        let message = check
            .message
            .as_deref()
            .map_or(String::new(), |m| format!(": {}", printable(m)));
        let _ = writeln!(
            out,
            "gpu {status}: {} on {device}{leak}{message}",
            file.display
        );
    }
    out
}

pub fn summary(command: &str, s: &Summary) -> String {
    let mut out = String::new();
    let n = |status| s.count(status);
    let (files, files_fixed) = (n(FileStatus::NonCompliant), s.files_fixed);
    let _ = match command {
        "fix --dry-run" | "fix" => writeln!(
            out,
            "{} {files_fixed} file{} ({} of {} violation{}), {}.",
            if command == "fix" {
                "Fixed"
            } else {
                "Would fix"
            },
            plural(files_fixed),
            s.fixed,
            s.violations,
            plural(s.violations),
            counted(s)
        ),
        _ => writeln!(
            out,
            "Found {} violation{} in {files} file{} ({} fixable with `gpu-homogenize fix`), {}.",
            s.violations,
            plural(s.violations),
            plural(files),
            s.fixable,
            counted(s)
        ),
    };
    let _ = write!(out, "{} file{}:", s.files, plural(s.files));
    let parts: Vec<String> = [
        (FileStatus::Fixed, "compliant after the fix"),
        (FileStatus::WouldFix, "compliant after the fix"),
        (FileStatus::NonCompliant, "non-compliant"),
        (FileStatus::NeedsReview, "needing review"),
        (FileStatus::Compliant, "compliant"),
        (FileStatus::Accepted, ACCEPTED_BY),
        (FileStatus::NoGpuCode, "without GPU code"),
        (FileStatus::Skipped, "skipped"),
        (FileStatus::Error, "errors"),
    ]
    .iter()
    .filter(|(status, _)| n(*status) > 0)
    .map(|(status, label)| {
        // "1 error", "2 errors": the only label that is a count noun.
        let label = if *label == "errors" && n(*status) == 1 {
            "error"
        } else {
            label
        };
        format!(" {} {label}", n(*status))
    })
    .collect();
    let _ = writeln!(out, "{}.", parts.join(","));
    if s.by_language.len() > 1 {
        let langs: Vec<String> = s
            .by_language
            .iter()
            .map(|(l, c)| format!("{c} {l}"))
            .collect();
        let _ = writeln!(out, "Languages: {}.", langs.join(", "));
    }
    if let Some(gpu) = &s.gpu {
        if gpu.state == "ran" {
            let _ = writeln!(
                out,
                "GPU checks: {} passed, {} failed, {} leak{}, {} error{} on {}; drift {:.0} MiB (fail above {:.0} MiB){}.",
                gpu.passed,
                gpu.failed,
                gpu.leaks,
                plural(gpu.leaks),
                gpu.errors,
                plural(gpu.errors),
                printable(gpu.device.as_deref().unwrap_or("?")),
                gpu.drift_mib,
                gpu.leak_fail_mib,
                if gpu.drift_failed { ": FAILED" } else { "" }
            );
        } else if let Some(reason) = &gpu.reason {
            let _ = writeln!(out, "GPU checks skipped: {}.", printable(reason));
        }
    }
    if s.unsafe_fixes_held > 0 {
        let n = s.unsafe_fixes_held;
        let _ = writeln!(
            out,
            "{n} unsafe fix{} held back: `gpu-homogenize fix --unsafe-fixes` applies {} (`gpu-homogenize rule CODE` says why each is unsafe); listed below.",
            if n == 1 { "" } else { "es" },
            if n == 1 { "it" } else { "them" }
        );
    }
    if s.interrupted {
        let _ = writeln!(out, "Interrupted: the summary above is partial.");
    }
    out
}

/// What a person accepted: a `noqa` comment, the baseline, `ignore`/`per-file-ignores`.
const ACCEPTED_BY: &str = "accepted by noqa/baseline/ignore";

/// The rest of the one vocabulary, after the violations: what is left for review, then
/// information, errors and what a person accepted when there are any (accepted findings are
/// not reported, and not counted as violations either).
fn counted(s: &Summary) -> String {
    let mut out = format!("{} left for review", s.review);
    if s.info > 0 {
        let _ = write!(out, ", {} for information", s.info);
    }
    if s.errors > 0 {
        let _ = write!(out, ", {} error{}", s.errors, plural(s.errors));
    }
    if s.accepted > 0 {
        let _ = write!(
            out,
            ", {} finding{} {ACCEPTED_BY}",
            s.accepted,
            plural(s.accepted)
        );
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
