//! Instances code makes and keeps to itself: `f = Foo(…)` in a function (or a `__main__`
//! block), where every later use of `f` reads an attribute of it (`f.width`, `f.run()`). Such
//! a call runs the class's construction (`Foo()`) and the methods named by the attributes read
//! (`Foo().run`), not the whole class. Any other use of the name (handed to a call, called,
//! iterated, returned, in a `with`, declared `global`) lets code the index does not follow
//! call any method, so the class runs whole, as before.

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, Stmt};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::construction::CALLED;

/// Rewrites `refs`, the names `code` reads as code, for the instances it keeps to itself: the
/// class's read becomes its construction (`Foo()`) and one read per attribute (`Foo().run`).
/// `outside`: for a `__main__` block, the module's other statements, whose functions may read
/// the block's names as globals.
pub(super) fn mark(code: &[&Stmt], outside: Option<&[Stmt]>, refs: &mut Vec<String>) {
    let mut uses = Uses {
        depth: usize::from(outside.is_some()),
        ..Uses::default()
    };
    code.iter().for_each(|s| uses.visit_stmt(s));
    if uses.sites.is_empty() {
        return;
    }
    let mut elsewhere = Uses::default();
    for s in outside.into_iter().flatten() {
        if !code.iter().any(|c| std::ptr::eq(s, *c)) {
            elsewhere.visit_stmt(s);
        }
    }
    let kept = |local: &Option<String>| {
        local.as_deref().is_none_or(|v| {
            !uses.plain.contains(v)
                && !uses.declared.contains(v)
                && !elsewhere.plain.contains(v)
                && !elsewhere.attrs.contains_key(v)
                && !elsewhere.declared.contains(v)
        })
    };
    let mut by_class: HashMap<&str, Vec<&Option<String>>> = HashMap::default();
    for (class, local) in &uses.sites {
        by_class.entry(class.as_str()).or_default().push(local);
    }
    let mut added = Vec::new();
    for (class, locals) in by_class {
        // Every read of the class is one of these calls, and each keeps its instance.
        let reads = uses.chains.get(class).copied().unwrap_or(0);
        if reads != locals.len() || !locals.iter().all(|l| kept(l)) {
            continue;
        }
        let Some(at) = refs.iter().position(|r| r == class) else {
            continue;
        };
        refs.remove(at);
        added.push(format!("{class}{CALLED}"));
        for local in locals.iter().filter_map(|l| l.as_deref()) {
            for attr in uses.attrs.get(local).into_iter().flatten() {
                added.push(format!("{class}{CALLED}.{attr}"));
            }
        }
    }
    refs.extend(added);
    refs.sort();
    refs.dedup();
}

/// How a piece of code uses names: the calls whose instance a plain name keeps (or that drop
/// it), the names read other than for an attribute, the attributes read of each name, and how
/// often each dotted chain is read.
#[derive(Default)]
struct Uses {
    /// Inside a function (or a `__main__` block): where an assignment binds a local name.
    depth: usize,
    sites: Vec<(String, Option<String>)>,
    plain: HashSet<String>,
    attrs: HashMap<String, HashSet<String>>,
    chains: HashMap<String, usize>,
    declared: HashSet<String>,
}

/// `a.b.C` as written, for a name or an attribute chain rooted at one.
fn dotted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(format!("{}.{}", dotted(&a.value)?, a.attr)),
        _ => None,
    }
}

impl Uses {
    /// `value`, bound to `local` (none: dropped), when it is a call of a dotted name.
    fn site(&mut self, local: Option<&Expr>, value: &Expr) {
        if self.depth == 0 {
            return;
        }
        let Expr::Call(call) = value else { return };
        // A class, by its name's case: the reads of other calls keep their text, which the
        // registries' reading of a function looks at.
        let Some(class) = dotted(&call.func).filter(|c| {
            c.rsplit('.')
                .next()
                .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_uppercase()))
        }) else {
            return;
        };
        let local = match local {
            Some(Expr::Name(n)) => Some(n.id.to_string()),
            Some(_) => return,
            None => None,
        };
        self.sites.push((class, local));
    }
}

impl<'a> Visitor<'a> for Uses {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(_) => {
                self.depth += 1;
                walk_stmt(self, stmt);
                self.depth -= 1;
                return;
            }
            // A class body's names are the class's attributes, not locals.
            Stmt::ClassDef(_) => {
                let depth = std::mem::take(&mut self.depth);
                walk_stmt(self, stmt);
                self.depth = depth;
                return;
            }
            Stmt::Global(g) => self.declared.extend(g.names.iter().map(|n| n.to_string())),
            Stmt::Nonlocal(n) => self.declared.extend(n.names.iter().map(|n| n.to_string())),
            Stmt::Assign(a) if a.targets.len() == 1 => self.site(a.targets.first(), &a.value),
            Stmt::AnnAssign(a) => {
                if let Some(value) = &a.value {
                    self.site(Some(&a.target), value);
                }
            }
            Stmt::Expr(e) => self.site(None, &e.value),
            _ => {}
        }
        walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(n) => {
                if n.ctx.is_load() {
                    self.plain.insert(n.id.to_string());
                    *self.chains.entry(n.id.to_string()).or_default() += 1;
                }
            }
            Expr::Attribute(_) => {
                let mut at = expr;
                let mut first = None;
                while let Expr::Attribute(a) = at {
                    first = Some(a.attr.as_str());
                    at = &a.value;
                }
                match (at, first) {
                    (Expr::Name(n), Some(attr)) => {
                        self.attrs
                            .entry(n.id.to_string())
                            .or_default()
                            .insert(attr.to_string());
                        if let Some(chain) = dotted(expr) {
                            *self.chains.entry(chain).or_default() += 1;
                        }
                    }
                    _ => walk_expr(self, expr),
                }
            }
            _ => walk_expr(self, expr),
        }
    }
}
