//! The proof of a planned fix: it is offered only when the rewritten file's env is the
//! policy's. A plan that only inserts the header into a file that writes no GPU variable is
//! proven from the original's facts and the header's own effect (`by_composition`); any other
//! plan (one that removes or changes a statement) by analysing the rewritten text again.

use super::facts::{self, Facts, TopKind};
use super::{analyze_with, effective, fix, Depth, FileContext};
use crate::base::edit::{apply, Edit};
use crate::base::lines::newline_of;
use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, Stmt};

/// Which proof a fix gets: the composition where it applies (what the tool runs), or always
/// the re-analysis (the reference the tests compare it with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    Composed,
    Reanalysed,
}

/// A planned fix is offered only when its edits apply and its result's env is the policy's (a
/// re-analysed result must also parse).
pub(super) fn prove(
    source: &str,
    edits: Vec<Edit>,
    facts: &Facts,
    ctx: &FileContext,
) -> Result<Vec<Edit>, String> {
    let new = apply(source, &edits).map_err(|e| format!("the planned edits conflict ({e})"))?;
    if ctx.proof == Proof::Composed && by_composition(source, &edits, facts, ctx) {
        return Ok(edits);
    }
    let after = analyze_with(&new, ctx, Depth::EnvProof)
        .map_err(|e| format!("the rewrite would not parse ({e})"))?;
    let left = after
        .findings
        .iter()
        .find(|f| f.is_violation() && f.rule.env);
    match left {
        None => Ok(edits),
        Some(f) => Err(format!(
            "after the rewrite the env would still not be the policy's ({})",
            f.message
        )),
    }
}

/// The rewrite's env is the policy's without analysing it: the original writes no GPU
/// variable (no effect, no block), every edit is an insertion, and the header goes in at a
/// line start after the prologue (nothing before it runs a GPU import or calls anything).
/// Then the rewrite's effects are the header's alone, run before any GPU import, so its env at
/// the first GPU import and at the end is the header's, which meets the policy on its own
/// (`header_meets_policy`). Only `true` is a proof; `false` leaves it to the re-analysis.
/// The rewrite is not parsed here: `fix` parses it before writing (`verify`).
fn by_composition(source: &str, edits: &[Edit], facts: &Facts, ctx: &FileContext) -> bool {
    if !facts.effects.is_empty() || edits.iter().any(|e| !e.range.is_empty()) {
        return false;
    }
    let at = fix::prologue_end(source, facts);
    let at_line_start = at == 0 || source[..at].ends_with('\n');
    let block = ctx.header.block_text(newline_of(source));
    let header_there = edits
        .iter()
        .any(|e| e.range.start == at && e.replacement.contains(&block));
    if !at_line_start || !header_there || !prologue_only(source, facts, at) {
        return false;
    }
    // The header's imports bind the modules it uses: inserted with it, or already imported
    // plainly by the prologue (never `import x as os`).
    let bound = ctx.header.block_imports.iter().all(|m| {
        let plain = format!("import {m}");
        edits.iter().any(|e| e.replacement.contains(&plain))
            || prologue_imports(source, facts, at).any(|text| text == plain)
    });
    bound && header_meets_policy(ctx)
}

/// Every top-level statement before `at` is prologue: a docstring, `from __future__`, or an
/// import of standard-library modules bound by their own names.
fn prologue_only(source: &str, facts: &Facts, at: usize) -> bool {
    facts
        .top
        .iter()
        .filter(|(r, _)| r.start < at)
        .all(|(r, kind)| match kind {
            TopKind::Docstring | TopKind::Future => true,
            TopKind::StdlibImport(_) => !source[r.clone()].contains(" as "),
            _ => false,
        })
}

fn prologue_imports<'s>(
    source: &'s str,
    facts: &'s Facts,
    at: usize,
) -> impl Iterator<Item = &'s str> + 's {
    facts
        .top
        .iter()
        .filter(move |(r, kind)| r.start < at && matches!(kind, TopKind::StdlibImport(_)))
        .map(move |(r, _)| source[r.clone()].trim())
}

/// The header alone (its imports, its block, and the validation function the plan may add)
/// writes only the process's own env, all of it when it runs, imports no GPU framework, and
/// leaves the env the policy's.
fn header_meets_policy(ctx: &FileContext) -> bool {
    let header = ctx.header;
    let mut text: String = header
        .block_imports
        .iter()
        .map(|m| format!("import {m}\n"))
        .collect();
    text.push_str(&header.block_text("\n"));
    text.push('\n');
    text.push_str(&header.validate_fn_text("\n"));
    let Ok(parsed) = ruff_python_parser::parse_module(&text) else {
        return false;
    };
    let body = &parsed.syntax().body;
    let facts = facts::collect(&text, body, &[], facts::Reading::EnvOnly, &[], &[]);
    let env = effective::compute(body, &facts);
    !facts.effects.is_empty()
        && facts.effects.iter().all(|e| !e.child)
        && env.untimed.is_empty()
        && env.at_import.is_none()
        && !calls_a_function(body)
        && env.problems(ctx.policy).is_empty()
}

/// A call of a bare name outside a function body: in the file, it could be one of the file's
/// own functions, run with the header (and import a GPU framework before its last write).
fn calls_a_function(body: &[Stmt]) -> bool {
    #[derive(Default)]
    struct Calls(bool);
    impl<'a> Visitor<'a> for Calls {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            if !matches!(stmt, Stmt::FunctionDef(_)) {
                walk_stmt(self, stmt);
            }
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Call(call) = expr {
                self.0 |= matches!(call.func.as_ref(), Expr::Name(_));
            }
            walk_expr(self, expr);
        }
    }
    let mut calls = Calls::default();
    calls.visit_body(body);
    calls.0
}
