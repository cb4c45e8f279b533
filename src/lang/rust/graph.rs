//! The Rust project index: the packages of the tree (their Cargo.toml: dependencies, features,
//! path and workspace dependencies), each target's module tree (`mod x;` from its root file),
//! and from them which binaries are GPU programs and which binaries run each library file.
//!
//! A binary is a GPU program when its package can reach CUDA — a dependency that is a CUDA
//! crate with its CUDA feature on (directly, through a package feature, or a crate of the tree
//! that has one) — and its code uses that crate (its own files, its package's library, a crate
//! of the tree). A binary whose own code chooses only CPU devices (`Device::Cpu`, burn's CPU
//! backends) and no CUDA one is a CPU program. Invariant, as for Python's index: it only reads,
//! and a file it does not know is judged on its own.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use syn::visit::{self, Visit};

use super::index_fns::IndexFn;
use super::manifest::{self, Manifest};
use crate::fs::walk::{Entry, EntryKind};
use crate::knowledge::rust::{self, non_cuda_device, Cuda, CUDA_FEATURES, OTHER_DEVICES};
use crate::lang::{FactKind, FactStore};
use crate::model::outcome::Language;

/// A CUDA wrapper's entry points (the knowledge table's); empty when any use reaches CUDA.
fn entry_points(package: &str) -> Vec<&'static str> {
    rust::by_package(package).map_or_else(Vec::new, |c| {
        c.entry_points.iter().map(|(api, _)| *api).collect()
    })
}

/// Whether `segment` is the entry point of any CUDA wrapper of the knowledge table.
fn is_entry_point(segment: &str) -> bool {
    rust::CRATES
        .iter()
        .any(|c| c.entry_points.iter().any(|(api, _)| *api == segment))
}

/// Whether the knowledge table says `package` computes on the device it is handed.
fn handed_device(package: &str) -> bool {
    rust::by_package(package).is_some_and(|c| c.handed_device)
}

/// What the index says about one `.rs` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRole {
    /// The root of a binary target. `cuda`: how its program reaches CUDA (`None`: it does not);
    /// `cpu`: why it is a CPU program (its own code chooses only CPU devices, or it is built
    /// with a known CUDA crate whose CUDA feature is off).
    Program {
        cuda: Option<String>,
        cpu: Option<String>,
        /// It links libtorch (tch, burn's LibTorch, rust-bert): PYTORCH_CUDA_ALLOC_CONF means
        /// something to it.
        torch: bool,
        /// An integration test (`tests/*.rs`): libtest writes its `main`.
        test: bool,
        /// Its own `#[test]` functions reach CUDA (how): `cargo test` runs them in a program
        /// whose `main` libtest writes, which its `main`'s env does not reach.
        unit_tests: Option<String>,
        /// Its own code chooses a CUDA device (`Device::new_cuda(1)`, `cuda_if_available`), though
        /// the graph follows it to no CUDA crate (one reached through a library's re-export, `pub
        /// use candle_core as candle`): its facts make it GPU code, and its evidence says so.
        own_cuda: bool,
    },
    /// A module of a library (or of a binary): the GPU programs of the tree that run it, with
    /// whether each one sets the env in its `main` (a sync main; an async main does not).
    /// `made_sync`: one of them masks only once `fix --unsafe-fixes` makes its async main
    /// sync, so remapping an index here is unsafe-tier too.
    Module {
        programs: Vec<(String, bool)>,
        made_sync: bool,
        /// Its `#[test]` functions reach CUDA (how): `cargo test` runs them in a GPU program
        /// whose `main` libtest writes, which no `main` of the tree masks.
        unit_tests: Option<String>,
        /// Its doc examples that reach CUDA (`cargo test --doc`, each in a `main` rustdoc
        /// writes): the first one's line, how many, and how the first reaches CUDA.
        doc_tests: Option<(u32, usize, String)>,
    },
}

#[derive(Debug, Default)]
pub struct RustIndex {
    files: HashMap<String, FileRole>,
    /// For a GPU program, the options that select several cards its modules or the
    /// libraries it runs declare (what they are, and where).
    several: HashMap<String, Vec<String>>,
    /// For a GPU program, the code its crates run before `main` (a `#[ctor]` function).
    before_main: HashMap<String, Vec<String>>,
    /// The index functions each file can call: its package's and its dependencies' of the
    /// tree (a name defined twice with different index positions is left out).
    callable: HashMap<String, Arc<Vec<IndexFn>>>,
    /// The struct fields each file's package hands to a device index, with what they reach:
    /// a command-line option of that name holds an index.
    index_fields: HashMap<String, Arc<Vec<(String, String)>>>,
    /// The `const`/`static` items each file's package or a package using it hands to a device
    /// index in another file, with what they reach.
    index_consts: HashMap<String, Arc<Vec<(String, String)>>>,
    /// Files that declare such an option or item: analysed even when they hold no GPU word.
    carriers: HashSet<String>,
    hosted: Vec<(String, String)>,
    /// Files whose own code chooses a CUDA device (`cuda_if_available()`, a `Cuda` backend).
    chooses_cuda: HashSet<String>,
}

/// A `#[test]` function that may run on a GPU: judged test by test, as a test binary is, a
/// test that binds a CPU device itself (`Tensor::zeros(…, &Device::Cpu)`) runs on the CPU.
fn gpu_test(f: &RsFile, it: &super::items::Item) -> bool {
    it.test && !f.cpu_tests.contains(&it.key.join("::"))
}

/// What the GPU tests of file `f` (at `modpath` of the crate `index` reads) reach of that
/// crate; the file's own code when that is too large to follow; `None` when it has none.
fn tests_reach_in(
    index: &super::items::LibraryIndex,
    f: &RsFile,
    modpath: &[String],
) -> Option<super::items::Reached> {
    let entry: Vec<(Vec<String>, bool)> = f
        .items
        .items
        .iter()
        .filter(|it| gpu_test(f, it))
        .map(|it| ([modpath, &it.key].concat(), false))
        .collect();
    if entry.is_empty() {
        return None;
    }
    let used = index.reach(&entry, &[]);
    Some(if used.incomplete {
        super::items::Reached {
            names: f.names.clone(),
            values: f.names.clone(),
            segments: f.segments.clone(),
            cuda: f.cuda,
            ..Default::default()
        }
    } else {
        used
    })
}

/// Whether the dependency `local` of `p` is a registry crate the knowledge table does not know
/// and whose name says nothing of CUDA: it reaches CUDA only by a feature named for it.
fn unmodelled(p: &Package, local: &str) -> bool {
    p.raw.iter().any(|d| {
        d.local == local
            && d.tree.is_none()
            && rust::by_package(&d.package).is_none()
            && !rust::named_for_cuda(&d.package)
    })
}

/// A path into an FFI crate that only reads data: a parameter struct or the function that
/// returns its defaults (`llama_context_default_params`, `whisper_full_default_params`,
/// `LlamaParams`), or a constant (`LLAMA_DEFAULT_SEED`). Nothing of the library starts there.
fn ffi_data(path: &[String]) -> bool {
    let Some(last) = path.last() else {
        return false;
    };
    last.to_ascii_lowercase().ends_with("params")
        || (last.chars().any(|c| c.is_ascii_uppercase())
            && !last.chars().any(|c| c.is_ascii_lowercase()))
}

/// Tests whose code chooses a CUDA device in a crate built with CUDA by its own feature
/// (`cargo test --features cuda`).
fn own_feature(p: &Package, used: &super::items::Reached) -> Option<String> {
    p.cuda_feature
        .as_ref()
        .filter(|_| used.cuda)
        .map(|feature| format!("the crate's own `{feature}` feature"))
}

/// The evidence's words for a file whose `#[test]` functions reach CUDA.
fn tests_reach(unit_tests: &Option<String>) -> String {
    unit_tests.as_ref().map_or(String::new(), |why| {
        format!("; its `#[test]` functions reach CUDA through {why} (`cargo test`)")
    })
}

impl FileRole {
    /// Why the file is what it is, for the outputs (`evidence` in JSON, `scan --verbose`).
    pub fn evidence(&self) -> String {
        let listed = |programs: &[(String, bool)]| {
            let mut shown: Vec<String> = programs
                .iter()
                .take(3)
                .map(|(p, _)| format!("`{p}`"))
                .collect();
            if programs.len() > 3 {
                shown.push(format!("{} more", programs.len() - 3));
            }
            shown.join(", ")
        };
        match self {
            FileRole::Program { cpu: Some(cpu), .. } => format!("program: a CPU program ({cpu})"),
            FileRole::Program {
                cuda: Some(why),
                test,
                unit_tests,
                ..
            } => {
                let what = if *test {
                    "a test binary (libtest writes its `main`)"
                } else {
                    "a binary"
                };
                format!(
                    "program: {what} that reaches CUDA through {why}{}",
                    tests_reach(unit_tests)
                )
            }
            FileRole::Program {
                test,
                unit_tests,
                own_cuda: true,
                ..
            } => format!(
                "program: a {} whose own code chooses a CUDA device, through no crate the tool follows to CUDA (a re-export, or a crate it does not model){}",
                if *test { "test binary" } else { "binary" },
                tests_reach(unit_tests)
            ),
            FileRole::Program {
                test, unit_tests, ..
            } => format!(
                "program: a {} that reaches no CUDA crate the tool models{}",
                if *test { "test binary" } else { "binary" },
                tests_reach(unit_tests)
            ),
            FileRole::Module {
                programs,
                unit_tests,
                doc_tests,
                ..
            } => {
                let run = if programs.is_empty() {
                    "module: no GPU program of this tree runs it".to_string()
                } else {
                    format!(
                        "module: runs in the process of {} GPU program(s): {}",
                        programs.len(),
                        listed(programs)
                    )
                };
                let run = format!("{run}{}", tests_reach(unit_tests));
                match doc_tests {
                    Some((line, count, why)) => format!(
                        "{run}; {count} of its doc examples reach CUDA (`cargo test --doc`), the first on line {line} through {why}"
                    ),
                    None => run,
                }
            }
        }
    }

    /// How the file's own `#[test]` functions reach CUDA (`cargo test`), if they do.
    pub fn unit_tests(&self) -> Option<&str> {
        match self {
            FileRole::Program { unit_tests, .. } | FileRole::Module { unit_tests, .. } => {
                unit_tests.as_deref()
            }
        }
    }

    /// A module one of whose programs masks only once its async main is made sync.
    pub fn made_sync(&self) -> bool {
        matches!(
            self,
            FileRole::Module {
                made_sync: true,
                ..
            }
        )
    }
}

impl RustIndex {
    pub fn role(&self, rel: &str) -> Option<&FileRole> {
        self.files.get(rel)
    }

    /// Python files the tree's Rust code embeds: (the `.py`, the `.rs` embedding it).
    pub fn hosted(&self) -> &[(String, String)] {
        &self.hosted
    }

    pub fn callable(&self, rel: &str) -> &[IndexFn] {
        self.callable.get(rel).map_or(&[], |v| v.as_slice())
    }

    /// The file's own code chooses a CUDA device: GPU code, whatever its verdict.
    pub fn chooses_cuda(&self, rel: &str) -> bool {
        self.chooses_cuda.contains(rel)
    }

