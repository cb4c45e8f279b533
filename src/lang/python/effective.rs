//! The effective env: what the managed variables hold when the file's first GPU framework is
//! imported and when its module code (main block included) has run, computed by walking the
//! module-level statements in order, following calls of the file's own functions, and joining
//! the branches of `if`/`try`/loops. Effects in functions never called at import time are
//! "untimed": they may run before CUDA starts.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeSet;

use ruff_python_ast::visitor::{walk_expr, Visitor};
use ruff_python_ast::{Expr, Stmt};

use super::facts::{is_main_test, is_type_checking, range, EnvKey, EnvOp, Facts, Val};
use crate::model::policy::{EnvVar, Policy};

/// What one variable may hold at a point of the program.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    /// Whatever the process was started with.
    Inherited,
    Unset,
    Lit(String),
    Computed,
    /// `setdefault(v)` over the inherited value: the scheduler's value if it set one, else v.
    DefaultTo(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env(pub [BTreeSet<State>; 3]);

impl Env {
    fn inherited() -> Env {
        let one = || BTreeSet::from([State::Inherited]);
        Env([one(), one(), one()])
    }

    pub fn get(&self, var: EnvVar) -> &BTreeSet<State> {
        &self.0[index(var)]
    }

    fn join(&mut self, other: &Env) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            a.extend(b.iter().cloned());
        }
    }

    /// The value the variable surely holds, when it holds a known one.
    pub fn value(&self, var: EnvVar) -> Option<&str> {
        match self.get(var).iter().collect::<Vec<_>>().as_slice() {
            [State::Lit(v)] | [State::DefaultTo(v)] => Some(v),
            _ => None,
        }
    }
}

fn index(var: EnvVar) -> usize {
    match var {
        EnvVar::VisibleDevices => 0,
        EnvVar::DeviceOrder => 1,
        EnvVar::AllocConf => 2,
    }
}

#[derive(Debug, Clone)]
pub struct Effective {
    /// At the first GPU-framework import that runs, and where it is.
    pub at_import: Option<(usize, Env)>,
    /// After the module code and its main block.
    pub at_end: Env,
    /// Effects that run at import time (indices into `facts.effects`), in order.
    pub executed: Vec<usize>,
    /// Those of them that run after the first GPU import.
    pub late: Vec<usize>,
    /// Effects in functions not called at import time.
    pub untimed: Vec<usize>,
}

impl Effective {
    /// Problems of the env against the policy, as sentences that group the variables in the
    /// same state; empty when it is the policy's at the first GPU import and stays so.
    pub fn problems(&self, policy: &Policy) -> Vec<String> {
        let mut groups: Vec<(String, &'static str, Vec<EnvVar>)> = Vec::new();
        for (var, what, when) in self.problems_by_var(policy) {
            match groups.iter_mut().find(|(w, n, _)| *w == what && *n == when) {
                Some((_, _, vars)) => vars.push(var),
                None => groups.push((what, when, vec![var])),
            }
        }
        // A moment said once, after the last group it applies to.
        let whens: Vec<&'static str> = groups.iter().map(|(_, when, _)| *when).collect();
        groups
            .into_iter()
            .enumerate()
            .map(|(i, (what, when, vars))| {
                let names: Vec<&str> = vars.iter().map(|v| v.name()).collect();
                let (subject, what) = match names.as_slice() {
                    [one] => (one.to_string(), what),
                    [init @ .., last] => (
                        format!("{} and {last}", init.join(", ")),
                        what.strip_prefix("is ")
                            .map_or(what.clone(), |w| format!("are {w}")),
                    ),
                    [] => (String::new(), what),
                };
                if whens.get(i + 1) == Some(&when) {
                    format!("{subject} {what}")
                } else {
                    format!("{subject} {what} {when}")
                }
            })
            .collect()
    }

    fn problems_by_var(&self, policy: &Policy) -> Vec<(EnvVar, String, &'static str)> {
        let mut out = Vec::new();
        for var in EnvVar::ALL {
            let Some(expected) = policy.env_value(var) else {
                continue;
            };
            let want = if policy.respect_scheduler {
                State::DefaultTo(expected.to_string())
            } else {
                State::Lit(expected.to_string())
            };
            let checks = self
                .at_import
                .iter()
                .map(|(_, env)| (env, true))
                .chain(std::iter::once((&self.at_end, false)));
            for (env, at_import) in checks {
                let states = env.get(var);
                if states.len() == 1 && states.contains(&want) {
                    continue;
                }
                let mut what = describe(states, &want, policy.respect_scheduler);
                if var == EnvVar::VisibleDevices {
                    // A hand-written UUID mask: say which card it selects.
                    if let [State::Lit(mask)] = states.iter().collect::<Vec<_>>().as_slice() {
                        if let Some(selects) = policy.mask_selects(mask) {
                            what = format!("{what} ({selects})");
                        }
                    }
                }
                let when = if at_import {
                    "at first GPU import"
                } else {
                    "after the module runs"
                };
                out.push((var, what, when));
                break;
            }
        }
        out
    }
}

fn describe(states: &BTreeSet<State>, want: &State, scheduler: bool) -> String {
    let mut parts: Vec<String> = states
        .iter()
        .filter(|s| *s != want)
        .map(|s| match s {
            State::Inherited => "is unset".to_string(),
            State::Unset => "is removed".to_string(),
            State::Lit(v) if scheduler => format!("is forced to '{v}' over the scheduler's mask"),
            State::Lit(v) => format!("is '{v}'"),
            State::Computed => "is a computed value".to_string(),
            State::DefaultTo(v) if scheduler => format!("defaults to '{v}'"),
            // The policy's own value, only defaulted: the variables group into one clause.
            State::DefaultTo(v) if matches!(want, State::Lit(w) if w == v) => {
                "is only defaulted".to_string()
            }
            State::DefaultTo(v) => format!("is only defaulted to '{v}'"),
        })
        .collect();
    parts.dedup();
    let joined = parts.join(" or ");
    if states.len() > 1 {
        format!("depends on the path: it {joined}")
    } else {
        joined
    }
}

pub fn compute(body: &[Stmt], facts: &Facts) -> Effective {
    let mut by_stmt: HashMap<(usize, usize), Vec<usize>> = HashMap::default();
    for (i, e) in facts.effects.iter().enumerate() {
        if !e.child {
            by_stmt
                .entry((e.stmt.start, e.stmt.end))
                .or_default()
                .push(i);
        }
    }
    let functions = body
        .iter()
        .filter_map(|s| match s {
            Stmt::FunctionDef(def) => Some((def.name.as_str().to_string(), &def.body[..])),
            _ => None,
        })
        .collect();
    let imports = facts.runtime_gpu_imports().map(|i| i.range.start).collect();
    let mut run = Run {
        facts,
        by_stmt,
        functions,
        imports,
        env: Env::inherited(),
        at_import: None,
        executed: Vec::new(),
        late: Vec::new(),
        calls: Vec::new(),
    };
    run.body(body);
    let executed: HashSet<usize> = run.executed.iter().copied().collect();
    let untimed = facts
        .effects
        .iter()
        .enumerate()
        .filter(|(i, e)| !e.child && !executed.contains(i))
        .map(|(i, _)| i)
        .collect();
    Effective {
        at_import: run.at_import,
        at_end: run.env,
        executed: run.executed,
        late: run.late,
        untimed,
    }
}

struct Run<'a> {
    facts: &'a Facts,
    by_stmt: HashMap<(usize, usize), Vec<usize>>,
    functions: HashMap<String, &'a [Stmt]>,
    imports: HashSet<usize>,
    env: Env,
    at_import: Option<(usize, Env)>,
    executed: Vec<usize>,
    late: Vec<usize>,
    calls: Vec<String>,
}

