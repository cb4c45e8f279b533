//! Python support: parse with ruff's parser, collect facts, compute the effective env, apply
//! the rules, plan fixes, and prove each planned fix on its own result before offering it.

mod compile;
mod config;
mod detect;
mod effective;
mod encoding;
mod facts;
mod fix;
mod generated;
pub mod header;
pub mod index;
mod proof;
mod repair;
pub use crate::model::rules::python as rules;
mod semantic;
pub mod style;
mod verify;

pub use crate::base::lines::newline_of;
use crate::lang::python::index::{ProjectIndex, Role};
use crate::lang::{self, FileInfo, LanguageSupport, SyntaxError};
use crate::model::finding::{line_column, Finding, RuleEdits, Severity, Subject};
use crate::model::policy::{EnvVar, Policy, Scope};
pub use facts::Facts;

/// The index a device string selects (`"cuda:1"` → 1), for the project index.
pub fn device_string_index(value: &str) -> Option<u64> {
    facts::device_string(value).map(|(_, i)| i)
}

pub use facts::int_literal;
use header::PythonHeader;
use proof::prove;
pub use proof::Proof;

/// What the caller knows about the file besides its text.
pub struct FileContext<'a> {
    pub policy: &'a Policy,
    pub header: &'a PythonHeader,
    /// Declared in a mission phase: in scope whatever the rules see.
    pub in_phase: bool,
    pub is_init: bool,
    /// The top-level package the file belongs to (its directories with `__init__.py`), and the
    /// tree's packages that share a framework's name: imports of these are the tree's code.
    pub own_packages: Vec<String>,
    /// What the file is to the processes that run it (`scope = "programs"`); `None` when every
    /// GPU file carries the header, or the index does not know the file.
    pub role: Option<&'a Role>,
    /// Device constants the file imports from other modules of the tree (the index's).
    pub imported: &'a [crate::lang::python::index::ImportedConst],
    pub imported_fns: &'a [crate::lang::python::index::ImportedFn],
    /// The console scripts the tree's projects declare, sorted: a command of one that asks
    /// for several cards (`["axolotl", "train", …, "--num-processes", "2"]`) is several cards.
    pub tree_scripts: &'a [String],
    /// How a planned fix is proven (`Proof::Composed` but in the tests that compare the two).
    pub proof: Proof,
}

/// Python for the pipeline: the policy and the rendered header, shared by every file, and the
/// project index (`prepare`).
pub struct Python {
    pub policy: Policy,
    /// The header as the template writes it (files outside the prepared tree get this one).
    pub header: PythonHeader,
    index: std::sync::OnceLock<ProjectIndex>,
    styled: std::sync::OnceLock<StyledHeaders>,
    /// Python files a Rust program of the tree embeds (file → the Rust file).
    hosted: std::sync::OnceLock<Vec<(String, String)>>,
    launch_files: std::sync::OnceLock<Vec<std::path::PathBuf>>,
}

/// The header in each style the tree's directories want (`prepare`): few styles, many
/// directories.
struct StyledHeaders {
    headers: Vec<PythonHeader>,
    by_dir: std::collections::HashMap<String, usize>,
}

impl StyledHeaders {
    fn build(
        base: &PythonHeader,
        root: &std::path::Path,
        entries: &[crate::fs::walk::Entry],
    ) -> Self {
        let resolver = style::StyleResolver::new(root);
        let mut styles = Vec::new();
        let mut by_dir = std::collections::HashMap::new();
        for entry in entries {
            let dir = rel_dir(&entry.rel);
            if by_dir.contains_key(dir) || !entry.rel.ends_with(".py") {
                continue;
            }
            let at = entry.rel_path.parent().unwrap_or(std::path::Path::new(""));
            let style = resolver.at(at);
            let index = styles.iter().position(|s| *s == style).unwrap_or_else(|| {
                styles.push(style);
                styles.len() - 1
            });
            by_dir.insert(dir.to_string(), index);
        }
        StyledHeaders {
            headers: styles.iter().map(|s| base.clone().styled(s)).collect(),
            by_dir,
        }
    }
}

/// The directory part of a `/`-separated relative path.
fn rel_dir(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(dir, _)| dir)
}

