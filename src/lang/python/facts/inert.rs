//! Where a string is only shown, compared or matched: the arguments of output calls (`print`,
//! `logger.info`), the operands of comparisons (`dev == "cuda:1"`, `dev in ("cuda:0",
//! "cuda:1")`), the arguments of pattern calls (`re.match`, `fnmatch`, `.startswith`), and the
//! values of names only read there or iterated into names only read there (a validator's list
//! of accepted strings or patterns, a device name only logged), and the arguments a call of a
//! function of the file gives to a parameter that function only reads there
//! (`check(path, "cuda")` where `check` only compares its `kind` with `"cuda"`). A `"cuda:1"`
//! there chooses no card: it is no device choice and makes no GPU code.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::ops::Range;

use ruff_python_ast::visitor::{walk_comprehension, walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Comprehension, Expr, Stmt};

use super::literals::is_echo;
use super::range;

/// The ranges of a file where a string is only shown, compared or matched (sorted by start).
pub fn inert_ranges(body: &[Stmt]) -> Vec<Range<usize>> {
    let mut v = Inert::default();
    v.visit_body(body);
    // A name is inert when it is read, and every read is inert or iterates into names that
    // are (a fixpoint: a loop variable's loads decide its list's). A parameter is one such name
    // when it is one function's only (names are not scoped here: a name that is also bound
    // another way, or a parameter of two functions, is never inert).
    let param = |name: &str| {
        v.params.get(name) == Some(&1)
            && !v.other_bindings.contains(name)
            && !v.values.contains_key(name)
    };
    let mut inert: HashSet<String> = HashSet::default();
    loop {
        let before = inert.len();
        for (name, loads) in &v.loads {
            let bound_once = !v.other_bindings.contains(name) && !v.params.contains_key(name);
            if inert.contains(name) || !(bound_once || param(name)) || loads.is_empty() {
                continue;
            }
            let all = loads.iter().all(|l| match l {
                Load::Inert => true,
                Load::Plain => false,
                Load::Iter(targets) => {
                    !targets.is_empty() && targets.iter().all(|t| inert.contains(t))
                }
            });
            if all {
                inert.insert(name.clone());
            }
        }
        if inert.len() == before {
            break;
        }
    }
    let mut out = carve(v.contexts, &v.live);
    for (name, values) in v.values {
        if inert.contains(&name) {
            out.extend(values);
        }
    }
    // The literal arguments of calls to the file's functions, by the parameter they bind.
    for (function, slot, at) in v.arguments {
        let Some(Some(params)) = v.defs.get(&function) else {
            continue;
        };
        let bound = match slot {
            Slot::Position(i) => params.positional.get(i),
            Slot::Keyword(k) => params.all.iter().find(|p| **p == k),
        };
        if bound.is_some_and(|p| inert.contains(p)) {
            out.push(at);
        }
    }
    out.sort_by_key(|r| r.start);
    out
}

/// `ranges` less the parts `holes` cover (each hole lies within one range).
fn carve(ranges: Vec<Range<usize>>, holes: &[Range<usize>]) -> Vec<Range<usize>> {
    if holes.is_empty() {
        return ranges;
    }
    let mut out = Vec::new();
    for r in ranges {
        let mut start = r.start;
        let mut inside: Vec<&Range<usize>> = holes
            .iter()
            .filter(|h| r.start <= h.start && h.end <= r.end)
            .collect();
        inside.sort_by_key(|h| h.start);
        for h in inside {
            if h.start > start {
                out.push(start..h.start);
            }
            start = start.max(h.end);
        }
        if start < r.end {
            out.push(start..r.end);
        }
    }
    out
}

/// A call that puts data on a device: `.to(d)`, `.cuda()`, or one given `device=`.
fn places_on_device(call: &ruff_python_ast::ExprCall) -> bool {
    matches!(call.func.as_ref(), Expr::Attribute(a) if matches!(a.attr.as_str(), "to" | "cuda"))
        || call
            .arguments
            .keywords
            .iter()
            .any(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "device"))
}

