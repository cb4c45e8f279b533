//! `gpu-homogenize report`: scan the whole tree, read its journal, hand both to `report/`; or,
//! with `--merge`, put the shards of a CI matrix back together.

use super::{exit_status, gpu_failed, EXIT_ERROR, EXIT_FINDINGS, EXIT_OK};
use crate::cli::{ReportArgs, ReportFormat};
use crate::engine::process::Mode;
use crate::engine::run::{engine, execute, setup};
use crate::journal::{now_rfc3339, Journal};
use crate::model::outcome::FileStatus;
use crate::report::coordinator::{self, build, Tree};
use crate::report::merge::{Format, Input, Verdict};
use crate::report::{html, markdown};

/// `gpu-homogenize report`: scan the whole tree, read its journal, render.
pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    if !args.merge.is_empty() {
        return merge(&args);
    }
    if args.format == Some(ReportFormat::Sarif) {
        anyhow::bail!(
            "`--format sarif` is for `report --merge` (SARIF shards); the coordinator report is md, json or html"
        );
    }
    let input = crate::engine::run::RunInput {
        paths: vec![args.root.clone().unwrap_or_else(|| ".".into())],
        config: args.config.clone(),
        max_file_size: crate::engine::run::DEFAULT_MAX_FILE_SIZE,
        jobs: None,
        stdin_filename: None,
        no_cache: args.no_cache,
        shard: None,
        ..Default::default()
    };
    if let Some(root) = args.root.as_ref().filter(|r| !r.is_dir()) {
        // Otherwise the nearest existing ancestor, up to `/`, would be scanned instead.
        anyhow::bail!(
            "{}: not a directory; give the root of the tree",
            root.display()
        );
    }
    let mut setup = setup(&input)?;
    // A subdirectory names the tree; the report is always about all of it.
    setup.paths = vec![setup.root.clone()];
    let engine = engine(&setup, &input, Mode::Scan)?;
    let (outcomes, _) = execute(&setup, &engine, &input, None, None)?;
    let mut journal = Journal::read(&setup.root);
    for path in &args.journal {
        journal.add(path);
    }
    for warning in &journal.warnings {
        eprintln!("warning: {}", crate::base::escape::printable(warning));
    }
    let tree = Tree {
        root: &setup.root,
        config: &setup.config,
    };
    let mut report = build(&tree, &outcomes, &journal, now_rfc3339());
    report.place_in_repository(&crate::model::outcome::repository_prefix(&setup.root));
    let text = match args.format.unwrap_or(ReportFormat::Md) {
        ReportFormat::Md | ReportFormat::Sarif => markdown::render(&report),
        ReportFormat::Json => coordinator::json(&report),
        ReportFormat::Html => html::render(&report),
    };
    write_out(Some(&setup.root), args.out.as_deref(), &text)?;
    Ok(EXIT_OK)
}

/// `report --merge FILE…`: the shards' documents as the one an unsharded run prints, and the
/// exit status that run would have had.
fn merge(args: &ReportArgs) -> anyhow::Result<i32> {
    let inputs = args
        .merge
        .iter()
        .map(|path| {
            let name = crate::model::outcome::display_path(path);
            let text = crate::fs::tree_file::read_named(path, crate::fs::tree_file::DOCUMENT_LIMIT)
                .map_err(|e| anyhow::anyhow!("cannot read it: {e}"))?;
            Ok(Input { name, text })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let merged = crate::report::merge::merge(&inputs)?;
    let wanted = match args.format {
        None => merged.format,
        Some(ReportFormat::Json) => Format::Json,
        Some(ReportFormat::Sarif) => Format::Sarif,
        Some(other) => anyhow::bail!(
            "`--merge` writes the shards' own format (json or sarif), not {}",
            if other == ReportFormat::Md {
                "md"
            } else {
                "html"
            }
        ),
    };
    if wanted != merged.format {
        anyhow::bail!(
            "the shards are {}, and a merge keeps their format: run the shards with `--output-format {}`",
            merged.format.name(),
            wanted.name().to_ascii_lowercase()
        );
    }
    write_out(None, args.out.as_deref(), &merged.text)?;
    Ok(match merged.verdict {
        Verdict::Run { command, summary } => exit_status(&summary, |s| match command.as_str() {
            "check" => s.count(FileStatus::NonCompliant) > 0 || gpu_failed(s),
            _ => s.violations > 0,
        }),
        Verdict::Results { errors: true, .. } => EXIT_ERROR,
        Verdict::Results { findings, .. } => i32::from(findings) * EXIT_FINDINGS,
    })
}

/// The report on stdout, or in `out`: written as every output is, never through a link
/// planted where it goes (`write::write_output`; the tree is the working directory's
/// when the command has none).
fn write_out(
    root: Option<&std::path::Path>,
    out: Option<&std::path::Path>,
    text: &str,
) -> anyhow::Result<()> {
    match out {
        Some(path) => {
            let root = root.unwrap_or(std::path::Path::new("."));
            let written = crate::fs::write::write_output(root, path, text.as_bytes());
            crate::engine::leftovers::forget_own(root);
            written.map_err(|e| anyhow::anyhow!("cannot write the report: {e}"))?;
        }
        None => out!("{text}"),
    }
    Ok(())
}