impl Python {
    pub fn new(policy: Policy, header: PythonHeader) -> Python {
        Python {
            policy,
            header,
            index: std::sync::OnceLock::new(),
            styled: std::sync::OnceLock::new(),
            hosted: std::sync::OnceLock::new(),
            launch_files: std::sync::OnceLock::new(),
        }
    }

    fn hosted(&self) -> &[(String, String)] {
        self.hosted.get().map_or(&[], Vec::as_slice)
    }

    /// The header styled for the directory of `rel`.
    fn header_for(&self, rel: &str) -> &PythonHeader {
        self.styled
            .get()
            .and_then(|s| s.by_dir.get(rel_dir(rel)).map(|&i| &s.headers[i]))
            .unwrap_or(&self.header)
    }

    fn context<'a>(&'a self, info: &FileInfo) -> FileContext<'a> {
        FileContext {
            policy: &self.policy,
            header: self.header_for(info.rel),
            in_phase: info.in_phase,
            is_init: info.path.file_name().is_some_and(|n| n == "__init__.py"),
            own_packages: {
                let mut own = self
                    .index
                    .get()
                    .map_or_else(Vec::new, |i| i.shadowing(info.rel));
                own.extend(own_package(info.path).filter(|p| !own.contains(p)));
                own
            },
            role: self.index.get().and_then(|i| i.role(info.rel)),
            imported: self.index.get().map_or(&[], |i| i.imported(info.rel)),
            imported_fns: self.index.get().map_or(&[], |i| i.imported_fns(info.rel)),
            tree_scripts: self.index.get().map_or(&[], |i| i.scripts()),
            proof: Proof::Composed,
        }
    }
}

impl LanguageSupport for Python {
    fn analyze(
        &self,
        info: &FileInfo,
        source: &str,
    ) -> Result<Box<dyn lang::Analysis>, SyntaxError> {
        Ok(Box::new(analyze(source, &self.context(info))?))
    }

    fn analyze_reanalysed(
        &self,
        info: &FileInfo,
        source: &str,
    ) -> Result<Box<dyn lang::Analysis>, SyntaxError> {
        let ctx = FileContext {
            proof: Proof::Reanalysed,
            ..self.context(info)
        };
        Ok(Box::new(analyze(source, &ctx)?))
    }

    fn verify(
        &self,
        info: &FileInfo,
        old: &str,
        new: &str,
        before: &dyn lang::Analysis,
    ) -> Vec<String> {
        match before.as_any().downcast_ref::<Analysis>() {
            Some(before) => verify(old, new, before, &self.context(info)),
            None => vec!["internal error: not a Python analysis".into()],
        }
    }

    fn header_env(&self, source: &str) -> Vec<(String, String)> {
        header_env(source)
    }

    fn starts_gpu_program(&self, rel: &str) -> bool {
        self.index.get().and_then(|i| i.role(rel)).is_some_and(|r| {
            matches!(
                r,
                Role::Program { gpu: true, .. } | Role::Both { gpu: true, .. }
            )
        })
    }

    fn prepare(
        &self,
        root: &std::path::Path,
        entries: &[crate::fs::walk::Entry],
        max: u64,
        store: &dyn lang::FactStore,
    ) {
        let _ = self
            .styled
            .set(StyledHeaders::build(&self.header, root, entries));
        if self.policy.scope == Scope::Programs {
            let _ = self.index.set(ProjectIndex::build(
                root,
                entries,
                max,
                store,
                self.hosted(),
                self.launch_files.get().map_or(&[], Vec::as_slice),
                &self.policy,
            ));
        }
    }

    fn evidence(&self, rel: &str) -> Option<String> {
        self.index.get()?.role(rel).map(Role::evidence)
    }

    fn note_hosted(&self, hosted: Vec<(String, String)>) {
        let _ = self.hosted.set(hosted);
    }

    fn note_launch_files(&self, files: &[std::path::PathBuf]) {
        let _ = self.launch_files.set(files.to_vec());
    }

