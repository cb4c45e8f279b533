//! The fix planner: the edits that bring a file to the policy. The configuration is replaced
//! in place (or inserted after the prologue when the file has none before its GPU imports),
//! the other writes go with their banners and echoes, device indices are remapped. Byte
//! ranges come from the AST; inserted text comes from the template, with the file's own line
//! endings and in a form its encoding can hold.

use std::ops::Range;

use super::config::ConfigBlock;
use super::detect::{to_remove, RuleContext};
use super::effective::Effective;
use super::encoding::Encoding;
use super::facts::{Facts, TopKind};
use super::style::Indent;

mod imports;
use crate::base::edit::Edit;
use crate::base::lines::{line_end, line_ranges, line_start, next_line_start};
use crate::lang::removal::with_blank_lines;
use crate::model::finding::Finding;
use imports::{drop_later_imports, header_chunk, noqa_e402, padded};

pub struct FixInput<'a> {
    pub source: &'a str,
    pub facts: &'a Facts,
    pub effective: &'a Effective,
    pub blocks: &'a [ConfigBlock],
    pub findings: &'a [Finding],
    pub ctx: &'a RuleContext<'a>,
    pub newline: &'a str,
    pub encoding: &'a Encoding,
    /// The env must be rewritten (it is not the policy's).
    pub env_fix: bool,
}

/// The smallest fix that may do: keep the file's first configuration block as written and
/// take out only the env changes after it. `None` when the file has no such block.
pub fn plan_minimal(input: &FixInput) -> Option<Result<Vec<Edit>, String>> {
    let site = header_site(input)?;
    let facts = input.facts;
    let removals: Vec<usize> = to_remove(facts, input.effective, input.ctx.policy, true)
        .into_iter()
        .filter(|&i| {
            let stmt = &facts.effects[i].stmt;
            !(site.start <= stmt.start && stmt.end <= site.end)
        })
        .collect();
    if removals.is_empty() {
        return None;
    }
    // A removed write that is a block of its own goes with its banner and echoes.
    let mut edits = Vec::new();
    let mut covered = Vec::new();
    for block in input.blocks.iter().filter(|b| b.range != site) {
        let holds = |i: &usize| {
            let stmt = &facts.effects[*i].stmt;
            block.range.start <= stmt.start && stmt.end <= block.range.end
        };
        if removals.iter().any(holds) {
            edits.push(Edit::delete(with_blank_lines(
                input.source,
                block.range.clone(),
            )));
            covered.push(block.range.clone());
        }
    }
    Some(finish(input, edits, &covered, removals))
}

/// The edits, or why the file cannot be fixed automatically.
pub fn plan(input: &FixInput) -> Result<Vec<Edit>, String> {
    let mut edits: Vec<Edit> = Vec::new();
    let (source, facts) = (input.source, input.facts);
    let removals = to_remove(facts, input.effective, input.ctx.policy, input.env_fix);
    let mut covered: Vec<Range<usize>> = Vec::new();
    if input.env_fix {
        if let Some(why) = input.ctx.header.style.header_conflict() {
            return Err(why);
        }
        let site = header_site(input);
        for block in input.blocks {
            if Some(block.range.start) == site.as_ref().map(|s| s.start) {
                continue;
            }
            edits.push(Edit::delete(with_blank_lines(source, block.range.clone())));
            covered.push(block.range.clone());
        }
        let at = site
            .as_ref()
            .map_or_else(|| prologue_end(source, facts), |s| s.start);
        let (chunk, import_edits) = header_chunk(input, at);
        edits.extend(import_edits);
        match site {
            Some(block) => {
                edits.push(Edit::replace(block.clone(), chunk));
                covered.push(block);
            }
            None => edits.push(match joined_separator(source, at) {
                // `"""Doc."""; import torch`: the separator becomes the header's lines.
                Some(sep) => {
                    let nl = input.newline;
                    Edit::replace(sep, format!("{nl}{nl}{chunk}{nl}"))
                }
                None => Edit::insert(at, padded(input, at, chunk)),
            }),
        }
        drop_later_imports(input, at, &mut edits, &covered);
        if input.ctx.header.style.noqa_e402 {
            noqa_e402(input, at, &mut edits);
        }
        docstring_edit(input, &mut edits);
        edits.extend(validation_edits(input));
    }
    finish(input, edits, &covered, removals)
}

