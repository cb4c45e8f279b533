//! The project index: a first, cheap pass over every Python file of the tree (no rules) that
//! says what each file is to a process. CUDA reads `CUDA_VISIBLE_DEVICES` once per process, so a
//! file is judged by the programs it belongs to: an entry point (a `__main__` guard, a
//! `__main__.py`, a console script, a test file, a script nobody imports) starts a process; a
//! library module runs in the processes of the entry points that import it.
//!
//! Invariant: the index only reads. A file it cannot read or parse is left out (the per-file
//! pass reports it), and a file the index knows nothing of is judged as an entry point.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::VecDeque;
use std::path::Path;

use rayon::prelude::*;
use ruff_python_ast::statement_visitor::{walk_stmt, StatementVisitor};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

use crate::fs::walk::{Entry, EntryKind};
use crate::lang::python::facts::IndexParam;
use crate::lang::{FactKind, FactStore};
use crate::model::outcome::Language;

mod as_main;
mod commands;
mod construction;
mod decorators;
mod distributed;
mod guards;
mod instances;
pub(crate) mod launch;
mod packaging;
mod registry;
use packaging::Projects;

/// Why a file starts a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryWhy {
    MainGuard,
    DunderMain,
    /// The target of a console or GUI script (its name).
    Script(String),
    /// A test file with no `conftest.py` above it. `suite`: the directory pytest runs it from
    /// (the nearest `tests`, `test` or `testing` above it, else its own; root-relative, `""`
    /// at the root), where a `conftest.py` would configure the session once.
    Test {
        suite: String,
    },
    /// The top-most `conftest.py` above test files: pytest imports it first, so the test
    /// session's process is configured there (the test files are its modules).
    TestSession,
    /// A script no module of the tree imports, outside any package.
    Standalone,
    /// A module no module of the tree imports that reads its command line at module level.
    CommandLine,
    /// A decorator that runs its function when the module is `__main__` (fastcore's
    /// `@call_parse`): the decorator's name and the function's.
    RunsAsMain {
        decorator: String,
        function: String,
    },
    /// A command in the tree starts it (`python x.py`, `torchrun x.py`, `python -m pkg.mod`).
    Launched(Box<Launched>),
}

/// A command of the tree that starts a program, where it is and what it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launched {
    /// The file holding the command (root-relative) and its 1-based line.
    pub file: String,
    pub line: usize,
    pub command: String,
    /// More than one card asked for: how many (`usize::MAX`: every visible card) and what asks.
    pub cards: Option<(usize, String)>,
    /// A process count the command gives but does not write (`--nproc_per_node=$GPUS`).
    pub unknown: Option<String>,
    /// The `CUDA_VISIBLE_DEVICES` the command gives the program.
    pub mask: Option<String>,
    /// Started by its module's name (`python -m pkg.mod`): Python imports its packages first.
    pub module: bool,
}

impl EntryWhy {
    pub fn describe(&self) -> String {
        match self {
            EntryWhy::MainGuard => "an `if __name__ == \"__main__\"` block".into(),
            EntryWhy::DunderMain => "a package's `__main__.py`".into(),
            EntryWhy::Script(name) => format!("the `{name}` script"),
            EntryWhy::Test { .. } => "a test file".into(),
            EntryWhy::TestSession => {
                "the conftest.py pytest imports first for the tests below it".into()
            }
            EntryWhy::Standalone => "a script no module imports".into(),
            EntryWhy::CommandLine => {
                "a module no module imports that reads its command line (`sys.argv`) as it runs"
                    .into()
            }
            EntryWhy::RunsAsMain {
                decorator,
                function,
            } => format!(
                "`@{decorator}` on `{function}`, which runs it when the module is `__main__`"
            ),
            EntryWhy::Launched(l) => {
                format!("the command `{}` ({}, line {})", l.command, l.file, l.line)
            }
        }
    }
}

/// What a file is to the processes that run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Starts a process; `gpu`: the process reaches GPU code (its own or an imported module's),
    /// `via` the chain of code that reaches it (entry → module → use), for the evidence.
    Program {
        why: EntryWhy,
        gpu: bool,
        via: String,
        /// Its process hides every card before it runs anything (`CUDA_VISIBLE_DEVICES = ""`,
        /// by the entry or a module it imports at its start): a CPU program, whatever GPU code
        /// it holds.
        hides: bool,
        /// Its process runs code of another module that needs more than one card by design:
        /// the chain to it, and what it needs.
        needs: Option<(String, crate::lang::python::Need)>,
        /// Its process runs code of another module that writes a GPU variable against the
        /// policy after the header set it (`os.environ["CUDA_VISIBLE_DEVICES"] = device` in a
        /// `select_device` helper): the chain to it, and what it writes.
        overrides: Option<(String, String)>,
        /// Python imports the packages above it first (`python -m pkg` runs `pkg/__init__.py`
        /// before `pkg/__main__.py`, a console script imports its module's packages), and the
        /// code they run at import starts CUDA: the package's `__init__.py` and the chain to
        /// that code. A header here comes too late.
        package_first: Option<(String, String)>,
    },
    /// Imported by other modules. `programs`: the entry points of the tree whose process runs
    /// it (up to a few named, and their count).
    Library {
        programs: std::sync::Arc<[String]>,
        count: usize,
    },
    /// Runs as a program and is also a library (imported, loaded by name, or a module of an
    /// installable package): a header here would set the env of every program that imports it.
    Both {
        why: EntryWhy,
        gpu: bool,
        /// Why it is a library: the importers with the line of each import (or how each loads
        /// it by name), else the packaging file and setting that ship it.
        library: String,
        /// The same, short, for a finding's one line: the first reason and how many more.
        library_short: String,
        /// The chain to GPU code its process runs at import, before its `__main__` block can
        /// set the env (`None`: none runs that early).
        gpu_before_main: Option<String>,
        /// As [`Role::Program`]'s: another module's write of a GPU variable its process runs.
        overrides: Option<(String, String)>,
    },
}

/// Whether a program's process reaches GPU code, and through what (`a.py` → `b.py` (`load`)).
fn reach_words(gpu: bool, via: &str) -> String {
    match (gpu, via) {
        (false, _) => "its process reaches no GPU code".into(),
        (true, "") => "its process reaches GPU code".into(),
        (true, via) => format!("its process reaches GPU code: {via}"),
    }
}

/// Names as the outputs list them: `` `a`, `b` and 3 more `` when `count` exceeds the names kept.
pub fn listed(names: &[String], count: usize) -> String {
    let mut shown = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if count > names.len() {
        shown.push_str(&format!(" and {} more", count - names.len()));
    }
    shown
}

impl Role {
    /// Why the file is what it is, for the outputs (`evidence` in JSON).
    pub fn evidence(&self) -> String {
        match self {
            Role::Program { why, hides: true, .. } => format!(
                "program: {}; its process hides every card at its start (CUDA_VISIBLE_DEVICES=\"\")",
                why.describe()
            ),
            Role::Program { why, gpu, via, .. } => {
                format!("program: {}; {}", why.describe(), reach_words(*gpu, via))
            }
            Role::Library { programs, count: 0 } if !programs.is_empty() => {
                format!("library: embedded by the Rust program of `{}`", programs[0])
            }
            Role::Library { count: 0, .. } => {
                "library: no program of this tree imports or loads it".into()
            }
            Role::Library { programs, count } => format!(
                "library: runs in the process of {} (imported, or loaded by name)",
                listed(programs, *count)
            ),
            Role::Both { why, .. } => format!(
                "program and library: {}, and {}",
                why.describe(),
                self.library_why()
            ),
        }
    }
}

impl Role {
    /// Why a program is also a library: who imports it and where, or loads it and how, else
    /// the packaging that ships it.
    pub fn library_why(&self) -> String {
        match self {
            Role::Both { library, .. } => library.clone(),
            _ => String::new(),
        }
    }

    /// [`Self::library_why`] for a finding's line: the first reason and how many more (the
    /// evidence lists them).
    pub fn library_why_short(&self) -> String {
        match self {
            Role::Both { library_short, .. } => library_short.clone(),
            _ => String::new(),
        }
    }
}

/// One Python file, as the index sees it.
#[derive(Debug, Default)]
struct PyFile {
    rel: String,
    /// Dotted module name (`pkg.sub.mod`; a package's `__init__.py` is `pkg.sub`).
    module: String,
    /// The directory its top-level package (or the script) sits in: its `sys.path` entry.
    source_root: String,
    in_package: bool,
    imports: Box<[LinkImport]>,
    typing_imports: Box<[LinkImport]>,
    main_guard: bool,
    /// A decorator that runs its function as the program (`@call_parse`), and that function.
    runs_as_main: Option<(String, String)>,
    /// Touches a GPU: selects or uses a CUDA device, writes a GPU env variable, or uses a
    /// framework that takes a GPU without being told (TensorFlow, JAX, CuPy, Whisper, …).
    gpu: bool,
    /// Module-level constants that hold a device (`DEVICE = "cuda:1"`, `GPU_ID = 1`).
    constants: Box<[(String, DeviceConst)]>,
    /// Parameters of its top-level functions and classes that choose a card.
    index_params: Box<[IndexParam]>,
    /// `importlib.import_module(f"pkg.models.{name}")`: a registry that loads every module
    /// under `pkg.models` (basicsr's pattern), by its prefix.
    dynamic_prefixes: Box<[String]>,
    /// For each of `dynamic_prefixes`: only a function of the file loads it (code at import
    /// never does unless it calls that function).
    dynamic_in_function: Box<[bool]>,
    /// For each of `dynamic_prefixes` a function loads: the top-level functions and classes
    /// whose code loads it (empty: not known), which load it when they run.
    dynamic_units: Box<[Vec<String>]>,
    /// For each of `dynamic_prefixes`: every load of it drops the module it returns
    /// (`importlib.import_module("pkg.optim." + name)` as a statement), so the module is
    /// loaded for what its code at import does (registering its classes), like an import.
    dynamic_effect: Box<[bool]>,
    /// Defines tests pytest collects (`def test_…`, `class Test…`): a `test_utils.py` helper
    /// shipped in a package does not.
    tests: bool,
    /// Assigns `_base_` at module level: a config (mmengine's) that a program loads by path.
    config_base: bool,
    /// Its module-level code does something when run (a call, a loop, a `with`, GPU code), or
    /// it defines no function or class: a file that only defines is no script.
    acts: bool,
    /// Its module-level code (outside functions, classes and the `__main__` block) reads the
    /// command line: `sys.argv`, or an argument parser's `parse_args()`.
    reads_command_line: bool,
    /// The module's code that runs when it is imported (outside its top-level functions and
    /// classes and its `__main__` block) does something on a GPU: a constant that names a
    /// device (`PROVIDERS = ["CUDAExecutionProvider"]`) is a unit of its own, GPU code where
    /// it is read.
    gpu_acts_at_import: bool,
    /// Its code at import asks the driver for its cards (`use_cuda =
    /// torch.cuda.is_available()`): no card used, but the driver has read the env by then.
    queries_at_import: bool,
    /// Its `__main__` block touches a GPU itself.
    main_gpu: bool,
    /// The code that runs at import needs more than one card by design.
    needs_at_import: Option<crate::lang::python::Need>,
    /// The GPU variables its code at import writes.
    sets_at_import: Box<[crate::lang::python::EnvSet]>,
    /// Hides every card (`CUDA_VISIBLE_DEVICES = ""`) whenever it is imported, or run as a
    /// program: a process that runs it uses no card.
    hides_at_import: bool,
    hides_in_main: bool,
    /// Its top-level functions and classes.
    units: Box<[LinkUnit]>,
    /// The names its import-time code reads.
    import_refs: Box<[Name]>,
    /// What its import-time code names without running it: what it binds to another name
    /// (`Model = DetectionModel`), which runs where that name is called; never while the
    /// module is imported.
    bound: Box<[Name]>,
    /// The functions and classes a decorator registers (`@app.route`, `@register("adam")`),
    /// which run where the registry is read ([`registry`]).
    registered: Box<[registry::Registered]>,
    /// The names its module-level assignments bind, and what makes each value.
    globals: Box<[registry::Global]>,
    /// The names its `__main__` block reads.
    main_refs: Box<[Name]>,
    /// The command lines its code runs, with their lines.
    commands: Box<[(usize, String)]>,
    /// Every name its code reads (of its units, import-time code, bindings and `__main__`
    /// block), each once, in order: where what each runs is kept ([`Resolved`]).
    reads: Box<[Name]>,
}

/// A name code reads, as its number in the index's [`NameTable`]: the same names
/// (`torch.cuda`, `os.environ`, `self.model`) recur in every file, and the index holds every
/// file at once, so each file keeps 4 bytes per name it reads and the text is held once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Name(u32);

/// The names of the index while its files are read (by several threads), each held once.
#[derive(Default)]
struct Names(std::sync::Mutex<HashMap<Box<str>, u32>>);

impl Names {
    fn intern(&self, names: Vec<String>) -> Box<[Name]> {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        names
            .into_iter()
            .map(|n| match known.get(n.as_str()) {
                Some(&id) => Name(id),
                None => {
                    let id = known.len() as u32;
                    known.insert(n.into_boxed_str(), id);
                    Name(id)
                }
            })
            .collect()
    }

    /// The text of each name, by number, once every file is read.
    fn into_table(self) -> NameTable {
        let known = self.0.into_inner().unwrap_or_else(|p| p.into_inner());
        let mut table: Vec<Box<str>> = vec![Box::default(); known.len()];
        for (text, id) in known {
            table[id as usize] = text;
        }
        NameTable(table)
    }
}

/// A name a walk reads: one of the index's, or a text of its own (a console script's object),
/// read once and so not worth keeping resolved.
#[derive(Clone, Copy)]
enum Read<'a> {
    Name(Name),
    Text(&'a str),
}

/// The text of the index's names ([`Name`]).
#[derive(Debug, Default)]
struct NameTable(Vec<Box<str>>);

impl NameTable {
    fn text(&self, name: Name) -> &str {
        self.0.get(name.0 as usize).map_or("", |t| t)
    }
}

/// A [`Unit`] as `link` reads it: its names interned.
#[derive(Debug)]
struct LinkUnit {
    name: Box<str>,
    gpu: bool,
    acts: bool,
    function: bool,
    needs: Option<crate::lang::python::Need>,
    sets: Box<[crate::lang::python::EnvSet]>,
    refs: Box<[Name]>,
    members: Box<[Box<str>]>,
    based: bool,
    bases: Box<[Box<str>]>,
    guard: Box<[(Box<str>, u32)]>,
    decorates: decorators::AsDecorator,
    single: bool,
}

/// A top-level function or class: whether its code touches a GPU, and the names it reads
/// (`load`, `helper.load_model`), which make the functions they name run too.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Unit {
    name: String,
    gpu: bool,
    /// Its GPU code does something when it runs: not only constants that name a device (an
    /// enum's `CUDA = "cuda"`). Read before this fact existed: taken as acting.
    #[serde(default = "acting")]
    acts: bool,
    /// A function (not a class): reading an attribute of it does not run it.
    function: bool,
    /// Needs more than one card by design (one per rank, or several at once).
    needs: Option<crate::lang::python::Need>,
    /// The GPU variables it writes. Read before this fact existed: none.
    #[serde(default)]
    sets: Vec<crate::lang::python::EnvSet>,
    refs: Vec<String>,
    /// Of a class's construction unit (`Foo()`): the attributes of an instance whose read runs
    /// nothing more of the class ([`construction::members`]).
    #[serde(default)]
    members: Vec<String>,
    /// Of a class's construction unit: the class names a base, whose code an attribute it
    /// does not define may be.
    #[serde(default)]
    based: bool,
    /// Of a class's construction unit: the bases the class names, as written.
    #[serde(default)]
    bases: Vec<String>,
    /// Of a function's second unit, under the same name: the function without the branches
    /// these `None`-default parameters guard, with their positions ([`guards`]); a call that
    /// passes none of them runs this unit instead of the whole function.
    #[serde(default)]
    guard: Vec<(String, u32)>,
    /// Of a function or class: what it does, as a decorator, with what it decorates.
    #[serde(default)]
    decorates: decorators::AsDecorator,
    /// Of a function's last unit under its name: the function without the branches only a
    /// process of a distributed group runs ([`distributed`]); a program no launcher starts as
    /// one and whose code starts no group runs it instead of the function.
    #[serde(default)]
    single: bool,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct RawImport {
    /// The top-level function or class it sits in (`None`: it runs at import): such an
    /// import runs only when that code does.
    unit: Option<String>,
    /// 1-based line of the import statement.
    #[serde(default)]
    line: usize,
    level: u32,
    module: Option<String>,
    names: Vec<String>,
    /// The local name each imported name (or, for `import a.b as c`, the module) is bound to.
    locals: Vec<String>,
}

/// A [`RawImport`] as `link` reads it, held for every file at once: the absolute module it
/// names worked out once, and its texts in one allocation (that module, then each name
/// imported, then each local name bound), with where each ends (split at a separator on
/// every read instead, the texts cost 8% more instructions: `memchr` per part).
#[derive(Debug)]
struct LinkImport {
    unit: Option<Box<str>>,
    line: u32,
    level: u32,
    /// The texts start with the absolute module (none: a relative import above the root).
    base: bool,
    names: u32,
    texts: Box<str>,
    ends: Box<[u32]>,
}

impl LinkImport {
    /// `raw` as file `rel`, module `module`, holds it.
    fn of(raw: RawImport, module: &str, rel: &str) -> LinkImport {
        let base = absolute_module(module, rel, raw.level, raw.module.as_deref());
        let parts: Vec<&str> = base
            .as_deref()
            .into_iter()
            .chain(raw.names.iter().map(String::as_str))
            .chain(raw.locals.iter().map(String::as_str))
            .collect();
        let ends = parts
            .iter()
            .scan(0, |end, p| {
                *end += p.len() as u32;
                Some(*end)
            })
            .collect();
        LinkImport {
            unit: raw.unit.map(String::into_boxed_str),
            line: raw.line as u32,
            level: raw.level,
            base: base.is_some(),
            names: raw.names.len() as u32,
            texts: parts.concat().into_boxed_str(),
            ends,
        }
    }

    fn texts(&self) -> impl Iterator<Item = &str> + Clone {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|(start, end)| self.texts.get(start as usize..end as usize).unwrap_or(""))
    }

    /// The absolute module it names (`from ..a import b` in `pkg.sub.m` is `pkg.a`; `from .
    /// import x` in `pkg/m.py` is `pkg`); none where the dots climb above the root.
    fn base(&self) -> Option<&str> {
        self.base.then(|| self.texts().next().unwrap_or(""))
    }

    /// The names imported from the module (`from m import a, b`; `*`); none for `import m`.
    fn names(&self) -> impl Iterator<Item = &str> + Clone {
        self.texts()
            .skip(usize::from(self.base))
            .take(self.names as usize)
    }

    /// The local name each imported name (or, for `import a.b as c`, the module) is bound to.
    fn locals(&self) -> impl Iterator<Item = &str> + Clone {
        self.texts()
            .skip(usize::from(self.base) + self.names as usize)
    }
}

/// A module constant that holds a device.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceConst {
    /// 1-based line of the assignment.
    pub line: usize,
    pub index: u64,
    /// A device string (`"cuda:1"`), not a bare index.
    pub string: bool,
    /// The value as written.
    pub text: String,
}

/// What a file imports from another module of the tree: `from cfg import DEVICE [as D]`
/// (`attr: None`), or `import cfg [as c]` then `c.DEVICE` (`attr: Some("DEVICE")`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported<T> {
    pub local: String,
    pub attr: Option<String>,
    /// The file that defines it (root-relative) and its name there.
    pub from: String,
    pub name: String,
    pub value: T,
}

/// A device constant of another module of the tree, as a file imports it.
pub type ImportedConst = Imported<DeviceConst>;

/// A function or class of another module of the tree whose parameters choose a card, as a
/// file imports it (`from lib.upsampler import Upsampler`, `import lib.upsampler as up` then
/// `up.Upsampler(…)`): the parameters.
pub type ImportedFn = Imported<Vec<IndexParam>>;

/// The index of a tree's Python files.
#[derive(Debug, Default)]
pub struct ProjectIndex {
    roles: HashMap<String, Role>,
    imported: HashMap<String, Vec<ImportedConst>>,
    imported_fns: HashMap<String, Vec<ImportedFn>>,
    /// The console and GUI scripts the tree's projects declare, sorted.
    scripts: Vec<String>,
    /// The tree's top-level packages that share a GPU framework's name (openai-whisper's tree
    /// holds `whisper/`), each with the project that ships it: an import of one by a file of
    /// that project is the project's own code, which the index follows, not the framework's.
    shadowing: Vec<Shadowing>,
}

impl ProjectIndex {
    /// The device constants `rel` imports from other modules of the tree.
    pub fn imported(&self, rel: &str) -> &[ImportedConst] {
        self.imported.get(rel).map_or(&[], Vec::as_slice)
    }

    /// The functions and classes of the tree `rel` imports whose parameters choose a card.
    pub fn imported_fns(&self, rel: &str) -> &[ImportedFn] {
        self.imported_fns.get(rel).map_or(&[], Vec::as_slice)
    }

    /// The console and GUI scripts the tree's projects declare, sorted.
    pub fn scripts(&self) -> &[String] {
        &self.scripts
    }

    /// The packages of `rel`'s project that share a GPU framework's name, sorted.
    pub fn shadowing(&self, rel: &str) -> Vec<String> {
        shadowing_for(&self.shadowing, rel)
    }

    /// What `rel` (root-relative, `/`-separated) is; `None` for a file the index does not know.
    pub fn role(&self, rel: &str) -> Option<&Role> {
        self.roles.get(rel)
    }

    /// Index the Python files among `entries` (read under `root`, or their facts from `store`
    /// when their bytes have not changed).
    pub fn build(
        root: &Path,
        entries: &[Entry],
        max_file_size: u64,
        store: &dyn FactStore,
        hosted: &[(String, String)],
        launch_files: &[std::path::PathBuf],
        policy: &crate::model::policy::Policy,
    ) -> ProjectIndex {
        let prefilter = crate::fs::source::Prefilter::new();
        let packages = PackageDirs::default();
        let names = Names::default();
        let places: Vec<_> = entries
            .par_iter()
            .filter(|e| e.kind == EntryKind::Source(Language::Python))
            .map(|e| (e, module_name(root, &e.rel, &packages)))
            .collect();
        let shadowing = shadowing(root, &places);
        let mut files: Vec<PyFile> = places
            .into_par_iter()
            .filter_map(|(e, place)| {
                let mut own = shadowing_for(&shadowing, &e.rel);
                if place.2 {
                    let top = place.0.split('.').next().unwrap_or("");
                    if !own.iter().any(|p| p == top) {
                        own.push(top.to_string());
                    }
                }
                // `null`: the file does not parse, and is left out (judged alone).
                let cached = store
                    .load(e, FactKind::Python)
                    .and_then(|text| serde_json::from_str::<Option<PyFacts>>(&text).ok())
                    .filter(|facts| facts.as_ref().is_none_or(|f| f.own == own));
                let facts = match cached {
                    Some(facts) => facts,
                    None => {
                        let (facts, hash) = read_facts(root, e, max_file_size, &prefilter, own)?;
                        if let Some(Ok(text)) = store.keeps().then(|| serde_json::to_string(&facts))
                        {
                            store.save(e, hash, FactKind::Python, text);
                        }
                        facts
                    }
                }?;
                Some(PyFile::of(e.rel.clone(), place, facts, &names))
            })
            .collect();
        files.sort_by(|a, b| a.rel.cmp(&b.rel));
        let (installed, launch_files): (Vec<_>, Vec<_>) = launch_files
            .iter()
            .partition(|rel| crate::fs::walk::is_installed_metadata(rel));
        let projects = Projects::find(root, &files, &installed);
        let mut launches = launch_files
            .iter()
            .flat_map(|rel| {
                let text = crate::fs::tree_file::read_optional(root, rel, "its launch commands");
                let name = rel.file_name().map(|n| n.to_string_lossy().into_owned());
                let file = crate::fs::walk::slash_joined(rel);
                launch::launches(&name.unwrap_or_default(), text.as_deref().unwrap_or(""))
                    .into_iter()
                    .map(move |l| (file.clone(), l))
            })
            .collect::<Vec<_>>();
        // The commands a program's code runs launch what they start as a script's would.
        launches.extend(files.iter().flat_map(|f| {
            f.commands.iter().flat_map(|(line, text)| {
                launch::command_launches(text, *line)
                    .into_iter()
                    // A plain `python x.py` of code (a test running a script) says nothing of
                    // the processes: the file is judged as it would be alone.
                    .filter(|l| {
                        let handed = l.handed.as_ref().is_some_and(|h| h.unknown.is_some());
                        l.cards.is_some() || l.unknown.is_some() || l.mask.is_some() || handed
                    })
                    .map(|l| (f.rel.clone(), l))
            })
        }));
        let mut index = link(
            files,
            &names.into_table(),
            &projects,
            hosted,
            &launches,
            policy,
        );
        index.shadowing = shadowing;
        index
    }
}

