//! `gpu-homogenize report`: scan the whole tree, read its journal, hand both to `report/`; or,
//! with `--merge`, put the shards of a CI matrix back together.

use anyhow::Context;

use super::{exit_status, gpu_failed, EXIT_ERROR, EXIT_FINDINGS, EXIT_OK};
use crate::cli::{InputArgs, ReportArgs, ReportFormat};
use crate::journal::{now_rfc3339, Journal};
use crate::outcome::FileStatus;
use crate::process::Mode;
use crate::report::coordinator::{self, build, Tree};
use crate::report::merge::{Format, Input, Verdict};
use crate::report::{html, markdown};
use crate::run::{engine, execute, setup};

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
    let input = InputArgs {
        paths: vec![args.root.clone().unwrap_or_else(|| ".".into())],
        config: args.config.clone(),
        // The CLI's default for scan, fix and check.
        max_file_size: 4 * 1024 * 1024,
        jobs: None,
        stdin_filename: None,
        no_cache: args.no_cache,
        shard: None,
        lint: Default::default(),
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
    let journal = Journal::read(&setup.root);
    for warning in &journal.warnings {
        eprintln!("warning: {}", crate::escape::printable(warning));
    }
    let tree = Tree {
        root: &setup.root,
        config: &setup.config,
    };
    let mut report = build(&tree, &outcomes, &journal, now_rfc3339());
    report.place_in_repository(&crate::outcome::repository_prefix(&setup.root));
    let text = match args.format.unwrap_or(ReportFormat::Md) {
        ReportFormat::Md | ReportFormat::Sarif => markdown::render(&report),
        ReportFormat::Json => coordinator::json(&report),
        ReportFormat::Html => html::render(&report),
    };
    write_out(args.out.as_deref(), &text)?;
    Ok(EXIT_OK)
}

/// `report --merge FILE…`: the shards' documents as the one an unsharded run prints, and the
/// exit status that run would have had.
fn merge(args: &ReportArgs) -> anyhow::Result<i32> {
    let inputs = args
        .merge
        .iter()
        .map(|path| {
            let name = crate::outcome::escape(path.as_os_str());
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("{name}: cannot read it: {e}"))?;
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
    write_out(args.out.as_deref(), &merged.text)?;
    Ok(match merged.verdict {
        Verdict::Run { command, summary } => exit_status(&summary, |s| match command.as_str() {
            "check" => s.count(FileStatus::NonCompliant) > 0 || gpu_failed(s),
            _ => s.violations > 0,
        }),
        Verdict::Results { errors: true, .. } => EXIT_ERROR,
        Verdict::Results { findings, .. } => i32::from(findings) * EXIT_FINDINGS,
    })
}

/// The report on stdout, or in `out`.
fn write_out(out: Option<&std::path::Path>, text: &str) -> anyhow::Result<()> {
    match out {
        // Never through a symbolic link planted where the report goes (it would overwrite
        // whatever the link points to).
        Some(path) => {
            use std::io::Write as _;
            use std::os::unix::fs::OpenOptionsExt;
            let shown = crate::outcome::escape(path.as_os_str());
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
                .map_err(|e| match e.raw_os_error() {
                    Some(libc::ELOOP) => anyhow::anyhow!(
                        "{shown}: is a symbolic link; the report is never written through one"
                    ),
                    _ => anyhow::anyhow!("{shown}: cannot write the report: {e}"),
                })?;
            file.write_all(text.as_bytes())
                .with_context(|| format!("{shown}: cannot write the report"))?;
        }
        None => out!("{text}"),
    }
    Ok(())
}
