//! The proof of a planned fix by composition (the original's facts plus the header's effect)
//! against the proof by analysing the rewrite again: on the fixtures, their mutants (fixed
//! seed) and the mission fixture with its project index, both give the same verdict, the
//! same findings and the same edits for every Python file.

use std::path::{Path, PathBuf};

use crate::common;
use crate::common::mutants::{mutate, sources, Rng};
use gpu_homogenize::engine::process::{Engine, Mode};
use gpu_homogenize::engine::run::cpu::WORKER_STACK;
use gpu_homogenize::engine::run::{engine, setup};
use gpu_homogenize::fs::walk::walk;
use gpu_homogenize::lang::{Analysis, FileInfo, LanguageSupport, NoFacts};

const MUTANTS: usize = 1200;

fn scan_engine(root: &Path) -> Engine {
    let input = common::mutants::input(root);
    engine(&setup(&input).unwrap(), &input, Mode::Scan).unwrap()
}

/// What a user sees of an analysis: each finding, and the edits of the whole fix.
fn shown(analysis: Result<Box<dyn Analysis>, impl std::fmt::Debug>) -> String {
    match analysis {
        Err(e) => format!("error: {e:?}"),
        Ok(mut a) => {
            a.settle_unsafe_edits(true);
            let findings: Vec<String> = a
                .findings()
                .iter()
                .map(|f| {
                    format!(
                        "{} {:?} fixable={} {}",
                        f.rule.code, f.range, f.fixable, f.message
                    )
                })
                .collect();
            let edits: Vec<String> = a
                .edits()
                .iter()
                .map(|e| format!("{:?} {:?}", e.range, e.replacement))
                .collect();
            format!("{findings:#?}\n{edits:#?}")
        }
    }
}

/// Files compared, those whose fix is a pure insertion (what the composition proves), and
/// the files where the two proofs disagree.
#[derive(Default)]
struct Tally {
    compared: usize,
    insertions: usize,
    problems: Vec<String>,
}

impl Tally {
    fn compare(&mut self, support: &dyn LanguageSupport, info: &FileInfo, text: &str, label: &str) {
        let composed = support.analyze(info, text);
        if let Ok(a) = &composed {
            let edits = a.edits();
            if !edits.is_empty() && edits.iter().all(|e| e.range.is_empty()) {
                self.insertions += 1;
            }
        }
        let composed = shown(composed);
        let reanalysed = shown(support.analyze_reanalysed(info, text));
        self.compared += 1;
        if composed != reanalysed {
            self.problems.push(format!(
                "{label}: the proofs disagree\ncomposed:\n{composed}\nre-analysed:\n{reanalysed}"
            ));
        }
    }
}

fn mutants_and_fixtures(config: &str) -> Tally {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("gpu-homogenize.toml"), config).unwrap();
    let engine = scan_engine(&root);
    let python = engine.python.as_ref();
    let sources: Vec<(PathBuf, Vec<u8>)> = sources()
        .into_iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "py"))
        .collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut tally = Tally::default();
    let mut check = |origin: &Path, bytes: &[u8], label: String| {
        let Ok(file) = gpu_homogenize::fs::source::decode(bytes.to_vec()) else {
            return;
        };
        if gpu_homogenize::lang::nesting::check(
            gpu_homogenize::model::outcome::Language::Python,
            &file.text,
        )
        .is_err()
        {
            return;
        }
        let name = origin.file_name().unwrap().to_string_lossy().into_owned();
        let info = FileInfo {
            path: &root.join(&name),
            rel: &name,
            in_phase: false,
        };
        tally.compare(python, &info, &file.text, &label);
    };
    for (origin, bytes) in &sources {
        check(origin, bytes, origin.display().to_string());
    }
    for n in 0..MUTANTS {
        let (origin, bytes) = &sources[n % sources.len()];
        let mut mutant = mutate(&mut rng, bytes);
        if rng.below(4) == 0 {
            mutant = mutate(&mut rng, &mutant);
        }
        check(
            origin,
            &mutant,
            format!("mutant {n} of {}", origin.display()),
        );
    }
    tally
}

fn mission() -> Tally {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/superwhisper-v6")
        .canonicalize()
        .unwrap();
    let engine = scan_engine(&root);
    let entries = walk(std::slice::from_ref(&root), &root, 1);
    engine.rust.prepare(&root, &entries, 4 << 20, &NoFacts);
    engine.python.note_hosted(engine.rust.hosted_sources());
    engine.python.prepare(&root, &entries, 4 << 20, &NoFacts);
    let mut tally = Tally::default();
    for entry in entries.iter().filter(|e| e.rel.ends_with(".py")) {
        let bytes = std::fs::read(&entry.path).unwrap();
        let file = gpu_homogenize::fs::source::decode(bytes).unwrap();
        let info = FileInfo {
            path: &entry.path,
            rel: &entry.rel,
            in_phase: false,
        };
        tally.compare(engine.python.as_ref(), &info, &file.text, &entry.rel);
    }
    tally
}