/// A package of the tree named as a GPU framework, and the directory of the project that ships
/// it (`""`: the root).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Shadowing {
    project: String,
    package: String,
}

/// The packages of the tree that share a GPU framework's name, where a project ships them: a
/// directory with `__init__.py` beside the project's `pyproject.toml`, `setup.py` or
/// `setup.cfg`, or in its `src/`. A copy elsewhere (a folder of stubs) is on no importer's path
/// unless it is set up so, which the tree does not say.
fn shadowing(root: &Path, places: &[(&Entry, (String, String, bool))]) -> Vec<Shadowing> {
    let mut found: Vec<(String, String)> = places
        .iter()
        .filter(|(_, (_, _, in_package))| *in_package)
        .filter_map(|(_, (module, source_root, _))| {
            let top = module.split('.').next()?;
            crate::knowledge::python::gpu_frameworks()
                .any(|f| f == top)
                .then(|| (source_root.clone(), top.to_string()))
        })
        .collect();
    found.sort_unstable();
    found.dedup();
    let packaged = |dir: &str| {
        ["pyproject.toml", "setup.py", "setup.cfg"]
            .iter()
            .any(|name| {
                crate::fs::tree_file::read_optional(
                    root,
                    &Path::new(dir).join(name),
                    "its packaging metadata",
                )
                .is_some()
            })
    };
    found
        .into_iter()
        .filter_map(|(source_root, package)| {
            let project = if packaged(&source_root) {
                source_root
            } else {
                let parent = match source_root.rsplit_once('/') {
                    Some((parent, "src")) => parent,
                    None if source_root == "src" => "",
                    _ => return None,
                };
                packaged(parent).then(|| parent.to_string())?
            };
            Some(Shadowing { project, package })
        })
        .collect()
}

/// The shadowing packages of the project `rel` belongs to, sorted.
fn shadowing_for(shadowing: &[Shadowing], rel: &str) -> Vec<String> {
    let mut own: Vec<String> = shadowing
        .iter()
        .filter(|s| s.project.is_empty() || under(rel, &s.project))
        .map(|s| s.package.clone())
        .collect();
    own.sort_unstable();
    own.dedup();
    own
}

/// What the index reads from one file's bytes (kept by the content cache). `own`: the
/// top-level packages the facts were read for (what `gpu` counts as the tree's own imports).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct PyFacts {
    own: Vec<String>,
    imports: Vec<RawImport>,
    /// Imports under `if TYPE_CHECKING:`: they never run, but say where a name a lazy
    /// package hands out comes from.
    #[serde(default)]
    typing_imports: Vec<RawImport>,
    main_guard: bool,
    /// The functions a decorator runs when the module is `__main__` (decorator, function).
    /// Required: facts cached before it existed are a miss, made again.
    runs_as_main: Vec<(String, String)>,
    gpu: bool,
    constants: Vec<(String, DeviceConst)>,
    /// Required: facts cached before it existed are a miss, made again.
    index_params: Vec<IndexParam>,
    dynamic_prefixes: Vec<String>,
    /// Read before this fact existed: every load taken as one code at import may make.
    #[serde(default)]
    dynamic_in_function: Vec<bool>,
    /// Required: facts cached before it existed are a miss, made again.
    dynamic_units: Vec<Vec<String>>,
    /// Required: facts cached before it existed are a miss, made again.
    dynamic_effect: Vec<bool>,
    tests: bool,
    /// Required: facts cached before it existed (and its `path:` loads) are a miss, made again.
    config_base: bool,
    /// Read before this fact existed: taken as acting (what every script was then).
    #[serde(default = "acting")]
    acts: bool,
    /// Required: facts cached before it existed are a miss, made again.
    reads_command_line: bool,
    /// Read before this fact existed: taken as acting.
    #[serde(default = "acting")]
    gpu_acts_at_import: bool,
    /// Its code at import asks the driver for its cards (`torch.cuda.is_available()`).
    #[serde(default)]
    queries_at_import: bool,
    /// Its `__main__` block touches a GPU itself. Read before this fact existed: taken as
    /// touching.
    #[serde(default = "acting")]
    main_gpu: bool,
    /// The code that runs at import needs more than one card by design.
    needs_at_import: Option<crate::lang::python::Need>,
    /// The GPU variables its code at import writes. Required: facts cached before it existed
    /// are a miss, made again.
    sets_at_import: Vec<crate::lang::python::EnvSet>,
    /// Hides every card (`CUDA_VISIBLE_DEVICES = ""`) at import, or in its `__main__` block.
    #[serde(default)]
    hides_at_import: bool,
    #[serde(default)]
    hides_in_main: bool,
    units: Vec<Unit>,
    import_refs: Vec<String>,
    /// What its import-time code names without running it (see [`PyFile::bound`]).
    /// Required: facts cached before it existed held them in `import_refs`, and are a miss,
    /// made again.
    bound: Vec<String>,
    /// Required (see [`PyFile::registered`]): facts cached before it existed held them in
    /// `bound`, and are a miss, made again.
    registered: Vec<registry::Registered>,
    /// Required: facts cached before it existed are a miss, made again.
    globals: Vec<registry::Global>,
    main_refs: Vec<String>,
    /// The command lines its code runs (`subprocess.run([…])`, `os.system(…)`), with their
    /// lines. Required: facts cached before it existed are a miss, made again.
    commands: Vec<(usize, String)>,
}

impl PyFile {
    fn of(
        rel: String,
        (module, source_root, in_package): (String, String, bool),
        f: PyFacts,
        names: &Names,
    ) -> Self {
        let link = |imports: Vec<RawImport>| -> Box<[LinkImport]> {
            (imports.into_iter())
                .map(|i| LinkImport::of(i, &module, &rel))
                .collect()
        };
        let (imports, typing_imports) = (link(f.imports), link(f.typing_imports));
        let units: Vec<LinkUnit> = f
            .units
            .into_iter()
            .map(|u| LinkUnit {
                name: u.name.into_boxed_str(),
                gpu: u.gpu,
                acts: u.acts,
                function: u.function,
                needs: u.needs,
                sets: u.sets.into_boxed_slice(),
                refs: names.intern(u.refs),
                members: u.members.into_iter().map(String::into_boxed_str).collect(),
                based: u.based,
                bases: u.bases.into_iter().map(String::into_boxed_str).collect(),
                guard: u
                    .guard
                    .into_iter()
                    .map(|(n, at)| (n.into_boxed_str(), at))
                    .collect(),
                decorates: u.decorates,
                single: u.single,
            })
            .collect();
        let (import_refs, bound, main_refs) = (
            names.intern(f.import_refs),
            names.intern(f.bound),
            names.intern(f.main_refs),
        );
        let mut reads: Vec<Name> = units.iter().flat_map(|u| u.refs.iter()).copied().collect();
        reads.extend(import_refs.iter().chain(&bound).chain(&main_refs));
        reads.sort_unstable();
        reads.dedup();
        PyFile {
            rel,
            module,
            source_root,
            in_package,
            imports,
            typing_imports,
            main_guard: f.main_guard,
            runs_as_main: f.runs_as_main.into_iter().next(),
            gpu: f.gpu,
            constants: f.constants.into_boxed_slice(),
            index_params: f.index_params.into_boxed_slice(),
            dynamic_prefixes: f.dynamic_prefixes.into_boxed_slice(),
            dynamic_in_function: f.dynamic_in_function.into_boxed_slice(),
            dynamic_units: f.dynamic_units.into_boxed_slice(),
            dynamic_effect: f.dynamic_effect.into_boxed_slice(),
            tests: f.tests,
            config_base: f.config_base,
            acts: f.acts,
            reads_command_line: f.reads_command_line,
            gpu_acts_at_import: f.gpu_acts_at_import,
            queries_at_import: f.queries_at_import,
            main_gpu: f.main_gpu,
            needs_at_import: f.needs_at_import,
            sets_at_import: f.sets_at_import.into_boxed_slice(),
            hides_at_import: f.hides_at_import,
            hides_in_main: f.hides_in_main,
            units: units.into_boxed_slice(),
            import_refs,
            bound,
            registered: f.registered.into_boxed_slice(),
            globals: f.globals.into_boxed_slice(),
            main_refs,
            commands: f.commands.into_boxed_slice(),
            reads: reads.into_boxed_slice(),
        }
    }
}

/// The facts of one file (`None` when it cannot be decoded or parsed) and the hash of the
/// bytes read; `None` when it cannot be read.
fn read_facts(
    root: &Path,
    entry: &Entry,
    limit: u64,
    prefilter: &crate::fs::source::Prefilter,
    own: Vec<String>,
) -> Option<(Option<PyFacts>, u64)> {
    let bytes = crate::fs::source::read_under(root, &entry.rel_path, limit).ok()?;
    let hash = crate::fs::source::content_key(&bytes);
    // A bug met here leaves the file out: the CPU stage meets it again and reports it.
    let facts = crate::fs::panics::caught(entry, || parse_facts(bytes, prefilter, own));
    Some((facts.ok().flatten(), hash))
}

fn parse_facts(
    bytes: Vec<u8>,
    prefilter: &crate::fs::source::Prefilter,
    own: Vec<String>,
) -> Option<PyFacts> {
    let maybe_gpu = prefilter.may_have_gpu_code(Language::Python, &bytes);
    let text = crate::fs::source::decode(bytes).ok()?.text;
    // Too deep for the parser's recursion: left to the per-file pass, which reports it.
    crate::lang::nesting::check(Language::Python, &text).ok()?;
    let parsed = ruff_python_parser::parse_module(&text).ok()?;
    let body = &parsed.syntax().body;
    let mut imports = Imports {
        found: Vec::new(),
        typing: Vec::new(),
        unit: None,
        lines: crate::base::line_index::LineIndex::new(&text),
    };
    for stmt in body {
        // Which top-level function or class an import runs in (`None`: at import).
        imports.unit = match stmt {
            Stmt::FunctionDef(d) => Some(d.name.to_string()),
            Stmt::ClassDef(c) => Some(c.name.to_string()),
            // Runs only when the file is the program.
            _ if is_main_guard(stmt) => Some("__main__".to_string()),
            _ => None,
        };
        imports.visit_stmt(stmt);
    }
    let mut dynamic = DynamicImports::default();
    for stmt in body {
        dynamic.unit = match stmt {
            Stmt::FunctionDef(d) => Some(d.name.to_string()),
            Stmt::ClassDef(c) => Some(c.name.to_string()),
            _ => None,
        };
        ruff_python_ast::visitor::Visitor::visit_stmt(&mut dynamic, stmt);
    }
    let (dynamic_prefixes, dynamic_in_function, dynamic_units, dynamic_effect) =
        dynamic.entries_placed();
    let crate::lang::python::GpuSites {
        sites,
        hides,
        sets,
        needs,
        index_params,
        queries,
    } = if maybe_gpu {
        crate::lang::python::gpu_sites(&text, body, &own)
    } else {
        Default::default()
    };
    // A group whose ranks each take a card is only evidence: any other need of the same code
    // goes first.
    let needs_in = |r: ruff_text_size::TextRange| {
        let within = |at: &usize| r.start().to_usize() <= *at && *at < r.end().to_usize();
        needs
            .iter()
            .filter(|(at, _)| within(at))
            .map(|(_, need)| *need)
            .find(|need| *need != crate::lang::python::Need::RankGroup)
            .or_else(|| {
                needs
                    .iter()
                    .find(|(at, need)| within(at) && *need == crate::lang::python::Need::RankGroup)
                    .map(|(_, need)| *need)
            })
    };
    let sets_in = |r: ruff_text_size::TextRange| -> Vec<crate::lang::python::EnvSet> {
        sets.iter()
            .filter(|(at, _)| r.start().to_usize() <= *at && *at < r.end().to_usize())
            .map(|(_, set)| set.clone())
            .collect()
    };
    let mut needs_at_import = None;
    let mut sets_at_import = Vec::new();
    // Where the module hides every card whenever it runs: a statement of its own at import
    // (not in a function, a class, a branch or a loop), or one of its `__main__` block's.
    let unconditional = |stmts: &[Stmt]| {
        stmts.iter().any(|s| {
            matches!(s, Stmt::Assign(_) | Stmt::AnnAssign(_) | Stmt::Expr(_))
                && sites_in(&hides, s.range()).next().is_some()
        })
    };
    let hides_at_import = !hides.is_empty() && unconditional(body);
    let hides_in_main = !hides.is_empty()
        && body.iter().any(|s| match s {
            Stmt::If(i) if is_main_guard(s) => unconditional(&i.body),
            _ => false,
        });
    // A framework that takes a GPU unasked (TensorFlow, faster-whisper, accelerate) takes it
    // where its names are used, not where it is imported: a module that imports it at the top
    // touches the GPU in the functions and import-time code that use what the import binds.
    let (framework_names, framework_imports) = framework_bindings(body, &own, &sites);
    // A use of one of its device-free APIs (`tf.train.load_checkpoint`) takes no card.
    let uses_framework = |refs: &[String]| {
        refs.iter().any(|r| {
            framework_names.iter().any(|(n, path)| {
                r.strip_prefix(n.as_str())
                    .filter(|rest| rest.is_empty() || rest.starts_with('.'))
                    .is_some_and(|rest| {
                        !crate::knowledge::python::device_free(&format!("{path}{rest}"))
                    })
            })
        })
    };
    // Code touches a GPU where it holds a site (an import of GPU code aside) or uses a name
    // such an import binds.
    let touches = |r: ruff_text_size::TextRange, refs: &[String]| {
        sites_in(&sites, r).any(|o| !framework_imports.iter().any(|i| i.contains(&o)))
            || uses_framework(refs)
    };
    // Code at import does something on a GPU where it holds a site or calls what such an import
    // binds: reading a name of it (`tf.float32`, `inspect.signature(whisper.load_model)`) runs
    // nothing, nor does reading a mapping it binds (`LANGUAGES.items()`).
    let acts_at_import = |r: ruff_text_size::TextRange, calls: &[String]| {
        let calls: Vec<String> = calls
            .iter()
            .filter(|c| {
                !c.rsplit_once('.')
                    .is_some_and(|(_, m)| MAPPING_VIEWS.contains(&m))
            })
            .cloned()
            .collect();
        sites_in(&sites, r).any(|o| !framework_imports.iter().any(|i| i.contains(&o)))
            || uses_framework(&calls)
    };
    // What runs at import, and each top-level function and class apart: a program reaches a
    // function's GPU code only when it uses that function.
    // The names whose calls keep their arguments' shape ([`guards::mark_calls`]): the file's
    // functions, and what it imports by name.
    let mut callable_names: Vec<String> = module_level_defs(body)
        .into_iter()
        .filter_map(|s| match s {
            Stmt::FunctionDef(d) => Some(d.name.to_string()),
            _ => None,
        })
        .collect();
    for i in &imports.found {
        if !i.names.is_empty() {
            callable_names.extend(i.locals.iter().filter(|l| *l != "*").cloned());
        }
    }
    let callable: HashSet<&str> = callable_names.iter().map(String::as_str).collect();
    let dist_names = distributed::DistNames::of(body);
    let mut units = Vec::new();
    let mut import_refs = Vec::new();
    let mut bound_refs = Vec::new();
    let mut registered = Vec::new();
    let mut globals = Vec::new();
    // Type aliases at module level, by name: the classes each names ([`type_alias`]).
    let mut aliases: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let mut main_refs = Vec::new();
    let mut gpu_at_import = false;
    let mut gpu_acts_at_import = false;
    let mut queries_at_import = false;
    let mut main_gpu = false;
    let mut runs_as_main = Vec::new();
    // The module's code a statement at a time, through the `if`/`try` that hold definitions
    // (`try: from x import f` / `except ImportError: def f(…)`): a function defined there runs
    // when it is called, like one at the top; the conditions run at import.
    for piece in module_pieces(body) {
        let stmt = match piece {
            Piece::Stmt(stmt) => stmt,
            Piece::Expr(e) => {
                let mut code = Refs::default();
                ruff_python_ast::visitor::Visitor::visit_expr(&mut code, e);
                let (mut refs, all) = code.split();
                let touches = touches(e.range(), &all);
                gpu_at_import |= touches;
                gpu_acts_at_import |= touches
                    && acts_at_import(
                        e.range(),
                        &calls_in(|r| ruff_python_ast::visitor::Visitor::visit_expr(r, e)),
                    );
                queries_at_import |= sites_in(&queries, e.range()).next().is_some();
                registry::mark_item_reads(registry::Code::Expr(e), &mut refs);
                import_refs.extend(refs);
                continue;
            }
        };
        // What GPU use is judged on: every name read; what the code runs: the names it reads
        // as code, not only as types (`List[C]`, `isinstance(x, C)`).
        let (mut refs, all) = reads_of(stmt);
        let touches = touches(stmt.range(), &all);
        let framework_used = uses_framework(&all);
        let typed: Vec<&String> = all
            .iter()
            .filter(|n| refs.binary_search(n).is_err())
            .collect();
        let aliased = if typed.is_empty() {
            Vec::new()
        } else {
            type_alias(stmt)
        };
        for name in aliased {
            aliases
                .entry(name.to_string())
                .or_default()
                .extend(typed.iter().map(|n| n.to_string()));
        }
        registry::mark_item_reads(registry::Code::Stmt(stmt), &mut refs);
        let defined = match stmt {
            Stmt::FunctionDef(d) => Some((&d.name, &d.decorator_list)),
            Stmt::ClassDef(c) => Some((&c.name, &c.decorator_list)),
            _ => None,
        };
        if let Some((name, decorators)) = defined {
            instances::mark(&[stmt], None, &mut refs);
            guards::mark_calls(&[stmt], &callable, &mut refs);
            // A function a decorator registers (`@app.route`, `@registry.register`) is called
            // by whoever reads the registry (where the index knows it), else as if the module
            // named it at import.
            // One that runs it as the program (`@call_parse`) only wraps it for an importer.
            let as_main = decorators
                .iter()
                .find_map(|d| as_main::runs_as_main(&d.expression, &imports.found))
                .filter(|_| matches!(stmt, Stmt::FunctionDef(_)));
            if let Some(decorator) = as_main {
                runs_as_main.push((decorator.to_string(), name.to_string()));
                main_refs.push(name.to_string());
            }
            let (by, called): (Vec<String>, Vec<bool>) = decorators
                .iter()
                .filter(|d| !is_plain_decorator(&d.expression))
                .filter(|d| as_main::runs_as_main(&d.expression, &imports.found).is_none())
                .map(|d| {
                    let callee = registry::decorator_callee(&d.expression);
                    (callee, matches!(d.expression, Expr::Call(_)))
                })
                .unzip();
            if !by.is_empty() {
                registered.push(registry::Registered {
                    unit: name.to_string(),
                    by,
                    called,
                });
            }
            units.push(Unit {
                name: name.to_string(),
                gpu: touches,
                acts: touches && {
                    let mut constants = Vec::new();
                    constant_ranges(std::slice::from_ref(stmt), &mut constants);
                    sites_in(&sites, stmt.range()).any(|o| {
                        !framework_imports.iter().any(|i| i.contains(&o))
                            && !constants.iter().any(|c| c.contains(&o))
                    }) || framework_used
                },
                needs: needs_in(stmt.range()),
                sets: sets_in(stmt.range()),
                function: matches!(stmt, Stmt::FunctionDef(_)),
                refs,
                decorates: decorators::of(stmt),
                ..Unit::default()
            });
            // The function as it runs without the code in `skip`: its walk, its sites and what
            // it reads leave those ranges out.
            let without = |skip: Vec<ruff_text_size::TextRange>| -> Unit {
                let mut code = Refs {
                    skip: skip.clone(),
                    ..Refs::default()
                };
                ruff_python_ast::visitor::Visitor::visit_stmt(&mut code, stmt);
                let (mut refs, all) = code.split();
                registry::mark_item_reads(registry::Code::Stmt(stmt), &mut refs);
                instances::mark(&[stmt], None, &mut refs);
                guards::mark_calls(&[stmt], &callable, &mut refs);
                let kept = |o: &usize| {
                    !skip
                        .iter()
                        .any(|r| r.start().to_usize() <= *o && *o < r.end().to_usize())
                };
                let own_sites = || {
                    sites_in(&sites, stmt.range())
                        .filter(kept)
                        .filter(|o| !framework_imports.iter().any(|i| i.contains(o)))
                };
                let mut constants = Vec::new();
                constant_ranges(std::slice::from_ref(stmt), &mut constants);
                let framework_used = uses_framework(&all);
                Unit {
                    name: name.to_string(),
                    gpu: own_sites().next().is_some() || framework_used,
                    acts: own_sites().any(|o| !constants.iter().any(|c| c.contains(&o)))
                        || framework_used,
                    needs: needs_in(stmt.range()),
                    sets: sets_in(stmt.range()),
                    function: true,
                    refs,
                    ..Unit::default()
                }
            };
            // The function without the branches only a caller's argument opens: a unit of
            // its own, under the same name, right after it.
            if let Some(g) = match stmt {
                Stmt::FunctionDef(d) => guards::of(d),
                _ => None,
            } {
                units.push(Unit {
                    guard: g.params,
                    ..without(g.skipped)
                });
            }
            // The function without the branches only a process of a distributed group runs:
            // a unit of its own, last under its name, for a program that starts none.
            let alone = match stmt {
                Stmt::FunctionDef(d) => distributed::only_branches(d, &dist_names),
                _ => Vec::new(),
            };
            if !alone.is_empty() {
                units.push(Unit {
                    single: true,
                    ..without(alone)
                });
            }
            // What making an instance runs, apart from the methods it never reads: a unit of
            // its own, `Class()`, which a call of the class at import runs.
            if let Some(made) = match stmt {
                Stmt::ClassDef(c) => construction::of(c).map(|m| (c, m)),
                _ => None,
            } {
                let (c, made) = made;
                let mut code = Refs::default();
                for d in &c.decorator_list {
                    ruff_python_ast::visitor::Visitor::visit_decorator(&mut code, d);
                }
                for k in c.keywords() {
                    ruff_python_ast::visitor::Visitor::visit_expr(&mut code, &k.value);
                }
                for s in &made.stmts {
                    code.visit_class_stmt(s);
                }
                let (mut refs, all) = code.split();
                // Over the construction's own code (names its decorators and bases read stay
                // plain reads): not the whole class again.
                registry::mark_item_reads(registry::Code::Stmts(&made.stmts), &mut refs);
                instances::mark(&made.stmts, None, &mut refs);
                // The bases are made too: their construction, unless construction runs other
                // methods of theirs.
                let mark = if made.inherits {
                    ""
                } else {
                    construction::CALLED
                };
                refs.extend(
                    construction::bases(c)
                        .into_iter()
                        .map(|b| format!("{b}{mark}")),
                );
                refs.sort();
                refs.dedup();
                let mut ranges: Vec<ruff_text_size::TextRange> =
                    c.decorator_list.iter().map(Ranged::range).collect();
                ranges.extend(c.arguments.as_deref().map(Ranged::range));
                ranges.extend(made.stmts.iter().map(|s| s.range()));
                let mut constants = Vec::new();
                for s in &made.stmts {
                    constant_ranges(std::slice::from_ref(*s), &mut constants);
                }
                let own_sites = || {
                    ranges
                        .iter()
                        .flat_map(|&r| sites_in(&sites, r))
                        .filter(|o| !framework_imports.iter().any(|i| i.contains(o)))
                };
                let framework_used = uses_framework(&refs) || uses_framework(&all);
                units.push(Unit {
                    name: format!("{name}{}", construction::CALLED),
                    gpu: own_sites().next().is_some() || framework_used,
                    acts: own_sites().any(|o| !constants.iter().any(|c| c.contains(&o)))
                        || framework_used,
                    needs: ranges.iter().find_map(|&r| needs_in(r)),
                    sets: ranges.iter().flat_map(|&r| sets_in(r)).collect(),
                    function: true,
                    refs,
                    members: construction::members(c, &made),
                    based: construction::based(c),
                    bases: construction::bases(c),
                    ..Unit::default()
                });
                // Each other method, a unit of its own (`Foo().run`), which runs where code
                // reads its name on an instance the construction made.
                for (method, defs) in construction::other_methods(c, &made) {
                    let mut code = Refs::default();
                    for d in &defs {
                        ruff_python_ast::visitor::Visitor::visit_stmt(&mut code, d);
                    }
                    let (mut refs, all) = code.split();
                    registry::mark_item_reads(registry::Code::Stmts(&defs), &mut refs);
                    instances::mark(&defs, None, &mut refs);
                    let refs = method_reads(name, c, &defs, refs);
                    let own_sites = || {
                        defs.iter()
                            .flat_map(|d| sites_in(&sites, d.range()))
                            .filter(|o| !framework_imports.iter().any(|i| i.contains(o)))
                    };
                    let mut constants = Vec::new();
                    for d in &defs {
                        constant_ranges(std::slice::from_ref(*d), &mut constants);
                    }
                    let framework_used = uses_framework(&all);
                    units.push(Unit {
                        name: format!("{name}{}.{method}", construction::CALLED),
                        gpu: own_sites().next().is_some() || framework_used,
                        acts: own_sites().any(|o| !constants.iter().any(|c| c.contains(&o)))
                            || framework_used,
                        needs: defs.iter().find_map(|d| needs_in(d.range())),
                        sets: defs.iter().flat_map(|d| sets_in(d.range())).collect(),
                        function: true,
                        refs,
                        ..Unit::default()
                    });
                }
            }
            // The methods a registry's dispatch calls on a class without an instance
            // (`REGISTRY[name].add_args(parser)`), as units of their own: `Class.method`.
            if let Stmt::ClassDef(c) = stmt {
                for hook in registry::class_hooks(c) {
                    let Stmt::FunctionDef(d) = hook else { continue };
                    let (mut refs, all) = reads_of(hook);
                    if sites_in(&sites, hook.range()).next().is_some() || uses_framework(&all) {
                        continue;
                    }
                    registry::mark_item_reads(registry::Code::Stmt(hook), &mut refs);
                    units.push(Unit {
                        name: format!("{name}.{}", d.name),
                        function: true,
                        needs: needs_in(hook.range()),
                        sets: sets_in(hook.range()),
                        refs,
                        ..Unit::default()
                    });
                }
            }
        } else if is_main_guard(stmt) {
            main_gpu |= touches;
            instances::mark(&[stmt], Some(body), &mut refs);
            guards::mark_calls(&[stmt], &callable, &mut refs);
            main_refs.extend(refs);
        } else {
            gpu_at_import |= touches;
            needs_at_import = needs_at_import.or(needs_in(stmt.range()));
            sets_at_import.extend(sets_in(stmt.range()));
            // A constant that names a device (`PROVIDERS = ["CUDAExecutionProvider"]`) is
            // GPU code a program may use, but running the file does nothing with it.
            let acts = touches
                && !is_constant(stmt)
                && acts_at_import(
                    stmt.range(),
                    &calls_in(|r| ruff_python_ast::visitor::Visitor::visit_stmt(r, stmt)),
                );
            gpu_acts_at_import |= acts;
            // Such a name is GPU code where running code reads it: a unit of its own.
            if touches && !acts {
                for name in assigned_names(stmt) {
                    units.push(Unit {
                        name,
                        gpu: true,
                        acts: false,
                        function: false,
                        refs: refs.clone(),
                        ..Unit::default()
                    });
                }
            }
            queries_at_import |= sites_in(&queries, stmt.range()).next().is_some();
            globals.extend(registry::global_of(stmt));
            // `X = Cls(…)`: a class called runs its construction (`Cls()`), unless the
            // statement reads it otherwise too.
            if let Some((callee, rest)) = construction::called_at_import(stmt) {
                let elsewhere = rest.into_iter().any(|e| refs_of_expr(e).contains(&callee));
                if let Some(r) = refs.iter_mut().find(|r| **r == callee && !elsewhere) {
                    r.push_str(construction::CALLED);
                }
            }
            // `Model = DetectionModel`, `MODELS = {"a": A}`: names bound, nothing run.
            if binds_only(stmt) {
                bound_refs.extend(refs);
            } else {
                import_refs.extend(refs);
            }
        }
    }
    // An alias read as code runs the classes it names; one named after a function or class
    // of the file (defined in one branch, aliased in another) runs them at import, as before.
    for (name, mut refs) in aliases {
        if units.iter().any(|u| u.name == name) {
            import_refs.extend(refs);
            continue;
        }
        refs.sort();
        refs.dedup();
        units.push(Unit {
            name,
            function: true,
            refs,
            ..Unit::default()
        });
    }
    // The file's code as a whole (every function run): an import of GPU code counts only where
    // what it binds is used.
    let gpu = gpu_at_import || main_gpu || units.iter().any(|u| u.gpu);
    let found = std::mem::take(&mut imports.found);
    let reads_command_line = body
        .iter()
        .any(|stmt| !is_main_guard(stmt) && reads_command_line(stmt, &found));
    import_refs.sort();
    import_refs.dedup();
    main_refs.sort();
    main_refs.dedup();
    let facts = PyFacts {
        commands: commands::command_lines(&text, body),
        sets_at_import,
        bound: bound_refs,
        registered,
        globals,
        gpu_acts_at_import,
        queries_at_import,
        main_gpu,
        needs_at_import,
        hides_at_import,
        hides_in_main,
        units,
        import_refs,
        main_refs,
        own,
        imports: found,
        typing_imports: imports.typing,
        dynamic_prefixes,
        dynamic_in_function,
        dynamic_units,
        dynamic_effect,
        config_base: body.iter().any(|stmt| config_bases(stmt).is_some()),
        main_guard: body.iter().any(is_main_guard),
        runs_as_main,
        gpu,
        constants: device_constants(&text, body),
        index_params,
        // pytest collects `test…` functions and `Test…` classes without an `__init__`
        // (`class TestHarness` with one is a helper pytest skips), defined at module level,
        // under a module-level `if`/`try` too (`if is_megatron_available():`).
        tests: module_level_defs(body).into_iter().any(|stmt| match stmt {
            Stmt::FunctionDef(d) => d.name.as_str().starts_with("test"),
            Stmt::ClassDef(c) => {
                // A dataclass has a generated `__init__`.
                let dataclass = c.decorator_list.iter().any(|d| {
                    let callee = match &d.expression {
                        Expr::Call(call) => call.func.as_ref(),
                        other => other,
                    };
                    matches!(callee, Expr::Name(n) if n.id.as_str() == "dataclass")
                        || matches!(callee, Expr::Attribute(a) if a.attr.as_str() == "dataclass")
                });
                // A `unittest.TestCase` is collected whatever its name.
                let test_case = c.bases().iter().any(|b| {
                    let name = match b {
                        Expr::Name(n) => n.id.as_str(),
                        Expr::Attribute(a) => a.attr.as_str(),
                        _ => "",
                    };
                    name.ends_with("TestCase")
                });
                test_case
                    || (c.name.as_str().starts_with("Test")
                        && !dataclass
                        && !c.body.iter().any(
                            |s| matches!(s, Stmt::FunctionDef(d) if d.name.as_str() == "__init__"),
                        ))
            }
            _ => false,
        }),
        // A file that only defines (functions or classes, with imports and constants) and
        // acts on no GPU when run does nothing as a script: a plugin its host loads by name
        // (Triton's `model.py`), never a program. A file with no definition is taken as
        // acting, whatever it holds (a one-line `DEVICE = "cuda:1"` script).
        reads_command_line,
        // A file of data only (imports, and names bound to literals, dicts, lists and the
        // names they refer to: an mmengine config that `Config.fromfile` loads) does nothing
        // when run, even where a value names a card (`device="cuda"`): its loader decides.
        acts: (gpu_acts_at_import
            || body.iter().any(acts)
            || !body
                .iter()
                .any(|s| matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_))))
            && !only_data(body),
    };
    Some(facts)
}

