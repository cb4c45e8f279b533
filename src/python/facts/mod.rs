//! One pass over the AST that records every GPU-relevant fact of a file: env writes, GPU
//! imports, device indices, multi-GPU assumptions, and the shape of the module (docstring,
//! `from __future__`, main block). Rules (detect.rs) and the fix planner (fix.rs) read these.

mod devices;
mod env;

use std::ops::Range;

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

use super::semantic::{is_gpu_module, Bindings};
use crate::edit::Edit;
use crate::policy::{EnvVar, Policy};
use crate::removal::removal_edit;
use devices::INDEX_NAMES;

/// One write of a managed env variable.
#[derive(Debug, Clone)]
pub struct EnvWrite {
    pub var: EnvVar,
    /// The literal value written, when it is a literal.
    pub value: Option<String>,
    /// Where to point the user (the key).
    pub at: Range<usize>,
    pub stmt: Range<usize>,
    /// Not inside a function (class bodies and module-level `if`/`try` run at import).
    pub module_level: bool,
    /// Edits that remove this write; `None` when it cannot be removed safely
    /// (several statements on one line, a write inside an expression, …).
    pub removal: Option<Vec<Edit>>,
}

#[derive(Debug, Clone)]
pub struct GpuImport {
    pub module: String,
    pub range: Range<usize>,
    pub lazy: bool,
}

/// A literal device index that does not exist once the mask is applied.
#[derive(Debug, Clone)]
pub struct DeviceIndex {
    pub kind: DeviceIndexKind,
    pub index: u64,
    /// The bytes to replace with the masked index (the digits of a string, or an int literal).
    pub digits: Option<Range<usize>>,
    pub at: Range<usize>,
    pub what: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceIndexKind {
    String,
    Call,
    Keyword,
    Map,
}

#[derive(Debug, Clone)]
pub struct MainBlock {
    /// Start of the `if __name__ == "__main__":` line.
    pub if_start: usize,
    /// Start of the first statement of its body, and the indentation before it.
    pub first_stmt: Option<(usize, String)>,
    pub calls: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopKind {
    Docstring,
    Future,
    ImportOs,
    Other,
}

#[derive(Debug, Default)]
pub struct Facts {
    pub env_writes: Vec<EnvWrite>,
    pub gpu_imports: Vec<GpuImport>,
    pub device_indices: Vec<DeviceIndex>,
    pub multi_gpu: Vec<(Range<usize>, String)>,
    pub docstring: Option<Range<usize>>,
    pub docstring_text: Option<String>,
    /// Module-level statements in order, with their kind.
    pub top: Vec<(Range<usize>, TopKind)>,
    /// `import os` statements alone on their line at module level, with the line's range.
    pub plain_import_os: Vec<Range<usize>>,
    pub main_block: Option<MainBlock>,
    pub defined_functions: Vec<String>,
    pub uses_torch: bool,
}

impl Facts {
    pub fn first_top_level_gpu_import(&self) -> Option<usize> {
        self.gpu_imports
            .iter()
            .filter(|i| !i.lazy)
            .map(|i| i.range.start)
            .min()
    }
}

pub fn collect(
    source: &str,
    body: &[Stmt],
    policy: &Policy,
    header: Option<Range<usize>>,
) -> Facts {
    let bindings = Bindings::collect(body);
    let mut visitor = FactVisitor {
        source,
        policy,
        bindings,
        header,
        facts: Facts::default(),
        function_depth: 0,
        bodies: Vec::new(),
    };
    visitor.module(body);
    visitor.facts
}

struct FactVisitor<'s> {
    source: &'s str,
    policy: &'s Policy,
    bindings: Bindings,
    header: Option<Range<usize>>,
    facts: Facts,
    function_depth: usize,
    /// Statements planned for removal in each enclosing body, to leave `pass` when a body empties.
    bodies: Vec<usize>,
}

impl FactVisitor<'_> {
    fn module(&mut self, body: &[Stmt]) {
        self.top_level_shape(body);
        self.visit_body(body);
    }

    fn top_level_shape(&mut self, body: &[Stmt]) {
        for (i, stmt) in body.iter().enumerate() {
            let kind = match stmt {
                Stmt::Expr(e) if i == 0 && matches!(e.value.as_ref(), Expr::StringLiteral(_)) => {
                    if let Expr::StringLiteral(s) = e.value.as_ref() {
                        self.facts.docstring = Some(range(stmt));
                        self.facts.docstring_text = Some(s.value.to_str().to_string());
                    }
                    TopKind::Docstring
                }
                Stmt::ImportFrom(f)
                    if f.module
                        .as_ref()
                        .is_some_and(|m| m.as_str() == "__future__") =>
                {
                    TopKind::Future
                }
                Stmt::Import(imp)
                    if imp.names.len() == 1
                        && imp.names[0].name.as_str() == "os"
                        && imp.names[0].asname.is_none() =>
                {
                    if let Some(Edit { range, .. }) = removal_edit(self.source, range(stmt), false)
                    {
                        self.facts.plain_import_os.push(range);
                    }
                    TopKind::ImportOs
                }
                Stmt::If(if_stmt) if is_main_test(&if_stmt.test) => {
                    self.main_block(stmt, &if_stmt.body);
                    TopKind::Other
                }
                Stmt::FunctionDef(def) => {
                    self.facts
                        .defined_functions
                        .push(def.name.as_str().to_string());
                    TopKind::Other
                }
                _ => TopKind::Other,
            };
            self.facts.top.push((range(stmt), kind));
        }
    }

