//! One pass over a syn AST: what the file does with GPUs. `use` aliases, every change of the
//! managed env variables (set, remove, a child's env) with where it runs, device constructors
//! and the value that reaches their index (literal, const/static, `let`), match patterns on
//! devices, NVML indices, and the `fn main` compiled with the GPU features. Macro bodies are
//! read too (see `macros`). Byte ranges come from proc-macro2 spans (`span-locations`).

mod macros;
pub mod mains;
mod trace;

use std::collections::HashMap;
use std::ops::Range;

use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Expr, ExprCall, ExprLit, ExprMethodCall, ExprStruct, Lit, Stmt, UseTree};

use crate::model::policy::EnvVar;
pub use mains::MainFn;
pub use trace::Hidden;

pub use crate::knowledge::rust::INDEX_CALLS;

/// The last segments of [`INDEX_CALLS`]: a call named otherwise is never resolved.
static INDEX_CALL_NAMES: std::sync::LazyLock<Vec<&'static str>> =
    std::sync::LazyLock::new(|| crate::knowledge::rust::index_call_names().collect());

/// The receiver chain of a method names the CUDA or TensorRT provider
/// (`CUDAExecutionProvider::default().with_device_id(1)`).
fn cuda_receiver(expr: &Expr) -> bool {
    match expr {
        Expr::MethodCall(m) => cuda_receiver(&m.receiver),
        Expr::Call(c) => cuda_receiver(&c.func),
        Expr::Path(p) => p.path.segments.iter().any(|s| {
            let id = s.ident.to_string();
            id.starts_with("CUDA") || id.starts_with("Cuda") || id.starts_with("TensorRT")
        }),
        Expr::Paren(p) => cuda_receiver(&p.expr),
        _ => false,
    }
}

/// Whether a path's last segment is one of `names` (a cheap test before resolving it).
fn last_is(path: &syn::Path, names: &[&str]) -> bool {
    path.segments
        .last()
        .is_some_and(|s| names.iter().any(|n| s.ident == n))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvOp {
    /// `set_var(k, v)`: the literal value, `None` when computed.
    Set(Option<String>),
    /// `if var_os(k).is_none() { set_var(k, v) }`: v unless the launcher (a scheduler) set it.
    SetDefault(Option<String>),
    Remove,
}

/// Where an env change runs, relative to the chosen `fn main`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A top-level statement of main: runs once, in order.
    MainTop,
    /// Inside main, under a branch, loop, closure or macro: may run.
    MainNested,
    /// Anywhere else (another function, a closure, a static initialiser): may run at any time.
    Elsewhere,
}

#[derive(Debug, Clone)]
pub struct EnvEffect {
    pub var: EnvVar,
    pub op: EnvOp,
    /// The call.
    pub at: Range<usize>,
    /// The statement that removes it whole (the call, or an `unsafe { }` of env calls only);
    /// `None` when it is part of a larger expression or a macro body.
    pub stmt: Option<Range<usize>>,
    pub place: Place,
}

/// The command a child-env call configures: the name at the root of its method chain (`cmd` in
/// `cmd.env(..)`) and the enclosing function; `None` for a chain on `Command::new(..)` itself.
pub type CommandName = Option<(String, Option<Range<usize>>)>;

/// `Command::env(k, v)` / `envs([(k, v), …])` / `env_remove(k)` / `env_clear()`: the env of a
/// child process.
#[derive(Debug, Clone)]
pub struct ChildEnv {
    pub var: EnvVar,
    /// `None` for `env_remove`/`env_clear`; `Some(None)` for a computed value.
    pub value: Option<Option<String>>,
    pub value_range: Option<Range<usize>>,
    pub at: Range<usize>,
    /// The method: `env`, `envs`, `env_remove` or `env_clear`.
    pub method: &'static str,
    /// The command it configures.
    pub command: CommandName,
}

/// What reaches a device constructor's index.
#[derive(Debug, Clone)]
pub enum Arg {
    Lit {
        digits: Range<usize>,
        value: u64,
    },
    Name {
        name: String,
        at: Range<usize>,
    },
    /// `args.gpu`: a field, followed to a command-line option's default (see [`OptionDefault`]).
    Field {
        name: String,
        at: Range<usize>,
    },
    /// A value the tool follows to no card it can remap (see [`Hidden`]).
    Opaque {
        at: Range<usize>,
        hidden: Hidden,
    },
}

/// `#[arg(default_value_t = 1)] gpu: usize` (clap, structopt): the index a command-line option
/// holds when it is not given.
#[derive(Debug, Clone)]
pub struct OptionDefault {
    pub field: String,
    pub digits: Range<usize>,
    pub value: u64,
}

#[derive(Debug, Clone)]
pub struct DeviceSink {
    pub what: String,
    pub arg: Arg,
    /// The enclosing function, for `let` bindings.
    pub scope: Option<Range<usize>>,
    /// Where the index expression starts: the sinks of one expression's branches share it.
    pub expr: usize,
}

/// A name bound in a function (`let`, a parameter, a pattern) or as a const/static item.
#[derive(Debug, Clone)]
pub struct Binding {
    pub name: String,
    /// The integer literals it can be bound to (not `mut`): one, or one per branch.
    pub literals: Vec<(Range<usize>, u64)>,
    pub at: Range<usize>,
    /// The function it is local to; `None` for items.
    pub scope: Option<Range<usize>>,
    /// A loop variable over a range (`for i in 0..2`, `(0..=1).map(|i| …)`, `for i in
    /// 0..num_gpus`): how many indices it takes (`None`: a bound computed at run time), and
    /// the loop body or closure where it is visible.
    pub iterates: Option<(Option<u64>, Range<usize>)>,
    /// What it holds when no literal is followed and the value is not read at run time: a
    /// method's or closure's parameter, a function's return, a parsed string.
    pub hidden: Option<Hidden>,
    /// `let id = args.device.trim_start_matches("cuda:").parse()?`, `if let Some(id) =
    /// parse_device(&args.device)`: a number parsed from this field (a command-line option,
    /// followed to its default as [`Arg::Field`] is).
    pub parsed_from: Option<String>,
}

/// `count += 1` inside a loop: a name that takes a new value on each pass.
#[derive(Debug, Clone)]
pub struct Counter {
    pub name: String,
    /// The increment.
    pub at: Range<usize>,
    /// The whole loop (a `while` with its condition), where a use of the name takes each value.
    pub within: Range<usize>,
    /// The function it is local to.
    pub scope: Option<Range<usize>>,
}

#[derive(Debug, Default)]
pub struct Facts {
    pub uses_gpu_crate: bool,
    pub env: Vec<EnvEffect>,
    pub child_env: Vec<ChildEnv>,
    pub sinks: Vec<DeviceSink>,
    pub bindings: Vec<Binding>,
    pub counters: Vec<Counter>,
    /// Every single-name path expression: (name, range, shown only in a format macro).
    pub uses: Vec<(String, Range<usize>, bool)>,
    /// `Device::Cuda(N)` in a pattern, N ≠ 0.
    pub patterns: Vec<(Range<usize>, u64)>,
    pub nvml_indices: Vec<(Range<usize>, u64)>,
    /// Calls that choose a GPU through an API the CUDA mask does not govern (Vulkan, wgpu,
    /// OpenCL): where, and the row of `knowledge::rust::FOREIGN_CHOICES`.
    pub foreign_choices: Vec<(Range<usize>, usize)>,
    /// Device indices that several cards can take: a list of devices, an index computed from
    /// a rank or by arithmetic (`new_cuda(rank + 1)`): where, and what it is.
    pub computed_indices: Vec<(Range<usize>, String)>,
    pub option_defaults: Vec<OptionDefault>,
    /// Every integer literal a struct literal gives a named field: (field, digits, value).
    pub field_lits: Vec<(String, Range<usize>, u64)>,
    /// `assert!(Device::nth(129).is_err())`: a constructor expected to fail, a deliberate
    /// probe of an index that is no card.
    pub probes: Vec<Range<usize>>,
    /// Command-line options that select several cards (`--devices 0,1`, `--num-gpus 2`):
    /// where, and what each is.
    pub multi_gpu_options: Vec<(Range<usize>, String)>,
    /// Device indices given as a struct literal's field whose name says it holds ordinals
    /// (`Config { device_indices: vec![1] }`, see `knowledge::rust::index_field`), and those
    /// computed there: indices only in GPU code, so kept apart until the file's role says so
    /// ([`Facts::admit_index_fields`]).
    pub field_sinks: Vec<DeviceSink>,
    pub field_computed: Vec<(Range<usize>, String)>,
    pub main: Option<MainFn>,
    /// The other mains the GPU build may compile instead (see [`mains::alternatives`]).
    pub alt_mains: Vec<MainFn>,
    /// `#[cfg(test)]` modules: unit tests, run by libtest in a process no `main` masks.
    pub test_code: Vec<Range<usize>>,
    /// A top-level macro that generates `main` (`criterion_main!(…)`): where, and its name.
    pub macro_main: Option<(Range<usize>, String)>,
    /// `#![forbid(unsafe_code)]` / `#![deny(unsafe_code)]` at the top of the file.
    pub forbids_unsafe: bool,
    /// End of the inner attributes and `//!` docs at the top of the file.
    pub inner_attrs_end: Option<usize>,
    /// Start of the first item.
    pub first_item: Option<usize>,
    /// The names private `use` items bind (a fix takes out the ones it leaves unused).
    pub use_leaves: Vec<super::imports::UseLeaf>,
}

