//! `gpu-homogenize scan`: report what breaks the policy; never writes anything.

use super::exit_status;
use super::present::{findings_text, machine, streamed, Ending};
use crate::cli::{GlobalArgs, ScanArgs};
use crate::engine::process::Mode;
use crate::engine::run::{engine, execute, execute_stdin, execute_streaming, setup, stdin_path};
use crate::report::text;

pub fn run(args: ScanArgs, global: &GlobalArgs) -> anyhow::Result<i32> {
    super::present::refuse_unhonoured(
        args.format,
        &[
            (args.statistics, "--statistics"),
            (args.show_fixes, "--show-fixes"),
            (args.verbose, "--verbose"),
        ],
    )?;
    let input = args.input.run_input();
    let setup = setup(&input)?;
    let mut engine = engine(&setup, &input, Mode::Scan)?;
    engine.touchpoints = args.touchpoints;
    let stdin = stdin_path(&input)?;
    let streams = super::present::streams(
        args.format,
        args.statistics,
        args.show_fixes || args.verbose,
        args.input.shard.is_some(),
    );
    if streams && stdin.is_none() && !args.add_noqa {
        let ending = Ending {
            command: "scan",
            after_fix: false,
            phases: None,
        };
        let policy = &setup.config.policy;
        let summary = streamed(args.format, ending, global, &setup.root, policy, |sink| {
            execute_streaming(&setup, &engine, &input, None, None, sink)
        })?;
        return Ok(exit_status(&summary, |s| s.violations > 0));
    }
    let (outcomes, summary) = match stdin {
        Some(_) if args.add_noqa => {
            anyhow::bail!("--add-noqa writes files; it cannot annotate a source read from stdin")
        }
        Some(name) => execute_stdin(&setup, &engine, &input, &name, super::read_stdin()?)?,
        None => execute(&setup, &engine, &input, None, None)?,
    };
    if args.add_noqa {
        return add_noqa(&setup, &input, &outcomes);
    }
    let policy = &setup.config.policy;
    if !machine(
        args.format,
        "scan",
        &setup.root,
        policy,
        &outcomes,
        &summary,
    )? {
        out!(
            "{}",
            findings_text(&outcomes, args.statistics, false, global)
        );
        if args.show_fixes {
            out!("{}", text::fixes(&outcomes, "scan"));
        }
        if args.verbose {
            out!("{}", text::evidence(&outcomes));
        }
        err!("{}", text::errors(&outcomes));
        if !global.quiet {
            out!("{}", text::summary("scan", &summary));
            out!("{}", text::held_fixes(&outcomes));
        }
    }
    Ok(exit_status(&summary, |s| s.violations > 0))
}

/// `scan --add-noqa`: a `noqa` comment for every finding left, file by file.
fn add_noqa(
    setup: &crate::engine::run::Setup,
    input: &crate::engine::run::RunInput,
    outcomes: &[crate::model::outcome::FileOutcome],
) -> anyhow::Result<i32> {
    let (mut added, mut files, mut failed) = (0, 0, 0);
    for file in outcomes {
        let count = file
            .findings
            .iter()
            .filter(|f| f.severity != "info")
            .count();
        let Some(language) = file.language.filter(|_| count > 0) else {
            continue;
        };
        let rel = std::path::Path::new(&file.path);
        let result = crate::fs::source::read_under(&setup.root, rel, input.max_file_size)
            .map_err(|e| e.to_string())
            .and_then(|bytes| crate::fs::source::decode(bytes).map_err(|e| e.to_string()))
            .and_then(|source| {
                if source.bytes != source.text.as_bytes() {
                    return Err("not UTF-8: add the comments by hand".to_string());
                }
                let new = crate::lang::add_noqa::annotate(&source.text, file, language)?;
                let options = crate::fs::write::WriteOptions::default();
                crate::fs::write::write_confined(
                    &setup.root,
                    rel,
                    &source.bytes,
                    new.as_bytes(),
                    &options,
                )
                .map_err(|e| e.to_string())
            });
        match result {
            Ok(()) => {
                added += count;
                files += 1;
            }
            Err(e) => {
                failed += 1;
                err!(
                    "error: {}: {}\n",
                    file.display,
                    crate::base::escape::printable(&e)
                );
            }
        }
    }
    out!(
        "Added {added} noqa directive{} to {files} file{}.\n",
        if added == 1 { "" } else { "s" },
        if files == 1 { "" } else { "s" }
    );
    Ok(if failed > 0 {
        super::EXIT_ERROR
    } else {
        super::EXIT_OK
    })
}

/// `gpu-homogenize baseline`: scan, and write every finding to the baseline file.
pub fn baseline(args: crate::cli::BaselineArgs) -> anyhow::Result<i32> {
    let input = args.input.run_input();
    let setup = setup(&input)?;
    let engine = engine(&setup, &input, Mode::Scan)?;
    let (outcomes, summary) = execute(&setup, &engine, &input, None, None)?;
    let text = crate::engine::baseline::render(&outcomes);
    let written = crate::fs::write::write_output(&setup.root, &args.out, text.as_bytes());
    crate::engine::leftovers::forget_own(&setup.root);
    written.map_err(|e| anyhow::anyhow!("cannot write the baseline: {e}"))?;
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
