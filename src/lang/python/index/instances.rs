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
    // Only a class the code reads can be rewritten (`refs` is sorted, each name once, and
    // stays so where nothing is): most code reads none, which its reads alone tell.
    debug_assert!(refs.windows(2).all(|w| w[0] < w[1]));
    let classes: Vec<&str> = refs
        .iter()
        .map(String::as_str)
        .filter(|r| is_class_name(r))
        .collect();
    if classes.is_empty() {
        return;
    }
    // Most code makes no instance it keeps: its statements alone tell, cheaply.
    let mut first = Uses {
        depth: usize::from(outside.is_some()),
        sites_only: true,
        ..Uses::default()
    };
    code.iter().for_each(|s| first.visit_stmt(s));
    if !first
        .sites
        .iter()
        .any(|(callee, _)| classes.iter().any(|r| super::registry::is_chain(callee, r)))
    {
        return;
    }
    let mut uses = Uses {
        depth: usize::from(outside.is_some()),
        ..Uses::default()
    };
    code.iter().for_each(|s| uses.visit_stmt(s));
    let mut elsewhere = Uses::default();
    for s in outside.into_iter().flatten() {
        if !code.iter().any(|c| std::ptr::eq(s, *c)) {
            elsewhere.visit_stmt(s);
        }
    }
    let kept = |local: &Option<&str>| {
        local.is_none_or(|v| {
            !uses.plain.contains(v)
                && !uses.declared.contains(v)
                && !elsewhere.plain.contains(v)
                && !elsewhere.attrs.contains_key(v)
                && !elsewhere.declared.contains(v)
        })
    };
    let mut by_class: HashMap<String, Vec<Option<&str>>> = HashMap::default();
    for (callee, local) in &uses.sites {
        if let Some(class) = dotted(callee) {
            by_class.entry(class).or_default().push(*local);
        }
    }
    let mut added = Vec::new();
    for (class, locals) in by_class {
        // Every read of the class is one of these calls, and each keeps its instance.
        let reads = uses
            .chains
            .iter()
            .filter(|c| super::registry::is_chain(c, &class))
            .count();
        if reads != locals.len() || !locals.iter().all(kept) {
            continue;
        }
        let Some(at) = refs.iter().position(|r| *r == class) else {
            continue;
        };
        refs.remove(at);
        added.push(format!("{class}{CALLED}"));
        for local in locals.iter().flatten() {
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
/// it), the names read other than for an attribute, the attributes read of each name, and the
/// dotted chains read (each read once).
#[derive(Default)]
struct Uses<'a> {
    /// Inside a function (or a `__main__` block): where an assignment binds a local name.
    depth: usize,
    sites: Vec<(&'a Expr, Option<&'a str>)>,
    plain: HashSet<&'a str>,
    attrs: HashMap<&'a str, HashSet<&'a str>>,
    chains: Vec<&'a Expr>,
    declared: HashSet<&'a str>,
    /// Only the calls (statements), not the expressions' reads.
    sites_only: bool,
}

/// Whether a read (`a.b.C`) may name a class a call site makes: its last part is
/// capitalised, as [`Uses::site`] asks.
fn is_class_name(read: &str) -> bool {
    let bytes = read.as_bytes();
    let mut last = bytes.len();
    while last > 0 && bytes[last - 1] != b'.' {
        last -= 1;
    }
    bytes.get(last).is_some_and(u8::is_ascii_uppercase)
}

/// `a.b.C` as written, for a name or an attribute chain rooted at one.
fn dotted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(format!("{}.{}", dotted(&a.value)?, a.attr)),
        _ => None,
    }
}

impl<'a> Uses<'a> {
    /// `value`, bound to `local` (none: dropped), when it is a call of a dotted name.
    fn site(&mut self, local: Option<&'a Expr>, value: &'a Expr) {
        if self.depth == 0 {
            return;
        }
        let Expr::Call(call) = value else { return };
        // A class, by its name's case: the reads of other calls keep their text, which the
        // registries' reading of a function looks at.
        let last = match call.func.as_ref() {
            Expr::Name(n) => n.id.as_str(),
            Expr::Attribute(a) => a.attr.as_str(),
            _ => return,
        };
        if !last.starts_with(|c: char| c.is_ascii_uppercase()) {
            return;
        }
        let local = match local {
            Some(Expr::Name(n)) => Some(n.id.as_str()),
            Some(_) => return,
            None => None,
        };
        self.sites.push((&call.func, local));
    }
}

impl<'a> Visitor<'a> for Uses<'a> {
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
            Stmt::Global(g) => self.declared.extend(g.names.iter().map(|n| n.as_str())),
            Stmt::Nonlocal(n) => self.declared.extend(n.names.iter().map(|n| n.as_str())),
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
        if self.sites_only {
            return;
        }
        match expr {
            Expr::Name(n) => {
                if n.ctx.is_load() {
                    self.plain.insert(n.id.as_str());
                    self.chains.push(expr);
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
                        self.attrs.entry(n.id.as_str()).or_default().insert(attr);
                        self.chains.push(expr);
                    }
                    _ => walk_expr(self, expr),
                }
            }
            _ => walk_expr(self, expr),
        }
    }
}