/// Whether `at` lies in one of `ranges` (as `inert_ranges` returns them).
pub fn within(ranges: &[Range<usize>], at: &Range<usize>) -> bool {
    ranges
        .iter()
        .take_while(|r| r.start <= at.start)
        .any(|r| at.end <= r.end)
}

enum Load {
    /// Inside an output call, a comparison or a pattern call.
    Inert,
    Plain,
    /// The iterable of a loop or comprehension binding these names.
    Iter(Vec<String>),
}

#[derive(Default)]
struct Inert {
    /// Output and pattern calls, comparisons.
    contexts: Vec<Range<usize>>,
    /// Inside one of them.
    depth: usize,
    /// Inside a comparison (of the contexts).
    compares: usize,
    /// Calls inside a comparison that place data on a device: not inert, though within one.
    live: Vec<Range<usize>>,
    loads: HashMap<String, Vec<Load>>,
    /// `NAME = value` with a value made only of literals: the values, by name. Loop variables
    /// are entered with no value, so that their loads are counted.
    values: HashMap<String, Vec<Range<usize>>>,
    /// Names also bound another way (a computed value, an import, a `with`).
    other_bindings: HashSet<String>,
    /// Parameter names, with the number of functions that have one of the name.
    params: HashMap<String, usize>,
    /// The file's functions by name, with their parameters; `None` when the name is defined
    /// twice (which one a call runs is not known).
    defs: HashMap<String, Option<Params>>,
    /// Literal arguments of calls by plain name (`check(path, "cuda")`): the callee, the slot,
    /// the literal.
    arguments: Vec<(String, Slot, Range<usize>)>,
}

struct Params {
    /// Those a positional argument binds, in order (`self` included for a method).
    positional: Vec<String>,
    all: Vec<String>,
}

enum Slot {
    Position(usize),
    Keyword(String),
}

fn literal_only(expr: &Expr) -> bool {
    match expr {
        Expr::StringLiteral(_) | Expr::NumberLiteral(_) | Expr::NoneLiteral(_) => true,
        Expr::BooleanLiteral(_) => true,
        Expr::List(l) => l.elts.iter().all(literal_only),
        Expr::Tuple(t) => t.elts.iter().all(literal_only),
        Expr::Set(s) => s.elts.iter().all(literal_only),
        _ => false,
    }
}

/// `re.match(p, s)`, `fnmatch(s, p)`, `s.startswith(p)`: a string there is a pattern.
fn is_pattern_call(func: &Expr) -> bool {
    let name = match func {
        Expr::Attribute(a) => a.attr.as_str(),
        Expr::Name(n) => n.id.as_str(),
        _ => return false,
    };
    matches!(
        name,
        "match"
            | "fullmatch"
            | "search"
            | "compile"
            | "findall"
            | "fnmatch"
            | "startswith"
            | "endswith"
    )
}

fn names(target: &Expr, out: &mut Vec<String>) {
    match target {
        Expr::Name(n) => out.push(n.id.to_string()),
        Expr::Tuple(t) => t.elts.iter().for_each(|e| names(e, out)),
        Expr::List(l) => l.elts.iter().for_each(|e| names(e, out)),
        _ => {}
    }
}

impl Inert {
    /// `for TARGET in NAME`: the load of NAME is an iteration into TARGET's names. A literal
    /// list written in place (`for k in ["python", "cuda"]`) is such a name, bound once.
    fn iteration(&mut self, target: &Expr, iter: &Expr) -> bool {
        let key = match iter {
            Expr::Name(n) => n.id.to_string(),
            Expr::List(_) | Expr::Tuple(_) | Expr::Set(_) if literal_only(iter) => {
                let key = format!("<literal {}>", range(iter).start);
                self.values
                    .entry(key.clone())
                    .or_default()
                    .push(range(iter));
                key
            }
            _ => return false,
        };
        let mut bound = Vec::new();
        names(target, &mut bound);
        let load = if self.depth > 0 {
            Load::Inert
        } else {
            Load::Iter(bound)
        };
        self.loads.entry(key).or_default().push(load);
        true
    }
}

