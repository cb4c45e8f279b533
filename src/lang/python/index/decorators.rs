//! What a decorator of the tree does with the function it decorates, read from its body: it
//! wraps it (returns a function of its own that calls it later: `@timed`, `@retry(3)`,
//! `@ThreadingLocked()` whose `__call__` returns one), it calls it there and then
//! (`@run_now`), or neither is known (it returns the function, stores it, hands it on): the
//! registry's rules decide those ([`super::registry`]).

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, ExprContext, Stmt, StmtClassDef, StmtFunctionDef};

/// What a decorator does with what it decorates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Decorates {
    /// Not known from its body.
    #[default]
    Unknown,
    /// Returns a wrapper: the function runs where the wrapper is called, as if undecorated.
    Wraps,
    /// Calls it while decorating: it runs at import.
    Calls,
}

/// How a top-level function or class treats a function it decorates, written bare (`@d`) and
/// called (`@d(…)`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct AsDecorator {
    pub bare: Decorates,
    pub called: Decorates,
}

impl AsDecorator {
    pub(super) fn get(self, called: bool) -> Decorates {
        if called {
            self.called
        } else {
            self.bare
        }
    }
}

/// What the top-level `stmt` does as a decorator: a function receives what it decorates (bare)
/// or returns what does (called); an instance of a class receives it in `__call__` (a class
/// written bare makes an instance of it, which may keep it anywhere: not known).
pub(super) fn of(stmt: &Stmt) -> AsDecorator {
    match stmt {
        Stmt::FunctionDef(d) if d.decorator_list.is_empty() => AsDecorator {
            bare: receiving(d, 0),
            called: returned(d),
        },
        Stmt::ClassDef(c) => AsDecorator {
            bare: Decorates::Unknown,
            called: call_method(c).map_or(Decorates::Unknown, |m| receiving(m, 1)),
        },
        _ => AsDecorator::default(),
    }
}

/// The class's own undecorated `__call__`.
fn call_method(c: &StmtClassDef) -> Option<&StmtFunctionDef> {
    c.body.iter().find_map(|s| match s {
        Stmt::FunctionDef(d) if d.name.as_str() == "__call__" && d.decorator_list.is_empty() => {
            Some(d)
        }
        _ => None,
    })
}

/// What `def`'s result, called with the decorated function, does with it: every `return`
/// hands back a function `def` defines, and each of those receives it.
fn returned(def: &StmtFunctionDef) -> Decorates {
    let nested = nested_defs(def);
    let mut found = Vec::new();
    let mut other = false;
    for_each_return(&def.body, &mut |value| match value {
        Some(Expr::Name(n)) => match nested.iter().find(|d| d.name.as_str() == n.id.as_str()) {
            Some(d) => found.push(*d),
            None => other = true,
        },
        _ => other = true,
    });
    if other || found.is_empty() {
        return Decorates::Unknown;
    }
    let each: Vec<Decorates> = found.into_iter().map(|d| receiving(d, 0)).collect();
    if each.contains(&Decorates::Calls) {
        Decorates::Calls
    } else if each.iter().all(|d| *d == Decorates::Wraps) {
        Decorates::Wraps
    } else {
        Decorates::Unknown
    }
}

/// What `def` does with its positional parameter `at`, the decorated function: calls it (or a
/// function it defines) in its own code; wraps it when every `return` hands back a function it
/// defines (or a lambda) and its own code uses the parameter only for `functools.wraps` and
/// its dunder attributes (`f.__name__`); else not known (stored, returned, handed on).
fn receiving(def: &StmtFunctionDef, at: usize) -> Decorates {
    let p = &def.parameters;
    let Some(param) = p.posonlyargs.iter().chain(&p.args).nth(at) else {
        return Decorates::Unknown;
    };
    if !def.decorator_list.is_empty() {
        return Decorates::Unknown;
    }
    let nested: Vec<&str> = nested_defs(def).iter().map(|d| d.name.as_str()).collect();
    let mut own = OwnCode {
        param: param.parameter.name.as_str(),
        nested: &nested,
        calls: false,
        other: false,
        returns: 0,
        returns_wrapper: true,
    };
    def.body.iter().for_each(|s| own.visit_stmt(s));
    if own.calls {
        Decorates::Calls
    } else if !own.other && own.returns > 0 && own.returns_wrapper {
        Decorates::Wraps
    } else {
        Decorates::Unknown
    }
}