/// A method's reads as its unit (`Foo().run`) runs them: an attribute of the instance
/// (`self.fc`) is that attribute of an instance of `class` (`Foo().fc`); the instance handed on
/// (`helper(self)`) lets any method run, the whole class; a base's method (`super().x`), the
/// bases whole.
fn method_reads(
    class: &str,
    c: &ruff_python_ast::StmtClassDef,
    defs: &[&Stmt],
    refs: Vec<String>,
) -> Vec<String> {
    let receivers: Vec<String> = defs
        .iter()
        .filter_map(|d| match d {
            Stmt::FunctionDef(f)
                if !f.decorator_list.iter().any(
                    |x| matches!(&x.expression, Expr::Name(n) if n.id.as_str() == "staticmethod"),
                ) =>
            {
                let p = &f.parameters;
                p.posonlyargs.first().or(p.args.first())
            }
            _ => None,
        })
        .map(|p| p.parameter.name.to_string())
        .collect();
    let mut out = Vec::new();
    for r in refs {
        let (head, rest) = r
            .split_once('.')
            .map_or((r.as_str(), None), |(h, t)| (h, Some(t)));
        if receivers.iter().any(|p| p == head) {
            out.push(match rest {
                Some(rest) => format!("{class}{}.{rest}", construction::CALLED),
                None => class.to_string(),
            });
            continue;
        }
        if head == "super" {
            out.extend(construction::bases(c));
        }
        out.push(r);
    }
    out.sort();
    out.dedup();
    out
}

/// The statements a module runs at its level: its body, and the bodies of its module-level
/// `if`/`try` statements (a definition made only when a dependency is there).
fn module_level_defs(body: &[Stmt]) -> Vec<&Stmt> {
    fn walk<'a>(body: &'a [Stmt], depth: usize, out: &mut Vec<&'a Stmt>) {
        for stmt in body {
            out.push(stmt);
            if depth >= 3 {
                continue;
            }
            match stmt {
                // The `__main__` block runs as a script, never under pytest's collection.
                Stmt::If(s) if !is_main_guard(stmt) => {
                    walk(&s.body, depth + 1, out);
                    for c in &s.elif_else_clauses {
                        walk(&c.body, depth + 1, out);
                    }
                }
                Stmt::Try(t) => {
                    walk(&t.body, depth + 1, out);
                    walk(&t.orelse, depth + 1, out);
                    for h in &t.handlers {
                        let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                        walk(&h.body, depth + 1, out);
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(body, 0, &mut out);
    out
}

/// The GPU sites (byte offsets) within `range`.
fn sites_in(sites: &[usize], range: ruff_text_size::TextRange) -> impl Iterator<Item = usize> + '_ {
    sites
        .iter()
        .copied()
        .filter(move |&o| range.start().to_usize() <= o && o < range.end().to_usize())
}

/// The names that module-level imports of GPU code bind, as dotted prefixes of the names code
/// uses, and the ranges of those import statements (inside `if`/`try` too; not under
/// `TYPE_CHECKING`, not the file's own package). Two kinds: a framework that takes a GPU unasked
/// (`tf` for `import tensorflow as tf`, `WhisperModel` for `from faster_whisper import
/// WhisperModel`), and an import that is itself a GPU site (`import torch.distributed as dist`:
/// `dist`; `import torch.distributed`: `torch.distributed`). Importing binds a name and touches
/// no card: the GPU is touched where the name is used. Each name with the dotted path it stands
/// for (`tf` → `tensorflow`), once per import that binds it.
fn framework_bindings(
    body: &[Stmt],
    own: &[String],
    sites: &[usize],
) -> (Vec<(String, String)>, Vec<std::ops::Range<usize>>) {
    use crate::knowledge::python::gpu_by_default;
    let foreign = |module: &str| {
        let top = module.split('.').next().unwrap_or_default();
        !own.iter().any(|p| p == top)
    };
    let mut names = Vec::new();
    let mut ranges = Vec::new();
    let mut stack: Vec<&Stmt> = body.iter().rev().collect();
    while let Some(stmt) = stack.pop() {
        let mut framework = false;
        let a_site = || sites_in(sites, stmt.range()).next().is_some();
        match stmt {
            Stmt::Import(i) => {
                for a in &i.names {
                    let module = a.name.as_str();
                    let unasked = gpu_by_default(module);
                    if (unasked || a_site()) && foreign(module) {
                        framework = true;
                        let top = module.split('.').next().unwrap_or(module);
                        let (name, path) = match &a.asname {
                            Some(as_) => (as_.to_string(), module),
                            None if unasked => (top.to_string(), top),
                            None => (module.to_string(), module),
                        };
                        names.push((name, path.to_string()));
                    }
                }
            }
            Stmt::ImportFrom(i) if i.level == 0 => {
                let module = i.module.as_ref().map_or("", |m| m.as_str());
                for a in &i.names {
                    let full = format!("{module}.{}", a.name);
                    if (gpu_by_default(module) || gpu_by_default(&full) || a_site())
                        && foreign(module)
                    {
                        framework = true;
                        names.push((a.asname.as_ref().unwrap_or(&a.name).to_string(), full));
                    }
                }
            }
            Stmt::If(i) if !is_type_checking(&i.test) => {
                stack.extend(i.body.iter().rev());
                for c in &i.elif_else_clauses {
                    stack.extend(c.body.iter().rev());
                }
            }
            Stmt::Try(t) => {
                stack.extend(t.body.iter().rev());
                stack.extend(t.orelse.iter().rev());
                stack.extend(t.finalbody.iter().rev());
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    stack.extend(h.body.iter().rev());
                }
            }
            _ => {}
        }
        if framework {
            let r = stmt.range();
            ranges.push(r.start().to_usize()..r.end().to_usize());
        }
    }
    (names, ranges)
}

/// An assignment whose value calls nothing (`NAME = "cuda:1"`, `PROVIDERS = [...]`): it names
/// a value, it does not act.
fn is_constant(stmt: &Stmt) -> bool {
    use ruff_python_ast::visitor::{walk_expr, Visitor};
    struct Calls(bool);
    impl<'a> Visitor<'a> for Calls {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if matches!(expr, Expr::Call(_) | Expr::Await(_) | Expr::Yield(_)) {
                self.0 = true;
            } else {
                walk_expr(self, expr);
            }
        }
    }
    let value = match stmt {
        Stmt::Assign(a) if a.targets.iter().all(names_only) => Some(a.value.as_ref()),
        Stmt::AnnAssign(a) if names_only(&a.target) => a.value.as_deref(),
        _ => None,
    };
    value.is_some_and(|v| {
        let mut calls = Calls(false);
        calls.visit_expr(v);
        !calls.0
    })
}

/// An assignment target that binds names (`A`, `a, b`), not one that writes into an object
/// (`os.environ["X"] = …`, `torch.backends.cudnn.benchmark = …`), which acts.
fn names_only(target: &Expr) -> bool {
    match target {
        Expr::Name(_) => true,
        Expr::Tuple(t) => t.elts.iter().all(names_only),
        Expr::List(l) => l.elts.iter().all(names_only),
        Expr::Starred(s) => names_only(&s.value),
        _ => false,
    }
}

/// The names an assignment binds (`A = …`, `a, b = …`, `A: T = …`); none for any other
/// statement, or one that writes into an object.
fn assigned_names(stmt: &Stmt) -> Vec<String> {
    fn collect(target: &Expr, out: &mut Vec<String>) {
        match target {
            Expr::Name(n) => out.push(n.id.to_string()),
            Expr::Tuple(t) => t.elts.iter().for_each(|e| collect(e, out)),
            Expr::List(l) => l.elts.iter().for_each(|e| collect(e, out)),
            Expr::Starred(s) => collect(&s.value, out),
            _ => {}
        }
    }
    let mut out = Vec::new();
    match stmt {
        Stmt::Assign(a) if a.targets.iter().all(names_only) => {
            a.targets.iter().for_each(|t| collect(t, &mut out));
        }
        Stmt::AnnAssign(a) if names_only(&a.target) => collect(&a.target, &mut out),
        _ => {}
    }
    out
}

fn acting() -> bool {
    true
}

/// The ranges of the constant assignments (`CUDA = "cuda"`, no call: [`is_constant`]) in
/// `stmts` and in the bodies they hold (a class's, a function's, a branch's).
fn constant_ranges(stmts: &[Stmt], out: &mut Vec<std::ops::Range<usize>>) {
    for stmt in stmts {
        if is_constant(stmt) {
            out.push(stmt.range().start().to_usize()..stmt.range().end().to_usize());
            continue;
        }
        match stmt {
            Stmt::FunctionDef(f) => constant_ranges(&f.body, out),
            Stmt::ClassDef(c) => constant_ranges(&c.body, out),
            Stmt::If(i) => {
                constant_ranges(&i.body, out);
                for clause in &i.elif_else_clauses {
                    constant_ranges(&clause.body, out);
                }
            }
            Stmt::Try(t) => {
                constant_ranges(&t.body, out);
                constant_ranges(&t.orelse, out);
                constant_ranges(&t.finalbody, out);
            }
            _ => {}
        }
    }
}

/// A module-level statement that reads the command line (`sys.argv`, `parser.parse_args()`),
/// outside the functions and classes it defines.
fn reads_command_line(stmt: &Stmt, imports: &[RawImport]) -> bool {
    use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
    struct Reads<'i>(bool, &'i [RawImport]);
    impl<'a> Visitor<'a> for Reads<'_> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            if !matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                walk_stmt(self, stmt);
            }
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            match expr {
                Expr::Attribute(a)
                    if a.attr.as_str() == "argv"
                        && matches!(a.value.as_ref(), Expr::Name(n) if n.id.as_str() == "sys") =>
                {
                    self.0 = true;
                }
                Expr::Call(c)
                    if matches!(c.func.as_ref(), Expr::Attribute(a)
                        if matches!(a.attr.as_str(), "parse_args" | "parse_known_args")) =>
                {
                    self.0 = true;
                }
                // `fire.Fire(main)`, `typer.run(main)`: the function run with the command line.
                Expr::Call(c) if as_main::reads_command_line(&c.func, self.1) => self.0 = true,
                Expr::Lambda(_) => return,
                _ => {}
            }
            walk_expr(self, expr);
        }
    }
    let mut reads = Reads(false, imports);
    reads.visit_stmt(stmt);
    reads.0
}

/// Code that only names things and builds data from them: literals, containers, the names and
/// attributes they refer to, arithmetic, and builtins that build data (`dict(…)`, `int(…)`,
/// `max(…)`): nothing of what it names runs.
fn data(e: &Expr) -> bool {
    match e {
        Expr::Name(_)
        | Expr::StringLiteral(_)
        | Expr::BytesLiteral(_)
        | Expr::NumberLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_)
        | Expr::EllipsisLiteral(_) => true,
        Expr::Attribute(a) => data(&a.value),
        Expr::Subscript(s) => data(&s.value) && data(&s.slice),
        Expr::List(l) => l.elts.iter().all(data),
        Expr::Tuple(t) => t.elts.iter().all(data),
        Expr::Set(t) => t.elts.iter().all(data),
        Expr::Dict(d) => d
            .items
            .iter()
            .all(|i| i.key.as_ref().is_none_or(data) && data(&i.value)),
        Expr::Starred(s) => data(&s.value),
        Expr::BinOp(b) => data(&b.left) && data(&b.right),
        Expr::UnaryOp(u) => data(&u.operand),
        Expr::BoolOp(b) => b.values.iter().all(data),
        Expr::Compare(c) => data(&c.left) && c.comparators.iter().all(data),
        Expr::If(i) => data(&i.test) && data(&i.body) && data(&i.orelse),
        Expr::Call(c) => {
            matches!(c.func.as_ref(), Expr::Name(n) if matches!(n.id.as_str(),
                "dict" | "list" | "tuple" | "set" | "frozenset" | "int" | "float" | "str"
                | "bool" | "len" | "min" | "max" | "abs" | "round" | "sum" | "range"))
                && c.arguments.args.iter().all(data)
                && c.arguments.keywords.iter().all(|k| data(&k.value))
        }
        _ => false,
    }
}

/// A module of data: imports, docstrings, and names bound (`=`, `+=`, under an `if` on data)
/// to literals, containers, `dict(…)`-like builders, arithmetic builtins (`int(…)`, `max(…)`)
/// and the names and attributes they refer to (`dict(type=TrainLoop, max_epochs=max_epochs)`):
/// nothing in it calls anything else. An mmengine `with read_base():` block of imports counts
/// as imports.
fn only_data(body: &[Stmt]) -> bool {
    fn statement(s: &Stmt) -> bool {
        match s {
            Stmt::Import(_) | Stmt::ImportFrom(_) | Stmt::Pass(_) => true,
            Stmt::Expr(e) => matches!(e.value.as_ref(), Expr::StringLiteral(_)),
            Stmt::Assign(a) => a.targets.iter().all(names_only) && data(&a.value),
            Stmt::AnnAssign(a) => names_only(&a.target) && a.value.as_deref().is_none_or(data),
            Stmt::AugAssign(a) => names_only(&a.target) && data(&a.value),
            Stmt::If(i) => {
                data(&i.test)
                    && i.body.iter().all(statement)
                    && i.elif_else_clauses
                        .iter()
                        .all(|c| c.test.as_ref().is_none_or(data) && c.body.iter().all(statement))
            }
            Stmt::With(w) => w
                .body
                .iter()
                .all(|s| matches!(s, Stmt::Import(_) | Stmt::ImportFrom(_))),
            _ => false,
        }
    }
    // A file of imports alone is kept a script: its imports may run something (`from app
    // import server` that serves at import); a config binds settings.
    body.iter().all(statement)
        && body.iter().any(|s| {
            matches!(
                s,
                Stmt::Assign(_) | Stmt::AnnAssign(_) | Stmt::AugAssign(_) | Stmt::If(_)
            )
        })
}