/// Add the removals not already covered by a replaced block and the device edits; render the
/// inserted text for the file's encoding.
fn finish(
    input: &FixInput,
    mut edits: Vec<Edit>,
    covered: &[Range<usize>],
    removals: Vec<usize>,
) -> Result<Vec<Edit>, String> {
    let (source, facts) = (input.source, input.facts);
    for i in removals {
        let e = &facts.effects[i];
        if covered
            .iter()
            .any(|c| c.start <= e.stmt.start && e.stmt.end <= c.end)
        {
            continue;
        }
        let Some(removal) = &e.removal else {
            let (line, _) = crate::model::finding::line_column(source, e.at.start);
            return Err(format!(
                "{} at line {line} cannot be taken out safely (it is part of a larger expression): remove it by hand, then run fix again",
                e.var().map_or("an env change", |v| v.name())
            ));
        };
        edits.extend(removal.iter().cloned());
    }
    for f in input.findings {
        // Device remaps, late `from __future__` imports moved up, and the writes that go on
        // their own (a library's, a function's) when no replaced block holds them.
        let inside_header = || {
            covered
                .iter()
                .any(|c| c.start <= f.range.start && f.range.end <= c.end)
        };
        let applied = match f.rule.edits {
            crate::model::finding::RuleEdits::Own | crate::model::finding::RuleEdits::SetsEnv => {
                true
            }
            crate::model::finding::RuleEdits::OwnOutsideHeader => !inside_header(),
            crate::model::finding::RuleEdits::ByHeader => false,
        };
        if applied {
            edits.extend(f.edits.iter().cloned());
        }
    }
    // Several effects of one statement share its removal: keep each edit once (linear).
    let mut seen = std::collections::HashSet::new();
    edits.retain(|e| seen.insert((e.range.start, e.range.end, e.replacement.clone())));
    for e in &mut edits {
        e.replacement = input.encoding.render(&e.replacement)?;
    }
    Ok(edits)
}

/// The block replaced in place: the first configuration block that runs before the first GPU
/// import.
fn header_site(input: &FixInput) -> Option<Range<usize>> {
    let first_import = input
        .facts
        .first_top_level_gpu_import()
        .unwrap_or(usize::MAX);
    input
        .blocks
        .iter()
        .find(|b| b.range.start < first_import)
        .map(|b| b.range.clone())
}

/// Where the header goes when the file has no configuration block to replace: after the
/// shebang, the encoding cookie, a leading licence block and whole-file pragmas, the module
/// docstring, `from __future__` imports and the leading standard-library imports.
pub(super) fn prologue_end(source: &str, facts: &Facts) -> usize {
    let bom = if source.starts_with('\u{feff}') { 3 } else { 0 };
    let first_stmt = facts
        .top
        .first()
        .map_or(source.len(), |(r, _)| line_start(source, r.start).max(bom));
    let mut end = bom;
    for (start, stop) in line_ranges(source) {
        if start >= first_stmt {
            break;
        }
        let text = source[start..stop].trim_start_matches('\u{feff}').trim();
        // Every comment above the first statement (a licence, an attribution, pragmas) stays
        // above the header, as it stays above an inserted docstring.
        if text.is_empty() || text.starts_with('#') {
            end = next_line_start(source, start);
        }
    }
    let prologue = |kind: &TopKind| {
        matches!(
            kind,
            TopKind::Docstring | TopKind::Future | TopKind::StdlibImport(_)
        )
    };
    let gpu_import = facts.first_top_level_gpu_import().unwrap_or(usize::MAX);
    let mut top = facts.top.iter().peekable();
    while let Some((range, kind)) = top.next() {
        if !prologue(kind) {
            break;
        }
        let line_end = next_line_start(source, range.end);
        // The GPU import later on the same line (`"""Doc."""; import torch`): the header goes
        // between the two statements.
        let joined = top
            .peek()
            .is_some_and(|(next, kind)| next.start < line_end && !prologue(kind));
        if joined && gpu_import < line_end {
            return range.end;
        }
        end = end.max(line_end);
    }
    end
}

