//! One pass over the AST that records every GPU-relevant fact of a file: env writes, GPU
//! imports, device indices, multi-GPU assumptions, and the shape of the module (docstring,
//! `from __future__`, main block). Rules (detect.rs) and the fix planner (fix.rs) read these.

use std::ops::Range;

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, ExprCall, Number, Stmt};
use ruff_text_size::Ranged;

use super::removal::{delete_items, removal_edit};
use super::semantic::{is_gpu_module, Bindings};
use crate::edit::Edit;
use crate::policy::{EnvVar, Policy};

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

/// Index names that select a CUDA device when given an integer.
const INDEX_NAMES: &[&str] = &[
    "device_index",
    "device_id",
    "gpu_id",
    "gpu_index",
    "main_gpu",
    "cuda_device",
    "gpu_device",
    "cuda_device_id",
    "gpu_device_id",
];

/// Functions whose first argument is a CUDA device index.
const INDEX_FUNCTIONS: &[&str] = &[
    "torch.cuda.set_device",
    "torch.cuda.device",
    "torch.cuda.get_device_name",
    "torch.cuda.get_device_properties",
    "torch.cuda.get_device_capability",
    "torch.cuda.memory_allocated",
    "torch.cuda.memory_reserved",
    "torch.cuda.max_memory_allocated",
    "torch.cuda.max_memory_reserved",
    "torch.cuda.mem_get_info",
    "torch.cuda.memory_stats",
    "torch.cuda.reset_peak_memory_stats",
    "torch.cuda.synchronize",
    "cupy.cuda.Device",
    "cupy.cuda.runtime.setDevice",
    "numba.cuda.select_device",
];

