//! Registries: a function or class a decorator registers (`@register("adam")`,
//! `@register_task("translation")`, `@MODELS.register_module()`) runs where a program reads the
//! registry it was stored in (`REGISTRY[name](…)`, `build_model(cfg)`), not wherever its module
//! is imported: a script that imports a package only loads its registries.
//!
//! Only registries of the tree's own code are followed: a function of the tree that stores
//! into module-level names of its module (`REGISTRY[name] = cls`), or a module-level object a
//! function or class of the tree makes (`MODELS = Registry("models")`, fairseq's
//! `build_x, register_x, REGISTRY, _ = registry.setup_registry(…)`). A decorator of another
//! package (`@app.route`, an mmengine registry, whose parent registries dispatch by scope) or
//! one the index cannot resolve keeps what it registers running with its module.

use ruff_python_ast::visitor::{walk_expr, Visitor};
use ruff_python_ast::{CmpOp, Expr, Stmt};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::{Live, Lookup, PyFile};

/// A top-level function or class registered by a decorator: the dotted callee of each
/// decorator that registers it (`register`, `MODELS.register_module`; `""`: not a dotted name).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Registered {
    pub unit: String,
    pub by: Vec<String>,
    /// For each decorator of `by`, whether it is called (`@register("adam")`, not `@register`).
    #[serde(default)]
    pub called: Vec<bool>,
}

/// The names a module-level assignment binds and what makes the value: `Some("")` data
/// (`{}`, `set()`), `Some(callee)` a call (`Registry("models")`, `registry.setup_registry(…)`),
/// `None` anything else (`REGISTRY = other.REGISTRY`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Global {
    pub names: Vec<String>,
    pub maker: Option<String>,
}

/// What a read of a registry's name does to what it holds without running it: a membership
/// test's attribute, its names, a write.
const NEUTRAL: &[&str] = &["keys", "add", "append", "update", "__contains__", "__len__"];

/// `a.b.c` as written, for a name or an attribute chain rooted at one.
fn dotted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(format!("{}.{}", dotted(&a.value)?, a.attr)),
        _ => None,
    }
}

/// Whether `expr` is the chain `text` (`a.b.C`): [`dotted`] without writing it.
pub(super) fn is_chain(expr: &Expr, text: &str) -> bool {
    match expr {
        Expr::Name(n) => n.id.as_str() == text,
        Expr::Attribute(a) => text
            .strip_suffix(a.attr.as_str())
            .and_then(|t| t.strip_suffix('.'))
            .is_some_and(|t| is_chain(&a.value, t)),
        _ => false,
    }
}

/// The dotted callee of a decorator (`register` of `@register("adam")`), `""` when it is none.
pub(super) fn decorator_callee(expr: &Expr) -> String {
    let callee = match expr {
        Expr::Call(c) => c.func.as_ref(),
        other => other,
    };
    dotted(callee).unwrap_or_default()
}

/// The names a module-level assignment binds, and what makes the value.
pub(super) fn global_of(stmt: &Stmt) -> Option<Global> {
    let (targets, value): (Vec<&Expr>, &Expr) = match stmt {
        Stmt::Assign(a) if a.targets.iter().all(super::names_only) => {
            (a.targets.iter().collect(), a.value.as_ref())
        }
        Stmt::AnnAssign(a) if super::names_only(&a.target) => {
            (vec![a.target.as_ref()], a.value.as_deref()?)
        }
        _ => return None,
    };
    fn bound(e: &Expr, out: &mut Vec<String>) {
        match e {
            Expr::Name(n) => out.push(n.id.to_string()),
            Expr::Tuple(t) => t.elts.iter().for_each(|e| bound(e, out)),
            Expr::List(l) => l.elts.iter().for_each(|e| bound(e, out)),
            Expr::Starred(s) => bound(&s.value, out),
            _ => {}
        }
    }
    let mut names = Vec::new();
    targets.into_iter().for_each(|t| bound(t, &mut names));
    let maker = match value {
        v if super::data(v) => Some(String::new()),
        // A registry whose parent dispatches for it (`Registry("models", parent=…)`) is read
        // where the index does not look.
        Expr::Call(c)
            if !c
                .arguments
                .keywords
                .iter()
                .any(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "parent")) =>
        {
            dotted(&c.func)
        }
        _ => None,
    };
    Some(Global { names, maker })
}