/// A module-level statement that does something when the file runs: a call, a loop, a
/// `with`, a `match`, a write into an object (`os.environ["X"] = …`), or a branch or `try`
/// holding one (not `if TYPE_CHECKING:`, not a docstring, not a definition, import or an
/// assignment to names).
fn acts(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Expr(e) => !matches!(
            e.value.as_ref(),
            Expr::StringLiteral(_) | Expr::EllipsisLiteral(_)
        ),
        Stmt::For(_)
        | Stmt::While(_)
        | Stmt::With(_)
        | Stmt::Match(_)
        | Stmt::Raise(_)
        | Stmt::Assert(_) => true,
        Stmt::Assign(a) => !a.targets.iter().all(names_only),
        Stmt::AnnAssign(a) => a.value.is_some() && !names_only(&a.target),
        Stmt::AugAssign(a) => !names_only(&a.target),
        Stmt::Delete(_) => true,
        Stmt::If(s) if is_type_checking(&s.test) => false,
        Stmt::If(s) => {
            s.body.iter().any(acts) || s.elif_else_clauses.iter().any(|c| c.body.iter().any(acts))
        }
        Stmt::Try(t) => {
            t.body.iter().any(acts) || t.orelse.iter().any(acts) || t.finalbody.iter().any(acts)
        }
        _ => false,
    }
}

/// `NAME = "cuda:1"`, `NAME: str = "cuda:1"`, `NAME = torch.device("cuda", 1)`, and a bare index
/// in a constant named for a device (`GPU_ID = 1`) at module level.
fn device_constants(text: &str, body: &[Stmt]) -> Vec<(String, DeviceConst)> {
    let mut out = Vec::new();
    for stmt in body {
        let (target, value) = match stmt {
            Stmt::Assign(a) if a.targets.len() == 1 => (&a.targets[0], a.value.as_ref()),
            Stmt::AnnAssign(a) => match &a.value {
                Some(v) => (a.target.as_ref(), v.as_ref()),
                None => continue,
            },
            _ => continue,
        };
        let Expr::Name(name) = target else { continue };
        let id = name.id.as_str();
        let named_for_device = {
            let l = id.to_ascii_lowercase();
            ["gpu", "device", "cuda"].iter().any(|w| l.contains(w))
        };
        let device = match value {
            Expr::StringLiteral(s) => {
                crate::lang::python::device_string_index(s.value.to_str()).map(|i| (i, true))
            }
            Expr::NumberLiteral(_) if named_for_device => {
                crate::lang::python::int_literal(value).map(|i| (i, false))
            }
            Expr::Call(c) if matches!(c.func.as_ref(), Expr::Attribute(a) if a.attr.as_str() == "device") => {
                match (c.arguments.args.first(), c.arguments.args.get(1)) {
                    (Some(Expr::StringLiteral(s)), None) => {
                        crate::lang::python::device_string_index(s.value.to_str())
                            .map(|i| (i, true))
                    }
                    (Some(Expr::StringLiteral(s)), Some(i)) if s.value.to_str() == "cuda" => {
                        crate::lang::python::int_literal(i).map(|i| (i, true))
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some((index, string)) = device {
            let r = value.range();
            let start = r.start().to_usize();
            out.push((
                id.to_string(),
                DeviceConst {
                    line: crate::base::line_index::line_of_offset(text, start),
                    index,
                    string,
                    text: text[start..r.end().to_usize()].to_string(),
                },
            ));
        }
    }
    out
}

/// A decorator that only wraps what it decorates (`@dataclass`, `@lru_cache()`,
/// `@torch.no_grad()`): the function still runs only when something calls it.
fn is_plain_decorator(expr: &Expr) -> bool {
    let callee = match expr {
        Expr::Call(c) => c.func.as_ref(),
        other => other,
    };
    let name = match callee {
        Expr::Name(n) => n.id.as_str(),
        // A command-line entry point made of the function (`@click.command()`,
        // `@click.option(…)`, `@hydra.main(…)`) runs when it is called, like the function;
        // `@group.command()` registers it in a group that runs it.
        Expr::Attribute(a) if matches!(a.value.as_ref(), Expr::Name(m) if matches!(m.id.as_str(), "click" | "hydra")) =>
        {
            return true;
        }
        Expr::Attribute(a) => a.attr.as_str(),
        _ => return false,
    };
    matches!(
        name,
        "hydra_main"
            | "dataclass"
            | "property"
            | "staticmethod"
            | "classmethod"
            | "cache"
            | "lru_cache"
            | "cached_property"
            | "wraps"
            | "no_grad"
            | "inference_mode"
            | "enable_grad"
            | "jit"
            | "njit"
            | "overload"
            | "abstractmethod"
            | "total_ordering"
            | "contextmanager"
            | "asynccontextmanager"
            | "singledispatch"
            | "deprecated"
    )
}

/// A piece of a module's code: a statement, or the condition of an `if` whose branches are
/// pieces of their own.
enum Piece<'a> {
    Stmt(&'a Stmt),
    Expr(&'a Expr),
}

/// The module's statements, with the `if` (not the `__main__` guard) and `try` statements
/// opened: their conditions and the statements of their branches, in turn.
fn module_pieces(body: &[Stmt]) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut stack: Vec<&Stmt> = body.iter().rev().collect();
    while let Some(stmt) = stack.pop() {
        match stmt {
            Stmt::If(i) if !is_main_guard(stmt) => {
                out.push(Piece::Expr(&i.test));
                let mut inner: Vec<&Stmt> = i.body.iter().collect();
                for c in &i.elif_else_clauses {
                    if let Some(test) = &c.test {
                        out.push(Piece::Expr(test));
                    }
                    inner.extend(c.body.iter());
                }
                stack.extend(inner.into_iter().rev());
            }
            Stmt::Try(t) => {
                let mut inner: Vec<&Stmt> = t.body.iter().collect();
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(ty) = &h.type_ {
                        out.push(Piece::Expr(ty));
                    }
                    inner.extend(h.body.iter());
                }
                inner.extend(t.orelse.iter());
                inner.extend(t.finalbody.iter());
                stack.extend(inner.into_iter().rev());
            }
            _ => out.push(Piece::Stmt(stmt)),
        }
    }
    out
}

/// [`refs_of`] for an expression (the condition of a module-level `if`).
fn refs_of_expr(expr: &Expr) -> Vec<String> {
    let mut refs = Refs::default();
    ruff_python_ast::visitor::Visitor::visit_expr(&mut refs, expr);
    refs.run_sorted()
}

/// The names (dotted: `torch.cuda.set_device`) a piece of code reads: apart, those it reads
/// only as a type, which run nothing of what they name ([`Refs::visit_typed`]).
#[derive(Default)]
struct Refs {
    run: HashSet<String>,
    typed: HashSet<String>,
    /// Inside a type: an annotation, `isinstance`'s class, a typing subscript, `except C`.
    in_type: bool,
    /// Reading a module-level type alias's value ([`type_alias`]): the slice of a typing
    /// subscript is a type. Elsewhere it is read as code: `tyro.cli(Union[A, B])` builds them.
    alias: bool,
    /// Statements left out: the branches a function runs only when passed an argument
    /// ([`guards`]).
    skip: Vec<ruff_text_size::TextRange>,
    /// The names called (`tf.constant` in `tf.constant(1)`), where asked for ([`calls_in`]): a
    /// name only read (`tf.float32`, a function handed to `inspect.signature`) runs nothing.
    called: Option<HashSet<String>>,
}

/// Generic types whose subscript names types (`List[C]`, `typing.Optional[C]`): the names
/// in the brackets are read, nothing of them runs.
const TYPING_GENERICS: &[&str] = &[
    "List",
    "Dict",
    "Set",
    "FrozenSet",
    "Tuple",
    "Type",
    "Optional",
    "Union",
    "Sequence",
    "MutableSequence",
    "Mapping",
    "MutableMapping",
    "Iterable",
    "Iterator",
    "Collection",
    "Callable",
    "Generator",
    "AsyncIterator",
    "AsyncIterable",
    "AsyncGenerator",
    "Awaitable",
    "Coroutine",
    "ClassVar",
    "Final",
    "Literal",
    "Deque",
    "DefaultDict",
    "OrderedDict",
    "Counter",
    "AbstractSet",
    "Container",
    "Reversible",
    "TypeGuard",
    "list",
    "dict",
    "set",
    "frozenset",
    "tuple",
    "type",
];

impl<'a> ruff_python_ast::visitor::Visitor<'a> for Refs {
    /// A parameter's annotation (`accelerator: Accelerator | None = None`) and a function's
    /// return annotation name types: nothing runs them when the function does. A class
    /// field's annotation is read (a config parser builds the class it names).
    fn visit_parameter(&mut self, _: &'a ruff_python_ast::Parameter) {}

    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if !self.skip.is_empty() && self.skip.contains(&stmt.range()) {
            return;
        }
        match stmt {
            Stmt::FunctionDef(f) => {
                for decorator in &f.decorator_list {
                    self.visit_decorator(decorator);
                }
                self.visit_parameters(&f.parameters);
                self.visit_body(&f.body);
            }
            Stmt::ClassDef(c) => {
                for decorator in &c.decorator_list {
                    self.visit_decorator(decorator);
                }
                if let Some(arguments) = &c.arguments {
                    self.visit_arguments(arguments);
                }
                for s in &c.body {
                    self.visit_class_stmt(s);
                }
            }
            // A variable's annotation outside a class body names a type; nothing runs it.
            Stmt::AnnAssign(a) => {
                self.visit_expr(&a.target);
                self.visit_typed(&a.annotation);
                if let Some(value) = &a.value {
                    self.visit_expr(value);
                }
            }
            _ => ruff_python_ast::visitor::walk_stmt(self, stmt),
        }
    }

    /// `except C:` catches; nothing of `C` runs.
    fn visit_except_handler(&mut self, handler: &'a ruff_python_ast::ExceptHandler) {
        let ruff_python_ast::ExceptHandler::ExceptHandler(h) = handler;
        if let Some(ty) = &h.type_ {
            self.visit_typed(ty);
        }
        self.visit_body(&h.body);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            // A call that names the CPU as its device (`KPipeline(device="cpu")`,
            // `load(use_gpu=False)`) runs nothing on a card through the callee: the caller
            // chose. Its arguments are still read.
            Expr::Call(call) if asks_for_cpu(&call.arguments.keywords) => {
                let in_type = std::mem::replace(&mut self.in_type, false);
                for arg in &call.arguments.args {
                    self.visit_expr(arg);
                }
                for kw in &call.arguments.keywords {
                    self.visit_expr(&kw.value);
                }
                self.in_type = in_type;
            }
            // `isinstance(x, C)`, `issubclass(k, (A, B))`: the classes are compared with, not run.
            Expr::Call(call)
                if matches!(call.func.as_ref(), Expr::Name(f) if matches!(f.id.as_str(), "isinstance" | "issubclass"))
                    && call.arguments.args.len() == 2
                    && call.arguments.keywords.is_empty() =>
            {
                let in_type = std::mem::replace(&mut self.in_type, false);
                self.visit_expr(&call.func);
                self.visit_expr(&call.arguments.args[0]);
                self.visit_typed(&call.arguments.args[1]);
                self.in_type = in_type;
            }
            // A call in a type (`Annotated[C, Depends(f)]`) runs.
            Expr::Call(_) if self.in_type => {
                self.in_type = false;
                ruff_python_ast::visitor::walk_expr(self, expr);
                self.in_type = true;
            }
            // `List[C]`, `Optional["C"]` bound to a name at module level: a type made of
            // types, whose classes run where the alias is read as code ([`type_alias`]).
            Expr::Subscript(s)
                if self.alias && s.ctx.is_load() && typing_generic(&s.value).is_some() =>
            {
                self.visit_expr(&s.value);
                let annotated = typing_generic(&s.value) == Some("Annotated");
                match s.slice.as_ref() {
                    // `Annotated[C, meta…]`: the metadata is values, read as written.
                    Expr::Tuple(t) if annotated => {
                        for (n, e) in t.elts.iter().enumerate() {
                            if n == 0 {
                                self.visit_typed(e);
                            } else {
                                let in_type = std::mem::replace(&mut self.in_type, false);
                                self.visit_expr(e);
                                self.in_type = in_type;
                            }
                        }
                    }
                    slice => self.visit_typed(slice),
                }
            }
            // `x is C`, `type(x) == C`, `kind != mod.Mode`: a name compared is not run. An
            // attribute in lower case may be a property, whose getter runs: read as code.
            Expr::Compare(c)
                if c.ops.iter().all(|op| {
                    matches!(
                        op,
                        ruff_python_ast::CmpOp::Is
                            | ruff_python_ast::CmpOp::IsNot
                            | ruff_python_ast::CmpOp::Eq
                            | ruff_python_ast::CmpOp::NotEq
                    )
                }) =>
            {
                for operand in std::iter::once(c.left.as_ref()).chain(c.comparators.iter()) {
                    let named = match operand {
                        Expr::Name(_) => true,
                        Expr::Attribute(a) => a.attr.starts_with(|c: char| c.is_ascii_uppercase()),
                        _ => false,
                    };
                    if named {
                        self.visit_typed(operand);
                    } else {
                        self.visit_expr(operand);
                    }
                }
            }
            Expr::Call(call) => {
                if let Some(called) = &mut self.called {
                    called.extend(dotted(&call.func));
                }
                ruff_python_ast::visitor::walk_expr(self, expr);
            }
            Expr::Name(n) if n.ctx.is_load() => {
                self.read(n.id.to_string());
            }
            Expr::Attribute(_) => {
                let mut parts = Vec::new();
                let mut at = expr;
                while let Expr::Attribute(a) = at {
                    parts.push(a.attr.as_str());
                    at = &a.value;
                }
                if let Expr::Name(n) = at {
                    parts.push(n.id.as_str());
                    parts.reverse();
                    self.read(parts.join("."));
                } else {
                    self.visit_expr(at);
                }
            }
            _ => ruff_python_ast::visitor::walk_expr(self, expr),
        }
    }
}

/// A mapping's views (`LANGUAGES.items()`): calling one reads the mapping, it runs nothing.
const MAPPING_VIEWS: &[&str] = &["items", "keys", "values"];

/// A dotted chain rooted at a name (`tf.train.load_checkpoint`), as written.
fn dotted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => dotted(&a.value).map(|v| format!("{v}.{}", a.attr)),
        _ => None,
    }
}

/// The names a piece of code calls ([`Refs::called`]), as `visit` walks it.
fn calls_in(visit: impl FnOnce(&mut Refs)) -> Vec<String> {
    let mut refs = Refs {
        called: Some(HashSet::default()),
        ..Refs::default()
    };
    visit(&mut refs);
    refs.called.unwrap_or_default().into_iter().collect()
}

/// The generic a subscript's value names (`List`, `typing.Optional`, `Annotated`), if one.
fn typing_generic(value: &Expr) -> Option<&str> {
    let name = match value {
        Expr::Name(n) => n.id.as_str(),
        Expr::Attribute(a) => a.attr.as_str(),
        _ => return None,
    };
    (name == "Annotated" || TYPING_GENERICS.contains(&name)).then_some(name)
}

impl Refs {
    fn read(&mut self, name: String) {
        if self.in_type {
            self.typed.insert(name);
        } else {
            self.run.insert(name);
        }
    }

    /// `expr` read as a type: the names in it run nothing.
    fn visit_typed(&mut self, expr: &Expr) {
        let in_type = std::mem::replace(&mut self.in_type, true);
        ruff_python_ast::visitor::Visitor::visit_expr(self, expr);
        self.in_type = in_type;
    }

    /// A statement of a class body: a field's annotation is read as code (a config parser,
    /// a dataclass loader, builds the class it names).
    fn visit_class_stmt(&mut self, stmt: &Stmt) {
        use ruff_python_ast::visitor::Visitor;
        match stmt {
            Stmt::AnnAssign(a) => {
                self.visit_expr(&a.target);
                let in_type = std::mem::replace(&mut self.in_type, false);
                walk_field_annotation(self, &a.annotation);
                self.in_type = in_type;
                if let Some(value) = &a.value {
                    self.visit_expr(value);
                }
            }
            _ => self.visit_stmt(stmt),
        }
    }

    /// Every name read, as code or as a type, each once, sorted: what GPU use is judged on.
    fn sorted(self) -> Vec<String> {
        let mut out: Vec<String> = self.run.into_iter().chain(self.typed).collect();
        out.sort();
        out.dedup();
        out
    }

    /// The names read as code, each once, sorted: what running the code runs.
    fn run_sorted(self) -> Vec<String> {
        let mut out: Vec<String> = self.run.into_iter().collect();
        out.sort();
        out
    }

    /// Both: (what runs, every name read).
    fn split(self) -> (Vec<String>, Vec<String>) {
        let mut all: Vec<String> = self.typed.iter().cloned().collect();
        let mut run: Vec<String> = self.run.into_iter().collect();
        run.sort();
        all.extend(run.iter().cloned());
        all.sort();
        all.dedup();
        (run, all)
    }
}

/// A class field's annotation as code, its subscripts too (`models: List[Model]`: a config
/// parser builds `Model`).
fn walk_field_annotation(refs: &mut Refs, annotation: &Expr) {
    use ruff_python_ast::visitor::Visitor;
    match annotation {
        Expr::Subscript(s) => {
            refs.visit_expr(&s.value);
            walk_field_annotation(refs, &s.slice);
        }
        Expr::Tuple(t) => {
            for e in &t.elts {
                walk_field_annotation(refs, e);
            }
        }
        Expr::BinOp(b) => {
            walk_field_annotation(refs, &b.left);
            walk_field_annotation(refs, &b.right);
        }
        other => refs.visit_expr(other),
    }
}

/// The names a statement reads (plain names and dotted chains rooted at a name:
/// `helper.load_model`), each once, sorted: those read only as types too.
fn refs_of(stmt: &Stmt) -> Vec<String> {
    let mut refs = Refs::default();
    ruff_python_ast::visitor::Visitor::visit_stmt(&mut refs, stmt);
    refs.sorted()
}

/// [`refs_of`], and apart the names the statement reads as code (not only as types): what
/// running it runs.
fn reads_of(stmt: &Stmt) -> (Vec<String>, Vec<String>) {
    let mut refs = Refs {
        alias: !type_alias(stmt).is_empty(),
        ..Refs::default()
    };
    ruff_python_ast::visitor::Visitor::visit_stmt(&mut refs, stmt);
    refs.split()
}

/// The names a module-level statement binds to a type made of types (`BoxList = List[Boxes]`,
/// `Commands = Union[Annotated[A, …], …]`): the classes it names run where one of those names
/// is read as code (`tyro.cli(Commands)` builds them), as a unit of its own, not at import nor
/// where the alias only annotates.
fn type_alias(stmt: &Stmt) -> Vec<&str> {
    let (targets, value): (Vec<&Expr>, &Expr) = match stmt {
        Stmt::Assign(a) => (a.targets.iter().collect(), &a.value),
        Stmt::AnnAssign(a) => match &a.value {
            Some(value) => (vec![a.target.as_ref()], value),
            None => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    let is_type = matches!(value, Expr::Subscript(s) if typing_generic(&s.value).is_some());
    if !is_type {
        return Vec::new();
    }
    targets
        .into_iter()
        .map(|t| match t {
            Expr::Name(n) => Some(n.id.as_str()),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}

/// Keywords that choose the CPU: `device="cpu"` (or `"cpu:0"`, `torch.device("cpu")`, `-1`, the
/// CPU of Hugging Face pipelines), or a GPU switch set to `False` (`use_gpu=False`).
fn asks_for_cpu(keywords: &[ruff_python_ast::Keyword]) -> bool {
    let cpu_string = |e: &Expr| {
        matches!(e, Expr::StringLiteral(s) if {
            let v = s.value.to_str().to_ascii_lowercase();
            v == "cpu" || v.starts_with("cpu:")
        })
    };
    keywords.iter().any(|kw| {
        let Some(arg) = kw.arg.as_ref().map(|a| a.as_str()) else {
            return false;
        };
        let value = &kw.value;
        match arg {
            "device" => {
                cpu_string(value)
                    || matches!(value, Expr::Call(c)
                        if matches!(c.func.as_ref(), Expr::Attribute(a) if a.attr.as_str() == "device")
                            && c.arguments.args.first().is_some_and(cpu_string))
                    || matches!(value, Expr::UnaryOp(u)
                        if u.op == ruff_python_ast::UnaryOp::USub
                            && matches!(u.operand.as_ref(), Expr::NumberLiteral(n)
                                if matches!(&n.value, ruff_python_ast::Number::Int(i) if i.as_u64() == Some(1))))
            }
            "use_gpu" | "use_cuda" | "gpu" | "cuda" => {
                matches!(value, Expr::BooleanLiteral(b) if !b.value)
            }
            _ => false,
        }
    })
}

/// An assignment whose value only names things (`Model = DetectionModel`, `ALL = [A, B]`, a
/// dict of them, literals beside; see [`data`]): nothing of what it names runs.
fn binds_only(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Assign(a) => data(&a.value),
        Stmt::AnnAssign(a) => a.value.as_deref().is_some_and(data),
        _ => false,
    }
}

/// `if __name__ == "__main__":` at module level.
fn is_main_guard(stmt: &Stmt) -> bool {
    let Stmt::If(s) = stmt else { return false };
    let Expr::Compare(c) = s.test.as_ref() else {
        return false;
    };
    let is_name = |e: &Expr| matches!(e, Expr::Name(n) if n.id.as_str() == "__name__");
    let is_main = |e: &Expr| matches!(e, Expr::StringLiteral(l) if l.value.to_str() == "__main__");
    c.comparators.len() == 1
        && ((is_name(&c.left) && is_main(&c.comparators[0]))
            || (is_main(&c.left) && is_name(&c.comparators[0])))
}

/// Every import that can run (not under `if TYPE_CHECKING:`), at any depth; and apart, those
/// under `if TYPE_CHECKING:`.
struct Imports<'t> {
    found: Vec<RawImport>,
    typing: Vec<RawImport>,
    unit: Option<String>,
    lines: crate::base::line_index::LineIndex<'t>,
}

impl<'a> StatementVisitor<'a> for Imports<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        // Only imports need their line: a file's every statement passes here.
        let line = |v: &Self| v.lines.line(stmt.start().to_usize());
        match stmt {
            Stmt::Import(i) => {
                let line = line(self);
                for alias in &i.names {
                    // `import a.b` binds `a`; `import a.b as c` binds `c` to `a.b`.
                    let local = match &alias.asname {
                        Some(n) => n.to_string(),
                        None if !alias.name.contains('.') => alias.name.to_string(),
                        None => String::new(),
                    };
                    self.found.push(RawImport {
                        unit: self.unit.clone(),
                        line,
                        level: 0,
                        module: Some(alias.name.to_string()),
                        names: Vec::new(),
                        locals: vec![local],
                    });
                }
            }
            Stmt::ImportFrom(f) => self.found.push(RawImport {
                unit: self.unit.clone(),
                line: line(self),
                level: f.level,
                module: f.module.as_ref().map(|m| m.to_string()),
                names: f.names.iter().map(|a| a.name.to_string()).collect(),
                locals: f
                    .names
                    .iter()
                    .map(|a| a.asname.as_ref().unwrap_or(&a.name).to_string())
                    .collect(),
            }),
            Stmt::If(s) if is_type_checking(&s.test) => {
                // What a type checker is told a name is: where a lazy module (`_LazyModule`,
                // a PEP 562 `__getattr__`) fetches it from when it is read.
                let runs = std::mem::take(&mut self.found);
                self.visit_body(&s.body);
                let typing = std::mem::replace(&mut self.found, runs);
                self.typing.extend(typing);
                for clause in &s.elif_else_clauses {
                    self.visit_body(&clause.body);
                }
            }
            _ => walk_stmt(self, stmt),
        }
    }
}