impl<'a> Run<'a> {
    fn body(&mut self, body: &'a [Stmt]) {
        for stmt in body {
            self.stmt(stmt);
        }
    }

    /// Run each branch from the same start and join what they end with.
    fn branches(&mut self, bodies: &[&'a [Stmt]], may_skip: bool) {
        let start = self.env.clone();
        let mut end: Option<Env> = may_skip.then(|| start.clone());
        for b in bodies {
            self.env = start.clone();
            self.body(b);
            match &mut end {
                Some(e) => e.join(&self.env),
                None => end = Some(self.env.clone()),
            }
        }
        if let Some(end) = end {
            self.env = end;
        }
    }

    fn stmt(&mut self, stmt: &'a Stmt) {
        let r = range(stmt);
        if self.imports.contains(&r.start) && self.at_import.is_none() {
            self.at_import = Some((r.start, self.env.clone()));
        }
        match stmt {
            Stmt::FunctionDef(_) => return,
            Stmt::ClassDef(c) => return self.body(&c.body),
            Stmt::If(s) if is_type_checking(&s.test) => return,
            Stmt::If(s) if is_main_test(&s.test) => return self.body(&s.body),
            _ => {}
        }
        self.calls_in(stmt);
        if let Some(effects) = self.by_stmt.get(&(r.start, r.end)).cloned() {
            for i in effects {
                self.apply(i);
            }
        }
        match stmt {
            Stmt::If(s) => {
                let mut bodies: Vec<&'a [Stmt]> = vec![&s.body];
                bodies.extend(s.elif_else_clauses.iter().map(|c| &c.body[..]));
                let has_else = s.elif_else_clauses.iter().any(|c| c.test.is_none());
                self.branches(&bodies, !has_else);
                if let (false, Some(var)) = (has_else, self.unset_test(&s.test)) {
                    // `if K not in os.environ: os.environ[K] = v` is a setdefault by hand.
                    let slot = &mut self.env.0[index(var)];
                    let values: Vec<String> = slot
                        .iter()
                        .filter_map(|st| match st {
                            State::Lit(v) => Some(v.clone()),
                            _ => None,
                        })
                        .collect();
                    if let ([v], true) = (values.as_slice(), slot.contains(&State::Inherited)) {
                        if slot.len() == 2 {
                            *slot = BTreeSet::from([State::DefaultTo(v.clone())]);
                        }
                    }
                }
            }
            Stmt::For(s) => {
                self.branches(&[&s.body], true);
                self.body(&s.orelse);
            }
            Stmt::While(s) => {
                self.branches(&[&s.body], true);
                self.body(&s.orelse);
            }
            Stmt::With(s) => self.body(&s.body),
            Stmt::Try(s) => {
                let start = self.env.clone();
                self.body(&s.body);
                self.body(&s.orelse);
                let mut end = self.env.clone();
                // Writes of the environment do not raise: a body made only of them either ran
                // whole or, when a handler runs, left the env where it ended.
                let mut caught = if s.body.iter().all(|b| self.only_env_writes(b)) {
                    end.clone()
                } else {
                    start
                };
                caught.join(&end);
                for handler in &s.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = handler;
                    self.env = caught.clone();
                    self.body(&h.body);
                    end.join(&self.env);
                }
                self.env = end;
                self.body(&s.finalbody);
            }
            Stmt::Match(s) => {
                let bodies: Vec<&'a [Stmt]> = s.cases.iter().map(|c| &c.body[..]).collect();
                self.branches(&bodies, true);
            }
            _ => {}
        }
    }