/// How a piece of code reads each bare name: besides plain reads, reads that run nothing of
/// what a registry holds (`name in REGISTRY`, `len(REGISTRY)`, `REGISTRY[name] = cls`), and
/// reads of one attribute of an item (`REGISTRY[name].add_args(parser)`).
#[derive(Default)]
struct Reads<'a> {
    plain: HashSet<String>,
    neutral: HashSet<String>,
    hooks: Vec<(&'a str, &'a str)>,
    /// The names `plain` is asked about (the reads whose other uses [`mark_item_reads`]
    /// rewrites): none while those are looked for, since naming every read costs.
    wanted: Vec<String>,
}

impl<'a> Visitor<'a> for Reads<'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(n) if n.ctx.is_load() => {
                if self.wanted.iter().any(|w| w == n.id.as_str()) {
                    self.plain.insert(n.id.to_string());
                }
            }
            Expr::Compare(c) => {
                self.visit_expr(&c.left);
                for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                    // The name written only for a membership test.
                    match matches!(op, CmpOp::In | CmpOp::NotIn).then(|| dotted(right)) {
                        Some(Some(name)) => {
                            self.neutral.insert(name);
                        }
                        _ => self.visit_expr(right),
                    }
                }
            }
            Expr::Call(c)
                if matches!(c.func.as_ref(), Expr::Name(f) if f.id.as_str() == "len")
                    && c.arguments.keywords.is_empty() =>
            {
                match c.arguments.args.as_ref() {
                    [arg] if dotted(arg).is_some() => {
                        self.neutral.extend(dotted(arg));
                    }
                    _ => walk_expr(self, expr),
                }
            }
            Expr::Subscript(s) if !s.ctx.is_load() => match dotted(&s.value) {
                Some(name) => {
                    self.neutral.insert(name);
                    self.visit_expr(&s.slice);
                }
                None => walk_expr(self, expr),
            },
            Expr::Attribute(a) => {
                let mut nearest = a.attr.as_str();
                let mut at = a.value.as_ref();
                while let Expr::Attribute(inner) = at {
                    nearest = inner.attr.as_str();
                    at = &inner.value;
                }
                match at {
                    Expr::Subscript(s) if matches!(s.value.as_ref(), Expr::Name(_)) => {
                        if let Expr::Name(n) = s.value.as_ref() {
                            self.hooks.push((n.id.as_str(), nearest));
                        }
                        self.visit_expr(&s.slice);
                    }
                    Expr::Name(_) => {
                        if self.wanted.iter().any(|w| is_chain(expr, w)) {
                            self.plain.extend(dotted(expr));
                        }
                    }
                    _ => walk_expr(self, expr),
                }
            }
            _ => walk_expr(self, expr),
        }
    }
}

/// `refs` (the names a piece of code reads, [`super::refs_of`]) with each name read only in
/// ways that run nothing a registry holds written `NAME[]` (`pkg.REGISTRY[]`), and each read
/// of an item's attribute `NAME[].attr`: what they run is told when the name is resolved (a registry's, or
/// the name as before).
pub(super) fn mark_item_reads<'c>(code: Code<'c>, refs: &mut Vec<String>) {
    let visit = |reads: &mut Reads<'c>| match code {
        Code::Stmt(s) => reads.visit_stmt(s),
        Code::Expr(e) => reads.visit_expr(e),
        Code::Stmts(stmts) => stmts.iter().for_each(|s| reads.visit_stmt(s)),
    };
    // First without naming the plain reads: most code reads nothing neutrally.
    let mut first = Reads::default();
    visit(&mut first);
    // Only a name of `refs` read neutrally or for an item's attribute changes: else `refs`
    // (sorted, each once) stays as it is.
    debug_assert!(refs.windows(2).all(|w| w[0] < w[1]));
    let wanted: Vec<String> = refs
        .iter()
        .filter(|r| first.neutral.contains(*r) || first.hooks.iter().any(|(n, _)| *n == r.as_str()))
        .cloned()
        .collect();
    if wanted.is_empty() {
        return;
    }
    let mut reads = Reads {
        wanted,
        ..Reads::default()
    };
    visit(&mut reads);
    let mut added = Vec::new();
    refs.retain(|r| {
        if reads.plain.contains(r) {
            return true;
        }
        let neutral = reads.neutral.contains(r);
        let hooks: Vec<&(&str, &str)> = reads
            .hooks
            .iter()
            .filter(|(n, _)| *n == r.as_str())
            .collect();
        if !neutral && hooks.is_empty() {
            return true;
        }
        if neutral {
            added.push(format!("{r}[]"));
        }
        added.extend(hooks.into_iter().map(|(_, attr)| format!("{r}[].{attr}")));
        false
    });
    refs.extend(added);
    refs.sort();
    refs.dedup();
}

