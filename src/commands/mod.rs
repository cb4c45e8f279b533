//! The commands: set up a run from the command line, drive the run engine, print what it
//! did, pick the exit status. One file per command.

/// `print!` that ends quietly on a closed pipe and fails (exit 2) on other write errors.
macro_rules! out {
    ($($arg:tt)*) => {
        crate::base::output::print(&format!($($arg)*))?
    };
}

macro_rules! err {
    ($($arg:tt)*) => {
        crate::base::output::eprint(&format!($($arg)*))
    };
}

mod cache;
mod check;
mod doctor;

/// The variables `doctor` reports (tests clear them for a stable output).
pub use doctor::SCHEDULER_VARS;
mod fix;
mod init;
mod present;
mod report;
mod rule;
mod scan;

use std::path::{Path, PathBuf};

use crate::cli::{Cli, Command};
use crate::model::outcome::FileStatus;
use crate::model::summary::{GpuSummary, Summary};

/// Exit statuses, as ruff uses them.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FINDINGS: i32 = 1;
pub const EXIT_ERROR: i32 = 2;

pub fn run(cli: Cli) -> i32 {
    let global = cli.global;
    let exit_zero = global.exit_zero;
    let result = match cli.command {
        Command::Scan(args) => scan::run(args, &global),
        Command::Fix(args) => fix::run(args, &global),
        Command::Check(args) => check::run(args, &global),
        Command::Rule(args) => rule::run(&args),
        Command::Baseline(args) => scan::baseline(args),
        Command::Completions(args) => rule::completions(&args),
        Command::Report(args) => report::run(args),
        Command::Cache(args) => cache::run(args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Init(args) => init::run(args),
        Command::Probe(args) => Ok(crate::engine::gpu::probe::run(
            args.mib,
            args.list,
            args.hold_ms,
        )),
        Command::Supervise(args) => Ok(crate::engine::gpu::supervise::run(&args.command)),
    };
    match result {
        // `--exit-zero`: findings do not fail the run (errors still do).
        Ok(EXIT_FINDINGS) if exit_zero => EXIT_OK,
        Ok(code) => code,
        Err(e) => {
            // An error may quote the tree (a config value, a line of it): each line printable.
            err!("error: {}\n", crate::base::escape::lines(&format!("{e:#}")));
            EXIT_ERROR
        }
    }
}

pub(crate) fn gpu_failed(s: &Summary) -> bool {
    s.gpu
        .as_ref()
        .is_some_and(|g: &GpuSummary| g.failed + g.leaks + g.errors > 0 || g.drift_failed)
}

pub(crate) fn exit_status(summary: &Summary, findings: impl Fn(&Summary) -> bool) -> i32 {
    if summary.errors > 0 || summary.interrupted {
        EXIT_ERROR
    } else if findings(summary) || summary.count(FileStatus::NeedsReview) > 0 {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    }
}

/// The source piped to a command that reads stdin (`-`).
pub(crate) fn read_stdin() -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow::anyhow!("cannot read stdin: {e}"))?;
    Ok(bytes)
}

pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_path_buf())
}
