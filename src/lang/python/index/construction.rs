//! What making an instance of a class runs: the class's own statements and its construction
//! methods (`__init__`, `__new__`, `__post_init__`), with the methods they read on the
//! instance, in turn; never its other methods, which run where they are read. A class called at
//! import (`AvoidCUDAOOM = AvoidOOM()`, mmdet's) runs its construction only, kept as a unit of
//! its own (`AvoidOOM()`); a read of the instance (`AvoidCUDAOOM.retry(…)`) or of an attribute
//! of the class runs the whole class, as before.

use ruff_python_ast::visitor::{walk_expr, Visitor};
use ruff_python_ast::{Expr, Stmt, StmtClassDef};
use rustc_hash::FxHashSet as HashSet;

/// The methods Python runs to make an instance.
const CONSTRUCTION: &[&str] = &["__init__", "__new__", "__post_init__"];

/// The methods Python runs on an instance without code naming them where it reads an
/// attribute (`obj.x`), sets one, or drops the object: they run with its construction.
const IMPLICIT: &[&str] = &[
    "__del__",
    "__getattr__",
    "__getattribute__",
    "__setattr__",
    "__delattr__",
];

/// The mark of a name called at import, after the name read (`AvoidOOM()`), and of a class's
/// construction unit, after its name.
pub(super) const CALLED: &str = "()";

/// The part of a class that making an instance runs.
pub(super) struct Construction<'a> {
    /// The class's statements that run: all but the methods construction never reads.
    pub stmts: Vec<&'a Stmt>,
    /// Construction calls a method the class does not define, or one of its base's other
    /// than the base's construction: the bases run whole.
    pub inherits: bool,
    /// The methods construction runs.
    pub run: HashSet<&'a str>,
}

/// What making an instance of `class` runs; `None` when that is every method of the class
/// (nothing to keep apart).
pub(super) fn of(class: &StmtClassDef) -> Option<Construction<'_>> {
    let methods: HashSet<&str> = class
        .body
        .iter()
        .filter_map(|s| match s {
            Stmt::FunctionDef(d) => Some(d.name.as_str()),
            _ => None,
        })
        .collect();
    let mut run: HashSet<&str> = CONSTRUCTION
        .iter()
        .chain(IMPLICIT)
        .copied()
        .filter(|m| methods.contains(m))
        .collect();
    let mut todo: Vec<&str> = run.iter().copied().collect();
    let mut inherits = false;
    while let Some(method) = todo.pop() {
        let mut reads = InstanceReads::default();
        for s in &class.body {
            if matches!(s, Stmt::FunctionDef(d) if d.name.as_str() == method) {
                reads.visit_stmt(s);
            }
        }
        for name in &reads.read {
            if let Some(&m) = methods.get(name.as_str()) {
                if run.insert(m) {
                    todo.push(m);
                }
            }
        }
        inherits |= reads.base_other || reads.called.iter().any(|n| !methods.contains(n.as_str()));
        // The instance handed on (`register(self)`): whoever gets it may call any method.
        if reads.handed_on {
            return None;
        }
    }
    if methods.iter().all(|m| run.contains(m)) {
        return None;
    }
    let stmts = class
        .body
        .iter()
        .filter(|s| match s {
            Stmt::FunctionDef(d) => run.contains(d.name.as_str()),
            _ => true,
        })
        .collect();
    Some(Construction {
        stmts,
        inherits,
        run,
    })
}

/// What code reads on the instance (`self.x`, `cls.x`) and calls on it (`self.setup()`), and
/// whether it calls a base's method other than its construction (`super().reset()`).
#[derive(Default)]
struct InstanceReads {
    read: HashSet<String>,
    called: HashSet<String>,
    base_other: bool,
    /// `self` or `cls` read other than for an attribute.
    handed_on: bool,
}

fn instance_attr(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Attribute(a) if matches!(a.value.as_ref(), Expr::Name(n) if matches!(n.id.as_str(), "self" | "cls")) => {
            Some(a.attr.as_str())
        }
        _ => None,
    }
}

impl<'a> Visitor<'a> for InstanceReads {
    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Call(c) => {
                if let Some(attr) = instance_attr(&c.func) {
                    self.called.insert(attr.to_string());
                }
            }
            Expr::Attribute(a) => {
                if let Some(attr) = instance_attr(expr).filter(|_| a.ctx.is_load()) {
                    self.read.insert(attr.to_string());
                }
                let on_base = matches!(a.value.as_ref(), Expr::Call(c)
                    if matches!(c.func.as_ref(), Expr::Name(n) if n.id.as_str() == "super"));
                if on_base && !CONSTRUCTION.contains(&a.attr.as_str()) {
                    self.base_other = true;
                }
                if instance_attr(expr).is_some() {
                    return;
                }
            }
            Expr::Name(n) if matches!(n.id.as_str(), "self" | "cls") => self.handed_on = true,
            _ => {}
        }
        walk_expr(self, expr);
    }
}