/// A piece of code [`mark_item_reads`] reads.
#[derive(Clone, Copy)]
pub(super) enum Code<'a> {
    Stmt(&'a Stmt),
    Expr(&'a Expr),
    /// Pieces of one unit (a class's construction: its body's statements and the methods it
    /// runs).
    Stmts(&'a [&'a Stmt]),
}

/// The methods of a class that a registry's dispatch may call without making or using an
/// instance (`REGISTRY[name].add_args(parser)`): `@staticmethod`s, and `@classmethod`s that
/// never name `cls`.
pub(super) fn class_hooks(class: &ruff_python_ast::StmtClassDef) -> Vec<&Stmt> {
    let decorated = |d: &ruff_python_ast::StmtFunctionDef, name: &str| {
        d.decorator_list
            .iter()
            .any(|x| matches!(&x.expression, Expr::Name(n) if n.id.as_str() == name))
    };
    class
        .body
        .iter()
        .filter(|s| match s {
            Stmt::FunctionDef(d) => {
                decorated(d, "staticmethod")
                    || decorated(d, "classmethod") && {
                        let cls = d
                            .parameters
                            .args
                            .first()
                            .map(|p| p.parameter.name.to_string());
                        let refs = super::refs_of(s);
                        cls.is_some_and(|cls| {
                            !refs.iter().any(|r| {
                                r == &cls
                                    || r.strip_prefix(cls.as_str())
                                        .is_some_and(|t| t.starts_with('.'))
                            })
                        })
                    }
            }
            _ => false,
        })
        .collect()
}

/// A name's part in a registry: the registry, and the path after the name that registers
/// (`None`: none does).
type Part = (usize, Option<Vec<String>>);

/// The tree's registries, as the walk reads them.
#[derive(Default)]
pub(super) struct Registries {
    /// By file, the module-level names a registry keeps its items in or reads them through
    /// (`REGISTRY`, `build_criterion_`): the registries each is part of, with the path after it
    /// that registers rather than reads (`register_module` of `MODELS.register_module`).
    dispatch: HashMap<usize, HashMap<String, Vec<Part>>>,
    /// Each registry's items: (file, unit).
    items: Vec<Vec<(usize, usize)>>,
    /// The same by file: (registry, unit).
    by_file: Vec<Vec<(usize, usize)>>,
    /// By file, the registered units of no registry of the tree: they run when the module does.
    pub loose: Vec<Vec<usize>>,
    /// The registering functions (file, unit), with the names they store into: their own reads
    /// of those register, never dispatch.
    pub writes: HashMap<(usize, usize), Vec<String>>,
}

/// What a decorator of the tree does with what it decorates.
#[derive(Clone, Copy)]
enum Decorator {
    /// Stores it in a registry of the tree: it runs where the registry is read.
    Registry(usize),
    /// Changes it and stores it nowhere (fairseq's `with_incremental_state`): it runs where it
    /// is named, as with a plain decorator.
    Wrapper,
}

/// Whether a decorator function of the tree that reads none of its module's names stores what
/// it decorates nowhere either: no write into a container it reads (`NAME[key] = cls`,
/// `NAME.append(cls)`, `globals()[name] = cls`, `setattr(…)`), no registering call
/// (`other.register(cls)`).
fn wrapper(refs: &[super::Name], names: &super::NameTable) -> bool {
    !refs.iter().any(|&r| {
        let parts: Vec<&str> = names.text(r).split('.').collect();
        parts[0].ends_with("[]")
            || parts[1..]
                .iter()
                .any(|p| NEUTRAL.contains(p) || p.starts_with("register"))
            || parts.iter().any(|p| {
                p.starts_with("register") || matches!(*p, "setattr" | "setdefault" | "globals")
            })
    })
}

/// The files of the tree, and how a file's import names them.
struct Tree<'a> {
    files: &'a [PyFile],
    names: &'a super::NameTable,
    lookup: &'a Lookup<'a>,
}

/// What a decorator's dotted name is defined as: the file, the name there, and the path read
/// after it.
type Definition = (usize, String, Vec<String>);

