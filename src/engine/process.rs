//! The CPU stage for one file: read, prefilter, parse, rules, rewrite, verify, write.
//! Every failure becomes the file's outcome; nothing here stops the other files.

use std::collections::HashSet;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::base::edit::{apply, unified_diff};
use crate::base::line_index::LineIndex;
use crate::fs::source::{self, Prefilter};
use crate::fs::walk::{Entry, EntryKind};
use crate::fs::write::{write_confined, WriteOptions};
use crate::lang::suppress;
use crate::lang::{Analysis, FileInfo, LanguageSupport};
use crate::model::finding::{Applicability, Finding, Severity};
use crate::model::lint::RuleFilter;
use crate::model::outcome::{
    CheckStatus, CpuCheck, FileOutcome, FileStatus, FindingRecord, GpuCheck, Language,
};
use crate::model::policy::Phases;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Scan,
    Check,
    Fix { dry_run: bool },
}

/// Everything the CPU stage needs, shared by all workers.
pub struct Engine {
    pub root: PathBuf,
    pub phases: Phases,
    pub python: Box<dyn LanguageSupport>,
    pub rust: Box<dyn LanguageSupport>,
    pub prefilter: Prefilter,
    pub mode: Mode,
    pub max_file_size: u64,
    /// Backups and hard links: how `fix` writes.
    pub write: WriteOptions,
    /// Keep info-level findings (GPU touchpoints) in the outcome.
    pub touchpoints: bool,
    /// Keep the unified diff of rewrites in the outcome.
    pub want_diff: bool,
    /// Which rules run on which file (`select`, `ignore`, `per-file-ignores`).
    pub lint: RuleFilter,
    /// Apply unsafe fixes too (`--unsafe-fixes`).
    pub unsafe_fixes: bool,
    /// Findings accepted for now (`--baseline`): not reported.
    pub baseline: Option<crate::engine::baseline::Baseline>,
    /// Keep the rewritten source in the outcome (`fix -` prints it instead of writing).
    pub keep_rewrite: bool,
    /// The tree root's place in its repository (`svc/`): diff headers are relative to the
    /// repository, so `git apply` takes them from its top.
    pub repo_prefix: String,
    /// Set when open files or memory ran out: the run stops (see [`crate::fs::resources`]).
    pub stop: crate::fs::resources::RunStop,
}

/// A file through the CPU stage, and what its GPU check needs when it gets one.
pub struct Processed {
    pub outcome: FileOutcome,
    pub gpu_job: Option<GpuJobSpec>,
}

/// The file and the env its header sets, for the GPU slot.
#[derive(Debug, Clone)]
pub struct GpuJobSpec {
    pub path: PathBuf,
    pub env: Vec<(String, String)>,
}

impl Engine {
    pub fn process(&self, entry: &Entry) -> Processed {
        self.process_read(entry, None)
    }

    /// [`Engine::process`], with the file's bytes when the caller read them already (the
    /// content cache hashes them first).
    pub fn process_read(&self, entry: &Entry, read: Option<Vec<u8>>) -> Processed {
        let phase = self.phases.phase_of(&entry.rel).map(str::to_string);
        let mut outcome = FileOutcome::new(&entry.path, &entry.rel);
        outcome.phase = phase;
        let language = match &entry.kind {
            EntryKind::Source(language) => *language,
            EntryKind::Symlink => return skipped(outcome, "symbolic link (never followed)"),
            EntryKind::Unsupported => return skipped(outcome, "not a Python or Rust source file"),
            EntryKind::Special(what) => return skipped(outcome, what),
            EntryKind::Error(message) => return errored(outcome, message.clone()),
        };
        outcome.language = Some(language);
        let bytes = match read.map_or_else(
            || source::read_under(&self.root, &entry.rel_path, self.max_file_size),
            Ok,
        ) {
            Ok(bytes) => bytes,
            Err(source::ReadError::Exhausted(what)) => return self.stopped(outcome, what),
            Err(e @ source::ReadError::TooLarge { .. }) => {
                return self.too_large(entry, language, outcome, e);
            }
            Err(e) => return errored(outcome, e.to_string()),
        };
        self.process_bytes(entry, language, bytes, outcome)
    }