    /// The programs some module is run by and that the graph says set the mask: those whose
    /// plan `unmask` may still find sets none.
    pub fn masking_programs(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .files
            .values()
            .filter_map(|role| match role {
                FileRole::Module { programs, .. } => Some(programs),
                FileRole::Program { .. } => None,
            })
            .flatten()
            .filter(|(_, masks)| *masks)
            .map(|(p, _)| p.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// These programs set no mask after all (their fix is withheld, or sets none): the
    /// modules they run say so.
    pub fn unmask(&mut self, programs: &[String]) {
        if programs.is_empty() {
            return;
        }
        for role in self.files.values_mut() {
            if let FileRole::Module { programs: run, .. } = role {
                for (p, masks) in run.iter_mut() {
                    if programs.contains(p) {
                        *masks = false;
                    }
                }
            }
        }
    }

    pub fn index_fields(&self, rel: &str) -> &[(String, String)] {
        self.index_fields.get(rel).map_or(&[], |v| v.as_slice())
    }

    /// The `const`/`static` items handed to a device index elsewhere (see `index_consts`).
    pub fn index_consts(&self, rel: &str) -> &[(String, String)] {
        self.index_consts.get(rel).map_or(&[], |v| v.as_slice())
    }

    /// The file writes an index another file hands to a device (an option's default, a
    /// `const`): it is analysed even when it holds no GPU word.
    /// The code a program's crates run before its `main` (`#[ctor]` functions).
    pub fn before_main(&self, rel: &str) -> &[String] {
        self.before_main.get(rel).map_or(&[], |v| v.as_slice())
    }

    /// The options that select several cards a program's other files declare.
    pub fn several_cards(&self, rel: &str) -> &[String] {
        self.several.get(rel).map_or(&[], |v| v.as_slice())
    }

    pub fn carries_index(&self, rel: &str) -> bool {
        self.carriers.contains(rel)
    }

    pub fn build(
        root: &Path,
        entries: &[Entry],
        max_file_size: u64,
        store: &dyn FactStore,
    ) -> RustIndex {
        let rs: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.kind == EntryKind::Source(Language::Rust))
            .collect();
        if rs.is_empty() {
            return RustIndex::default();
        }
        let packages = Packages::find(root, &rs);
        let present: HashMap<&str, &Entry> = rs.iter().map(|e| (e.rel.as_str(), *e)).collect();
        let load = |e: &Entry| -> Option<RsFile> {
            // `null`: the file does not parse, and is left out.
            let cached = store
                .load(e, FactKind::Rust)
                .and_then(|text| serde_json::from_str::<Option<RsFile>>(&text).ok());
            match cached {
                Some(file) => file,
                None => {
                    let (file, hash) = read(root, e, max_file_size)?;
                    if let Some(Ok(text)) = store.keeps().then(|| serde_json::to_string(&file)) {
                        store.save(e, hash, FactKind::Rust, text);
                    }
                    file
                }
            }
        };
        // One group of packages (those path dependencies join) at a time: its files' facts are
        // held only while its programs are linked, so the index's memory is the largest
        // group's, not the tree's. Small groups are read together (one parallel pass over
        // at least BATCH files), so that no core waits for the last large file of each.
        const BATCH: usize = 256;
        type Group<'e> = (Vec<usize>, Vec<&'e Entry>);
        // The facts of each group of a batch.
        type Read = Vec<HashMap<String, RsFile>>;
        let groups = packages.groups(&rs);
        let mut batches: Vec<&[Group]> = Vec::new();
        let mut start = 0;
        while start < groups.len() {
            let mut end = start;
            let mut count = 0;
            while end < groups.len() && (end == start || count < BATCH) {
                count += groups[end].1.len();
                end += 1;
            }
            batches.push(&groups[start..end]);
            start = end;
        }
        let read_batch = |batch: &[Group]| -> Read {
            let jobs: Vec<(usize, &Entry)> = batch
                .iter()
                .enumerate()
                .flat_map(|(g, (_, group))| group.iter().map(move |e| (g, *e)))
                .collect();
            let mut read: Read = batch.iter().map(|_| HashMap::default()).collect();
            for (g, rel, file) in largest_first(root, jobs)
                .par_iter()
                .with_max_len(1)
                .filter_map(|(g, e)| Some((*g, e.rel.clone(), load(e)?)))
                .collect::<Vec<_>>()
            {
                read[g].insert(rel, file);
            }
            read
        };
        let link_batch = |batch: &[Group], read: Read| -> RustIndex {
            let mut index = RustIndex::default();
            for ((members, _), mut files) in batch.iter().zip(read) {
                // A module a `#[path]` or a target's `path` puts outside the group's
                // directories.
                let mut tried: HashSet<String> = HashSet::default();
                loop {
                    let mut missing: Vec<&Entry> = files
                        .iter()
                        .flat_map(|(rel, f)| module_candidates(rel, f))
                        .chain(members.iter().flat_map(|&i| packages.0[i].roots()))
                        .filter(|c| !files.contains_key(c) && tried.insert(c.clone()))
                        .filter_map(|c| present.get(c.as_str()).copied())
                        .collect();
                    if missing.is_empty() {
                        break;
                    }
                    missing.sort_by(|a, b| a.rel.cmp(&b.rel));
                    missing.dedup_by(|a, b| a.rel == b.rel);
                    files.extend(
                        missing
                            .par_iter()
                            .filter_map(|e| Some((e.rel.clone(), load(e)?)))
                            .collect::<Vec<_>>(),
                    );
                }
                index.merge(link(root, &files, &packages, members));
            }
            index
        };
        // A batch is linked while the next one is read (two batches' facts at most).
        let mut index = RustIndex::default();
        let mut previous: Option<(&[Group], Read)> = None;
        for batch in batches {
            let pending = previous.take();
            let (linked, read) = rayon::join(
                || pending.map(|(b, read)| link_batch(b, read)),
                || read_batch(batch),
            );
            if let Some(linked) = linked {
                index.merge(linked);
            }
            previous = Some((batch, read));
        }
        if let Some((batch, read)) = previous {
            index.merge(link_batch(batch, read));
        }
        index.hosted.sort();
        index.hosted.dedup_by(|a, b| a.0 == b.0);
        index
    }

    /// Adds the roles of another group of packages (a file two groups read keeps the first's).
    fn merge(&mut self, other: RustIndex) {
        for (rel, role) in other.files {
            self.files.entry(rel).or_insert(role);
        }
        for (rel, fns) in other.callable {
            self.callable.entry(rel).or_insert(fns);
        }
        for (rel, fields) in other.index_fields {
            self.index_fields.entry(rel).or_insert(fields);
        }
        for (rel, consts) in other.index_consts {
            self.index_consts.entry(rel).or_insert(consts);
        }
        for (rel, found) in other.several {
            self.several.entry(rel).or_insert(found);
        }
        for (rel, found) in other.before_main {
            self.before_main.entry(rel).or_insert(found);
        }
        self.carriers.extend(other.carriers);
        self.hosted.extend(other.hosted);
        self.chooses_cuda.extend(other.chooses_cuda);
    }
}

/// Jobs on files, the largest first: a parallel pass ends when its last file is parsed, and
/// one generated file (bindgen's, tch's wrappers) can take as long as a hundred others; begun
/// last, it would leave the other cores idle until it ends. The order only schedules: every
/// result is keyed by its file.
fn largest_first<'e, T: Send>(root: &Path, jobs: Vec<(T, &'e Entry)>) -> Vec<(T, &'e Entry)> {
    let mut sized: Vec<(u64, (T, &Entry))> = jobs
        .into_par_iter()
        .map(|job| {
            let size = std::fs::symlink_metadata(root.join(&job.1.rel_path)).map_or(0, |m| m.len());
            (size, job)
        })
        .collect();
    sized.sort_by_key(|s| std::cmp::Reverse(s.0));
    sized.into_iter().map(|(_, job)| job).collect()
}

/// Every file a `mod` declaration of `f` (at `rel`) could load, whether or not `f` is its
/// target's root.
fn module_candidates(rel: &str, f: &RsFile) -> Vec<String> {
    let path = Path::new(rel);
    let dir = path.parent().map(slash).unwrap_or_default();
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = Vec::new();
    for (name, attr, inline) in &f.mods {
        match attr {
            Some(p) => out.push(normalize(&join(&dir, p))),
            None => {
                for base in [dir.clone(), join(&dir, &stem)] {
                    let base = inline.iter().fold(base, |b, m| join(&b, m));
                    out.push(join(&base, &format!("{name}.rs")));
                    out.push(join(&base, &format!("{name}/mod.rs")));
                }
            }
        }
    }
    out
}

/// One file, as the index sees it (kept by the content cache).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct RsFile {
    /// `mod x;` declarations: (name, `#[path]`, the inline modules around it).
    mods: Vec<(String, Option<String>, Vec<String>)>,
    /// First segments of every path and `use` (the crates it names).
    names: HashSet<String>,
    /// Every segment of every path and `use`, and every method called, that is an entry point
    /// of the knowledge table's entry points (the rest is dropped once the file is read).
    segments: HashSet<String>,
    /// Files `include_str!`/`include_bytes!` embed, as written (relative to this file).
    embeds: Vec<String>,
    /// Functions that hand a parameter to a device constructor as its index, and those that
    /// hand one to another function.
    index_fns: Vec<IndexFn>,
    forwards: Vec<super::index_fns::Forward>,
    field_args: Vec<super::index_fns::FieldArg>,
    /// `const`/`static` items of other files handed to a call (`new_cuda(config::GPU)`).
    const_args: Vec<super::index_fns::FieldArg>,
    /// The command-line options with an integer default it declares, and its `const`/`static`
    /// items of an integer literal: where an index handed on elsewhere is written.
    option_fields: Vec<String>,
    consts: Vec<String>,
    /// Its command-line options that select several cards (`--device-layers 0:10;1:20`, a
    /// `Vec` of devices), as GH513 says them: a program whose options they are loses all
    /// but one card to the mask.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    multi_gpu_options: Vec<String>,
    /// Code it runs before `main` (`#[ctor]` functions, statics in `.init_array`), as said in
    /// a message: threads it starts exist when `main`'s first statement runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    before_main: Vec<String>,
    /// Chooses a CUDA device (`new_cuda`, `Device::Cuda`, `cuda_if_available`, a `Cuda`
    /// backend), or a CPU one.
    cuda: bool,
    /// It calls a CUDA device's constructor by a name only CUDA devices have (`new_cuda`,
    /// `cuda_if_available`, `CudaContext`, `CudaDevice`), not a `Cuda` variant of some enum: a
    /// program the graph follows to no CUDA crate is GPU code by such a call of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    cuda_ctor: bool,
    cpu: bool,
    /// Some of the non-CUDA devices it chooses are another accelerator's (Metal), not the CPU.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    other_device: bool,
    /// A binding that is a CPU device itself (`let dev: Cpu = …`, `let d = Device::Cpu`,
    /// `Cpu::default()`): the program chooses the CPU, whatever a library could choose.
    cpu_binding: bool,
    /// Its `#[test]` functions, and those of them that bind a CPU device themselves: a test
    /// binary is judged test by test (one CPU test does not make the others CPU).
    tests: usize,
    cpu_tests: Vec<String>,
    /// A CPU device is bound outside a `#[test]` function (a helper, `main`).
    cpu_binding_other: bool,
    /// A device bound from a call (`let device = lib::device(cpu)?`): whatever that call
    /// chooses.
    device_call_binding: bool,
    async_main: bool,
    /// An async main the fix makes sync (`--unsafe-fixes`): it masks once fixed.
    made_sync: bool,
    has_main: bool,
    /// `#![forbid(unsafe_code)]`/`#![deny(unsafe_code)]`: in edition 2024 its main cannot set
    /// the env.
    forbids_unsafe: bool,
    /// Its sync main runs under an attribute not known to keep it on the first thread
    /// (`#[show_image::main]`): no env is set in it.
    foreign_main: bool,
    /// Its functions, methods, constants and types, with what each one's code names: which
    /// of a library's code a program runs.
    items: super::items::Items,
    /// Its doc examples rustdoc runs (`cargo test --doc`), each a program of its own: the line
    /// of its opening fence and what its code names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    doc_examples: Vec<(u32, RsFile)>,
}

/// The facts of one file (`None` when it does not parse) and the hash of the bytes read;
/// `None` when it cannot be read.
fn read(root: &Path, entry: &Entry, limit: u64) -> Option<(Option<RsFile>, u64)> {
    let bytes = crate::fs::source::read_under(root, &entry.rel_path, limit).ok()?;
    let hash = crate::fs::source::content_key(&bytes);
    // A bug met here leaves the file out: the CPU stage meets it again and reports it.
    let facts = crate::fs::panics::caught(entry, || parse(bytes, &entry.rel));
    Some((facts.ok().flatten(), hash))
}

