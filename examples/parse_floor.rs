//! The floor under `scan`: walk a tree as `scan` does, read each Python and Rust file, keep
//! those the prefilter lets through, and parse them (ruff's parser, syn) on every core. Nothing
//! else: no facts, rules, proof or output. `scripts/bench/run.sh` times it beside `scan` so that
//! BENCHMARKS.md can say how much of `scan` is parsing that no analysis can avoid.
//!
//! With `--all`, every Python and Rust file is parsed, whatever the prefilter says: the floor
//! under the project indexes, which read every file of the tree to find its programs.
//!
//! Usage: cargo run --release --example parse_floor -- [--all] DIR
//! Prints what it parsed (files, bytes, syntax errors) on stderr.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use gpu_homogenize::fs::source::Prefilter;
use gpu_homogenize::fs::walk::{walk, EntryKind};
use gpu_homogenize::model::outcome::Language;
use rayon::prelude::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let all = args.first().is_some_and(|a| a == "--all");
    if all {
        args.remove(0);
    }
    let [dir] = args.as_slice() else {
        eprintln!("usage: parse_floor [--all] DIR");
        std::process::exit(2);
    };
    let dir = PathBuf::from(dir);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let root = std::path::absolute(&dir).unwrap_or_else(|_| dir.clone());
    let entries = walk(std::slice::from_ref(&dir), &root, threads);
    let prefilter = Prefilter::new();
    let (parsed, bytes, errors) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    entries.par_iter().for_each(|entry| {
        let EntryKind::Source(language) = entry.kind else {
            return;
        };
        let Ok(data) = std::fs::read(&entry.path) else {
            return;
        };
        if !all && !prefilter.may_have_gpu_code(language, &data) {
            return;
        }
        let Ok(text) = std::str::from_utf8(&data) else {
            return;
        };
        let ok = match language {
            Language::Python => ruff_python_parser::parse_module(text).is_ok(),
            Language::Rust => {
                let ok = gpu_homogenize::lang::rust::parse(text).is_ok();
                proc_macro2::extra::invalidate_current_thread_spans();
                ok
            }
        };
        parsed.fetch_add(1, Ordering::Relaxed);
        bytes.fetch_add(data.len(), Ordering::Relaxed);
        if !ok {
            errors.fetch_add(1, Ordering::Relaxed);
        }
    });
    eprintln!(
        "parsed {} of {} files ({:.1} MB), {} with syntax errors",
        parsed.into_inner(),
        entries.len(),
        bytes.into_inner() as f64 / 1e6,
        errors.into_inner()
    );
}
