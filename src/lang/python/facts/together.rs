//! Device indices used together: two sinks of one function (or of the module's own code) that
//! select different literal indices, both on the path that runs, are several cards by design
//! (`a = x.to("cuda:0"); b = y.to("cuda:1")`). Remapping the second to the first's card would
//! merge them: the program would then do something else than before, apart from its card.
//!
//! Alternatives of one choice are told apart by where each sink lies: the branches of one
//! `if`/`elif`/`else`, of a conditional expression, of a `match`, a `try` body and its
//! handlers, and an `if` clause that leaves its suite (`return`, `raise`, `break`, `continue`)
//! against the rest of that suite. A sink under a test of the GPU count (`if
//! torch.cuda.device_count() > 1:`, a `skipif` decorator on the count) adapts to the mask, and a
//! sink fed by several literals is one choice among them: neither is paired.

use std::ops::Range;

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, Stmt};

use super::devices::DeviceUse;
use super::range;

/// Branches of one construct: a point in one and a point in another never both run.
type Exclusive = Vec<Range<usize>>;

#[derive(Default)]
struct Shape {
    /// Function and lambda bodies: a sink's scope is the innermost one holding it.
    functions: Vec<Range<usize>>,
    exclusive: Vec<Exclusive>,
    /// Code that runs only when the GPU count allows it.
    guarded: Vec<Range<usize>>,
}

/// The groups of device uses (indices into `devices`) that run together and select different
/// cards: each is the first use of each index, in source order.
pub fn together(body: &[Stmt], devices: &[DeviceUse]) -> Vec<Vec<usize>> {
    let candidates: Vec<usize> = (0..devices.len()).collect();
    let distinct = |ids: &[usize]| {
        let mut seen: Vec<u64> = ids.iter().map(|&i| devices[i].index).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    };
    if distinct(&candidates) < 2 {
        return Vec::new();
    }
    let mut shape = Shape::default();
    shape.suite(body);
    shape.visit_body(body);
    let sink = |i: usize| devices[i].sink.clone();
    // A sink that several literals reach is one choice among them, whatever they are.
    let mut per_sink: Vec<(Range<usize>, Vec<u64>)> = Vec::new();
    for &i in &candidates {
        match per_sink.iter_mut().find(|(s, _)| *s == sink(i)) {
            Some((_, indices)) => indices.push(devices[i].index),
            None => per_sink.push((sink(i), vec![devices[i].index])),
        }
    }
    let single = |i: usize| {
        per_sink
            .iter()
            .find(|(s, _)| *s == sink(i))
            .is_some_and(|(_, indices)| indices.iter().all(|&n| n == devices[i].index))
    };
    let scope = |at: usize| {
        shape
            .functions
            .iter()
            .filter(|f| f.start <= at && at < f.end)
            .min_by_key(|f| f.end - f.start)
            .cloned()
    };
    let apart = |a: usize, b: usize| {
        shape.exclusive.iter().any(|branches| {
            let ia = branches.iter().position(|r| r.start <= a && a < r.end);
            let ib = branches.iter().position(|r| r.start <= b && b < r.end);
            matches!((ia, ib), (Some(x), Some(y)) if x != y)
        })
    };
    let guarded = |at: usize| shape.guarded.iter().any(|g| g.start <= at && at < g.end);
    let pool: Vec<usize> = candidates
        .into_iter()
        .filter(|&i| single(i) && !guarded(sink(i).start))
        .collect();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut taken = vec![false; devices.len()];
    for (n, &a) in pool.iter().enumerate() {
        if taken[a] {
            continue;
        }
        let at = sink(a).start;
        let mut group = vec![a];
        for &b in &pool[n + 1..] {
            let bt = sink(b).start;
            let fits = scope(at) == scope(bt)
                && group
                    .iter()
                    .all(|&g| devices[g].index != devices[b].index && !apart(sink(g).start, bt));
            if fits {
                group.push(b);
            }
        }
        if group.len() > 1 {
            for &g in &group {
                taken[g] = true;
            }
            groups.push(group);
        }
    }
    groups
}

