//! Env writes: `os.environ[K] = V`, `setdefault`, `update`, `putenv`, and how to remove each.

use std::ops::Range;

use ruff_python_ast::{Expr, ExprCall, Stmt};

use super::{is_whole_stmt, range, EnvWrite, FactVisitor};
use crate::edit::Edit;
use crate::policy::EnvVar;
use crate::removal::{delete_items, removal_edit};

impl FactVisitor<'_> {
    pub(super) fn env_writes_of(&self, stmt: &Stmt, only_in_body: bool) -> Vec<EnvWrite> {
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

    pub(super) fn env_call_writes(
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
    pub(super) fn env_update_writes(
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

    pub(super) fn is_environ(&self, expr: &Expr) -> bool {
        self.bindings.qualified(expr).as_deref() == Some("os.environ")
    }

    pub(super) fn record_env_writes(&mut self, body: &[Stmt]) {
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
    pub(super) fn will_remove(&self, w: &EnvWrite) -> bool {
        if self.in_header(&w.stmt) {
            return false;
        }
        w.module_level || w.value.as_deref() != self.policy.env_value(w.var)
    }
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
