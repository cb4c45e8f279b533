//! One pass over the AST that records every GPU-relevant fact of a file: the env effects on
//! the managed variables (in every form), GPU imports, device selections reached by data flow,
//! multi-GPU assumptions, and the shape of the module (prologue, docstring, main block).
//! The configuration (config.rs), the effective env (effective.rs), the rules (detect.rs) and
//! the fix planner (fix.rs) read these.

mod devices;
mod env;
mod flow;
mod inert;
mod literals;
mod options;
mod ranks;
mod round_trip;
mod together;

use std::ops::Range;

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

use super::semantic::{is_gpu_module, is_stdlib_module, Bindings};
use crate::base::edit::Edit;
use crate::model::policy::EnvVar;
pub use devices::{device_string, int_literal, DeviceUse, DeviceUseKind};
use flow::Scopes;
pub use ranks::SpawnCount;

/// Which variable an env effect touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvKey {
    Managed(EnvVar),
    /// `HIP_VISIBLE_DEVICES` / `ROCR_VISIBLE_DEVICES`: AMD's masks, reported when they contradict.
    Amd(&'static str),
}

/// A managed variable's read compared with a literal: the variable, the literal (quotes
/// included), its value, and that value's range in the source when written there as is.
pub type EnvCheck = (EnvVar, Range<usize>, String, Option<Range<usize>>);

/// A value written to a variable.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Val {
    Lit(String),
    Computed,
}

/// What an effect does to its variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvOp {
    Set(Val),
    SetDefault(Val),
    Unset,
    /// `os.environ.clear()`, `update(**other)`, `os.environ = {...}`: any managed variable may change.
    Clobber,
}

/// One effect of the code on the environment of the process (or of a child it starts).
#[derive(Debug, Clone)]
pub struct EnvEffect {
    /// `None` for a clobber, which touches every variable.
    pub key: Option<EnvKey>,
    pub op: EnvOp,
    /// Where to point the user.
    pub at: Range<usize>,
    /// The innermost statement holding the effect.
    pub stmt: Range<usize>,
    /// The enclosing function (innermost `def`), `None` at module level and in class bodies.
    pub function: Option<Range<usize>>,
    /// The env of a child process (`subprocess.run(env=...)`), not of this one.
    pub child: bool,
    /// The statement holds nothing but env effects on managed variables (a configuration line).
    pub pure: bool,
    /// Edits that take this effect out; `None` when it cannot be removed safely.
    pub removal: Option<Vec<Edit>>,
    /// The value is read from a command-line option (`args.gpu`, `sys.argv[1]`): the read, as
    /// written.
    pub from_option: Option<String>,
}

impl EnvEffect {
    pub fn var(&self) -> Option<EnvVar> {
        match self.key {
            Some(EnvKey::Managed(v)) => Some(v),
            _ => None,
        }
    }
}

/// How code uses several GPUs; the rules judge it against the policy's cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MultiKind {
    /// Adapts to whatever is visible (`range(device_count())`, a count compared in a branch):
    /// under the header it sees the policy's cards.
    Adaptive,
    /// Needs this many cards: literal indices, a device list, a count in an `assert`.
    Cards(u64),
    /// One process per GPU, each picking its card from its rank (`.to(local_rank)`,
    /// `set_device(rank)`).
    Rank,
    /// `import torch.distributed`: one process per GPU in a script with a `__main__` block;
    /// in a library module, collectives (`all_reduce`) or a rank check — information there.
    Distributed,
    /// A distributed launcher run in-process (`torch.distributed.run.run(args)`): as many
    /// processes as the program's arguments say.
    Launcher,
    /// One process per card, as many cards as a value read when it runs says (Lightning's
    /// `devices=int(os.environ["SLURM_NTASKS_PER_NODE"])`).
    CardsAtRunTime,
}

#[derive(Debug, Clone)]
pub struct GpuImport {
    pub module: String,
    pub range: Range<usize>,
    /// Inside a function: runs when the function is called.
    pub lazy: bool,
    /// Under `if TYPE_CHECKING:`: never runs.
    pub typing_only: bool,
}