impl Facts {
    /// The device indices of ordinal-named struct fields are indices in GPU code (`gpu`):
    /// moved among the other sinks then, dropped otherwise (a CPU tool's `device_id: 1` is
    /// an audio device's).
    pub fn admit_index_fields(&mut self, gpu: bool) {
        let sinks = std::mem::take(&mut self.field_sinks);
        let computed = std::mem::take(&mut self.field_computed);
        if gpu {
            self.sinks.extend(sinks);
            self.computed_indices.extend(computed);
        }
    }
}

/// The bytes of a node. `Spanned::span` turns the whole node back into tokens to join their
/// spans, so this is for small nodes or rare ones; see [`fn_range`] for functions.
pub fn range(node: &impl Spanned) -> Range<usize> {
    node.span().byte_range()
}

/// A function from `fn` to its closing brace: the scope of its `let` bindings, at the cost of
/// two spans rather than the whole function's tokens.
fn fn_range(sig: &syn::Signature, block: &syn::Block) -> Range<usize> {
    sig.fn_token.span.byte_range().start..block.brace_token.span.close().byte_range().end
}

/// The bytes of a single-name path expression.
fn ident_range(p: &syn::ExprPath, ident: &syn::Ident) -> Range<usize> {
    if p.attrs.is_empty() {
        ident.span().byte_range()
    } else {
        range(p)
    }
}

/// What other files of the tree hand to a device index: (name, what it reaches).
#[derive(Debug, Clone, Copy, Default)]
pub struct HandedOn<'a> {
    /// Struct fields: a command-line default of that name in this file is an index.
    pub fields: &'a [(String, String)],
    /// `const`/`static` items: one of that name in this file is an index.
    pub consts: &'a [(String, String)],
}

/// The facts of a file; `callable`: the functions of the tree that take a device index (see
/// `index_fns`), whose calls are device indices too; `handed`: the struct fields and items the
/// crate hands to a device index elsewhere, whose default or value in this file is one.
pub fn collect(
    file: &syn::File,
    callable: &[super::index_fns::IndexFn],
    handed: HandedOn,
) -> Facts {
    let fields = handed.fields;
    let mut aliases = HashMap::new();
    // A `use` inside `cfg_if!` imports as much as one outside it.
    let expanded = mains::expand_cfg_if(&file.items);
    for item in expanded.as_deref().unwrap_or(&file.items) {
        match item {
            syn::Item::Use(u) => collect_use(&u.tree, String::new(), &mut aliases),
            // `extern crate coaster as co;` binds `co` as `use coaster as co;` does.
            syn::Item::ExternCrate(c) if c.ident != "self" => {
                let name = c.rename.as_ref().map_or(&c.ident, |(_, r)| r).to_string();
                aliases.insert(name, c.ident.to_string());
            }
            _ => {}
        }
    }
    let mut str_consts = StrConsts::default();
    str_consts.visit_file(file);
    let renamed = aliases
        .iter()
        .filter(|(name, full)| full.rsplit("::").next() != Some(name.as_str()))
        .map(|(name, _)| name.clone())
        .collect();
    let mut globs: Vec<String> = aliases
        .iter()
        .filter(|(k, _)| k.ends_with("::*"))
        .map(|(_, prefix)| prefix.clone())
        .filter(|p| {
            let first = p.split("::").next().unwrap_or_default();
            !p.is_empty() && !matches!(first, "crate" | "self" | "super" | "std" | "core")
        })
        .collect();
    globs.sort();
    let mut local_items = std::collections::HashSet::new();
    local_names(&file.items, &mut local_items);
    let mut v = FactVisitor {
        globs,
        local_items,
        loop_vars: Vec::new(),
        loops: Vec::new(),
        card_counts: Vec::new(),
        computed_envs: Vec::new(),
        renamed,
        aliases,
        str_consts: str_consts.0,
        facts: Facts::default(),
        scope: None,
        display: 0,
        handled_calls: Vec::new(),
        callable: callable.to_vec(),
        cli_struct: false,
        literals: trace::FileLiterals::of(file),
        closures: Vec::new(),
    };
    v.facts.uses_gpu_crate = v.aliases.values().any(|p| is_gpu_path(p));
    v.facts.inner_attrs_end = file.attrs.iter().map(|a| range(a).end).max();
    v.facts.first_item = file.items.first().map(|i| range(i).start);
    v.facts.use_leaves = super::imports::leaves(file);
    v.facts.forbids_unsafe = file.attrs.iter().any(forbids_unsafe);
    v.facts.main = mains::choose(&file.items);
    v.facts.alt_mains = mains::alternatives(&file.items);
    v.facts.macro_main = file.items.iter().find_map(|item| match item {
        syn::Item::Macro(m) => {
            let name = m.mac.path.segments.last()?.ident.to_string();
            (name.ends_with("_main") || name == "main").then(|| (range(&m.mac.path), name))
        }
        _ => None,
    });
    v.visit_file(file);
    // A default whose field reaches an index in another file of the crate: a sink where the
    // default is written (unless this file hands the field to an index itself).
    for d in v.facts.option_defaults.clone() {
        let here = v
            .facts
            .sinks
            .iter()
            .any(|s| matches!(&s.arg, Arg::Field { name, .. } if *name == d.field));
        if let Some((_, what)) = fields.iter().find(|(f, _)| *f == d.field).filter(|_| !here) {
            v.facts.sinks.push(DeviceSink {
                what: format!("{what},"),
                arg: Arg::Field {
                    name: d.field.clone(),
                    at: d.digits.clone(),
                },
                scope: None,
                expr: d.digits.start,
            });
        }
    }
    // An item of this file another file hands to an index (`new_cuda(config::GPU)`): a sink
    // where its value is written (unless this file hands it to an index itself). Each is its
    // own choice: two items of one file are not two cards of one function.
    let items: Vec<Binding> = v
        .facts
        .bindings
        .iter()
        .filter(|b| b.scope.is_none() && !b.literals.is_empty())
        .cloned()
        .collect();
    for b in items {
        let here = v
            .facts
            .sinks
            .iter()
            .any(|s| matches!(&s.arg, Arg::Name { name, .. } if *name == b.name));
        let twice = v
            .facts
            .bindings
            .iter()
            .filter(|o| o.scope.is_none() && o.name == b.name)
            .count()
            > 1;
        if let Some((_, what)) = handed.consts.iter().find(|(n, _)| *n == b.name) {
            if !here && !twice {
                v.facts.sinks.push(DeviceSink {
                    what: format!("{what},"),
                    arg: Arg::Name {
                        name: b.name.clone(),
                        at: b.at.clone(),
                    },
                    scope: Some(b.at.clone()),
                    expr: b.at.start,
                });
            }
        }
    }
    let main = v.facts.main.clone();
    for effect in &mut v.facts.env {
        effect.place = place(main.as_ref(), effect);
    }
    // `env_clear()` does not clear what the same command sets again afterwards, by name or
    // through a computed `envs(…)`.
    let child_env = std::mem::take(&mut v.facts.child_env);
    let set_again = |c: &ChildEnv| {
        let by_name = child_env.iter().any(|d| {
            d.var == c.var
                && d.value.is_some()
                && later_on_same_command((&c.at, &c.command), (&d.at, &d.command))
        });
        by_name
            || v.computed_envs
                .iter()
                .any(|(at, command)| later_on_same_command((&c.at, &c.command), (at, command)))
    };
    v.facts.child_env = child_env
        .iter()
        .filter(|c| c.method != "env_clear" || !set_again(c))
        .cloned()
        .collect();
    v.facts
}

/// A child-env call: its range and the command it configures (see [`ChildEnv::command`]).
type CommandCall<'a> = (&'a Range<usize>, &'a CommandName);

/// Whether `d` configures the command `c` configured, after it: later in the same method chain
/// (`.env_clear().env(..)`), or a later call on the same variable in the same function.
fn later_on_same_command((c_at, c_cmd): CommandCall, (d_at, d_cmd): CommandCall) -> bool {
    let chained = d_at.start == c_at.start && d_at.end > c_at.end;
    let same_name = c_cmd.is_some() && c_cmd == d_cmd && d_at.start > c_at.end;
    chained || same_name
}

fn place(main: Option<&MainFn>, effect: &EnvEffect) -> Place {
    let Some(main) = main else {
        return Place::Elsewhere;
    };
    if !(main.body.start <= effect.at.start && effect.at.end <= main.body.end) {
        return Place::Elsewhere;
    }
    match &effect.stmt {
        Some(stmt) if main.stmts.contains(stmt) => Place::MainTop,
        _ => Place::MainNested,
    }
}

pub fn forbids_unsafe(attr: &syn::Attribute) -> bool {
    let level = attr.path().is_ident("forbid") || attr.path().is_ident("deny");
    level
        && attr
            .parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|lints| lints.iter().any(|p| p.is_ident("unsafe_code")))
}

