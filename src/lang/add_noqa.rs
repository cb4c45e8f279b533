//! `scan --add-noqa`: suppress every current finding with a `noqa` comment and a reason, so a
//! team can adopt the tool and burn the list down. A comment goes at the end of the reported
//! line; a finding about the whole file (line 1, no range) gets a file-level
//! `# gpu-homogenize: noqa: CODE` line at the end. The result is written only when the file's
//! code is unchanged: each comment must come out as a comment (never inside a string).

use std::collections::BTreeMap;

use ruff_python_ast::token::TokenKind;
use ruff_text_size::Ranged;

use crate::base::edit::{apply, Edit};
use crate::base::lines::{line_end, newline_of};
use crate::model::outcome::{FileOutcome, Language};

/// What `--add-noqa` appends after the codes.
pub const REASON: &str = "-- gpu-homogenize --add-noqa: known, to burn down";

/// The text with the comments added, or why not.
pub fn annotate(text: &str, file: &FileOutcome, language: Language) -> Result<String, String> {
    let marker = match language {
        Language::Python => "#",
        Language::Rust => "//",
    };
    let mut by_line: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    let mut whole_file: Vec<&str> = Vec::new();
    for f in file.findings.iter().filter(|f| f.severity != "info") {
        if f.whole_file {
            whole_file.push(&f.rule);
        } else {
            by_line.entry(f.line).or_default().push(&f.rule);
        }
    }
    let starts = line_starts(text);
    // Insertions in increasing order, each with where its comment starts inside it.
    let mut edits = Vec::new();
    let mut within = Vec::new();
    for (line, mut codes) in by_line {
        codes.sort();
        codes.dedup();
        let Some(&start) = starts.get(line - 1) else {
            return Err(format!("line {line} is past the end of the file"));
        };
        let end = line_end(text, start);
        within.push(2);
        edits.push(Edit::insert(
            end,
            format!("  {marker} noqa: {} {REASON}", codes.join(", ")),
        ));
    }
    if !whole_file.is_empty() {
        whole_file.sort();
        whole_file.dedup();
        let nl = newline_of(text);
        let lead = if text.is_empty() || text.ends_with(['\n', '\r']) {
            ""
        } else {
            nl
        };
        within.push(lead.len());
        edits.push(Edit::insert(
            text.len(),
            format!(
                "{lead}{marker} gpu-homogenize: noqa: {} {REASON}{nl}",
                whole_file.join(", ")
            ),
        ));
    }
    let mut shift = 0;
    let comments: Vec<usize> = edits
        .iter()
        .zip(&within)
        .map(|(e, w)| {
            let at = e.range.start + shift + w;
            shift += e.replacement.len();
            at
        })
        .collect();
    let new = apply(text, &edits).map_err(|e| e.to_string())?;
    if !same_code(text, &new, &comments, language) {
        return Err("a comment would not be a comment there (a string spans the line end)".into());
    }
    Ok(new)
}

/// Offsets where lines start, as Python counts lines (`\n`, `\r\n`, `\r`).
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                starts.push(i + 2);
                i += 2;
                continue;
            }
            b'\n' | b'\r' => starts.push(i + 1),
            _ => {}
        }
        i += 1;
    }
    starts
}

/// The new text is the old code plus comments: each insertion at `comments` (offsets into the
/// new text) lies inside a comment token, so no string took it in (Python); the token stream
/// is unchanged (Rust's lexer drops comments).
fn same_code(old: &str, new: &str, comments: &[usize], language: Language) -> bool {
    match language {
        Language::Python => {
            if ruff_python_parser::parse_module(old).is_err() {
                return false;
            }
            let Ok(parsed) = ruff_python_parser::parse_module(new) else {
                return false;
            };
            let ranges: Vec<_> = parsed
                .tokens()
                .iter()
                .filter(|t| t.kind() == TokenKind::Comment)
                .map(|t| t.start().to_usize()..t.end().to_usize())
                .collect();
            comments
                .iter()
                .all(|c| ranges.iter().any(|r| r.contains(c)))
        }
        Language::Rust => {
            let tokens = |text: &str| {
                text.parse::<proc_macro2::TokenStream>()
                    .ok()
                    .map(|t| t.to_string())
            };
            matches!((tokens(old), tokens(new)), (Some(a), Some(b)) if a == b)
        }
    }
}