impl Registries {
    /// Resolve each registered unit's decorators to the registries of the tree they write.
    pub(super) fn find(
        files: &[PyFile],
        names: &super::NameTable,
        lookup: &Lookup<'_>,
    ) -> Registries {
        let tree = Tree {
            files,
            names,
            lookup,
        };
        let mut out = Registries {
            loose: vec![Vec::new(); files.len()],
            ..Default::default()
        };
        // One registry per registering function, or per assignment that makes one.
        let mut ids: HashMap<(usize, String), usize> = HashMap::default();
        for (j, f) in files.iter().enumerate() {
            for reg in &f.registered {
                let Some(u) = f.units.iter().position(|u| *u.name == *reg.unit) else {
                    continue;
                };
                let found: Option<Vec<Decorator>> = reg
                    .by
                    .iter()
                    .enumerate()
                    .map(|(k, by)| {
                        let called = reg.called.get(k).copied();
                        out.registry_of(&tree, j, by, called, &mut ids)
                    })
                    .collect();
                match found {
                    Some(found) => {
                        for d in found {
                            if let Decorator::Registry(id) = d {
                                out.items[id].push((j, u));
                            }
                        }
                    }
                    None => out.loose[j].push(u),
                }
            }
        }
        out.by_file = vec![Vec::new(); files.len()];
        for (k, items) in out.items.iter().enumerate() {
            for &(j, u) in items {
                out.by_file[j].push((k, u));
            }
        }
        out
    }

    /// What the decorator `by` of file `j` is: a registry of the tree (made the first time it
    /// is met) or a wrapper; `None` where it is not the tree's own.
    fn registry_of(
        &mut self,
        tree: &Tree<'_>,
        j: usize,
        by: &str,
        called: Option<bool>,
        ids: &mut HashMap<(usize, String), usize>,
    ) -> Option<Decorator> {
        let files = tree.files;
        let parts: Vec<&str> = by.split('.').filter(|p| !p.is_empty()).collect();
        let mut found = Vec::new();
        definition(tree, j, &parts, 0, &mut found);
        found.sort();
        found.dedup();
        // Defined once, or several definitions read the same way: one is taken only alone.
        let [(r, name, rest)] = found.as_slice() else {
            return None;
        };
        let (r, f) = (*r, &files[*r]);
        if let Some(&id) = ids.get(&(r, name.clone())) {
            return Some(Decorator::Registry(id));
        }
        // A function or class of the tree whose body shows what it does with the function:
        // a wrapper runs it where it is called; one that calls it, at import (as unknown).
        let unit = f.units.iter().position(|u| *u.name == **name);
        if let (Some(u), Some(called)) = (unit.filter(|_| rest.is_empty()), called) {
            match f.units[u].decorates.get(called) {
                super::decorators::Decorates::Wraps => return Some(Decorator::Wrapper),
                super::decorators::Decorates::Calls => return None,
                super::decorators::Decorates::Unknown => {}
            }
        }
        // A registering function of the tree, storing into names of its module.
        if let Some(u) = unit {
            if !rest.is_empty() || !f.units[u].function {
                return None;
            }
            let state: Vec<String> = f.units[u]
                .refs
                .iter()
                .map(|&r| tree.names.text(r).split('.').next().unwrap_or(""))
                .map(|head| head.trim_end_matches("[]"))
                .map(|head| head.split('(').next().unwrap_or_default())
                .filter(|head| global(f, head).is_some_and(|g| g.maker.is_some()))
                .map(str::to_string)
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            if state.is_empty() {
                return wrapper(&f.units[u].refs, tree.names).then_some(Decorator::Wrapper);
            }
            let id = self.new_registry(r, &state, &[], name, ids);
            self.writes.insert((r, u), state);
            return Some(Decorator::Registry(id));
        }
        // An object made at module level: data, or what a function or class of the tree makes.
        let g = global(f, name)?;
        let maker = g.maker.as_deref()?;
        if !maker.is_empty() {
            let parts: Vec<&str> = maker.split('.').collect();
            let mut made = Vec::new();
            definition(tree, r, &parts, 0, &mut made);
            let tree_code = !made.is_empty()
                && made.iter().all(|(m, n, rest)| {
                    rest.is_empty() && files[*m].units.iter().any(|u| *u.name == **n)
                });
            if !tree_code {
                return None;
            }
        }
        let names = g.names.clone();
        Some(Decorator::Registry(
            self.new_registry(r, &names, rest, name, ids),
        ))
    }