pub fn is_gpu_path(path: &str) -> bool {
    let first = path
        .trim_start_matches("::")
        .split("::")
        .next()
        .unwrap_or("");
    crate::knowledge::rust::is_gpu_crate(first)
}

pub(super) fn collect_use(tree: &UseTree, prefix: String, out: &mut HashMap<String, String>) {
    let join = |name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}::{name}")
        }
    };
    match tree {
        UseTree::Path(p) => collect_use(&p.tree, join(&p.ident.to_string()), out),
        UseTree::Name(n) => {
            let name = n.ident.to_string();
            let (local, full) = if name == "self" {
                (
                    prefix.rsplit("::").next().unwrap_or("").to_string(),
                    prefix.clone(),
                )
            } else {
                (name.clone(), join(&name))
            };
            out.insert(local, full);
        }
        UseTree::Rename(r) => {
            out.insert(r.rename.to_string(), join(&r.ident.to_string()));
        }
        UseTree::Group(g) => {
            for t in &g.items {
                collect_use(t, prefix.clone(), out);
            }
        }
        UseTree::Glob(_) => {
            out.insert(format!("{prefix}::*"), prefix.clone());
        }
    }
}

/// `const NAME: &str = "CUDA_VISIBLE_DEVICES";`: keys and values written through a name.
#[derive(Default)]
struct StrConsts(HashMap<String, String>);

impl<'ast> Visit<'ast> for StrConsts {
    fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
        if let Some(s) = str_lit(&c.expr) {
            self.0.insert(c.ident.to_string(), s);
        }
    }
    fn visit_item_static(&mut self, s: &'ast syn::ItemStatic) {
        if let Some(v) = str_lit(&s.expr) {
            self.0.insert(s.ident.to_string(), v);
        }
    }
}

pub(super) struct FactVisitor {
    aliases: HashMap<String, String>,
    /// The paths the file imports by glob (`use arrayfire::*` → `arrayfire`), of crates and
    /// modules other than its own.
    globs: Vec<String>,
    /// Functions, modules and other items the file defines by name: a bare call of one is
    /// that item, not a glob's.
    local_items: std::collections::HashSet<String>,
    str_consts: HashMap<String, String>,
    pub(super) facts: Facts,
    /// The function being visited (`let` bindings are local to it).
    scope: Option<Range<usize>>,
    /// Inside the arguments of a format macro (`println!`): values there are only shown.
    display: usize,
    /// Env calls already recorded with their statement.
    handled_calls: Vec<usize>,
    /// Functions of the tree that hand an argument to a device constructor.
    callable: Vec<super::index_fns::IndexFn>,
    /// Names a `use … as` gives to something of another name.
    renamed: Vec<String>,
    /// Computed `.envs(…)` calls, with the command they configure.
    computed_envs: Vec<(Range<usize>, CommandName)>,
    /// Loop variables over ranges: where each is bound, how many indices it takes (`None`:
    /// computed at run time), and where it is visible.
    loop_vars: Vec<(usize, Option<u64>, Range<usize>)>,
    /// The loops being visited, outermost first (whole, a `while` with its condition).
    loops: Vec<(Range<usize>, bool)>,
    /// Names bound to the number of visible cards (`let n = cuda_device_count()?`), with the
    /// function they are local to.
    card_counts: Vec<(String, Option<Range<usize>>)>,
    /// Inside a struct deriving a command-line parser (`#[derive(Parser)]`, `Args`,
    /// `StructOpt`): its fields are options.
    cli_struct: bool,
    /// Literals an index may reach through an item of the file.
    literals: trace::FileLiterals,
    /// `let pick = |i| Device::new_cuda(i);`: a closure that hands its parameter at a position
    /// to a constructor, with what it reaches and the function it is local to.
    closures: Vec<(String, usize, String, Option<Range<usize>>)>,
}

impl FactVisitor {
    /// Whether a call path can name one of `names`: by its last segment, or through a `use …
    /// as` rename. A cheap test before the path is resolved.
    fn may_name(&self, path: &syn::Path, names: &[&str]) -> bool {
        last_is(path, names)
            || (path.segments.len() == 1
                && self.renamed.iter().any(|r| path.segments[0].ident == r))
    }

    /// `Dev::new` with `use candle_core::Device as Dev` → `candle_core::Device::new`.
    fn resolve(&self, path: &syn::Path) -> String {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let Some(first) = segments.first() else {
            return String::new();
        };
        match self.aliases.get(first) {
            Some(full) => std::iter::once(full.clone())
                .chain(segments[1..].iter().cloned())
                .collect::<Vec<_>>()
                .join("::"),
            None => segments.join("::"),
        }
    }

    /// The paths a call may name through the file's glob imports (`use arrayfire::*;
    /// set_device(1)` → `arrayfire::set_device`): none when its first segment is imported by
    /// name or is an item of the file (a local `fn set_device` shadows the glob's).
    fn globbed(&self, path: &syn::Path) -> Vec<String> {
        let Some(first) = path.segments.first().map(|s| s.ident.to_string()) else {
            return Vec::new();
        };
        if path.leading_colon.is_some()
            || self.globs.is_empty()
            || self.aliases.contains_key(&first)
            || self.local_items.contains(&first)
        {
            return Vec::new();
        }
        let rest: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let rest = rest.join("::");
        self.globs.iter().map(|g| format!("{g}::{rest}")).collect()
    }