fn parse(bytes: Vec<u8>, rel: &str) -> Option<RsFile> {
    let text = String::from_utf8(bytes).ok()?;
    // Too deep for syn's recursion: left to the per-file pass, which reports it.
    crate::lang::nesting::check(Language::Rust, &text).ok()?;
    let mut file = syn::parse_file(&text).ok()?;
    // `use`, `mod` and items inside `cfg_if!` are the crate's as the GPU build compiles it.
    if let Some(items) = super::facts::mains::expand_cfg_if(&file.items) {
        file.items = items;
    }
    // The tests a GPU crate's macro writes (`test_device!`), for the readers that use no span.
    let tests_written = super::test_macros::expand(&file.items).map(|items| syn::File {
        shebang: file.shebang.clone(),
        attrs: file.attrs.clone(),
        items,
    });
    let as_tests_run = tests_written.as_ref().unwrap_or(&file);
    let mut v = Reader::default();
    v.visit_file(as_tests_run);
    (v.file.index_fns, v.file.forwards) = super::index_fns::collect(&file, rel, &text);
    v.file.field_args = super::index_fns::field_args(&file, rel, &text);
    v.file.const_args = super::index_fns::const_args(&file, rel, &text);
    v.file.items = super::items::collect(as_tests_run);
    let main = super::facts::mains::choose(&file.items);
    v.file.has_main = main.is_some();
    v.file.forbids_unsafe = file.attrs.iter().any(super::facts::forbids_unsafe);
    v.file.foreign_main = main.as_ref().is_some_and(|m| m.foreign.is_some());
    // An async main whose runtime the fix rebuilds in a sync main (`--unsafe-fixes`) masks too.
    let convertible = |m: &super::facts::MainFn| {
        m.runtime
            .as_ref()
            .is_some_and(super::async_main::convertible)
    };
    v.file.async_main = main.as_ref().is_some_and(|m| m.is_async && !convertible(m));
    v.file.made_sync = main.as_ref().is_some_and(|m| m.is_async && convertible(m));
    // Read while the file's spans are valid (they give the examples' lines).
    let examples = super::doc_tests::examples(&file);
    proc_macro2::extra::invalidate_current_thread_spans();
    v.file.slim();
    v.file.doc_examples = examples
        .into_iter()
        .filter_map(|(line, code)| Some((line, example(&code)?)))
        .collect();
    proc_macro2::extra::invalidate_current_thread_spans();
    Some(v.file)
}

/// One doc example as rustdoc compiles it: in a `fn main` it writes unless the code has one.
fn example(code: &str) -> Option<RsFile> {
    crate::lang::nesting::check(Language::Rust, code).ok()?;
    let file = if code.contains("fn main") {
        syn::parse_file(code).ok()?
    } else {
        syn::parse_file(&format!("fn main() {{\n{code}\n}}")).ok()?
    };
    let mut v = Reader::default();
    v.visit_file(&file);
    v.file.items = super::items::collect(&file);
    v.file.slim();
    (!v.file.names.is_empty()).then_some(v.file)
}

impl RsFile {
    /// The index holds every file of a group of packages at once (its peak memory): only what
    /// `link` reads, and no spare capacity.
    fn slim(&mut self) {
        // `link` asks the segments only whether a CUDA crate's entry point is named.
        self.segments.retain(|s| is_entry_point(s));
        self.mods.shrink_to_fit();
        self.names.shrink_to_fit();
        self.segments.shrink_to_fit();
        self.items.slim();
        self.embeds.shrink_to_fit();
        self.index_fns.shrink_to_fit();
        self.forwards.shrink_to_fit();
        self.field_args.shrink_to_fit();
        self.const_args.shrink_to_fit();
        self.option_fields.shrink_to_fit();
        self.consts.shrink_to_fit();
    }
}

/// What `reach` reads of some code: a file, or the items of a library a program runs.
trait Unit {
    /// The first segments of its paths: the crates it names.
    fn names(&self) -> &HashSet<String>;
    /// The crates it names other than only as a type (a library's code a program runs: a
    /// signature's or a field's type builds nothing); a file's own code: all it names.
    fn values(&self) -> &HashSet<String> {
        self.names()
    }
    /// Every segment of its paths and every method it calls (entry points).
    fn segments(&self) -> &HashSet<String>;
    /// It chooses a CUDA device.
    fn cuda(&self) -> bool;
    /// A library's code a program runs (not a whole file).
    fn library(&self) -> bool {
        false
    }
    /// The paths it names in other crates (a guess: `true`) and the methods it calls.
    fn entries(&self) -> (Vec<(Vec<String>, bool)>, Vec<String>);
    /// Whether it names the path `path` of another crate only as a type.
    fn only_a_type(&self, _path: &[String]) -> bool {
        false
    }
}

/// Where `units` enter the crate they call `krate`: its paths (the name taken off) and the
/// methods they call.
fn entries_into(units: &[&dyn Unit], krate: &str) -> (Vec<(Vec<String>, bool)>, Vec<String>) {
    let (mut entry, mut methods) = (Vec::new(), Vec::new());
    for u in units {
        let (paths, called) = u.entries();
        entry.extend(
            paths
                .into_iter()
                .filter(|(p, _)| p[0] == krate)
                .map(|(p, guess)| (p[1..].to_vec(), guess)),
        );
        methods.extend(called);
    }
    (entry, methods)
}

impl Unit for RsFile {
    fn names(&self) -> &HashSet<String> {
        &self.names
    }
    fn segments(&self) -> &HashSet<String> {
        &self.segments
    }
    fn cuda(&self) -> bool {
        self.cuda
    }
    fn entries(&self) -> (Vec<(Vec<String>, bool)>, Vec<String>) {
        super::items::entries(&self.items)
    }
}

/// A test binary's file without its tests that bind a CPU device (see `link`).
struct TestsOf<'f> {
    file: &'f RsFile,
    items: super::items::Items,
}

impl Unit for TestsOf<'_> {
    fn names(&self) -> &HashSet<String> {
        &self.file.names
    }
    fn segments(&self) -> &HashSet<String> {
        &self.file.segments
    }
    fn cuda(&self) -> bool {
        self.file.cuda
    }
    fn entries(&self) -> (Vec<(Vec<String>, bool)>, Vec<String>) {
        super::items::entries(&self.items)
    }
}

impl Unit for super::items::Reached {
    fn names(&self) -> &HashSet<String> {
        &self.names
    }
    fn values(&self) -> &HashSet<String> {
        &self.values
    }
    fn segments(&self) -> &HashSet<String> {
        &self.segments
    }
    fn cuda(&self) -> bool {
        self.cuda
    }
    fn library(&self) -> bool {
        true
    }
    fn only_a_type(&self, path: &[String]) -> bool {
        self.external_types.contains(path)
    }
    fn entries(&self) -> (Vec<(Vec<String>, bool)>, Vec<String>) {
        let paths = self.external.iter().map(|p| (p.clone(), false)).collect();
        (paths, self.methods.iter().cloned().collect())
    }
}

fn is_cpu_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| non_cuda_device(&s.ident.to_string())))
}

/// `Device::Cpu`, `Cpu::default()`, `Cpu::seed_from_u64(0)`, `Device::new_metal(0)?`: the
/// value is a device CUDA does not run (a method call on something else — `t.to_device(&Device::
/// Cpu)` — is a copy, not a choice).
fn is_cpu_device(expr: &syn::Expr) -> bool {
    let cpu_path = |p: &syn::Path| {
        p.segments
            .iter()
            .any(|s| non_cuda_device(&s.ident.to_string()))
    };
    match expr {
        syn::Expr::Path(p) => cpu_path(&p.path),
        syn::Expr::Call(c) => matches!(c.func.as_ref(), syn::Expr::Path(p) if cpu_path(&p.path)),
        syn::Expr::Reference(r) => is_cpu_device(&r.expr),
        syn::Expr::Paren(p) => is_cpu_device(&p.expr),
        syn::Expr::Try(t) => is_cpu_device(&t.expr),
        syn::Expr::MethodCall(m)
            if matches!(m.method.to_string().as_str(), "unwrap" | "expect") =>
        {
            is_cpu_device(&m.receiver)
        }
        _ => false,
    }
}

/// Every name of a `use` tree, at every level (`a::b::{c, d::e}`: a, b, c, d, e).
fn use_segments(t: &syn::UseTree, out: &mut HashSet<String>) {
    match t {
        syn::UseTree::Path(p) => {
            out.insert(p.ident.to_string());
            use_segments(&p.tree, out);
        }
        syn::UseTree::Name(n) => {
            out.insert(n.ident.to_string());
        }
        syn::UseTree::Rename(r) => {
            out.insert(r.ident.to_string());
        }
        syn::UseTree::Group(g) => g.items.iter().for_each(|i| use_segments(i, out)),
        syn::UseTree::Glob(_) => {}
    }
}

#[derive(Default)]
struct Reader {
    file: RsFile,
    /// Inside a struct of command-line options (`#[derive(Parser)]`, `Args`).
    cli_struct: bool,
    inline: Vec<String>,
    /// The functions being read, outermost first, each with whether it is a `#[test]`.
    function: Vec<(String, bool)>,
}

/// `#[ctor]`, `#[ctor::ctor]`: a function the loader runs before `main` (the `ctor` crate's
/// life before main), which may start threads.
fn before_main_attr(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "ctor")
}

/// `#[link_section = ".init_array"]` (ELF), `".CRT$XCU"` (Windows), `"__DATA,__mod_init_func"`
/// (macOS): a static the loader calls before `main`. The section's name.
fn init_section(attr: &syn::Attribute) -> Option<String> {
    // `#[unsafe(link_section = …)]` (edition 2024) holds it in a list.
    let meta = if attr.path().is_ident("unsafe") {
        attr.parse_args::<syn::Meta>().ok()?
    } else {
        attr.meta.clone()
    };
    let syn::Meta::NameValue(nv) = &meta else {
        return None;
    };
    let value = match &nv.value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) if nv.path.is_ident("link_section") => s.value(),
        _ => return None,
    };
    let constructor = value.starts_with(".init_array")
        || value.starts_with(".ctors")
        || value.starts_with(".CRT$XC")
        || value.contains("mod_init_func");
    constructor.then_some(value)
}

/// `#[test]`, `#[tokio::test]`, `#[test_case(…)]`-free: an attribute that makes a function a
/// test of libtest's `main`.
pub(super) fn is_test_attr(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "test")
}

impl Reader {
    /// The code binds a CPU device itself: in a `#[test]` function that test is CPU, elsewhere
    /// the program is.
    fn binds_cpu(&mut self) {
        self.file.cpu_binding = true;
        match self.function.first() {
            Some((name, true)) => {
                if !self.file.cpu_tests.contains(name) {
                    self.file.cpu_tests.push(name.clone());
                }
            }
            _ => self.file.cpu_binding_other = true,
        }
    }
}