#[derive(Debug, Clone)]
pub struct MainBlock {
    /// Start of the `if __name__ == "__main__":` line.
    pub if_start: usize,
    /// Start of the first statement of its body, and the indentation before it.
    pub first_stmt: Option<(usize, String)>,
    pub calls: Vec<String>,
    /// Its body's statements, in order, each with whether it is `import os` (what may come
    /// before the env a program sets there).
    pub stmts: Vec<(Range<usize>, bool)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopKind {
    Docstring,
    Future,
    /// An import of standard-library modules only, with the names it binds.
    StdlibImport(Vec<String>),
    /// Any other import.
    Import(Vec<String>),
    Other,
}

/// A card chosen through NVML (pynvml, nvitop), which numbers cards by PCI bus whatever the
/// mask says.
#[derive(Debug, Clone)]
pub struct NvmlUse {
    pub at: Range<usize>,
    /// A literal index, and its digits.
    pub index: Option<(u64, Range<usize>)>,
    /// The call, for the message (`pynvml.nvmlDeviceGetHandleByIndex`).
    pub call: String,
    /// A CUDA index given to NVML (`torch.cuda.current_device()`, `device.index`).
    pub from_cuda: bool,
    /// The other way: a card number as `nvidia-smi` counts cards given to CUDA.
    pub to_cuda: bool,
}

#[derive(Debug, Default)]
pub struct Facts {
    /// Which local names stand for which modules (shared with the configuration reader).
    pub bindings: Bindings,
    pub effects: Vec<EnvEffect>,
    pub gpu_imports: Vec<GpuImport>,
    pub devices: Vec<DeviceUse>,
    /// Code that uses or assumes several GPUs, and how (see `MultiKind`).
    pub multi_gpu: Vec<(Range<usize>, String, MultiKind)>,
    /// Commands of another program whose options ask for several cards (`["axolotl",
    /// "train", cfg, "--num-processes", "2"]`): where, the program, the cards and the option.
    /// Several cards when the program is one of the tree's console scripts, which the
    /// analysis knows from the project index (`analyze_with`).
    pub program_commands: Vec<(Range<usize>, String, u64, String)>,
    /// Device uses of different indices that run together (indices into `devices`, the
    /// first use of each index): several cards by design, unless the file's own mask already
    /// leaves one (see `together`); with the line of the group's first use.
    pub together: Vec<(Vec<usize>, usize)>,
    /// Starts one worker per visible GPU (`spawn(nprocs=torch.cuda.device_count())`): its
    /// rank-derived devices adapt to the mask.
    pub spawns_per_visible_gpu: bool,
    /// The docstring statement, the string literal to extend, and its text.
    pub docstring: Option<(Range<usize>, Range<usize>, String)>,
    /// Module-level statements in order, with their kind.
    pub top: Vec<(Range<usize>, TopKind)>,
    pub main_block: Option<MainBlock>,
    /// Names of module-level functions, and names bound by imports anywhere.
    pub defined_functions: Vec<String>,
    /// The module-level function and class definitions: what runs at import is outside them
    /// (and outside the `__main__` block).
    pub definitions: Vec<Range<usize>>,
    pub imported_names: Vec<String>,
    pub uses_torch: bool,
    /// Starts worker processes (multiprocessing, process pools, DataLoader workers).
    pub forks: Option<Range<usize>>,
    /// Uses a CUDA device (a device selection, `.cuda()`, a `torch.cuda` call, a "cuda" string).
    pub cuda_use: bool,
    /// Where (offsets) it does.
    pub cuda_sites: Vec<usize>,
    /// Where it asks the driver for its cards (`torch.cuda.is_available()`,
    /// `device_count()`): not a use of a card, but the driver reads `CUDA_VISIBLE_DEVICES`
    /// then, once for the process.
    pub cuda_queries: Vec<usize>,
    /// `"cuda:N"` literals that may reach code (see `literals`): the rules report those the
    /// mask renumbers that no device use accounts for.
    pub device_literals: Vec<literals::DeviceLiteral>,
    /// Device arguments whose value is read from a configuration file: where, what, which
    /// file and key.
    pub config_devices: Vec<(Range<usize>, String, String)>,
    /// Device sinks whose card index is read at run time with no default: a command-line
    /// option or an environment variable (sink, what, the read).
    pub cli_devices: Vec<(Range<usize>, String, RunTimeRead)>,
    /// Cards chosen by NVML index (`nvmlDeviceGetHandleByIndex`): NVML ignores the mask.
    pub nvml: Vec<NvmlUse>,
    /// Device options (`--gpus`) whose value selects nothing: never read, or only printed.
    pub idle_options: Vec<options::IdleOption>,
    /// Can run without CUDA: a "cpu" device string, a `torch.cuda.is_available()` check, or a
    /// command-line option choosing the device.
    pub cpu_path: Option<Range<usize>>,
    /// A managed variable read back and compared (`==`, `!=`) with a string literal
    /// (`os.environ.get("CUDA_VISIBLE_DEVICES") != "1"`, directly or through a local name):
    /// the variable, the literal (quotes included), its value, and the range of that value in
    /// the source when it is written there as is (no escape, one literal).
    pub env_checks: Vec<EnvCheck>,
    /// Parameters of the module's functions (and of its classes' `__init__`) that choose a
    /// card: what another module's call passes there is a card index or a device.
    pub index_params: Vec<IndexParam>,
    /// Calls that start several processes of the program's own code, one per rank
    /// (`mp.spawn(fn, nprocs=4)`), with how many.
    pub spawns: Vec<ranks::Spawn>,
    /// Code by which each rank takes a card of its own: an NCCL process group (NCCL refuses two
    /// ranks on one card), a card taken as the rank modulo the visible count.
    pub rank_cards: Vec<(Range<usize>, String)>,
    /// What says the program is built to run as one of several ranks whose card its rank
    /// chooses at run time: a `--local_rank` option, `LOCAL_RANK` written to its env, a
    /// `--launcher` option that names a distributed launch.
    pub rank_launch: Vec<(Range<usize>, String)>,
}

/// A parameter that chooses a card (`def __init__(self, scale, gpu_id=None)` whose body makes
/// `torch.device(f"cuda:{gpu_id}")`): a call's argument there is a device sink.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct IndexParam {
    /// The function a call names (`load`), or the class whose `__init__` takes it (or, with
    /// `method`, whose instances are called).
    pub callee: String,
    /// A method of class `callee` other than `__init__`, called on an instance
    /// (`r = Runner(); r.start(1)`).
    #[serde(default)]
    pub method: Option<String>,
    pub param: String,
    /// Its position among a call's arguments (a method's `self` not counted); `None`: keyword
    /// only.
    pub position: Option<usize>,
    pub takes: ParamTakes,
    /// The function also reads it for something else (`if gpu_id:`, `self.gpu_id = gpu_id`):
    /// a card moved by the mask (1 → 0) may change more than the card.
    pub shared: bool,
}

/// What a parameter that chooses a card takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ParamTakes {
    /// A card index (`f"cuda:{gpu_id}"`, `torch.cuda.set_device(gpu_id)`).
    Index,
    /// A card index or a device (`model.to(device)`).
    Spec,
    /// A list of card indices (`device_ids=gpus`).
    IndexList,
    /// A number of processes the function starts, one per rank (`mp.spawn(fn, nprocs=n)`).
    Processes,
}