    fn verdict_inputs(&self, info: &FileInfo) -> String {
        let ctx = self.context(info);
        // The header as the project's style renders it for this directory: a changed ruff or
        // isort setting changes the rewrite.
        format!(
            "{:?}|{:?}|{:?}|{:?}|{}|{:?}",
            ctx.role, ctx.imported, ctx.imported_fns, ctx.own_packages, ctx.is_init, ctx.header
        )
    }

    fn settings(&self) -> String {
        format!("{:?}|{:?}", self.policy, self.header)
    }
}

/// The outermost package holding `path`: the last of its ancestor directories that all have an
/// `__init__.py`.
fn own_package(path: &std::path::Path) -> Option<String> {
    let mut top = None;
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d.as_os_str().is_empty() || !d.join("__init__.py").is_file() {
            break;
        }
        top = d.file_name().map(|n| n.to_string_lossy().into_owned());
        dir = d.parent();
    }
    top
}

/// A Python file's analysis; its facts let `verify` compare a rewrite with the original.
pub type Analysis = lang::FileAnalysis<Facts>;

fn parse(
    source: &str,
) -> Result<ruff_python_parser::Parsed<ruff_python_ast::ModModule>, SyntaxError> {
    ruff_python_parser::parse_module(source).map_err(|e| {
        let (line, column) = line_column(source, e.location.start().to_usize());
        SyntaxError {
            line,
            column,
            message: e.error.to_string(),
        }
    })
}

pub fn analyze(source: &str, ctx: &FileContext) -> Result<Analysis, SyntaxError> {
    analyze_with(source, ctx, Depth::Plan)
}

/// How much of the analysis a caller needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// Everything, with a planned and proven fix (a file as it is on disk).
    Plan,
    /// Every finding, no fix (a rewrite, checked before it is written).
    Check,
    /// Only the effective env (the proof of a planned fix).
    EnvProof,
}