/// The `; ` between a prologue statement ending at `at` and the statement after it on the same
/// line, up to that statement.
fn joined_separator(source: &str, at: usize) -> Option<Range<usize>> {
    let end = line_end(source, at);
    let rest = source[at..end].trim_start_matches([' ', '\t']);
    let next = rest.strip_prefix(';')?.trim_start_matches([' ', '\t']);
    (!next.is_empty() && !next.starts_with(['#', '\\'])).then(|| at..end - next.len())
}

fn docstring_edit(input: &FixInput, edits: &mut Vec<Edit>) {
    // No marker in the template (the default): module docstrings are the project's own.
    if input.ctx.is_init || input.ctx.header.docstring_marker.is_empty() {
        return;
    }
    let (source, facts, nl) = (input.source, input.facts, input.newline);
    let marker = &input.ctx.header.docstring_marker;
    match &facts.docstring {
        Some((_, literal, text)) => {
            if text.contains(marker.as_str()) {
                return;
            }
            // A marker written under another policy (another card or mask) is replaced in
            // place, never left beside the new one.
            let stale = stale_markers(source, literal.clone(), &input.ctx.header.marker_shape);
            if let Some((first, rest)) = stale.split_first() {
                edits.push(Edit::replace(first.clone(), marker.clone()));
                for span in rest {
                    let (start, end) = (line_start(source, span.start), line_end(source, span.end));
                    let alone = source[start..span.start].trim().is_empty()
                        && source[span.end..end].trim().is_empty();
                    edits.push(Edit::delete(if alone {
                        start..next_line_start(source, span.end)
                    } else {
                        span.clone()
                    }));
                }
                return;
            }
            let quoted = &source[literal.clone()];
            let triple = quoted.ends_with("\"\"\"") || quoted.ends_with("'''");
            let close = literal.end - if triple { 3 } else { 1 };
            if !triple {
                edits.push(Edit::insert(close, format!(" {marker}")));
                return;
            }
            let ls = line_start(source, close);
            if source[ls..close].trim().is_empty() && ls > literal.start {
                let indent = &source[ls..close];
                edits.push(Edit::insert(ls, format!("{indent}{marker}{nl}")));
            } else {
                edits.push(Edit::insert(close, format!("{nl}{marker}{nl}")));
            }
        }
        None => {
            let bom = if source.starts_with('\u{feff}') { 3 } else { 0 };
            let doc = format!("\"\"\"{nl}{marker}{nl}\"\"\"{nl}");
            // After every leading comment: a licence or attribution stays on top.
            let at = match facts.top.first() {
                Some((r, _)) => line_start(source, r.start).max(bom),
                None => prologue_end(source, facts),
            };
            edits.insert(0, Edit::insert(at, doc));
        }
    }
}

/// The text of each line of the docstring `literal` that has the marker's `shape` (its quotes
/// and prefix left out where the line opens or closes the literal).
fn stale_markers(source: &str, literal: Range<usize>, shape: &[String]) -> Vec<Range<usize>> {
    let mut found_spans = Vec::new();
    if shape.is_empty() {
        return found_spans;
    }
    let mut at = literal.start;
    while at < literal.end {
        let end = line_end(source, at).min(literal.end);
        let mut span = at..end;
        let text = &source[span.clone()];
        span.start += text.len() - text.trim_start().len();
        if span.start == literal.start {
            let opening = &source[span.clone()];
            let body = opening.trim_start_matches(|c: char| c.is_ascii_alphabetic());
            let body = body.trim_start_matches(['"', '\'']);
            span.start = span.end - body.len();
        }
        if span.end == literal.end {
            let closing = &source[span.clone()];
            span.end = span.start + closing.trim_end_matches(['"', '\'']).len();
        }
        if let Some(found) = super::header::find_shape(&source[span.clone()], shape) {
            found_spans.push(span.start + found.start..span.start + found.end);
        }
        at = next_line_start(source, at).max(end + 1);
    }
    found_spans
}

