//! Branches a function runs only when its caller passes an argument: `if device_map is not
//! None:` (or `if device_map:`) on a parameter whose default is `None` that the function never
//! rebinds. A call of the tree that passes neither the parameter's position nor its keyword,
//! nor any `*args`/`**kwargs`, runs the function without those branches (mmpretrain's
//! `get_model(args.config)` never dispatches the model to a card).

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The position of a keyword-only parameter: no positional argument reaches it.
pub(super) const KEYWORD_ONLY: u32 = u32::MAX;

/// The branches of a function that run only when a `None`-default parameter is passed.
pub(super) struct Guarded {
    /// The parameters, with their positions.
    pub params: Vec<(String, u32)>,
    /// The statements of those branches.
    pub skipped: Vec<TextRange>,
}

/// The branches of `def` guarded by a parameter it is not called with; `None` when there is
/// none, or when a decorator may call it with other arguments than its callers give.
pub(super) fn of(def: &StmtFunctionDef) -> Option<Guarded> {
    if !def.decorator_list.is_empty() {
        return None;
    }
    let p = &def.parameters;
    let positional = p.posonlyargs.iter().chain(&p.args).enumerate();
    let mut none: HashMap<String, u32> = positional
        .filter(|(_, a)| matches!(a.default.as_deref(), Some(Expr::NoneLiteral(_))))
        .map(|(n, a)| (a.parameter.name.to_string(), n as u32))
        .collect();
    none.extend(
        p.kwonlyargs
            .iter()
            .filter(|a| matches!(a.default.as_deref(), Some(Expr::NoneLiteral(_))))
            .map(|a| (a.parameter.name.to_string(), KEYWORD_ONLY)),
    );
    if none.is_empty() {
        return None;
    }
    let mut bound = Bound::default();
    def.body.iter().for_each(|s| bound.visit_stmt(s));
    none.retain(|name, _| !bound.names.contains(name));
    let mut branches = Branches {
        none: &none,
        params: HashSet::default(),
        skipped: Vec::new(),
    };
    def.body.iter().for_each(|s| branches.visit_stmt(s));
    if branches.skipped.is_empty() {
        return None;
    }
    let mut params: Vec<(String, u32)> = branches
        .params
        .into_iter()
        .map(|n| (n.to_string(), none[n]))
        .collect();
    params.sort();
    Some(Guarded {
        params,
        skipped: branches.skipped,
    })
}

/// The `None`-default parameter a test requires to be passed: `P is not None`, `P`, or a
/// conjunction with one of those.
fn guard<'a>(test: &'a Expr, none: &HashMap<String, u32>) -> Option<&'a str> {
    let name = |e: &'a Expr| match e {
        Expr::Name(n) if none.contains_key(n.id.as_str()) => Some(n.id.as_str()),
        _ => None,
    };
    match test {
        Expr::Name(_) => name(test),
        Expr::Compare(c)
            if c.ops.len() == 1
                && c.ops[0] == ruff_python_ast::CmpOp::IsNot
                && matches!(c.comparators.first(), Some(Expr::NoneLiteral(_))) =>
        {
            name(&c.left)
        }
        Expr::BoolOp(b) if b.op == ruff_python_ast::BoolOp::And => {
            b.values.iter().find_map(|v| guard(v, none))
        }
        _ => None,
    }
}

/// The guarded branches of a function's own code (not of the functions and classes it
/// defines, whose parameters may share a name).
struct Branches<'n> {
    none: &'n HashMap<String, u32>,
    params: HashSet<&'n str>,
    skipped: Vec<TextRange>,
}

impl Branches<'_> {
    fn guarded(&mut self, test: &Expr, body: &[Stmt]) -> bool {
        let Some(p) = guard(test, self.none) else {
            return false;
        };
        if let Some((name, _)) = self.none.get_key_value(p) {
            self.params.insert(name.as_str());
        }
        self.skipped.extend(body.iter().map(Ranged::range));
        true
    }
}

impl<'a> Visitor<'a> for Branches<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            Stmt::If(i) => {
                if !self.guarded(&i.test, &i.body) {
                    i.body.iter().for_each(|s| self.visit_stmt(s));
                }
                for c in &i.elif_else_clauses {
                    let skipped = c.test.as_ref().is_some_and(|t| self.guarded(t, &c.body));
                    if !skipped {
                        c.body.iter().for_each(|s| self.visit_stmt(s));
                    }
                }
            }
            _ => walk_stmt(self, stmt),
        }
    }
}

/// The names a function's code binds (or declares `global`/`nonlocal`, or deletes): a
/// parameter among them may hold something else at a branch.
#[derive(Default)]
struct Bound {
    names: HashSet<String>,
}

