//! The GPU stage of a run: one thread owns the GPU (the slot), fed through a
//! `crossbeam_channel::bounded(1)` by the CPU workers; it runs one check at a time, so the
//! checks never overlap while CPU work for other files goes on.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use super::cpu::run_cpu_stage;
use super::progress::Progress;
use super::Setup;
use crate::engine::gpu::{GpuChecker, GpuJob, GpuUnavailable};
use crate::engine::process::{Engine, GpuJobSpec};
use crate::fs::walk::Entry;
use crate::model::outcome::{CheckStatus, FileOutcome, GpuCheck};
use crate::model::summary::GpuSummary;

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

/// Run the CPU stage with the GPU slot behind it, as `--gpu` asks: each outcome is handed to
/// `emit` in the order of `entries` once it and every file before it are done, its GPU check
/// included.
#[allow(clippy::too_many_arguments)]
pub fn run(
    setup: &Setup,
    engine: &Engine,
    cache: super::cpu::Cached,
    entries: &[Entry],
    jobs: usize,
    args: &GpuSettings,
    progress: &mut Progress,
    cancelled: &Arc<AtomicBool>,
    emit: &mut (dyn FnMut(usize, FileOutcome) + Send),
) -> anyhow::Result<GpuSummary> {
    let policy = &setup.config.policy;
    let checker = match open(policy, args)? {
        Ok(checker) => checker,
        Err(reason) => {
            return Ok(without_gpu(
                engine, cache, entries, jobs, progress, cancelled, &reason, policy, emit,
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
    // The files whose job was sent: their outcome waits for the check.
    let sent = Mutex::new(HashSet::new());
    let send = |index: usize, spec: GpuJobSpec| {
        sent.lock().unwrap_or_else(|e| e.into_inner()).insert(index);
        let job = GpuJob {
            index,
            path: spec.path,
            env: spec.env,
        };
        // Blocks while the slot is busy and one job waits: the bounded(1) back-pressure.
        let _ = slot.jobs.send(job);
    };
    let mut order = Checked::new(GpuSummary::running(policy), emit);
    run_cpu_stage(
        engine,
        cache,
        entries,
        jobs,
        progress,
        cancelled,
        &send,
        &mut |i, outcome| {
            let awaiting = sent.lock().unwrap_or_else(|e| e.into_inner()).remove(&i);
            order.outcome(i, outcome, awaiting);
            for (index, check) in slot.results.try_iter() {
                order.check(index, check);
            }
        },
    );
    progress.gpu_queue_known();
    let GpuSlot {
        jobs: sender,
        results,
        thread,
    } = slot;
    drop(sender);
    // Until the slot has run its last job and ended.
    for (index, check) in results.iter() {
        order.check(index, check);
    }
    let device = thread.join().unwrap_or(None);
    let mut summary = order.finish();
    summary.ended(device, policy);
    Ok(summary)
}

/// The outcomes of the CPU stage (which come in order), handed on in that order once their GPU
/// checks end; counted as they are.
struct Checked<'e> {
    /// Not handed on yet, in order: (index, outcome, its check still runs).
    held: VecDeque<(usize, FileOutcome, bool)>,
    /// Checks that ended before the CPU stage handed their file on.
    early: HashMap<usize, GpuCheck>,
    summary: GpuSummary,
    emit: &'e mut (dyn FnMut(usize, FileOutcome) + Send),
}

impl<'e> Checked<'e> {
    fn new(summary: GpuSummary, emit: &'e mut (dyn FnMut(usize, FileOutcome) + Send)) -> Self {
        Checked {
            held: VecDeque::new(),
            early: HashMap::new(),
            summary,
            emit,
        }
    }

    /// The CPU stage's outcome of file `i`; `awaiting`: its GPU job was sent.
    fn outcome(&mut self, i: usize, mut outcome: FileOutcome, awaiting: bool) {
        let awaiting = awaiting
            && match self.early.remove(&i) {
                Some(check) => {
                    outcome.gpu_check = Some(check);
                    false
                }
                None => true,
            };
        self.held.push_back((i, outcome, awaiting));
        self.release();
    }

    /// The GPU check of file `i` ended.
    fn check(&mut self, i: usize, check: GpuCheck) {
        match self.held.binary_search_by_key(&i, |h| h.0) {
            Ok(k) if self.held[k].2 => {
                self.held[k].1.gpu_check = Some(check);
                self.held[k].2 = false;
                self.release();
            }
            Ok(_) => {}
            Err(_) => {
                self.early.insert(i, check);
            }
        }
    }

    /// Hands on every outcome before the first whose check still runs.
    fn release(&mut self) {
        while self.held.front().is_some_and(|h| !h.2) {
            if let Some((i, outcome, _)) = self.held.pop_front() {
                self.summary.add(&outcome);
                (self.emit)(i, outcome);
            }
        }
    }

    /// The slot has ended: what is left is handed on (a check that never came is none).
    fn finish(mut self) -> GpuSummary {
        for held in &mut self.held {
            held.2 = false;
        }
        self.release();
        self.summary
    }
}

/// The GPU check of one source already through the CPU stage (`check -`): the same checker,
/// modes and ledger as a run over files.
pub fn check_one(
    setup: &Setup,
    processed: crate::engine::process::Processed,
    args: &GpuSettings,
) -> anyhow::Result<(FileOutcome, Option<GpuSummary>)> {
    let policy = &setup.config.policy;
    let mut outcome = processed.outcome;
    let mut checker = match open(policy, args)? {
        Ok(checker) => checker,
        Err(reason) => {
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
    policy: &crate::model::policy::Policy,
    emit: &mut (dyn FnMut(usize, FileOutcome) + Send),
) -> GpuSummary {
    // The files that earned a check: each says it was skipped, and why.
    let wanted = Mutex::new(HashSet::new());
    let mut skipped_checks = 0;
    run_cpu_stage(
        engine,
        cache,
        entries,
        jobs,
        progress,
        cancelled,
        &|i, _| {
            wanted.lock().unwrap_or_else(|e| e.into_inner()).insert(i);
        },
        &mut |i, mut outcome| {
            if wanted.lock().unwrap_or_else(|e| e.into_inner()).remove(&i) {
                outcome.gpu_check = Some(skipped(reason));
                skipped_checks += 1;
            }
            emit(i, outcome);
        },
    );
    GpuSummary {
        state: "skipped".into(),
        reason: Some(reason.to_string()),
        skipped: skipped_checks,
        leak_alert_mib: policy.leak_alert_mib,
        leak_fail_mib: policy.leak_fail_mib,
        ..GpuSummary::default()
    }
}

fn skipped(reason: &str) -> GpuCheck {
    GpuCheck {
        status: Some(CheckStatus::Skipped),
        message: Some(reason.to_string()),
        ..GpuCheck::default()
    }
}

/// Whether the GPU checks run, as the caller asks (`--gpu` on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GpuMode {
    /// Use the GPU when a driver is found; otherwise say so once and skip the checks.
    #[default]
    Auto,
    /// Skip the GPU checks.
    Off,
    /// A missing driver is an error.
    Require,
}

/// The GPU slot's settings: whether it runs, and how each check runs.
#[derive(Debug, Clone)]
pub struct GpuSettings {
    pub mode: GpuMode,
    pub check: crate::engine::gpu::CheckSettings,
}

/// The checker the slot owns, or why the checks are skipped (said once on stderr under
/// `Auto`); a missing driver under `Require` is the run's error.
fn open(
    policy: &crate::model::policy::Policy,
    args: &GpuSettings,
) -> anyhow::Result<Result<Box<dyn GpuChecker>, String>> {
    let checker = match args.mode {
        GpuMode::Off => Err(GpuUnavailable("--gpu off".into())),
        _ => crate::engine::gpu::open_checker(policy, &args.check),
    };
    match (checker, args.mode) {
        (Ok(checker), _) => Ok(Ok(checker)),
        (Err(GpuUnavailable(reason)), GpuMode::Require) => anyhow::bail!("--gpu require: {reason}"),
        (Err(GpuUnavailable(reason)), mode) => {
            if mode == GpuMode::Auto {
                eprintln!(
                    "note: GPU checks skipped: {}",
                    crate::base::escape::printable(&reason)
                );
            }
            Ok(Err(reason))
        }
    }
}