    /// A source over the size limit: read through the prefilter in chunks, never whole, it
    /// holds no GPU code when none of the language's words is in it (as a small file without
    /// them, never parsed either); else it stays this file's error, with its size.
    fn too_large(
        &self,
        entry: &Entry,
        language: Language,
        mut outcome: FileOutcome,
        error: source::ReadError,
    ) -> Processed {
        let support = match language {
            Language::Python => self.python.as_ref(),
            Language::Rust => self.rust.as_ref(),
        };
        let why = if outcome.phase.is_some() {
            Some("it is in a phase".to_string())
        } else if support.starts_gpu_program(&entry.rel) {
            Some("it starts a GPU program".to_string())
        } else {
            match self
                .prefilter
                .large_may_have_gpu_code(&self.root, &entry.rel_path, language)
            {
                Ok(why) => why,
                Err(source::ReadError::Exhausted(what)) => return self.stopped(outcome, what),
                Err(e) => Some(e.to_string()),
            }
        };
        if let Some(why) = why {
            let message = match error {
                source::ReadError::TooLarge { size, limit } => format!(
                    "larger than the limit ({size} bytes > {limit}) and {why}, so it may hold \
                     GPU code: raise --max-file-size to check it, or exclude it"
                ),
                other => other.to_string(),
            };
            return errored(outcome, message);
        }
        outcome.evidence = support.evidence(&entry.rel);
        outcome.status = FileStatus::NoGpuCode;
        Processed {
            outcome,
            gpu_job: None,
        }
    }

    /// Open files or memory ran out while this file was processed: the run stops, and the file
    /// is left as it was, not an error of its own.
    fn stopped(
        &self,
        mut outcome: FileOutcome,
        what: crate::fs::resources::Exhausted,
    ) -> Processed {
        self.stop.stop(what, &outcome.path);
        outcome.findings.clear();
        skipped(outcome, "not processed: the run stopped (see its error)")
    }

    /// A source given as bytes (read from its file, or from stdin judged as `entry`).
    pub fn process_source(&self, entry: &Entry, bytes: Vec<u8>) -> Processed {
        let mut outcome = FileOutcome::new(&entry.path, &entry.rel);
        outcome.phase = self.phases.phase_of(&entry.rel).map(str::to_string);
        let EntryKind::Source(language) = entry.kind else {
            return skipped(outcome, "not a Python or Rust source file");
        };
        outcome.language = Some(language);
        self.process_bytes(entry, language, bytes, outcome)
    }

    fn process_bytes(
        &self,
        entry: &Entry,
        language: Language,
        bytes: Vec<u8>,
        mut outcome: FileOutcome,
    ) -> Processed {
        let support = match language {
            Language::Python => self.python.as_ref(),
            Language::Rust => self.rust.as_ref(),
        };
        outcome.evidence = support.evidence(&entry.rel);
        let in_phase = outcome.phase.is_some();
        // Like ripgrep: a file without a GPU word is never decoded nor parsed.
        if !in_phase
            && !support.starts_gpu_program(&entry.rel)
            && !self.prefilter.may_have_gpu_code(language, &bytes)
        {
            outcome.status = FileStatus::NoGpuCode;
            return Processed {
                outcome,
                gpu_job: None,
            };
        }
        let file = match source::decode(bytes) {
            Ok(file) => file,
            Err(e) => return errored(outcome, e.to_string()),
        };
        let info = FileInfo {
            path: &entry.path,
            rel: &entry.rel,
            in_phase,
        };
        if suppress::skips_file(&file.text, language) {
            return skipped(outcome, "`gpu-homogenize: skip-file` comment");
        }
        if let Err(e) = crate::lang::nesting::check(language, &file.text) {
            return errored(outcome, e.to_string());
        }
        let mut analysis = match support.analyze(&info, &file.text) {
            Ok(a) => a,
            Err(e) => return errored(outcome, e.to_string()),
        };
        let suppressed: Vec<&str> = self
            .suppress(entry, language, &file.text, analysis.as_mut())
            .into_iter()
            .map(|rule| {
                outcome.accepted += usize::from(rule.severity != Severity::Info);
                rule.code
            })
            .collect();
        outcome.unsafe_fixes_held = self.settle_unsafe(analysis.as_mut());
        if !analysis.in_scope() {
            outcome.status = FileStatus::NoGpuCode;
            outcome.findings = self.records(&file.text, analysis.findings(), None);
            return Processed {
                outcome,
                gpu_job: None,
            };
        }
        outcome.content_hash = Some(content_hash(&file.bytes));
        match self.mode {
            Mode::Scan | Mode::Check => {
                // What scan calls fixable is what fix does: the plan is proved here too.
                let refused = self
                    .prove(&file.text, &info, analysis.as_ref(), support, &suppressed)
                    .err();
                let mut processed =
                    self.judge(entry, &file.text, analysis.as_ref(), outcome, support);
                if let Some(problems) = refused {
                    refuse(&mut processed.outcome, &problems);
                }
                processed
            }
            Mode::Fix { dry_run } => self.fix(
                entry,
                &file,
                &info,
                analysis.as_ref(),
                outcome,
                (support, language),
                dry_run,
                &suppressed,
            ),
        }
    }

