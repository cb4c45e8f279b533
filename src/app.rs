//! The commands: set up a run from the command line, run it, print it, pick the exit status.

use std::path::{Path, PathBuf};

use crate::cli::{CheckArgs, Cli, Command, FixArgs, GpuArgs, InputArgs, OutputFormat, ScanArgs};
use crate::outcome::{FileOutcome, FileStatus};
use crate::pipeline::{install_signal_flag, run_cpu_stage, Progress};
use crate::policy::{Config, Phases, CONFIG_FILE};
use crate::process::{Engine, Mode};
use crate::python::header::PythonHeader;
use crate::python::Python;
use crate::report::progress::phase_lines;
use crate::report::summary::{GpuSummary, Summary};
use crate::report::{json, sarif, text};
use crate::source::Prefilter;
use crate::walk::{find_root, walk_tree};

/// `print!` that ends quietly on a closed pipe and fails (exit 2) on other write errors.
macro_rules! out {
    ($($arg:tt)*) => {
        crate::output::print(&format!($($arg)*))?
    };
}

macro_rules! err {
    ($($arg:tt)*) => {
        crate::output::eprint(&format!($($arg)*))
    };
}

/// Exit statuses, as ruff uses them.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FINDINGS: i32 = 1;
pub const EXIT_ERROR: i32 = 2;

pub fn run(cli: Cli) -> i32 {
    let result = match cli.command {
        Command::Scan(args) => scan(args),
        Command::Fix(args) => fix(args),
        Command::Check(args) => check(args),
        Command::Report(args) => crate::journal::report_command(args),
        Command::Doctor(args) => crate::gpu::doctor::run(&args),
        Command::Probe(args) => Ok(crate::gpu::probe::run(&args)),
        Command::Supervise(args) => Ok(crate::gpu::supervise::run(&args)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            err!("error: {e:#}\n");
            EXIT_ERROR
        }
    }
}

/// What every command that walks a tree sets up.
pub struct Setup {
    pub root: PathBuf,
    pub config: Config,
    pub paths: Vec<PathBuf>,
}

pub fn setup(input: &InputArgs) -> anyhow::Result<Setup> {
    let paths = if input.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        input.paths.clone()
    };
    let root = find_root(&paths)?;
    let config_path = input.config.clone().or_else(|| {
        let default = root.join(CONFIG_FILE);
        default.is_file().then_some(default)
    });
    let config = match &config_path {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    Ok(Setup {
        root,
        config,
        paths,
    })
}

pub fn engine(setup: &Setup, input: &InputArgs, mode: Mode) -> anyhow::Result<Engine> {
    let header = PythonHeader::load(&setup.config.policy, &setup.root)?;
    Ok(Engine {
        root: setup.root.clone(),
        phases: Phases::new(&setup.config.phases),
        python: Box::new(Python {
            policy: setup.config.policy.clone(),
            header,
        }),
        rust: crate::rust::support(&setup.config.policy, &setup.root)?,
        prefilter: Prefilter::new(),
        mode,
        max_file_size: input.max_file_size,
        write: crate::write::WriteOptions::default(),
        touchpoints: false,
        want_diff: false,
    })
}

fn jobs(input: &InputArgs) -> usize {
    input
        .jobs
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Walk, run the CPU stage (and the GPU slot when `gpu` is given), and count.
pub fn execute(
    setup: &Setup,
    engine: &Engine,
    input: &InputArgs,
    gpu: Option<&GpuArgs>,
) -> anyhow::Result<(Vec<FileOutcome>, Summary)> {
    let cancelled = install_signal_flag();
    let exclude: Vec<PathBuf> = engine.write.backup_dir.iter().cloned().collect();
    let found = walk_tree(&setup.paths, &setup.root, jobs(input), &exclude);
    let removing = engine.mode == Mode::Fix { dry_run: false };
    crate::leftovers::handle(&setup.root, &found.temp_files, removing);
    let entries = found.entries;
    let progress = Progress::new(entries.len(), gpu.is_some());
    let (outcomes, gpu_summary) = match gpu {
        Some(args) => crate::gpu_stage::run(
            setup,
            engine,
            &entries,
            jobs(input),
            args,
            &progress,
            &cancelled,
        )?,
        None => (
            run_cpu_stage(
                engine,
                &entries,
                jobs(input),
                &progress,
                &cancelled,
                &|_, _| {},
            ),
            None,
        ),
    };
    progress.finish();
    let interrupted = cancelled.load(std::sync::atomic::Ordering::SeqCst);
    let summary = Summary::of(&outcomes, gpu_summary, interrupted);
    Ok((outcomes, summary))
}

fn scan(args: ScanArgs) -> anyhow::Result<i32> {
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

fn fix(args: FixArgs) -> anyhow::Result<i32> {
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
    if !args.no_journal {
        crate::journal::record(&setup, command, &outcomes, &summary);
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

fn check(args: CheckArgs) -> anyhow::Result<i32> {
    let setup = setup(&args.input)?;
    let engine = engine(&setup, &args.input, Mode::Check)?;
    if args.format == OutputFormat::Sarif {
        anyhow::bail!("--format sarif is only for `scan`");
    }
    let (outcomes, summary) = execute(&setup, &engine, &args.input, Some(&args.gpu))?;
    if !args.no_journal {
        crate::journal::record(&setup, "check", &outcomes, &summary);
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

fn gpu_failed(s: &Summary) -> bool {
    s.gpu
        .as_ref()
        .is_some_and(|g: &GpuSummary| g.failed + g.leaks + g.errors > 0 || g.drift_failed)
}

fn exit_status(summary: &Summary, findings: impl Fn(&Summary) -> bool) -> i32 {
    if summary.errors > 0 || summary.interrupted {
        EXIT_ERROR
    } else if findings(summary) {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    }
}

fn all_rules() -> Vec<&'static crate::finding::Rule> {
    let mut rules: Vec<_> = crate::python::rules::ALL.to_vec();
    rules.extend(crate::rust::rules());
    rules
}

fn absolute(path: &Path) -> PathBuf {
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_path_buf())
}