/// The template's validation function and its call in the main block, where they do no harm.
/// The validation function and its call in the `__main__` block: the part of the header fix
/// that is unsafe (the validator raises where the card is absent).
pub fn validation_edits(input: &FixInput) -> Vec<Edit> {
    let mut edits = Vec::new();
    validation_into(input, &mut edits);
    for e in &mut edits {
        if let Ok(text) = input.encoding.render(&e.replacement) {
            e.replacement = text;
        }
    }
    edits
}

fn validation_into(input: &FixInput, edits: &mut Vec<Edit>) {
    let (facts, nl) = (input.facts, input.newline);
    let header = input.ctx.header;
    let name = &header.validate_fn_name;
    let Some(main) = &facts.main_block else {
        return;
    };
    // The validator raises without the card: only where the program needs it anyway.
    if !facts.uses_torch
        || !facts.cuda_use
        || facts.cpu_path.is_some()
        || input.ctx.is_init
        || facts.forks.is_some()
    {
        return;
    }
    let has_validator = facts
        .defined_functions
        .iter()
        .chain(&facts.imported_names)
        .any(|f| f == name || looks_like_validator(f));
    if has_validator || main.calls.contains(name) {
        return;
    }
    let Some((line, indent)) = &main.first_stmt else {
        return;
    };
    let function = reindent(&header.validate_fn_text(nl), indent, header.style.indent);
    edits.push(Edit::insert(main.if_start, format!("{function}{nl}{nl}")));
    edits.push(Edit::insert(*line, format!("{indent}{name}(){nl}")));
}

/// GH206's edits: the header's env block as the first statements of the `__main__` block,
/// indented as the block is, after an `import os` there when the module binds no `os` of its
/// own; empty when the block has no statement on a line of its own.
pub fn main_block_env(facts: &Facts, header: &super::PythonHeader, nl: &str) -> Vec<Edit> {
    let Some((line, indent)) = facts
        .main_block
        .as_ref()
        .and_then(|m| m.first_stmt.as_ref())
    else {
        return Vec::new();
    };
    let bound = |module: &str| {
        facts.top.iter().any(|(_, kind)| match kind {
            TopKind::StdlibImport(names) | TopKind::Import(names) => {
                names.iter().any(|n| n == module)
            }
            _ => false,
        })
    };
    let mut text = String::new();
    for m in header.block_imports.iter().filter(|m| !bound(m)) {
        text.push_str(&format!("{indent}import {m}{nl}"));
    }
    // black and ruff format want a blank line after imports, in a block too.
    if !text.is_empty() {
        text.push_str(nl);
    }
    for line in &header.block {
        if !line.trim().is_empty() {
            text.push_str(indent);
            text.push_str(line);
        }
        text.push_str(nl);
    }
    // A blank line between the env and the program's own code, as the header has at the top.
    if !text.ends_with(&format!("{nl}{nl}")) {
        text.push_str(nl);
    }
    vec![Edit::insert(*line, text)]
}

/// `validate_rtx3090_configuration`, `validate_gpu`, `validate_mask`, `check_visible_env`: a
/// validator the file already has (the template's would be a second one).
fn looks_like_validator(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (lower.starts_with("validate") || lower.starts_with("check") || lower.starts_with("verify"))
        && ["gpu", "rtx", "cuda", "device", "mask", "visible", "card"]
            .iter()
            .any(|w| lower.contains(w))
}

/// The template indents with four spaces; the file's own unit replaces them: the indentation
/// of its `__main__` block, else the project's configured one (ruff format, `.editorconfig`).
fn reindent(function: &str, main_indent: &str, configured: Option<Indent>) -> String {
    let unit = if main_indent.is_empty() || main_indent.chars().any(|c| c != ' ' && c != '\t') {
        configured.map_or_else(|| "    ".to_string(), Indent::unit)
    } else {
        main_indent.to_string()
    };
    if unit == "    " {
        return function.to_string();
    }
    function
        .split_inclusive('\n')
        .map(|line| {
            let spaces = line.len() - line.trim_start_matches(' ').len();
            format!(
                "{}{}",
                unit.repeat(spaces / 4),
                &line[spaces - spaces % 4..]
            )
        })
        .collect()
}