    /// Fix safety, in one place: without `--unsafe-fixes`, unsafe fixes are held back (the
    /// findings stay, unfixed). Returns how many were held back.
    fn settle_unsafe(&self, analysis: &mut dyn Analysis) -> usize {
        let mut held = 0;
        if !self.unsafe_fixes {
            let is_unsafe = |f: &Finding| f.applicability == Applicability::Unsafe;
            let safe_before: Vec<bool> = analysis
                .findings()
                .iter()
                .map(|f| f.fixable && !is_unsafe(f))
                .collect();
            held += suppress::hold_back_fixes(analysis, &is_unsafe);
            // A safe fix the unsafe one takes with it (the file's env plan goes whole) is told
            // so, not left unfixable without a word.
            let findings = analysis.parts_mut().0;
            let mut codes: Vec<&str> = findings
                .iter()
                .filter(|f| is_unsafe(f))
                .map(|f| f.rule.code)
                .collect();
            codes.sort_unstable();
            codes.dedup();
            for (f, _) in findings
                .iter_mut()
                .zip(safe_before)
                .filter(|(f, was)| *was && !f.fixable)
            {
                f.add_help(&format!(
                    "held back with the file's unsafe fix ({}): `gpu-homogenize fix --unsafe-fixes` applies them together",
                    codes.join(", ")
                ));
            }
        }
        let plan_part = analysis.settle_unsafe_edits(self.unsafe_fixes);
        held + usize::from(plan_part && !self.unsafe_fixes)
    }

