//! `gpu-homogenize scan`: report what breaks the policy; never writes anything.

use super::exit_status;
use crate::cli::{OutputFormat, ScanArgs};
use crate::process::Mode;
use crate::report::{json, sarif, text};
use crate::run::{engine, execute, setup};

pub fn run(args: ScanArgs) -> anyhow::Result<i32> {
    let setup = setup(&args.input)?;
    let mut engine = engine(&setup, &args.input, Mode::Scan)?;
    engine.touchpoints = args.touchpoints;
    let (outcomes, summary) = execute(&setup, &engine, &args.input, None)?;
    match args.format {
        OutputFormat::Json => out!(
            "{}",
            json::render(
                "scan",
                &setup.root,
                &setup.config.policy,
                &outcomes,
                &summary
            )
        ),
        OutputFormat::Sarif => out!("{}", sarif::render(&outcomes, &all_rules())),
        OutputFormat::Text => {
            out!("{}", text::findings(&outcomes, false));
            err!("{}", text::errors(&outcomes));
            out!("{}", text::summary("scan", &summary));
        }
    }
    Ok(exit_status(&summary, |s| s.violations > 0))
}

fn all_rules() -> Vec<&'static crate::finding::Rule> {
    let mut rules: Vec<_> = crate::python::rules::ALL.to_vec();
    rules.extend(crate::rust::rules());
    rules
}