/// The analysis; with `plan`, also the edits of a fix, each proven on its own result: a fix
/// whose result would still break the env policy is withheld and its findings say why.
fn analyze_with(source: &str, ctx: &FileContext, depth: Depth) -> Result<Analysis, SyntaxError> {
    let plan = depth == Depth::Plan;
    let parsed = parse(source)?;
    let body = &parsed.syntax().body;
    let mut facts = facts::collect(
        source,
        body,
        &ctx.own_packages,
        if depth == Depth::EnvProof {
            facts::Reading::EnvOnly
        } else {
            facts::Reading::All
        },
        ctx.imported,
        ctx.imported_fns,
    );
    let tree_commands: Vec<_> = facts
        .program_commands
        .iter()
        .filter(|(_, program, _, _)| ctx.tree_scripts.binary_search(program).is_ok())
        .map(|(at, program, n, option)| {
            (
                at.clone(),
                format!("the command it starts asks `{program}` (a console script of this tree) for {option}"),
                facts::MultiKind::Cards(*n),
            )
        })
        .collect();
    facts.multi_gpu.extend(tree_commands);
    // A rewrite only adds module-level statements, a docstring line and a function to text that
    // compiled: the check is for inputs (`plan`), not for the proof of a rewrite.
    let repair = plan.then(|| repair::late_futures(source, body)).flatten();
    let refused = (plan && repair.is_none()).then(|| compile::first_error(source, body));
    if let Some((at, message)) = refused.flatten() {
        let (line, column) = line_column(source, at);
        return Err(SyntaxError {
            line,
            column,
            message: format!("{message} (CPython refuses this file as it is)"),
        });
    }
    let effective = effective::compute(body, &facts);
    let blocks = config::blocks(source, body, &facts, &facts.bindings);
    let gpu_code = facts.runtime_gpu_imports().next().is_some()
        || facts.effects.iter().any(|e| e.var().is_some() && !e.child)
        || !facts.devices.is_empty();
    // Who carries the header: every GPU file, or the entry points of GPU programs.
    let header_here = match ctx.role {
        None => gpu_code,
        // A process that hides every card at its start uses none, whatever code it holds.
        Some(Role::Program { hides: true, .. }) => false,
        Some(Role::Program { gpu, .. }) => *gpu || uses_card(&facts),
        Some(Role::Library { .. } | Role::Both { .. }) => false,
    };
    let rule_ctx = detect::RuleContext {
        policy: ctx.policy,
        header: ctx.header,
        in_scope: header_here || ctx.in_phase,
        is_init: ctx.is_init,
        role: ctx.role,
    };
    let mut findings: Vec<Finding> = detect::findings(&facts, &effective, &rule_ctx)
        .into_iter()
        .map(|f| match f.rule.edits {
            // The env written where only the program runs (GH206): its edits need the text.
            RuleEdits::SetsEnv => {
                let edits = fix::main_block_env(&facts, ctx.header, newline_of(source));
                f.with_edits(edits)
            }
            _ => f,
        })
        .collect();
    findings.extend(repair);
    // In the file's order, as every output lists them (the repairs were found apart).
    findings.sort_by_key(|f| (f.range.start, f.rule.code));
    // A library is judged when it touches a GPU; any file is judged when it breaks a rule or
    // needs a look (an NVML monitor, a launcher giving its child a card): a finding is never
    // reported under "without GPU code".
    let judged = rule_ctx.in_scope
        || findings.iter().any(|f| f.rule.severity != Severity::Info)
        || match ctx.role {
            Some(Role::Library { .. }) => touches(&facts),
            // A program that is also a library, and reaches no GPU code, runs its process
            // group on the CPU.
            Some(Role::Both { gpu, .. }) => *gpu || touches_card(&facts),
            Some(Role::Program { .. }) | None => false,
        };
    let mut edits = Vec::new();
    let mut unsafe_edits = Vec::new();
    if plan && findings.iter().any(|f| f.is_violation() && f.fixable) {
        let env_fix = findings
            .iter()
            .any(|f| f.is_violation() && f.rule.env && f.rule.edits == RuleEdits::ByHeader);
        let encoding = encoding::Encoding::of(source).unwrap_or(encoding::Encoding::Utf8);
        let input = fix::FixInput {
            source,
            facts: &facts,
            effective: &effective,
            blocks: &blocks,
            findings: &findings,
            ctx: &rule_ctx,
            newline: newline_of(source),
            encoding: &encoding,
            env_fix,
        };
        // The smallest fix first (the first block kept as written), else the full one.
        let minimal = if env_fix {
            fix::plan_minimal(&input)
                .and_then(|p| p.and_then(|e| prove(source, e, &facts, ctx)).ok())
        } else {
            None
        };
        // A file is rewritten only when the rewrite leaves no violation it cannot fix: never
        // half-rewritten (a header over an index no card has would hide what to change).
        // A violation a person accepted on its line (`# noqa: GH204`) holds nothing back: it
        // is taken out of the report, and the other findings' fix is still due.
        let python = crate::model::outcome::Language::Python;
        let file_noqa = crate::lang::suppress::file_noqa(source, python);
        let accepted = |f: &Finding| {
            if file_noqa.as_ref().is_some_and(|n| n.covers(f.rule.code)) {
                return true;
            }
            let line = crate::base::lines::line_start(source, f.range.start)
                ..crate::base::lines::line_end(source, f.range.start);
            crate::lang::suppress::noqa_of(&source[line], python)
                .is_some_and(|n| n.covers(f.rule.code))
        };
        // A test file pytest runs with the others of its suite is configured once for the
        // suite, in the `conftest.py` pytest imports first, not by a copy of the header per
        // test file; unless its fix changes more than adding the header (an index renumbered
        // keeps its mask beside it; a configuration written by hand is repaired where it is).
        let suite = match ctx.role {
            Some(Role::Program {
                why: index::EntryWhy::Test { suite },
                ..
            }) if findings
                .iter()
                .all(|f| !f.is_violation() || f.rule.code == rules::HEADER_MISSING.code) =>
            {
                Some(suite_conftest(suite))
            }
            _ => None,
        };
        // A generated file (nbdev's `# AUTOGENERATED! DO NOT EDIT!`) loses any edit when it is
        // written again: its source is what to change.
        let generated = generated::marker(source).map(|m| {
            format!("the file says it is generated (`{m}`): an edit here is lost when it is generated again; set the env in its source")
        });
        let left = suite.or(generated).or_else(|| {
            findings
                .iter()
                .find(|f| {
                    // A launch of an unknown number of processes: the header would leave
                    // each of them the policy's cards, which may be too few.
                    (f.is_violation() && !f.fixable
                        || f.rule.code == rules::LAUNCH_COUNT_UNKNOWN.code)
                        && !accepted(f)
                })
                .map(|f| {
                    let (line, _) = line_column(source, f.range.start);
                    format!(
                        "{} on line {line} would be left, and a file is not half-rewritten",
                        f.rule.code
                    )
                })
        });
        let planned = match (left, minimal) {
            (Some(why), _) => Err(why),
            (None, Some(edits)) => Ok(edits),
            (None, None) => fix::plan(&input).and_then(|e| prove(source, e, &facts, ctx)),
        };
        match planned {
            Ok(planned) => {
                // The validation call is the unsafe part of the header fix: kept apart.
                let validation = fix::validation_edits(&input);
                (unsafe_edits, edits) = planned.into_iter().partition(|e| validation.contains(e));
                if let (true, Some(forks), Some(_)) = (
                    env_fix
                        && facts.uses_torch
                        && facts.cuda_use
                        && facts.cpu_path.is_none()
                        && !ctx.is_init,
                    &facts.forks,
                    &facts.main_block,
                ) {
                    findings.push(
                        Finding::new(
                            &rules::VALIDATION_NOT_CALLED,
                            forks.clone(),
                            "the header's validation call is not added: it would start CUDA before the workers start",
                        )
                        .with_help("forked workers cannot use CUDA: validate in the workers instead"),
                    );
                }
            }
            Err(why) => withhold(&mut findings, &why),
        }
    }
    Ok(Analysis {
        findings,
        gpu_code,
        in_scope: judged,
        edits,
        unsafe_edits,
        details: facts,
    })
}