    /// A string: a literal, or a const/static holding one.
    fn string(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Path(p) => p
                .path
                .get_ident()
                .and_then(|i| self.str_consts.get(&i.to_string()).cloned()),
            Expr::Reference(r) => self.string(&r.expr),
            Expr::Group(g) => self.string(&g.expr),
            _ => str_lit(expr),
        }
    }

    /// `std::env::set_var("CUDA_…", v)` / `remove_var("CUDA_…")`.
    fn env_call(&self, call: &ExprCall) -> Option<(EnvVar, EnvOp)> {
        let Expr::Path(func) = call.func.as_ref() else {
            return None;
        };
        if !self.may_name(&func.path, &["set_var", "remove_var"]) {
            return None;
        }
        let path = self.resolve(&func.path);
        let mut args = call.args.iter();
        let var = EnvVar::from_name(&self.string(args.next()?)?)?;
        if path.ends_with("env::set_var")
            || path == "set_var" && self.aliases.contains_key("set_var")
        {
            Some((var, EnvOp::Set(args.next().and_then(|v| self.string(v)))))
        } else if path.ends_with("env::remove_var")
            || path == "remove_var" && self.aliases.contains_key("remove_var")
        {
            Some((var, EnvOp::Remove))
        } else {
            None
        }
    }

    fn record_env(&mut self, call: &ExprCall, stmt: Option<Range<usize>>) -> bool {
        let Some((var, op)) = self.env_call(call) else {
            return false;
        };
        let at = range(call);
        if self.handled_calls.contains(&at.start) {
            return true;
        }
        self.handled_calls.push(at.start);
        self.facts.env.push(EnvEffect {
            var,
            op,
            at,
            stmt,
            place: Place::Elsewhere,
        });
        true
    }

    fn device_call(&mut self, call: &ExprCall) {
        let Expr::Path(func) = call.func.as_ref() else {
            return;
        };
        if let Some(name) = func.path.get_ident() {
            let closure = self
                .closures
                .iter()
                .find(|(n, _, _, scope)| name == n && *scope == self.scope)
                .cloned();
            if let Some((n, position, what, _)) = closure {
                if let Some(arg) = call.args.iter().nth(position) {
                    self.sink(
                        arg,
                        format!(
                            "the closure `{n}`, whose argument {} is the index of {what},",
                            position + 1
                        ),
                    );
                }
                return;
            }
        }
        if !self.callable.is_empty() {
            let segments: Vec<String> = func
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            let def = self
                .callable
                .iter()
                .find(|d| super::index_fns::calls(d, &segments))
                .cloned();
            if let Some(def) = def {
                if let Some(arg) = call.args.iter().nth(def.position) {
                    let what = format!(
                        "{}(…), whose argument {} is the index of {},",
                        def.path,
                        def.position + 1,
                        def.what
                    );
                    self.sink(arg, what);
                }
                return;
            }
        }
        if !self.may_name(&func.path, &INDEX_CALL_NAMES) {
            return;
        }
        let path = self.resolve(&func.path);
        let globbed = self.globbed(&func.path);
        if let Some(name) = crate::knowledge::rust::index_call_resolved(&path, &globbed) {
            // `Device::get_device` is a common name: only in a file that imports from cust or
            // rustacuda (often by glob, `use cust::prelude::*`).
            let rust_cuda = |p: &str| {
                ["cust", "rustacuda"]
                    .iter()
                    .any(|c| p == *c || p.strip_prefix(c).is_some_and(|r| r.starts_with("::")))
            };
            if name == "Device::get_device"
                && !rust_cuda(&path)
                && !self.aliases.values().any(|p| rust_cuda(p))
            {
                return;
            }
            if let Some(first) = call.args.first() {
                self.sink(first, format!("{name}(…)"));
            }
        }
    }

    /// What `.env_clear()` and the env methods configure: `cmd` in `cmd.arg(..).env(..)`.
    fn command_of(&self, call: &ExprMethodCall) -> CommandName {
        let mut receiver = call.receiver.as_ref();
        while let Expr::MethodCall(inner) = receiver {
            receiver = inner.receiver.as_ref();
        }
        match receiver {
            Expr::Path(p) => p
                .path
                .get_ident()
                .map(|i| (i.to_string(), self.scope.clone())),
            _ => None,
        }
    }

    fn child(
        &mut self,
        call: &ExprMethodCall,
        method: &'static str,
        var: EnvVar,
        value: Option<(Option<String>, Option<Range<usize>>)>,
    ) {
        let (value, value_range) = match value {
            Some((v, r)) => (Some(v), r),
            None => (None, None),
        };
        let command = self.command_of(call);
        self.facts.child_env.push(ChildEnv {
            var,
            value,
            value_range,
            at: range(call),
            method,
            command,
        });
    }

    /// `(K, V)` pairs of `.envs(…)`: an array, a slice or `HashMap::from([…])` of
    /// tuples; keys that are not managed variables are skipped.
    fn env_pairs<'e>(&self, expr: &'e Expr, out: &mut Vec<(&'e Expr, &'e Expr)>) {
        match expr {
            Expr::Array(a) => {
                for elem in &a.elems {
                    if let Expr::Tuple(t) = elem {
                        if let [k, v] = t.elems.iter().collect::<Vec<_>>().as_slice() {
                            out.push((k, v));
                        }
                    }
                }
            }
            Expr::Reference(r) => self.env_pairs(&r.expr, out),
            Expr::Paren(p) => self.env_pairs(&p.expr, out),
            Expr::Call(c) if matches!(c.func.as_ref(), Expr::Path(p) if last_is(&p.path, &["from", "from_iter"])) => {
                if let Some(first) = c.args.first() {
                    self.env_pairs(first, out);
                }
            }
            _ => {}
        }
    }

    fn method_call(&mut self, call: &ExprMethodCall) {
        let method = call.method.to_string();
        if let Some(row) = crate::knowledge::rust::foreign_choice(&method) {
            self.facts.foreign_choices.push((range(call), row));
        }
        if method == "env_clear" && call.args.is_empty() {
            for var in EnvVar::ALL {
                self.child(call, "env_clear", var, None);
            }
            return;
        }
        let Some(first) = call.args.first() else {
            return;
        };
        match method.as_str() {
            "envs" => {
                let mut pairs = Vec::new();
                self.env_pairs(first, &mut pairs);
                if pairs.is_empty() {
                    // Computed (`envs(filtered)`): it may set any variable again.
                    self.computed_envs
                        .push((range(call), self.command_of(call)));
                }
                for (k, v) in pairs {
                    if let Some(var) = self.string(k).and_then(|k| EnvVar::from_name(&k)) {
                        let value_range = str_lit(v).is_some().then(|| range(v));
                        self.child(call, "envs", var, Some((self.string(v), value_range)));
                    }
                }
            }
            // ONNX Runtime's CUDA (or TensorRT) provider: DirectML and other providers number
            // their adapters themselves, the CUDA mask does not renumber them.
            "with_device_id" if cuda_receiver(&call.receiver) => {
                self.sink(first, ".with_device_id(…)".into())
            }
            // llama.cpp bindings: the main GPU, and the devices a model is split over; whisper-rs.
            "with_main_gpu" => self.sink(first, ".with_main_gpu(…)".into()),
            "gpu_device" => self.sink(first, ".gpu_device(…)".into()),
            "with_devices" | "with_device_ids" | "with_gpu_ids" => {
                let inner = match first {
                    Expr::Reference(r) => r.expr.as_ref(),
                    other => other,
                };
                match inner {
                    Expr::Array(a) if a.elems.len() == 1 => {
                        self.sink(&a.elems[0], format!(".{method}(…)"));
                    }
                    Expr::Array(a) if a.elems.len() > 1 => self.facts.computed_indices.push((
                        range(call),
                        format!(".{method}(…) places the model on {} devices", a.elems.len()),
                    )),
                    // A list built elsewhere: its length is not known here.
                    _ => {}
                }
            }
            "device_by_index" => {
                if let Some((_, n)) = int_lit(first) {
                    self.facts.nvml_indices.push((range(call), n));
                }
            }
            "env" | "env_remove" => {
                let Some(var) = self.string(first).and_then(|k| EnvVar::from_name(&k)) else {
                    return;
                };
                let second = call.args.iter().nth(1);
                if method == "env" {
                    let value_range = second.filter(|v| str_lit(v).is_some()).map(range);
                    let value = second.and_then(|v| self.string(v));
                    self.child(call, "env", var, Some((value, value_range)));
                } else {
                    self.child(call, "env_remove", var, None);
                }
            }
            _ => {}
        }
    }

    fn struct_literal(&mut self, lit: &ExprStruct) {
        for field in &lit.fields {
            if let (syn::Member::Named(n), Some((digits, value))) =
                (&field.member, int_lit(&field.expr))
            {
                self.facts.field_lits.push((n.to_string(), digits, value));
            }
        }
        self.index_fields(lit);
        // burn's `CudaDevice { index }`; mistral.rs' `DeviceLayerMapMetadata { ordinal, layers }`.
        let (name, field_name) = if self.may_name(&lit.path, &["CudaDevice"])
            && self.resolve(&lit.path).ends_with("CudaDevice")
        {
            ("CudaDevice", "index")
        } else if self.may_name(&lit.path, &["DeviceLayerMapMetadata"]) {
            ("DeviceLayerMapMetadata", "ordinal")
        } else {
            return;
        };
        for field in &lit.fields {
            if matches!(&field.member, syn::Member::Named(n) if n == field_name) {
                self.sink(&field.expr, format!("{name} {{ {field_name}: … }}"));
            }
        }
    }

    /// Fields whose name says they hold device ordinals (`device_id: 1`, `device_indices:
    /// vec![0, 1]`): each literal of a list is its own index, so a list of two cards is two
    /// choices (multi-GPU); a value the tool does not follow is one for a field named for an
    /// index or id. Kept apart from the other sinks until the file is known to be GPU code.
    fn index_fields(&mut self, lit: &ExprStruct) {
        use crate::knowledge::rust::{index_field, IndexField};
        for field in &lit.fields {
            let syn::Member::Named(n) = &field.member else {
                continue;
            };
            let name = n.to_string();
            let Some(kind) = index_field(&name) else {
                continue;
            };
            let (sinks, computed) = (self.facts.sinks.len(), self.facts.computed_indices.len());
            let lits = |e: &Expr| !index_lits(e).is_empty();
            match kind {
                IndexField::One { named_index } => {
                    // ONNX Runtime's `CUDA { device_id: Some(1), .. }`: the card is inside.
                    let value = match &field.expr {
                        Expr::Call(c)
                            if c.args.len() == 1
                                && matches!(&*c.func, Expr::Path(p) if p.path.is_ident("Some")) =>
                        {
                            &c.args[0]
                        }
                        e => e,
                    };
                    if named_index || lits(value) {
                        self.sink(value, format!("the `{name}` field"));
                    }
                }
                IndexField::List { named_index } => match list_items(&field.expr) {
                    Some(items) => {
                        for item in items.iter().filter(|e| named_index || lits(e)) {
                            self.sink(item, format!("the `{name}` field's list"));
                        }
                    }
                    None if named_index => {
                        self.sink(&field.expr, format!("the `{name}` field"));
                    }
                    None => {}
                },
            }
            let new: Vec<DeviceSink> = self.facts.sinks.drain(sinks..).collect();
            self.facts.field_sinks.extend(new);
            let new: Vec<_> = self.facts.computed_indices.drain(computed..).collect();
            self.facts.field_computed.extend(new);
        }
    }

    fn sink(&mut self, expr: &Expr, what: String) {
        // `new_cuda(worker_rank + 1)`, `new_cuda(rank)`: one card per worker.
        let ranked = |e: &Expr| match e {
            Expr::Path(p) => p
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident.to_string().to_ascii_lowercase().contains("rank")),
            Expr::Field(f) => {
                matches!(&f.member, syn::Member::Named(n) if n.to_string().contains("rank"))
            }
            _ => false,
        };
        let computed = match expr {
            Expr::Binary(b) => !(int_lit(&b.left).is_some() && int_lit(&b.right).is_some()),
            Expr::MethodCall(m) => ranked(&m.receiver),
            e => ranked(e),
        };
        if computed {
            self.facts.computed_indices.push((
                range(expr),
                format!("{what} takes an index computed from a rank or by arithmetic"),
            ));
            return;
        }
        let lits = index_lits(expr);
        let args = match trace::strip(expr) {
            _ if !lits.is_empty() => lits
                .into_iter()
                .map(|(digits, value)| Arg::Lit { digits, value })
                .collect(),
            Expr::Path(p) if p.path.get_ident().is_some() => vec![Arg::Name {
                name: p.path.segments[0].ident.to_string(),
                at: range(p),
            }],
            Expr::Field(f) => match &f.member {
                syn::Member::Named(name) => vec![Arg::Field {
                    name: name.to_string(),
                    at: range(f),
                }],
                syn::Member::Unnamed(_) => return,
            },
            // `GPUS[0]` of a const array: its element, remapped where it is written.
            e => match self.literals.element(e) {
                Some((digits, value)) => vec![Arg::Lit { digits, value }],
                None => self
                    .literals
                    .untraced(e)
                    // candle's and burn's `Device::Cuda` holds a device, not an index: a call
                    // there builds or copies one.
                    .filter(|h| {
                        !(matches!(h, Hidden::Unknown { .. }) && what.starts_with("Device::Cuda("))
                    })
                    .map(|hidden| Arg::Opaque {
                        at: range(expr),
                        hidden,
                    })
                    .into_iter()
                    .collect(),
            },
        };
        // `with_device_id(args.device.trim_start_matches("cuda:").parse()?)`: the option's
        // default, besides any literal of an `unwrap_or(…)`.
        let mut args = args;
        if let Some(name) = self.literals.parsed_field(expr) {
            args.push(Arg::Field {
                name,
                at: range(expr),
            });
        }
        if args.is_empty() {
            return;
        }
        let start = range(expr).start;
        for arg in args {
            self.facts.sinks.push(DeviceSink {
                what: what.clone(),
                arg,
                scope: self.scope.clone(),
                expr: start,
            });
        }
    }

    /// A `let` of one name: the literals its value can take, else what it hides.
    fn bind_value(&mut self, ident: &syn::Ident, init: Option<&Expr>) {
        let mut literals = init.map_or(Vec::new(), index_lits);
        if literals.is_empty() {
            literals.extend(init.and_then(|e| self.literals.element(e)));
        }
        let hidden = init
            .filter(|_| literals.is_empty())
            .and_then(|e| self.literals.untraced(e));
        let parsed_from = init.and_then(|e| self.literals.parsed_field(e));
        self.bind(ident.to_string(), range(ident), literals, false);
        if let Some(b) = self.facts.bindings.last_mut() {
            b.hidden = hidden;
            b.parsed_from = parsed_from;
        }
    }

    /// `if let Some(id) = parse_device(&args.device)`, `let Ok(id) = args.gpu.parse() else
    /// {…}`: the name bound since `bound` holds the number parsed from the field.
    fn parsed_into(&mut self, bound: usize, pat: &syn::Pat, value: &Expr) {
        let syn::Pat::TupleStruct(ts) = pat else {
            return;
        };
        let wraps = last_is(&ts.path, &["Some", "Ok"]);
        let (true, [syn::Pat::Ident(id)]) = (wraps, &ts.elems.iter().collect::<Vec<_>>()[..])
        else {
            return;
        };
        let Some(field) = self.literals.parsed_field(value) else {
            return;
        };
        let at = range(&id.ident);
        if let Some(b) = self.facts.bindings[bound..].iter_mut().find(|b| b.at == at) {
            b.parsed_from = Some(field);
        }
    }

    /// The parameters bound since `bound` within `inputs` (not a loop's variable): `of`'s,
    /// whose calls are not followed. (A closure's are not: one bound by `let` has its calls
    /// followed, one handed to an iterator or a callback takes the elements it is given.)
    fn hide_params(&mut self, bound: usize, inputs: Range<usize>, of: &str) {
        for b in &mut self.facts.bindings[bound..] {
            if b.iterates.is_none() && inputs.start <= b.at.start && b.at.end <= inputs.end {
                b.hidden = Some(Hidden::Param {
                    name: b.name.clone(),
                    of: of.to_string(),
                });
            }
        }
    }

    /// `let pick = |i| Device::new_cuda(i);`: a closure whose parameter reaches a constructor
    /// found since `sinks`; its calls (`pick(1)`) are indices.
    fn closure_fn(&mut self, name: &syn::Ident, c: &syn::ExprClosure, sinks: usize) {
        for (position, input) in c.inputs.iter().enumerate() {
            let mut pat = input;
            if let syn::Pat::Type(t) = pat {
                pat = &t.pat;
            }
            let syn::Pat::Ident(id) = pat else { continue };
            let param = id.ident.to_string();
            let what = self.facts.sinks[sinks..].iter().find_map(|s| match &s.arg {
                Arg::Name { name, .. } if *name == param => Some(s.what.clone()),
                _ => None,
            });
            let Some(what) = what else { continue };
            self.closures
                .push((name.to_string(), position, what, self.scope.clone()));
        }
    }

    fn bind(
        &mut self,
        name: String,
        at: Range<usize>,
        literals: Vec<(Range<usize>, u64)>,
        item: bool,
    ) {
        let iterates = self
            .loop_vars
            .iter()
            .find(|(s, _, _)| *s == at.start)
            .map(|(_, n, body)| (*n, body.clone()));
        self.facts.bindings.push(Binding {
            name,
            literals,
            at,
            scope: if item { None } else { self.scope.clone() },
            iterates,
            hidden: None,
            parsed_from: None,
        });
    }

    /// How many indices a range with literal bounds covers: `0..2`, `0..=1`, `0..N` with `N` a
    /// const or a `let` of a literal. `None` when a bound is computed (`0..device_count()`).
    fn range_len(&self, expr: &Expr) -> Option<u64> {
        let bound =
            |e: &Expr| -> Option<u64> {
                if let Some((_, n)) = index_lit(e) {
                    return Some(n);
                }
                let Expr::Path(p) = e else { return None };
                let name = p.path.get_ident()?;
                let b =
                    self.facts.bindings.iter().rev().find(|b| {
                        name == &b.name && (b.scope.is_none() || b.scope == self.scope)
                    })?;
                match b.literals.as_slice() {
                    [(_, n)] => Some(*n),
                    _ => None,
                }
            };
        match expr {
            Expr::Paren(p) => self.range_len(&p.expr),
            Expr::MethodCall(m) if m.method == "into_iter" || m.method == "rev" => {
                self.range_len(&m.receiver)
            }
            Expr::Range(r) => {
                let start = r.start.as_deref().map_or(Some(0), bound)?;
                let end = bound(r.end.as_deref()?)?;
                let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
                Some((end + u64::from(inclusive)).saturating_sub(start))
            }
            _ => None,
        }
    }

    /// The loop variable of `for PAT in RANGE` or of `RANGE.map(|PAT| …)` (any method taking
    /// a closure), with how many indices it takes when the bounds are literal: noted for
    /// [`Binding::iterates`].
    /// A range up to the number of visible cards (`0..cuda_device_count()`, a name bound to
    /// it) takes one index per card the mask leaves: it adapts, as Python's
    /// `range(torch.cuda.device_count())` does, and is not noted.
    fn note_loop_var(&mut self, pat: &syn::Pat, over: &Expr, body: Range<usize>) {
        let pat = match pat {
            syn::Pat::Reference(r) => r.pat.as_ref(),
            p => p,
        };
        // `[0, 1].iter().map(|&i| …)`, `for i in GPUS`: one index per element of a list.
        if let (syn::Pat::Ident(id), Some(n)) = (pat, self.list_len(over)) {
            self.loop_vars.push((range(&id.ident).start, Some(n), body));
            return;
        }
        if let (syn::Pat::Ident(id), true) = (pat, is_range(over)) {
            let n = self.range_len(over);
            if n.is_none() && self.up_to_card_count(over) {
                return;
            }
            self.loop_vars.push((range(&id.ident).start, n, body));
        }
    }

    /// How many indices a list of literals iterated holds (`[0, 1]`, `&[0usize, 1]`,
    /// `GPUS.iter()` of a `const` array): `None` when it is no such list.
    fn list_len(&self, over: &Expr) -> Option<u64> {
        let values: Vec<u64> = match over {
            Expr::Paren(p) => return self.list_len(&p.expr),
            Expr::Reference(r) => return self.list_len(&r.expr),
            Expr::MethodCall(m)
                if matches!(
                    m.method.to_string().as_str(),
                    "iter" | "into_iter" | "copied" | "cloned"
                ) =>
            {
                return self.list_len(&m.receiver)
            }
            Expr::Array(a) => a
                .elems
                .iter()
                .map(|e| int_lit(e).map(|(_, n)| n))
                .collect::<Option<_>>()?,
            Expr::Path(p) => self
                .literals
                .arrays
                .get(&p.path.get_ident()?.to_string())?
                .iter()
                .map(|e| e.as_ref().map(|(_, n)| *n))
                .collect::<Option<_>>()?,
            _ => return None,
        };
        let mut distinct = values;
        distinct.sort_unstable();
        distinct.dedup();
        u64::try_from(distinct.len()).ok()
    }

    /// The range's end is the number of visible cards.
    fn up_to_card_count(&self, over: &Expr) -> bool {
        match over {
            Expr::Paren(p) => self.up_to_card_count(&p.expr),
            Expr::MethodCall(m) => self.up_to_card_count(&m.receiver),
            Expr::Range(r) => r.end.as_deref().is_some_and(|end| {
                counts_cards(end)
                    || matches!(end, Expr::Path(p) if p.path.get_ident().is_some_and(|name| {
                        self.card_counts
                            .iter()
                            .any(|(n, scope)| name == n && (scope.is_none() || *scope == self.scope))
                    }))
            }),
            _ => false,
        }
    }

    /// `name += …` or `name = name + …` inside a `for` loop (one value per item it iterates):
    /// a counter of the outermost loop. One in a `while` or `loop` (`while
    /// Device::new_cuda(n).is_ok() { n += 1 }`) probes the cards until one fails: it adapts to
    /// what the mask leaves.
    fn note_counter(&mut self, target: &Expr, at: Range<usize>) {
        let (Some((within, _)), Some((_, true)), Expr::Path(p)) =
            (self.loops.first(), self.loops.last(), target)
        else {
            return;
        };
        if let Some(name) = p.path.get_ident() {
            self.facts.counters.push(Counter {
                name: name.to_string(),
                at,
                within: within.clone(),
                scope: self.scope.clone(),
            });
        }
    }

    fn in_loop(&mut self, whole: Range<usize>, per_item: bool, f: impl FnOnce(&mut Self)) {
        self.loops.push((whole, per_item));
        f(self);
        self.loops.pop();
    }

    fn in_scope<T>(&mut self, scope: Range<usize>, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = self.scope.replace(scope);
        let out = f(self);
        self.scope = saved;
        out
    }

    /// `unsafe { set_var(..); remove_var(..) }` holding only env calls (or guarded ones, see
    /// [`Self::guarded_env`]): one removable block.
    fn unsafe_env_block(&mut self, block: &syn::ExprUnsafe, whole: Range<usize>) -> bool {
        let stmts = &block.block.stmts;
        let only_env = !stmts.is_empty()
            && stmts.iter().all(|s| match s {
                Stmt::Expr(Expr::Call(call), _) => self.env_call(call).is_some(),
                Stmt::Expr(Expr::If(ifx), _) => self.guard_of(ifx).is_some(),
                _ => false,
            });
        if only_env {
            for s in stmts {
                match s {
                    Stmt::Expr(Expr::Call(call), _) => {
                        self.record_env(call, Some(whole.clone()));
                    }
                    Stmt::Expr(Expr::If(ifx), _) => {
                        self.guarded_env(ifx, whole.clone());
                    }
                    _ => {}
                }
            }
        }
        only_env
    }

    /// `if std::env::var_os("K").is_none() { std::env::set_var("K", v); }` (the set may sit in
    /// an `unsafe` block): the `set_var` call, when the guard and the set name one variable.
    fn guard_of<'a>(&self, ifx: &'a syn::ExprIf) -> Option<&'a ExprCall> {
        if ifx.else_branch.is_some() {
            return None;
        }
        let Expr::MethodCall(test) = ifx.cond.as_ref() else {
            return None;
        };
        let Expr::Call(read) = test.receiver.as_ref() else {
            return None;
        };
        let Expr::Path(func) = read.func.as_ref() else {
            return None;
        };
        let reads = self.resolve(&func.path);
        let unset = match test.method.to_string().as_str() {
            "is_none" => reads.ends_with("var_os"),
            "is_err" => reads.ends_with("env::var") || reads == "var",
            _ => false,
        };
        let key = read.args.first().and_then(|k| self.string(k))?;
        let inner = match ifx.then_branch.stmts.as_slice() {
            [Stmt::Expr(Expr::Call(call), _)] => call,
            [Stmt::Expr(Expr::Unsafe(u), _)] => match u.block.stmts.as_slice() {
                [Stmt::Expr(Expr::Call(call), _)] => call,
                _ => return None,
            },
            _ => return None,
        };
        let (var, op) = self.env_call(inner)?;
        (unset && var.name() == key && matches!(op, EnvOp::Set(_))).then_some(inner)
    }

    /// Records a guarded set as a default; `whole` is the statement that removes it.
    fn guarded_env(&mut self, ifx: &syn::ExprIf, whole: Range<usize>) -> bool {
        let Some(call) = self.guard_of(ifx) else {
            return false;
        };
        let Some((var, EnvOp::Set(value))) = self.env_call(call) else {
            return false;
        };
        let at = range(call);
        if self.handled_calls.contains(&at.start) {
            return true;
        }
        self.handled_calls.push(at.start);
        self.facts.env.push(EnvEffect {
            var,
            op: EnvOp::SetDefault(value),
            at,
            stmt: Some(whole),
            place: Place::Elsewhere,
        });
        true
    }
}