impl<'a> Visitor<'a> for Bound {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(d) => {
                self.names.insert(d.name.to_string());
            }
            Stmt::ClassDef(c) => {
                self.names.insert(c.name.to_string());
            }
            Stmt::Global(g) => self.names.extend(g.names.iter().map(|n| n.to_string())),
            Stmt::Nonlocal(n) => self.names.extend(n.names.iter().map(|n| n.to_string())),
            Stmt::Import(i) => {
                for a in &i.names {
                    let local = a.asname.as_ref().unwrap_or(&a.name);
                    self.names
                        .insert(local.split('.').next().unwrap_or_default().to_string());
                }
            }
            Stmt::ImportFrom(i) => {
                for a in &i.names {
                    self.names
                        .insert(a.asname.as_ref().unwrap_or(&a.name).to_string());
                }
            }
            Stmt::Try(t) => {
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(n) = &h.name {
                        self.names.insert(n.to_string());
                    }
                }
            }
            // A pattern may capture any name.
            Stmt::Match(_) => {
                self.names.insert("*".to_string());
            }
            _ => {}
        }
        walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(n) = expr {
            if !n.ctx.is_load() {
                self.names.insert(n.id.to_string());
            }
        }
        walk_expr(self, expr);
    }
}

/// Rewrites `refs`, the names `code` reads as code, for the functions it only calls by name
/// with arguments it writes out (`get_model(args.width)`): each such name becomes one read per
/// call, with the number of positional arguments and the keywords (`get_model(1)`,
/// `load(0,device)`). `callable`: the names of the file's functions and of what it imports by
/// name, the only ones whose reads the index follows to a function.
pub(super) fn mark_calls(code: &[&Stmt], callable: &HashSet<&str>, refs: &mut Vec<String>) {
    // Only the names the code reads can be marked: most code reads none of them.
    if !refs.iter().any(|r| callable.contains(r.as_str())) {
        return;
    }
    let mut calls = Calls {
        callable,
        shapes: HashMap::default(),
        loads: HashMap::default(),
    };
    code.iter().for_each(|s| calls.visit_stmt(s));
    let mut added = Vec::new();
    for (name, shapes) in calls.shapes {
        if calls.loads.get(name).copied().unwrap_or(0) != shapes.len() {
            continue;
        }
        let Some(at) = refs.iter().position(|r| r == name) else {
            continue;
        };
        refs.remove(at);
        added.extend(shapes);
    }
    refs.extend(added);
    refs.sort();
    refs.dedup();
}

/// The calls of a code's callable names, with their shapes, and how often each name is read.
struct Calls<'c> {
    callable: &'c HashSet<&'c str>,
    shapes: HashMap<&'c str, Vec<String>>,
    loads: HashMap<&'c str, usize>,
}

impl<'a> Visitor<'a> for Calls<'_> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(n) if n.ctx.is_load() => {
                if let Some(&name) = self.callable.get(n.id.as_str()) {
                    *self.loads.entry(name).or_default() += 1;
                }
            }
            Expr::Call(c) => {
                let args = &c.arguments;
                let spread = args.args.iter().any(|a| matches!(a, Expr::Starred(_)))
                    || args.keywords.iter().any(|k| k.arg.is_none());
                let callee = match c.func.as_ref() {
                    Expr::Name(n) if !spread => self.callable.get(n.id.as_str()).copied(),
                    _ => None,
                };
                if let Some(name) = callee {
                    let mut keywords: Vec<&str> = args
                        .keywords
                        .iter()
                        .filter_map(|k| k.arg.as_ref().map(|a| a.as_str()))
                        .collect();
                    keywords.sort_unstable();
                    let shape = std::iter::once(args.args.len().to_string())
                        .chain(keywords.iter().map(|k| k.to_string()))
                        .collect::<Vec<_>>()
                        .join(",");
                    self.shapes
                        .entry(name)
                        .or_default()
                        .push(format!("{name}({shape})"));
                }
            }
            _ => {}
        }
        walk_expr(self, expr);
    }
}

/// A read [`mark_calls`] wrote (`get_model(1,device)`): the name called, the number of
/// positional arguments, and the keywords (comma-separated).
pub(super) fn call_shape(part: &str) -> Option<(&str, usize, &str)> {
    let (name, shape) = part.strip_suffix(')')?.split_once('(')?;
    let (count, keywords) = shape.split_once(',').unwrap_or((shape, ""));
    Some((name, count.parse().ok()?, keywords))
}

/// Whether a call of that shape passes none of `params`.
pub(super) fn omits(params: &[(Box<str>, u32)], positional: usize, keywords: &str) -> bool {
    params.iter().all(|(name, at)| {
        (*at == KEYWORD_ONLY || positional <= *at as usize)
            && !keywords.split(',').any(|k| k == &**name)
    })
}
