//! Repairs of files CPython refuses that a hand migration left behind: a header (or any other
//! statement) put above `from __future__` imports. The futures move up, whole, to just after the
//! docstring; nothing else changes, and the move is offered only when its result compiles.

use ruff_python_ast::Stmt;

use super::compile;
use super::rules::FUTURE_IMPORT_LATE;
use crate::base::edit::{apply, Edit};
use crate::base::lines::{line_end, line_start, next_line_start};
use crate::lang::removal::removal_edit;
use crate::model::finding::Finding;

/// A finding with the edits that move every late module-level `from __future__` import to the
/// end of the module's prologue (its docstring and the futures already in place); `None` when
/// the file has none, or when the moved file would still not compile.
pub fn late_futures(source: &str, body: &[Stmt]) -> Option<Finding> {
    let is_future =
        |s: &Stmt| matches!(s, Stmt::ImportFrom(i) if i.module.as_deref() == Some("__future__"));
    let docstring = body
        .first()
        .is_some_and(|s| matches!(s, Stmt::Expr(e) if e.value.is_string_literal_expr()));
    let prologue = usize::from(docstring)
        + body[usize::from(docstring)..]
            .iter()
            .take_while(|s| is_future(s))
            .count();
    let late: Vec<&Stmt> = body[prologue..].iter().filter(|s| is_future(s)).collect();
    if late.is_empty() {
        return None;
    }
    let at =
        match prologue.checked_sub(1).map(|i| range(&body[i])) {
            Some(last) => {
                // The prologue must end its line: the futures go on the lines after it.
                let rest =
                    source[last.end..line_end(source, last.end)].trim_start_matches([' ', '\t']);
                if !(rest.is_empty() || rest.starts_with('#')) {
                    return None;
                }
                next_line_start(source, last.end)
            }
            // After the comments above the first statement, and after a BOM.
            None => line_start(source, range(&body[0]).start)
                .max(if source.starts_with('\u{feff}') { 3 } else { 0 }),
        };
    let nl = crate::base::lines::newline_of(source);
    let mut moved = String::new();
    let mut edits = Vec::new();
    for stmt in &late {
        let r = range(stmt);
        let removal = removal_edit(source, r.clone(), false)?;
        // A future alone on its line moves with its comment; one that shares a line, alone.
        // (Its lines only: the blank lines the removal takes stay where they were.)
        let text = if removal.range.start <= line_start(source, r.start) {
            source[line_start(source, r.start)..next_line_start(source, r.end)].to_string()
        } else {
            source[r].to_string()
        };
        moved.push_str(&text);
        if !moved.ends_with(['\n', '\r']) {
            moved.push_str(nl);
        }
        edits.push(removal);
    }
    edits.insert(0, Edit::insert(at, moved));
    compiles(&apply(source, &edits).ok()?).then(|| {
        let mut finding = Finding::new(
            &FUTURE_IMPORT_LATE,
            range(late[0]),
            "`from __future__` import below other statements (CPython refuses the file): fix moves it up, after the docstring",
        );
        finding.edits = edits;
        finding.fixable = true;
        finding
    })
}

fn compiles(source: &str) -> bool {
    ruff_python_parser::parse_module(source)
        .is_ok_and(|p| compile::first_error(source, &p.syntax().body).is_none())
}

fn range(stmt: &Stmt) -> std::ops::Range<usize> {
    use ruff_text_size::Ranged;
    stmt.start().to_usize()..stmt.end().to_usize()
}