    fn only_env_writes(&self, stmt: &Stmt) -> bool {
        let r = range(stmt);
        self.by_stmt
            .get(&(r.start, r.end))
            .is_some_and(|effects| effects.iter().all(|&i| self.facts.effects[i].pure))
    }

    /// `K not in os.environ` / `not os.environ.get(K)`: the branch runs only when K is unset.
    fn unset_test(&self, test: &Expr) -> Option<EnvVar> {
        let bindings = &self.facts.bindings;
        let key = match test {
            Expr::Compare(c)
                if c.ops.len() == 1
                    && c.ops[0] == ruff_python_ast::CmpOp::NotIn
                    && bindings.is(&c.comparators[0], "os.environ") =>
            {
                &*c.left
            }
            Expr::UnaryOp(u) if u.op == ruff_python_ast::UnaryOp::Not => match u.operand.as_ref() {
                Expr::Call(call)
                    if matches!(
                        bindings.qualified(&call.func).as_deref(),
                        Some("os.environ.get" | "os.getenv")
                    ) =>
                {
                    call.arguments.args.first()?
                }
                _ => return None,
            },
            _ => return None,
        };
        match key {
            Expr::StringLiteral(s) => EnvVar::from_name(s.value.to_str()),
            _ => None,
        }
    }

    /// Calls of the file's own module-level functions made by this statement (not in its
    /// nested bodies): their effects happen here.
    fn calls_in(&mut self, stmt: &'a Stmt) {
        let mut finder = CallFinder::default();
        match stmt {
            Stmt::Expr(e) => finder.visit_expr(&e.value),
            Stmt::Assign(a) => finder.visit_expr(&a.value),
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    finder.visit_expr(v);
                }
            }
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    finder.visit_expr(v);
                }
            }
            Stmt::If(s) => finder.visit_expr(&s.test),
            Stmt::With(w) => {
                for item in &w.items {
                    finder.visit_expr(&item.context_expr);
                }
            }
            _ => {}
        }
        for name in finder.names {
            if self.calls.contains(&name) || self.calls.len() > 8 {
                continue;
            }
            if let Some(body) = self.functions.get(&name).copied() {
                self.calls.push(name);
                self.body(body);
                self.calls.pop();
            }
        }
    }

    fn apply(&mut self, i: usize) {
        let effect = &self.facts.effects[i];
        self.executed.push(i);
        if self.at_import.is_some() {
            self.late.push(i);
        }
        let vars: Vec<EnvVar> = match (effect.key, &effect.op) {
            (Some(EnvKey::Managed(v)), _) => vec![v],
            (None, EnvOp::Clobber) => EnvVar::ALL.to_vec(),
            _ => return,
        };
        for var in vars {
            let slot = &mut self.env.0[index(var)];
            *slot = match &effect.op {
                EnvOp::Set(Val::Lit(v)) => BTreeSet::from([State::Lit(v.clone())]),
                EnvOp::Set(Val::Computed) => BTreeSet::from([State::Computed]),
                EnvOp::Unset => BTreeSet::from([State::Unset]),
                EnvOp::Clobber => {
                    let mut s = slot.clone();
                    s.insert(State::Computed);
                    s
                }
                EnvOp::SetDefault(val) => slot
                    .iter()
                    .map(|s| match (s, val) {
                        (State::Unset, Val::Lit(v)) => State::Lit(v.clone()),
                        (State::Inherited, Val::Lit(v)) => State::DefaultTo(v.clone()),
                        (State::Unset | State::Inherited, Val::Computed) => State::Computed,
                        (other, _) => other.clone(),
                    })
                    .collect(),
            };
        }
    }
}

#[derive(Default)]
struct CallFinder {
    names: Vec<String>,
}

impl<'a> Visitor<'a> for CallFinder {
    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Lambda(_) => return,
            Expr::Call(call) => {
                if let Expr::Name(n) = call.func.as_ref() {
                    self.names.push(n.id.as_str().to_string());
                }
            }
            _ => {}
        }
        walk_expr(self, expr);
    }
}
