//! Branches only a process of a distributed group runs: `if dist.is_initialized() and rank
//! not in {-1, 0}: dist.barrier(device_ids=[torch.cuda.current_device()])`, or through a name
//! the function binds once to such a test (`initialized = dist.is_available() and
//! dist.is_initialized()`). A process no distributed launcher starts and whose code never
//! starts a group has no group initialised: it never takes them (ultralytics'
//! `torch_distributed_zero_first`, run by `SETTINGS = SettingsManager()` at import).

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{BoolOp, Expr, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashMap as HashMap;

/// What names `torch.distributed` in a file: the module's local names (`dist`,
/// `torch.distributed`) and those of its `is_initialized` imported by name.
#[derive(Default)]
pub(super) struct DistNames {
    modules: Vec<String>,
    is_initialized: Vec<String>,
}

impl DistNames {
    /// From the imports of a module's top-level code and of a function's body.
    pub(super) fn of(body: &[Stmt]) -> DistNames {
        let mut names = DistNames::default();
        for stmt in body {
            match stmt {
                Stmt::Import(i) => {
                    for a in &i.names {
                        match (a.name.as_str(), &a.asname) {
                            ("torch.distributed", Some(local)) => {
                                names.modules.push(local.to_string())
                            }
                            ("torch" | "torch.distributed", None) => {
                                names.modules.push("torch.distributed".to_string())
                            }
                            ("torch", Some(local)) => {
                                names.modules.push(format!("{local}.distributed"))
                            }
                            _ => {}
                        }
                    }
                }
                Stmt::ImportFrom(i) => {
                    let module = i.module.as_ref().map(|m| m.as_str());
                    for a in &i.names {
                        let local = a.asname.as_ref().unwrap_or(&a.name).to_string();
                        match (module, a.name.as_str()) {
                            (Some("torch"), "distributed") => names.modules.push(local),
                            (Some("torch.distributed"), "is_initialized") => {
                                names.is_initialized.push(local)
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        names
    }

    fn is_empty(&self) -> bool {
        self.modules.is_empty() && self.is_initialized.is_empty()
    }

    /// `dist.is_initialized()`.
    fn asks(&self, e: &Expr) -> bool {
        let Expr::Call(c) = e else { return false };
        match c.func.as_ref() {
            Expr::Name(n) => self.is_initialized.iter().any(|i| i == n.id.as_str()),
            Expr::Attribute(a) if a.attr.as_str() == "is_initialized" => {
                dotted(&a.value).is_some_and(|m| self.modules.contains(&m))
            }
            _ => false,
        }
    }
}

fn dotted(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(format!("{}.{}", dotted(&a.value)?, a.attr)),
        _ => None,
    }
}

/// The statements of `def`'s branches that run only in a process whose group is initialised
/// (`module` names the file's imports of `torch.distributed`); none when there is none.
pub(super) fn only_branches(def: &StmtFunctionDef, module: &DistNames) -> Vec<TextRange> {
    let local = DistNames::of(&def.body);
    let names = DistNames {
        modules: module
            .modules
            .iter()
            .chain(&local.modules)
            .cloned()
            .collect(),
        is_initialized: (module.is_initialized.iter())
            .chain(&local.is_initialized)
            .cloned()
            .collect(),
    };
    if names.is_empty() {
        return Vec::new();
    }
    // A name bound once, to a test that holds only in a group (`initialized = …`).
    let mut binds = Binds::default();
    def.body.iter().for_each(|s| binds.visit_stmt(s));
    let mut flags: Vec<&str> = Vec::new();
    for stmt in &def.body {
        if let Stmt::Assign(a) = stmt {
            if let [Expr::Name(n)] = a.targets.as_slice() {
                let once = binds.count.get(n.id.as_str()).copied() == Some(1);
                if once && in_group(&a.value, &names, &[]) {
                    flags.push(n.id.as_str());
                }
            }
        }
    }
    let mut branches = Branches {
        names: &names,
        flags: &flags,
        skipped: Vec::new(),
    };
    def.body.iter().for_each(|s| branches.visit_stmt(s));
    branches.skipped
}

/// Whether `test` holds only where the group is initialised: the question itself, a name
/// bound to it, or a conjunction with one of those.
fn in_group(test: &Expr, names: &DistNames, flags: &[&str]) -> bool {
    match test {
        Expr::Name(n) => flags.contains(&n.id.as_str()),
        Expr::BoolOp(b) if b.op == BoolOp::And => {
            b.values.iter().any(|v| in_group(v, names, flags))
        }
        _ => names.asks(test),
    }
}

/// How often a function's code binds each name (its own and its nested functions').
#[derive(Default)]
struct Binds<'a> {
    count: HashMap<&'a str, usize>,
}

impl<'a> Visitor<'a> for Binds<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Global(g) => g.names.iter().for_each(|n| {
                *self.count.entry(n.as_str()).or_default() += 2;
            }),
            Stmt::Nonlocal(g) => g.names.iter().for_each(|n| {
                *self.count.entry(n.as_str()).or_default() += 2;
            }),
            _ => {}
        }
        walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(n) = expr {
            if !n.ctx.is_load() {
                *self.count.entry(n.id.as_str()).or_default() += 1;
            }
        }
        walk_expr(self, expr);
    }
}

/// The group-only branches of a function's own code (not of the functions it defines).
struct Branches<'n> {
    names: &'n DistNames,
    flags: &'n [&'n str],
    skipped: Vec<TextRange>,
}

impl<'a> Visitor<'a> for Branches<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            Stmt::If(i) => {
                if in_group(&i.test, self.names, self.flags) {
                    self.skipped.extend(i.body.iter().map(Ranged::range));
                } else {
                    i.body.iter().for_each(|s| self.visit_stmt(s));
                }
                for c in &i.elif_else_clauses {
                    match &c.test {
                        Some(t) if in_group(t, self.names, self.flags) => {
                            self.skipped.extend(c.body.iter().map(Ranged::range));
                        }
                        _ => c.body.iter().for_each(|s| self.visit_stmt(s)),
                    }
                }
            }
            _ => walk_stmt(self, stmt),
        }
    }
}

/// Whether a name code reads starts a process group (`dist.init_process_group(…)`,
/// `deepspeed.init_distributed()`, `init_device_mesh(…)`), or may through a library that starts
/// one when launched as one of a group (`Accelerator()`, transformers' `TrainingArguments`,
/// Lightning's `Trainer`, `deepspeed.initialize`): a process that runs it may be one of a
/// group whatever starts it.
pub(super) fn starts_group(read: &str) -> bool {
    read.contains("deepspeed.initialize")
        || read.split('.').any(|part| {
            let name = part.split(['(', '[']).next().unwrap_or_default();
            crate::knowledge::python::GROUP_STARTERS.contains(&name)
        })
}

#[cfg(test)]
mod tests {
    use super::starts_group;

    #[test]
    fn a_read_of_a_frameworks_group_starter_starts_a_group() {
        for read in [
            "torch.distributed.init_process_group",
            "dist.init_process_group(backend)",
            "deepspeed.initialize",
            "init_dist",
            "mmengine.dist.init_dist",
            "colossalai.launch_from_torch",
            "utils.init_distributed_mode",
            "Accelerator",
            "Runner.from_cfg",
        ] {
            assert!(starts_group(read), "{read}");
        }
        for read in [
            "torch.cuda.current_device",
            "dist.is_initialized",
            "dist.barrier",
            "launch",
        ] {
            assert!(!starts_group(read), "{read}");
        }
    }
}