fn span(body: &[Stmt]) -> Option<Range<usize>> {
    Some(range(body.first()?).start..range(body.last()?).end)
}

fn leaves(body: &[Stmt]) -> bool {
    matches!(
        body.last(),
        Some(Stmt::Return(_) | Stmt::Raise(_) | Stmt::Break(_) | Stmt::Continue(_))
    )
}

/// An expression that reads the GPU count (`torch.cuda.device_count()`, `cupy`'s, or a name
/// that says so: `n_gpus`, `num_gpus`, `gpu_count`).
fn reads_gpu_count(expr: &Expr) -> bool {
    struct Finder(bool);
    impl<'a> Visitor<'a> for Finder {
        fn visit_expr(&mut self, expr: &'a Expr) {
            let name = match expr {
                Expr::Attribute(a) => Some(a.attr.as_str()),
                Expr::Name(n) => Some(n.id.as_str()),
                _ => None,
            };
            if let Some(name) = name {
                let lower = name.to_ascii_lowercase();
                if matches!(lower.as_str(), "device_count" | "getdevicecount")
                    || (lower.contains("gpu") && (lower.contains("num") || lower.contains("count")))
                {
                    self.0 = true;
                }
            }
            walk_expr(self, expr);
        }
    }
    let mut f = Finder(false);
    f.visit_expr(expr);
    f.0
}

impl Shape {
    /// An `if` clause that leaves its suite excludes the rest of the suite.
    fn suite(&mut self, body: &[Stmt]) {
        for (i, stmt) in body.iter().enumerate() {
            let Stmt::If(s) = stmt else { continue };
            let Some(rest) = span(&body[i + 1..]) else {
                continue;
            };
            let mut clauses = vec![(span(&s.body), leaves(&s.body))];
            clauses.extend(
                s.elif_else_clauses
                    .iter()
                    .map(|c| (Some(range(c)), leaves(&c.body))),
            );
            for (clause, leaves) in clauses {
                if let (Some(clause), true) = (clause, leaves) {
                    self.exclusive.push(vec![clause, rest.clone()]);
                }
            }
        }
    }
}

impl<'a> Visitor<'a> for Shape {
    fn visit_body(&mut self, body: &'a [Stmt]) {
        self.suite(body);
        for stmt in body {
            self.visit_stmt(stmt);
        }
    }

    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                if def
                    .decorator_list
                    .iter()
                    .any(|d| reads_gpu_count(&d.expression))
                {
                    self.guarded.push(range(stmt));
                }
                self.functions.push(range(stmt));
            }
            Stmt::If(s) => {
                let mut branches: Vec<Range<usize>> = span(&s.body).into_iter().collect();
                branches.extend(s.elif_else_clauses.iter().map(range));
                if reads_gpu_count(&s.test) {
                    self.guarded.extend(branches.iter().cloned());
                }
                for c in &s.elif_else_clauses {
                    if c.test.as_ref().is_some_and(reads_gpu_count) {
                        self.guarded.push(range(c));
                    }
                }
                self.exclusive.push(branches);
            }
            Stmt::Try(t) => {
                let mut branches: Vec<Range<usize>> = span(&t.body).into_iter().collect();
                branches.extend(t.handlers.iter().map(range));
                self.exclusive.push(branches);
            }
            Stmt::Match(m) => self.exclusive.push(m.cases.iter().map(range).collect()),
            _ => {}
        }
        walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::If(e) => {
                if reads_gpu_count(&e.test) {
                    self.guarded.push(range(&*e.body));
                    self.guarded.push(range(&*e.orelse));
                }
                self.exclusive
                    .push(vec![range(&*e.body), range(&*e.orelse)]);
            }
            Expr::Lambda(_) => self.functions.push(range(expr)),
            _ => {}
        }
        walk_expr(self, expr);
    }
}
