//! What scan, fix and check print, by format: the text a person reads (with colour, quiet,
//! statistics), JSON, SARIF, GitHub annotations, GitLab Code Quality.

use std::io::{IsTerminal, Write};

use clap::ValueEnum;
use std::path::Path;

use crate::cli::{ColorChoice, GlobalArgs, OutputFormat};
use crate::model::outcome::{CheckStatus, FileOutcome, FileStatus};
use crate::model::policy::{PhaseSpec, Policy};
use crate::model::summary::Summary;
use crate::report::progress::PhaseTally;
use crate::report::text::Paint;
use crate::report::{github, gitlab, json, sarif};

/// Colour when asked, or in a terminal without NO_COLOR (the command layer decides).
pub fn paint(global: &GlobalArgs) -> Paint {
    let color = match global.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    Paint { color }
}

/// Print the document of a machine format; `false` for text, which each command prints its own
/// way. JSON is written to stdout as it is serialized.
pub fn machine(
    format: OutputFormat,
    command: &str,
    root: &Path,
    policy: &Policy,
    outcomes: &[FileOutcome],
    summary: &Summary,
) -> anyhow::Result<bool> {
    let doc = match format {
        OutputFormat::Json => {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, crate::base::output::Stdout);
            json::write(&mut out, command, root, policy, outcomes, summary)
                .and_then(|()| out.flush())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            return Ok(true);
        }
        OutputFormat::Sarif => sarif::render(
            root,
            outcomes,
            &crate::model::rules::all(),
            summary.shard.as_ref(),
        ),
        OutputFormat::Github => {
            github::render(&crate::model::outcome::repository_prefix(root), outcomes)
        }
        // After `fix` wrote, what it fixed is no longer in the tree: not an issue to track.
        OutputFormat::Gitlab => gitlab::render(
            &crate::model::outcome::repository_prefix(root),
            outcomes,
            command == "fix",
        )?,
        OutputFormat::Text => return Ok(false),
    };
    crate::base::output::print(&doc)?;
    Ok(true)
}

/// The findings as a person reads them: one line each (`after_fix`: as `fix` left them), or
/// the count per rule (`--statistics`).
pub fn findings_text(
    outcomes: &[FileOutcome],
    statistics: bool,
    after_fix: bool,
    global: &GlobalArgs,
) -> String {
    let paint = paint(global);
    if statistics {
        crate::report::text::statistics(outcomes, paint)
    } else {
        crate::report::text::findings(outcomes, after_fix, paint)
    }
}

/// Whether a command's output is printed file by file as the run hands each file on: where it
/// is one piece per file (findings as text, the JSON document of an unsharded run), not where
/// it needs every outcome first (SARIF and GitHub sort and group, `--statistics` counts,
/// `--show-fixes` lists the fixes after the findings) or is written whole at the end (GitLab).
pub fn streams(format: OutputFormat, statistics: bool, show_fixes: bool, sharded: bool) -> bool {
    match format {
        OutputFormat::Text => !statistics && !show_fixes,
        OutputFormat::Json => !sharded,
        _ => false,
    }
}

/// What a streamed run prints after its files, and for which command.
pub struct Ending<'a> {
    /// As the summary names it: `scan`, `check`, `fix`.
    pub command: &'a str,
    /// The findings as `fix` left them.
    pub after_fix: bool,
    /// The phase lines of `fix` and `check`.
    pub phases: Option<&'a [PhaseSpec]>,
}

/// `run` (the run engine, streaming) with its output printed as [`streams`] says: each file's
/// findings or JSON object as the run hands it on. What is said after the findings (GPU checks
/// that did not pass, errors, the summary, unsafe fixes held back, the phase lines) is kept
/// apart: the few files it names, and counts.
pub fn streamed(
    format: OutputFormat,
    ending: Ending,
    global: &GlobalArgs,
    root: &Path,
    policy: &Policy,
    run: impl FnOnce(&mut (dyn FnMut(FileOutcome) -> String + Send)) -> anyhow::Result<Summary>,
) -> anyhow::Result<Summary> {
    use crate::report::text;
    if format == OutputFormat::Json {
        let mut doc = json::Streamed::new(ending.command, root, policy);
        crate::base::output::print(&doc.begin())?;
        let summary = run(&mut |outcome| doc.file(&outcome))?;
        crate::base::output::print(&doc.end(&summary))?;
        return Ok(summary);
    }
    let paint = paint(global);
    let mut kept: Vec<FileOutcome> = Vec::new();
    let mut tally = PhaseTally::default();
    let summary = run(&mut |outcome| {
        let text = text::findings(std::slice::from_ref(&outcome), ending.after_fix, paint);
        tally.add(&outcome);
        // The files the end names: an error, unsafe fixes held back, a GPU check that did not
        // pass (`text::gpu_checks` prints no line for a passed or skipped one).
        let failed_check = outcome.gpu_check.as_ref().is_some_and(|c| {
            c.status
                .is_some_and(|s| !matches!(s, CheckStatus::Passed | CheckStatus::Skipped))
        });
        if outcome.status == FileStatus::Error || outcome.unsafe_fixes_held > 0 || failed_check {
            kept.push(outcome);
        }
        text
    })?;
    out!("{}", text::gpu_checks(&kept));
    err!("{}", text::errors(&kept));
    if !global.quiet {
        out!("{}", text::summary(ending.command, &summary));
        out!("{}", text::held_fixes(&kept));
        if let Some(specs) = ending.phases {
            out!("{}", tally.lines(specs));
        }
    }
    Ok(summary)
}

/// A combination the output cannot honour is refused (exit 2) rather than half-done: the
/// machine formats carry findings, not `--statistics` counts or `--diff` patches.
pub fn refuse_unhonoured(format: OutputFormat, asked: &[(bool, &str)]) -> anyhow::Result<()> {
    if format == OutputFormat::Text {
        return Ok(());
    }
    let name = format
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string());
    match asked.iter().find(|(on, _)| *on) {
        Some((_, flag)) => anyhow::bail!(
            "`{flag}` prints text and cannot be combined with `--format {name}`; drop one of them"
        ),
        None => Ok(()),
    }
}
