//! Mutants of the fixtures (fixed seed) through `scan` and `fix`, in process: no panic, no
//! abort, no rewrite of an input that does not parse, and no rewrite that turns a parsing
//! input into a non-parsing output.

use std::path::{Path, PathBuf};

use crate::common;
use crate::common::mutants::{mutate, sources, Rng};
use gpu_homogenize::engine::process::{Engine, Mode};
use gpu_homogenize::engine::run::cpu::WORKER_STACK;
use gpu_homogenize::engine::run::{engine, setup};
use gpu_homogenize::fs::walk::{language_of, Entry, EntryKind};
use gpu_homogenize::lang::{FileInfo, LanguageSupport};
use gpu_homogenize::model::outcome::{FileStatus, Language};

const MUTANTS: usize = 2400;

fn parses(engine: &Engine, language: Language, path: &Path, bytes: &[u8]) -> bool {
    // As the tool reads it: in the encoding its coding cookie declares, no NUL byte.
    let Ok(file) = gpu_homogenize::fs::source::decode(bytes.to_vec()) else {
        return false;
    };
    let text = file.text.as_str();
    if gpu_homogenize::lang::nesting::check(language, text).is_err() {
        return false;
    }
    let support: &dyn LanguageSupport = match language {
        Language::Python => engine.python.as_ref(),
        Language::Rust => engine.rust.as_ref(),
    };
    let info = FileInfo {
        path,
        rel: "module.py",
        in_phase: false,
    };
    support.analyze(&info, text).is_ok()
}

fn engines(root: &Path) -> (Engine, Engine) {
    let input = common::mutants::input(root);
    let s = setup(&input).unwrap();
    let scan = engine(&s, &input, Mode::Scan).unwrap();
    let mut fix = engine(&s, &input, Mode::Fix { dry_run: false }).unwrap();
    // The whole fix: with unsafe fixes held back a file may be written and still owe them.
    fix.unsafe_fixes = true;
    (scan, fix)
}

fn run_mutants() -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (scan, fix) = engines(&root);
    let sources = sources();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut problems = Vec::new();
    let mut fixed = 0;
    for n in 0..MUTANTS {
        let (origin, bytes) = &sources[n % sources.len()];
        let mut mutant = mutate(&mut rng, bytes);
        if rng.below(4) == 0 {
            mutant = mutate(&mut rng, &mutant);
        }
        let name = origin.file_name().unwrap();
        let path = root.join(name);
        std::fs::write(&path, &mutant).unwrap();
        let language = language_of(&path).unwrap();
        let entry = Entry {
            path: path.clone(),
            rel: name.to_string_lossy().into_owned(),
            rel_path: PathBuf::from(name),
            kind: EntryKind::Source(language),
        };
        let label = format!("mutant {n} of {}", origin.display());
        for engine in [&scan, &fix] {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                engine.process(&entry).outcome
            }));
            let Ok(outcome) = run else {
                problems.push(format!("{label}: panicked"));
                continue;
            };
            let after = std::fs::read(&path).unwrap();
            let parsed = parses(engine, language, &path, &mutant);
            if after != mutant {
                if !parsed {
                    problems.push(format!("{label}: rewrote an input that does not parse"));
                } else if !parses(engine, language, &path, &after) {
                    problems.push(format!("{label}: the rewrite does not parse"));
                }
                // Written: fixed, or fixed with a finding left for a person.
                if !matches!(outcome.status, FileStatus::Fixed | FileStatus::NeedsReview) {
                    problems.push(format!("{label}: written but {:?}", outcome.status));
                }
                fixed += 1;
            } else if outcome.status == FileStatus::Fixed {
                problems.push(format!("{label}: counted as fixed, nothing written"));
            }
        }
        std::fs::remove_file(&path).unwrap();
    }
    assert!(
        fixed > MUTANTS / 10,
        "too few mutants were fixed ({fixed}) to mean anything"
    );
    problems
}

/// In its own process: `fix` takes leases in process, which leaves SIGIO ignored.
#[test]
fn mutants_never_panic_abort_or_break_a_file() {
    common::in_own_process(
        "mutation::mutants_never_panic_abort_or_break_a_file",
        || {
            let problems = std::thread::Builder::new()
                .stack_size(WORKER_STACK)
                .spawn(run_mutants)
                .unwrap()
                .join()
                .expect("the mutation run itself panicked");
            assert!(
                problems.is_empty(),
                "{} problems:\n{}",
                problems.len(),
                problems.join("\n")
            );
        },
    );
}