    fn new_registry(
        &mut self,
        r: usize,
        names: &[String],
        registers: &[String],
        anchor: &str,
        ids: &mut HashMap<(usize, String), usize>,
    ) -> usize {
        let id = self.items.len();
        self.items.push(Vec::new());
        ids.insert((r, anchor.to_string()), id);
        let by_name = self.dispatch.entry(r).or_default();
        for name in names {
            // The other names are never read to register: every read but a neutral one
            // dispatches.
            let registering = (name == anchor).then(|| registers.to_vec());
            by_name
                .entry(name.clone())
                .or_default()
                .push((id, registering));
        }
        id
    }

    /// What reading `parts` in file `i` runs of a registry `parts[0]` names: `None` when it
    /// names none; else the items, all of them (a read of the registry), their hook alone
    /// (`REGISTRY[name].add_args`), or none (a membership test, a registration).
    pub(super) fn read(&self, files: &[PyFile], i: usize, parts: &[&str]) -> Option<Vec<Live>> {
        let head = parts.first()?;
        let (name, item_read) = match head.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (*head, false),
        };
        let registries = self.dispatch.get(&i)?.get(name)?;
        let rest = &parts[1..];
        let mut out = Vec::new();
        for (id, registering) in registries {
            let items = &self.items[*id];
            if item_read {
                // `NAME[]`: read without running an item; `NAME[].attr`: the items' `attr`, a
                // hook that makes no instance and touches no GPU, else the items.
                let Some(attr) = rest.first() else { continue };
                for &(j, u) in items {
                    let hook = format!("{}.{attr}", files[j].units[u].name);
                    match files[j].units.iter().position(|h| *h.name == *hook) {
                        Some(h) => out.push(Live::Unit(j, h)),
                        None => out.push(Live::Registry(*id)),
                    }
                }
                continue;
            }
            let registers = registering
                .as_ref()
                .is_some_and(|r| rest.len() == r.len() && rest.iter().zip(r).all(|(a, b)| a == b));
            let neutral = rest.first().is_some_and(|a| NEUTRAL.contains(a));
            if !registers && !neutral {
                out.push(Live::Registry(*id));
            }
        }
        out.sort_unstable_by_key(|l| l.sort_key());
        out.dedup();
        Some(out)
    }

    /// How many registries the tree has.
    pub(super) fn count(&self) -> usize {
        self.items.len()
    }

    /// The items of registry `k`: (file, unit).
    pub(super) fn items(&self, k: usize) -> &[(usize, usize)] {
        &self.items[k]
    }

    /// What file `j` registers: (registry, unit).
    pub(super) fn items_in(&self, j: usize) -> &[(usize, usize)] {
        self.by_file.get(j).map_or(&[], Vec::as_slice)
    }
}

/// The module-level assignment of file `f` that binds `name`, if one does.
fn global<'f>(f: &'f PyFile, name: &str) -> Option<&'f Global> {
    f.globals.iter().find(|g| g.names.iter().any(|n| n == name))
}

/// Where the dotted name `parts` read in file `i` is defined: a function, class or
/// module-level name of a file of the tree, and what is read after it; through the imports as
/// [`super::Reach::resolve`] follows them.
fn definition(tree: &Tree<'_>, i: usize, parts: &[&str], depth: usize, out: &mut Vec<Definition>) {
    let f = &tree.files[i];
    let Some(&head) = parts.first() else { return };
    if depth > 4 {
        return;
    }
    if f.units.iter().any(|u| *u.name == *head) || global(f, head).is_some() {
        out.push((
            i,
            head.to_string(),
            parts[1..].iter().map(|p| p.to_string()).collect(),
        ));
        return;
    }
    super::through_imports(i, f.imports.iter(), parts, tree.lookup, |step| match step {
        super::Through::Module(module, rest) => definition_in(tree, i, module, rest, depth, out),
        super::Through::File(j, read) => definition(tree, j, read, depth + 1, out),
    });
}

/// [`definition`] of `rest` read from module `module` (as file `from` imports it).
fn definition_in(
    tree: &Tree<'_>,
    from: usize,
    module: &str,
    rest: &[&str],
    depth: usize,
    out: &mut Vec<Definition>,
) {
    if rest.is_empty() {
        return;
    }
    for j in (tree.lookup)(module, from) {
        definition(tree, j, rest, depth + 1, out);
    }
    let deeper = format!("{module}.{}", rest[0]);
    if !(tree.lookup)(&deeper, from).is_empty() {
        definition_in(tree, from, &deeper, &rest[1..], depth + 1, out);
    }
}