impl<'ast> Visit<'ast> for FactVisitor {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // `#[cfg(test)] mod tests { … }`: code libtest runs, in a process no `main` masks.
        if mains::cfg_of(&m.attrs) == mains::Tri::False {
            if let Some((brace, _)) = &m.content {
                self.facts.test_code.push(brace.span.join().byte_range());
            }
        }
        visit::visit_item_mod(self, m);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        // A `#[test]` function outside a `#[cfg(test)]` module is test code all the same.
        if f.attrs.iter().any(crate::lang::rust::graph::is_test_attr)
            && !self
                .facts
                .test_code
                .iter()
                .any(|t| t.contains(&range(&f.sig).start))
        {
            self.facts
                .test_code
                .push(range(&f.sig).start..fn_range(&f.sig, &f.block).end);
        }
        self.in_scope(fn_range(&f.sig, &f.block), |v| visit::visit_item_fn(v, f));
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let bound = self.facts.bindings.len();
        self.in_scope(fn_range(&f.sig, &f.block), |v| {
            visit::visit_impl_item_fn(v, f)
        });
        // A method's parameter: its calls are not followed (the receiver's type is not known
        // at a call), so an index it is handed is the caller's, unseen.
        if f.sig.receiver().is_some() {
            let of = format!("the method `{}`", f.sig.ident);
            self.hide_params(bound, range(&f.sig.inputs), &of);
        }
    }

    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        let outer = self.cli_struct;
        self.cli_struct = s.attrs.iter().any(derives_parser);
        visit::visit_item_struct(self, s);
        self.cli_struct = outer;
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        if let Some(name) = &field.ident {
            let option = self.cli_struct || field.attrs.iter().any(is_option_attr);
            if let Some(what) = option.then(|| multi_gpu_option(name, field)).flatten() {
                self.facts.multi_gpu_options.push((range(name), what));
            }
            if let Some((digits, value)) = field.attrs.iter().find_map(option_default) {
                self.facts.option_defaults.push(OptionDefault {
                    field: name.to_string(),
                    digits,
                    value,
                });
            }
        }
        visit::visit_field(self, field);
    }

    fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
        let literals = int_lit(&c.expr).into_iter().collect();
        self.bind(c.ident.to_string(), range(&c.ident), literals, true);
        visit::visit_item_const(self, c);
    }

    fn visit_item_static(&mut self, s: &'ast syn::ItemStatic) {
        let literals = matches!(s.mutability, syn::StaticMutability::None)
            .then(|| int_lit(&s.expr))
            .flatten()
            .into_iter()
            .collect();
        self.bind(s.ident.to_string(), range(&s.ident), literals, true);
        visit::visit_item_static(self, s);
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        let mut pat = &local.pat;
        if let syn::Pat::Type(t) = pat {
            pat = &t.pat;
        }
        if let syn::Pat::Ident(id) = pat {
            if id.mutability.is_none() && id.subpat.is_none() {
                let init = local.init.as_ref().map(|i| i.expr.as_ref());
                self.bind_value(&id.ident, init);
                if init.is_some_and(counts_cards) {
                    self.card_counts
                        .push((id.ident.to_string(), self.scope.clone()));
                }
                if let Some(init) = &local.init {
                    let sinks = self.facts.sinks.len();
                    self.visit_local_init(init);
                    if let Expr::Closure(c) = init.expr.as_ref() {
                        self.closure_fn(&id.ident, c, sinks);
                    }
                }
                return;
            }
        }
        // `let (cpu, gpu) = (Device::Cpu, 1);`: each name its element.
        if let (syn::Pat::Tuple(t), Some(init)) = (pat, &local.init) {
            if let Expr::Tuple(values) = init.expr.as_ref() {
                let names: Option<Vec<&syn::Ident>> = t
                    .elems
                    .iter()
                    .map(|p| match p {
                        syn::Pat::Ident(id) if id.mutability.is_none() && id.subpat.is_none() => {
                            Some(&id.ident)
                        }
                        _ => None,
                    })
                    .collect();
                if let Some(names) = names.filter(|n| n.len() == values.elems.len()) {
                    for (name, value) in names.into_iter().zip(&values.elems) {
                        self.bind_value(name, Some(value));
                    }
                    self.visit_local_init(init);
                    return;
                }
            }
        }
        let bound = self.facts.bindings.len();
        visit::visit_local(self, local);
        if let Some(init) = &local.init {
            self.parsed_into(bound, &local.pat, &init.expr);
        }
    }

    fn visit_expr_let(&mut self, l: &'ast syn::ExprLet) {
        let bound = self.facts.bindings.len();
        visit::visit_expr_let(self, l);
        self.parsed_into(bound, &l.pat, &l.expr);
    }

    fn visit_pat_ident(&mut self, id: &'ast syn::PatIdent) {
        // Parameters and pattern bindings: names that are not followed.
        self.bind(id.ident.to_string(), range(&id.ident), Vec::new(), false);
        visit::visit_pat_ident(self, id);
    }

    fn visit_pat_tuple_struct(&mut self, p: &'ast syn::PatTupleStruct) {
        if self.may_name(&p.path, &["Cuda"]) && self.resolve(&p.path).ends_with("Device::Cuda") {
            for elem in &p.elems {
                if let syn::Pat::Lit(lit) = elem {
                    if let Some((_, n)) = int_lit(&Expr::Lit(lit.clone())).filter(|(_, n)| *n != 0)
                    {
                        self.facts.patterns.push((range(p), n));
                    }
                }
            }
        }
        visit::visit_pat_tuple_struct(self, p);
    }

    fn visit_stmt(&mut self, stmt: &'ast Stmt) {
        if let Stmt::Expr(expr @ (Expr::Call(_) | Expr::Unsafe(_) | Expr::If(_)), semi) = stmt {
            let at = range(expr);
            let whole = at.start..semi.map_or(at.end, |s| s.span.byte_range().end);
            match expr {
                Expr::Call(call) => {
                    self.record_env(call, Some(whole));
                }
                Expr::If(ifx) => {
                    self.guarded_env(ifx, whole);
                }
                // A block statement: `unsafe { set_var(..) }` needs no semicolon.
                Expr::Unsafe(block) => {
                    self.unsafe_env_block(block, whole);
                }
                _ => {}
            }
        }
        visit::visit_stmt(self, stmt);
    }

    fn visit_expr_call(&mut self, call: &'ast ExprCall) {
        if let Expr::Path(func) = call.func.as_ref() {
            let last = func.path.segments.last().map(|s| s.ident.to_string());
            if let Some(row) = last.and_then(|l| crate::knowledge::rust::foreign_choice(&l)) {
                self.facts.foreign_choices.push((range(call), row));
            }
        }
        self.record_env(call, None);
        self.device_call(call);
        visit::visit_expr_call(self, call);
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        let body = f.body.brace_token.span.join().byte_range();
        self.note_loop_var(&f.pat, &f.expr, body.clone());
        self.in_loop(body, true, |v| visit::visit_expr_for_loop(v, f));
    }

    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        let whole =
            w.while_token.span.byte_range().start..w.body.brace_token.span.close().byte_range().end;
        self.in_loop(whole, false, |v| visit::visit_expr_while(v, w));
    }

    fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
        let whole = l.body.brace_token.span.join().byte_range();
        self.in_loop(whole, false, |v| visit::visit_expr_loop(v, l));
    }

    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        if matches!(b.op, syn::BinOp::AddAssign(_)) {
            self.note_counter(&b.left, range(b));
        }
        visit::visit_expr_binary(self, b);
    }

    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        // `count = count + 1`
        if let (Expr::Path(target), Expr::Binary(sum)) = (a.left.as_ref(), a.right.as_ref()) {
            let same = matches!(sum.left.as_ref(), Expr::Path(p) if p.path == target.path);
            if same && matches!(sum.op, syn::BinOp::Add(_)) {
                self.note_counter(&a.left, range(a));
            }
        }
        visit::visit_expr_assign(self, a);
    }

    fn visit_expr_method_call(&mut self, call: &'ast ExprMethodCall) {
        if let Some(Expr::Closure(c)) = call.args.first() {
            if let Some(pat) = c.inputs.first().filter(|_| c.inputs.len() == 1) {
                self.note_loop_var(pat, &call.receiver, range(&c.body));
            }
        }
        self.method_call(call);
        visit::visit_expr_method_call(self, call);
    }

    fn visit_expr_struct(&mut self, lit: &'ast ExprStruct) {
        self.struct_literal(lit);
        visit::visit_expr_struct(self, lit);
    }

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if let Some(ident) = p.path.get_ident() {
            let at = ident_range(p, ident);
            self.facts
                .uses
                .push((ident.to_string(), at, self.display > 0));
        }
        visit::visit_expr_path(self, p);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if !self.facts.uses_gpu_crate && path.segments.len() > 1 && is_gpu_path(&self.resolve(path))
        {
            self.facts.uses_gpu_crate = true;
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if !self.facts.uses_gpu_crate
            && mac.path.segments.len() > 1
            && is_gpu_path(&self.resolve(&mac.path))
        {
            self.facts.uses_gpu_crate = true;
        }
        macros::visit_body(self, mac);
    }
}

