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