/// The functions `def` defines in its own body (not in its nested functions).
fn nested_defs(def: &StmtFunctionDef) -> Vec<&StmtFunctionDef> {
    let mut out = Vec::new();
    fn collect<'a>(body: &'a [Stmt], out: &mut Vec<&'a StmtFunctionDef>) {
        for s in body {
            match s {
                Stmt::FunctionDef(d) => out.push(d),
                Stmt::ClassDef(_) => {}
                Stmt::If(i) => {
                    collect(&i.body, out);
                    i.elif_else_clauses
                        .iter()
                        .for_each(|c| collect(&c.body, out));
                }
                Stmt::Try(t) => {
                    collect(&t.body, out);
                    collect(&t.orelse, out);
                    collect(&t.finalbody, out);
                }
                Stmt::With(w) => collect(&w.body, out),
                _ => {}
            }
        }
    }
    collect(&def.body, &mut out);
    out
}

/// Each `return` of a function's own code (not of the functions it defines), with its value.
fn for_each_return<'a>(body: &'a [Stmt], f: &mut dyn FnMut(Option<&'a Expr>)) {
    struct Returns<'f, 'a> {
        f: &'f mut dyn FnMut(Option<&'a Expr>),
    }
    impl<'a> Visitor<'a> for Returns<'_, 'a> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                Stmt::Return(r) => (self.f)(r.value.as_deref()),
                _ => walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, _: &'a Expr) {}
    }
    let mut returns = Returns { f };
    body.iter().for_each(|s| returns.visit_stmt(s));
}

/// A decorator's own code (what runs while it decorates), as it uses the decorated function
/// `param` and the functions it defines (`nested`), which run only when called.
struct OwnCode<'n> {
    param: &'n str,
    nested: &'n [&'n str],
    calls: bool,
    other: bool,
    returns: usize,
    returns_wrapper: bool,
}

impl OwnCode<'_> {
    /// The decorated function, or a function defined here (which may call it).
    fn is_held(&self, e: &Expr) -> bool {
        matches!(e, Expr::Name(n) if n.id.as_str() == self.param || self.nested.contains(&n.id.as_str()))
    }
}

impl<'a> Visitor<'a> for OwnCode<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            // Its decorators (`@functools.wraps(f)`) and defaults run now, its body later.
            Stmt::FunctionDef(d) => {
                d.decorator_list
                    .iter()
                    .for_each(|dec| self.visit_expr(&dec.expression));
                let p = &d.parameters;
                let params = p.posonlyargs.iter().chain(&p.args).chain(&p.kwonlyargs);
                params
                    .filter_map(|a| a.default.as_deref())
                    .for_each(|e| self.visit_expr(e));
            }
            Stmt::Return(r) => {
                self.returns += 1;
                match r.value.as_deref() {
                    Some(v @ Expr::Name(n)) if n.id.as_str() != self.param && self.is_held(v) => {}
                    Some(Expr::Lambda(_)) => {}
                    value => {
                        self.returns_wrapper = false;
                        value.into_iter().for_each(|v| self.visit_expr(v));
                    }
                }
            }
            _ => walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Call(c) => {
                let callee = c.func.as_ref();
                let on_held = matches!(callee, Expr::Attribute(a) if self.is_held(&a.value));
                if self.is_held(callee) || on_held {
                    self.calls = true;
                    return;
                }
                let name = match callee {
                    Expr::Name(n) => n.id.as_str(),
                    Expr::Attribute(a) => a.attr.as_str(),
                    _ => "",
                };
                // `functools.wraps(f)`, `update_wrapper(wrapper, f)`: copies its name, keeps
                // nothing.
                if matches!(name, "wraps" | "update_wrapper") {
                    let args = c.arguments.args.iter();
                    let values = args.chain(c.arguments.keywords.iter().map(|k| &k.value));
                    for a in values {
                        if !self.is_held(a) {
                            self.visit_expr(a);
                        }
                    }
                    return;
                }
                walk_expr(self, expr);
            }
            // `f.__name__`; `wrapper.calls = 0`.
            Expr::Attribute(a) if self.is_held(&a.value) => {
                let dunder = a.attr.as_str().starts_with("__") && a.attr.as_str().ends_with("__");
                if !(dunder || matches!(a.ctx, ExprContext::Store)) {
                    self.other = true;
                }
            }
            _ if self.is_held(expr) => self.other = true,
            _ => walk_expr(self, expr),
        }
    }
}