pub(super) fn str_lit(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.value()),
        _ => None,
    }
}

/// Every integer literal an index expression can take: the literal itself (in parentheses, or
/// cast: `1 as usize`), the default of `x.unwrap_or(1)` (an index read from the env or the
/// command line, 1 when it is not given), and the values of the branches of an `if`, a `match`
/// or a block (`if cpu { 0 } else { 1 }`).
/// The elements of a literal list: `vec![a, b]`, `[a, b]`, `&[a, b]`, `Some(…)` of one;
/// `None` for anything else (`vec![0; n]`, a call).
fn list_items(expr: &Expr) -> Option<Vec<Expr>> {
    use syn::punctuated::Punctuated;
    match expr {
        Expr::Array(a) => Some(a.elems.iter().cloned().collect()),
        Expr::Reference(r) => list_items(&r.expr),
        Expr::Paren(p) => list_items(&p.expr),
        Expr::Group(g) => list_items(&g.expr),
        Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if p.path.is_ident("Some")) => {
            c.args.first().and_then(list_items)
        }
        Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "to_vec" | "into") => {
            list_items(&m.receiver)
        }
        Expr::Macro(m) if m.mac.path.is_ident("vec") => m
            .mac
            .parse_body_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated)
            .ok()
            .map(|p| p.into_iter().collect()),
        _ => None,
    }
}

