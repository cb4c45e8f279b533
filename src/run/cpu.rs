//! The run: every file through the CPU stage in a rayon pool; each file that earns a GPU
//! check is handed to the single GPU slot while the other workers go on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use crate::cache::Cache;
use crate::outcome::{FileOutcome, FileStatus};
use crate::process::{Engine, GpuJobSpec};
use crate::walk::Entry;

use super::progress::Progress;

/// Run the CPU stage over `entries` with `jobs` workers. `gpu` receives each GPU job with the
/// index of its file; it may block (the slot's channel is bounded) without stopping the
/// other workers. Files not started when `cancelled` is set are marked skipped.
/// The content cache, and how to build the project indexes when the cache left them unbuilt
/// and a file must be analysed.
pub type Cached<'a> = Option<(&'a Cache, &'a (dyn Fn() + Sync))>;

pub fn run_cpu_stage(
    engine: &Engine,
    cache: Cached,
    entries: &[Entry],
    jobs: usize,
    progress: &Progress,
    cancelled: &Arc<AtomicBool>,
    gpu: &(dyn Fn(usize, GpuJobSpec) + Sync),
) -> Vec<FileOutcome> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .stack_size(WORKER_STACK)
        .build();
    let work = || {
        entries
            .par_iter()
            .enumerate()
            .map(|(i, entry)| {
                if cancelled.load(Ordering::SeqCst) {
                    return interrupted(engine, entry);
                }
                progress.started(i, &entry.rel);
                let processed = match cache {
                    Some((cache, build_index)) => cache.process(engine, entry, build_index),
                    None => engine.process(entry),
                };
                progress.done(i);
                if let Some(job) = processed.gpu_job {
                    progress.gpu.inc_length(1);
                    gpu(i, job);
                }
                processed.outcome
            })
            .collect::<Vec<_>>()
    };
    match pool {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    }
}

fn interrupted(engine: &Engine, entry: &Entry) -> FileOutcome {
    let mut outcome = FileOutcome::new(&entry.path, &entry.rel);
    // Still counted in its phase: an unreached file is never left out of "N/M compliant".
    outcome.phase = engine.phases.phase_of(&entry.rel).map(str::to_string);
    outcome.status = FileStatus::Skipped;
    outcome.reason = Some("interrupted before this file was processed".into());
    outcome
}

/// Stack of a CPU worker: parsers and AST drops recurse, and a deeply nested (but valid,
/// and under the nesting limit) file must not overflow it. Reserved, not committed.
pub const WORKER_STACK: usize = 256 << 20;

static SIGNAL_FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The flag Ctrl-C and SIGTERM set so the run stops cleanly; a second signal exits at once
/// (status 130). Installed first thing in `main`, before the walk; later calls share it.
pub fn install_signal_flag() -> Arc<AtomicBool> {
    let flag = SIGNAL_FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Registered first, so it runs before the flag is set: exits on the second.
            let _ =
                signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag));
            let _ = signal_hook::flag::register(signal, Arc::clone(&flag));
        }
        flag
    });
    Arc::clone(flag)
}
