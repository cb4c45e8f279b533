//! The GPU stage of a run: not wired yet.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::app::Setup;
use crate::cli::GpuArgs;
use crate::outcome::FileOutcome;
use crate::pipeline::{run_cpu_stage, Progress};
use crate::process::Engine;
use crate::report::summary::GpuSummary;
use crate::walk::Entry;

pub fn run(
    _setup: &Setup,
    engine: &Engine,
    entries: &[Entry],
    jobs: usize,
    _args: &GpuArgs,
    progress: &Progress,
    cancelled: &Arc<AtomicBool>,
) -> anyhow::Result<(Vec<FileOutcome>, Option<GpuSummary>)> {
    let outcomes = run_cpu_stage(engine, entries, jobs, progress, cancelled, &|_, _| {});
    Ok((outcomes, None))
}