/// The names the file's items define, in its inline modules too (`fn set_device`, `mod core`).
fn local_names(items: &[syn::Item], out: &mut std::collections::HashSet<String>) {
    for item in items {
        let name = match item {
            syn::Item::Fn(f) => &f.sig.ident,
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    local_names(inner, out);
                }
                &m.ident
            }
            syn::Item::Const(c) => &c.ident,
            syn::Item::Static(s) => &s.ident,
            syn::Item::Struct(s) => &s.ident,
            syn::Item::Enum(e) => &e.ident,
            syn::Item::Type(t) => &t.ident,
            syn::Item::Trait(t) => &t.ident,
            syn::Item::Macro(m) => match &m.ident {
                Some(i) => i,
                None => continue,
            },
            _ => continue,
        };
        out.insert(name.to_string());
    }
}

pub(super) fn index_lits(expr: &Expr) -> Vec<(Range<usize>, u64)> {
    fn tail(block: &syn::Block) -> Vec<(Range<usize>, u64)> {
        match block.stmts.last() {
            Some(Stmt::Expr(e, None)) => index_lits(e),
            _ => Vec::new(),
        }
    }
    match expr {
        Expr::If(i) => {
            let mut out = tail(&i.then_branch);
            if let Some((_, e)) = &i.else_branch {
                out.extend(index_lits(e));
            }
            out
        }
        Expr::Match(m) => m
            .arms
            .iter()
            .flat_map(|arm| index_lits(&arm.body))
            .collect(),
        Expr::Block(b) => tail(&b.block),
        Expr::Paren(p) => index_lits(&p.expr),
        Expr::Group(g) => index_lits(&g.expr),
        Expr::Cast(c) => index_lits(&c.expr),
        Expr::MethodCall(m) if m.method == "unwrap_or" && m.args.len() == 1 => {
            index_lits(&m.args[0])
        }
        _ => int_lit(expr).into_iter().collect(),
    }
}

/// An expression that asks how many cards are visible: a call whose name counts (`count`) and
/// names devices (`cuda_device_count()`, `CudaContext::device_count()?`, `Cuda::device_count()`,
/// `device::get_count()`).
fn counts_cards(expr: &Expr) -> bool {
    struct Counts(bool);
    impl<'ast> Visit<'ast> for Counts {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let Expr::Path(p) = c.func.as_ref() {
                let segments: Vec<String> = p
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string().to_ascii_lowercase())
                    .collect();
                let last = segments.last().map_or("", String::as_str);
                self.0 |= last.contains("count")
                    && segments.iter().any(|s| {
                        crate::knowledge::rust::DEVICE_WORDS
                            .iter()
                            .any(|w| s.contains(w))
                    });
            }
            visit::visit_expr_call(self, c);
        }

        fn visit_expr_method_call(&mut self, m: &'ast ExprMethodCall) {
            let name = m.method.to_string().to_ascii_lowercase();
            self.0 |= name.contains("count")
                && crate::knowledge::rust::DEVICE_WORDS
                    .iter()
                    .any(|w| name.contains(w));
            visit::visit_expr_method_call(self, m);
        }
    }
    let mut counts = Counts(false);
    counts.visit_expr(expr);
    counts.0
}

/// A range (`0..n`, `(0..=n).rev()`, `(a..b).into_iter()`): the values a loop over it takes.
fn is_range(expr: &Expr) -> bool {
    match expr {
        Expr::Range(r) => r.end.is_some(),
        Expr::Paren(p) => is_range(&p.expr),
        Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "into_iter" | "rev" | "step_by"
            ) =>
        {
            is_range(&m.receiver)
        }
        _ => false,
    }
}