    /// Suppression, in one place: findings of rules not selected for this file and findings
    /// with a `noqa` for their rule on their line are taken out, with their fixes. Returns
    /// the codes taken out.
    fn suppress(
        &self,
        entry: &Entry,
        language: Language,
        text: &str,
        analysis: &mut dyn Analysis,
    ) -> Vec<&'static crate::model::finding::Rule> {
        // One line index, and each line's `noqa` read once: 10,000 findings on one long line
        // must not rescan it 10,000 times.
        let lines = LineIndex::new(text);
        let noqa_by_line = std::cell::RefCell::new(std::collections::HashMap::new());
        let line_noqa = |f: &Finding| {
            let line = lines.line_of(f.range.start);
            let key = line.as_ptr() as usize;
            noqa_by_line
                .borrow_mut()
                .entry(key)
                .or_insert_with(|| suppress::noqa_of(line, language))
                .as_ref()
                .is_some_and(|n| n.covers(f.rule.code))
        };
        // Each baseline entry absorbs as many findings as it recorded.
        let used = std::cell::RefCell::new(std::collections::HashMap::new());
        let in_baseline = |f: &Finding| {
            let Some(baseline) = &self.baseline else {
                return false;
            };
            let line = lines.line_of(f.range.start).trim();
            let whole_file = f.range.is_empty() && f.range.start == 0;
            let allowance = baseline.allowance(&entry.rel, f.rule.code, line, whole_file);
            let mut used = used.borrow_mut();
            let n = used
                .entry((f.rule.code, line, whole_file))
                .or_insert(0usize);
            *n += 1;
            *n <= allowance
        };
        let file_noqa = suppress::file_noqa(text, language);
        let drop = |f: &Finding| {
            !self.lint.enabled(f.rule.code, &entry.rel)
                || file_noqa.as_ref().is_some_and(|n| n.covers(f.rule.code))
                || line_noqa(f)
                || in_baseline(f)
        };
        suppress::remove_findings(analysis, &drop)
    }

    /// `scan` and `check`: the file as it is.
    fn judge(
        &self,
        entry: &Entry,
        text: &str,
        analysis: &dyn Analysis,
        mut outcome: FileOutcome,
        support: &dyn LanguageSupport,
    ) -> Processed {
        outcome.status = verdict(analysis.findings(), outcome.accepted);
        outcome.findings = self.records(text, analysis.findings(), None);
        if self.mode == Mode::Scan {
            return Processed {
                outcome,
                gpu_job: None,
            };
        }
        let problems: Vec<String> = analysis
            .findings()
            .iter()
            .filter(|f| f.is_violation())
            .map(|f| format!("{} {}", f.rule.code, f.message))
            .collect();
        outcome.cpu_check = Some(cpu_check(problems));
        // A non-compliant file is checked too: its GPU check shows where it lands.
        let gpu_job = if analysis.gpu_code() {
            gpu_job(entry, support, text, &mut outcome)
        } else {
            None
        };
        Processed { outcome, gpu_job }
    }

    #[allow(clippy::too_many_arguments)]
    fn fix(
        &self,
        entry: &Entry,
        file: &source::SourceFile,
        info: &FileInfo,
        before: &dyn Analysis,
        mut outcome: FileOutcome,
        (support, language): (&dyn LanguageSupport, Language),
        dry_run: bool,
        suppressed: &[&str],
    ) -> Processed {
        let old = &file.text;
        if before.is_compliant() || before.edits().is_empty() {
            outcome.status = verdict(before.findings(), outcome.accepted);
            outcome.findings = self.records(old, before.findings(), None);
            outcome.cpu_check = Some(cpu_check(Vec::new()));
            let gpu_job = if proven(outcome.status) && before.gpu_code() {
                gpu_job(entry, support, old, &mut outcome)
            } else {
                None
            };
            return Processed { outcome, gpu_job };
        }
        let new = match self.prove(old, info, before, support, suppressed) {
            Ok(new) => new,
            Err(Refusal::Internal(e)) => {
                return errored(outcome, format!("internal error planning the rewrite: {e}"))
            }
            Err(refusal) => {
                // A plan the proof refuses is a violation left, with its reason: not an error.
                outcome.status = verdict(before.findings(), outcome.accepted);
                outcome.findings = self.records(old, before.findings(), None);
                outcome.cpu_check = Some(cpu_check(Vec::new()));
                refuse(&mut outcome, &refusal);
                return Processed {
                    outcome,
                    gpu_job: None,
                };
            }
        };
        let after = support.analyze(info, &new).ok().map(|mut after| {
            self.suppress(entry, language, &new, after.as_mut());
            after
        });
        outcome.findings = self.records(old, before.findings(), after.as_deref());
        // What the rewrite itself leaves for a person (an option the removed write fed that now
        // selects nothing, GH014): reported now, at its line in the rewritten file, not only by
        // the next run.
        if let Some(after) = after.as_deref() {
            let new_review: Vec<Finding> = after
                .findings()
                .iter()
                .filter(|f| f.rule.severity == Severity::Review)
                .filter(|f| !before.findings().iter().any(|b| b.rule.code == f.rule.code))
                .cloned()
                .collect();
            outcome
                .findings
                .extend(self.records(&new, &new_review, None));
        }
        outcome.cpu_check = Some(cpu_check(Vec::new()));
        if self.want_diff || dry_run {
            let path = format!("{}{}", self.repo_prefix, entry.rel);
            outcome.diff = Some(unified_diff(&path, old, &new));
        }
        if self.keep_rewrite {
            outcome.rewritten = Some(new.clone());
        }
        // The status is the rewritten text's: a partial fix leaves the file non-compliant, a
        // fix that leaves a finding for review needs review, so a second run reports what this
        // one ended with (a dry run says what `fix` would end with).
        let status = match after.as_ref().map(|a| verdict(a.findings(), 0)) {
            Some(FileStatus::Compliant) if dry_run => FileStatus::WouldFix,
            Some(FileStatus::Compliant) => FileStatus::Fixed,
            Some(status) => status,
            None => FileStatus::NonCompliant,
        };
        if dry_run {
            outcome.status = status;
            outcome.changed = true;
            return Processed {
                outcome,
                gpu_job: None,
            };
        }
        let written = write_confined(
            &self.root,
            &entry.rel_path,
            &file.bytes,
            new.as_bytes(),
            &self.write,
        );
        if let Err(e) = written {
            // Nothing was written: nothing counts as fixed.
            outcome.findings.iter_mut().for_each(|f| f.fixed = false);
            if let crate::fs::write::WriteError::Exhausted(what) = e {
                return self.stopped(outcome, what);
            }
            return errored(outcome, e.to_string());
        }
        // The hash of the bytes written (a latin-1 file is written back in latin-1).
        let written_bytes = crate::fs::source::codec::encode_declared(&new)
            .unwrap_or_else(|_| new.clone().into_bytes());
        outcome.content_hash = Some(content_hash(&written_bytes));
        outcome.status = status;
        outcome.changed = true;
        let gpu_job = if proven(outcome.status) && after.as_ref().is_some_and(|a| a.gpu_code()) {
            gpu_job(entry, support, &new, &mut outcome)
        } else {
            None
        };
        Processed { outcome, gpu_job }
    }

    /// The file's planned edits applied and proved: the rewritten text, or why the proof
    /// refuses it. `scan`, `check` and `fix` all ask here, so that they agree on what is
    /// fixable. A compliant file or one with no edit has nothing to prove.
    fn prove(
        &self,
        old: &str,
        info: &FileInfo,
        before: &dyn Analysis,
        support: &dyn LanguageSupport,
        suppressed: &[&str],
    ) -> Result<String, Refusal> {
        if before.is_compliant() || before.edits().is_empty() {
            return Ok(old.to_string());
        }
        let new = apply(old, before.edits()).map_err(|e| Refusal::Internal(e.to_string()))?;
        // A suppressed finding's fix was left out on purpose: the rewrite may still have it.
        let mut problems: Vec<String> = support
            .verify(info, old, &new, before)
            .into_iter()
            .filter(|p| {
                !suppressed
                    .iter()
                    .any(|code| p.starts_with(&format!("{code} still present")))
            })
            .collect();
        // A rewrite that wraps code (an async `main` made sync) nests it deeper: one the tool
        // would refuse to read is never written.
        if let Some(language) = crate::fs::walk::language_of(info.path) {
            if let Err(e) = crate::lang::nesting::check(language, &new) {
                problems.push(format!("the rewrite nests too deep to be read back ({e})"));
            }
        }
        if problems.is_empty() {
            Ok(new)
        } else {
            Err(Refusal::Proof(problems))
        }
    }

    /// Findings as records; with `after`, a finding is fixed when the rewrite no longer has it.
    fn records(
        &self,
        text: &str,
        findings: &[Finding],
        after: Option<&dyn Analysis>,
    ) -> Vec<FindingRecord> {
        // Linear in the findings: one line index, one set of what the rewrite still has.
        let lines = LineIndex::new(text);
        let left: Option<HashSet<(&str, &str)>> = after.map(|a| {
            a.findings()
                .iter()
                .map(|g| (g.rule.code, g.message.as_str()))
                .collect()
        });
        // The line of the previous finding, and its text: findings come in offset order.
        let mut last_line: Option<(usize, std::sync::Arc<str>)> = None;
        findings
            .iter()
            .filter(|f| {
                self.touchpoints
                    || f.rule.severity != Severity::Info
                    || f.rule.subject != crate::model::finding::Subject::Touchpoint
            })
            .map(|f| {
                let (line, column) = lines.line_column(f.range.start);
                let fixed = left.as_ref().is_some_and(|left| {
                    f.is_violation() && !left.contains(&(f.rule.code, f.message.as_str()))
                });
                FindingRecord {
                    rule: f.rule.code.to_string(),
                    name: f.rule.name.to_string(),
                    severity: severity_name(f.rule.severity).to_string(),
                    line,
                    column,
                    message: f.message.clone(),
                    help: f.help.clone(),
                    fixable: f.is_violation() && f.fixable,
                    applicability: match (f.is_violation(), f.fixable, f.applicability) {
                        (false, _, _) => Some(Applicability::DisplayOnly),
                        (true, false, Applicability::Safe) => None,
                        (true, _, a) => Some(a),
                    },
                    fixed,
                    line_text: match &last_line {
                        Some((l, shared)) if *l == line => shared.clone(),
                        _ => {
                            let shared: std::sync::Arc<str> =
                                lines.line_of(f.range.start).trim().into();
                            last_line = Some((line, shared.clone()));
                            shared
                        }
                    },
                    whole_file: f.range.is_empty() && f.range.start == 0,
                }
            })
            .collect()
    }
}