/// The file touches a GPU: it selects or uses a CUDA device, writes a GPU env variable for its
/// own process, assumes several cards, or uses a framework that takes a GPU unasked. Importing
/// torch for types, a dataclass of arguments or CPU tensors is not GPU code.
fn touches(facts: &Facts) -> bool {
    touches_card(facts) || !facts.multi_gpu.is_empty()
}

/// `touches`, less `import torch.distributed`: a process group is several processes, not a
/// card, and one whose process reaches no GPU code runs on the CPU (the index's `gpu_sites`
/// counts it so too).
fn touches_card(facts: &Facts) -> bool {
    uses_card(facts)
        || facts
            .runtime_gpu_imports()
            .any(|i| crate::knowledge::python::gpu_by_default(&i.module))
}

/// `touches_card`, less the imports of frameworks that take a GPU unasked: for a program, the
/// project index has read where the names they bind are used, and a use that names the CPU
/// (`WhisperModel("small", device="cpu")`) reaches no card.
pub(crate) fn uses_card(facts: &Facts) -> bool {
    facts.cuda_use
        || !facts.devices.is_empty()
        || facts
            .multi_gpu
            .iter()
            .any(|(_, _, kind)| *kind != facts::MultiKind::Distributed)
        || facts.effects.iter().any(|e| e.var().is_some() && !e.child)
}