/// The one integer literal an expression takes, when it takes exactly one (see [`index_lits`]).
fn index_lit(expr: &Expr) -> Option<(Range<usize>, u64)> {
    match index_lits(expr).as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// `#[derive(Parser)]`, `#[derive(clap::Args)]`, `#[derive(StructOpt)]`: a struct of
/// command-line options.
pub(super) fn derives_parser(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("derive")
        && attr
            .parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|paths| {
                paths
                    .iter()
                    .any(|p| last_is(p, &["Parser", "Args", "StructOpt"]))
            })
}

/// `#[arg(…)]`, `#[clap(…)]`, `#[structopt(…)]`: a command-line option.
pub(super) fn is_option_attr(attr: &syn::Attribute) -> bool {
    let path = attr.path();
    path.is_ident("arg") || path.is_ident("clap") || path.is_ident("structopt")
}

/// The option's metas (`long = "gpus"`, `default_value = "0,1"`).
fn option_metas(field: &syn::Field) -> Vec<syn::Meta> {
    field
        .attrs
        .iter()
        .filter(|a| is_option_attr(a))
        .filter_map(|a| {
            a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            )
            .ok()
        })
        .flatten()
        .collect()
}

/// An option that selects several cards: a list of devices (`devices: Vec<usize>`, a
/// `--gpus 0,1` default), or a count of cards whose default is above 1 (`num_gpus = 2`).
/// What it is, for the message; `None` for any other option.
pub(super) fn multi_gpu_option(name: &syn::Ident, field: &syn::Field) -> Option<String> {
    use crate::knowledge::rust::{CARD_COUNT_OPTIONS, DEVICE_WORDS};
    let metas = option_metas(field);
    let long = metas.iter().find_map(|m| match m {
        syn::Meta::NameValue(nv) if nv.path.is_ident("long") => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    });
    let shown = long.unwrap_or_else(|| name.to_string().replace('_', "-"));
    let key: String = name
        .to_string()
        .chars()
        .filter(|c| *c != '_')
        .collect::<String>()
        .to_ascii_lowercase();
    let default = metas.iter().find_map(|m| match m {
        syn::Meta::NameValue(nv)
            if nv.path.is_ident("default_value") || nv.path.is_ident("default_value_t") =>
        {
            Some(&nv.value)
        }
        _ => None,
    });
    // `Vec<…>`, `Option<Vec<…>>`: a list.
    fn is_list(ty: &syn::Type) -> bool {
        let syn::Type::Path(p) = ty else {
            return false;
        };
        let Some(last) = p.path.segments.last() else {
            return false;
        };
        if last.ident == "Vec" {
            return true;
        }
        match &last.arguments {
            syn::PathArguments::AngleBracketed(a) if last.ident == "Option" => a
                .args
                .iter()
                .any(|g| matches!(g, syn::GenericArgument::Type(t) if is_list(t))),
            _ => false,
        }
    }
    let several_listed = default.is_some_and(|d| match d {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => {
            let v = s.value();
            let parts: Vec<&str> = v.split(',').map(str::trim).collect();
            parts.len() > 1 && parts.iter().all(|p| p.parse::<u64>().is_ok())
        }
        _ => false,
    });
    let device_word = DEVICE_WORDS.iter().any(|w| key.contains(w));
    if device_word && (is_list(&field.ty) || several_listed) {
        return Some(format!(
            "the command-line option `--{shown}` takes a list of devices"
        ));
    }
    if CARD_COUNT_OPTIONS.contains(&key.as_str()) {
        let count = default.and_then(|d| match d {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => s.value().trim().parse::<u64>().ok(),
            e => int_lit(e).map(|(_, v)| v),
        });
        if let Some(n) = count.filter(|n| *n > 1) {
            return Some(format!(
                "the command-line option `--{shown}` opens {n} cards by default"
            ));
        }
    }
    None
}

/// `default_value_t = 1` / `default_value = "1"` in a `#[arg(…)]`, `#[clap(…)]` or
/// `#[structopt(…)]` attribute: the digits and their value.
pub(super) fn option_default(attr: &syn::Attribute) -> Option<(Range<usize>, u64)> {
    let path = attr.path();
    if !(path.is_ident("arg") || path.is_ident("clap") || path.is_ident("structopt")) {
        return None;
    }
    let metas = attr
        .parse_args_with(syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
        .ok()?;
    metas.iter().find_map(|m| match m {
        syn::Meta::NameValue(nv) if nv.path.is_ident("default_value_t") => index_lit(&nv.value),
        syn::Meta::NameValue(nv) if nv.path.is_ident("default_value") => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => {
                let value = s.value();
                let r = s.span().byte_range();
                // Only a plain "…" literal: its digits are the string's bytes. `"1"`, or a
                // device spec (`"cuda:1"`), whose digits a parse reads (see `parsed_field`).
                let plain = r.len() == value.len() + 2;
                let start = device_spec_digits(&value)?;
                plain
                    .then(|| Some((r.start + 1 + start..r.end - 1, value[start..].parse().ok()?)))
                    .flatten()
            }
            _ => None,
        },
        _ => None,
    })
}

/// Where the index starts in an option's default: `"1"` at 0, `"cuda:1"` at 5 (a device
/// word, a colon, digits); `None` for anything else (`"auto"`, `"cpu"`, `"0,1"`).
fn device_spec_digits(value: &str) -> Option<usize> {
    let digits = value.len() - value.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == value.len() && digits > 0 {
        return Some(0);
    }
    let (word, index) = value.split_once(':')?;
    let known = crate::knowledge::rust::DEVICE_WORDS.contains(&word.to_ascii_lowercase().as_str());
    (known && !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()))
        .then_some(word.len() + 1)
}

/// The digits of an integer literal (without its suffix) and its value.
pub(super) fn int_lit(expr: &Expr) -> Option<(Range<usize>, u64)> {
    let Expr::Lit(ExprLit {
        lit: Lit::Int(i), ..
    }) = expr
    else {
        return None;
    };
    int_token(i)
}

pub(super) fn int_token(i: &syn::LitInt) -> Option<(Range<usize>, u64)> {
    let value = i.base10_parse::<u64>().ok()?;
    let r = i.span().byte_range();
    let suffix = i.suffix().len();
    Some((r.start..r.end - suffix, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(source: &str) -> Facts {
        let facts = collect(
            &crate::lang::rust::parse(source).unwrap(),
            &[],
            HandedOn::default(),
        );
        proc_macro2::extra::invalidate_current_thread_spans();
        facts
    }

    #[test]
    fn calls_are_found_through_renamed_imports() {
        let source = r#"use std::env::set_var as put;
use std::env::remove_var as unset;
use cudarc::driver::CudaContext as Ctx;
fn main() {
    unsafe { put("CUDA_VISIBLE_DEVICES", "0") }
    unsafe { unset("CUDA_DEVICE_ORDER"); }
    let ctx = Ctx::new(1);
}
"#;
        let f = facts(source);
        let env: Vec<(EnvVar, EnvOp, &str)> = f
            .env
            .iter()
            .map(|e| (e.var, e.op.clone(), &source[e.at.clone()]))
            .collect();
        assert_eq!(
            env,
            [
                (
                    EnvVar::VisibleDevices,
                    EnvOp::Set(Some("0".into())),
                    r#"put("CUDA_VISIBLE_DEVICES", "0")"#
                ),
                (
                    EnvVar::DeviceOrder,
                    EnvOp::Remove,
                    r#"unset("CUDA_DEVICE_ORDER")"#
                ),
            ]
        );
        assert!(f.env.iter().all(|e| e.place == Place::MainTop));
        let [sink] = f.sinks.as_slice() else {
            panic!("one device sink: {:?}", f.sinks)
        };
        assert_eq!(sink.what, "CudaContext::new(…)");
        assert!(matches!(sink.arg, Arg::Lit { value: 1, .. }));
    }

    #[test]
    fn a_binding_and_its_sink_share_the_function_scope() {
        let source = "fn pick() {\n    let idx = 1;\n    let d = candle_core::Device::new_cuda(idx);\n}\nfn other() { let idx = 0; }\n";
        let f = facts(source);
        let [sink] = f.sinks.as_slice() else {
            panic!("one device sink: {:?}", f.sinks)
        };
        let Arg::Name { name, at } = &sink.arg else {
            panic!("the index is a name: {:?}", sink.arg)
        };
        assert_eq!((name.as_str(), &source[at.clone()]), ("idx", "idx"));
        let scope = sink.scope.clone().expect("inside a function");
        assert_eq!(
            &source[scope.clone()],
            &source[..source.find("\nfn other").unwrap()]
        );
        let bound: Vec<_> = f
            .bindings
            .iter()
            .filter(|b| b.name == "idx")
            .map(|b| (b.scope.clone(), b.literals.first().map(|l| l.1)))
            .collect();
        assert_eq!(bound[0], (Some(scope), Some(1)));
        assert_ne!(bound[1].0, sink.scope);
    }
}
