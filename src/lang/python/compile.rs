//! What CPython refuses at compile time though the file parses: a late `from __future__`,
//! `return` or `yield` outside a function, `break` outside a loop, duplicate parameters, …
//! ruff's semantic syntax checker finds them; this module walks the tree with the scope
//! information it asks for. Only errors that do not depend on a guess about scopes are kept.

use std::cell::RefCell;

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, PythonVersion, Stmt};
use ruff_python_parser::semantic_errors::{
    LazyImportContext, SemanticSyntaxChecker, SemanticSyntaxContext, SemanticSyntaxError,
    SemanticSyntaxErrorKind as Kind,
};
use ruff_text_size::TextRange;

/// The first error CPython would raise compiling `body`, with its offset.
pub fn first_error(source: &str, body: &[Stmt]) -> Option<(usize, String)> {
    let mut walker = Walker {
        checker: SemanticSyntaxChecker::new(),
        ctx: Scopes {
            source,
            stack: vec![Scope::Module],
            module_loops: 0,
            errors: RefCell::new(Vec::new()),
        },
    };
    for stmt in body {
        walker.visit_stmt(stmt);
    }
    let errors = walker.ctx.errors.into_inner();
    errors
        .into_iter()
        .filter(|e| certain(&e.kind))
        .min_by_key(|e| e.range.start())
        .map(|e| (e.range.start().to_usize(), e.to_string()))
}

/// Kinds that hold whatever the scopes' details: the rest need name resolution we do not do.
fn certain(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::LateFutureImport
            | Kind::FutureFeatureNotDefined(_)
            | Kind::ReturnOutsideFunction
            | Kind::YieldOutsideFunction(_)
            | Kind::AwaitOutsideAsyncFunction(_)
            | Kind::BreakOutsideLoop
            | Kind::ContinueOutsideLoop
            | Kind::DuplicateParameter(_)
            | Kind::DuplicateKeywordArgument(_)
            | Kind::NonlocalDeclarationAtModuleLevel
            | Kind::YieldFromInAsyncFunction
            | Kind::NonModuleImportStar(_)
            | Kind::MultipleStarredExpressions
            | Kind::IrrefutableCasePattern(_)
            | Kind::MultipleCaseAssignment(_)
            | Kind::DuplicateMatchKey(_)
    )
}

#[derive(Debug, Clone, PartialEq)]
enum Scope {
    Module,
    Class,
    Function {
        is_async: bool,
        params: Vec<String>,
        loops: usize,
    },
    Lambda {
        params: Vec<String>,
    },
    Comprehension {
        is_async: bool,
    },
    Generator,
}

struct Scopes<'s> {
    source: &'s str,
    stack: Vec<Scope>,
    /// Loops around the current point outside any function.
    module_loops: usize,
    errors: RefCell<Vec<SemanticSyntaxError>>,
}

impl Scopes<'_> {
    /// The nearest scope that is not a comprehension or generator.
    fn enclosing(&self) -> &Scope {
        self.stack
            .iter()
            .rev()
            .find(|s| !matches!(s, Scope::Comprehension { .. } | Scope::Generator))
            .unwrap_or(&Scope::Module)
    }
}

impl SemanticSyntaxContext for Scopes<'_> {
    fn future_annotations_or_stub(&self) -> bool {
        false
    }
    fn lazy_import_context(&self) -> Option<LazyImportContext> {
        None
    }
    fn python_version(&self) -> PythonVersion {
        PythonVersion::PY314
    }
    fn source(&self) -> &str {
        self.source
    }
    fn global(&self, _name: &str) -> Option<TextRange> {
        None
    }
    fn has_nonlocal_binding(&self, _name: &str) -> bool {
        true
    }
    fn in_async_context(&self) -> bool {
        self.stack.iter().rev().find_map(|s| match s {
            Scope::Function { is_async, .. } => Some(*is_async),
            Scope::Lambda { .. } | Scope::Class | Scope::Module => Some(false),
            _ => None,
        }) == Some(true)
    }
    fn in_await_allowed_context(&self) -> bool {
        matches!(
            self.enclosing(),
            Scope::Function { .. } | Scope::Lambda { .. }
        )
    }
    fn in_yield_allowed_context(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Scope::Function { .. } | Scope::Lambda { .. })
        )
    }
    fn in_sync_comprehension(&self) -> bool {
        self.stack
            .iter()
            .any(|s| matches!(s, Scope::Comprehension { is_async: false }))
    }
    fn in_class_body_comprehension(&self) -> bool {
        let mut saw_comprehension = false;
        for s in self.stack.iter().rev() {
            match s {
                Scope::Comprehension { .. } | Scope::Generator => saw_comprehension = true,
                Scope::Class => return saw_comprehension,
                _ => return false,
            }
        }
        false
    }
    fn in_module_scope(&self) -> bool {
        matches!(self.stack.last(), Some(Scope::Module))
    }
    fn in_function_scope(&self) -> bool {
        matches!(self.stack.last(), Some(Scope::Function { .. }))
    }
    fn in_generator_context(&self) -> bool {
        matches!(self.stack.last(), Some(Scope::Generator))
    }
    fn in_notebook(&self) -> bool {
        false
    }
    fn report_semantic_error(&self, error: SemanticSyntaxError) {
        self.errors.borrow_mut().push(error);
    }
    fn in_loop_context(&self) -> bool {
        match self.stack.last() {
            Some(Scope::Function { loops, .. }) => *loops > 0,
            Some(Scope::Module) | Some(Scope::Class) => self.module_loops > 0,
            _ => false,
        }
    }
    fn is_bound_parameter(&self, name: &str) -> bool {
        match self.enclosing() {
            Scope::Function { params, .. } | Scope::Lambda { params } => {
                params.iter().any(|p| p == name)
            }
            _ => false,
        }
    }
}

