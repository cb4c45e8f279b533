//! Byte-range edits: the only way a file is ever changed.

use std::ops::Range;

/// Replace the bytes in `range` with `replacement`. An insertion has an empty range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub range: Range<usize>,
    pub replacement: String,
}

impl Edit {
    pub fn insert(at: usize, text: impl Into<String>) -> Edit {
        Edit {
            range: at..at,
            replacement: text.into(),
        }
    }

    pub fn delete(range: Range<usize>) -> Edit {
        Edit {
            range,
            replacement: String::new(),
        }
    }

    pub fn replace(range: Range<usize>, text: impl Into<String>) -> Edit {
        Edit {
            range,
            replacement: text.into(),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EditError {
    #[error("edits overlap at bytes {0:?} and {1:?}")]
    Overlap(Range<usize>, Range<usize>),
    #[error("edit {0:?} is outside the file ({1} bytes) or not on a character boundary")]
    OutOfBounds(Range<usize>, usize),
}

/// Apply `edits` to `source`. Edits must not overlap; insertions at the same offset keep
/// their given order. Bytes outside the edited ranges are copied unchanged.
/// Where an offset of the text `apply` made was in the original: the start of the edit for an
/// offset inside inserted text. `edits` as given to `apply` (valid, non-overlapping).
pub fn original_offset(edits: &[Edit], new_offset: usize) -> usize {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start, e.range.end));
    // `delta`: how much longer the new text is than the original, before the current edit.
    let mut delta: isize = 0;
    for e in sorted {
        let new_start = (e.range.start as isize + delta) as usize;
        if new_offset < new_start {
            break;
        }
        if new_offset < new_start + e.replacement.len() {
            return e.range.start;
        }
        delta += e.replacement.len() as isize - e.range.len() as isize;
    }
    (new_offset as isize - delta).max(0) as usize
}

pub fn apply(source: &str, edits: &[Edit]) -> Result<String, EditError> {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    // Stable sort: insertions at one offset stay in the order the planner gave them.
    sorted.sort_by_key(|e| (e.range.start, e.range.end));
    for e in &sorted {
        let ok = e.range.start <= e.range.end
            && e.range.end <= source.len()
            && source.is_char_boundary(e.range.start)
            && source.is_char_boundary(e.range.end);
        if !ok {
            return Err(EditError::OutOfBounds(e.range.clone(), source.len()));
        }
    }
    for pair in sorted.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let overlaps = a.range.end > b.range.start
            || (a.range.start == b.range.start && !a.range.is_empty() && !b.range.is_empty());
        if overlaps {
            return Err(EditError::Overlap(a.range.clone(), b.range.clone()));
        }
    }
    let mut out = String::with_capacity(source.len() + 256);
    let mut cursor = 0;
    for e in sorted {
        out.push_str(&source[cursor..e.range.start]);
        out.push_str(&e.replacement);
        cursor = e.range.end;
    }
    out.push_str(&source[cursor..]);
    Ok(out)
}

/// A unified diff between `old` and `new`, labelled with `path` (escaped, see
/// [`crate::model::outcome::escape`]), as `git diff` prints it: an escaped name is quoted.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    // Myers is quadratic in the number of changed lines: past the deadline `similar` gives a
    // correct, less minimal diff, so a file with 100k rewrites still shows in a second.
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(500))
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(
            &crate::base::escape::quoted(&format!("a/{path}")),
            &crate::base::escape::quoted(&format!("b/{path}")),
        )
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_of_the_result_map_back_to_the_original() {
        let src = "abcdef";
        let edits = [Edit::replace(2..4, "Z"), Edit::insert(0, "XX")];
        let new = apply(src, &edits).unwrap();
        assert_eq!(new, "XXabZef");
        let back: Vec<usize> = (0..=new.len())
            .map(|o| original_offset(&edits, o))
            .collect();
        assert_eq!(back, [0, 0, 0, 1, 2, 4, 5, 6]);
    }

    #[test]
    fn applies_back_to_front_and_keeps_the_rest() {
        let src = "a = 'cuda:1'\r\nb = 2\n";
        let edits = vec![Edit::replace(10..11, "0"), Edit::insert(0, "import os\r\n")];
        assert_eq!(
            apply(src, &edits).unwrap(),
            "import os\r\na = 'cuda:0'\r\nb = 2\n"
        );
    }

    #[test]
    fn refuses_overlaps() {
        let err = apply("abcdef", &[Edit::delete(0..3), Edit::delete(2..4)]).unwrap_err();
        assert_eq!(err, EditError::Overlap(0..3, 2..4));
    }

    #[test]
    fn insertions_at_one_offset_keep_their_order() {
        let edits = vec![Edit::insert(1, "x"), Edit::insert(1, "y")];
        assert_eq!(apply("ab", &edits).unwrap(), "axyb");
    }

    #[test]
    fn refuses_split_characters() {
        assert!(matches!(
            apply("é", &[Edit::delete(0..1)]),
            Err(EditError::OutOfBounds(..))
        ));
    }
}
