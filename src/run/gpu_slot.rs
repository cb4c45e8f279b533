//! The GPU stage of a run: one thread owns the GPU (the slot), fed through a
//! `crossbeam_channel::bounded(1)` by the CPU workers; it runs one check at a time, so the
//! checks never overlap while CPU work for other files goes on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use super::cpu::run_cpu_stage;
use super::progress::Progress;
use super::Setup;
use crate::cli::{GpuArgs, GpuMode};
use crate::gpu::{GpuChecker, GpuJob, GpuUnavailable};
use crate::outcome::{CheckStatus, FileOutcome, GpuCheck};
use crate::process::{Engine, GpuJobSpec};
use crate::summary::GpuSummary;
use crate::walk::Entry;

/// The slot: a thread, its job channel (capacity 1) and its results.
struct GpuSlot {
    jobs: Sender<GpuJob>,
    results: Receiver<(usize, GpuCheck)>,
    thread: thread::JoinHandle<Option<String>>,
}

impl GpuSlot {
    fn start(
        mut checker: Box<dyn GpuChecker>,
        started: Instant,
        cancelled: Arc<AtomicBool>,
        progress: indicatif::ProgressBar,
    ) -> GpuSlot {
        let (jobs, inbox) = bounded::<GpuJob>(1);
        let (outbox, results) = unbounded();
        let thread = thread::spawn(move || {
            let mut leaks = 0;
            for job in inbox {
                let check = if cancelled.load(Ordering::SeqCst) {
                    skipped("interrupted before its GPU check")
                } else {
                    checker.check(&job, started, &cancelled)
                };
                leaks += usize::from(check.status == Some(CheckStatus::Leak));
                progress.inc(1);
                progress.set_message(format!("{leaks} leak(s)"));
                let _ = outbox.send((job.index, check));
            }
            checker.device()
        });
        GpuSlot {
            jobs,
            results,
            thread,
        }
    }
}

/// Run the CPU stage with the GPU slot behind it, as `--gpu` asks.
#[allow(clippy::too_many_arguments)]
pub fn run(
    setup: &Setup,
    engine: &Engine,
    cache: super::cpu::Cached,
    entries: &[Entry],
    jobs: usize,
    args: &GpuArgs,
    progress: &mut Progress,
    cancelled: &Arc<AtomicBool>,
) -> anyhow::Result<(Vec<FileOutcome>, Option<GpuSummary>)> {
    let policy = &setup.config.policy;
    let checker = match args.gpu {
        GpuMode::Off => Err(GpuUnavailable("--gpu off".into())),
        _ => crate::gpu::open_checker(policy, args),
    };
    let checker = match (checker, args.gpu) {
        (Ok(checker), _) => checker,
        (Err(GpuUnavailable(reason)), GpuMode::Require) => anyhow::bail!("--gpu require: {reason}"),
        (Err(GpuUnavailable(reason)), mode) => {
            if mode == GpuMode::Auto {
                eprintln!("note: GPU checks skipped: {reason}");
            }
            return Ok(without_gpu(
                engine, cache, entries, jobs, progress, cancelled, &reason, policy,
            ));
        }
    };
    progress.add_gpu();
    let progress = &*progress;
    let started = Instant::now();
    let slot = GpuSlot::start(
        checker,
        started,
        Arc::clone(cancelled),
        progress.gpu.clone(),
    );
    let send = |index: usize, spec: GpuJobSpec| {
        let job = GpuJob {
            index,
            path: spec.path,
            env: spec.env,
        };
        // Blocks while the slot is busy and one job waits: the bounded(1) back-pressure.
        let _ = slot.jobs.send(job);
    };
    let mut outcomes = run_cpu_stage(engine, cache, entries, jobs, progress, cancelled, &send);
    progress.gpu_queue_known();
    let GpuSlot {
        jobs: sender,
        results,
        thread,
    } = slot;
    drop(sender);
    let device = thread.join().unwrap_or(None);
    for (index, check) in results.try_iter() {
        if let Some(outcome) = outcomes.get_mut(index) {
            outcome.gpu_check = Some(check);
        }
    }
    let summary = GpuSummary::ran(&outcomes, device, policy);
    Ok((outcomes, Some(summary)))
}

/// The GPU check of one source already through the CPU stage (`check -`): the same checker,
/// modes and ledger as a run over files.
pub fn check_one(
    setup: &Setup,
    processed: crate::process::Processed,
    args: &GpuArgs,
) -> anyhow::Result<(FileOutcome, Option<GpuSummary>)> {
    let policy = &setup.config.policy;
    let mut outcome = processed.outcome;
    let checker = match args.gpu {
        GpuMode::Off => Err(GpuUnavailable("--gpu off".into())),
        _ => crate::gpu::open_checker(policy, args),
    };
    let mut checker = match (checker, args.gpu) {
        (Ok(checker), _) => checker,
        (Err(GpuUnavailable(reason)), GpuMode::Require) => anyhow::bail!("--gpu require: {reason}"),
        (Err(GpuUnavailable(reason)), mode) => {
            if mode == GpuMode::Auto {
                eprintln!("note: GPU checks skipped: {reason}");
            }
            let wanted = usize::from(processed.gpu_job.is_some());
            if wanted > 0 {
                outcome.gpu_check = Some(skipped(&reason));
            }
            let summary = GpuSummary {
                state: "skipped".into(),
                reason: Some(reason),
                skipped: wanted,
                leak_alert_mib: policy.leak_alert_mib,
                leak_fail_mib: policy.leak_fail_mib,
                ..GpuSummary::default()
            };
            return Ok((outcome, Some(summary)));
        }
    };
    if let Some(spec) = processed.gpu_job {
        let job = GpuJob {
            index: 0,
            path: spec.path,
            env: spec.env,
        };
        let cancelled = AtomicBool::new(false);
        outcome.gpu_check = Some(checker.check(&job, Instant::now(), &cancelled));
    }
    let outcomes = std::slice::from_ref(&outcome);
    let summary = GpuSummary::ran(outcomes, checker.device(), policy);
    Ok((outcome, Some(summary)))
}

#[allow(clippy::too_many_arguments)]
fn without_gpu(
    engine: &Engine,
    cache: super::cpu::Cached,
    entries: &[Entry],
    jobs: usize,
    progress: &Progress,
    cancelled: &Arc<AtomicBool>,
    reason: &str,
    policy: &crate::policy::Policy,
) -> (Vec<FileOutcome>, Option<GpuSummary>) {
    let wanted = std::sync::Mutex::new(Vec::new());
    let mut outcomes = run_cpu_stage(
        engine,
        cache,
        entries,
        jobs,
        progress,
        cancelled,
        &|i, _| {
            if let Ok(mut w) = wanted.lock() {
                w.push(i);
            }
        },
    );
    let wanted = wanted.into_inner().unwrap_or_default();
    for i in &wanted {
        outcomes[*i].gpu_check = Some(skipped(reason));
    }
    let summary = GpuSummary {
        state: "skipped".into(),
        reason: Some(reason.to_string()),
        skipped: wanted.len(),
        leak_alert_mib: policy.leak_alert_mib,
        leak_fail_mib: policy.leak_fail_mib,
        ..GpuSummary::default()
    };
    (outcomes, Some(summary))
}

fn skipped(reason: &str) -> GpuCheck {
    GpuCheck {
        status: Some(CheckStatus::Skipped),
        message: Some(reason.to_string()),
        ..GpuCheck::default()
    }
}