impl<'a> Visit<'a> for Reader {
    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        let path = m.attrs.iter().find_map(|a| {
            let syn::Meta::NameValue(nv) = &a.meta else {
                return None;
            };
            if !nv.path.is_ident("path") {
                return None;
            }
            match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            }
        });
        match &m.content {
            None => self
                .file
                .mods
                .push((m.ident.to_string(), path, self.inline.clone())),
            Some(_) => {
                self.inline.push(m.ident.to_string());
                visit::visit_item_mod(self, m);
                self.inline.pop();
            }
        }
    }

    fn visit_path(&mut self, p: &'a syn::Path) {
        if let Some(first) = p.segments.first() {
            self.file.names.insert(first.ident.to_string());
        }
        for s in &p.segments {
            let id = s.ident.to_string();
            self.file.segments.insert(id.clone());
            if super::items::chooses_cuda(&id) {
                self.file.cuda = true;
                self.file.cuda_ctor |= matches!(
                    id.as_str(),
                    "new_cuda"
                        | "cuda_if_available"
                        | "new_cuda_with_stream"
                        | "CudaContext"
                        | "CudaDevice"
                );
            } else if non_cuda_device(&id) {
                self.file.cpu = true;
                self.file.other_device |= OTHER_DEVICES.contains(&id.as_str());
            }
        }
        visit::visit_path(self, p);
    }

    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        if let Some(attr) = f.attrs.iter().find(|a| before_main_attr(a)) {
            let path = super::facts::mains::attr_path(attr.path());
            self.file
                .before_main
                .push(format!("`#[{path}]` fn `{}`", f.sig.ident));
        }
        // A test at the top or in an inline module (`mod tests { #[test] fn … }`), named by
        // its path there (`tests::gpt2`), as `Items::without` takes it.
        let test = self.function.is_empty() && f.attrs.iter().any(is_test_attr);
        self.file.tests += usize::from(test);
        let mut key = self.inline.clone();
        key.push(f.sig.ident.to_string());
        self.function.push((key.join("::"), test));
        visit::visit_item_fn(self, f);
        self.function.pop();
    }

    fn visit_item_struct(&mut self, s: &'a syn::ItemStruct) {
        let outer = self.cli_struct;
        self.cli_struct = s.attrs.iter().any(super::facts::derives_parser);
        visit::visit_item_struct(self, s);
        self.cli_struct = outer;
    }

    fn visit_field(&mut self, f: &'a syn::Field) {
        if let Some(name) = &f.ident {
            if f.attrs
                .iter()
                .any(|a| super::facts::option_default(a).is_some())
            {
                self.file.option_fields.push(name.to_string());
            }
            let option = self.cli_struct || f.attrs.iter().any(super::facts::is_option_attr);
            if let Some(what) = option
                .then(|| super::facts::multi_gpu_option(name, f))
                .flatten()
            {
                self.file.multi_gpu_options.push(what);
            }
        }
        visit::visit_field(self, f);
    }

    fn visit_item_const(&mut self, c: &'a syn::ItemConst) {
        if super::facts::int_lit(&c.expr).is_some() {
            self.file.consts.push(c.ident.to_string());
        }
        visit::visit_item_const(self, c);
    }

    fn visit_item_static(&mut self, st: &'a syn::ItemStatic) {
        if let Some(section) = st.attrs.iter().find_map(init_section) {
            self.file.before_main.push(format!(
                "the static `{}` in `{section}` (a constructor)",
                st.ident
            ));
        }
        let fixed = matches!(st.mutability, syn::StaticMutability::None);
        if fixed && super::facts::int_lit(&st.expr).is_some() {
            self.file.consts.push(st.ident.to_string());
        }
        visit::visit_item_static(self, st);
    }

    fn visit_local(&mut self, l: &'a syn::Local) {
        let cpu_type = match &l.pat {
            syn::Pat::Type(t) => is_cpu_type(&t.ty),
            _ => false,
        };
        let cpu_value = l
            .init
            .as_ref()
            .is_some_and(|init| is_cpu_device(&init.expr));
        let binds_cpu = cpu_type || cpu_value;
        let device_name = match &l.pat {
            syn::Pat::Ident(id) => Some(&id.ident),
            syn::Pat::Type(t) => match t.pat.as_ref() {
                syn::Pat::Ident(id) => Some(&id.ident),
                _ => None,
            },
            _ => None,
        }
        .is_some_and(|id| {
            let id = id.to_string();
            id == "device" || id == "dev" || id.ends_with("_device")
        });
        let from_call = l.init.as_ref().is_some_and(|init| {
            let mut e = init.expr.as_ref();
            loop {
                match e {
                    syn::Expr::Try(t) => e = &t.expr,
                    syn::Expr::MethodCall(m)
                        if matches!(m.method.to_string().as_str(), "unwrap" | "expect") =>
                    {
                        e = &m.receiver
                    }
                    syn::Expr::Call(c) => break matches!(c.func.as_ref(), syn::Expr::Path(p) if p.path.segments.len() > 1),
                    _ => break false,
                }
            }
        });
        self.file.device_call_binding |= device_name && from_call && !binds_cpu;
        if binds_cpu {
            self.binds_cpu();
        }
        visit::visit_local(self, l);
    }

    /// `TranslationConfig::new(…, Device::Cpu)`: a CPU device handed to a config's constructor
    /// (a type named `…Config`, `…Options`, `…Params`, `…Settings`) is the code's choice, as
    /// a config's `device` field is. A CPU device handed anywhere else (`x.to_device(Device::
    /// Cpu)` to print a result) chooses nothing.
    fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
        if let syn::Expr::Path(p) = c.func.as_ref() {
            let n = p.path.segments.len();
            let config = n >= 2 && {
                let ty = p.path.segments[n - 2].ident.to_string();
                ["Config", "Options", "Params", "Settings"]
                    .iter()
                    .any(|end| ty.ends_with(end))
            };
            if config && c.args.iter().any(is_cpu_device) {
                self.binds_cpu();
            }
        }
        visit::visit_expr_call(self, c);
    }

    /// `SummarizationConfig { device: Device::Cpu, .. }`: a device the code hands a library in
    /// its config is its choice, as a binding is.
    fn visit_field_value(&mut self, f: &'a syn::FieldValue) {
        if let syn::Member::Named(id) = &f.member {
            let id = id.to_string();
            if (id == "device" || id.ends_with("_device")) && is_cpu_device(&f.expr) {
                self.binds_cpu();
            }
        }
        visit::visit_field_value(self, f);
    }

    fn visit_macro(&mut self, m: &'a syn::Macro) {
        let name = m.path.segments.last().map(|s| s.ident.to_string());
        if matches!(name.as_deref(), Some("include_str" | "include_bytes")) {
            if let Ok(lit) = m.parse_body::<syn::LitStr>() {
                self.file.embeds.push(lit.value());
            }
        }
        // The arguments of an expression-like macro (`assert!(Cuda::new().hardwares().len()
        // > 0)`, `println!("{:?}", Backend::<Cuda>::default())`) are code the file names.
        if let Ok(args) = m.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            for arg in &args {
                self.visit_expr(arg);
            }
        }
        visit::visit_macro(self, m);
    }

    /// `extern crate coaster as co;` names `coaster` as `use coaster as co;` does: its code
    /// then reads it as `co::…` or `crate::co::…`. A plain `extern crate x;` names nothing by
    /// itself (`#[macro_use]` for a derive): the paths `x::…` do.
    fn visit_item_extern_crate(&mut self, c: &'a syn::ItemExternCrate) {
        if c.rename.is_some() {
            self.file.names.insert(c.ident.to_string());
        }
        visit::visit_item_extern_crate(self, c);
    }

    fn visit_use_tree(&mut self, t: &'a syn::UseTree) {
        use_segments(t, &mut self.file.segments);
        match t {
            syn::UseTree::Path(p) => {
                self.file.names.insert(p.ident.to_string());
            }
            syn::UseTree::Name(n) => {
                self.file.names.insert(n.ident.to_string());
            }
            syn::UseTree::Rename(r) => {
                self.file.names.insert(r.ident.to_string());
            }
            _ => {}
        }
        // Only the first segment names a crate: do not descend into `a::b::{c}`.
        if let syn::UseTree::Group(g) = t {
            for item in &g.items {
                self.visit_use_tree(item);
            }
        }
    }

    fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
        // `Device::cuda_if_available()` is a path; `.cuda()` / `.to_device(Device::Cuda(0))`
        // are what tch programs write too.
        if m.method == "cuda" {
            self.file.cuda = true;
        }
        // A wrapper's GPU switch (whisper-rs's `params.set_use_gpu(false)`): the code's choice.
        if matches!(
            m.method.to_string().as_str(),
            "set_use_gpu" | "use_gpu" | "with_use_gpu"
        ) {
            if let [syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Bool(on),
                ..
            })] = m.args.iter().collect::<Vec<_>>()[..]
            {
                if on.value {
                    self.file.cuda = true;
                } else {
                    self.file.cpu = true;
                    self.binds_cpu();
                }
            }
        }
        self.file.segments.insert(m.method.to_string());
        visit::visit_expr_method_call(self, m);
    }
}

/// A package of the tree: where it is and what it depends on.
#[derive(Debug, Clone)]
struct Package {
    /// Root-relative directory (`""` for the root).
    dir: String,
    /// The name code uses for its library (`[lib] name`, else the package name with `_`).
    lib_name: String,
    lib_root: Option<String>,
    /// Local dependency name → how it reaches CUDA (a registry crate, with its reason) or the
    /// package of the tree it is.
    deps: Vec<(String, Dep)>,
    /// Each dependency as its manifest declares it, with the features this package turns on
    /// for it (its own `features`, and every feature of the package naming `dep/feat`): what
    /// `deps` is resolved from, once per build (see [`Packages::unified`]).
    raw: Vec<RawDep>,
    /// Root-relative paths of its binary targets' root files, and whether each is an
    /// integration test.
    binaries: Vec<(String, bool)>,
    /// Root-relative paths of the binaries whose own `#[test]` functions `cargo test` runs.
    tested_bins: Vec<String>,
    /// Its edition (`set_var` is unsafe from 2024 on) and whether its `[lints]` forbid or deny
    /// unsafe code: from 2024 on, no main of it can set the env.
    edition: u32,
    lints_forbid_unsafe: bool,
    /// A feature of its own named for CUDA (ct2rs's `cuda = []`, read by its build script to
    /// compile CTranslate2 with CUDA): its own features are all taken as on.
    cuda_feature: Option<String>,
    /// Every feature of it named for CUDA only turns on its dependencies' (`cuda =
    /// ["candle-core/cuda", "dep:cudarc"]`): its CUDA is theirs, which the item reach follows,
    /// not a build script's.
    cuda_forwards: bool,
}

#[derive(Debug, Clone)]
struct RawDep {
    local: String,
    package: String,
    on: Vec<String>,
    /// The package of the tree it is (a path dependency).
    tree: Option<usize>,
}