impl Facts {
    /// Imports that run (not under `TYPE_CHECKING`) at module level.
    pub fn runtime_gpu_imports(&self) -> impl Iterator<Item = &GpuImport> {
        self.gpu_imports.iter().filter(|i| !i.typing_only)
    }

    pub fn first_top_level_gpu_import(&self) -> Option<usize> {
        self.runtime_gpu_imports()
            .filter(|i| !i.lazy)
            .map(|i| i.range.start)
            .min()
    }
}

/// What a caller reads of a file's facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Every fact (the analysis of a file).
    All,
    /// What says where the file touches a GPU (the project index): no device literals for
    /// review, no idle command-line options.
    Sites,
    /// Only what the effective env needs (the proof of a fix): no device facts.
    EnvOnly,
}

/// `own_packages`: the tree's top-level packages that share a framework's name, and the one the
/// file belongs to; importing them is a project import (the `TTS` package's own modules, the
/// tests of openai-whisper's tree importing `whisper`).
pub fn collect<'s>(
    source: &'s str,
    body: &'s [Stmt],
    own_packages: &'s [String],
    reading: Reading,
    imported: &'s [crate::lang::python::index::ImportedConst],
    imported_fns: &'s [crate::lang::python::index::ImportedFn],
) -> Facts {
    let env_only = reading == Reading::EnvOnly;
    let bindings = Bindings::collect(body);
    let mut visitor = FactVisitor {
        source,
        bindings,
        scopes: std::cell::OnceCell::new(),
        body,
        env_only,
        guard_removal: None,
        facts: Facts::default(),
        functions: Vec::new(),
        restores: Vec::new(),
        stmts: Vec::new(),
        typing_only: 0,
        removable_bodies: Vec::new(),
        flow_loads: Default::default(),
        device_paths: Vec::new(),
        asserts: 0,
        own_packages,
        imported,
        imported_fns,
        calls: Vec::new(),
        param_sinks: Vec::new(),
        inert: std::cell::OnceCell::new(),
    };
    visitor.module(body);
    // A variable removed where the same code puts back what it read is restored, not removed.
    let restores = std::mem::take(&mut visitor.restores);
    visitor.facts.effects.retain(|e| {
        e.child
            || e.op != EnvOp::Unset
            || !restores
                .iter()
                .any(|(f, k)| *f == e.function && e.key.as_ref() == Some(k))
    });
    visitor.param_calls();
    visitor.mark_shared(body);
    if reading == Reading::All {
        visitor.facts.device_literals = literals::device_literals(source, body)
            .into_iter()
            .filter(|l| !inert::within(visitor.inert(), &l.at))
            .collect();
        // An idle option is declared by an `add_argument` call, whose name the text holds
        // (as written, unless a non-ASCII identifier normalises to it).
        if source.contains("add_argument") || !source.is_ascii() {
            visitor.facts.idle_options = options::idle_device_options(body);
        }
    }
    visitor.facts.bindings = std::mem::take(&mut visitor.bindings);
    // A call's argument can be a sink twice (a `device=` keyword, and the parameter it fills
    // that chooses the card): one finding per place.
    one_per_place(&mut visitor.facts.config_devices);
    one_per_place(&mut visitor.facts.cli_devices);
    one_per_place(&mut visitor.facts.multi_gpu);
    visitor.facts.devices.sort_by_key(|d| d.at.start);
    visitor
        .facts
        .devices
        .dedup_by(|a, b| a.literal == b.literal && a.literal.is_some());
    visitor.facts.together = together::together(body, &visitor.facts.devices)
        .into_iter()
        .map(|group| {
            let first = visitor.facts.devices[group[0]].at.start;
            (group, source[..first].matches('\n').count() + 1)
        })
        .collect();
    visitor.facts
}

struct FactVisitor<'s> {
    source: &'s str,
    bindings: Bindings,
    /// Built on first use: a file whose literals reach no sink through a name never needs it.
    scopes: std::cell::OnceCell<Scopes<'s>>,
    body: &'s [Stmt],
    /// Only what the effective env needs (the proof of a fix): no device facts.
    env_only: bool,
    /// Inside an `if` that only guards env writes: the edit that removes the whole `if`.
    guard_removal: Option<Vec<Edit>>,
    facts: Facts,
    /// Enclosing function definitions (their ranges), innermost last.
    functions: Vec<Range<usize>>,
    /// Variables a function (or the module: `None`) puts back to the value it read from them.
    restores: Vec<(Option<Range<usize>>, EnvKey)>,
    /// Enclosing statements, innermost last.
    stmts: Vec<Range<usize>>,
    typing_only: usize,
    /// For each enclosing body: whether every statement in it is a removable pure env write
    /// (so removing them all must leave `pass`).
    removable_bodies: Vec<bool>,
    /// Inside an `assert`: what is written there is test data, not a device choice.
    asserts: usize,
    own_packages: &'s [String],
    /// Loads of names that carry a device literal to a sink: (key, load range).
    flow_loads: rustc_hash::FxHashSet<(String, usize, usize)>,
    /// For each device use (index into `facts.devices`), the names its literal flows through.
    device_paths: Vec<(usize, Vec<String>)>,
    /// Device constants imported from other modules of the tree.
    imported: &'s [crate::lang::python::index::ImportedConst],
    /// Functions and classes of other modules of the tree that take a card as a parameter.
    imported_fns: &'s [crate::lang::python::index::ImportedFn],
    /// The calls of a name or an attribute (`load(…)`, `self.load(…)`, `mod.Model(…)`): those
    /// of a function whose parameter chooses a card pass a device there.
    calls: Vec<&'s ruff_python_ast::ExprCall>,
    /// Parameters that reach a device sink: (function of `scopes`, name, what the sink takes).
    param_sinks: Vec<(usize, String, ParamTakes)>,
    /// Where a string is only shown, compared or matched (`inert`): no device choice there.
    /// Found on first use: most files hold no string it could concern.
    inert: std::cell::OnceCell<Vec<Range<usize>>>,
}