/// Modules loaded by name at run time: `importlib.import_module("pkg.mod")` (the module),
/// `importlib.import_module(f"pkg.models.{name}")` (every module under the prefix, also written
/// `"pkg.models." + name` or `"pkg.models.{}".format(name)`), and the folders a file scans
/// (`os.listdir("plugins")`, `glob.glob("extensions/*/script.py")`) when it also loads code by
/// name or path (`import_module`, `spec_from_file_location`, `exec_module`, `run_path`): every
/// file under such a folder (`dir:` entries, relative to the file's directory or the root).
#[derive(Default)]
struct DynamicImports {
    loaded: Vec<String>,
    scanned: Vec<String>,
    /// The loads and scans made by code that runs at import (outside every function), each
    /// as `loaded` or `scanned` holds it; the others happen when a function runs.
    at_import: HashSet<String>,
    loads_code: bool,
    /// The functions around the visit: each one's name and parameters.
    functions: Vec<(String, Vec<String>)>,
    /// A prefix completed by a parameter of a function of the file (`def _lazy_import(name):
    /// import_module(f"pkg.{name}")`): the prefix, the function, the parameter and its position.
    by_parameter: Vec<(String, String, String, usize, Option<String>)>,
    /// The top-level function or class the visit is in (`None`: module-level code).
    unit: Option<String>,
    /// For each load a function makes, the top-level functions and classes that make it.
    units: HashMap<String, Vec<String>>,
    /// Calls of the file's private functions (`_name`) by name: the callee, its positional
    /// arguments and its keywords, each a string literal or not.
    calls: Vec<NamedCall>,
    /// The call a statement makes and drops the result of (`import_module(…)` alone on its
    /// line), where the visit is in one.
    dropped: Option<ruff_text_size::TextRange>,
    /// The loads visited now keep the module they return.
    keeps: bool,
    /// The entries (and parameter-completed prefixes) some load keeps the module of.
    kept: HashSet<String>,
}

/// A call of a function by name: the callee, its positional arguments and its keywords (each
/// a string literal, or `None`).
type NamedCall = (String, Vec<Option<String>>, Vec<(String, Option<String>)>);

impl DynamicImports {
    /// The computed name's variable part, when it is a parameter of the function around it.
    fn parameter_of(&self, expr: &Expr) -> Option<(String, String, usize)> {
        let Expr::Name(n) = expr else { return None };
        let (function, params) = self.functions.last()?;
        let at = params.iter().position(|p| p == n.id.as_str())?;
        Some((function.clone(), params[at].clone(), at))
    }

    /// Record a prefix a name completes: when that name is a parameter of the file's function,
    /// what its calls pass decides the modules (see [`Self::entries`]).
    fn prefix(&mut self, prefix: String, rest: Option<&Expr>) {
        match rest.and_then(|e| self.parameter_of(e)) {
            Some((function, param, at)) => {
                if self.keeps {
                    self.kept.insert(prefix.clone());
                }
                let unit = self.unit.clone();
                self.by_parameter.push((prefix, function, param, at, unit));
            }
            None => self.load(prefix),
        }
    }

    fn load(&mut self, entry: String) {
        if self.keeps {
            self.kept.insert(entry.clone());
        }
        if self.functions.is_empty() {
            self.at_import.insert(entry.clone());
        } else if let Some(unit) = &self.unit {
            self.units
                .entry(entry.clone())
                .or_default()
                .push(unit.clone());
        }
        self.loaded.push(entry);
    }

    /// The modules the file loads by name (see [`Self::entries`]), each with whether only a
    /// function of the file loads it (`false`: code at import may), the functions that do,
    /// and whether every load drops the module. A loader helper's loads (`def load(name):
    /// import_module("pkg." + name)`) happen in the helper, whoever calls it.
    fn entries_placed(mut self) -> (Vec<String>, Vec<bool>, Vec<Vec<String>>, Vec<bool>) {
        let at_import = std::mem::take(&mut self.at_import);
        let (entries, units, kept) = self.entries();
        // A folder scanned and loaded by path hands its modules on.
        let effect = entries
            .iter()
            .map(|e| !e.starts_with("dir:") && !kept.contains(e))
            .collect();
        let in_function = entries.iter().map(|e| !at_import.contains(e)).collect();
        let units = entries
            .iter()
            .map(|e| {
                let mut names = units.get(e).cloned().unwrap_or_default();
                names.sort();
                names.dedup();
                names
            })
            .collect();
        (entries, in_function, units, effect)
    }

    /// The entries, for each load a function makes the top-level functions and classes that
    /// make it, and the entries some load keeps the module of.
    #[allow(clippy::type_complexity)]
    fn entries(mut self) -> (Vec<String>, HashMap<String, Vec<String>>, HashSet<String>) {
        // A private loader helper (`_name`: by convention called only in its module) every
        // call of which names its module with a literal loads those modules only (whisperx's
        // `_lazy_import("asr")`); a public one (others may call it), one called with anything
        // else, or one never called here loads any module under its prefix.
        for (prefix, function, param, at, unit) in std::mem::take(&mut self.by_parameter) {
            let kept = self.kept.contains(&prefix);
            let produced: Vec<String> = if !function.starts_with('_') {
                vec![prefix]
            } else {
                let passed: Vec<Option<&String>> = self
                    .calls
                    .iter()
                    .filter(|(callee, _, _)| *callee == function)
                    .map(|(_, args, keywords)| match args.get(at) {
                        Some(arg) => arg.as_ref(),
                        None => keywords
                            .iter()
                            .find(|(k, _)| *k == param)
                            .and_then(|(_, v)| v.as_ref()),
                    })
                    .collect();
                if passed.is_empty() || passed.iter().any(Option::is_none) {
                    vec![prefix]
                } else {
                    passed
                        .into_iter()
                        .flatten()
                        .map(|m| format!("={prefix}{m}"))
                        .collect()
                }
            };
            if kept {
                self.kept.extend(produced.iter().cloned());
            }
            // The loads happen in the helper, whoever calls it.
            if let Some(unit) = &unit {
                for entry in &produced {
                    self.units
                        .entry(entry.clone())
                        .or_default()
                        .push(unit.clone());
                }
            }
            self.loaded.extend(produced);
        }
        if self.loads_code {
            self.loaded
                .extend(self.scanned.into_iter().map(|d| format!("dir:{d}")));
        }
        self.loaded.sort();
        self.loaded.dedup();
        (self.loaded, self.units, self.kept)
    }
}

/// The paths a module-level `_base_ = "x.py"` / `_base_ = ["a.py", "b.py"]` names: the configs
/// (mmengine's, mmcv's) this one inherits, loaded by path with it.
fn config_bases(stmt: &Stmt) -> Option<Vec<String>> {
    let Stmt::Assign(a) = stmt else { return None };
    let [Expr::Name(n)] = a.targets.as_slice() else {
        return None;
    };
    if n.id.as_str() != "_base_" {
        return None;
    }
    let literal = |e: &Expr| match e {
        Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
        _ => None,
    };
    let items: Vec<String> = match a.value.as_ref() {
        Expr::List(l) => l.elts.iter().filter_map(literal).collect(),
        Expr::Tuple(t) => t.elts.iter().filter_map(literal).collect(),
        e => literal(e).into_iter().collect(),
    };
    Some(items.into_iter().filter(|p| p.ends_with(".py")).collect())
}

/// The Python file a call runs by a literal path: `runpy.run_path("x.py")`,
/// `spec_from_file_location(name, "x.py")`, `SourceFileLoader(name, "x.py")`,
/// `imp.load_source(name, "x.py")`, `Config.fromfile("x.py")`, `exec(open("x.py").read())`.
fn loaded_path(call: &ruff_python_ast::ExprCall, callee: &str) -> Option<String> {
    let literal = |e: &Expr| match e {
        Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
        _ => None,
    };
    let arg = |at: usize, keyword: &str| {
        call.arguments.args.get(at).or_else(|| {
            (call.arguments.keywords.iter())
                .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == keyword))
                .map(|k| &k.value)
        })
    };
    let path = match callee {
        "run_path" => literal(arg(0, "path_name")?),
        "fromfile" => literal(arg(0, "filename")?),
        "spec_from_file_location" => literal(arg(1, "location")?),
        "SourceFileLoader" | "load_source" => literal(arg(1, "path")?),
        "exec" => {
            // `exec(open("x.py").read())`
            let Expr::Call(read) = call.arguments.args.first()? else {
                return None;
            };
            let Expr::Attribute(a) = read.func.as_ref() else {
                return None;
            };
            let Expr::Call(open) = a.value.as_ref() else {
                return None;
            };
            let opens = matches!(open.func.as_ref(), Expr::Name(n) if n.id.as_str() == "open");
            if a.attr.as_str() != "read" || !opens {
                return None;
            }
            literal(open.arguments.args.first()?)
        }
        _ => None,
    }?;
    path.ends_with(".py").then_some(path)
}

/// Why a config of a `configs/` tree is a library when no file of the tree names it.
const CONFIG_LOADED: &str = "a config that inherits others (`_base_`) under `configs/`, loaded by path by the program its command line names it to (`Config.fromfile(args.config)`)";

/// The literal folder a scan names: the string literals of its argument (and receiver, for
/// `Path("plugins").glob(…)`), joined, up to the first wildcard.
fn scanned_folder(call: &ruff_python_ast::ExprCall) -> Option<String> {
    #[derive(Default)]
    struct Literals(Vec<String>);
    impl<'a> ruff_python_ast::visitor::Visitor<'a> for Literals {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::StringLiteral(s) = expr {
                self.0.push(s.value.to_str().to_string());
            }
            ruff_python_ast::visitor::walk_expr(self, expr);
        }
    }
    let mut lits = Literals::default();
    if let Expr::Attribute(a) = call.func.as_ref() {
        ruff_python_ast::visitor::Visitor::visit_expr(&mut lits, &a.value);
    }
    if let Some(first) = call.arguments.args.first() {
        ruff_python_ast::visitor::Visitor::visit_expr(&mut lits, first);
    }
    let mut parts = Vec::new();
    'outer: for lit in &lits.0 {
        for part in lit.split('/') {
            if part.contains(['*', '?', '[']) {
                break 'outer;
            }
            if !part.is_empty() && part != "." {
                parts.push(part.to_string());
            }
        }
    }
    // A file name (`x.py`) is no folder.
    if parts.last().is_some_and(|p| p.contains('.')) {
        parts.pop();
    }
    (!parts.is_empty() && parts.iter().all(|p| p != "..")).then(|| parts.join("/"))
}

