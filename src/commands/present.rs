//! What scan, fix and check print, by format: the text a person reads (with colour, quiet,
//! statistics), JSON, SARIF, GitHub annotations.

use std::io::{IsTerminal, Write};

use clap::ValueEnum;
use std::path::Path;

use crate::cli::{ColorChoice, GlobalArgs, OutputFormat};
use crate::outcome::FileOutcome;
use crate::policy::Policy;
use crate::report::text::Paint;
use crate::report::{github, json, sarif};
use crate::summary::Summary;

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
            let mut out = std::io::BufWriter::with_capacity(1 << 16, crate::output::Stdout);
            json::write(&mut out, command, root, policy, outcomes, summary)
                .and_then(|()| out.flush())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            return Ok(true);
        }
        OutputFormat::Sarif => {
            sarif::render(root, outcomes, &crate::rules::all(), summary.shard.as_ref())
        }
        OutputFormat::Github => github::render(&crate::outcome::repository_prefix(root), outcomes),
        OutputFormat::Text => return Ok(false),
    };
    crate::output::print(&doc)?;
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