#[derive(Debug, Clone)]
enum Dep {
    /// Reaches CUDA (why), whether through libtorch, and, for a crate that reaches CUDA only
    /// where the code asks for it, the entry points that ask (besides choosing a CUDA device
    /// by name, which always does), and whether it computes on the device its caller hands
    /// it (`handed_device` in the knowledge table).
    Cuda(String, bool, Option<Vec<&'static str>>, bool),
    /// A known CUDA crate built without its CUDA feature.
    CudaOff(String),
    /// A package of the tree, and the CUDA feature its dependent turns on for it when the
    /// feature's name says CUDA (`llama-cpp-sys-2 = { path, features = ["cuda"] }`, or
    /// `cuda = ["mysys/cuda"]`): a crate whose CUDA is its build script's (bindings) reaches
    /// CUDA so, though its Rust code names no CUDA crate.
    Tree(usize, Option<String>),
    Other,
}

#[derive(Debug, Default)]
struct Packages(Vec<Package>);

impl Packages {
    fn find(root: &Path, rs: &[&Entry]) -> Packages {
        // Every directory holding a Cargo.toml with a [package], found above the .rs files.
        let mut dirs: Vec<String> = Vec::new();
        let mut seen = HashSet::default();
        for e in rs {
            let mut dir = Path::new(&e.rel).parent();
            while let Some(d) = dir {
                let key = slash(d);
                if !seen.insert(key.clone()) {
                    break;
                }
                // Any kind of file: a link or a FIFO is refused by name when read.
                if std::fs::symlink_metadata(root.join(d).join("Cargo.toml")).is_ok() {
                    dirs.push(key);
                }
                dir = d.parent();
            }
        }
        dirs.sort();
        let manifests: Vec<(String, Manifest)> = dirs
            .into_iter()
            .filter_map(|d| Some((d.clone(), manifest::load(root, Path::new(&d))?)))
            .filter(|(_, m)| m.package.is_some())
            .collect();
        let present: HashSet<&str> = rs.iter().map(|e| e.rel.as_str()).collect();
        let mut packages: Vec<Package> = manifests
            .iter()
            .map(|(dir, m)| {
                let (lib_name, lib_path) = manifest::library(m).unwrap_or_else(|| {
                    (
                        manifest::package_name(m).unwrap_or_default(),
                        "src/lib.rs".into(),
                    )
                });
                let lib_root = join(dir, &slash(&lib_path));
                let targets = |paths: Vec<PathBuf>, test: bool| {
                    paths
                        .into_iter()
                        .map(|p| normalize(&join(dir, &slash(&p))))
                        .filter(|p| present.contains(p.as_str()))
                        .map(|p| (p, test))
                        .collect::<Vec<_>>()
                };
                let mut binaries = targets(manifest::program_roots(m), false);
                binaries.extend(targets(manifest::test_roots(m), true));
                let tested_bins = targets(manifest::tested_bin_roots(m), false)
                    .into_iter()
                    .map(|(p, _)| p)
                    .collect();
                Package {
                    dir: dir.clone(),
                    lib_root: present.contains(lib_root.as_str()).then_some(lib_root),
                    lib_name,
                    deps: Vec::new(),
                    raw: Vec::new(),
                    binaries,
                    tested_bins,
                    edition: manifest::edition(m),
                    lints_forbid_unsafe: manifest::forbids_unsafe(m),
                    // The package's own CUDA switch by its exact name: a crate of the tree
                    // that lists a feature per module (OpenCV's `cudaarithm`, `cudafilters`)
                    // selects bindings with it, its build compiles no CUDA of its own.
                    cuda_feature: m
                        .features
                        .keys()
                        .find(|f| CUDA_FEATURES.contains(&f.as_str()))
                        .cloned(),
                    cuda_forwards: m
                        .features
                        .keys()
                        .filter(|f| CUDA_FEATURES.contains(&f.as_str()))
                        .all(|f| forwards(&m.features, f, 0)),
                }
            })
            .collect();
        let index_of: HashMap<String, usize> = packages
            .iter()
            .enumerate()
            .map(|(i, p)| (p.dir.clone(), i))
            .collect();
        for (i, (dir, m)) in manifests.iter().enumerate() {
            // Every feature of the package turns on what it names: `cuda = ["candle-core/cuda"]`.
            let features: Vec<&String> = manifest::features(m).flat_map(|(_, on)| on).collect();
            let mut raw = Vec::new();
            for dep in manifest::dependencies(m) {
                // Only a path dependency is a crate of the tree: a registry one is not, even
                // when a package of the tree has its name (a vendored stub).
                let tree = dep.path.as_ref().and_then(|p| {
                    let absolute = if p.is_absolute() {
                        p.clone()
                    } else {
                        root.join(dir).join(p)
                    };
                    let rel = absolute.strip_prefix(root).ok()?;
                    index_of.get(&normalize(&slash(rel))).copied()
                });
                let mut on = dep.features.clone();
                for f in &features {
                    let raw = f.trim_start_matches("dep:");
                    if let Some((d, feat)) = raw.split_once('/') {
                        if d.trim_end_matches('?').replace('-', "_") == dep.local {
                            on.push(feat.to_string());
                        }
                    }
                }
                raw.push(RawDep {
                    local: dep.local,
                    package: dep.package,
                    on,
                    tree,
                });
            }
            // A registry crate's feature that turns on another's (`candle-transformers/cuda`
            // turns on `candle-core/cuda`): a sibling dependency of that package gets it too.
            let implied = implied_features(&raw);
            let mut deps: Vec<(String, Dep)> = raw
                .iter()
                .enumerate()
                .map(|(n, d)| {
                    let by = implied.iter().filter(|(k, _, _)| *k == n);
                    let extra: Vec<String> = by
                        .clone()
                        .filter(|(_, f, _)| !d.on.contains(f))
                        .map(|(_, f, _)| f.clone())
                        .collect();
                    let base = resolve(d, &d.on, None);
                    if extra.is_empty() || matches!(base, Dep::Cuda(..)) {
                        return (d.local.clone(), base);
                    }
                    let on: Vec<String> = d.on.iter().cloned().chain(extra).collect();
                    let mut who: Vec<String> = by.map(|(_, _, w)| w.clone()).collect();
                    who.dedup();
                    (d.local.clone(), resolve(d, &on, Some(&who.join("`, `"))))
                })
                .collect();
            for (n, f, _) in &implied {
                if !raw[*n].on.contains(f) {
                    raw[*n].on.push(f.clone());
                }
            }
            packages[i].raw = raw;
            // A CUDA crate's own examples and tests use it (`cust`'s examples, a wrapper built
            // with its own `cuda` feature).
            let name = manifest::package_name(m).unwrap_or_default();
            let own_features: Vec<String> = m.features.keys().cloned().collect();
            let known = rust::cuda_crate(&name).is_some() || rust::named_for_cuda(&name);
            if let Some((why, torch, selected)) =
                known.then(|| cuda_dep(&name, &own_features)).flatten()
            {
                let lib_name = packages[i].lib_name.clone();
                let follows = handed_device(&name);
                deps.push((
                    lib_name,
                    Dep::Cuda(why, torch, gate(&name, selected), follows),
                ));
            }
            packages[i].deps = deps;
        }
        Packages(packages)
    }
}

impl Packages {
    /// The packages path dependencies join (either way), each group with the files under its
    /// packages' directories (a file belongs to the deepest package above it); last, the files
    /// under no package, with no package, 256 at a time.
    fn groups<'e>(&self, rs: &[&'e Entry]) -> Vec<(Vec<usize>, Vec<&'e Entry>)> {
        fn find(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        let mut parent: Vec<usize> = (0..self.0.len()).collect();
        for (i, p) in self.0.iter().enumerate() {
            for (_, dep) in &p.deps {
                if let Dep::Tree(j, _) = dep {
                    let (a, b) = (find(&mut parent, i), find(&mut parent, *j));
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
        let by_dir: HashMap<&str, usize> = self
            .0
            .iter()
            .enumerate()
            .map(|(i, p)| (p.dir.as_str(), i))
            .collect();
        let mut groups: Vec<(Vec<usize>, Vec<&Entry>)> =
            vec![(Vec::new(), Vec::new()); self.0.len()];
        for i in 0..self.0.len() {
            let r = find(&mut parent, i);
            groups[r].0.push(i);
        }
        let mut loose = Vec::new();
        for e in rs {
            let owner = Path::new(&e.rel)
                .ancestors()
                .skip(1)
                .find_map(|d| by_dir.get(slash(d).as_str()).copied());
            match owner {
                Some(i) => {
                    let r = find(&mut parent, i);
                    groups[r].1.push(*e);
                }
                None => loose.push(*e),
            }
        }
        groups.retain(|(members, _)| !members.is_empty());
        // Files under no package are no target's (only a `#[path]` brings one into a group,
        // which reads it itself): each is read for itself, in chunks that do not grow with
        // the tree.
        groups.extend(loose.chunks(256).map(|chunk| (Vec::new(), chunk.to_vec())));
        groups
    }
}

impl Package {
    /// The root files of its targets.
    fn roots(&self) -> impl Iterator<Item = String> + '_ {
        self.lib_root
            .iter()
            .cloned()
            .chain(self.binaries.iter().map(|(b, _)| b.clone()))
    }
}

/// Whether feature `f` of a package only turns on its dependencies' features (`x/cuda`,
/// `dep:x`), directly or through its other features (`flash-attn = ["cuda", …]`).
fn forwards(
    features: &std::collections::BTreeMap<String, Vec<String>>,
    f: &str,
    depth: usize,
) -> bool {
    let Some(on) = features.get(f) else {
        return false;
    };
    depth < 8
        && !on.is_empty()
        && on
            .iter()
            .all(|e| e.contains('/') || e.starts_with("dep:") || forwards(features, e, depth + 1))
}

/// The features registry dependencies of one package turn on in its other dependencies
/// through their own `[features]` (the knowledge table's `features_enable`): (the dependency
/// it turns on, the feature, what turned it on: `candle_transformers/cuda`).
fn implied_features(raw: &[RawDep]) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    for d in raw.iter().filter(|d| d.tree.is_none()) {
        let Some(row) = rust::by_package(&d.package) else {
            continue;
        };
        for (feature, enables) in row.features_enable {
            if !d.on.iter().any(|f| f == feature) {
                continue;
            }
            for target in *enables {
                let Some((package, feat)) = target.split_once('/') else {
                    continue;
                };
                for (n, other) in raw.iter().enumerate() {
                    if other.package == package && other.tree.is_none() {
                        out.push((n, feat.to_string(), format!("{}/{feature}", d.package)));
                    }
                }
            }
        }
    }
    // A crate that reaches CUDA when another's feature is on in the build (the knowledge
    // table's `cuda_with`): its `cuda` is on when that feature is.
    for (n, d) in raw.iter().enumerate().filter(|(_, d)| d.tree.is_none()) {
        let Some(row) = rust::by_package(&d.package) else {
            continue;
        };
        for target in rust::cuda_with(row) {
            let Some((package, feat)) = target.split_once('/') else {
                continue;
            };
            let on = |other: &RawDep| {
                other.package == package
                    && other.tree.is_none()
                    && other.on.iter().any(|f| f == feat)
            };
            if raw.iter().any(on)
                || out
                    .iter()
                    .any(|(k, f, _)| raw[*k].package == package && f == feat)
            {
                out.push((n, "cuda".to_string(), target.to_string()));
                break;
            }
        }
    }
    out
}

/// How a dependency reaches CUDA with the features `on` for it in the build; `by`: the package
/// of the build that turned one of them on, when not the dependent itself.
fn resolve(d: &RawDep, on: &[String], by: Option<&str>) -> Dep {
    let via = |why: String| match by {
        Some(by) => format!(
            "{why} (turned on for the whole build by `{by}`: cargo unifies a crate's features)"
        ),
        None => why,
    };
    // A path dependency that is a crate of the table (a wrapper vendored in the tree, its
    // repository's examples) reaches CUDA as the registry crate does.
    if let Some((why, torch, selected)) = cuda_dep(&d.package, on)
        .filter(|_| d.tree.is_none() || rust::cuda_crate(&d.package).is_some())
    {
        return Dep::Cuda(
            via(why),
            torch,
            gate(&d.package, selected),
            handed_device(&d.package),
        );
    }
    match d.tree {
        Some(j) => Dep::Tree(
            j,
            on.iter()
                .find(|f| rust::cuda_feature(f))
                .map(|f| via(format!("its `{f}` feature"))),
        ),
        None if rust::cuda_crate(&d.package).is_some() => Dep::CudaOff(d.package.clone()),
        None => Dep::Other,
    }
}

/// The entry points a program must name to reach CUDA through `package`: `None` when any
/// use does; `selected`: libtorch, which only reaches CUDA where the code chooses it.
fn gate(package: &str, selected: bool) -> Option<Vec<&'static str>> {
    let apis = entry_points(package);
    (selected || !apis.is_empty()).then_some(apis)
}

/// How a registry dependency reaches CUDA, given the features turned on for it: why, whether
/// through libtorch, whether only where the code selects CUDA. A crate the table does not know
/// reaches CUDA when a feature named for it is on (`mistralrs-core/cuda`).
fn cuda_dep(package: &str, on: &[String]) -> Option<(String, bool, bool)> {
    let Some(krate) = rust::cuda_crate(package) else {
        let feature = on
            .iter()
            .find(|f| rust::cuda_feature(f))
            .map(|f| (format!("`{package}` with its `{f}` feature"), false, false));
        // A crate the table does not model whose name says CUDA (`kn-cuda-sys`, `cudnn`).
        let named = rust::named_for_cuda(package).then(|| {
            (
                format!("`{package}`, a crate whose name says CUDA (the tool does not model it)"),
                false,
                false,
            )
        });
        return feature.or(named);
    };
    let (why, torch_crate) = (krate.why, krate.libtorch);
    match krate.cuda {
        Cuda::Always => Some((format!("`{package}`: {why}"), torch_crate, false)),
        Cuda::WhenSelected => Some((format!("`{package}`: {why}"), torch_crate, true)),
        Cuda::Never => None,
        // A crate with no CUDA feature of its own, on with another's (`cuda_with`).
        Cuda::Feature(features) if !rust::cuda_with(krate).is_empty() => on
            .iter()
            .any(|f| features.contains(&f.as_str()))
            .then(|| (format!("`{package}`: {why}"), torch_crate, false)),
        Cuda::Feature(features) => on.iter().find(|f| features.contains(&f.as_str())).map(|f| {
            (
                format!("`{package}` with its `{f}` feature: {why}"),
                torch_crate || f == "tch",
                false,
            )
        }),
    }
}

fn join(dir: &str, rel: &str) -> String {
    if dir.is_empty() {
        rel.to_string()
    } else {
        format!("{dir}/{rel}")
    }
}

/// `a/b/../c` → `a/c`, `./x` → `x`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

fn slash(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

/// The files of a target: its root and every module `mod x;` reaches.
fn module_tree(root: &str, files: &HashMap<String, RsFile>) -> Vec<String> {
    module_paths(root, files)
        .into_iter()
        .map(|(f, _)| f)
        .collect()
}

/// The files of a target with their module paths (`[]` for the root, `[a, b]` for `a::b`).
fn module_paths(root: &str, files: &HashMap<String, RsFile>) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = vec![(root.to_string(), Vec::new())];
    let mut i = 0;
    while i < out.len() {
        let (rel, modpath) = out[i].clone();
        i += 1;
        let Some(file) = files.get(&rel) else {
            continue;
        };
        let path = PathBuf::from(&rel);
        let dir = path.parent().map(slash).unwrap_or_default();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let is_root = rel == root || stem == "mod" || stem == "lib" || stem == "main";
        let base = if is_root {
            dir.clone()
        } else {
            join(&dir, &stem)
        };
        for (name, attr, inline) in &file.mods {
            let candidates = match attr {
                Some(p) => vec![normalize(&join(&dir, p))],
                None => {
                    let base = inline.iter().fold(base.clone(), |b, m| join(&b, m));
                    vec![
                        join(&base, &format!("{name}.rs")),
                        join(&base, &format!("{name}/mod.rs")),
                    ]
                }
            };
            if let Some(found) = candidates.into_iter().find(|c| files.contains_key(c)) {
                if !out.iter().any(|(f, _)| *f == found) {
                    let mut path = modpath.clone();
                    path.extend(inline.iter().cloned());
                    path.push(name.clone());
                    out.push((found, path));
                }
            }
        }
    }
    out
}