impl<'s> FactVisitor<'s> {
    fn module(&mut self, body: &'s [Stmt]) {
        self.top_level_shape(body);
        self.visit_body(body);
    }

    /// A literal that flows through a name also used elsewhere is shared: rewriting it would
    /// change more than the device. Such uses are reported, not rewritten.
    fn mark_shared(&mut self, body: &[Stmt]) {
        let keys: Vec<flow::LoadKey> = self
            .device_paths
            .iter()
            .flat_map(|(_, path)| path.iter().map(|k| flow::LoadKey::of_path(k)))
            .collect();
        if keys.is_empty() {
            return;
        }
        let loads = flow::loads_of(body, &keys);
        for (i, path) in &self.device_paths {
            let shared = path.iter().find(|key| {
                let load_key = flow::LoadKey::of_path(key);
                loads.get(&load_key).is_some_and(|loads| {
                    loads
                        .iter()
                        .any(|l| !self.flow_loads.contains(&(key.to_string(), l.start, l.end)))
                })
            });
            // A use some other reason marked (a parameter its callee reads for something else)
            // stays marked.
            if shared.is_some() {
                self.facts.devices[*i].shared = shared.cloned();
            }
        }
    }

    fn scopes(&self) -> &Scopes<'s> {
        self.scopes.get_or_init(|| Scopes::collect(self.body))
    }

    /// A GPU framework's module, and not a module of the file's own package.
    pub(super) fn is_framework(&self, module: &str) -> bool {
        let top = module.split('.').next().unwrap_or(module);
        is_gpu_module(module) && !self.own(top)
    }

    /// A top-level package of the tree, not the framework of the same name.
    pub(super) fn own(&self, top: &str) -> bool {
        self.own_packages.iter().any(|p| p == top)
    }

    fn module_level(&self) -> bool {
        self.functions.is_empty()
    }

    fn top_level_shape(&mut self, body: &[Stmt]) {
        for (i, stmt) in body.iter().enumerate() {
            let kind = match stmt {
                Stmt::Expr(e) if i == 0 && matches!(e.value.as_ref(), Expr::StringLiteral(_)) => {
                    if let Expr::StringLiteral(s) = e.value.as_ref() {
                        self.facts.docstring = Some((
                            range(stmt),
                            s.value.iter().last().map_or(range(s), range),
                            s.value.to_str().to_string(),
                        ));
                    }
                    TopKind::Docstring
                }
                Stmt::ImportFrom(f)
                    if f.module
                        .as_ref()
                        .is_some_and(|m| m.as_str() == "__future__") =>
                {
                    TopKind::Future
                }
                Stmt::Import(imp) => {
                    let names: Vec<String> = imp
                        .names
                        .iter()
                        .map(|a| match &a.asname {
                            Some(n) => n.as_str().to_string(),
                            None => a.name.as_str().split('.').next().unwrap_or("").to_string(),
                        })
                        .collect();
                    if imp.names.iter().all(|a| is_stdlib_module(a.name.as_str())) {
                        TopKind::StdlibImport(names)
                    } else {
                        TopKind::Import(names)
                    }
                }
                Stmt::ImportFrom(from) => {
                    let names = from
                        .names
                        .iter()
                        .map(|a| a.asname.as_ref().unwrap_or(&a.name).as_str().to_string())
                        .collect();
                    let stdlib = from.level == 0
                        && from
                            .module
                            .as_ref()
                            .is_some_and(|m| is_stdlib_module(m.as_str()));
                    if stdlib {
                        TopKind::StdlibImport(names)
                    } else {
                        TopKind::Import(names)
                    }
                }
                Stmt::If(if_stmt) if is_main_test(&if_stmt.test) => {
                    self.main_block(stmt, &if_stmt.body);
                    TopKind::Other
                }
                Stmt::FunctionDef(def) => {
                    self.facts
                        .defined_functions
                        .push(def.name.as_str().to_string());
                    self.facts.definitions.push(range(stmt));
                    TopKind::Other
                }
                Stmt::ClassDef(_) => {
                    self.facts.definitions.push(range(stmt));
                    TopKind::Other
                }
                _ => TopKind::Other,
            };
            self.facts.top.push((range(stmt), kind));
        }
    }

    fn main_block(&mut self, stmt: &Stmt, body: &[Stmt]) {
        let if_start = crate::base::lines::line_start(self.source, range(stmt).start);
        let first_stmt = body.first().and_then(|first| {
            let start = range(first).start;
            let ls = crate::base::lines::line_start(self.source, start);
            let indent = &self.source[ls..start];
            indent
                .chars()
                .all(|c| c == ' ' || c == '\t')
                .then(|| (ls, indent.to_string()))
        });
        let calls = body
            .iter()
            .filter_map(|s| match s {
                Stmt::Expr(e) => match e.value.as_ref() {
                    Expr::Call(call) => match call.func.as_ref() {
                        Expr::Name(n) => Some(n.id.as_str().to_string()),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            })
            .collect();
        self.facts.main_block = Some(MainBlock {
            if_start,
            first_stmt,
            calls,
            stmts: body
                .iter()
                .map(|s| {
                    let import_os = matches!(s, Stmt::Import(i) if i.names.iter().all(|a| a.name.as_str() == "os" && a.asname.is_none()));
                    (range(s), import_os)
                })
                .collect(),
        });
    }

    fn gpu_import(&mut self, stmt: &Stmt) {
        let modules: Vec<String> = match stmt {
            Stmt::Import(imp) => {
                for a in &imp.names {
                    let local = a.asname.as_ref().map_or_else(
                        || a.name.as_str().split('.').next().unwrap_or("").to_string(),
                        |n| n.as_str().to_string(),
                    );
                    self.facts.imported_names.push(local);
                }
                imp.names
                    .iter()
                    .map(|a| a.name.as_str().to_string())
                    .collect()
            }
            Stmt::ImportFrom(from) => {
                for a in &from.names {
                    let local = a.asname.as_ref().unwrap_or(&a.name).as_str().to_string();
                    self.facts.imported_names.push(local);
                }
                if from.level != 0 {
                    return;
                }
                let Some(module) = &from.module else { return };
                // `from torch import distributed` imports `torch.distributed` too.
                std::iter::once(module.as_str().to_string())
                    .chain(
                        from.names
                            .iter()
                            .map(|a| format!("{}.{}", module.as_str(), a.name.as_str()))
                            .filter(|full| {
                                full == "torch.distributed" || full == "torch.multiprocessing"
                            }),
                    )
                    .collect()
            }
            _ => return,
        };
        let typing_only = self.typing_only > 0;
        // `import setGPU` sets CUDA_VISIBLE_DEVICES to the least busy card when imported.
        if !typing_only && modules.iter().any(|m| m == "setGPU") {
            // An import of nothing else goes whole: the header chooses the card instead.
            let alone = matches!(stmt, Stmt::Import(i) if i.names.iter().all(|a| a.name.as_str() == "setGPU"));
            let removal = alone
                .then(|| crate::lang::removal::removal_edit(self.source, range(stmt), false))
                .flatten()
                .map(|e| vec![e]);
            self.facts.effects.push(EnvEffect {
                key: Some(EnvKey::Managed(EnvVar::VisibleDevices)),
                op: EnvOp::Set(Val::Computed),
                at: range(stmt),
                stmt: range(stmt),
                function: self.functions.last().cloned(),
                child: false,
                pure: alone,
                removal,
                from_option: None,
            });
        }
        for module in modules {
            if module.split('.').next() == Some("torch") && !typing_only {
                self.facts.uses_torch = true;
            }
            if matches!(
                module.as_str(),
                "multiprocessing" | "torch.multiprocessing" | "concurrent.futures"
            ) && self.facts.forks.is_none()
            {
                self.facts.forks = Some(range(stmt));
            }
            if module == "torch.distributed" || module.starts_with("torch.distributed.") {
                self.facts.multi_gpu.push((
                    range(stmt),
                    "uses torch.distributed: each process picks its GPU from its rank".into(),
                    MultiKind::Distributed,
                ));
            }
            if self.is_framework(&module) {
                self.facts.gpu_imports.push(GpuImport {
                    module,
                    range: range(stmt),
                    lazy: !self.module_level(),
                    typing_only,
                });
            }
        }
    }
}

impl FactVisitor<'_> {
    /// CUDA is used here.
    fn cuda_at(&mut self, offset: usize) {
        self.facts.cuda_use = true;
        self.facts.cuda_sites.push(offset);
    }

    /// A write that goes on its own (in a `setup_gpu()` function, in a library module) takes
    /// its banner and the prints that echo it along, as the header's replacement of the
    /// configuration blocks does: nothing is left to say "Using GPU 0" about a write that is
    /// gone. Only a block with one write, inside a body that keeps other statements.
    fn take_echoes_along(&mut self, body: &[Stmt]) {
        let (Some(first), Some(last)) = (body.first(), body.last()) else {
            return;
        };
        let whole = range(first).start..range(last).end;
        for block in super::config::blocks(self.source, body, &self.facts, &self.bindings) {
            if block.range.start <= whole.start && whole.end <= block.range.end {
                continue;
            }
            let writes: Vec<Range<usize>> = body
                .iter()
                .map(range)
                .filter(|r| block.range.start <= r.start && r.end <= block.range.end)
                .filter(|r| self.facts.effects.iter().any(|e| e.stmt == *r && !e.child))
                .collect();
            let [write] = writes.as_slice() else { continue };
            for e in self.facts.effects.iter_mut() {
                if e.stmt == *write && !e.child && e.removal.is_some() {
                    e.removal = Some(vec![Edit::delete(crate::lang::removal::with_blank_lines(
                        self.source,
                        block.range.clone(),
                    ))]);
                }
            }
        }
    }

    /// `importlib.import_module("torch")`, `__import__("torch")`: a GPU import all the same.
    fn dynamic_import(&mut self, call: &ruff_python_ast::ExprCall, name: &str) {
        if !matches!(
            name,
            "importlib.import_module" | "__import__" | "builtins.__import__"
        ) {
            return;
        }
        let Some(Expr::StringLiteral(m)) = call.arguments.args.first() else {
            return;
        };
        let module = m.value.to_str().to_string();
        if module.split('.').next() == Some("torch") && self.typing_only == 0 {
            self.facts.uses_torch = true;
        }
        if self.is_framework(&module) {
            self.facts.gpu_imports.push(GpuImport {
                module,
                range: self.stmts.last().cloned().unwrap_or_else(|| range(call)),
                lazy: !self.module_level(),
                typing_only: self.typing_only > 0,
            });
        }
    }

    /// CUDA calls, and options that let the user pick the device (a CPU path).
    fn cuda_and_cpu(&mut self, call: &ruff_python_ast::ExprCall, name: &str) {
        let method = match call.func.as_ref() {
            Expr::Attribute(a) => a.attr.as_str(),
            _ => "",
        };
        // ONNX Runtime given every available provider runs on CUDA when it can.
        if name.ends_with("get_available_providers") {
            self.cuda_at(range(call).start);
        }
        // A process group over NCCL communicates through the GPUs; one over gloo, or a query
        // of the group (`get_rank()`, `is_initialized()`), touches none.
        if name == "torch.distributed.init_process_group" {
            let backend = first_or_keyword(call, "backend");
            if matches!(backend, Some(Expr::StringLiteral(s)) if s.value.to_str().contains("nccl"))
            {
                self.cuda_at(range(call).start);
            }
        }
        if method == "cuda"
            || name
                .strip_prefix("torch.cuda.")
                .is_some_and(|f| !matches!(f, "is_available" | "device_count" | "is_initialized"))
        {
            self.cuda_at(range(call).start);
        }
        if matches!(name, "torch.cuda.is_available" | "torch.cuda.device_count") {
            self.facts.cuda_queries.push(range(call).start);
        }
        // Asking whether CUDA is there (other than to assert it) means the program has a way
        // to run without it.
        if name == "torch.cuda.is_available" && self.asserts == 0 && self.facts.cpu_path.is_none() {
            self.facts.cpu_path = Some(range(call));
        }
        if method == "add_argument" && self.facts.cpu_path.is_none() {
            let device_flag = call.arguments.args.iter().any(|a| {
                matches!(a, Expr::StringLiteral(s) if {
                    let f = s.value.to_str().to_ascii_lowercase();
                    f.starts_with('-') && ["cpu", "cuda", "device", "gpu"].iter().any(|w| f.contains(w))
                })
            });
            if device_flag {
                self.facts.cpu_path = Some(range(call));
            }
        }
    }
}

