//! Blank lines around the lines a plan deletes, as black and ruff format leave them: a deleted
//! run of lines between blank lines takes some with it, so the blank lines left are the larger
//! of the two gaps (one in a function, as the formatters allow there), never their sum.

use std::ops::Range;

use crate::base::edit::Edit;
use crate::base::lines::{line_end, line_start, next_line_start, prev_line_start};

/// Extend the whole-line deletions of `edits` over the blank lines they would leave doubled:
/// for each run of adjacent deletions with `above` blank lines over it and `below` under it,
/// `min(above, below)` of those under it go too (at the start of the file, one; at its end,
/// those above). Lines another edit touches are left alone.
pub(super) fn take_blank_lines(source: &str, edits: &mut [Edit]) {
    let whole_lines = |e: &Edit| {
        e.replacement.is_empty()
            && !e.range.is_empty()
            && line_start(source, e.range.start) == e.range.start
            && (e.range.end == source.len() || line_start(source, e.range.end) == e.range.end)
    };
    let mut order: Vec<usize> = (0..edits.len())
        .filter(|&i| whole_lines(&edits[i]))
        .collect();
    order.sort_by_key(|&i| edits[i].range.start);
    let mut i = 0;
    while i < order.len() {
        // A run: deletions that each start where the one before ends.
        let mut j = i;
        while j + 1 < order.len() && edits[order[j + 1]].range.start == edits[order[j]].range.end {
            j += 1;
        }
        let run = edits[order[i]].range.start..edits[order[j]].range.end;
        if let Some(taken) = blank_lines_to_take(source, &run) {
            let touched = edits.iter().enumerate().any(|(k, e)| {
                !order[i..=j].contains(&k)
                    && e.range.start <= taken.end
                    && taken.start <= e.range.end
            });
            if !touched {
                let (first, last) = (order[i], order[j]);
                if taken.start < run.start {
                    edits[first].range.start = taken.start;
                } else {
                    edits[last].range.end = taken.end;
                }
            }
        }
        i = j + 1;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::edit::apply;

    fn delete(source: &str, lines: &[&str]) -> String {
        let mut edits: Vec<Edit> = lines
            .iter()
            .map(|l| {
                let start = source.find(l).unwrap();
                Edit::delete(start..next_line_start(source, start))
            })
            .collect();
        take_blank_lines(source, &mut edits);
        apply(source, &edits).unwrap()
    }

    #[test]
    fn one_blank_line_left_between_blank_lines() {
        let src = "def f():\n    a = 1\n\n    x = 2\n\n    b = 3\n";
        assert_eq!(
            delete(src, &["    x = 2"]),
            "def f():\n    a = 1\n\n    b = 3\n"
        );
    }

    #[test]
    fn a_run_of_deletions_is_one_block() {
        let src = "a = 1\n\nx = 2\ny = 3\n\nb = 3\n";
        assert_eq!(delete(src, &["x = 2", "y = 3"]), "a = 1\n\nb = 3\n");
    }

    #[test]
    fn the_larger_gap_stays_at_module_level() {
        let src = "a = 1\n\n\nx = 2\n\n\ndef f():\n    pass\n";
        assert_eq!(delete(src, &["x = 2"]), "a = 1\n\n\ndef f():\n    pass\n");
    }

    #[test]
    fn no_blank_line_on_one_side_keeps_the_other() {
        let src = "a = 1\nx = 2\n\nb = 3\n";
        assert_eq!(delete(src, &["x = 2"]), "a = 1\n\nb = 3\n");
    }

    #[test]
    fn the_last_lines_take_the_blank_lines_above() {
        let src = "a = 1\n\nx = 2\n";
        assert_eq!(delete(src, &["x = 2"]), "a = 1\n");
    }

    #[test]
    fn crlf_lines() {
        let src = "a = 1\r\n\r\nx = 2\r\n\r\nb = 3\r\n";
        assert_eq!(delete(src, &["x = 2"]), "a = 1\r\n\r\nb = 3\r\n");
    }
}