/// The status findings give a file: a violation, then a review left open, then a human's
/// acceptance; compliant only when none is left.
fn verdict(findings: &[Finding], accepted: usize) -> FileStatus {
    if findings.iter().any(Finding::is_violation) {
        FileStatus::NonCompliant
    } else if findings.iter().any(|f| f.rule.severity == Severity::Review) {
        FileStatus::NeedsReview
    } else if accepted > 0 {
        FileStatus::Accepted
    } else {
        FileStatus::Compliant
    }
}

/// No violation left on the CPU side: what `fix` hands to the GPU check (a file left for
/// review is checked too: the check shows where it lands).
fn proven(status: FileStatus) -> bool {
    status != FileStatus::NonCompliant
}

pub fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Violation => "violation",
        Severity::Review => "review",
        Severity::Info => "info",
    }
}

/// The file's GPU check, unless the language says it has none (a Rust library: the
/// binary's main sets the env), in which case the outcome says why.
fn gpu_job(
    entry: &Entry,
    support: &dyn LanguageSupport,
    text: &str,
    outcome: &mut FileOutcome,
) -> Option<GpuJobSpec> {
    if let Some(reason) = support.gpu_skip_reason(text) {
        outcome.gpu_check = Some(GpuCheck {
            status: Some(CheckStatus::Skipped),
            message: Some(reason),
            ..GpuCheck::default()
        });
        return None;
    }
    Some(GpuJobSpec {
        path: entry.path.clone(),
        env: support.header_env(text),
    })
}