/// The roles of the files of the packages `members` (a group path dependencies join, whose
/// files `files` holds), and of the files `files` holds.
fn link(
    _root: &Path,
    files: &HashMap<String, RsFile>,
    packages: &Packages,
    members: &[usize],
) -> RustIndex {
    let packages = &packages.0;
    let in_group: Vec<bool> = (0..packages.len()).map(|i| members.contains(&i)).collect();
    // The files of each package's library.
    let lib_files: Vec<Vec<String>> = packages
        .iter()
        .zip(&in_group)
        .map(|(p, &ours)| match &p.lib_root {
            Some(r) if ours => module_tree(r, files),
            _ => Vec::new(),
        })
        .collect();
    let lib_modules: Vec<Option<ModuleList>> = packages
        .iter()
        .zip(&in_group)
        .map(|(p, &ours)| {
            p.lib_root
                .as_ref()
                .filter(|_| ours)
                .map(|r| module_paths(r, files))
        })
        .collect();
    let items_of = |f: &str| files.get(f).map(|r| &r.items);
    let libraries: Vec<Option<super::items::Library>> = packages
        .iter()
        .zip(&lib_modules)
        .map(|(p, modules)| {
            modules.as_ref().map(|modules| super::items::Library {
                name: &p.lib_name,
                modules,
                items: &items_of,
            })
        })
        .collect();
    let lib_index: Vec<Option<super::items::LibraryIndex>> = libraries
        .iter()
        .map(|l| l.as_ref().map(super::items::LibraryIndex::new))
        .collect();
    let names_of = |tree: &[String]| -> HashSet<&str> {
        tree.iter()
            .filter_map(|f| files.get(f))
            .flat_map(|f| f.names.iter().map(String::as_str))
            .collect()
    };
    // How each package's library reaches CUDA, through what its files name (memoised; a
    // cycle of path dependencies reaches nothing more).
    let mut lib_cuda: Vec<Option<Reached>> = vec![None; packages.len()];
    #[allow(clippy::too_many_arguments)]
    fn reach(
        i: usize,
        units: &[&dyn Unit],
        packages: &[Package],
        lib_files: &[Vec<String>],
        files: &HashMap<String, RsFile>,
        lib_index: &[Option<super::items::LibraryIndex>],
        memo: &mut Vec<Option<Reached>>,
        stack: &mut Vec<usize>,
    ) -> Reached {
        let named: HashSet<&str> = units
            .iter()
            .flat_map(|u| u.names().iter().map(String::as_str))
            .collect();
        // A CUDA crate the library code named only in types (a field's, a signature's: its
        // bindgen structs, a bounding box) builds no session or device of it.
        let valued = |local: &str| units.iter().any(|u| u.cuda() || u.values().contains(local));
        for (local, dep) in &packages[i].deps {
            if !named.contains(local.as_str()) {
                continue;
            }
            match dep {
                // tch and the like: only where the code chooses a CUDA device.
                Dep::Cuda(why, torch, gate, follows) if valued(local) => {
                    let chooses = |apis: &[&str]| {
                        units
                            .iter()
                            .any(|u| u.cuda() || apis.iter().any(|a| u.segments().contains(*a)))
                    };
                    // Library code a program runs that only computes on the device it is
                    // handed (candle's layers and models) has not chosen one.
                    let handed = *follows && units.iter().all(|u| u.library());
                    let counts = match gate {
                        _ if handed => units.iter().any(|u| u.cuda()),
                        Some(apis) => chooses(apis),
                        // A crate with no device of its own (candle-nn's ops, candle-transformers'
                        // models) computes on the tensors it is handed, in a program too: only
                        // a device chosen by this code makes it CUDA (a device a library
                        // chooses is that library's reach).
                        None if *follows => units.iter().any(|u| u.cuda()),
                        // A crate the table does not know, CUDA only by a feature (an FFI
                        // `-sys` crate): reading its parameter structs or constants starts
                        // nothing; any other call into it may (a backend, a model).
                        None if unmodelled(&packages[i], local) => {
                            let (paths, _) = entries_into(units, local);
                            let value = |p: &[String]| {
                                let full = [&[local.clone()][..], p].concat();
                                !ffi_data(p) && !units.iter().any(|u| u.only_a_type(&full))
                            };
                            paths.is_empty() || paths.iter().any(|(p, _)| value(p))
                        }
                        None => true,
                    };
                    if counts {
                        return Some((why.clone(), *torch, false));
                    }
                }
                Dep::Tree(j, cuda_feature) if !stack.contains(j) => {
                    // Only the crate's code these units' paths and calls reach; all of it when
                    // that is too large to follow item by item.
                    let used = lib_index[*j]
                        .as_ref()
                        .map(|index| {
                            let (entry, methods) = entries_into(units, local);
                            index.reach(&entry, &methods)
                        })
                        .filter(|used| !used.incomplete);
                    let followed = used.is_some();
                    let found = match (used, &memo[*j]) {
                        (Some(used), _) => {
                            stack.push(*j);
                            let r = reach(
                                *j,
                                &[&used],
                                packages,
                                lib_files,
                                files,
                                lib_index,
                                memo,
                                stack,
                            );
                            stack.pop();
                            r
                        }
                        (None, Some(known)) => known.clone(),
                        (None, None) => {
                            stack.push(*j);
                            let units = units_of(&lib_files[*j], files);
                            let r = reach(
                                *j, &units, packages, lib_files, files, lib_index, memo, stack,
                            );
                            stack.pop();
                            memo[*j] = Some(r.clone());
                            r
                        }
                    };
                    if let Some((why, torch, _)) = found {
                        return Some((
                            format!("`{local}` (a crate of this tree) → {why}"),
                            torch,
                            true,
                        ));
                    }
                    // Its CUDA is its build's (bindings compiled with CUDA by a build script),
                    // unless its CUDA features only turn on its dependencies' and the code
                    // these units run of it was followed item by item, reaching none.
                    if let Some(feature) = cuda_feature
                        .as_ref()
                        .filter(|_| !(followed && packages[*j].cuda_forwards))
                    {
                        return Some((
                            format!("`{local}` (a crate of this tree) with {feature}"),
                            false,
                            true,
                        ));
                    }
                }
                _ => {}
            }
        }
        None
    }
    for &i in members {
        if lib_cuda[i].is_none() {
            let r = reach(
                i,
                &units_of(&lib_files[i], files),
                packages,
                &lib_files,
                files,
                &lib_index,
                &mut lib_cuda,
                &mut vec![i],
            );
            lib_cuda[i] = Some(r);
        }
    }
    // The packages as each package's programs are built: a registry crate's features are the
    // union of those every package of that build turns on (cargo unifies them), `None` where
    // that changes nothing.
    let views: Vec<Option<Vec<Package>>> = (0..packages.len())
        .map(|i| {
            if in_group[i] {
                unified(packages, i)
            } else {
                None
            }
        })
        .collect();
    // What a program's code reaches from package `i` (the libraries' reach known so far, not
    // changed by it; computed afresh in a build whose features differ).
    let program_reach = |i: usize, units: &[&dyn Unit]| match &views[i] {
        Some(view) => reach(
            i,
            units,
            view,
            &lib_files,
            files,
            &lib_index,
            &mut vec![None; packages.len()],
            &mut vec![i],
        ),
        None => reach(
            i,
            units,
            packages,
            &lib_files,
            files,
            &lib_index,
            &mut lib_cuda.clone(),
            &mut vec![i],
        ),
    };
    // All of package `i`'s library, as its programs are built.
    let whole_library = |i: usize| match &views[i] {
        Some(_) => program_reach(i, &units_of(&lib_files[i], files)),
        None => lib_cuda[i].clone().flatten(),
    };
    // Only the code of package `i`'s library that these units' paths and method calls reach;
    // all of it when that is too large to follow.
    let library_reach = |i: usize, units: &[&dyn Unit]| match &lib_index[i] {
        Some(index) => {
            let (entry, methods) = entries_into(units, &packages[i].lib_name);
            let used = index.reach(&entry, &methods);
            if used.incomplete {
                whole_library(i)
            } else {
                program_reach(i, &[&used])
            }
        }
        None => whole_library(i),
    };
    let mut roles: HashMap<String, FileRole> = HashMap::default();
    // Each binary: its own module tree, plus its package's library when it names it.
    let mut programs_of_package: Vec<Vec<(String, bool)>> = vec![Vec::new(); packages.len()];
    let mut program_files: Vec<(String, Vec<String>, bool)> = Vec::new();
    let mut several: HashMap<String, Vec<String>> = HashMap::default();
    let mut before_main: HashMap<String, Vec<String>> = HashMap::default();
    let mut package_files: Vec<Vec<String>> = lib_files.clone();
    for (i, p) in packages.iter().enumerate().filter(|(i, _)| in_group[*i]) {
        for (bin, test) in &p.binaries {
            let tree = module_tree(bin, files);
            package_files[i].extend(tree.iter().cloned());
            let named = names_of(&tree);
            // A test binary with CPU tests and others: the others are what may run on a GPU
            // (a test that builds a default config next to one that binds `Device::Cpu`).
            let split = files
                .get(bin)
                .filter(|f| *test && !f.cpu_tests.is_empty() && f.tests > f.cpu_tests.len())
                .map(|f| TestsOf {
                    file: f,
                    items: f.items.without(&f.cpu_tests),
                });
            let mut units = units_of(&tree, files);
            if let Some(split) = &split {
                units[0] = split;
            }
            let mut cuda = program_reach(i, &units);
            let mut library_chooses = cuda.as_ref().is_some_and(|(_, _, via)| *via);
            if named.contains(p.lib_name.as_str()) {
                let lib_reach = library_reach(i, &units);
                library_chooses |= lib_reach.is_some();
                if cuda.is_none() {
                    cuda = lib_reach.map(|(why, torch, _)| {
                        (
                            format!("its package's library `{}` → {why}", p.lib_name),
                            torch,
                            true,
                        )
                    });
                }
                // A package whose own feature builds it with CUDA (no CUDA crate in its Rust
                // code: bindings its build script compiles), used by a program that asks for
                // its CUDA device (`Device::CUDA`); one left on the library's default is not.
                if let (None, Some(feature)) = (&cuda, &p.cuda_feature) {
                    let asks = tree
                        .iter()
                        .filter_map(|f| files.get(f))
                        .any(|f| f.segments.iter().any(|s| s.eq_ignore_ascii_case("cuda")));
                    if asks {
                        cuda = Some((
                            format!(
                                "its package's library `{}` with its own `{feature}` feature (its build compiles CUDA), and its code names `CUDA`",
                                p.lib_name
                            ),
                            false,
                            true,
                        ));
                    }
                }
            }
            let own = tree.iter().filter_map(|f| files.get(f));
            let (mut any_cuda, mut any_cpu, mut cpu_binding) = (false, false, false);
            let mut own_ctor = false;
            let mut other_device = false;
            for f in own {
                any_cuda |= f.cuda;
                own_ctor |= f.cuda_ctor;
                other_device |= f.other_device;
                // A test binary judged test by test: the CPU tests' devices are theirs, and the
                // others (a default config the library puts on CUDA) are judged without them.
                let (cpu, binding) = match &split {
                    Some(s) if std::ptr::eq(s.file, f) => {
                        (f.cpu_binding_other, f.cpu_binding_other)
                    }
                    _ => (f.cpu, f.cpu_binding),
                };
                any_cpu |= cpu;
                cpu_binding |= binding;
            }
            // Chooses only CPU devices: a CPU program whatever it links; or names only CUDA
            // crates that are built without CUDA.
            let built = views[i].as_ref().map_or(p, |view| &view[i]);
            let off = built.deps.iter().find_map(|(local, d)| match d {
                Dep::CudaOff(name) if named.contains(local.as_str()) => Some(name.clone()),
                _ => None,
            });
            // A device a library of the tree chooses (`select_device()`, `DeviceSetup::new`) is
            // not undone by the program's own `Device::Cpu` in a copy-back or a result tensor;
            // a CPU device the program binds itself (`let dev: Cpu = …`) is its choice.
            // A device the program binds from a library call (`let device =
            // candle_examples::device(cpu)?`) next to a `Device::Cpu` of one branch: the CPU
            // is one alternative, not its choice.
            let library_device = library_chooses
                && tree
                    .iter()
                    .filter_map(|f| files.get(f))
                    .any(|f| f.device_call_binding);
            let cpu =
                if any_cpu && !any_cuda && (!library_chooses || (cpu_binding && !library_device)) {
                    Some(
                        if other_device {
                            "its code chooses only devices CUDA does not run: the CPU or Metal"
                        } else {
                            "its code chooses only CPU devices"
                        }
                        .to_string(),
                    )
                } else if cuda.is_none() {
                    off.map(|name| format!("`{name}` is built without its CUDA feature"))
                } else {
                    None
                };
            // Its fix sets the mask in its main: a sync main (or an async one the fix makes
            // sync) that runs first on the first thread, and that may call `set_var` (in
            // edition 2024, only where unsafe code is allowed).
            let masks = !test
                && files.get(bin).is_some_and(|f| {
                    let forbidden =
                        p.edition >= 2024 && (p.lints_forbid_unsafe || f.forbids_unsafe);
                    f.has_main && !f.async_main && !f.foreign_main && !forbidden
                });
            let torch = cuda.as_ref().is_some_and(|(_, t, _)| *t);
            let cuda = cuda.map(|(why, _, _)| why);
            if cuda.is_some() && cpu.is_none() {
                // The libraries it runs: its package's (when it names it) and every crate of
                // the tree its package depends on.
                if named.contains(p.lib_name.as_str()) {
                    programs_of_package[i].push((bin.clone(), masks));
                }
                for &k in members {
                    if k != i && depends_on(p, k, packages, &mut Vec::new()) {
                        programs_of_package[k].push((bin.clone(), masks));
                    }
                }
                // What its own files (`skip`: its root's own findings say it) and the
                // libraries it runs hold of `list`, each with the file saying it.
                let libraries = || {
                    members.iter().filter(|&&k| {
                        if k == i {
                            named.contains(p.lib_name.as_str())
                        } else {
                            depends_on(p, k, packages, &mut Vec::new())
                        }
                    })
                };
                let gather = |skip: usize, list: fn(&RsFile) -> &Vec<String>| -> Vec<String> {
                    tree.iter()
                        .skip(skip)
                        .chain(libraries().flat_map(|&k| lib_files[k].iter()))
                        .filter_map(|rel| Some((rel, files.get(rel)?)))
                        .flat_map(|(rel, f)| {
                            list(f).iter().map(move |what| format!("{what} in `{rel}`"))
                        })
                        .collect()
                };
                // Options that select several cards, declared in its other modules or in the
                // libraries it runs (a `#[command(flatten)]` struct of another file).
                let found = gather(1, |f| &f.multi_gpu_options);
                if !found.is_empty() {
                    several.insert(bin.clone(), found);
                }
                // Code the loader runs before its `main`, its own file's too.
                let early = gather(0, |f| &f.before_main);
                if !early.is_empty() {
                    before_main.insert(bin.clone(), early);
                }
                program_files.push((bin.clone(), tree.clone(), masks));
            }
            let own_cuda = cuda.is_none() && cpu.is_none() && own_ctor;
            roles.insert(
                bin.clone(),
                FileRole::Program {
                    cuda,
                    cpu,
                    torch,
                    test: *test,
                    unit_tests: None,
                    own_cuda,
                },
            );
        }
    }
    // A CUDA crate's own tests and examples (cudarc's, ort's): the crate's own row decides,
    // where they choose a device (`CudaContext::new(0)`, `CudaDevice::new(0)`) or name an
    // entry point of the row that asks for CUDA (ort's CUDA provider) — not every call into
    // its own `-sys` crate, which the row's gate stands for (building an ONNX tensor on the
    // CPU reaches `ort-sys` with its `cuda` feature and no card).
    // `reached`: the code they run chooses a device; `own`: their own code does, or names an
    // entry point that asks for CUDA (`paths`). A row with such entry points (tch, candle,
    // ort: CUDA only where the code asks) is asked of their own code, as the crate's reach
    // through method names runs far (`Storage::device()` rewraps the device a tensor is on);
    // one without (cust's `quick_init()`) of what they run.
    let own_row = |i: usize, reached: bool, own: bool, paths: &dyn Fn(&str) -> bool| {
        let p = &packages[i];
        // A wrapper over libtorch (rust-bert), not libtorch's binding itself (tch, whose
        // reach through method names runs through all of libtorch).
        let wrapper = rust::cuda_crate(&p.lib_name)?.cuda == Cuda::Always;
        let why = p.deps.iter().find_map(|(local, d)| match d {
            Dep::Cuda(why, torch, gate, _) if *local == p.lib_name => {
                let counts = match gate {
                    // Through libtorch, CUDA is only where code selects it: a selection the
                    // tests reach in the crate's own source (rust-bert's configs default to
                    // `Device::cuda_if_available()`) is one, not a call into a `-sys` crate.
                    Some(apis) => {
                        own || apis.iter().any(|a| paths(a)) || (*torch && wrapper && reached)
                    }
                    None => reached || own,
                };
                counts.then(|| why.clone())
            }
            _ => None,
        });
        Some(why)
    };
    // The library's unit tests (`cargo test --lib`): a program whose `main` libtest writes and
    // whose code is the `#[test]` functions and what they reach of the crate, judged file by
    // file (each file whose tests reach CUDA is told so, not the whole crate).
    let mut unit_tests: Vec<(String, String)> = Vec::new();
    for (i, p) in packages.iter().enumerate().filter(|(i, _)| in_group[*i]) {
        let (Some(index), Some(modules)) = (&lib_index[i], &lib_modules[i]) else {
            continue;
        };
        for (file, modpath) in modules {
            let Some(f) = files.get(file) else { continue };
            let gpu_test = |it: &&super::items::Item| gpu_test(f, it);
            let Some(used) = tests_reach_in(index, f, modpath) else {
                continue;
            };
            // A CUDA crate's own tests.
            let tests = || f.items.items.iter().filter(gpu_test);
            let own = tests().any(|it| it.cuda);
            // A path to a CPU or Metal device (`Device::Cpu`, `Device::new_metal`) names the
            // row's `Device` and asks for no CUDA card.
            let names = |api: &str| {
                tests().any(|it| {
                    it.paths
                        .iter()
                        .filter(|p| !p.rsplit("::").next().is_some_and(non_cuda_device))
                        .any(|p| p.split("::").any(|s| s == api))
                })
            };
            if let Some(why) = own_row(i, used.cuda, own, &names) {
                if let Some(why) = why {
                    unit_tests.push((file.clone(), why));
                }
                continue;
            }
            let why = program_reach(i, &[&used])
                .map(|(why, _, _)| why)
                .or_else(|| own_feature(p, &used));
            if let Some(why) = why {
                unit_tests.push((file.clone(), why));
            }
        }
    }
    // A binary's own unit tests (`cargo test --bin`): the same, through the binary's module
    // tree and, where they name it, its package's library. Its `main` is not theirs: the env
    // the fix writes there does not reach them.
    for (i, p) in packages.iter().enumerate().filter(|(i, _)| in_group[*i]) {
        for bin in &p.tested_bins {
            let modules = module_paths(bin, files);
            let has_tests = modules
                .iter()
                .filter_map(|(f, _)| files.get(f))
                .any(|f| f.items.items.iter().any(|it| it.test));
            if !has_tests {
                continue;
            }
            let own_items = |f: &str| files.get(f).map(|r| &r.items);
            let own = super::items::Library {
                name: "crate",
                modules: &modules,
                items: &own_items,
            };
            let index = super::items::LibraryIndex::new(&own);
            for (file, modpath) in &modules {
                let Some(f) = files.get(file) else { continue };
                let Some(used) = tests_reach_in(&index, f, modpath) else {
                    continue;
                };
                let lib = || {
                    used.names.contains(&p.lib_name).then_some(())?;
                    library_reach(i, &[&used]).map(|(why, _, _)| {
                        format!("its package's library `{}` → {why}", p.lib_name)
                    })
                };
                let why = program_reach(i, &[&used])
                    .map(|(why, _, _)| why)
                    .or_else(lib)
                    .or_else(|| own_feature(p, &used));
                if let Some(why) = why {
                    unit_tests.push((file.clone(), why));
                }
            }
        }
    }
    // Its doc examples (`cargo test --doc`): each a program of the package that links the
    // library, judged like a binary of it.
    let mut doc_tests: Vec<(String, (u32, usize, String))> = Vec::new();
    for (i, p) in packages.iter().enumerate().filter(|(i, _)| in_group[*i]) {
        for file in &lib_files[i] {
            let Some(f) = files.get(file) else { continue };
            let mut found: Option<(u32, usize, String)> = None;
            for (line, ex) in &f.doc_examples {
                // An example that chooses a CPU device and no CUDA one is a CPU program (docs
                // show the CPU: `let dev: Cpu = Default::default()`, `type Dev = Cpu;`).
                if (ex.cpu || ex.cpu_binding) && !ex.cuda {
                    continue;
                }
                // What the example runs of the library (`quick_init()` opens device 0).
                let names_lib = ex.names.contains(&p.lib_name);
                let used = lib_index[i]
                    .as_ref()
                    .filter(|_| names_lib)
                    .map(|index| {
                        let (entry, methods) = entries_into(&[ex as &dyn Unit], &p.lib_name);
                        index.reach(&entry, &methods)
                    })
                    .filter(|used| !used.incomplete);
                let lib_chooses = used.as_ref().is_some_and(|u| u.cuda);
                let why = match own_row(i, lib_chooses, ex.cuda, &|api| ex.segments.contains(api)) {
                    Some(why) => why.filter(|_| names_lib),
                    None => program_reach(i, &[ex]).map(|(why, _, _)| why).or_else(|| {
                        let used = used.as_ref()?;
                        program_reach(i, &[used])
                            .map(|(why, _, _)| format!("`{}` → {why}", p.lib_name))
                            .or_else(|| {
                                p.cuda_feature
                                    .as_ref()
                                    .filter(|_| used.cuda)
                                    .map(|feature| {
                                        format!("`{}` with its own `{feature}` feature", p.lib_name)
                                    })
                            })
                    }),
                };
                if let Some(why) = why {
                    match &mut found {
                        Some((_, count, _)) => *count += 1,
                        None => found = Some((*line, 1, why)),
                    }
                }
            }
            if let Some(found) = found {
                doc_tests.push((file.clone(), found));
            }
        }
    }
    // Library files: the GPU programs of the tree that link the library.
    let made_sync = |bin: &str| files.get(bin).is_some_and(|f| f.made_sync);
    for (i, tree) in lib_files.iter().enumerate() {
        let mut programs = programs_of_package[i].clone();
        programs.sort();
        programs.dedup();
        let made_sync = programs.iter().any(|(p, _)| made_sync(p));
        for f in tree {
            roles.entry(f.clone()).or_insert(FileRole::Module {
                programs: programs.clone(),
                made_sync,
                unit_tests: None,
                doc_tests: None,
            });
        }
    }
    // Modules of a binary: that binary.
    for (bin, tree, masks) in program_files {
        for f in tree.iter().skip(1) {
            roles.entry(f.clone()).or_insert(FileRole::Module {
                programs: vec![(bin.clone(), masks)],
                made_sync: made_sync(&bin),
                unit_tests: None,
                doc_tests: None,
            });
        }
    }
    for (file, why) in unit_tests {
        // A module of a binary its tests alone reach CUDA from (a CPU program) is theirs.
        let role = roles.entry(file).or_insert(FileRole::Module {
            programs: Vec::new(),
            made_sync: false,
            unit_tests: None,
            doc_tests: None,
        });
        match role {
            FileRole::Module { unit_tests, .. } | FileRole::Program { unit_tests, .. } => {
                *unit_tests = Some(why);
            }
        }
    }
    for (file, found) in doc_tests {
        if let Some(FileRole::Module { doc_tests, .. }) = roles.get_mut(&file) {
            *doc_tests = Some(found);
        }
    }
    let Callable {
        fns: callable,
        fields: index_fields,
        consts: index_consts,
        mut carriers,
    } = callable(files, packages, &lib_files, &package_files, &in_group);
    // A file declaring an option that selects several cards is read for its GH513 even
    // without a GPU word (an options struct the program flattens from another module).
    carriers.extend(
        files
            .iter()
            .filter(|(_, f)| !f.multi_gpu_options.is_empty())
            .map(|(rel, _)| rel.clone()),
    );
    let mut hosted: Vec<(String, String)> = files
        .iter()
        .flat_map(|(rel, f)| {
            let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
            f.embeds
                .iter()
                .filter(|e| e.ends_with(".py"))
                .map(move |e| (normalize(&join(dir, e)), rel.clone()))
        })
        .collect();
    hosted.sort();
    hosted.dedup_by(|a, b| a.0 == b.0);
    let chooses_cuda = files
        .iter()
        .filter(|(_, f)| f.cuda)
        .map(|(rel, _)| rel.clone())
        .collect();
    RustIndex {
        files: roles,
        several,
        before_main,
        callable,
        index_fields,
        index_consts,
        carriers,
        hosted,
        chooses_cuda,
    }
}

