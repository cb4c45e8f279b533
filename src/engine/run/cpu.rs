//! The run: every file through the CPU stage in a rayon pool; each file that earns a GPU
//! check is handed to the single GPU slot while the other workers go on.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use rayon::prelude::*;

use crate::engine::cache::Cache;
use crate::engine::process::{Engine, GpuJobSpec, Processed};
use crate::fs::walk::Entry;
use crate::model::outcome::{FileOutcome, FileStatus};

use super::progress::Progress;

/// The content cache, and how to build the project indexes when the cache left them unbuilt
/// and a file must be analysed.
pub type Cached<'a> = Option<(&'a Cache, &'a (dyn Fn() + Sync))>;

/// How far a worker may run ahead of the first file not yet finished: the outcomes waiting to
/// be handed on in order are at most this many.
const WINDOW: usize = 1024;

/// Files a worker takes at once.
const CHUNK: usize = 16;

/// Run the CPU stage over `entries` with `jobs` workers, each outcome handed to `emit` as soon
/// as it and every file before it are done, in the order of `entries`. `gpu` receives each GPU
/// job with the index of its file; it may block (the slot's channel is bounded) without
/// stopping the other workers. Files not started when `cancelled` is set are marked skipped.
/// Workers take the files in order, [`CHUNK`] at a time; one that would run more than
/// [`WINDOW`] files ahead of the first unfinished one waits, so that a slow file never makes
/// the others pile up.
#[allow(clippy::too_many_arguments)]
pub fn run_cpu_stage(
    engine: &Engine,
    cache: Cached,
    entries: &[Entry],
    jobs: usize,
    progress: &Progress,
    cancelled: &Arc<AtomicBool>,
    gpu: &(dyn Fn(usize, GpuJobSpec) + Sync),
    emit: &mut (dyn FnMut(usize, FileOutcome) + Send),
) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .stack_size(WORKER_STACK)
        .build();
    // Files are taken a few at a time: a file whose verdict the cache holds takes microseconds,
    // and two locks per file would cost as much.
    let mut emit_chunk = |c: usize, outcomes: Vec<FileOutcome>| {
        for (k, outcome) in outcomes.into_iter().enumerate() {
            emit(c * CHUNK + k, outcome);
        }
    };
    let order = InOrder::new(&mut emit_chunk, WINDOW / CHUNK);
    let one = |i: usize, entry: &Entry| {
        if cancelled.load(Ordering::SeqCst) {
            return interrupted(engine, entry, "interrupted before this file was processed");
        }
        if engine.stop.stopped() {
            return interrupted(
                engine,
                entry,
                "not processed: the run stopped (see its error)",
            );
        }
        progress.started(i, &entry.rel);
        let processed = crate::fs::panics::caught(entry, || match cache {
            Some((cache, build_index)) => cache.process(engine, entry, build_index),
            None => engine.process(entry),
        })
        .unwrap_or_else(|message| panicked(engine, entry, message));
        progress.done(i);
        if let Some(job) = processed.gpu_job {
            progress.gpu.inc_length(1);
            gpu(i, job);
        }
        processed.outcome
    };
    let work = || {
        entries
            .chunks(CHUNK)
            .enumerate()
            .par_bridge()
            .for_each(|(c, chunk)| {
                // A panic while these files are processed must not leave the others waiting.
                let _unwinding = Unwinding(&order);
                order.wait_turn(c);
                let outcomes = chunk
                    .iter()
                    .enumerate()
                    .map(|(k, entry)| one(c * CHUNK + k, entry))
                    .collect();
                order.done(c, outcomes);
            })
    };
    match pool {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    }
}

/// Poisons the order when dropped by a panic.
struct Unwinding<'a, 'e, T>(&'a InOrder<'e, T>);

impl<T> Drop for Unwinding<'_, '_, T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poison();
        }
    }
}

/// Hands on results numbered 0, 1, 2, … in that order, whatever order they finish in.
struct InOrder<'e, T> {
    state: Mutex<Pending<'e, T>>,
    turn: Condvar,
    window: usize,
}

struct Pending<'e, T> {
    next: usize,
    /// A worker panicked: its result never comes, and no one waits any more.
    poisoned: bool,
    waiting: BTreeMap<usize, T>,
    emit: &'e mut (dyn FnMut(usize, T) + Send),
}