impl<'s> Visitor<'s> for FactVisitor<'s> {
    fn visit_body(&mut self, body: &'s [Stmt]) {
        let all_removable = !body.is_empty()
            && body
                .iter()
                .all(|s| self.pure_env_stmt(s) && !self.stmts.is_empty());
        self.removable_bodies.push(all_removable);
        for (i, stmt) in body.iter().enumerate() {
            // The last statement of a body that would empty is replaced by `pass`.
            let last = all_removable && i + 1 == body.len();
            self.stmts.push(range(stmt));
            self.record_env_effects(stmt, last);
            self.visit_stmt(stmt);
            self.stmts.pop();
        }
        self.removable_bodies.pop();
        if self.guard_removal.is_none() {
            self.take_echoes_along(body);
        }
    }

    fn visit_stmt(&mut self, stmt: &'s Stmt) {
        self.gpu_import(stmt);
        if !self.env_only {
            self.rank_env_write(stmt);
        }
        match stmt {
            // A bare string statement (docstring) is prose, never a device selection.
            Stmt::Expr(e) if matches!(e.value.as_ref(), Expr::StringLiteral(_)) => {}
            Stmt::Assert(_) => {
                self.asserts += 1;
                walk_stmt(self, stmt);
                self.asserts -= 1;
            }
            Stmt::If(_) if self.guard_of(stmt).is_some() => {
                let outer = self
                    .guard_removal
                    .replace(self.guard_of(stmt).unwrap_or_default());
                walk_stmt(self, stmt);
                self.guard_removal = outer;
            }
            Stmt::If(if_stmt) if is_type_checking(&if_stmt.test) => {
                self.typing_only += 1;
                self.visit_body(&if_stmt.body);
                self.typing_only -= 1;
                for clause in &if_stmt.elif_else_clauses {
                    self.visit_body(&clause.body);
                }
            }
            Stmt::For(f) if !self.env_only => {
                self.env_table_check(f);
                walk_stmt(self, stmt);
            }
            Stmt::FunctionDef(def) => {
                for decorator in &def.decorator_list {
                    self.visit_expr(&decorator.expression);
                }
                for p in def.parameters.iter_non_variadic_params() {
                    if let Some(default) = p.default.as_deref() {
                        // `device: str = "cuda"` of a parameter the function never reads (or
                        // only keeps in an attribute nothing reads): no device is chosen with it.
                        let cuda_string = matches!(default, Expr::StringLiteral(s) if s.value.to_str() == "cuda" || s.value.to_str().starts_with("cuda:"));
                        if cuda_string
                            && !self.env_only
                            && idle_param(self.body, def, p.parameter.name.as_str())
                        {
                            continue;
                        }
                        self.visit_expr(default);
                    }
                }
                self.functions.push(range(stmt));
                self.visit_body(&def.body);
                self.functions.pop();
            }
            _ => walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'s Expr) {
        match expr {
            Expr::Call(call) => {
                // Resolved once: every check below reads the same dotted name.
                let name = self.bindings.qualified(&call.func).unwrap_or_default();
                self.call_effects(call, &name);
                self.dynamic_import(call, &name);
                if !self.env_only {
                    self.cuda_and_cpu(call, &name);
                    self.call(call, &name);
                    if matches!(call.func.as_ref(), Expr::Name(_) | Expr::Attribute(_)) {
                        self.calls.push(call);
                    }
                }
            }
            _ if self.env_only => {}
            Expr::StringLiteral(s) => {
                let v = s.value.to_str();
                let used = v == "cuda"
                    || v.starts_with("cuda:")
                    || v == "CUDAExecutionProvider"
                    || v == "TensorrtExecutionProvider";
                if used && !inert::within(self.inert(), &range(expr)) {
                    self.cuda_at(range(expr).start);
                }
                if (v == "cpu" || v.starts_with("cpu:")) && self.facts.cpu_path.is_none() {
                    self.facts.cpu_path = Some(range(expr));
                }
                self.command_string(expr, v);
            }
            // `f"cuda:{args.device_id}"`: a CUDA device whatever the index.
            Expr::FString(f) => {
                self.command_string(expr, &fstring_text(f));
                let first = fstring_head(f);
                if first.is_some_and(|t| t.starts_with("cuda:"))
                    && !inert::within(self.inert(), &range(expr))
                {
                    self.cuda_at(range(expr).start);
                }
            }
            Expr::Compare(cmp) => {
                self.compare(expr);
                self.env_check(cmp);
                // `x.device.type == "cuda"` asks, it does not use: a string operand of a
                // comparison is not CUDA use (its other operands are still read).
                for operand in std::iter::once(cmp.left.as_ref()).chain(cmp.comparators.iter()) {
                    if !matches!(operand, Expr::StringLiteral(_)) {
                        self.visit_expr(operand);
                    }
                }
                return;
            }
            // ONNX Runtime: a provider tuple `("CUDAExecutionProvider", {"device_id": 1})`.
            Expr::Tuple(t) => {
                self.ort_provider(&t.elts);
                self.gpu_command(expr, &t.elts);
            }
            Expr::List(l) => self.gpu_command(expr, &l.elts),
            Expr::Subscript(sub) => self.device_list_subscript(sub),
            Expr::Lambda(_) => {
                self.functions.push(range(expr));
                walk_expr(self, expr);
                self.functions.pop();
                return;
            }
            _ => {}
        }
        walk_expr(self, expr);
    }
}