    fn main_block(&mut self, stmt: &Stmt, body: &[Stmt]) {
        let if_start = line_start(self.source, range(stmt).start);
        let first_stmt = body.first().and_then(|first| {
            let start = range(first).start;
            let ls = line_start(self.source, start);
            let indent = &self.source[ls..start];
            indent
                .chars()
                .all(|c| c == ' ' || c == '\t')
                .then(|| (ls, indent.to_string()))
        });
        let calls = body
            .iter()
            .filter_map(|s| match s {
                Stmt::Expr(e) => match e.value.as_ref() {
                    Expr::Call(call) => match call.func.as_ref() {
                        Expr::Name(n) => Some(n.id.as_str().to_string()),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            })
            .collect();
        self.facts.main_block = Some(MainBlock {
            if_start,
            first_stmt,
            calls,
        });
    }

    fn in_header(&self, r: &Range<usize>) -> bool {
        self.header
            .as_ref()
            .is_some_and(|h| h.start <= r.start && r.end <= h.end)
    }

    /// The env writes a statement makes, with the edits that would remove each.
    fn gpu_import(&mut self, stmt: &Stmt) {
        let modules: Vec<String> = match stmt {
            Stmt::Import(imp) => imp
                .names
                .iter()
                .map(|a| a.name.as_str().to_string())
                .collect(),
            Stmt::ImportFrom(from) if from.level == 0 => {
                from.module.iter().map(|m| m.as_str().to_string()).collect()
            }
            _ => return,
        };
        for module in modules {
            if module.split('.').next() == Some("torch") {
                self.facts.uses_torch = true;
            }
            if is_gpu_module(&module) {
                self.facts.gpu_imports.push(GpuImport {
                    module,
                    range: range(stmt),
                    lazy: self.function_depth > 0,
                });
            }
        }
    }
}

impl<'a> Visitor<'a> for FactVisitor<'_> {
    fn visit_body(&mut self, body: &'a [Stmt]) {
        self.record_env_writes(body);
        self.bodies.push(0);
        for stmt in body {
            self.visit_stmt(stmt);
        }
        self.bodies.pop();
    }

    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        self.gpu_import(stmt);
        self.assignment(stmt);
        match stmt {
            // A bare string statement (docstring) is prose, never a device selection.
            Stmt::Expr(e) if matches!(e.value.as_ref(), Expr::StringLiteral(_)) => {}
            Stmt::FunctionDef(def) => {
                for p in def.parameters.iter_non_variadic_params() {
                    let name = p.parameter.name.as_str();
                    if let (true, Some(default)) =
                        (INDEX_NAMES.contains(&name), p.default.as_deref())
                    {
                        self.device_index(
                            DeviceIndexKind::Keyword,
                            default,
                            format!("parameter {name}=…"),
                        );
                    }
                }
                self.function_depth += 1;
                walk_stmt(self, stmt);
                self.function_depth -= 1;
            }
            _ => walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::StringLiteral(_) => self.string_literal(expr),
            Expr::Call(call) => self.call(call),
            Expr::Compare(_) => self.compare(expr),
            Expr::Dict(_) => self.dict_items(expr),
            Expr::Lambda(_) => {
                self.function_depth += 1;
                walk_expr(self, expr);
                self.function_depth -= 1;
                return;
            }
            _ => {}
        }
        walk_expr(self, expr);
    }
}

fn is_whole_stmt(edits: &[Edit], stmt: &Stmt) -> bool {
    edits
        .iter()
        .any(|e| e.range.start <= range(stmt).start && range(stmt).end <= e.range.end)
}

pub fn range(node: &impl Ranged) -> Range<usize> {
    let r = node.range();
    r.start().to_usize()..r.end().to_usize()
}

pub fn line_start(source: &str, offset: usize) -> usize {
    source[..offset].rfind('\n').map_or(0, |i| i + 1)
}

fn is_main_test(test: &Expr) -> bool {
    let Expr::Compare(cmp) = test else {
        return false;
    };
    if cmp.comparators.len() != 1 {
        return false;
    }
    let sides = [&*cmp.left, &cmp.comparators[0]];
    let has_name = sides
        .iter()
        .any(|e| matches!(e, Expr::Name(n) if n.id.as_str() == "__name__"));
    let has_main = sides
        .iter()
        .any(|e| matches!(e, Expr::StringLiteral(s) if s.value.to_str() == "__main__"));
    has_name && has_main
}
