//! Device selection: literal indices in strings, calls, keywords and GPU tables, and code
//! that assumes several GPUs.

use ruff_python_ast::{Expr, ExprCall, Number, Stmt};

use super::{range, DeviceIndex, DeviceIndexKind, FactVisitor};
use crate::python::semantic::is_gpu_module;

/// Index names that select a CUDA device when given an integer.
pub(super) const INDEX_NAMES: &[&str] = &[
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

impl FactVisitor<'_> {
    pub(super) fn device_index(&mut self, kind: DeviceIndexKind, expr: &Expr, what: String) {
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

    pub(super) fn string_literal(&mut self, expr: &Expr) {
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

    pub(super) fn call(&mut self, call: &ExprCall) {
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

    pub(super) fn method_call(&mut self, call: &ExprCall, method: &str) {
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

    pub(super) fn is_device_count(&self, call: &ExprCall) -> bool {
        self.bindings
            .qualified(&call.func)
            .is_some_and(|n| DEVICE_COUNT_FUNCTIONS.contains(&n.as_str()))
    }

    pub(super) fn compare(&mut self, expr: &Expr) {
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

    pub(super) fn assignment(&mut self, stmt: &Stmt) {
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

    pub(super) fn dict_items(&mut self, expr: &Expr) {
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
