//! Edits that take a statement (or some items of a call) out of a file without touching
//! anything else: the statement's line goes with its trailing comment, nothing more.

use std::ops::Range;

use crate::base::edit::Edit;
use crate::base::lines::{line_end, line_start, next_line_start, prev_line_start};

/// Remove the statement at `stmt`: its whole line, trailing comment and line ending included.
/// With `as_pass`, replace it by `pass` instead (its block would otherwise be empty).
/// `None` when the statement shares its line with other code (`a = 1; os.environ[...] = ...`,
/// `if x: os.environ[...] = ...`) or continues with a backslash.
pub fn removal_edit(source: &str, stmt: Range<usize>, as_pass: bool) -> Option<Edit> {
    let mut edit = remove_line(source, stmt, as_pass.then_some("pass"), "#")?;
    if edit.replacement.is_empty() {
        edit.range = with_blank_lines(source, edit.range);
    }
    Some(edit)
}

/// A deletion of whole lines between blank lines, as black and ruff format leave it: with
/// `above` blank lines over it and `below` under it, `min(above, below)` of those under it go
/// too, so the larger gap stays (one in a function), never their sum; at the start of the file
/// one, at its end those above. Any other range is returned as is.
pub fn with_blank_lines(source: &str, range: Range<usize>) -> Range<usize> {
    let whole_lines = !range.is_empty()
        && line_start(source, range.start) == range.start
        && (range.end == source.len() || line_start(source, range.end) == range.end);
    match whole_lines
        .then(|| blank_lines_to_take(source, &range))
        .flatten()
    {
        Some(taken) => range.start.min(taken.start)..range.end.max(taken.end),
        None => range,
    }
}

/// The language-neutral form: `comment` starts a trailing comment (`#`, `//`), and
/// `placeholder` replaces the statement instead of removing its line. A statement that shares
/// its line with others through `;` goes with its separator; the body of a one-line compound
/// statement (`if x: stmt`) becomes the placeholder or `pass`.
pub fn remove_line(
    source: &str,
    stmt: Range<usize>,
    placeholder: Option<&str>,
    comment: &str,
) -> Option<Edit> {
    let line_start = line_start(source, stmt.start);
    let before = &source[line_start..stmt.start];
    let line_end = line_end(source, stmt.end);
    let after = source[stmt.end..line_end].trim_start_matches([' ', '\t']);
    let after_blank = after.is_empty() || after.starts_with(comment);
    let alone = before
        .chars()
        .all(|c| c == ' ' || c == '\t' || c == '\u{feff}' || c == '\x0c');
    // Rust statements carry their own `;`: only Python's separators are handled here.
    let python = comment == "#";
    if !alone && !python {
        return None;
    }
    if !alone {
        let tail = before.trim_end_matches([' ', '\t']);
        if after.starts_with(';') {
            let sep = line_end - after.len() + 1;
            let rest = source[sep..line_end].trim_start_matches([' ', '\t']);
            return Some(Edit::delete(stmt.start..line_end - rest.len()));
        }
        if tail.ends_with(';') && after_blank {
            return Some(Edit::delete(line_start + tail.len() - 1..stmt.end));
        }
        if tail.ends_with(':') && after_blank {
            return Some(Edit::replace(stmt, placeholder.unwrap_or("pass")));
        }
        return None;
    }
    if !after_blank {
        if python && after.starts_with(';') {
            let sep = line_end - after.len() + 1;
            let rest = source[sep..line_end].trim_start_matches([' ', '\t']);
            return Some(Edit::delete(stmt.start..line_end - rest.len()));
        }
        return None;
    }
    if let Some(placeholder) = placeholder {
        return Some(Edit::replace(stmt.start..line_end, placeholder));
    }
    // Keep a BOM that precedes the statement on the first line.
    let start = if before.starts_with('\u{feff}') {
        line_start + 3
    } else {
        line_start
    };
    Some(Edit::delete(start..next_line_start(source, stmt.end)))
}

/// The blank lines a deletion of `run` (whole lines) takes with it, if any.
fn blank_lines_to_take(source: &str, run: &Range<usize>) -> Option<Range<usize>> {
    let is_blank = |start: usize| source[start..line_end(source, start)].trim().is_empty();
    let mut above = Vec::new();
    let mut at = run.start;
    while at > 0 {
        let prev = prev_line_start(source, at);
        if !is_blank(prev) {
            break;
        }
        above.push(prev);
        at = prev;
    }
    if run.end >= source.len() {
        // The last lines of the file: the blank lines above them would end it.
        return above.last().map(|&first| first..run.start);
    }
    let mut below = Vec::new();
    let mut at = run.end;
    while at < source.len() && is_blank(at) {
        at = next_line_start(source, at);
        below.push(at);
    }
    let take = if run.start == 0 { 1 } else { above.len() }.min(below.len());
    (take > 0).then(|| run.end..below[take - 1])
}