impl FactVisitor<'_> {
    /// Where a string is only shown, compared or matched (see [`inert`]), found once.
    fn inert(&self) -> &[Range<usize>] {
        self.inert.get_or_init(|| {
            let mut ranges = inert::inert_ranges(self.body);
            if !self.bindings.imported().any(|m| self.is_framework(m)) {
                ranges.extend(round_trip::asserted_data(self.body, &self.bindings));
                ranges.sort_by_key(|r| r.start);
            }
            ranges
        })
    }

    /// A command line written as one string (`run(f"yolo train {task} device=0,1")`, split
    /// before it runs): the cards it asks its program for, kept for when the program is a
    /// console script of the tree (as a list's, [`Self::gpu_command`]).
    fn command_string(&mut self, expr: &Expr, text: &str) {
        if !text.contains(' ') || !text.contains('=') && !text.contains('-') {
            return;
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        let Some(program) = words
            .first()
            .filter(|w| !w.starts_with('-') && !w.contains('=') && !w.contains('{'))
        else {
            return;
        };
        if words.len() <= 2 {
            return;
        }
        let Some((n, option)) = crate::lang::python::index::launch::script_cards(&words[1..])
        else {
            return;
        };
        if inert::within(self.inert(), &range(expr)) {
            return;
        }
        self.facts.program_commands.push((
            range(expr),
            program.rsplit('/').next().unwrap_or(program).to_string(),
            n as u64,
            option,
        ));
    }

    /// A command, as a list of words, that starts a GPU program (`[sys.executable, "-m",
    /// "vllm.entrypoints.cli.main", "serve", …]`, `["torchrun", "train.py"]`): the child
    /// inherits this process's env, so the code that builds it uses a GPU through it.
    fn gpu_command(&mut self, expr: &Expr, elts: &[Expr]) {
        let words: Vec<Option<&str>> = elts
            .iter()
            .map(|e| match e {
                Expr::StringLiteral(s) => Some(s.value.to_str()),
                _ => None,
            })
            .collect();
        let gpu = gpu_program(&words);
        // `["python", "-m", "sglang.launch_server", "--tp-size", "2"]`: the child takes the
        // cards its options ask for, of this process's. So does another program's command
        // (`["axolotl", "train", cfg, "--num-processes", "2"]`) when the program is the
        // tree's own: which it is, the analysis knows. A list that starts with an option
        // (`parse_args(["--num_gpus", "2"])`), or a subcommand's arguments handed to a
        // test runner (`cli_runner.invoke(cli, ["train", …])`), starts no program.
        let program = words
            .first()
            .copied()
            .flatten()
            .filter(|w| !w.is_empty() && !w.starts_with('-') && !w.contains(' '));
        let written: Vec<&str> = words.iter().flatten().copied().collect();
        let cards = crate::lang::python::index::launch::script_cards(&written);
        if !gpu && cards.is_none() || inert::within(self.inert(), &range(expr)) {
            return;
        }
        if gpu {
            self.cuda_at(range(expr).start);
        }
        let Some((n, option)) = cards else {
            return;
        };
        if gpu {
            self.facts.multi_gpu.push((
                range(expr),
                format!("the command it starts asks for {option}"),
                MultiKind::Cards(n as u64),
            ));
        } else if let Some(program) = program.filter(|_| words.len() > 2) {
            self.facts.program_commands.push((
                range(expr),
                program.rsplit('/').next().unwrap_or(program).to_string(),
                n as u64,
                option,
            ));
        }
    }
}

