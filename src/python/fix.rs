//! The fix planner: the edits that bring a file to the policy. Byte ranges come from the
//! AST; inserted text comes from the template, with the file's own line endings.

use super::detect::{removes, RuleContext};
use super::facts::{line_start, Facts, TopKind};
use crate::edit::Edit;
use crate::finding::Finding;

pub struct FixInput<'a> {
    pub source: &'a str,
    pub facts: &'a Facts,
    pub findings: &'a [Finding],
    pub ctx: &'a RuleContext<'a>,
    pub newline: &'a str,
}

pub fn plan(input: &FixInput) -> Vec<Edit> {
    let mut edits: Vec<Edit> = Vec::new();
    let push = |e: Edit, edits: &mut Vec<Edit>| {
        if !edits.contains(&e) {
            edits.push(e);
        }
    };
    for write in &input.facts.env_writes {
        if removes(write, input.ctx) {
            for e in write.removal.iter().flatten() {
                push(e.clone(), &mut edits);
            }
        }
    }
    for finding in input.findings {
        if finding.rule.code.starts_with("GH1") {
            for e in &finding.edits {
                push(e.clone(), &mut edits);
            }
        }
    }
    if input.ctx.in_scope {
        header_edits(input, &mut edits);
        validation_edits(input, &mut edits);
    }
    edits
}

/// End of the preamble that stays above the header: shebang, encoding cookie, docstring,
/// `from __future__` imports. Returned as the start of the following line.
fn preamble_end(source: &str, facts: &Facts) -> usize {
    let mut end = 0;
    let mut lines = source.split_inclusive('\n');
    let mut offset = 0;
    for n in 0..2 {
        let Some(line) = lines.next() else { break };
        let text = line.trim_start_matches('\u{feff}').trim_start();
        let shebang = n == 0 && text.starts_with("#!");
        let cookie =
            text.starts_with('#') && (text.contains("coding:") || text.contains("coding="));
        offset += line.len();
        if shebang || cookie {
            end = offset;
        } else {
            break;
        }
    }
    for (range, kind) in &facts.top {
        if matches!(kind, TopKind::Docstring | TopKind::Future) {
            end = end.max(next_line_start(source, range.end));
        } else {
            break;
        }
    }
    end
}

fn next_line_start(source: &str, offset: usize) -> usize {
    source[offset..]
        .find('\n')
        .map_or(source.len(), |i| offset + i + 1)
}

fn header_edits(input: &FixInput, edits: &mut Vec<Edit>) {
    let (source, facts, nl) = (input.source, input.facts, input.newline);
    let header = input.ctx.header;
    let at = preamble_end(source, facts);
    let mut chunk = String::new();
    // A docstring is the first statement: without one, it goes above `from __future__`.
    if facts.docstring.is_none() {
        let first_stmt = facts.top.first().map(|(r, _)| line_start(source, r.start));
        let doc = format!("\"\"\"{nl}{}{nl}\"\"\"{nl}", header.docstring_marker);
        match first_stmt {
            Some(pos) if pos < at => edits.push(Edit::insert(pos, doc)),
            _ => chunk.push_str(&doc),
        }
    } else if let Some(edit) = docstring_marker_edit(source, facts, &header.docstring_marker, nl) {
        edits.push(edit);
    }
    match &input.ctx.site {
        Some(site) if site.valid => return,
        Some(site) => edits.push(Edit::delete(site.range.clone())),
        None => {}
    }
    if at == source.len() && !source.is_empty() && !source.ends_with('\n') {
        chunk.insert_str(0, nl);
    }
    if at > 0 || !chunk.is_empty() {
        chunk.push_str(nl);
    }
    for line in &facts.plain_import_os {
        edits.push(Edit::delete(line.clone()));
    }
    chunk.push_str("import os");
    chunk.push_str(nl);
    chunk.push_str(nl);
    chunk.push_str(&header.block_text(nl));
    let next_line = source[at..].split('\n').next().unwrap_or("");
    if at < source.len() && !next_line.trim().is_empty() {
        chunk.push_str(nl);
    }
    edits.push(Edit::insert(at, chunk));
}

/// Add the marker line to an existing docstring, before its closing quotes.
fn docstring_marker_edit(source: &str, facts: &Facts, marker: &str, nl: &str) -> Option<Edit> {
    let text = facts.docstring_text.as_ref()?;
    if text.contains(marker) {
        return None;
    }
    let range = facts.docstring.clone()?;
    let literal = &source[range.clone()];
    let triple = literal.ends_with("\"\"\"") || literal.ends_with("'''");
    let close = range.end - if triple { 3 } else { 1 };
    if !triple {
        return Some(Edit::insert(close, format!(" {marker}")));
    }
    let line_begin = line_start(source, close);
    if source[line_begin..close].trim().is_empty() && line_begin > range.start {
        // Closing quotes on their own line: the marker goes on the line above them.
        let indent = &source[line_begin..close];
        Some(Edit::insert(line_begin, format!("{indent}{marker}{nl}")))
    } else {
        Some(Edit::insert(close, format!("{nl}{marker}{nl}")))
    }
}

fn validation_edits(input: &FixInput, edits: &mut Vec<Edit>) {
    let (source, facts, nl) = (input.source, input.facts, input.newline);
    if !facts.uses_torch {
        return;
    }
    let header = input.ctx.header;
    let name = &header.validate_fn_name;
    if !facts.defined_functions.contains(name) {
        let function = reindent(&header.validate_fn_text(nl), source);
        let edit = match &facts.main_block {
            Some(main) => Edit::insert(main.if_start, format!("{function}{nl}{nl}")),
            None if source.ends_with('\n') => {
                Edit::insert(source.len(), format!("{nl}{nl}{function}"))
            }
            None => {
                let trimmed = function.strip_suffix(nl).unwrap_or(&function);
                Edit::insert(source.len(), format!("{nl}{nl}{nl}{trimmed}"))
            }
        };
        edits.push(edit);
    }
    if let Some(main) = &facts.main_block {
        if let (false, Some((line, indent))) = (main.calls.contains(name), &main.first_stmt) {
            edits.push(Edit::insert(*line, format!("{indent}{name}(){nl}")));
        }
    }
}

/// The template indents with four spaces; a file indented with tabs gets tabs.
fn reindent(function: &str, source: &str) -> String {
    let uses_tabs = source
        .lines()
        .find(|l| l.starts_with([' ', '\t']) && !l.trim().is_empty())
        .is_some_and(|l| l.starts_with('\t'));
    if !uses_tabs {
        return function.to_string();
    }
    function
        .split_inclusive('\n')
        .map(|line| {
            let spaces = line.len() - line.trim_start_matches(' ').len();
            format!(
                "{}{}",
                "\t".repeat(spaces / 4),
                &line[spaces - spaces % 4..]
            )
        })
        .collect()
}