/// Delete the items flagged `true` from a comma-separated list (dict items, keyword
/// arguments), keeping the commas of the others right. Not every item may be flagged.
pub fn delete_items(items: &[(Range<usize>, bool)]) -> Vec<Edit> {
    let mut edits = Vec::new();
    let mut i = 0;
    while i < items.len() {
        if !items[i].1 {
            i += 1;
            continue;
        }
        let run_start = i;
        while i < items.len() && items[i].1 {
            i += 1;
        }
        let run_end = i - 1;
        if i < items.len() {
            // A run followed by a kept item: delete up to the next item's start.
            edits.push(Edit::delete(items[run_start].0.start..items[i].0.start));
        } else if run_start > 0 {
            // A run at the end: delete from the end of the kept item before it.
            edits.push(Edit::delete(
                items[run_start - 1].0.end..items[run_end].0.end,
            ));
        }
    }
    edits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::edit::apply;

    fn remove(source: &str, needle: &str, as_pass: bool) -> Option<String> {
        let start = source.find(needle).unwrap();
        let edit = removal_edit(source, start..start + needle.len(), as_pass)?;
        Some(apply(source, &[edit]).unwrap())
    }

    #[test]
    fn removes_the_line_with_its_trailing_comment() {
        let src = "a = 1\nos.environ['X'] = '0'  # ancien réglage\r\nb = 2\n";
        assert_eq!(
            remove(src, "os.environ['X'] = '0'", false).unwrap(),
            "a = 1\nb = 2\n"
        );
    }

    #[test]
    fn takes_a_statement_out_of_a_shared_line() {
        assert_eq!(
            remove(
                "a = 1; os.environ['X'] = '0'\n",
                "os.environ['X'] = '0'",
                false
            )
            .unwrap(),
            "a = 1\n"
        );
        assert_eq!(
            remove(
                "os.environ['X'] = '0'; a = 1\n",
                "os.environ['X'] = '0'",
                false
            )
            .unwrap(),
            "a = 1\n"
        );
        assert_eq!(
            remove(
                "if x: os.environ['X'] = '0'\n",
                "os.environ['X'] = '0'",
                false
            )
            .unwrap(),
            "if x: pass\n"
        );
        assert_eq!(
            remove(
                "a = 1\ros.environ['X'] = '0'\rb = 2\r",
                "os.environ['X'] = '0'",
                false
            )
            .unwrap(),
            "a = 1\rb = 2\r"
        );
    }

    #[test]
    fn leaves_pass_in_a_block_it_would_empty() {
        let src = "def f():\n\tos.environ['X'] = '0'  # note\n";
        assert_eq!(
            remove(src, "os.environ['X'] = '0'", true).unwrap(),
            "def f():\n\tpass\n"
        );
    }

    #[test]
    fn last_line_without_newline() {
        assert_eq!(
            remove("a = 1\nos.putenv('X', '0')", "os.putenv('X', '0')", false).unwrap(),
            "a = 1\n"
        );
    }

    fn delete(source: &str, line: &str) -> String {
        let start = source.find(line).unwrap();
        let edit = removal_edit(source, start..start + line.len(), false).unwrap();
        apply(source, &[edit]).unwrap()
    }

    #[test]
    fn one_blank_line_left_between_blank_lines() {
        let src = "def f():\n    a = 1\n\n    x = 2\n\n    b = 3\n";
        assert_eq!(delete(src, "x = 2"), "def f():\n    a = 1\n\n    b = 3\n");
        let crlf = "a = 1\r\n\r\nx = 2\r\n\r\nb = 3\r\n";
        assert_eq!(delete(crlf, "x = 2"), "a = 1\r\n\r\nb = 3\r\n");
    }

    #[test]
    fn the_larger_gap_stays_at_module_level() {
        let src = "a = 1\n\n\nx = 2\n\n\ndef f():\n    pass\n";
        assert_eq!(delete(src, "x = 2"), "a = 1\n\n\ndef f():\n    pass\n");
        let one_side = "a = 1\nx = 2\n\nb = 3\n";
        assert_eq!(delete(one_side, "x = 2"), "a = 1\n\nb = 3\n");
    }

    #[test]
    fn the_last_lines_take_the_blank_lines_above() {
        assert_eq!(delete("a = 1\n\nx = 2\n", "x = 2"), "a = 1\n");
    }

    #[test]
    fn deletes_runs_of_items() {
        let src = "{'A': 1, 'B': 2, 'C': 3}";
        let items = [(1..7, true), (9..15, false), (17..23, true)];
        let edits = delete_items(&items);
        assert_eq!(apply(src, &edits).unwrap(), "{'B': 2}");
    }
}