/// For each file of a package: the index functions of its package and of the libraries of
/// the tree crates it depends on; for each file of a package or of a library it uses: the
/// struct fields and the `const`/`static` items that package hands to an index.
struct Callable {
    fns: HashMap<String, Arc<Vec<IndexFn>>>,
    fields: HashMap<String, Arc<Vec<(String, String)>>>,
    consts: HashMap<String, Arc<Vec<(String, String)>>>,
    /// Files that declare one of those fields or items.
    carriers: HashSet<String>,
}

/// Adds `found` to what each file of `tree` holds (a library's file gets what every package
/// using it hands on), once per name.
fn hand_to(
    out: &mut HashMap<String, Vec<(String, String)>>,
    tree: &[&String],
    found: &[(String, String)],
) {
    for f in tree {
        let held = out.entry((*f).clone()).or_default();
        for (name, what) in found {
            if !held.iter().any(|(n, _)| n == name) {
                held.push((name.clone(), what.clone()));
            }
        }
    }
}

fn callable(
    files: &HashMap<String, RsFile>,
    packages: &[Package],
    lib_files: &[Vec<String>],
    package_files: &[Vec<String>],
    in_group: &[bool],
) -> Callable {
    let mut out = HashMap::default();
    let mut fields_out: HashMap<String, Vec<(String, String)>> = HashMap::default();
    let mut consts_out: HashMap<String, Vec<(String, String)>> = HashMap::default();
    // The names a call path into the tree starts with: its crates and its modules.
    let roots: Vec<String> = packages
        .iter()
        .map(|p| p.lib_name.clone())
        .chain(
            files
                .values()
                .flat_map(|f| f.mods.iter().map(|(m, _, _)| m.clone())),
        )
        .collect::<HashSet<String>>()
        .into_iter()
        .collect();
    for (i, p) in packages.iter().enumerate().filter(|(i, _)| in_group[*i]) {
        let mut tree: Vec<&String> = package_files[i].iter().collect();
        // Path dependencies never leave the group.
        for (j, lib) in lib_files.iter().enumerate().filter(|(j, _)| in_group[*j]) {
            if j != i && depends_on(p, j, packages, &mut Vec::new()) {
                tree.extend(lib);
            }
        }
        let read = || tree.iter().filter_map(|f| files.get(*f));
        let mut fns: Vec<IndexFn> = read()
            .flat_map(|f| f.index_fns.iter().cloned())
            .map(|mut f| {
                f.roots = roots.clone();
                f
            })
            .collect();
        let forwards: Vec<super::index_fns::Forward> =
            read().flat_map(|f| f.forwards.iter().cloned()).collect();
        super::index_fns::close(&mut fns, &forwards);
        // Fields handed to an index anywhere in the package or the crates it uses (the
        // options struct of a CLI crate read by its engine crate, or the other way round).
        let field_args: Vec<super::index_fns::FieldArg> =
            read().flat_map(|f| f.field_args.iter().cloned()).collect();
        let fields = super::index_fns::index_fields(&field_args, &fns);
        if !fields.is_empty() {
            hand_to(&mut fields_out, &tree, &fields);
        }
        // `const`/`static` items of another module or crate handed to an index.
        let const_args: Vec<super::index_fns::FieldArg> =
            read().flat_map(|f| f.const_args.iter().cloned()).collect();
        let consts = super::index_fns::index_fields(&const_args, &fns);
        if !consts.is_empty() {
            hand_to(&mut consts_out, &tree, &consts);
        }
        if fns.is_empty() {
            continue;
        }
        let ambiguous: Vec<String> = fns
            .iter()
            .filter(|f| {
                fns.iter()
                    .any(|g| g.path == f.path && g.position != f.position)
            })
            .map(|f| f.path.clone())
            .collect();
        fns.retain(|f| !ambiguous.contains(&f.path));
        fns.sort_by(|a, b| a.path.cmp(&b.path));
        fns.dedup_by(|a, b| a.path == b.path);
        let fns = Arc::new(fns);
        for f in &package_files[i] {
            out.insert(f.clone(), fns.clone());
        }
    }
    let declares = |rel: &String,
                    held: &HashMap<String, Vec<(String, String)>>,
                    names: &dyn Fn(&RsFile) -> &Vec<String>| {
        let file = files.get(rel);
        held.get(rel).is_some_and(|h| {
            file.is_some_and(|f| names(f).iter().any(|n| h.iter().any(|(m, _)| m == n)))
        })
    };
    let carriers = files
        .keys()
        .filter(|rel| {
            declares(rel, &fields_out, &|f| &f.option_fields)
                || declares(rel, &consts_out, &|f| &f.consts)
        })
        .cloned()
        .collect();
    let arc = |m: HashMap<String, Vec<(String, String)>>| {
        m.into_iter().map(|(k, v)| (k, Arc::new(v))).collect()
    };
    Callable {
        fns: out,
        fields: arc(fields_out),
        consts: arc(consts_out),
        carriers,
    }
}