/// `touches` for the project index, by place: the offsets where one parsed file touches a GPU
/// (empty: it does not), so that the index can tell import-time code from each function's; and
/// those where it hides every card (`CUDA_VISIBLE_DEVICES = ""`), which make its process a CPU
/// one. `own_packages`: imports of these are the tree's, not a framework's.
pub fn gpu_sites(
    source: &str,
    body: &[ruff_python_ast::Stmt],
    own_packages: &[String],
) -> GpuSites {
    let facts = facts::collect(source, body, own_packages, facts::Reading::Sites, &[], &[]);
    // Code that needs more than one card by design: a device taken from the process rank
    // (unless the file starts one worker per visible GPU), literal indices or lists of several
    // cards, indices used together.
    let mut needs: Vec<(usize, Need)> = facts
        .multi_gpu
        .iter()
        .filter_map(|(at, _, kind)| match kind {
            // Workers the same module starts (`mp.spawn(worker, nprocs=num_gpus)` beside
            // `set_device(rank)`): several ranks in whatever program runs it.
            facts::MultiKind::Rank if !facts.spawns_per_visible_gpu => Some((
                at.start,
                if facts.forks.is_some() {
                    Need::RanksForked
                } else {
                    Need::Ranks
                },
            )),
            facts::MultiKind::Cards(n) if *n > 1 => Some((at.start, Need::Cards(*n))),
            facts::MultiKind::Launcher | facts::MultiKind::CardsAtRunTime => {
                Some((at.start, Need::Launcher))
            }
            _ => None,
        })
        .collect();
    // Ranks that each take a card (an NCCL group): several cards only where a program starts
    // several of them (`mp.spawn(fn, nprocs=4)`), which the program's own facts say.
    needs.extend(
        facts
            .rank_cards
            .iter()
            .map(|(at, _)| (at.start, Need::RankGroup)),
    );
    needs.extend(facts.together.iter().map(|(group, _)| {
        (
            facts.devices[group[1]].at.start,
            Need::Cards(group.len() as u64),
        )
    }));
    needs.sort_by_key(|(at, _)| *at);
    let mut sites = facts.cuda_sites.clone();
    sites.extend(facts.devices.iter().map(|d| d.at.start));
    // `import torch.distributed` is several processes, not a card: a module that only asks
    // for its rank (`dist.get_rank()`) or reduces what it is handed reaches no GPU of its own.
    sites.extend(
        facts
            .multi_gpu
            .iter()
            .filter(|(_, _, kind)| *kind != facts::MultiKind::Distributed)
            .map(|(at, _, _)| at.start),
    );
    sites.extend(
        facts
            .effects
            .iter()
            .filter(|e| e.var().is_some() && !e.child)
            .filter(|e| !detect::is_cpu_mask(e))
            .map(|e| e.at.start),
    );
    sites.extend(
        facts
            .runtime_gpu_imports()
            .filter(|i| crate::knowledge::python::gpu_by_default(&i.module))
            .map(|i| i.range.start),
    );
    // Hiding every card (`CUDA_VISIBLE_DEVICES = ""`) is GPU code of the file itself (GH010),
    // but a process whose code does only that reaches no card.
    debug_assert!(sites.is_empty() || touches(&facts));
    sites.sort_unstable();
    sites.dedup();
    let hides = facts
        .effects
        .iter()
        // Set, not only defaulted: a mask the caller gave stays otherwise.
        .filter(|e| !e.child && detect::is_cpu_mask(e) && matches!(e.op, facts::EnvOp::Set(_)))
        .map(|e| e.at.start)
        .collect();
    // Writes of a GPU variable a program's header may have set before them (not a child's
    // env, not a CPU-only mask, not a whole-environment change).
    let sets = facts
        .effects
        .iter()
        .filter(|e| !e.child && !detect::is_cpu_mask(e))
        .filter_map(|e| {
            let var = e.var()?;
            let (value, default) = match &e.op {
                facts::EnvOp::Set(v) => (Some(v), false),
                facts::EnvOp::SetDefault(v) => (Some(v), true),
                facts::EnvOp::Unset => (None, false),
                facts::EnvOp::Clobber => return None,
            };
            let value = value.map(|v| match v {
                facts::Val::Lit(s) => EnvValue::Lit(s.clone()),
                facts::Val::Computed => EnvValue::Computed,
            });
            Some((
                e.at.start,
                EnvSet {
                    var,
                    value: value.unwrap_or(EnvValue::Removed),
                    default,
                },
            ))
        })
        .collect();
    GpuSites {
        sites,
        hides,
        sets,
        needs,
        index_params: facts.index_params,
        queries: facts.cuda_queries,
    }
}

/// Where a parsed file touches a GPU, for the project index (see [`gpu_sites`]).
#[derive(Debug, Default)]
pub struct GpuSites {
    pub sites: Vec<usize>,
    /// Where it hides every card.
    pub hides: Vec<usize>,
    /// Where it writes a GPU variable, and what.
    pub sets: Vec<(usize, EnvSet)>,
    /// Where it needs more than one card by design, and how.
    pub needs: Vec<(usize, Need)>,
    /// Parameters of its top-level functions and classes that choose a card.
    pub index_params: Vec<facts::IndexParam>,
    /// Where it asks the driver for its cards (the env is read then).
    pub queries: Vec<usize>,
}

