//! Edits that take a statement (or some items of a call) out of a file without touching
//! anything else: the statement's line goes with its trailing comment, nothing more.

use std::ops::Range;

use crate::edit::Edit;

/// Remove the statement at `stmt`: its whole line, trailing comment and line ending included.
/// With `as_pass`, replace it by `pass` instead (its block would otherwise be empty).
/// `None` when the statement shares its line with other code (`a = 1; os.environ[...] = ...`,
/// `if x: os.environ[...] = ...`) or continues with a backslash.
pub fn removal_edit(source: &str, stmt: Range<usize>, as_pass: bool) -> Option<Edit> {
    remove_line(source, stmt, as_pass.then_some("pass"), "#")
}

/// The language-neutral form: `comment` starts a trailing comment (`#`, `//`), and
/// `placeholder` replaces the statement instead of removing its line.
pub fn remove_line(
    source: &str,
    stmt: Range<usize>,
    placeholder: Option<&str>,
    comment: &str,
) -> Option<Edit> {
    let line_start = source[..stmt.start].rfind('\n').map_or(0, |i| i + 1);
    let before = &source[line_start..stmt.start];
    if !before
        .chars()
        .all(|c| c == ' ' || c == '\t' || c == '\u{feff}' || c == '\x0c')
    {
        return None;
    }
    let line_end = source[stmt.end..]
        .find('\n')
        .map_or(source.len(), |i| stmt.end + i);
    let after = source[stmt.end..line_end].trim_start_matches([' ', '\t']);
    let after = after.strip_suffix('\r').unwrap_or(after);
    if !(after.is_empty() || after.starts_with(comment)) {
        return None;
    }
    if let Some(placeholder) = placeholder {
        let comment_end = source[..line_end]
            .strip_suffix('\r')
            .map_or(line_end, str::len);
        return Some(Edit::replace(stmt.start..comment_end, placeholder));
    }
    // Keep a BOM that precedes the statement on the first line.
    let start = if before.starts_with('\u{feff}') {
        line_start + 3
    } else {
        line_start
    };
    let end = (line_end + 1).min(source.len());
    Some(Edit::delete(start..end))
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
    use crate::edit::apply;

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
    fn refuses_shared_lines() {
        assert!(remove(
            "a = 1; os.environ['X'] = '0'\n",
            "os.environ['X'] = '0'",
            false
        )
        .is_none());
        assert!(remove(
            "os.environ['X'] = '0'; a = 1\n",
            "os.environ['X'] = '0'",
            false
        )
        .is_none());
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

    #[test]
    fn deletes_runs_of_items() {
        let src = "{'A': 1, 'B': 2, 'C': 3}";
        let items = [(1..7, true), (9..15, false), (17..23, true)];
        let edits = delete_items(&items);
        assert_eq!(apply(src, &edits).unwrap(), "{'B': 2}");
    }
}
