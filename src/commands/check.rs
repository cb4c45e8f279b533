//! `gpu-homogenize check`: validate on the CPU and the GPU, never rewrite; journal it.

use super::{exit_status, gpu_failed};
use crate::cli::{CheckArgs, OutputFormat};
use crate::outcome::FileStatus;
use crate::process::Mode;
use crate::report::progress::phase_lines;
use crate::report::{json, text};
use crate::run::{engine, execute, setup};

pub fn run(args: CheckArgs) -> anyhow::Result<i32> {
    let setup = setup(&args.input)?;
    let engine = engine(&setup, &args.input, Mode::Check)?;
    if args.format == OutputFormat::Sarif {
        anyhow::bail!("--format sarif is only for `scan`");
    }
    let (outcomes, summary) = execute(&setup, &engine, &args.input, Some(&args.gpu))?;
    if !args.no_journal {
        crate::journal::record(&setup.root, "check", &outcomes, &summary);
    }
    match args.format {
        OutputFormat::Json => out!(
            "{}",
            json::render(
                "check",
                &setup.root,
                &setup.config.policy,
                &outcomes,
                &summary
            )
        ),
        _ => {
            out!("{}", text::findings(&outcomes, false));
            out!("{}", text::gpu_checks(&outcomes));
            err!("{}", text::errors(&outcomes));
            out!("{}", text::summary("check", &summary));
            out!("{}", phase_lines(&setup.config.phases, &outcomes));
        }
    }
    Ok(exit_status(&summary, |s| {
        s.count(FileStatus::NonCompliant) > 0 || gpu_failed(s)
    }))
}
