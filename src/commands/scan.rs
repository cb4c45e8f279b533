//! `gpu-homogenize scan`: report what breaks the policy; never writes anything.

use super::exit_status;
use super::present::{machine, paint};
use crate::cli::{GlobalArgs, ScanArgs};
use crate::process::Mode;
use crate::report::text;
use crate::run::{engine, execute, setup};

pub fn run(args: ScanArgs, global: &GlobalArgs) -> anyhow::Result<i32> {
    let setup = setup(&args.input)?;
    let mut engine = engine(&setup, &args.input, Mode::Scan)?;
    engine.touchpoints = args.touchpoints;
    let (outcomes, summary) = execute(&setup, &engine, &args.input, None)?;
    let policy = &setup.config.policy;
    if let Some(doc) = machine(
        args.format,
        "scan",
        &setup.root,
        policy,
        &outcomes,
        &summary,
    ) {
        out!("{doc}");
    } else {
        let paint = paint(global);
        if args.statistics {
            out!("{}", text::statistics(&outcomes, paint));
        } else {
            out!("{}", text::findings(&outcomes, false, paint));
        }
        err!("{}", text::errors(&outcomes));
        if !global.quiet {
            out!("{}", text::summary("scan", &summary));
        }
    }
    Ok(exit_status(&summary, |s| s.violations > 0))
}

/// `gpu-homogenize baseline`: scan, and write every finding to the baseline file.
pub fn baseline(args: crate::cli::BaselineArgs) -> anyhow::Result<i32> {
    let setup = setup(&args.input)?;
    let engine = engine(&setup, &args.input, Mode::Scan)?;
    let (outcomes, summary) = execute(&setup, &engine, &args.input, None)?;
    let text = crate::baseline::render(&outcomes);
    std::fs::write(&args.out, &text)
        .map_err(|e| anyhow::anyhow!("{}: cannot write the baseline: {e}", args.out.display()))?;
    let n: usize = outcomes
        .iter()
        .map(|o| o.findings.iter().filter(|f| f.severity != "info").count())
        .sum();
    err!("{}", text::errors(&outcomes));
    out!(
        "Wrote {n} finding{} to {}.\n",
        if n == 1 { "" } else { "s" },
        args.out.display()
    );
    Ok(if summary.errors > 0 {
        super::EXIT_ERROR
    } else {
        super::EXIT_OK
    })
}