impl<'a> ruff_python_ast::visitor::Visitor<'a> for DynamicImports {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::FunctionDef(def) = stmt {
            let params = def
                .parameters
                .posonlyargs
                .iter()
                .chain(&def.parameters.args)
                .map(|p| p.parameter.name.to_string())
                .collect();
            self.functions.push((def.name.to_string(), params));
            ruff_python_ast::visitor::walk_stmt(self, stmt);
            self.functions.pop();
        } else if let Stmt::Expr(e) = stmt {
            self.dropped = matches!(e.value.as_ref(), Expr::Call(_)).then(|| e.value.range());
            ruff_python_ast::visitor::walk_stmt(self, stmt);
        } else if let Some(bases) = config_bases(stmt).filter(|_| self.functions.is_empty()) {
            // A config's bases run when it is loaded, in the loader's process.
            self.keeps = false;
            for base in bases {
                self.load(format!("path:{base}"));
            }
            ruff_python_ast::visitor::walk_stmt(self, stmt);
        } else {
            ruff_python_ast::visitor::walk_stmt(self, stmt);
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            // Only a private helper's calls can narrow its loads (see `entries`): no other
            // call is kept.
            let private = match call.func.as_ref() {
                Expr::Name(n) if n.id.starts_with('_') => Some(n),
                _ => None,
            };
            if let Some(n) = private {
                let literal = |e: &Expr| match e {
                    Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
                    _ => None,
                };
                let args = call.arguments.args.iter().map(literal).collect();
                let keywords = call
                    .arguments
                    .keywords
                    .iter()
                    .filter_map(|k| Some((k.arg.as_ref()?.to_string(), literal(&k.value))))
                    .collect();
                self.calls.push((n.id.to_string(), args, keywords));
            }
            let callee = match call.func.as_ref() {
                Expr::Attribute(a) => a.attr.as_str(),
                Expr::Name(n) => n.id.as_str(),
                _ => "",
            };
            let loads = matches!(callee, "import_module" | "__import__");
            if loads {
                self.keeps = self.dropped != Some(call.range());
            }
            if loads
                || matches!(
                    callee,
                    "spec_from_file_location"
                        | "exec_module"
                        | "load_module"
                        | "load_source"
                        | "run_path"
                        | "SourceFileLoader"
                )
            {
                self.loads_code = true;
            }
            if matches!(
                callee,
                "listdir" | "scandir" | "walk" | "glob" | "iglob" | "rglob" | "iterdir"
            ) {
                if let Some(folder) = scanned_folder(call) {
                    if self.functions.is_empty() {
                        self.at_import.insert(format!("dir:{folder}"));
                    } else if let Some(unit) = &self.unit {
                        self.units
                            .entry(format!("dir:{folder}"))
                            .or_default()
                            .push(unit.clone());
                    }
                    self.scanned.push(folder);
                }
            }
            // `"pkg.models." + name`, `"pkg.models.{}".format(name)`; the expression that
            // completes the name, when it is the whole rest of it.
            let prefix = match call.arguments.args.first() {
                Some(Expr::BinOp(b)) if loads => match b.left.as_ref() {
                    Expr::StringLiteral(s) => {
                        Some((s.value.to_str().to_string(), Some(b.right.as_ref())))
                    }
                    _ => None,
                },
                Some(Expr::Call(c)) if loads => match c.func.as_ref() {
                    Expr::Attribute(a) if a.attr.as_str() == "format" => match a.value.as_ref() {
                        Expr::StringLiteral(s) => {
                            let text = s.value.to_str();
                            let whole = text.ends_with("{}") && text.matches('{').count() == 1;
                            let rest = c.arguments.args.first().filter(|_| whole);
                            text.split('{').next().map(|p| (p.to_string(), rest))
                        }
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            };
            if let Some((prefix, rest)) = prefix.filter(|(p, _)| p.ends_with('.') && p.len() > 1) {
                self.prefix(prefix, rest);
            }
            if let Some(path) = loaded_path(call, callee) {
                self.keeps = false;
                self.load(format!("path:{path}"));
            }
            match call.arguments.args.first() {
                Some(Expr::StringLiteral(s)) if loads => {
                    self.load(format!("={}", s.value.to_str()));
                }
                Some(Expr::FString(f)) if loads => {
                    use ruff_python_ast::InterpolatedStringElement as Element;
                    let prefix: String =
                        crate::lang::python::facts::fstring_head(f).unwrap_or_default();
                    // `f"pkg.{name}"`: one f-string, its literal prefix and one interpolation.
                    let rest = match f.value.iter().collect::<Vec<_>>().as_slice() {
                        [ruff_python_ast::FStringPart::FString(fs)] => {
                            match fs.elements.iter().collect::<Vec<_>>().as_slice() {
                                [Element::Literal(_), Element::Interpolation(i)]
                                    if i.format_spec.is_none()
                                        && i.conversion
                                            == ruff_python_ast::ConversionFlag::None =>
                                {
                                    Some(i.expression.as_ref())
                                }
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                    if prefix.ends_with('.') && prefix.len() > 1 {
                        self.prefix(prefix, rest);
                    }
                }
                _ => {}
            }
        }
        ruff_python_ast::visitor::walk_expr(self, expr);
    }
}

fn is_type_checking(test: &Expr) -> bool {
    match test {
        Expr::Name(n) => n.id.as_str() == "TYPE_CHECKING",
        Expr::Attribute(a) => a.attr.as_str() == "TYPE_CHECKING",
        _ => false,
    }
}

/// The dotted module name of `rel`, the directory its imports are resolved from, and whether
/// it is in a package (its directory has an `__init__.py`).
fn module_name(root: &Path, rel: &str, packages: &PackageDirs) -> (String, String, bool) {
    let path = Path::new(rel);
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut parts = vec![];
    if stem != "__init__" {
        parts.push(stem);
    }
    let mut dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut in_package = false;
    while !dir.as_os_str().is_empty() && packages.is_package(root, &dir) {
        in_package = true;
        parts.push(
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        dir = dir.parent().map(Path::to_path_buf).unwrap_or_default();
    }
    parts.reverse();
    (parts.join("."), slash(&dir), in_package)
}

/// Which directories hold an `__init__.py`, each asked of the file system once per run.
#[derive(Default)]
struct PackageDirs(std::sync::Mutex<HashMap<std::path::PathBuf, bool>>);

impl PackageDirs {
    fn is_package(&self, root: &Path, dir: &Path) -> bool {
        if let Some(&known) = self
            .0
            .lock()
            .ok()
            .and_then(|m| m.get(dir).copied())
            .as_ref()
        {
            return known;
        }
        let found = root.join(dir).join("__init__.py").is_file();
        if let Ok(mut m) = self.0.lock() {
            m.insert(dir.to_path_buf(), found);
        }
        found
    }
}

fn slash(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

/// The directory of a path relative to the root (`""` at the root).
fn dir_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

fn under(rel: &str, dir: &str) -> bool {
    rel.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

/// The directory a test suite runs from, for a test file with no `conftest.py` above it: the
/// nearest directory above it named `tests`, `test` or `testing`, else its own.
fn test_suite_dir(rel: &str) -> &str {
    let dir = dir_of(rel);
    let mut at = dir;
    loop {
        if matches!(at.rsplit('/').next(), Some("tests" | "test" | "testing")) {
            return at;
        }
        match at.rsplit_once('/') {
            Some((up, _)) => at = up,
            None => return dir,
        }
    }
}

fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let stem = name.strip_suffix(".py").unwrap_or(name);
    stem.starts_with("test_") || stem.ends_with("_test") || stem == "conftest"
}

/// Code of the application, not of a test suite: no test file, nothing under a `tests`,
/// `test` or `testing` folder.
fn is_application(rel: &str) -> bool {
    !is_test_file(rel)
        && !rel
            .split('/')
            .rev()
            .skip(1)
            .any(|d| matches!(d, "tests" | "test" | "testing"))
}

/// Resolve the imports, find the entry points and the programs each module runs in.
fn link(
    files: Vec<PyFile>,
    names: &NameTable,
    projects: &Projects,
    hosted: &[(String, String)],
    launches: &[(String, launch::Launch)],
    policy: &crate::model::policy::Policy,
) -> ProjectIndex {
    let by_rel: HashMap<&str, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.rel.as_str(), i))
        .collect();
    // The installable project each file belongs to (the deepest that holds it).
    let project_dirs: HashSet<&str> = projects.dirs.iter().map(String::as_str).collect();
    let project_of: Vec<Option<&str>> = files
        .iter()
        .map(|f| {
            Path::new(&f.rel)
                .ancestors()
                .skip(1)
                .map(|d| d.to_str().unwrap_or(""))
                .find_map(|d| project_dirs.get(d).copied())
        })
        .collect();
    let mut by_module: HashMap<&str, Vec<usize>> = HashMap::default();
    for (i, f) in files.iter().enumerate() {
        by_module.entry(f.module.as_str()).or_default().push(i);
    }
    // Every dotted suffix of each file's path (`src/app/infer/utils.py` is `app.infer.utils`,
    // `infer.utils`, …): a directory without `__init__.py` is still a package to an import
    // (PEP 420 namespace packages), and a script's own directory is on its `sys.path`.
    let mut by_suffix: HashMap<String, Vec<usize>> = HashMap::default();
    for (i, f) in files.iter().enumerate() {
        let path = f.rel.trim_end_matches(".py").trim_end_matches("/__init__");
        let parts: Vec<&str> = path.split('/').collect();
        for k in 0..parts.len() {
            by_suffix.entry(parts[k..].join(".")).or_default().push(i);
        }
    }
    // Of the files a name could be, those the importer's process finds first: its own
    // `sys.path` entry's, else its own project's (a project's tests import its `src/`
    // package), else all of them (a monorepo's service importing a library of another).
    let nearest = |found: Vec<usize>, from: usize| -> Vec<usize> {
        let same_root: Vec<usize> = found
            .iter()
            .copied()
            .filter(|&i| files[i].source_root == files[from].source_root)
            .collect();
        if !same_root.is_empty() {
            return same_root;
        }
        let same_project: Vec<usize> = match project_of[from] {
            Some(project) => found
                .iter()
                .copied()
                .filter(|&i| project_of[i] == Some(project))
                .collect(),
            None => Vec::new(),
        };
        if same_project.is_empty() {
            found
        } else {
            same_project
        }
    };
    let lookup = |name: &str, from: usize| -> Vec<usize> {
        let f = &files[from];
        let found = match by_module.get(name) {
            Some(found) => found,
            None => {
                // A sibling of the importing script (`import app` next to `api.py`).
                let dir = dir_of(&f.rel);
                let sibling = if dir.is_empty() {
                    format!("{}.py", name.replace('.', "/"))
                } else {
                    format!("{dir}/{}.py", name.replace('.', "/"))
                };
                if let Some(&i) = by_rel.get(sibling.as_str()) {
                    return vec![i];
                }
                // A dotted name through namespace directories: its files, nearest root first.
                match by_suffix.get(name).filter(|_| name.contains('.')) {
                    Some(found) => found,
                    None => return Vec::new(),
                }
            }
        };
        nearest(found.clone(), from)
    };
    let imported = imported_constants(&files, &lookup);
    let imported_fns = imported_functions(&files, &lookup);
    // The conftest.py files by directory, and for each file the one pytest imports first: the
    // one nearest the root among those in the directories above it.
    let conftest_in: HashMap<&str, usize> = (0..files.len())
        .filter(|&j| files[j].rel.rsplit('/').next() == Some("conftest.py"))
        .map(|j| (dir_of(&files[j].rel), j))
        .collect();
    // The conftest.py files of the directories above `rel`, nearest the root first.
    let conftests_above = |rel: &str| -> Vec<usize> {
        let dir = dir_of(rel);
        let mut above: Vec<usize> = conftest_in.get("").copied().into_iter().collect();
        above.extend(
            dir.match_indices('/')
                .map(|(k, _)| &dir[..k])
                .chain((!dir.is_empty()).then_some(dir))
                .filter_map(|d| conftest_in.get(d).copied()),
        );
        above
    };
    let top_conftest: Vec<Option<usize>> = files
        .iter()
        .map(|f| conftests_above(&f.rel).first().copied())
        .collect();
    // A test session runs every test file below its top-most conftest.py in one process.
    let mut session: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    for (j, t) in files.iter().enumerate() {
        if let Some(top) = top_conftest[j].filter(|_| t.tests && is_test_file(&t.rel)) {
            session[top].push(j);
        }
    }
    // Edges: the modules an import names. `whole`: those whose every function may run once
    // the importer's code does (a `*` import, a module loaded by name, pytest's test files
    // and conftests); the others run the functions the importer's running code names.
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    let mut whole: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    // Of `whole`, the modules only a function of the importer loads by name: code at import
    // loads them only when it runs such a function.
    let mut deferred: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    // Of `deferred`, those only known functions and classes of the importer load, and by whom.
    let mut attributed: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    let mut loads_in: Vec<Vec<(String, Vec<usize>)>> = vec![Vec::new(); files.len()];
    // Each import's modules, with the top-level function or class it runs in.
    type Targets = Vec<ImportTargets>;
    let mut import_targets: Vec<Targets> = vec![Vec::new(); files.len()];
    // Why each edge is there, as a library's GH205 says it (the first reason of each edge).
    let mut edge_why: HashMap<(usize, usize), EdgeWhy> = HashMap::default();
    let mut because = |i: usize, js: &[usize], why: EdgeWhy| {
        for &j in js {
            if j != i {
                edge_why.entry((i, j)).or_insert(why);
            }
        }
    };
    for (i, f) in files.iter().enumerate() {
        let mut targets = Vec::new();
        let mut all_of = Vec::new();
        let mut later = Vec::new();
        let mut placed: Vec<usize> = Vec::new();
        let mut unplaced: Vec<usize> = Vec::new();
        for imp in &f.imports {
            let Some(base) = imp.base() else {
                continue;
            };
            // The module named and the submodules named from it. The packages above run too,
            // but a package `__init__.py` that starts CUDA at import is its own finding (GH303):
            // following them would put every module of a package into every program.
            let mut names: Vec<String> = vec![base.to_string()];
            for name in imp.names() {
                if name != "*" {
                    names.push(if base.is_empty() {
                        name.to_string()
                    } else {
                        format!("{base}.{name}")
                    });
                }
            }
            let mut these = Vec::new();
            for name in names {
                these.extend(lookup(&name, i));
            }
            because(i, &these, EdgeWhy::Import(imp.line as usize));
            because(i, &all_of, EdgeWhy::Import(imp.line as usize));
            targets.extend(these.iter().copied());
            import_targets[i].push((imp.unit.clone(), these.iter().map(|&t| t as u32).collect()));
        }
        // Modules a registry loads by name: the one named, or every module under a prefix.
        for (d, dynamic) in f.dynamic_prefixes.iter().enumerate() {
            let in_function = f.dynamic_in_function.get(d).copied().unwrap_or(false);
            let found: Vec<usize> = if let Some(folder) = dynamic.strip_prefix("dir:") {
                // The files of a folder the module scans, next to it or at the root.
                let here = dir_of(&f.rel);
                let near = if here.is_empty() {
                    folder.to_string()
                } else {
                    format!("{here}/{folder}")
                };
                (0..files.len())
                    .filter(|&j| under(&files[j].rel, &near) || under(&files[j].rel, folder))
                    .collect()
            } else if let Some(path) = dynamic.strip_prefix("path:") {
                // From the loader's folder (`_base_`), else from the root (the working
                // directory a tool is run from).
                let here = dir_of(&f.rel);
                [format!("{here}/{path}"), path.to_string()]
                    .iter()
                    .filter_map(|c| crate::fs::tree_file::below_root(Path::new(c)))
                    .find_map(|c| by_rel.get(slash(&c).as_str()).copied())
                    .into_iter()
                    .collect()
            } else if let Some(module) = dynamic.strip_prefix('=') {
                lookup(module, i)
            } else {
                // Under the prefix as a package names it, or through folders without an
                // `__init__.py` (`plugins/echo.py` is `plugins.echo` to an importer whose
                // `sys.path` holds the folder above).
                let under_prefix = (0..files.len())
                    .filter(|&j| {
                        let dotted = files[j]
                            .rel
                            .trim_end_matches(".py")
                            .trim_end_matches("/__init__")
                            .replace('/', ".");
                        files[j].module.starts_with(dynamic.as_str())
                            || dotted.starts_with(dynamic.as_str())
                            || dotted.contains(&format!(".{dynamic}"))
                    })
                    .collect();
                nearest(under_prefix, i)
            };
            because(i, &found, EdgeWhy::Loaded(d));
            // A module loaded for what its code at import does (the module dropped: a registry
            // that imports its plugins) runs like an import there, not whole.
            let units = f.dynamic_units.get(d).filter(|u| !u.is_empty());
            if f.dynamic_effect.get(d).copied().unwrap_or(false)
                && (!in_function || units.is_some())
            {
                let at: Vec<Option<String>> = match units {
                    Some(units) if in_function => units.iter().cloned().map(Some).collect(),
                    _ => vec![None],
                };
                for unit in at {
                    import_targets[i].push((
                        unit.map(String::into_boxed_str),
                        found.iter().map(|&t| t as u32).collect(),
                    ));
                }
                targets.extend(found);
                continue;
            }
            if !in_function {
                all_of.extend(found);
                continue;
            }
            // Loaded by the functions and classes that hold the load, when they run; by any
            // function of the file where that is not known.
            match f.dynamic_units.get(d).filter(|u| !u.is_empty()) {
                Some(units) => {
                    for unit in units {
                        loads_in[i].push((unit.clone(), found.clone()));
                    }
                    placed.extend(found.iter().copied());
                }
                None => unplaced.extend(found.iter().copied()),
            }
            later.extend(found);
        }
        because(i, &session[i], EdgeWhy::Session);
        all_of.extend(session[i].iter().copied());
        // pytest imports the conftest.py of every directory above a test first.
        if is_test_file(&f.rel) && f.rel.rsplit('/').next() != Some("conftest.py") {
            let above = conftests_above(&f.rel);
            because(i, &above, EdgeWhy::Conftest);
            all_of.extend(above);
        }
        all_of.retain(|&j| j != i);
        all_of.sort_unstable();
        all_of.dedup();
        later.retain(|&j| j != i && all_of.binary_search(&j).is_err());
        later.sort_unstable();
        later.dedup();
        // What only known functions load waits for them, in every walk.
        placed.retain(|&j| later.binary_search(&j).is_ok() && !unplaced.contains(&j));
        placed.sort_unstable();
        placed.dedup();
        attributed[i] = placed;
        all_of.extend(later.iter().copied());
        all_of.sort_unstable();
        deferred[i] = later;
        targets.extend(all_of.iter().copied());
        targets.retain(|&j| j != i);
        targets.sort_unstable();
        targets.dedup();
        edges[i] = targets;
        whole[i] = all_of;
    }
    // Each console script's module, with the object it calls (`pkg.cli:run` runs `run`,
    // wherever `pkg/cli/__init__.py` takes it from).
    let mut scripts: HashMap<usize, String> = HashMap::default();
    let mut called: HashMap<usize, Vec<String>> = HashMap::default();
    for (dir, name, module, object) in &projects.scripts {
        for &i in by_module
            .get(module.as_str())
            .or_else(|| by_suffix.get(module.as_str()))
            .into_iter()
            .flatten()
            .filter(|&&i| dir.is_empty() || under(&files[i].rel, dir))
        {
            scripts.insert(i, name.clone());
            if !object.is_empty() {
                called.entry(i).or_default().push(object.clone());
            }
        }
    }
    // Where each file's pieces of code sit in a walk's dense arrays (see `Live::id`).
    let mut pieces_at = Vec::with_capacity(files.len() + 1);
    pieces_at.push(0);
    for f in &files {
        pieces_at.push(pieces_at.last().copied().unwrap_or(0) + 2 + f.units.len());
    }
    let resolved = Resolved::of(&files);
    let registries = registry::Registries::find(&files, names, &lookup);
    let rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
    let launched = launched_files(launches, &rels, &by_rel, &by_module, &by_suffix);
    let grouped: HashSet<usize> = launched
        .iter()
        .filter(|(_, l)| l.cards.is_some() || l.unknown.is_some())
        .map(|(&i, _)| i)
        .collect();
    let any_single = files.iter().any(|f| f.units.iter().any(|u| u.single));
    let group_starters: Vec<bool> = if any_single {
        names
            .0
            .iter()
            .map(|t| distributed::starts_group(t))
            .collect()
    } else {
        Vec::new()
    };
    let reach = || Reach {
        names,
        registries: &registries,
        files: &files,
        whole: &whole,
        deferred: &deferred,
        attributed: &attributed,
        loads_in: &loads_in,
        imports: &import_targets,
        lookup: &lookup,
        called: &called,
        pieces_at: &pieces_at,
        resolved: &resolved,
        walked: Default::default(),
        grouped: &grouped,
        any_single,
        group_starters: &group_starters,
        alone: Default::default(),
    };
    let mut importers: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    for (i, targets) in edges.iter().enumerate() {
        for &j in targets {
            importers[j].push(i);
        }
    }
    let host_of = |rel: &str| {
        hosted
            .iter()
            .find(|(f, _)| f == rel)
            .map(|(_, h)| h.clone())
    };
    let entry_of = |i: usize| -> Option<EntryWhy> {
        let f = &files[i];
        let name = f.rel.rsplit('/').next().unwrap_or(&f.rel);
        if host_of(&f.rel).is_some() {
            // Run inside a Rust program's process (pyo3): never a process of its own.
            None
        } else if let Some(l) = launched
            .get(&i)
            .filter(|l| l.mask.is_some() || l.cards.is_some() || l.unknown.is_some())
        {
            // A command that gives the program a mask or a number of processes says what its
            // process gets, whatever else starts it (a console script, its `__main__` block):
            // that is what the rules check.
            Some(EntryWhy::Launched(Box::new(l.clone())))
        } else if let Some(script) = scripts.get(&i) {
            Some(EntryWhy::Script(script.clone()))
        } else if name == "__main__.py" {
            Some(EntryWhy::DunderMain)
        } else if name == "conftest.py" {
            let tests_below = edges[i].iter().any(|&j| files[j].tests);
            (top_conftest[i] == Some(i) && tests_below).then_some(EntryWhy::TestSession)
        } else if is_test_file(&f.rel)
            && f.tests
            && !importers[i].iter().any(|&j| is_application(&files[j].rel))
        {
            // A module named like a test that application code imports (`test_options.py`
            // holding a `TestOptions` class) is that code's library, not a test; a helper of
            // the suite importing it changes nothing (pytest still collects it).
            // Below a conftest.py the session starts there, not in the test file.
            top_conftest[i].is_none().then(|| EntryWhy::Test {
                suite: test_suite_dir(&f.rel).to_string(),
            })
        } else if let Some(l) = launched.get(&i) {
            Some(EntryWhy::Launched(Box::new(l.clone())))
        } else if f.main_guard {
            Some(EntryWhy::MainGuard)
        } else if let Some((decorator, function)) = &f.runs_as_main {
            Some(EntryWhy::RunsAsMain {
                decorator: decorator.clone(),
                function: function.clone(),
            })
        } else if name == HUBCONF {
            // Loaded by `torch.hub.load` into its caller's process: never a script of its own.
            None
        } else if !f.in_package
            && importers[i].is_empty()
            && !f.imports.iter().any(|imp| imp.level > 0)
            && f.acts
            && projects.installable(f).is_none()
        {
            // A file with relative imports runs only as a module of its package
            // (`python -m pkg.mod`, which a `__main__` block says): never as a script. Nor does
            // a module of a namespace package a project ships (a folder with no `__init__.py`
            // that `find_namespace_packages` takes): its host loads it (a plugin registry).
            Some(EntryWhy::Standalone)
        } else if importers[i].is_empty() && f.reads_command_line && f.acts {
            // A module of a package that reads its command line as it runs (`tools/bench.py`
            // beside a `tools/__init__.py`, run as `python tools/bench.py` or `-m`): a script.
            Some(EntryWhy::CommandLine)
        } else {
            None
        }
    };
    let entries: Vec<Option<EntryWhy>> = (0..files.len()).map(entry_of).collect();
    // Each entry point's process: the modules it reaches through imports. A library keeps how
    // many programs run it and the first three (in path order), which is all its role says.
    let mut programs_of: Vec<(usize, Vec<usize>)> = vec![(0, Vec::new()); files.len()];
    let mut reaches_gpu: Vec<Option<String>> = vec![None; files.len()];
    let mut hides = vec![false; files.len()];
    let any_hides = files.iter().any(|f| f.hides_at_import || f.hides_in_main);
    let mut needs: Vec<Option<(String, crate::lang::python::Need)>> = vec![None; files.len()];
    let any_needs = files
        .iter()
        .any(|f| f.needs_at_import.is_some() || f.units.iter().any(|u| u.needs.is_some()));
    let mut overrides: Vec<Option<(String, String)>> = vec![None; files.len()];
    let any_sets = files.iter().any(|f| {
        f.sets_at_import.iter().any(|s| !s.keeps(policy))
            || f.units
                .iter()
                .any(|u| u.sets.iter().any(|s| !s.keeps(policy)))
    });
    // What each program's process runs: walked for every program at once, each thread with
    // its own walk (what a name runs is the same for every program, and resolved once for all:
    // the results are those of one walk after another).
    let walkers: Vec<std::sync::Mutex<Reach>> = (0..rayon::current_num_threads().max(1))
        .map(|_| std::sync::Mutex::new(reach()))
        .collect();
    let walked: Vec<Walked> = entries
        .par_iter()
        .enumerate()
        .filter(|(_, why)| why.is_some())
        .map(|(e, _)| {
            let worker = rayon::current_thread_index().unwrap_or(0) % walkers.len();
            let reach = walkers[worker].lock().unwrap_or_else(|p| p.into_inner());
            // A process that hides every card at its start reaches none, whatever code
            // it runs.
            let hides = any_hides && reach.hides_cards(e);
            let mut gpu = None;
            let mut need = None;
            let mut over = None;
            let mut early = None;
            let mut as_main = false;
            if !hides {
                gpu = reach.gpu(e).map(|chain| reach.describe(&chain));
                if any_needs && gpu.is_some() {
                    need = reach
                        .needs(e)
                        .map(|(chain, need)| (reach.describe(&chain), need));
                }
                if any_sets && gpu.is_some() {
                    over = reach
                        .overrides(e, policy)
                        .map(|(chain, set)| (reach.describe(&chain), set.describe()));
                }
                if gpu.is_some() && files[e].main_guard {
                    early = reach.gpu_at_import(e).map(|chain| reach.describe(&chain));
                    // What runs before the block acts on a GPU: the run does.
                    as_main = early.is_some() || reach.gpu_as_main(e).is_some();
                } else {
                    // No block: a command runs the module's code, taken whole.
                    as_main = gpu.is_some();
                }
            }
            (e, hides, gpu, need, over, early, as_main)
        })
        .collect();
    drop(walkers);
    let mut gpu_before_main: Vec<Option<String>> = vec![None; files.len()];
    let mut gpu_as_main = vec![false; files.len()];
    for (e, hid, gpu, need, over, early, as_main) in walked {
        hides[e] = hid;
        reaches_gpu[e] = gpu;
        needs[e] = need;
        overrides[e] = over;
        gpu_before_main[e] = early;
        gpu_as_main[e] = as_main;
    }
    let mut package_first = packages_first(
        &files,
        &by_rel,
        &entries,
        &hides,
        |i| {
            let name = files[i].rel.rsplit('/').next().unwrap_or("");
            name == "__main__.py"
                || scripts.contains_key(&i)
                || launched.get(&i).is_some_and(|l| l.module)
                || files[i].main_guard && files[i].imports.iter().any(|imp| imp.level > 0)
        },
        &reach,
    );
    // What the walks read is done with: the roles below are built without it, so it is not
    // held beside them (the index's peak is here, in a tree ten times larger ten times this).
    drop(resolved);
    drop(registries);
    drop(import_targets);
    drop((whole, deferred, attributed, loads_in, called, pieces_at));
    // `seen[j] == e + 1`: entry `e` reached `j` (one array for every entry's walk).
    let mut seen = vec![0usize; files.len()];
    let mut queue = VecDeque::new();
    for (e, why) in entries.iter().enumerate() {
        if why.is_none() {
            continue;
        }
        queue.push_back(e);
        seen[e] = e + 1;
        while let Some(i) = queue.pop_front() {
            if i != e {
                let (count, first) = &mut programs_of[i];
                *count += 1;
                if first.len() < 3 {
                    first.push(e);
                }
            }
            for &j in &edges[i] {
                if std::mem::replace(&mut seen[j], e + 1) != e + 1 {
                    queue.push_back(j);
                }
            }
        }
    }
    // The names of a library's first programs, held once for every library they run (most
    // modules of a package are run by the same few programs).
    let mut shared: HashMap<Vec<usize>, std::sync::Arc<[String]>> = HashMap::default();
    let mut names = |ids: &[usize]| -> std::sync::Arc<[String]> {
        let ids = &ids[..ids.len().min(3)];
        shared
            .entry(ids.to_vec())
            .or_insert_with(|| ids.iter().map(|&i| files[i].rel.clone()).collect())
            .clone()
    };
    let mut roles = HashMap::default();
    for (i, f) in files.iter().enumerate() {
        let role = match entries[i].clone() {
            Some(why) => {
                let name = f.rel.rsplit('/').next().unwrap_or(&f.rel);
                // A script's target and a `__main__.py` are run, not imported; a module with a
                // `__main__` block that other modules import (or that an installable package
                // ships) is a library too.
                let shipped = projects.installable(f);
                // A test that imports the program to test it runs in pytest's session, whose
                // header is the same policy's: the program's header there changes nothing a
                // header of the session would not. Only other importers make it a library.
                let importers: Vec<usize> = importers[i]
                    .iter()
                    .copied()
                    .filter(|&j| !is_test_file(&files[j].rel))
                    .collect();
                // A package's `__init__.py` (a script's `pkg:main`) runs whenever the package or
                // a module of it is imported: a header there would set every importer's env.
                let init = name == "__init__.py" && f.in_package;
                let hub = name == HUBCONF;
                // A console script's module is run, whatever else starts it too.
                let script = scripts.contains_key(&i);
                // A config of a `configs/` tree that inherits others (`_base_`) is loaded by
                // the path a program's command line gives (`Config.fromfile(args.config)`).
                let config =
                    f.config_base && f.rel.split('/').rev().skip(1).any(|d| d == "configs");
                let shipped = shipped.or_else(|| config.then(|| CONFIG_LOADED.to_string()));
                let library = init
                    || hub
                    || matches!(why, EntryWhy::MainGuard | EntryWhy::Launched(_))
                        && !script
                        && (!importers.is_empty() || shipped.is_some())
                    || script && !importers.is_empty();
                if library {
                    let by: Vec<String> = importers
                        .iter()
                        .take(3)
                        .map(|&j| {
                            edge_why.get(&(j, i)).map_or_else(
                                || format!("imported by `{}`", files[j].rel),
                                |why| why.describe(&files[j]),
                            )
                        })
                        .collect();
                    let more = importers.len().saturating_sub(by.len());
                    let library = match shipped {
                        _ if init => format!(
                            "a package's `__init__.py`, run by every import of `{}` or a module in it",
                            f.module
                        ),
                        _ if hub && by.is_empty() => {
                            "loaded by `torch.hub.load` into the process of its caller".to_string()
                        }
                        _ if !by.is_empty() && more > 0 => {
                            format!("{} and {more} more", by.join("; "))
                        }
                        _ if !by.is_empty() => by.join("; "),
                        Some(shipped) => shipped,
                        None => "a module of an installable package".into(),
                    };
                    let library_short = match by.first() {
                        _ if init => library.clone(),
                        Some(first) if importers.len() > 1 => {
                            format!("{first} and {} more", importers.len() - 1)
                        }
                        Some(first) => first.clone(),
                        None => library.clone(),
                    };
                    // Run as `__main__`, it runs its code at import and its block, and what
                    // they call: a block that calls none of the module's GPU code (a demo of
                    // its text functions) is a program with no GPU, whatever its importers use.
                    let runs_main = matches!(why, EntryWhy::MainGuard | EntryWhy::Launched(_));
                    let first = package_first[i].take();
                    Role::Both {
                        gpu: reaches_gpu[i].is_some() && (!runs_main || gpu_as_main[i])
                            || first.as_ref().is_some_and(|(_, _, acts)| *acts),
                        why,
                        gpu_before_main: gpu_before_main[i]
                            .take()
                            .or_else(|| first.map(|(_, chain, _)| chain)),
                        overrides: overrides[i].take(),
                        library,
                        library_short,
                    }
                } else {
                    let first = package_first[i].take();
                    // Package code that uses a card at import makes any program of it a GPU
                    // program; one that only asks the driver for its cards does not.
                    let gpu = reaches_gpu[i].is_some() || first.as_ref().is_some_and(|f| f.2);
                    let via = reaches_gpu[i]
                        .take()
                        .or_else(|| first.as_ref().map(|f| f.1.clone()));
                    Role::Program {
                        why,
                        gpu,
                        via: via.unwrap_or_default(),
                        hides: hides[i],
                        needs: needs[i].take(),
                        overrides: overrides[i].take(),
                        package_first: first.filter(|_| gpu).map(|(init, chain, _)| (init, chain)),
                    }
                }
            }
            // Embedded in a Rust program: its env is that program's, which this index cannot
            // see (no count: nothing here proves it masks).
            None if host_of(&f.rel).is_some() => Role::Library {
                programs: host_of(&f.rel).into_iter().collect(),
                count: 0,
            },
            None => {
                let (count, first) = &programs_of[i];
                Role::Library {
                    programs: names(first),
                    count: *count,
                }
            }
        };
        roles.insert(f.rel.clone(), role);
    }
    let mut script_names: Vec<String> = projects
        .scripts
        .iter()
        .map(|(_, name, _, _)| name.clone())
        .collect();
    script_names.sort();
    script_names.dedup();
    ProjectIndex {
        roles,
        imported,
        imported_fns,
        scripts: script_names,
        shadowing: Vec::new(),
    }
}

/// For each entry point that runs as a module of its package (`runs_as_module`), what the
/// packages above it run at import when that starts CUDA (`python -m pkg.sub.mod` imports
/// `pkg` and `pkg.sub` first): the chain to the first such code, and whether it uses a card
/// (not only asks the driver for them). Each package's `__init__.py` is walked once.
fn packages_first<'r>(
    files: &[PyFile],
    by_rel: &HashMap<&str, usize>,
    entries: &[Option<EntryWhy>],
    hides: &[bool],
    runs_as_module: impl Fn(usize) -> bool,
    reach: &(dyn Fn() -> Reach<'r> + Sync),
) -> Vec<Option<(String, String, bool)>> {
    // The `__init__.py` of each package above file `i`, the outermost first.
    let inits = |i: usize| -> Vec<usize> {
        let f = &files[i];
        let parts: Vec<&str> = f.module.split('.').collect();
        (1..parts.len())
            .filter_map(|k| {
                let dir = parts[..k].join("/");
                let rel = match f.source_root.as_str() {
                    "" => format!("{dir}/__init__.py"),
                    root => format!("{root}/{dir}/__init__.py"),
                };
                by_rel.get(rel.as_str()).copied()
            })
            .collect()
    };
    let of_entry: Vec<(usize, Vec<usize>)> = (0..files.len())
        .filter(|&e| entries[e].is_some() && !hides[e] && files[e].in_package)
        .filter(|&e| runs_as_module(e))
        .map(|e| (e, inits(e)))
        .filter(|(_, inits)| !inits.is_empty())
        .collect();
    let mut walked: Vec<usize> = of_entry
        .iter()
        .flat_map(|(_, i)| i.iter().copied())
        .collect();
    walked.sort_unstable();
    walked.dedup();
    let started: HashMap<usize, (String, String, bool)> = walked
        .par_iter()
        .map_init(reach, |reach, &k| {
            let chain = reach.first(k, Live::Module(k), |l| reach.fixes_env(l))?;
            let acts = match chain.last() {
                Some(&Live::Module(j)) => files[j].gpu_acts_at_import,
                _ => true,
            };
            Some((k, (files[k].rel.clone(), reach.describe(&chain), acts)))
        })
        .flatten()
        .collect();
    let mut out = vec![None; files.len()];
    for (e, inits) in of_entry {
        out[e] = inits.iter().find_map(|k| started.get(k).cloned());
    }
    out
}

/// The files the commands of the tree start, each with the command asking for the most cards
/// (else the first): a path from the command's folder, else from the root (an absolute one,
/// a container's `/app/x.py`, by its longest tail in the tree); a module by its name.
fn launched_files(
    launches: &[(String, launch::Launch)],
    rels: &[&str],
    by_rel: &HashMap<&str, usize>,
    by_module: &HashMap<&str, Vec<usize>>,
    by_suffix: &HashMap<String, Vec<usize>>,
) -> HashMap<usize, Launched> {
    let mut out: HashMap<usize, Launched> = HashMap::default();
    for (file, l) in launches {
        let by_path = |p: &str| -> Option<usize> {
            let here = dir_of(file);
            let mut candidates = Vec::new();
            if !p.starts_with('/') && !here.is_empty() {
                candidates.push(format!("{here}/{p}"));
            }
            let parts: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
            let tails = if p.starts_with('/') { parts.len() } else { 1 };
            candidates.extend((0..tails).map(|k| parts[k..].join("/")));
            candidates
                .iter()
                .filter_map(|c| crate::fs::tree_file::below_root(Path::new(c)))
                .find_map(|c| by_rel.get(slash(&c).as_str()).copied())
        };
        let mut targets: Vec<usize> = match &l.target {
            launch::Target::File(p) => {
                let found = by_path(p);
                // A program's code runs the command from a folder it does not say (its
                // path built from a package's files): the one file of the tree with that tail.
                let in_code = file.ends_with(".py") && !p.starts_with('/');
                found
                    .or_else(|| in_code.then(|| only_with_tail(rels, p)).flatten())
                    .into_iter()
                    .collect()
            }
            launch::Target::Outside(_) => Vec::new(),
            launch::Target::Here(p) => {
                let here = dir_of(file);
                let path = if here.is_empty() {
                    p.clone()
                } else {
                    format!("{here}/{p}")
                };
                crate::fs::tree_file::below_root(Path::new(&path))
                    .and_then(|c| by_rel.get(slash(&c).as_str()).copied())
                    .into_iter()
                    .collect()
            }
            // `python -m pkg` runs the package's `__main__.py`, never its `__init__.py`.
            launch::Target::Module(m) => by_module
                .get(m.as_str())
                .cloned()
                .or_else(|| by_suffix.get(m).cloned())
                .unwrap_or_default()
                .into_iter()
                .filter_map(|j| match rels[j].strip_suffix("__init__.py") {
                    Some(dir) => by_rel.get(format!("{dir}__main__.py").as_str()).copied(),
                    None => Some(j),
                })
                .collect(),
        };
        let mut unknown = l.unknown.clone();
        let mut module = matches!(l.target, launch::Target::Module(_));
        // A launcher outside the tree starts the scripts of the tree it is handed.
        if let Some(h) = l.handed.as_ref().filter(|_| targets.is_empty()) {
            targets = h.scripts.iter().filter_map(|p| by_path(p)).collect();
            unknown = h.unknown.clone().filter(|_| l.cards.is_none());
            module = false;
        }
        let this = Launched {
            file: file.clone(),
            line: l.line,
            command: l.command.clone(),
            cards: l.cards.clone(),
            unknown,
            mask: l.mask.clone(),
            module,
        };
        for t in targets {
            // The command that asks the most of the program: several cards, then a count not
            // written, then the most cards, then a mask.
            let asks = |l: &Launched| {
                let cards = l.cards.as_ref().map(|c| c.0);
                (
                    cards.filter(|n| *n > 1),
                    l.unknown.is_some(),
                    cards,
                    l.mask.is_some(),
                )
            };
            let more = |o: &Launched| asks(&this) > asks(o);
            match out.get(&t) {
                Some(old) if !more(old) => {}
                _ => {
                    out.insert(t, this.clone());
                }
            }
        }
    }
    out
}

/// The one file whose path ends with `tail` (whole folder names), if only one does.
fn only_with_tail(rels: &[&str], tail: &str) -> Option<usize> {
    let tail = tail.trim_start_matches("./");
    let mut found = rels
        .iter()
        .enumerate()
        .filter(|(_, r)| **r == tail || r.ends_with(&format!("/{tail}")))
        .map(|(i, _)| i);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// The file `torch.hub.load(repo, name)` imports from a repository's root to build `name`:
/// run in its caller's process, a library of that caller whatever it holds.
const HUBCONF: &str = "hubconf.py";

/// The files a module name imported by file `from` resolves to.
type Lookup<'a> = dyn Fn(&str, usize) -> Vec<usize> + Sync + 'a;

/// One step of a name read in a file through the file's imports.
enum Through<'a> {
    /// The rest of the name, read in a module (`import a.b as h` for `h.x`, `from pkg import
    /// sub` for `sub.x`): the module may be a file of the tree or a package's attribute.
    Module(&'a str, &'a [&'a str]),
    /// The name read again in a file of the tree (`from m import name`, `from m import *`).
    File(usize, &'a [&'a str]),
}

/// Where a name `parts` (`head.rest…`) read in file `i` leads through `imports` of it, each
/// step handed to `step`: `import a.b as h` binds `h` to `a.b`, `import a.b` binds `a`,
/// `from m import x as h` binds `h` to `m.x` (a submodule, or a name of `m`), and `from m
/// import *` every public name of `m`.
fn through_imports<'f>(
    i: usize,
    imports: impl Iterator<Item = &'f LinkImport>,
    parts: &[&str],
    lookup: &Lookup,
    mut step: impl FnMut(Through<'_>),
) {
    let Some(&head) = parts.first() else { return };
    for imp in imports {
        let Some(base) = imp.base() else {
            continue;
        };
        if imp.names == 0 {
            let local = imp.locals().next().unwrap_or("");
            if local == head {
                step(Through::Module(base, &parts[1..]));
            } else if local.is_empty() && base.split('.').next() == Some(head) {
                step(Through::Module(head, &parts[1..]));
            }
            continue;
        }
        if imp.names().any(|n| n == "*") {
            for j in lookup(base, i).into_iter().filter(|&j| j != i) {
                step(Through::File(j, parts));
            }
        }
        for (name, local) in imp.names().zip(imp.locals()) {
            if local != head {
                continue;
            }
            let sub = if base.is_empty() {
                name.to_string()
            } else {
                format!("{base}.{name}")
            };
            step(Through::Module(&sub, &parts[1..]));
            let read: Vec<&str> = std::iter::once(name)
                .chain(parts[1..].iter().copied())
                .collect();
            for j in lookup(base, i).into_iter().filter(|&j| j != i) {
                step(Through::File(j, &read));
            }
        }
    }
}

/// What runs in a program's process: the import-time code of every module it imports, the
/// entry point's whole file, and the functions and classes that running code names — through
/// its imports (`from helper import load`, `helper.load()`, a re-export), in turn. A module
/// loaded whole (a `*` import, by name, a test session) runs all of its functions.
struct Reach<'r> {
    files: &'r [PyFile],
    names: &'r NameTable,
    whole: &'r [Vec<usize>],
    /// Of `whole`, the modules only a function of the file loads by name.
    deferred: &'r [Vec<usize>],
    /// Of `deferred`, the modules only known functions or classes of the file load, and
    /// which load what (`loads_in`): they run when those do.
    attributed: &'r [Vec<usize>],
    loads_in: &'r [Vec<(String, Vec<usize>)>],
    /// Each file's imports: the modules each names, and the function or class it runs in.
    imports: &'r [Vec<ImportTargets>],
    lookup: &'r Lookup<'r>,
    /// The objects a process started at a file calls besides its code: a console script's
    /// function (`pkg.cli:run`), which its module may only re-export.
    called: &'r HashMap<usize, Vec<String>>,
    /// Where each file's pieces of code start in `walked` ([`Live::id`]).
    pieces_at: &'r [usize],
    /// What each name read in a file runs ([`Reach::resolve`] from the file): the same for
    /// every program that reaches the file, so resolved once for all of them (shared by the
    /// threads, in shards by file).
    resolved: &'r Resolved,
    /// The walk in progress ([`Reach::first`]), by piece: the walk that reached it last and
    /// the piece that made it run; one array for every walk.
    walked: std::cell::RefCell<Walks>,
    /// The tree's registries: what a read of one runs, the registered functions and classes of
    /// none, and what registering functions store into.
    registries: &'r registry::Registries,
    /// The entries a command starts with a process count (one included) or an unknown one:
    /// perhaps one process of a distributed group.
    grouped: &'r HashSet<usize>,
    /// Whether some function has branches only a process of a group runs ([`distributed`]).
    any_single: bool,
    /// By interned name: whether reading it may start a group ([`distributed::starts_group`]),
    /// worked out once for the tree (empty where no function has such branches).
    group_starters: &'r [bool],
    /// Of each entry asked so far, whether its process runs alone ([`Reach::runs_alone`]).
    alone: std::cell::RefCell<HashMap<usize, bool>>,
}

/// Attributes of a function that run it: task and remote-call wrappers (Ray, Celery, Dask,
/// executors), and the function a decorator wraps.
const RUNS_ITS_FUNCTION: &[&str] = &[
    "remote",
    "options",
    "delay",
    "apply_async",
    "s",
    "si",
    "map",
    "starmap",
    "submit",
    "spawn",
    "run",
    "__call__",
    "__wrapped__",
    "func",
    "fn",
];

/// An import's modules (as file numbers), with the top-level function or class it runs in
/// (`None`: at import): held for every import of every file while the programs are walked.
type ImportTargets = (Option<Box<str>>, Box<[u32]>);

/// How code uses what a name holds: reads it (a class read is all its code), calls it and
/// reads one attribute (or none) of what the call makes (`Foo().run`), or calls it with
/// arguments of a known shape (`get_model(1)`).
#[derive(Debug, Clone, Copy)]
enum Use<'a> {
    Read,
    Made(Option<&'a str>),
    /// Called with this many positional arguments and these keywords (comma-separated).
    Call {
        positional: usize,
        keywords: &'a str,
    },
}

/// Code that runs: a file's import-time code, a top-level function or class of it, or all of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Live {
    Module(usize),
    Unit(usize, usize),
    Whole(usize),
    /// A read of a registry of the tree ([`registry`]): its items run, in the modules that
    /// registered them where the process runs those.
    Registry(usize),
}

/// A program's walk: the entry, whether its process hides every card, the chain to the GPU
/// code it runs, to code that needs several cards with what it needs, to code of another
/// module that writes a GPU variable against the policy with what it writes, and to GPU code
/// that runs at import, before its `__main__` block, and whether its run as `__main__`
/// reaches GPU code.
type Walked = (
    usize,
    bool,
    Option<String>,
    Option<(String, crate::lang::python::Need)>,
    Option<(String, String)>,
    Option<String>,
    bool,
);

/// Why a file runs another's code, as a library's GH205 says it (the first reason of each edge),
/// told by the importing file.
#[derive(Debug, Clone, Copy)]
enum EdgeWhy {
    /// An import, at its line.
    Import(usize),
    /// A module loaded by name: the importer's dynamic import (`dynamic_prefixes`) at this place.
    Loaded(usize),
    /// A test file of the pytest session the importer starts.
    Session,
    /// A `conftest.py` pytest imports before the importer.
    Conftest,
}

impl EdgeWhy {
    fn describe(self, f: &PyFile) -> String {
        match self {
            EdgeWhy::Import(line) => format!("imported by `{}` (line {line})", f.rel),
            EdgeWhy::Loaded(d) => {
                let dynamic = f.dynamic_prefixes[d].as_str();
                if let Some(folder) = dynamic.strip_prefix("dir:") {
                    format!("loaded by `{}` from the folder `{folder}` it scans", f.rel)
                } else if let Some(path) = dynamic.strip_prefix("path:") {
                    format!("loaded by path by `{}` (`{path}`)", f.rel)
                } else if let Some(module) = dynamic.strip_prefix('=') {
                    format!(
                        "loaded by name by `{}` (`import_module(\"{module}\")`)",
                        f.rel
                    )
                } else {
                    format!(
                        "loaded by name by `{}` (a computed module name under `{dynamic}`)",
                        f.rel
                    )
                }
            }
            EdgeWhy::Session => format!("collected in the pytest session `{}` starts", f.rel),
            EdgeWhy::Conftest => format!("imported by pytest before `{}`", f.rel),
        }
    }
}

/// What names read in files run ([`Reach::resolved`]): a slot for each name each file reads
/// (its [`PyFile::reads`], numbered from `at[file]`), set once a walk has read the name: none
/// runs ([`Resolved::NOTHING`]), or the number (+ 1) of a range of its shard's `lives` that
/// holds what it runs ([`Packed`]). Held for every file at once: 4 bytes a name a file reads
/// (most run nothing of the tree: `torch.cuda.is_available`), 8 a name that runs something and
/// 8 a piece of code it runs.
struct Resolved {
    at: Vec<u32>,
    slots: Vec<std::sync::atomic::AtomicU32>,
    /// By file, in shards: a file's slots are written with its shard locked.
    lives: Vec<std::sync::Mutex<Lives>>,
}

/// A shard of [`Resolved`]: the ranges its slots name, and what they hold.
#[derive(Default)]
struct Lives {
    ranges: Vec<(u32, u32)>,
    lives: Vec<Packed>,
}

impl Resolved {
    /// A slot not read yet.
    const UNREAD: u32 = 0;
    /// A slot whose name runs nothing.
    const NOTHING: u32 = u32::MAX;

    fn of(files: &[PyFile]) -> Resolved {
        let mut at = Vec::with_capacity(files.len());
        let mut total = 0u32;
        for f in files {
            at.push(total);
            total += f.reads.len() as u32;
        }
        Resolved {
            at,
            slots: (0..total)
                .map(|_| std::sync::atomic::AtomicU32::new(Self::UNREAD))
                .collect(),
            lives: (0..RESOLVED_SHARDS).map(|_| Default::default()).collect(),
        }
    }
}

/// A [`Live`] in two numbers: a file and a unit, or a file and a mark for its import-time or
/// whole code, or a mark and a registry.
#[derive(Clone, Copy)]
struct Packed(u32, u32);

impl Packed {
    const MODULE: u32 = u32::MAX;
    const WHOLE: u32 = u32::MAX - 1;
    const REGISTRY: u32 = u32::MAX;

    fn of(l: Live) -> Packed {
        match l {
            Live::Module(j) => Packed(j as u32, Self::MODULE),
            Live::Whole(j) => Packed(j as u32, Self::WHOLE),
            Live::Unit(j, u) => Packed(j as u32, u as u32),
            Live::Registry(k) => Packed(Self::REGISTRY, k as u32),
        }
    }

    fn live(self) -> Live {
        match self {
            Packed(Self::REGISTRY, k) => Live::Registry(k as usize),
            Packed(j, Self::MODULE) => Live::Module(j as usize),
            Packed(j, Self::WHOLE) => Live::Whole(j as usize),
            Packed(j, u) => Live::Unit(j as usize, u as usize),
        }
    }
}

/// The shards of [`Resolved`]: enough that threads rarely wait on one another.
const RESOLVED_SHARDS: usize = 64;

/// The number of the last walk, and for each piece of code the walk that reached it last
/// with the piece that made it run ([`Live::id`] + 1; 0: none, the entry).
type Walks = (u32, Vec<(u32, u32)>);

impl Live {
    /// The piece's place in a walk's arrays: each file's import-time code, then all of it,
    /// then its units (`pieces_at[j]` is where file `j`'s start).
    fn id(self, pieces_at: &[usize]) -> usize {
        match self {
            Live::Module(j) => pieces_at[j],
            Live::Whole(j) => pieces_at[j] + 1,
            Live::Unit(j, u) => pieces_at[j] + 2 + u,
            // After every file's pieces.
            Live::Registry(k) => pieces_at.last().copied().unwrap_or(0) + k,
        }
    }

    /// An order of pieces, for sorting a list of them.
    fn sort_key(self) -> (u8, usize, usize) {
        match self {
            Live::Module(j) => (0, j, 0),
            Live::Whole(j) => (1, j, 0),
            Live::Unit(j, u) => (2, j, u),
            Live::Registry(k) => (3, k, 0),
        }
    }

    /// The piece at `id` ([`Live::id`]).
    fn of_id(id: usize, pieces_at: &[usize]) -> Live {
        let files_end = pieces_at.last().copied().unwrap_or(0);
        if id >= files_end {
            return Live::Registry(id - files_end);
        }
        let j = pieces_at.partition_point(|&start| start <= id) - 1;
        match id - pieces_at[j] {
            0 => Live::Module(j),
            1 => Live::Whole(j),
            k => Live::Unit(j, k - 2),
        }
    }
}

impl Reach<'_> {
    /// Whether the program of entry `e` runs GPU code — its whole file, the import-time code of
    /// the modules imported by code that runs (at import, or in a function that runs), and the
    /// functions and classes running code names — as the chain of code from the entry to the
    /// first GPU code found; `None` when it runs none.
    fn gpu(&self, e: usize) -> Option<Vec<Live>> {
        self.first(e, Live::Whole(e), |l| self.is_gpu(l))
    }

    /// Whether the code the program of entry `e` runs at import — its own module-level code,
    /// not its `__main__` block, and what that imports and calls — does something on a GPU
    /// (a constant that names a device does nothing): the chain to the first found.
    fn gpu_at_import(&self, e: usize) -> Option<Vec<Live>> {
        self.first(e, Live::Module(e), |l| self.fixes_env(l))
    }

    /// Whether running `l` does something on a GPU, or asks the driver for its cards: CUDA has
    /// read the env by then, and a header that runs later sets it too late.
    fn fixes_env(&self, l: Live) -> bool {
        let files = self.files;
        match l {
            // The driver reads the env once: a query of the cards fixes it as well.
            Live::Module(j) => files[j].gpu_acts_at_import || files[j].queries_at_import,
            Live::Unit(j, u) => files[j].units[u].acts,
            Live::Whole(j) => files[j].gpu,
            Live::Registry(_) => false,
        }
    }

    fn is_gpu(&self, l: Live) -> bool {
        let files = self.files;
        match l {
            // A device constant of it runs only where code reads it (its own unit).
            Live::Module(j) => files[j].gpu_acts_at_import,
            Live::Unit(j, u) => files[j].units[u].gpu,
            Live::Whole(j) => files[j].gpu,
            Live::Registry(_) => false,
        }
    }

    /// Whether the program of entry `e` runs code of another module that needs more than one
    /// card by design (a worker that takes its card from its rank, a pair of indices used
    /// together, a device list), as the chain to the first such code and what it needs.
    fn needs(&self, e: usize) -> Option<(Vec<Live>, crate::lang::python::Need)> {
        let files = self.files;
        let need = |l: Live| match l {
            Live::Module(j) if j != e => files[j].needs_at_import,
            Live::Unit(j, u) if j != e => files[j].units[u].needs,
            Live::Whole(j) if j != e => files[j]
                .needs_at_import
                .or_else(|| files[j].units.iter().find_map(|u| u.needs)),
            _ => None,
        };
        let chain = self.first(e, Live::Whole(e), |l| need(l).is_some())?;
        let found = need(*chain.last()?)?;
        // A group whose ranks each take a card is only evidence: a need of other code goes
        // first (looked for again only where the group came first).
        let group = crate::lang::python::Need::RankGroup;
        if found == group {
            let other = self.first(e, Live::Whole(e), |l| need(l).is_some_and(|n| n != group));
            if let Some(other) = other {
                if let Some(n) = other.last().and_then(|&l| need(l)) {
                    return Some((other, n));
                }
            }
        }
        Some((chain, found))
    }

    /// Whether the program of entry `e` runs code of another module that writes a GPU variable
    /// against the policy (its own writes are its findings): the chain to the first such code
    /// and its first such write.
    fn overrides(
        &self,
        e: usize,
        policy: &crate::model::policy::Policy,
    ) -> Option<(Vec<Live>, crate::lang::python::EnvSet)> {
        let files = self.files;
        let against =
            |sets: &[crate::lang::python::EnvSet]| -> Option<crate::lang::python::EnvSet> {
                sets.iter().find(|s| !s.keeps(policy)).cloned()
            };
        // A test file's writes are its own findings: pytest runs each test apart, and a
        // session that collects it is not that test's process.
        let set = |l: Live| match l {
            Live::Module(j) | Live::Unit(j, _) | Live::Whole(j) if files[j].tests => None,
            Live::Module(j) if j != e => against(&files[j].sets_at_import),
            Live::Unit(j, u) if j != e => against(&files[j].units[u].sets),
            Live::Whole(j) if j != e => against(&files[j].sets_at_import)
                .or_else(|| files[j].units.iter().find_map(|u| against(&u.sets))),
            _ => None,
        };
        let chain = self.first(e, Live::Whole(e), |l| set(l).is_some())?;
        let found = set(*chain.last()?)?;
        Some((chain, found))
    }

    /// The walk of the code the program of entry `e` runs from `start` (its whole file, or its
    /// import-time code), up to the first piece `hit` holds for: the chain from the entry to it.
    fn first(&self, e: usize, start: Live, hit: impl Fn(Live) -> bool) -> Option<Vec<Live>> {
        self.first_of(e, start, false, hit)
    }

    /// Whether the program of entry `e` run as `__main__` reaches GPU code: its code at import,
    /// its `__main__` block, and what they import and call (not the functions nothing of
    /// that calls): the chain to the first found.
    fn gpu_as_main(&self, e: usize) -> Option<Vec<Live>> {
        if self.files[e].main_gpu {
            return Some(vec![Live::Module(e)]);
        }
        self.first_of(e, Live::Module(e), true, |l| self.is_gpu(l))
    }

    /// [`Self::first`], and with `main` the `__main__` block of entry `e` run after its code at
    /// import.
    fn first_of(
        &self,
        e: usize,
        start: Live,
        main: bool,
        hit: impl Fn(Live) -> bool,
    ) -> Option<Vec<Live>> {
        let alone = self.runs_alone(e);
        self.walk(e, start, main, alone, hit)
    }

    /// Whether the process of entry `e` is no process of a distributed group: no command
    /// starts it with a process count, and no code it runs starts a group.
    fn runs_alone(&self, e: usize) -> bool {
        if !self.any_single || self.grouped.contains(&e) {
            return false;
        }
        if let Some(&alone) = self.alone.borrow().get(&e) {
            return alone;
        }
        let starts = |l: Live| {
            self.refs_of(l)
                .any(|r| self.group_starters.get(r.0 as usize).copied() == Some(true))
        };
        let alone = self.walk(e, Live::Whole(e), false, false, starts).is_none();
        self.alone.borrow_mut().insert(e, alone);
        alone
    }

    /// The names the piece `l` reads as code.
    fn refs_of(&self, l: Live) -> Box<dyn Iterator<Item = Name> + '_> {
        let f = |j: usize| &self.files[j];
        match l {
            Live::Module(j) => Box::new(f(j).import_refs.iter().chain(f(j).bound.iter()).copied()),
            Live::Unit(j, u) => Box::new(f(j).units[u].refs.iter().copied()),
            Live::Whole(j) => Box::new(
                f(j).units
                    .iter()
                    .flat_map(|u| u.refs.iter())
                    .chain(f(j).import_refs.iter())
                    .chain(f(j).bound.iter())
                    .chain(f(j).main_refs.iter())
                    .copied(),
            ),
            Live::Registry(_) => Box::new(std::iter::empty()),
        }
    }

    /// The function of unit `l` as a process that runs alone runs it: without its branches
    /// for a group ([`Unit::single`]), where it keeps them apart.
    fn alone_unit(&self, l: Live) -> Live {
        let Live::Unit(j, u) = l else { return l };
        let units = &self.files[j].units;
        let unit = &units[u];
        if unit.single || !unit.guard.is_empty() {
            return l;
        }
        units[u + 1..]
            .iter()
            .take_while(|t| t.name == unit.name)
            .position(|t| t.single)
            .map_or(l, |k| Live::Unit(j, u + 1 + k))
    }

    /// [`Self::first_of`], with `alone` the process of entry `e` runs alone.
    fn walk(
        &self,
        e: usize,
        start: Live,
        main: bool,
        alone: bool,
        hit: impl Fn(Live) -> bool,
    ) -> Option<Vec<Live>> {
        let files = self.files;
        // Each live piece of code, with the one that made it run (for the chain): the pieces
        // stamped with this walk's number.
        let mut walked = self.walked.borrow_mut();
        let (walk, live) = &mut *walked;
        *walk += 1;
        let walk = *walk;
        let total = self.pieces_at.last().copied().unwrap_or(0) + self.registries.count();
        if live.len() < total {
            live.resize(total, (0, 0));
        }
        let ids = self.pieces_at;
        let mut work: Vec<(usize, Read<'_>, Live)> = Vec::new();
        let mut pending: Vec<(Live, Option<Live>)> = vec![(start, None)];
        // The walk of what runs at import only (not the whole entry).
        let at_import = start != Live::Whole(e);
        // What runs before the entry's own code does: what a module only names (a registered
        // function, an alias) waits for whoever calls it.
        // holds its registry.
        let early = at_import && !main;
        // What a command calls by name (`python -c "from m import f; f()"`) runs after import.
        if start == Live::Whole(e) {
            work.extend(
                self.called
                    .get(&e)
                    .into_iter()
                    .flatten()
                    .map(|r| (e, Read::Text(r), Live::Whole(e))),
            );
        }
        let imported = |j: usize, unit: Option<&str>, all: bool, from: Live, out: &mut Vec<_>| {
            for (at, targets) in &self.imports[j] {
                if all || at.as_deref() == unit {
                    out.extend(
                        targets
                            .iter()
                            .map(|&t| (Live::Module(t as usize), Some(from))),
                    );
                }
            }
        };
        if main {
            work.extend(
                files[e]
                    .main_refs
                    .iter()
                    .map(|r| (e, Read::Name(*r), Live::Module(e))),
            );
            // Under the start, which is walked first (the chain goes through it).
            let mut block = Vec::new();
            imported(e, Some("__main__"), false, Live::Module(e), &mut block);
            pending.splice(0..0, block);
        }
        let chain = |live: &[(u32, u32)], mut here: Live| {
            let mut chain = vec![here];
            while let (w, up @ 1..) = live[here.id(ids)] {
                debug_assert_eq!(w, walk);
                here = Live::of_id(up as usize - 1, ids);
                chain.push(here);
            }
            chain.reverse();
            Some(chain)
        };
        loop {
            while let Some((next, from)) = pending.pop() {
                let next = if alone { self.alone_unit(next) } else { next };
                let slot = &mut live[next.id(ids)];
                if slot.0 == walk {
                    continue;
                }
                *slot = (walk, from.map_or(0, |f| f.id(ids) as u32 + 1));
                match next {
                    Live::Module(j) => {
                        if hit(next) {
                            return chain(live, next);
                        }
                        // What it registers in registries read already.
                        for &(k, u) in self.registries.items_in(j) {
                            if live[Live::Registry(k).id(ids)].0 == walk {
                                pending.push((Live::Unit(j, u), Some(Live::Registry(k))));
                            }
                        }
                        work.extend(
                            files[j]
                                .import_refs
                                .iter()
                                .map(|r| (j, Read::Name(*r), next)),
                        );
                        if !early {
                            work.extend(files[j].bound.iter().map(|r| (j, Read::Name(*r), next)));
                            let loose = self.registries.loose.get(j).into_iter().flatten();
                            pending.extend(loose.map(|&u| (Live::Unit(j, u), Some(next))));
                        }
                        imported(j, None, false, next, &mut pending);
                        // At import, what only a function loads by name waits for a function
                        // of the file to run; what known functions load waits for them always.
                        let later = if at_import {
                            &self.deferred[j][..]
                        } else {
                            &self.attributed[j][..]
                        };
                        pending.extend(
                            self.whole[j]
                                .iter()
                                .filter(|k| later.binary_search(k).is_err())
                                .map(|&k| (Live::Whole(k), Some(next))),
                        );
                    }
                    Live::Unit(j, u) => {
                        let unit = &files[j].units[u];
                        if hit(next) {
                            return chain(live, next);
                        }
                        // A registering function's reads of what it stores into register.
                        let writes = self.registries.writes.get(&(j, u));
                        let stores = |r: &Name| {
                            let head = self.names.text(*r).split('.').next().unwrap_or("");
                            let head = head.trim_end_matches("[]");
                            let head = head.split('(').next().unwrap_or_default();
                            writes.is_some_and(|w| w.iter().any(|n| n == head))
                        };
                        work.extend(
                            unit.refs
                                .iter()
                                .filter(|r| !stores(r))
                                .map(|r| (j, Read::Name(*r), next)),
                        );
                        pending.push((Live::Module(j), Some(next)));
                        // A part of a class (`Foo()`, `Foo().run`, `Foo.hook`) runs the imports
                        // and loads made anywhere in the class.
                        let owner = unit.name.split(['(', '.']).next().unwrap_or_default();
                        imported(j, Some(owner), false, next, &mut pending);
                        if at_import {
                            pending.extend(
                                self.deferred[j]
                                    .iter()
                                    .filter(|k| self.attributed[j].binary_search(k).is_err())
                                    .map(|&k| (Live::Whole(k), Some(next))),
                            );
                        }
                        for (_, loaded) in self.loads_in[j].iter().filter(|(n, _)| **n == *owner) {
                            pending.extend(loaded.iter().map(|&k| (Live::Whole(k), Some(next))));
                        }
                    }
                    Live::Registry(k) => {
                        // What the modules that ran so far registered.
                        for &(j, u) in self.registries.items(k) {
                            if live[Live::Module(j).id(ids)].0 == walk {
                                pending.push((Live::Unit(j, u), Some(next)));
                            }
                        }
                    }
                    Live::Whole(j) => {
                        let f = &files[j];
                        if hit(next) {
                            return chain(live, next);
                        }
                        let refs = f.units.iter().flat_map(|u| u.refs.iter());
                        let refs = refs
                            .chain(f.import_refs.iter())
                            .chain(f.bound.iter())
                            .chain(f.main_refs.iter());
                        work.extend(refs.map(|r| (j, Read::Name(*r), next)));
                        imported(j, None, true, next, &mut pending);
                        pending.extend(self.whole[j].iter().map(|&k| (Live::Whole(k), Some(next))));
                    }
                }
            }
            let (i, name, from) = work.pop()?;
            let name = match name {
                Read::Name(name) => name,
                Read::Text(text) => {
                    let parts: Vec<&str> = text.split('.').collect();
                    let mut found = Vec::new();
                    self.read(i, &parts, &mut found);
                    pending.extend(found.into_iter().map(|l| (l, Some(from))));
                    continue;
                }
            };
            let read = || {
                let parts: Vec<&str> = self.names.text(name).split('.').collect();
                let mut found = Vec::new();
                self.read(i, &parts, &mut found);
                found
            };
            let Ok(k) = files[i].reads.binary_search(&name) else {
                // Not a name the file reads: nothing to keep it by.
                pending.extend(read().into_iter().map(|l| (l, Some(from))));
                continue;
            };
            let Resolved { at, slots, lives } = self.resolved;
            let slot = &slots[at[i] as usize + k];
            let mut shard = lives[i % lives.len()]
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let Lives { ranges, lives } = &mut *shard;
            let range = match slot.load(std::sync::atomic::Ordering::Relaxed) {
                Resolved::UNREAD => {
                    let start = lives.len();
                    lives.extend(read().into_iter().map(Packed::of));
                    let range = (start as u32, (lives.len() - start) as u32);
                    let number = match range.1 {
                        0 => Resolved::NOTHING,
                        _ => {
                            ranges.push(range);
                            ranges.len() as u32
                        }
                    };
                    slot.store(number, std::sync::atomic::Ordering::Relaxed);
                    range
                }
                Resolved::NOTHING => (0, 0),
                number => ranges[number as usize - 1],
            };
            let found = &lives[range.0 as usize..(range.0 + range.1) as usize];
            pending.extend(found.iter().map(|&l| (l.live(), Some(from))));
        }
    }

    /// Whether the process of entry `e` hides every card before it runs anything: the entry
    /// sets `CUDA_VISIBLE_DEVICES = ""` itself (at import or in its `__main__` block), or a
    /// module it imports when it starts does at import (a test helper that forces the CPU).
    fn hides_cards(&self, e: usize) -> bool {
        let files = self.files;
        if files[e].hides_at_import || files[e].hides_in_main {
            return true;
        }
        let at_start = |j: usize, main: bool| {
            self.imports[j]
                .iter()
                .filter(move |(at, _)| at.is_none() || main && at.as_deref() == Some("__main__"))
                .flat_map(|(_, targets)| targets.iter().map(|&t| t as usize))
        };
        let mut seen = HashSet::default();
        let mut stack: Vec<usize> = at_start(e, true).collect();
        while let Some(j) = stack.pop() {
            if !seen.insert(j) {
                continue;
            }
            if files[j].hides_at_import {
                return true;
            }
            stack.extend(at_start(j, false));
        }
        false
    }

    /// The chain of code that brings a program to GPU code, for its evidence: each file once,
    /// the last with the function or class (or the import-time code) that uses the GPU.
    fn describe(&self, chain: &[Live]) -> String {
        let mut shown: Vec<String> = Vec::new();
        let mut last_file = usize::MAX;
        for (n, l) in chain.iter().enumerate() {
            let (j, what) = match *l {
                // Shown by the code that reads it and the item it runs.
                Live::Registry(_) => continue,
                Live::Module(j) => (j, None),
                Live::Whole(j) => (j, None),
                Live::Unit(j, u) => (j, Some(self.files[j].units[u].name.as_ref())),
            };
            let end = n + 1 == chain.len();
            let file = format!("`{}`", self.files[j].rel);
            let piece = match (what, end, *l) {
                (Some(name), _, _) => format!("{file} (`{name}`)"),
                (None, true, Live::Module(_)) => format!("{file} (at import)"),
                _ => file,
            };
            if j == last_file {
                // The same file again (its import-time code, then a function of it): keep
                // the more precise piece.
                if what.is_some() || end {
                    *shown.last_mut().unwrap() = piece;
                }
                continue;
            }
            last_file = j;
            shown.push(piece);
        }
        shown.join(" → ")
    }

    /// What the name `parts` read in file `i` runs: a function or class of `i`, or of the
    /// module an import binds it to.
    fn read(&self, i: usize, parts: &[&str], out: &mut Vec<Live>) {
        let shaped = parts
            .iter()
            .enumerate()
            .find_map(|(at, p)| guards::call_shape(p).map(|shape| (at, shape)));
        if let Some((at, (callee, positional, keywords))) = shaped {
            let parts: Vec<&str> = parts[..at].iter().copied().chain([callee]).collect();
            let called = Use::Call {
                positional,
                keywords,
            };
            self.resolve(i, &parts, 0, called, out);
            return;
        }
        let made = parts.iter().position(|p| p.ends_with(construction::CALLED));
        match made {
            Some(at) => {
                let callee = parts[at].trim_end_matches(construction::CALLED);
                let attr = parts.get(at + 1).copied();
                let parts: Vec<&str> = parts[..at].iter().copied().chain([callee]).collect();
                self.resolve(i, &parts, 0, Use::Made(attr), out);
            }
            None => self.resolve(i, parts, 0, Use::Read, out),
        }
    }

    /// [`Self::read`] of `parts` in file `i`, used as `called` says.
    fn resolve(
        &self,
        i: usize,
        parts: &[&str],
        depth: usize,
        called: Use<'_>,
        out: &mut Vec<Live>,
    ) {
        let f = &self.files[i];
        let Some(&head) = parts.first() else { return };
        if depth > 4 {
            return;
        }
        // A registry's name: its items, as the read runs them.
        if let Some(found) = self.registries.read(self.files, i, parts) {
            out.extend(found);
            // A registry's own code runs too (`MODELS.register_module(…)`).
            self.made(i, parts, depth, out);
            return;
        }
        // A read that runs no item of a registry (`NAME[]`, `NAME[].attr`) of a name that is
        // none: the name, as read.
        if let Some(name) = head.split_once("[]").map(|(name, _)| name) {
            self.resolve(i, &[name], depth, Use::Read, out);
            return;
        }
        if let Some(u) = f.units.iter().position(|u| *u.name == *head) {
            // A function called without the arguments that open some of its branches runs
            // without them, where it keeps them apart.
            if let Use::Call {
                positional,
                keywords,
            } = called
            {
                let unit = &f.units[u];
                let trimmed = f.units.get(u + 1).is_some_and(|t| {
                    t.name == unit.name
                        && !t.guard.is_empty()
                        && guards::omits(&t.guard, positional, keywords)
                });
                if parts.len() == 1 && unit.function {
                    out.push(Live::Unit(i, u + usize::from(trimmed)));
                    return;
                }
            }
            // A class called makes an instance: its construction runs, where it is apart,
            // and what reading an attribute of the instance runs.
            if let Use::Made(attr) = called {
                let made = format!("{head}{}", construction::CALLED);
                let c = f.units.iter().position(|c| *c.name == *made);
                // A base of the tree's may call any method of the class from its own
                // construction (`self._init_layers()`, overridden): the whole class.
                let own_base = |c: usize| {
                    f.units[c].bases.iter().any(|b| {
                        let base: Vec<&str> = b.split('.').collect();
                        let mut found = Vec::new();
                        self.resolve(i, &base, depth + 1, Use::Read, &mut found);
                        !found.is_empty()
                    })
                };
                let c = c.filter(|&c| parts.len() == 1 && !f.units[u].function && !own_base(c));
                if let Some(c) = c {
                    out.push(Live::Unit(i, c));
                    if let Some(attr) = attr {
                        self.instance_attr(i, u, c, attr, out);
                    }
                    return;
                }
            }
            // An attribute of a function (`main.get_xp(…)`, set by its decorator or the
            // module) is not a call of it, unless it is a way to run it (`task.remote(…)`,
            // `.delay(…)`, `.__wrapped__(…)`). A class's attributes are its code.
            let attribute_only = f.units[u].function
                && parts
                    .get(1)
                    .is_some_and(|attr| !RUNS_ITS_FUNCTION.contains(attr));
            if !attribute_only {
                out.push(Live::Unit(i, u));
            }
            return;
        }
        self.made(i, parts, depth, out);
        // A name a package declares only for type checkers (`if TYPE_CHECKING: from .train
        // import sft_main`) is read from it all the same: a module that hands it out lazily
        // (transformers' `_LazyModule`, a PEP 562 `__getattr__`) imports it from there then.
        let imports = f.imports.iter().chain(&f.typing_imports);
        through_imports(i, imports, parts, self.lookup, |step| match step {
            Through::Module(module, rest) => self.in_module(i, module, rest, depth, called, out),
            Through::File(j, read) => self.resolve(j, read, depth + 1, called, out),
        });
    }

    /// What reading `attr` of an instance of class `u` of file `i` runs besides its
    /// construction (unit `c`): the method of that name (`Foo().run`); nothing for one of its
    /// members (a data attribute, a method construction runs) or, for a class with no base,
    /// an attribute it does not define; else, an attribute a base may define, the whole class,
    /// but for a framework base's methods that call none of the subclass's (`parameters`).
    fn instance_attr(&self, i: usize, u: usize, c: usize, attr: &str, out: &mut Vec<Live>) {
        let units = &self.files[i].units;
        let method = format!("{}.{attr}", units[c].name);
        if let Some(m) = units.iter().position(|m| *m.name == *method) {
            out.push(Live::Unit(i, m));
            return;
        }
        let made = &units[c];
        if made.members.iter().any(|m| **m == *attr)
            || !made.based
            || crate::knowledge::python::BASE_METHODS_CALLING_NONE.contains(&attr)
        {
            return;
        }
        out.push(Live::Unit(i, u));
    }

    /// What reading `parts` runs of the object a module-level name of file `i` holds, when a
    /// call made it at import (`AvoidCUDAOOM = AvoidOOM()`): what made it, read as the object
    /// is (an attribute of a class is its code, the whole class; the call ran its construction).
    fn made(&self, i: usize, parts: &[&str], depth: usize, out: &mut Vec<Live>) {
        let f = &self.files[i];
        let head = parts[0];
        for g in f
            .globals
            .iter()
            .filter(|g| g.names.iter().any(|n| n == head))
        {
            let Some(maker) = g.maker.as_deref().filter(|m| !m.is_empty()) else {
                continue;
            };
            let read: Vec<&str> = maker.split('.').chain(parts[1..].iter().copied()).collect();
            self.resolve(i, &read, depth + 1, Use::Read, out);
        }
    }

    /// `rest` read from module `module` (as file `from` imports it): the module itself when
    /// nothing is read from it (handed on whole), else the name it reads, or a submodule's.
    fn in_module(
        &self,
        from: usize,
        module: &str,
        rest: &[&str],
        depth: usize,
        called: Use<'_>,
        out: &mut Vec<Live>,
    ) {
        let found = (self.lookup)(module, from);
        if rest.is_empty() {
            out.extend(found.into_iter().map(Live::Whole));
            return;
        }
        for &j in &found {
            self.resolve(j, rest, depth + 1, called, out);
        }
        // A submodule read without running an item (`x in pkg.sub[]`) is the submodule.
        let deeper = format!("{module}.{}", rest[0].trim_end_matches("[]"));
        if !(self.lookup)(&deeper, from).is_empty() {
            self.in_module(from, &deeper, &rest[1..], depth + 1, called, out);
        }
    }
}

/// The device constants each file imports from modules of the tree (through up to three
/// re-exports: `from .config import DEVICE` in a package `__init__.py`).
fn imported_constants(files: &[PyFile], lookup: &Lookup) -> HashMap<String, Vec<ImportedConst>> {
    imported_items(
        files,
        lookup,
        &|f: &PyFile| f.constants.to_vec(),
        &constant_of,
    )
}

/// What a name is in module `j` (defined there or re-exported), and the file that defines it.
type FindIn<T> = dyn Fn(&[PyFile], usize, &str, &Lookup) -> Option<(String, T)>;

/// What each file imports from other modules of the tree of what `all` lists of a module
/// (`import m` then `m.X`, `from pkg import m` then `m.X`) and `one` finds of a name in a
/// module, defined there or re-exported (`from m import X`).
fn imported_items<T>(
    files: &[PyFile],
    lookup: &Lookup,
    all: &dyn Fn(&PyFile) -> Vec<(String, T)>,
    one: &FindIn<T>,
) -> HashMap<String, Vec<Imported<T>>> {
    let module_items = |local: &str, j: usize, found: &mut Vec<Imported<T>>| {
        for (name, value) in all(&files[j]) {
            found.push(Imported {
                local: local.to_string(),
                attr: Some(name.clone()),
                from: files[j].rel.clone(),
                name,
                value,
            });
        }
    };
    let mut imported = HashMap::default();
    for (i, f) in files.iter().enumerate() {
        let mut found = Vec::new();
        for imp in &f.imports {
            let Some(base) = imp.base() else {
                continue;
            };
            if imp.names == 0 {
                // `import a.b as m` binds `m`; `import a.b` makes its items `a.b.<name>`.
                let local = match imp.locals().next() {
                    Some(l) if !l.is_empty() => l,
                    _ => base,
                };
                for j in lookup(base, i) {
                    module_items(local, j, &mut found);
                }
                continue;
            }
            for (name, local) in imp.names().zip(imp.locals()) {
                let submodule = if base.is_empty() {
                    name.to_string()
                } else {
                    format!("{base}.{name}")
                };
                for j in lookup(&submodule, i) {
                    module_items(local, j, &mut found);
                }
                for j in lookup(base, i) {
                    if let Some((from, value)) = one(files, j, name, lookup) {
                        found.push(Imported {
                            local: local.to_string(),
                            attr: None,
                            from,
                            name: name.to_string(),
                            value,
                        });
                    }
                }
            }
        }
        if !found.is_empty() {
            imported.insert(f.rel.clone(), found);
        }
    }
    imported
}

/// What `find` finds of `name` in module `j`: defined there, or imported into it (by name or
/// through `from m import *`, up to `depth` modules away); the file that defines it.
fn defined_of<T>(
    files: &[PyFile],
    j: usize,
    name: &str,
    lookup: &Lookup,
    depth: usize,
    find: &dyn Fn(&PyFile, &str) -> Option<T>,
) -> Option<(String, T)> {
    let f = &files[j];
    if let Some(found) = find(f, name) {
        return Some((f.rel.clone(), found));
    }
    if depth == 0 {
        return None;
    }
    for imp in &f.imports {
        let original = match imp.locals().position(|l| l == name) {
            Some(k) => imp.names().nth(k),
            None if imp.names().any(|n| n == "*") => Some(name),
            None => None,
        };
        let (Some(original), Some(base)) = (original, imp.base()) else {
            continue;
        };
        for next in lookup(base, j) {
            if next != j {
                if let Some(found) = defined_of(files, next, original, lookup, depth - 1, find) {
                    return Some(found);
                }
            }
        }
    }
    None
}

/// The device constant `name` of module `j`, defined there or imported into it.
fn constant_of(
    files: &[PyFile],
    j: usize,
    name: &str,
    lookup: &Lookup,
) -> Option<(String, DeviceConst)> {
    defined_of(files, j, name, lookup, 3, &|f, name| {
        f.constants
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, value)| value.clone())
    })
}