/// A write of a GPU variable, as the project index keeps it: a program's process that runs it
/// after its header no longer has the policy's value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EnvSet {
    pub var: crate::model::policy::EnvVar,
    pub value: EnvValue,
    /// `os.environ.setdefault`: writes only a variable not set yet.
    pub default: bool,
}

/// What an [`EnvSet`] writes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EnvValue {
    Lit(String),
    Computed,
    Removed,
}

impl EnvSet {
    /// Whether a process whose header set the policy's env keeps the policy's value through it:
    /// the same value, or a default the header's value stands before.
    pub fn keeps(&self, policy: &Policy) -> bool {
        let want = policy.env_value(self.var);
        match &self.value {
            _ if self.default && want.is_some() => true,
            EnvValue::Lit(v) => want == Some(v.as_str()) && !policy.respect_scheduler,
            EnvValue::Computed | EnvValue::Removed => false,
        }
    }

    /// What it does, for a finding: `sets CUDA_VISIBLE_DEVICES to a computed value`.
    pub fn describe(&self) -> String {
        let name = self.var.name();
        match &self.value {
            EnvValue::Lit(v) => format!("sets {name} to '{v}'"),
            EnvValue::Computed => format!("sets {name} to a computed value"),
            EnvValue::Removed => format!("removes {name}"),
        }
    }
}

/// How code needs more than one card: one per process rank, or a number of cards at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Need {
    Ranks,
    /// One per rank, in a module that starts the workers itself.
    RanksForked,
    Cards(u64),
    /// A distributed launcher run in-process: as many processes as the program's arguments
    /// say.
    Launcher,
    /// Each rank takes a card of its own (an NCCL group, `rank % device_count()`): one card
    /// per process a program starts, which alone needs nothing more.
    RankGroup,
}

impl Need {
    /// Evidence that each rank takes a card, needing several only with several ranks.
    pub fn per_rank(self) -> bool {
        matches!(self, Need::Ranks | Need::RanksForked | Need::RankGroup)
    }
}

/// Why a test file of a suite with no `conftest.py` gets no header of its own, and what to do.
fn suite_conftest(suite: &str) -> String {
    let (tests, conftest) = if suite.is_empty() {
        (
            "the tests at the root".to_string(),
            "conftest.py".to_string(),
        )
    } else {
        (format!("`{suite}/`"), format!("{suite}/conftest.py"))
    };
    format!(
        "pytest runs {tests} in one process: the header goes once in `{conftest}` (create it, \
         then run `fix`)"
    )
}

/// The fix cannot be made: every violation stays, marked not fixable, with the reason.
fn withhold(findings: &mut [Finding], why: &str) {
    for f in findings
        .iter_mut()
        .filter(|f| f.is_violation() && f.fixable)
    {
        f.fixable = false;
        f.edits.clear();
        // A fix held back says why, or the user is left to guess (an unsafe fix that
        // `--unsafe-fixes` does not apply). A remapped index says it once, on the header's.
        if f.rule.subject != Subject::DeviceIndex {
            f.add_help(&format!("not fixed automatically: {why}"));
        }
    }
}

/// Check a rewrite: it must parse and keep every invariant. Returns the problems found.
pub fn verify(old: &str, new: &str, before: &Analysis, ctx: &FileContext) -> Vec<String> {
    match analyze_with(new, ctx, Depth::Check) {
        Err(e) => vec![format!("the rewrite does not parse ({e})")],
        Ok(after) => verify::invariants(old, new, before, &after),
    }
}

/// The env the file ends up with at its first CUDA use: what the GPU check runs it with.
pub fn header_env(source: &str) -> Vec<(String, String)> {
    let Ok(parsed) = ruff_python_parser::parse_module(source) else {
        return Vec::new();
    };
    let body = &parsed.syntax().body;
    let facts = facts::collect(source, body, &[], facts::Reading::EnvOnly, &[], &[]);
    let effective = effective::compute(body, &facts);
    EnvVar::ALL
        .into_iter()
        .filter_map(|var| {
            effective
                .at_end
                .value(var)
                .map(|v| (var.name().to_string(), v.to_string()))
        })
        .collect()
}