/// A library's files with their module paths.
type ModuleList = Vec<(String, Vec<String>)>;

/// The files of `tree` the index read, as units of code.
fn units_of<'f>(tree: &[String], files: &'f HashMap<String, RsFile>) -> Vec<&'f dyn Unit> {
    tree.iter()
        .filter_map(|f| files.get(f))
        .map(|f| f as &dyn Unit)
        .collect()
}

/// How a library or a program reaches CUDA (why), whether through libtorch, and whether
/// through a library of the tree (which then chooses the device); `None`: it does not.
type Reached = Option<(String, bool, bool)>;

/// The packages as package `i`'s programs are built, when that differs from each package's own
/// word: cargo builds one copy of each crate per build, with the union of the features every
/// package of the build (`i` and its path dependencies, transitively) turns on for it, so a
/// `candle-core/cuda` turned on by the example's package makes the library's
/// `cuda_if_available()` choose CUDA too. Not modelled: the features a registry crate turns on
/// for another, and a build of several packages at once (`cargo build --workspace` unifies
/// the members too; `cargo run -p x` does not).
fn unified(packages: &[Package], i: usize) -> Option<Vec<Package>> {
    let mut closure = vec![i];
    let mut k = 0;
    while k < closure.len() {
        for d in &packages[closure[k]].raw {
            if let Some(j) = d.tree {
                if !closure.contains(&j) {
                    closure.push(j);
                }
            }
        }
        k += 1;
    }
    if closure.len() < 2 {
        return None;
    }
    // Every feature of each crate, with the packages that turn it on.
    let mut union: HashMap<&str, Vec<(&str, usize)>> = HashMap::default();
    for &c in &closure {
        for d in &packages[c].raw {
            let all = union.entry(d.package.as_str()).or_default();
            for f in &d.on {
                if !all.iter().any(|(g, _)| g == f) {
                    all.push((f.as_str(), c));
                }
            }
            // What its own features turn on in other registry crates of the build, whether
            // or not this package names them (`candle-nn/cuda` → `candle-core/cuda`).
            let rows = rust::by_package(&d.package).filter(|_| d.tree.is_none());
            for (feature, enables) in rows.map_or(&[][..], |r| r.features_enable) {
                if !d.on.iter().any(|f| f == feature) {
                    continue;
                }
                for (package, feat) in enables.iter().filter_map(|t| t.split_once('/')) {
                    let all = union.entry(package).or_default();
                    if !all.iter().any(|(g, _)| *g == feat) {
                        all.push((feat, c));
                    }
                }
            }
        }
    }
    // A crate that reaches CUDA when another's feature is on in the build (`cuda_with`): on
    // when any package of the build turns that feature on.
    for &c in &closure {
        for d in packages[c].raw.iter().filter(|d| d.tree.is_none()) {
            let Some(row) = rust::by_package(&d.package) else {
                continue;
            };
            let by = rust::cuda_with(row).into_iter().find_map(|target| {
                let (package, feat) = target.split_once('/')?;
                union
                    .get(package)?
                    .iter()
                    .find(|(f, _)| *f == feat)
                    .map(|(_, p)| *p)
            });
            if let Some(p) = by {
                let all = union.entry(d.package.as_str()).or_default();
                if !all.iter().any(|(g, _)| *g == "cuda") {
                    all.push(("cuda", p));
                }
            }
        }
    }
    let reaches = |d: &Dep| match d {
        Dep::Cuda(..) => true,
        Dep::Tree(_, feature) => feature.is_some(),
        _ => false,
    };
    let mut view: Option<Vec<Package>> = None;
    for &c in &closure {
        for (n, d) in packages[c].raw.iter().enumerate() {
            let extra: Vec<&(&str, usize)> = union
                .get(d.package.as_str())
                .into_iter()
                .flatten()
                .filter(|(f, _)| !d.on.iter().any(|g| g == f))
                .collect();
            if extra.is_empty() || reaches(&packages[c].deps[n].1) {
                continue;
            }
            let on: Vec<String> =
                d.on.iter()
                    .cloned()
                    .chain(extra.iter().map(|(f, _)| f.to_string()))
                    .collect();
            let mut by: Vec<&str> = extra
                .iter()
                .map(|(_, p)| packages[*p].lib_name.as_str())
                .collect();
            by.dedup();
            let resolved = resolve(d, &on, Some(&by.join("`, `")));
            if reaches(&resolved) {
                view.get_or_insert_with(|| packages.to_vec())[c].deps[n].1 = resolved;
            }
        }
    }
    view
}

/// Whether package `q` depends on package `target`, directly or through crates of the tree.
fn depends_on(q: &Package, target: usize, packages: &[Package], seen: &mut Vec<usize>) -> bool {
    q.deps.iter().any(|(_, d)| match d {
        Dep::Tree(j, _) if *j == target => true,
        Dep::Tree(j, _) if !seen.contains(j) => {
            seen.push(*j);
            depends_on(&packages[*j], target, packages, seen)
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One program per line of the table: naming the API makes it a GPU program, naming only
    /// the crate does not.
    #[test]
    fn each_entry_point_of_the_table_makes_a_gpu_program_and_the_crate_alone_does_not() {
        let lines = rust::CRATES
            .iter()
            .flat_map(|c| c.entry_points.iter().map(move |(api, _)| (c.name, *api)));
        for (krate, api) in lines {
            let dir = tempfile::tempdir().unwrap();
            let features = match krate {
                "tch" | "rust_bert" => "[]",
                "burn" => "[\"cuda\"]",
                _ => "[\"cuda\"]",
            };
            let manifest = format!(
                "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\n{} = {{ version = \"1\", features = {features} }}\n",
                krate.replace('_', "-")
            );
            std::fs::write(dir.path().join("Cargo.toml"), manifest).unwrap();
            std::fs::create_dir_all(dir.path().join("src/bin")).unwrap();
            let with =
                format!("use {krate}::Thing;\nfn main() {{\n    let _ = Thing::{api}();\n}}\n");
            let without =
                format!("use {krate}::Thing;\nfn main() {{\n    let _ = Thing::open();\n}}\n");
            std::fs::write(dir.path().join("src/main.rs"), with).unwrap();
            std::fs::write(dir.path().join("src/bin/plain.rs"), without).unwrap();
            let entries: Vec<Entry> = ["src/main.rs", "src/bin/plain.rs"]
                .iter()
                .map(|rel| Entry {
                    path: dir.path().join(rel),
                    rel: rel.to_string(),
                    rel_path: PathBuf::from(rel),
                    kind: EntryKind::Source(Language::Rust),
                })
                .collect();
            let index = RustIndex::build(dir.path(), &entries, 1 << 20, &crate::lang::NoFacts);
            let cuda = |rel: &str| match index.role(rel) {
                Some(FileRole::Program { cuda, .. }) => cuda.clone(),
                other => panic!("{krate}::{api} {rel}: {other:?}"),
            };
            assert!(cuda("src/main.rs").is_some(), "{krate}::{api}");
            assert_eq!(cuda("src/bin/plain.rs"), None, "{krate}::{api}");
        }
    }
}