struct Walker<'s> {
    checker: SemanticSyntaxChecker,
    ctx: Scopes<'s>,
}

impl Walker<'_> {
    /// Enter (+1) or leave (-1) a loop, in the innermost function or at module level.
    fn loops(&mut self, delta: isize) {
        match self.ctx.stack.last_mut() {
            Some(Scope::Function { loops, .. }) => *loops = loops.saturating_add_signed(delta),
            _ => self.ctx.module_loops = self.ctx.module_loops.saturating_add_signed(delta),
        }
    }

    /// A loop body: `break` and `continue` are allowed in it, not in its `else`.
    fn loop_body(&mut self, body: &[Stmt]) {
        self.loops(1);
        for s in body {
            self.visit_stmt(s);
        }
        self.loops(-1);
    }
}

impl<'a> Visitor<'a> for Walker<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        self.checker.visit_stmt(stmt, &self.ctx);
        match stmt {
            Stmt::FunctionDef(def) => {
                for d in &def.decorator_list {
                    self.visit_expr(&d.expression);
                }
                for p in def.parameters.iter() {
                    if let Some(default) = p.default() {
                        self.visit_expr(default);
                    }
                }
                let params = def
                    .parameters
                    .iter()
                    .map(|p| p.name().as_str().to_string())
                    .collect();
                self.ctx.stack.push(Scope::Function {
                    is_async: def.is_async,
                    params,
                    loops: 0,
                });
                for s in &def.body {
                    self.visit_stmt(s);
                }
                self.ctx.stack.pop();
            }
            Stmt::ClassDef(class) => {
                for d in &class.decorator_list {
                    self.visit_expr(&d.expression);
                }
                if let Some(args) = &class.arguments {
                    for a in args.args.iter() {
                        self.visit_expr(a);
                    }
                }
                self.ctx.stack.push(Scope::Class);
                for s in &class.body {
                    self.visit_stmt(s);
                }
                self.ctx.stack.pop();
            }
            Stmt::For(f) => {
                self.visit_expr(&f.target);
                self.visit_expr(&f.iter);
                self.loop_body(&f.body);
                for s in &f.orelse {
                    self.visit_stmt(s);
                }
            }
            Stmt::While(w) => {
                self.visit_expr(&w.test);
                self.loop_body(&w.body);
                for s in &w.orelse {
                    self.visit_stmt(s);
                }
            }
            _ => walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        self.checker.visit_expr(expr, &self.ctx);
        let scope = match expr {
            Expr::Lambda(l) => Some(Scope::Lambda {
                params: l
                    .parameters
                    .iter()
                    .flat_map(|p| p.iter())
                    .map(|p| p.name().as_str().to_string())
                    .collect(),
            }),
            Expr::ListComp(c) => Some(Scope::Comprehension {
                is_async: c.generators.iter().any(|g| g.is_async),
            }),
            Expr::SetComp(c) => Some(Scope::Comprehension {
                is_async: c.generators.iter().any(|g| g.is_async),
            }),
            Expr::DictComp(c) => Some(Scope::Comprehension {
                is_async: c.generators.iter().any(|g| g.is_async),
            }),
            Expr::Generator(_) => Some(Scope::Generator),
            _ => None,
        };
        let (elts, generators): (Vec<&'a Expr>, &'a [ruff_python_ast::Comprehension]) = match expr {
            Expr::ListComp(c) => (vec![&c.elt], &c.generators),
            Expr::SetComp(c) => (vec![&c.elt], &c.generators),
            Expr::Generator(c) => (vec![&c.elt], &c.generators),
            Expr::DictComp(c) => (
                c.key.iter().map(|k| &**k).chain([&*c.value]).collect(),
                &c.generators,
            ),
            _ => (Vec::new(), &[]),
        };
        match scope {
            // The first iterable of a comprehension is evaluated in the enclosing scope.
            Some(scope) if !generators.is_empty() => {
                self.visit_expr(&generators[0].iter);
                self.ctx.stack.push(scope);
                for (i, g) in generators.iter().enumerate() {
                    self.visit_expr(&g.target);
                    if i > 0 {
                        self.visit_expr(&g.iter);
                    }
                    for cond in &g.ifs {
                        self.visit_expr(cond);
                    }
                }
                for e in elts {
                    self.visit_expr(e);
                }
                self.ctx.stack.pop();
            }
            Some(scope) => {
                self.ctx.stack.push(scope);
                walk_expr(self, expr);
                self.ctx.stack.pop();
            }
            None => walk_expr(self, expr),
        }
    }
}
