//! `gpu-homogenize fix`: rewrite, validate, write, journal (never under `--dry-run`).

use super::{absolute, exit_status, gpu_failed};
use crate::cli::{FixArgs, OutputFormat};
use crate::outcome::FileStatus;
use crate::process::Mode;
use crate::report::progress::phase_lines;
use crate::report::{json, text};
use crate::run::{engine, execute, setup};

pub fn run(args: FixArgs) -> anyhow::Result<i32> {
    let setup = setup(&args.input)?;
    let mut engine = engine(
        &setup,
        &args.input,
        Mode::Fix {
            dry_run: args.dry_run,
        },
    )?;
    engine.want_diff = args.diff || args.dry_run;
    engine.write.backup_dir = args.backup_dir.as_ref().map(|d| absolute(d));
    engine.write.break_hardlinks = args.break_hardlinks;
    if args.format == OutputFormat::Sarif {
        anyhow::bail!("--format sarif is only for `scan`");
    }
    let gpu = (!args.dry_run).then_some(&args.gpu);
    let (outcomes, summary) = execute(&setup, &engine, &args.input, gpu)?;
    let command = if args.dry_run { "fix --dry-run" } else { "fix" };
    // A dry run writes nothing, the journal included.
    if !args.no_journal && !args.dry_run {
        crate::journal::record(&setup.root, command, &outcomes, &summary);
    }
    match args.format {
        OutputFormat::Json => out!(
            "{}",
            json::render(
                command,
                &setup.root,
                &setup.config.policy,
                &outcomes,
                &summary
            )
        ),
        _ => {
            if engine.want_diff {
                for diff in outcomes.iter().filter_map(|o| o.diff.as_ref()) {
                    out!("{diff}");
                }
            }
            out!("{}", text::findings(&outcomes, true));
            out!("{}", text::gpu_checks(&outcomes));
            err!("{}", text::errors(&outcomes));
            out!("{}", text::summary(command, &summary));
            out!("{}", phase_lines(&setup.config.phases, &outcomes));
        }
    }
    Ok(exit_status(&summary, |s| {
        if args.dry_run {
            s.count(FileStatus::WouldFix) + s.count(FileStatus::NonCompliant) > 0
        } else {
            s.count(FileStatus::NonCompliant) > 0 || s.cpu_failed > 0 || gpu_failed(s)
        }
    }))
}