/// An f-string's text, each value it interpolates written `{}`.
fn fstring_text(f: &ruff_python_ast::ExprFString) -> String {
    let mut text = String::new();
    for part in f.value.iter() {
        match part {
            ruff_python_ast::FStringPart::Literal(l) => text.push_str(&l.value),
            ruff_python_ast::FStringPart::FString(fs) => {
                for e in fs.elements.iter() {
                    match e {
                        ruff_python_ast::InterpolatedStringElement::Literal(l) => {
                            text.push_str(&l.value)
                        }
                        ruff_python_ast::InterpolatedStringElement::Interpolation(_) => {
                            text.push_str("{}")
                        }
                    }
                }
            }
        }
    }
    text
}

/// Whether a command's words start a GPU program: a GPU launcher (`torchrun`, `deepspeed`,
/// `accelerate launch`, `vllm serve`) first, or an interpreter's `-m` of a module of a framework
/// that takes a GPU unasked (`vllm.entrypoints…`) or of torch's launcher.
pub fn gpu_program(words: &[Option<&str>]) -> bool {
    let first = words
        .first()
        .copied()
        .flatten()
        .map(|w| w.rsplit('/').next().unwrap_or(w));
    let second = words.get(1).copied().flatten();
    // A launcher word alone is a name (`extras["deepspeed"] = ["deepspeed"]`): a command goes on
    // with an option or a script.
    let goes_on = second.is_some_and(|w| w.starts_with('-') || w.ends_with(".py"));
    let launcher = match first {
        Some("torchrun" | "deepspeed") => goes_on,
        Some("accelerate") => second == Some("launch"),
        Some("vllm" | "lmdeploy") => second == Some("serve"),
        _ => false,
    };
    // The interpreter: a word computed in the code (`sys.executable`) or `python…`, then its
    // options up to `-m`.
    let interpreter = match first {
        None => !words.is_empty(),
        Some(w) => w.starts_with("python"),
    };
    let at = 1 + words
        .iter()
        .skip(1)
        .take_while(|w| w.is_some_and(|w| w.starts_with('-') && w != "-m"))
        .count();
    let module = interpreter
        && match (
            words.get(at).copied().flatten(),
            words.get(at + 1).copied().flatten(),
        ) {
            (Some("-m"), Some(module)) => {
                crate::knowledge::python::gpu_by_default(module)
                    || crate::knowledge::python::GPU_SERVER_MODULES
                        .iter()
                        .any(|m| module == *m || module.starts_with(&format!("{m}.")))
                    || matches!(module, "torch.distributed.run" | "torch.distributed.launch")
            }
            _ => false,
        };
    launcher || module
}