impl<'e, T> InOrder<'e, T> {
    fn new(emit: &'e mut (dyn FnMut(usize, T) + Send), window: usize) -> InOrder<'e, T> {
        InOrder {
            state: Mutex::new(Pending {
                next: 0,
                poisoned: false,
                waiting: BTreeMap::new(),
                emit,
            }),
            turn: Condvar::new(),
            window: window.max(1),
        }
    }

    /// Blocks while `i` is `window` or more past the first result not handed on. The worker
    /// with that result is never the one waiting, so the run always moves on.
    fn wait_turn(&self, i: usize) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while !state.poisoned && i >= state.next + self.window {
            state = self.turn.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A result will never come (its worker panicked): every waiting worker goes on, so that
    /// the pool drains and the panic reaches the caller.
    fn poison(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.poisoned = true;
        self.turn.notify_all();
    }

    /// Result `i` is done: it, and every one after it that is done, are handed on.
    fn done(&self, i: usize, value: T) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *state;
        state.waiting.insert(i, value);
        let before = state.next;
        while let Some(value) = state.waiting.remove(&state.next) {
            (state.emit)(state.next, value);
            state.next += 1;
        }
        if state.next != before {
            self.turn.notify_all();
        }
    }
}

fn interrupted(engine: &Engine, entry: &Entry, reason: &str) -> FileOutcome {
    let mut outcome = FileOutcome::new(&entry.path, &entry.rel);
    // Still counted in its phase: an unreached file is never left out of "N/M compliant".
    outcome.phase = engine.phases.phase_of(&entry.rel).map(str::to_string);
    outcome.status = FileStatus::Skipped;
    outcome.reason = Some(reason.into());
    outcome
}

/// A bug met while this file was processed: the file's error, as ruff reports one; the other
/// files go on. Whatever it had begun to write was either swapped in whole or not at all.
fn panicked(engine: &Engine, entry: &Entry, message: String) -> Processed {
    let mut outcome = FileOutcome::new(&entry.path, &entry.rel);
    outcome.phase = engine.phases.phase_of(&entry.rel).map(str::to_string);
    outcome.language = match entry.kind {
        crate::fs::walk::EntryKind::Source(language) => Some(language),
        _ => None,
    };
    outcome.status = FileStatus::Error;
    outcome.error = Some(format!(
        "panicked while processing this file ({message}): this is a bug in gpu-homogenize; \
         please report it, with this file if you can"
    ));
    Processed {
        outcome,
        gpu_job: None,
    }
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

#[cfg(test)]
mod tests {
    use super::InOrder;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn results_are_handed_on_in_order_whatever_order_they_finish_in() {
        let mut seen = Vec::new();
        {
            let mut emit = |i: usize, v: char| seen.push((i, v));
            let order = InOrder::new(&mut emit, 4);
            order.done(2, 'c');
            order.done(0, 'a');
            order.done(3, 'd');
            order.done(1, 'b');
        }
        assert_eq!(seen, vec![(0, 'a'), (1, 'b'), (2, 'c'), (3, 'd')]);
    }

    #[test]
    fn a_worker_too_far_ahead_waits_until_the_first_unfinished_result_is_done() {
        let mut seen = Vec::new();
        let passed = AtomicBool::new(false);
        let mut emit = |i: usize, _: ()| seen.push(i);
        let order = InOrder::new(&mut emit, 2);
        std::thread::scope(|s| {
            s.spawn(|| {
                order.wait_turn(3);
                passed.store(true, Ordering::SeqCst);
            });
            order.wait_turn(1);
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(
                !passed.load(Ordering::SeqCst),
                "3 is two past 0, unfinished"
            );
            order.done(1, ());
            assert!(
                !passed.load(Ordering::SeqCst),
                "1 done, 0 is not: nothing handed on"
            );
            order.done(0, ());
        });
        drop(order);
        assert!(passed.load(Ordering::SeqCst));
        assert_eq!(seen, vec![0, 1]);
    }

    #[test]
    fn a_panicked_worker_releases_the_waiting_ones() {
        let mut emit = |_: usize, _: ()| {};
        let order = InOrder::new(&mut emit, 1);
        let passed = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                order.wait_turn(5);
                passed.store(true, Ordering::SeqCst);
            });
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!passed.load(Ordering::SeqCst));
            let crashed = std::thread::scope(|t| {
                t.spawn(|| {
                    let _unwinding = super::Unwinding(&order);
                    panic!("a bug while processing file 0");
                })
                .join()
            });
            assert!(crashed.is_err());
        });
        assert!(passed.load(Ordering::SeqCst));
    }
}