/// The parameters that choose a card of function (or class) `name` of module `j`, defined
/// there or imported into it.
fn params_of(
    files: &[PyFile],
    j: usize,
    name: &str,
    lookup: &Lookup,
) -> Option<(String, Vec<IndexParam>)> {
    defined_of(files, j, name, lookup, 3, &|f, name| {
        let params: Vec<IndexParam> = f
            .index_params
            .iter()
            .filter(|p| p.callee == name)
            .cloned()
            .collect();
        (!params.is_empty()).then_some(params)
    })
}

/// The functions and classes of other modules of the tree each file imports whose parameters
/// choose a card (through up to three re-exports).
fn imported_functions(files: &[PyFile], lookup: &Lookup) -> HashMap<String, Vec<ImportedFn>> {
    let all = |f: &PyFile| {
        let mut callees: Vec<&String> = f.index_params.iter().map(|p| &p.callee).collect();
        callees.sort_unstable();
        callees.dedup();
        callees
            .into_iter()
            .map(|callee| {
                let params = f
                    .index_params
                    .iter()
                    .filter(|p| p.callee == *callee)
                    .cloned()
                    .collect();
                (callee.clone(), params)
            })
            .collect()
    };
    imported_items(files, lookup, &all, &params_of)
}

/// The absolute module an import of `level` dots naming `named` in file `rel`, module `module`,
/// names (`from ..a import b` in `pkg.sub.m` is `pkg.a`).
fn absolute_module(module: &str, rel: &str, level: u32, named: Option<&str>) -> Option<String> {
    if level == 0 {
        return named.map(str::to_string);
    }
    let mut parts: Vec<&str> = module.split('.').collect();
    let is_init = rel.ends_with("__init__.py");
    if !is_init {
        parts.pop();
    }
    for _ in 1..level {
        parts.pop()?;
    }
    if let Some(m) = named {
        parts.push(m);
    }
    Some(parts.join("."))
}