/// The literal text an f-string starts with (`f"cuda:{i}"` → `cuda:`), when it starts with one.
pub fn fstring_head(f: &ruff_python_ast::ExprFString) -> Option<String> {
    f.value.iter().find_map(|part| match part {
        ruff_python_ast::FStringPart::Literal(l) => Some(l.value.to_string()),
        ruff_python_ast::FStringPart::FString(fs) => match fs.elements.iter().next() {
            Some(ruff_python_ast::InterpolatedStringElement::Literal(l)) => {
                Some(l.value.to_string())
            }
            _ => None,
        },
    })
}

/// A call's first positional argument, else its keyword `keyword` (`run(cmd)`, `run(args=cmd)`).
pub(super) fn first_or_keyword<'a>(
    call: &'a ruff_python_ast::ExprCall,
    keyword: &str,
) -> Option<&'a Expr> {
    call.arguments.args.first().or_else(|| {
        call.arguments
            .keywords
            .iter()
            .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == keyword))
            .map(|k| &k.value)
    })
}

pub fn range(node: &impl Ranged) -> Range<usize> {
    let r = node.range();
    r.start().to_usize()..r.end().to_usize()
}

pub fn is_main_test(test: &Expr) -> bool {
    let Expr::Compare(cmp) = test else {
        return false;
    };
    if cmp.comparators.len() != 1 {
        return false;
    }
    let sides = [&*cmp.left, &cmp.comparators[0]];
    let has_name = sides
        .iter()
        .any(|e| matches!(e, Expr::Name(n) if n.id.as_str() == "__name__"));
    let has_main = sides
        .iter()
        .any(|e| matches!(e, Expr::StringLiteral(s) if s.value.to_str() == "__main__"));
    has_name && has_main
}

/// `if TYPE_CHECKING:` / `if typing.TYPE_CHECKING:`: a block that never runs.
pub fn is_type_checking(test: &Expr) -> bool {
    match test {
        Expr::Name(n) => n.id.as_str() == "TYPE_CHECKING",
        Expr::Attribute(a) => a.attr.as_str() == "TYPE_CHECKING",
        _ => false,
    }
}

/// Keeps the first fact of each place.
/// Where a card index with no default comes from when the program runs, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunTimeRead {
    /// A command-line option's read (`args.gpu_id`).
    Option(String),
    /// An environment variable's read (`os.environ.get("MYLIB_DEVICE")`).
    Env(String),
}

fn one_per_place<A, B>(facts: &mut Vec<(Range<usize>, A, B)>) {
    let mut seen = rustc_hash::FxHashSet::default();
    facts.retain(|(at, _, _)| seen.insert(at.clone()));
}

/// A parameter of `def` the function never reads, or only keeps in `self.x` (`self.x =
/// param`) that no code of the module reads (`self.x`, `obj.x`); a read in a print or a log
/// call is only shown.
fn idle_param(module: &[Stmt], def: &ruff_python_ast::StmtFunctionDef, param: &str) -> bool {
    let key = flow::LoadKey::Name(param);
    let loads = flow::loads_of(&def.body, &[key]);
    let Some(loads) = loads.get(&key) else {
        return true;
    };
    // Each read must be the whole value of a `self.x = param` statement of the body.
    let mut kept: Vec<&str> = Vec::new();
    for load in loads {
        let attr = def.body.iter().find_map(|stmt| match stmt {
            Stmt::Assign(a) if range(a.value.as_ref()) == *load && a.targets.len() == 1 => {
                match &a.targets[0] {
                    Expr::Attribute(t)
                        if matches!(t.value.as_ref(), Expr::Name(n) if n.id.as_str() == "self") =>
                    {
                        Some(t.attr.as_str())
                    }
                    _ => None,
                }
            }
            _ => None,
        });
        match attr {
            Some(attr) => kept.push(attr),
            None => return false,
        }
    }
    let keys: Vec<flow::LoadKey> = kept
        .iter()
        .flat_map(|a| [flow::LoadKey::SelfAttr(a), flow::LoadKey::Attr(a)])
        .collect();
    flow::loads_of(module, &keys).is_empty()
}