fn on_worker_stack<T: Send + 'static>(f: fn() -> T) -> T {
    std::thread::Builder::new()
        .stack_size(WORKER_STACK)
        .spawn(f)
        .unwrap()
        .join()
        .expect("the comparison itself panicked")
}

fn assert_agree(tally: &Tally, min_insertions: usize) {
    assert!(
        tally.problems.is_empty(),
        "{} of {} files:\n{}",
        tally.problems.len(),
        tally.compared,
        tally.problems.join("\n")
    );
    assert!(
        tally.insertions >= min_insertions,
        "only {} pure insertions of the header were proven: the composition was hardly tried",
        tally.insertions
    );
}

#[test]
fn every_gpu_file_fixtures_and_mutants_get_the_same_verdict_from_both_proofs() {
    let tally = on_worker_stack(|| mutants_and_fixtures("[policy]\nscope = \"every-gpu-file\"\n"));
    assert_agree(&tally, 80);
}

#[test]
fn the_mission_fixture_gets_the_same_verdict_from_both_proofs() {
    let tally = on_worker_stack(mission);
    assert_agree(&tally, 2);
}

/// Templates whose header alone does not meet the policy, or might not: a wrong mask, a mask
/// set only when none is inherited, a call that could run the file's own code, the mask
/// written by the validation function. The composition must not prove what the re-analysis
/// refuses.
const TEMPLATES: &[(&str, &str)] = &[
    ("plain", "os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"{{visible_devices}}\"\nos.environ[\"CUDA_DEVICE_ORDER\"] = \"{{device_order}}\"\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"{{alloc_conf}}\"\n"),
    ("wrong mask", "os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"\nos.environ[\"CUDA_DEVICE_ORDER\"] = \"{{device_order}}\"\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"{{alloc_conf}}\"\n"),
    ("only when unset", "if \"CUDA_VISIBLE_DEVICES\" not in os.environ:\n    os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"{{visible_devices}}\"\nos.environ[\"CUDA_DEVICE_ORDER\"] = \"{{device_order}}\"\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"{{alloc_conf}}\"\n"),
    ("calls", "os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"{{visible_devices}}\"\nos.environ[\"CUDA_DEVICE_ORDER\"] = \"{{device_order}}\"\nprepare()\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"{{alloc_conf}}\"\n"),
];

const SOURCES: &[&str] = &[
    "import torch\n\nx = torch.zeros(1).cuda()\n",
    "\"\"\"Doc.\"\"\"\nfrom __future__ import annotations\n\nimport sys\n\nimport torch\n\nx = torch.zeros(1).cuda()\n",
    "import posixpath as os\nimport torch\n\nx = torch.zeros(1).cuda()\n",
    "def prepare():\n    import torch\n\n\nimport torch\n\nx = torch.zeros(1).cuda()\n",
    "import torch\n\n\ndef main():\n    print(torch.zeros(1).cuda())\n\n\nif __name__ == \"__main__\":\n    main()\n",
];

#[test]
fn a_header_that_does_not_meet_the_policy_is_refused_by_both_proofs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut withheld = Vec::new();
    for (name, header) in TEMPLATES {
        let file = format!("{}.tmpl", name.replace(' ', "_"));
        let template = format!("@@ docstring_marker\n@@ header\n{header}@@ validate_function\ndef validate_gpu():\n    import torch\n\n    return torch.cuda.is_available()\n");
        std::fs::write(root.join(&file), template).unwrap();
        std::fs::write(
            root.join("gpu-homogenize.toml"),
            format!("[policy]\nscope = \"every-gpu-file\"\npython_template = \"{file}\"\n"),
        )
        .unwrap();
        let engine = scan_engine(&root);
        let mut tally = Tally::default();
        for (n, text) in SOURCES.iter().enumerate() {
            let info = FileInfo {
                path: &root.join("m.py"),
                rel: "m.py",
                in_phase: false,
            };
            tally.compare(
                engine.python.as_ref(),
                &info,
                text,
                &format!("{name}, source {n}"),
            );
            let edits = engine.python.analyze(&info, text).unwrap().edits().len();
            withheld.push((*name, n, edits == 0));
        }
        assert!(tally.problems.is_empty(), "{}", tally.problems.join("\n"));
    }
    // The plain header is proven on the files that bind `os` as the module; the others never.
    let refused: Vec<(&str, usize)> = withheld
        .iter()
        .filter(|(_, _, w)| *w)
        .map(|(name, n, _)| (*name, *n))
        .collect();
    assert_eq!(
        refused,
        [
            ("plain", 2),
            ("wrong mask", 0),
            ("wrong mask", 1),
            ("wrong mask", 2),
            ("wrong mask", 3),
            ("wrong mask", 4),
            ("only when unset", 0),
            ("only when unset", 1),
            ("only when unset", 2),
            ("only when unset", 3),
            ("only when unset", 4),
            ("calls", 2),
            ("calls", 3),
        ]
    );
}