const DEVICE_COUNT_FUNCTIONS: &[&str] = &[
    "torch.cuda.device_count",
    "cupy.cuda.runtime.getDeviceCount",
    "numba.cuda.gpus.__len__",
];

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
    fn env_writes_of(&self, stmt: &Stmt, only_in_body: bool) -> Vec<EnvWrite> {
        let module_level = self.function_depth == 0;
        let srange = range(stmt);
        let whole = || removal_edit(self.source, srange.clone(), only_in_body).map(|e| vec![e]);
        let write = |var, value: Option<String>, at: Range<usize>, removal| EnvWrite {
            var,
            value,
            at,
            stmt: srange.clone(),
            module_level,
            removal,
        };
        match stmt {
            Stmt::Assign(assign) => {
                let [Expr::Subscript(sub)] = assign.targets.as_slice() else {
                    return Vec::new();
                };
                if !self.is_environ(&sub.value) {
                    return Vec::new();
                }
                let Some(var) = managed_key(&sub.slice) else {
                    return Vec::new();
                };
                vec![write(var, str_value(&assign.value), range(sub), whole())]
            }
            Stmt::Expr(e) => match e.value.as_ref() {
                Expr::Call(call) => self.env_call_writes(call, &srange, module_level, whole),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    fn env_call_writes(
        &self,
        call: &ExprCall,
        srange: &Range<usize>,
        module_level: bool,
        whole: impl Fn() -> Option<Vec<Edit>>,
    ) -> Vec<EnvWrite> {
        let Some(name) = self.bindings.qualified(&call.func) else {
            return Vec::new();
        };
        let mk = |var, value, at, removal| EnvWrite {
            var,
            value,
            at,
            stmt: srange.clone(),
            module_level,
            removal,
        };
        match name.as_str() {
            "os.environ.setdefault" | "os.putenv" => {
                let args = &call.arguments.args;
                match (args.first().and_then(managed_key), args.get(1)) {
                    (Some(var), Some(value)) => {
                        vec![mk(var, str_value(value), range(&args[0]), whole())]
                    }
                    _ => Vec::new(),
                }
            }
            "os.environ.update" => self.env_update_writes(call, mk, whole),
            _ => Vec::new(),
        }
    }

    /// `os.environ.update({...})` or `update(K=V)`: each managed item is a write; the
    /// statement goes when every item is managed, otherwise only the managed items go.
    fn env_update_writes(
        &self,
        call: &ExprCall,
        mk: impl Fn(EnvVar, Option<String>, Range<usize>, Option<Vec<Edit>>) -> EnvWrite,
        whole: impl Fn() -> Option<Vec<Edit>>,
    ) -> Vec<EnvWrite> {
        // (item range, managed var, value)
        let mut items: Vec<(Range<usize>, Option<EnvVar>, Option<String>)> = Vec::new();
        if let Some(Expr::Dict(dict)) = call.arguments.args.first() {
            for item in &dict.items {
                let var = item.key.as_ref().and_then(managed_key);
                let start = item
                    .key
                    .as_ref()
                    .map_or(range(&item.value).start, |k| range(k).start);
                items.push((start..range(&item.value).end, var, str_value(&item.value)));
            }
        }
        for kw in &call.arguments.keywords {
            let var = kw.arg.as_ref().and_then(|a| EnvVar::from_name(a.as_str()));
            items.push((range(kw), var, str_value(&kw.value)));
        }
        if items.iter().all(|(_, var, _)| var.is_none()) {
            return Vec::new();
        }
        let all_managed = items.iter().all(|(_, var, _)| var.is_some());
        let removal = if all_managed {
            whole()
        } else {
            let spans: Vec<_> = items
                .iter()
                .map(|(r, v, _)| (r.clone(), v.is_some()))
                .collect();
            Some(delete_items(&spans))
        };
        // Every managed item carries the statement's removal edits; the planner dedups them.
        items
            .iter()
            .filter_map(|(r, var, value)| {
                Some(mk((*var)?, value.clone(), r.clone(), removal.clone()))
            })
            .collect()
    }

    fn is_environ(&self, expr: &Expr) -> bool {
        self.bindings.qualified(expr).as_deref() == Some("os.environ")
    }

    fn record_env_writes(&mut self, body: &[Stmt]) {
        let nested = !self.bodies.is_empty();
        let per_stmt: Vec<Vec<EnvWrite>> =
            body.iter().map(|s| self.env_writes_of(s, false)).collect();
        let gone: Vec<bool> = per_stmt
            .iter()
            .zip(body)
            .map(|(writes, stmt)| {
                writes.iter().any(|w| {
                    self.will_remove(w)
                        && w.removal.as_ref().is_some_and(|r| is_whole_stmt(r, stmt))
                })
            })
            .collect();
        let empties = nested && gone.iter().all(|g| *g);
        let last_gone = gone.iter().rposition(|g| *g);
        for (i, writes) in per_stmt.into_iter().enumerate() {
            let writes = if empties && Some(i) == last_gone {
                // Removing every statement of a block would empty it: the last one becomes `pass`.
                self.env_writes_of(&body[i], true)
            } else {
                writes
            };
            self.facts.env_writes.extend(writes);
        }
    }

    /// Whether the fix planner will remove this write (mirrors fix.rs; used to keep blocks non-empty).
    fn will_remove(&self, w: &EnvWrite) -> bool {
        if self.in_header(&w.stmt) {
            return false;
        }
        w.module_level || w.value.as_deref() != self.policy.env_value(w.var)
    }

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

    fn device_index(&mut self, kind: DeviceIndexKind, expr: &Expr, what: String) {
        if let Some(index) = int_literal(expr) {
            if index != self.policy.masked_index() {
                self.facts.device_indices.push(DeviceIndex {
                    kind,
                    index,
                    digits: Some(range(expr)),
                    at: range(expr),
                    what,
                });
            }
        }
    }

    fn string_literal(&mut self, expr: &Expr) {
        let Expr::StringLiteral(lit) = expr else {
            return;
        };
        if lit.value.is_implicit_concatenated() {
            return;
        }
        let value = lit.value.to_str();
        let Some((prefix, index)) = device_string(value) else {
            return;
        };
        if index == self.policy.masked_index() {
            return;
        }
        let r = range(expr);
        let text = &self.source[r.clone()];
        let needle = value;
        let digits = match (text.find(needle), text.matches(needle).count()) {
            (Some(at), 1) => {
                let start = r.start + at + prefix.len();
                Some(start..r.start + at + needle.len())
            }
            _ => None,
        };
        self.facts.device_indices.push(DeviceIndex {
            kind: DeviceIndexKind::String,
            index,
            digits,
            at: r,
            what: format!("\"{value}\""),
        });
    }

    fn call(&mut self, call: &ExprCall) {
        let name = self.bindings.qualified(&call.func);
        let name = name.as_deref().unwrap_or("");
        let args = &call.arguments.args;
        if INDEX_FUNCTIONS.contains(&name) {
            if let Some(first) = args.first() {
                self.device_index(DeviceIndexKind::Call, first, format!("{name}(…)"));
            }
        } else if name == "torch.device" {
            if let (Some(Expr::StringLiteral(kind)), Some(index)) = (args.first(), args.get(1)) {
                if kind.value.to_str() == "cuda" {
                    self.device_index(
                        DeviceIndexKind::Call,
                        index,
                        "torch.device(\"cuda\", …)".into(),
                    );
                }
            }
            for kw in &call.arguments.keywords {
                if kw.arg.as_ref().is_some_and(|a| a.as_str() == "index") {
                    self.device_index(
                        DeviceIndexKind::Call,
                        &kw.value,
                        "torch.device(index=…)".into(),
                    );
                }
            }
        } else if let Expr::Attribute(attr) = call.func.as_ref() {
            self.method_call(call, attr.attr.as_str());
        }
        if name == "range" || name == "builtins.range" {
            if let Some(Expr::Call(inner)) = args.first() {
                if self.is_device_count(inner) {
                    self.facts.multi_gpu.push((
                        range(call),
                        "iterates over every visible GPU by position".into(),
                    ));
                }
            }
        }
        let gpu_api = is_gpu_module(name) || name.ends_with("pipeline");
        for kw in &call.arguments.keywords {
            let Some(arg) = kw.arg.as_ref().map(|a| a.as_str()) else {
                continue;
            };
            if INDEX_NAMES.contains(&arg) || (arg == "device" && gpu_api) {
                self.device_index(DeviceIndexKind::Keyword, &kw.value, format!("{arg}=…"));
            }
        }
    }

    fn method_call(&mut self, call: &ExprCall, method: &str) {
        let args = &call.arguments.args;
        match method {
            "cuda" => {
                if let Some(first) = args.first() {
                    self.device_index(DeviceIndexKind::Call, first, ".cuda(…)".into());
                }
                for kw in &call.arguments.keywords {
                    if kw.arg.as_ref().is_some_and(|a| a.as_str() == "device") {
                        self.device_index(
                            DeviceIndexKind::Call,
                            &kw.value,
                            ".cuda(device=…)".into(),
                        );
                    }
                }
            }
            "get" => {
                let Expr::Attribute(attr) = call.func.as_ref() else {
                    return;
                };
                if is_gpu_table_name(&attr.value) {
                    if let Some(default) = args.get(1) {
                        self.device_index(
                            DeviceIndexKind::Map,
                            default,
                            "default of a GPU table lookup".into(),
                        );
                    }
                }
            }
            _ => {}
        }
    }

    fn is_device_count(&self, call: &ExprCall) -> bool {
        self.bindings
            .qualified(&call.func)
            .is_some_and(|n| DEVICE_COUNT_FUNCTIONS.contains(&n.as_str()))
    }

    fn compare(&mut self, expr: &Expr) {
        let Expr::Compare(cmp) = expr else { return };
        let operands: Vec<&Expr> = std::iter::once(cmp.left.as_ref())
            .chain(cmp.comparators.iter())
            .collect();
        let counts = operands
            .iter()
            .any(|e| matches!(e, Expr::Call(c) if self.is_device_count(c)));
        let literal = operands.iter().filter_map(|e| int_literal(e)).max();
        if let (true, Some(n)) = (counts, literal) {
            if n >= 1 {
                self.facts
                    .multi_gpu
                    .push((range(expr), format!("compares the GPU count with {n}")));
            }
        }
    }

    fn assignment(&mut self, stmt: &Stmt) {
        let Stmt::Assign(assign) = stmt else { return };
        let [Expr::Name(target)] = assign.targets.as_slice() else {
            return;
        };
        let name = target.id.as_str().to_ascii_lowercase();
        if INDEX_NAMES
            .iter()
            .any(|n| name == *n || name.ends_with(&format!("_{n}")))
        {
            self.device_index(
                DeviceIndexKind::Map,
                &assign.value,
                format!("{} = …", target.id.as_str()),
            );
        }
        if let Expr::Dict(dict) = assign.value.as_ref() {
            if is_gpu_table_name(&assign.targets[0]) {
                for item in &dict.items {
                    self.device_index(
                        DeviceIndexKind::Map,
                        &item.value,
                        format!("value in {}", target.id.as_str()),
                    );
                }
            }
        }
    }

    fn dict_items(&mut self, expr: &Expr) {
        let Expr::Dict(dict) = expr else { return };
        for item in &dict.items {
            if let Some(Expr::StringLiteral(key)) = &item.key {
                let key = key.value.to_str();
                if INDEX_NAMES.contains(&key) {
                    self.device_index(
                        DeviceIndexKind::Keyword,
                        &item.value,
                        format!("\"{key}\": …"),
                    );
                }
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

fn managed_key(expr: &Expr) -> Option<EnvVar> {
    match expr {
        Expr::StringLiteral(s) => EnvVar::from_name(s.value.to_str()),
        _ => None,
    }
}

fn str_value(expr: &Expr) -> Option<String> {
    match expr {
        Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
        _ => None,
    }
}

pub fn int_literal(expr: &Expr) -> Option<u64> {
    match expr {
        Expr::NumberLiteral(n) => match &n.value {
            Number::Int(i) => i.as_u64(),
            _ => None,
        },
        _ => None,
    }
}

/// `cuda:1`, `/gpu:1`, `/GPU:1`, `/device:GPU:1`: the prefix and the index.
fn device_string(value: &str) -> Option<(&'static str, u64)> {
    const PREFIXES: &[&str] = &["cuda:", "/device:GPU:", "/gpu:", "/GPU:"];
    for prefix in PREFIXES {
        if let Some(rest) = value.strip_prefix(prefix) {
            if !rest.is_empty() && rest.len() <= 3 && rest.bytes().all(|b| b.is_ascii_digit()) {
                return rest.parse().ok().map(|n| (*prefix, n));
            }
        }
    }
    None
}

/// `gpu_map`, `CUDA_DEVICES`, `device_table`: names of tables of GPU indices.
fn is_gpu_table_name(expr: &Expr) -> bool {
    let Expr::Name(name) = expr else { return false };
    let lower = name.id.as_str().to_ascii_lowercase();
    ["gpu", "cuda", "device"].iter().any(|w| lower.contains(w))
}
