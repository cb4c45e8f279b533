//! `gpu-homogenize check`: validate on the CPU and the GPU, never rewrite; journal it.

use super::present::{findings_text, machine, streamed, streams, Ending};
use super::{exit_status, gpu_failed};
use crate::cli::{CheckArgs, GlobalArgs};
use crate::engine::process::Mode;
use crate::engine::run::{check_stdin, engine, execute, execute_streaming, setup, stdin_path};
use crate::model::outcome::FileStatus;
use crate::report::progress::phase_lines;
use crate::report::text;

pub fn run(args: CheckArgs, global: &GlobalArgs) -> anyhow::Result<i32> {
    super::present::refuse_unhonoured(args.format, &[(args.statistics, "--statistics")])?;
    let input = args.input.run_input();
    let gpu = args.gpu.settings();
    let setup = setup(&input)?;
    let engine = engine(&setup, &input, Mode::Check)?;
    let stdin = stdin_path(&input)?;
    let policy = &setup.config.policy;
    let left =
        |s: &crate::model::summary::Summary| s.count(FileStatus::NonCompliant) > 0 || gpu_failed(s);
    let sharded = args.input.shard.is_some();
    if stdin.is_none() && streams(args.format, args.statistics, false, sharded) {
        let ending = Ending {
            command: "check",
            after_fix: false,
            phases: Some(&setup.config.phases),
        };
        let journal = (!args.no_journal).then_some("check");
        let summary = streamed(args.format, ending, global, &setup.root, policy, |sink| {
            execute_streaming(&setup, &engine, &input, Some(&gpu), journal, sink)
        })?;
        return Ok(exit_status(&summary, left));
    }
    let (outcomes, summary) = match stdin {
        // `--gpu-cmd` runs the file on disk, which is not the source piped in.
        Some(_) if args.gpu.gpu_cmd.is_some() => {
            anyhow::bail!("--gpu-cmd runs the file itself; it cannot run a source read from stdin")
        }
        Some(name) => check_stdin(&setup, &engine, &input, &name, super::read_stdin()?, &gpu)?,
        // A source piped in (an editor's buffer) is not the file on disk: not the journal's
        // history.
        None => execute(
            &setup,
            &engine,
            &input,
            Some(&gpu),
            (!args.no_journal).then_some("check"),
        )?,
    };
    if !machine(
        args.format,
        "check",
        &setup.root,
        policy,
        &outcomes,
        &summary,
    )? {
        out!(
            "{}",
            findings_text(&outcomes, args.statistics, false, global)
        );
        out!("{}", text::gpu_checks(&outcomes));
        err!("{}", text::errors(&outcomes));
        if !global.quiet {
            out!("{}", text::summary("check", &summary));
            out!("{}", text::held_fixes(&outcomes));
            out!("{}", phase_lines(&setup.config.phases, &outcomes));
        }
    }
    Ok(exit_status(&summary, left))
}
