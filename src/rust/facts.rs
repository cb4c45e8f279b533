//! One pass over a syn AST: `use` aliases, env writes (`std::env::set_var`), device
//! constructors with literal indices, NVML indices, and the shape of `fn main`. Byte ranges
//! come from proc-macro2 spans (`span-locations`).

use std::collections::HashMap;
use std::ops::Range;

use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Expr, ExprCall, ExprLit, ExprMethodCall, ExprStruct, ItemFn, Lit, Stmt, UseTree};

use crate::policy::EnvVar;

/// GPU crates: a `use` of one of them makes a file GPU code.
pub const GPU_CRATES: &[&str] = &[
    "cudarc",
    "candle_core",
    "candle",
    "candle_nn",
    "tch",
    "burn",
    "burn_cuda",
    "burn_candle",
    "ort",
    "nvml_wrapper",
];

/// Calls whose first argument is a CUDA device index, by the end of their path.
const INDEX_CALLS: &[&str] = &[
    "CudaContext::new",
    "CudaDevice::new",
    "Device::new_cuda",
    "Device::cuda_if_available",
    "Device::Cuda",
];

#[derive(Debug, Clone)]
pub struct EnvWrite {
    pub var: EnvVar,
    pub value: Option<String>,
    pub at: Range<usize>,
    /// The statement to remove (the call, or the `unsafe { }` holding only env writes).
    pub stmt: Range<usize>,
    /// Inside `fn main`, and its index among main's statements.
    pub in_main: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct DeviceIndex {
    pub index: u64,
    /// The literal's digits (a suffix like `usize` stays).
    pub digits: Range<usize>,
    pub what: String,
}

#[derive(Debug, Clone)]
pub struct MainFn {
    pub is_async: bool,
    /// Just after the body's `{`.
    pub body_start: usize,
    pub sig: Range<usize>,
}

#[derive(Debug, Default)]
pub struct Facts {
    pub uses_gpu_crate: bool,
    pub env_writes: Vec<EnvWrite>,
    pub device_indices: Vec<DeviceIndex>,
    pub nvml_indices: Vec<(Range<usize>, u64)>,
    pub main: Option<MainFn>,
    /// End of the inner attributes and `//!` docs at the top of the file.
    pub inner_attrs_end: Option<usize>,
    /// Start of the first item.
    pub first_item: Option<usize>,
}

pub fn range(node: &impl Spanned) -> Range<usize> {
    node.span().byte_range()
}

pub fn collect(file: &syn::File) -> Facts {
    let mut aliases = HashMap::new();
    for item in &file.items {
        if let syn::Item::Use(u) = item {
            collect_use(&u.tree, String::new(), &mut aliases);
        }
    }
    let mut v = FactVisitor {
        aliases,
        facts: Facts::default(),
        main_stmt: None,
    };
    v.facts.uses_gpu_crate = v.aliases.values().any(|p| is_gpu_path(p));
    v.facts.inner_attrs_end = file.attrs.iter().map(|a| range(a).end).max();
    v.facts.first_item = file.items.first().map(|i| range(i).start);
    v.visit_file(file);
    v.facts
}

fn is_gpu_path(path: &str) -> bool {
    let first = path
        .trim_start_matches("::")
        .split("::")
        .next()
        .unwrap_or("");
    GPU_CRATES.contains(&first)
}

fn collect_use(tree: &UseTree, prefix: String, out: &mut HashMap<String, String>) {
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
            let full = if name == "self" {
                prefix.clone()
            } else {
                join(&name)
            };
            let local = if name == "self" {
                prefix.rsplit("::").next().unwrap_or("").to_string()
            } else {
                name
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

struct FactVisitor {
    aliases: HashMap<String, String>,
    facts: Facts,
    /// While visiting main's body: the index of the current top-level statement.
    main_stmt: Option<usize>,
}

impl FactVisitor {
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

    /// `std::env::set_var("CUDA_…", value)`: the variable, the literal value, the key's range.
    fn env_write_of(&self, call: &ExprCall) -> Option<(EnvVar, Option<String>, Range<usize>)> {
        let Expr::Path(func) = call.func.as_ref() else {
            return None;
        };
        let path = self.resolve(&func.path);
        if !path.ends_with("env::set_var") {
            return None;
        }
        let mut args = call.args.iter();
        let (key, value) = (args.next()?, args.next()?);
        let var = str_lit(key).and_then(|k| EnvVar::from_name(&k))?;
        Some((var, str_lit(value), range(key)))
    }

    fn env_write(&mut self, call: &ExprCall, stmt: Range<usize>) -> bool {
        let Some((var, value, at)) = self.env_write_of(call) else {
            return false;
        };
        self.facts.env_writes.push(EnvWrite {
            var,
            value,
            at,
            stmt,
            in_main: self.main_stmt,
        });
        true
    }

    fn device_call(&mut self, call: &ExprCall) {
        let Expr::Path(func) = call.func.as_ref() else {
            return;
        };
        let path = self.resolve(&func.path);
        if let Some(name) = INDEX_CALLS.iter().find(|n| path.ends_with(*n)) {
            if let Some(first) = call.args.first() {
                self.index_literal(first, format!("{name}(…)"));
            }
        }
    }

    fn method_call(&mut self, call: &ExprMethodCall) {
        let Some(first) = call.args.first() else {
            return;
        };
        match call.method.to_string().as_str() {
            "with_device_id" => self.index_literal(first, ".with_device_id(…)".into()),
            "device_by_index" => {
                if let Some((_, n)) = int_lit(first) {
                    self.facts.nvml_indices.push((range(call), n));
                }
            }
            _ => {}
        }
    }

    fn struct_literal(&mut self, lit: &ExprStruct) {
        let path = self.resolve(&lit.path);
        if !path.ends_with("CudaDevice") {
            return;
        }
        for field in &lit.fields {
            if let syn::Member::Named(name) = &field.member {
                if name == "index" {
                    self.index_literal(&field.expr, "CudaDevice { index: … }".into());
                }
            }
        }
    }

    fn index_literal(&mut self, expr: &Expr, what: String) {
        if let Some((digits, index)) = int_lit(expr) {
            if index != 0 {
                self.facts.device_indices.push(DeviceIndex {
                    index,
                    digits,
                    what,
                });
            }
        }
    }

    fn main_fn(&mut self, f: &ItemFn) {
        let body_start = f.block.brace_token.span.open().byte_range().end;
        let is_async = f.sig.asyncness.is_some();
        self.facts.main = Some(MainFn {
            is_async,
            body_start,
            sig: range(&f.sig),
        });
        for (i, stmt) in f.block.stmts.iter().enumerate() {
            self.main_stmt = Some(i);
            self.visit_stmt(stmt);
        }
        self.main_stmt = None;
    }
}

impl<'ast> Visit<'ast> for FactVisitor {
    fn visit_item_fn(&mut self, f: &'ast ItemFn) {
        if f.sig.ident == "main" && self.main_stmt.is_none() && self.facts.main.is_none() {
            self.main_fn(f);
        } else {
            let saved = self.main_stmt.take();
            visit::visit_item_fn(self, f);
            self.main_stmt = saved;
        }
    }

    fn visit_stmt(&mut self, stmt: &'ast Stmt) {
        if let Stmt::Expr(expr, semi) = stmt {
            let end = semi.map_or(range(expr).end, |s| s.span.byte_range().end);
            let whole = range(expr).start..end;
            match expr {
                Expr::Call(call) if semi.is_some() && self.env_write(call, whole.clone()) => {
                    visit::visit_expr_call(self, call);
                    return;
                }
                // A block statement: `unsafe { set_var(..); }` needs no semicolon.
                Expr::Unsafe(block) if self.unsafe_env_block(block, whole) => return,
                _ => {}
            }
        }
        visit::visit_stmt(self, stmt);
    }

    fn visit_expr_call(&mut self, call: &'ast ExprCall) {
        self.device_call(call);
        visit::visit_expr_call(self, call);
    }

    fn visit_expr_method_call(&mut self, call: &'ast ExprMethodCall) {
        self.method_call(call);
        visit::visit_expr_method_call(self, call);
    }

    fn visit_expr_struct(&mut self, lit: &'ast ExprStruct) {
        self.struct_literal(lit);
        visit::visit_expr_struct(self, lit);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.segments.len() > 1 && is_gpu_path(&self.resolve(path)) {
            self.facts.uses_gpu_crate = true;
        }
        visit::visit_path(self, path);
    }
}

impl FactVisitor {
    /// `unsafe { set_var(..); set_var(..); }` holding only env writes: one removable block.
    fn unsafe_env_block(&mut self, block: &syn::ExprUnsafe, whole: Range<usize>) -> bool {
        let calls: Vec<&ExprCall> = block
            .block
            .stmts
            .iter()
            .filter_map(|s| match s {
                Stmt::Expr(Expr::Call(call), Some(_)) => Some(call),
                _ => None,
            })
            .collect();
        let only_env = !calls.is_empty()
            && calls.len() == block.block.stmts.len()
            && calls.iter().all(|c| self.env_write_of(c).is_some());
        if only_env {
            for call in calls {
                self.env_write(call, whole.clone());
            }
        }
        only_env
    }
}

fn str_lit(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.value()),
        _ => None,
    }
}

/// The digits of an integer literal (without its suffix) and its value.
fn int_lit(expr: &Expr) -> Option<(Range<usize>, u64)> {
    let Expr::Lit(ExprLit {
        lit: Lit::Int(i), ..
    }) = expr
    else {
        return None;
    };
    let value = i.base10_parse::<u64>().ok()?;
    let r = i.span().byte_range();
    let suffix = i.suffix().len();
    Some((r.start..r.end - suffix, value))
}