impl<'a> Visitor<'a> for Inert {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        let (target, value) = match stmt {
            Stmt::Assign(a) if a.targets.len() == 1 => (Some(&a.targets[0]), Some(&*a.value)),
            Stmt::AnnAssign(a) => (Some(&*a.target), a.value.as_deref()),
            _ => (None, None),
        };
        if let (Some(Expr::Name(n)), Some(value)) = (target, value) {
            let name = n.id.to_string();
            if literal_only(value) {
                self.values.entry(name).or_default().push(range(value));
            } else {
                self.other_bindings.insert(name);
            }
        }
        match stmt {
            Stmt::For(f) if self.iteration(&f.target, &f.iter) => {
                self.visit_body(&f.body);
                self.visit_body(&f.orelse);
            }
            Stmt::Import(_) | Stmt::ImportFrom(_) => {}
            Stmt::FunctionDef(d) => {
                for p in d.parameters.iter() {
                    *self.params.entry(p.name().to_string()).or_default() += 1;
                }
                let ps = &d.parameters;
                let params = Params {
                    positional: ps
                        .posonlyargs
                        .iter()
                        .chain(&ps.args)
                        .map(|p| p.parameter.name.to_string())
                        .collect(),
                    all: ps.iter().map(|p| p.name().to_string()).collect(),
                };
                self.defs
                    .entry(d.name.to_string())
                    .and_modify(|known| *known = None)
                    .or_insert(Some(params));
                walk_stmt(self, stmt);
            }
            _ => walk_stmt(self, stmt),
        }
    }

    fn visit_comprehension(&mut self, comprehension: &'a Comprehension) {
        if self.iteration(&comprehension.target, &comprehension.iter) {
            for e in &comprehension.ifs {
                self.visit_expr(e);
            }
        } else {
            walk_comprehension(self, comprehension);
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        // What a comparison computes is not compared: `assert x.to("cuda").sum() == 0` puts a
        // tensor on a card. A call that places data on a device inside a comparison is code
        // that runs, with its arguments.
        if let (Expr::Call(c), true) = (expr, self.depth > 0 && self.compares > 0) {
            if places_on_device(c) {
                self.live.push(range(expr));
                let (depth, compares) = (self.depth, self.compares);
                (self.depth, self.compares) = (0, 0);
                self.visit_expr(expr);
                (self.depth, self.compares) = (depth, compares);
                return;
            }
        }
        let context = match expr {
            Expr::Compare(_) => true,
            Expr::Call(c) => is_echo(&c.func) || is_pattern_call(&c.func),
            _ => false,
        };
        if context && self.depth == 0 {
            self.contexts.push(range(expr));
        }
        if let Expr::Call(c) = expr {
            if let (Expr::Name(f), 0) = (c.func.as_ref(), self.depth) {
                let callee = f.id.to_string();
                // After a `*xs`, which parameter an argument binds is not known.
                let positional = c.arguments.args.iter().enumerate();
                let positional = positional.take_while(|(_, a)| !a.is_starred_expr());
                for (i, a) in positional.filter(|(_, a)| literal_only(a)) {
                    self.arguments
                        .push((callee.clone(), Slot::Position(i), range(a)));
                }
                for k in &c.arguments.keywords {
                    if let (Some(arg), true) = (&k.arg, literal_only(&k.value)) {
                        let slot = Slot::Keyword(arg.to_string());
                        self.arguments.push((callee.clone(), slot, range(&k.value)));
                    }
                }
            }
        }
        if let Expr::Name(n) = expr {
            if n.ctx.is_load() {
                let load = if self.depth > 0 {
                    Load::Inert
                } else {
                    Load::Plain
                };
                self.loads.entry(n.id.to_string()).or_default().push(load);
            } else if self.depth > 0 {
                // A walrus inside a comparison: bound to what is compared.
                self.other_bindings.insert(n.id.to_string());
            }
        }
        let compare = matches!(expr, Expr::Compare(_));
        self.depth += usize::from(context);
        self.compares += usize::from(compare);
        walk_expr(self, expr);
        self.depth -= usize::from(context);
        self.compares -= usize::from(compare);
    }
}