/// The name a module-level statement calls to make the value it binds to plain names, or
/// drops (`X = Cls(…)`, `X: T = Cls(…)`, `Cls(…)`), with the parts of the statement that read
/// other names (the arguments): a class called there runs its construction only. A value used
/// any other way (unpacked, an attribute read, iterated, in a `with`) runs more of the class.
pub(super) fn called_at_import(stmt: &Stmt) -> Option<(String, Vec<&Expr>)> {
    let value = match stmt {
        Stmt::Assign(a) if a.targets.iter().all(|t| matches!(t, Expr::Name(_))) => a.value.as_ref(),
        Stmt::AnnAssign(a) if matches!(a.target.as_ref(), Expr::Name(_)) => a.value.as_deref()?,
        Stmt::Expr(e) => e.value.as_ref(),
        _ => return None,
    };
    let Expr::Call(call) = value else {
        return None;
    };
    let callee = dotted(&call.func)?;
    let mut rest: Vec<&Expr> = call.arguments.args.iter().collect();
    rest.extend(call.arguments.keywords.iter().map(|k| &k.value));
    Some((callee, rest))
}

/// `a.b.c` as written, for a name or an attribute chain rooted at one.
fn dotted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(format!("{}.{}", dotted(&a.value)?, a.attr)),
        _ => None,
    }
}

/// The dotted names of a class's bases (`nn.Module`), which making an instance constructs.
pub(super) fn bases(class: &StmtClassDef) -> Vec<String> {
    class.bases().iter().filter_map(dotted).collect()
}

/// The methods of `class` that making an instance does not run, by name (a property's getter
/// and setter together): each runs where code reads its name on an instance.
pub(super) fn other_methods<'a>(
    class: &'a StmtClassDef,
    made: &Construction<'_>,
) -> Vec<(&'a str, Vec<&'a Stmt>)> {
    let mut out: Vec<(&str, Vec<&Stmt>)> = Vec::new();
    for s in &class.body {
        let Stmt::FunctionDef(d) = s else { continue };
        let name = d.name.as_str();
        if made.run.contains(name) {
            continue;
        }
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, defs)) => defs.push(s),
            None => out.push((name, vec![s])),
        }
    }
    out
}

/// The attributes of an instance of `class` whose read runs nothing of it that its
/// construction does not: the methods construction runs, the names the class body binds, and
/// the attributes its methods set on the instance (`self.fc = …`).
pub(super) fn members(class: &StmtClassDef, made: &Construction<'_>) -> Vec<String> {
    let mut sets = InstanceSets::default();
    for s in &class.body {
        match s {
            Stmt::FunctionDef(_) => sets.visit_stmt(s),
            Stmt::Assign(a) => a.targets.iter().for_each(|t| sets.bound(t)),
            Stmt::AnnAssign(a) => sets.bound(&a.target),
            _ => {}
        }
    }
    let mut out: Vec<String> = sets.names.into_iter().collect();
    out.extend(made.run.iter().map(|m| m.to_string()));
    out.sort();
    out.dedup();
    out
}

/// The names a class body binds and its methods set on the instance.
#[derive(Default)]
struct InstanceSets {
    names: HashSet<String>,
}

impl InstanceSets {
    fn bound(&mut self, target: &Expr) {
        match target {
            Expr::Name(n) => {
                self.names.insert(n.id.to_string());
            }
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.bound(e)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.bound(e)),
            _ => {}
        }
    }
}

impl<'a> Visitor<'a> for InstanceSets {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let (Some(attr), Expr::Attribute(a)) = (instance_attr(expr), expr) {
            if a.ctx.is_store() {
                self.names.insert(attr.to_string());
            }
        }
        walk_expr(self, expr);
    }
}

/// Whether `class` names a base (or a metaclass): an attribute it does not define may be a
/// base's code.
pub(super) fn based(class: &StmtClassDef) -> bool {
    class.arguments.as_deref().is_some_and(|a| {
        !a.keywords.is_empty()
            || a.args
                .iter()
                .any(|b| !matches!(b, Expr::Name(n) if n.id.as_str() == "object"))
    })
}