fn cpu_check(problems: Vec<String>) -> CpuCheck {
    let status = if problems.is_empty() {
        CheckStatus::Passed
    } else {
        CheckStatus::Failed
    };
    CpuCheck { status, problems }
}

/// Why a planned rewrite is not made.
#[derive(Debug)]
enum Refusal {
    /// The proof (the CPU check of the rewritten text) found what the rewrite leaves or breaks.
    Proof(Vec<String>),
    /// The edits do not apply (overlap): a bug of the planner.
    Internal(String),
}

/// The file keeps its violations, none of them fixable, and says why: what `scan` marks
/// `[*]` is exactly what `fix` does.
fn refuse(outcome: &mut FileOutcome, refusal: &Refusal) {
    let problems = match refusal {
        Refusal::Proof(problems) => problems.clone(),
        Refusal::Internal(e) => vec![e.clone()],
    };
    for finding in &mut outcome.findings {
        finding.fixable = false;
        finding.fixed = false;
    }
    outcome.reason = Some(format!(
        "{}{}",
        crate::model::outcome::FIX_REFUSED,
        problems.join("; ")
    ));
    if outcome.cpu_check.is_some() {
        outcome.cpu_check = Some(cpu_check(problems));
    }
}

fn skipped(mut outcome: FileOutcome, reason: &str) -> Processed {
    outcome.status = FileStatus::Skipped;
    outcome.reason = Some(reason.to_string());
    Processed {
        outcome,
        gpu_job: None,
    }
}

fn errored(mut outcome: FileOutcome, message: String) -> Processed {
    outcome.status = FileStatus::Error;
    outcome.error = Some(message);
    Processed {
        outcome,
        gpu_job: None,
    }
}

/// SHA-256 of the content, hex: lets the report spot files edited by hand since validation.
pub fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
