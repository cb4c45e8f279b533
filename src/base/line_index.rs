//! Line and column of byte offsets, without rescanning the text for each one: the starts of
//! the lines once, then a binary search (a file with 32k findings stays linear). The one line
//! model of the tool: `\n`, `\r\n` and a lone `\r` each end a line (as Python, rustc and the
//! editors count them, and as [`crate::base::lines`] edits them), so a CR-only file reports each
//! finding on its own line. Every line or column a user reads comes from here.

use std::cell::Cell;

pub struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// The last answer `(offset, column)`: columns of ascending offsets on one long line
    /// are counted from there, not from the line start.
    last: Cell<(usize, usize)>,
}

impl<'a> LineIndex<'a> {
    pub fn new(text: &'a str) -> LineIndex<'a> {
        let bytes = text.as_bytes();
        let starts = std::iter::once(0)
            .chain(
                bytes
                    .iter()
                    .enumerate()
                    .filter(|&(i, &b)| {
                        b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n'))
                    })
                    .map(|(i, _)| i + 1),
            )
            .collect();
        LineIndex {
            text,
            starts,
            last: Cell::new((usize::MAX, 0)),
        }
    }

    /// 1-based line and column (in characters) of `offset`.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while offset > 0 && !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        let (last_offset, last_column) = self.last.get();
        let column = if last_offset != usize::MAX && last_offset >= start && last_offset <= offset {
            last_column + self.text[last_offset..offset].chars().count()
        } else {
            self.text[start..offset].chars().count() + 1
        };
        self.last.set((offset, column));
        (line, column)
    }
}

impl LineIndex<'_> {
    /// Where the 1-based `line` starts (`None` past the end).
    pub fn offset_of_line(&self, line: usize) -> Option<usize> {
        self.starts.get(line.checked_sub(1)?).copied()
    }

    /// The 1-based line holding `offset`.
    pub fn line(&self, offset: usize) -> usize {
        self.line_column(offset).0
    }

    /// The line holding `offset`, without its line ending: found by a binary search, so a long
    /// line is not rescanned for each of its findings.
    pub fn line_of(&self, offset: usize) -> &str {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        let end = self
            .starts
            .get(line)
            .map_or(self.text.len(), |&next| next - 1);
        // `end` is the `\n` of a `\r\n`, or a lone `\r`: what is left of the ending goes.
        self.text[start..end].trim_end_matches('\r')
    }
}

/// 1-based line and column (in characters) of `offset` in `text`: one lookup (a caller with
/// many offsets keeps a [`LineIndex`]).
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    // Only the text before `offset` is read, and nothing is kept: a caller with one offset
    // pays for its prefix, never for the whole file.
    let mut offset = offset.min(text.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let bytes = text.as_bytes();
    let (mut line, mut start) = (1, 0);
    for (i, &b) in bytes[..offset].iter().enumerate() {
        if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
            line += 1;
            start = i + 1;
        }
    }
    (line, text[start..offset].chars().count() + 1)
}

/// The 1-based line of `offset` in `text`.
pub fn line_of_offset(text: &str, offset: usize) -> usize {
    line_column(text, offset).0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Line and column counted from scratch: each `\n`, and each `\r` not before a `\n`, ends
    /// a line.
    fn slow(src: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(src.len());
        while !src.is_char_boundary(offset) {
            offset -= 1;
        }
        let b = src.as_bytes();
        let ends: Vec<usize> = (0..offset)
            .filter(|&i| b[i] == b'\n' || (b[i] == b'\r' && b.get(i + 1) != Some(&b'\n')))
            .collect();
        let start = ends.last().map_or(0, |i| i + 1);
        (ends.len() + 1, src[start..offset].chars().count() + 1)
    }

    #[test]
    fn agrees_with_the_slow_lookup() {
        let src = "é = 1\nx = 'cuda:1'\r\n\n  y\u{1F600}z = 2\ra\r\rb\r\n";
        let index = LineIndex::new(src);
        for offset in (0..=src.len() + 2).chain((0..src.len()).rev()) {
            assert_eq!(index.line_column(offset), slow(src, offset), "{offset}");
            assert_eq!(line_column(src, offset), slow(src, offset), "{offset}");
        }
    }

    #[test]
    fn every_line_ending_ends_a_line() {
        for (src, line) in [
            ("a\nb\nc\n", 3),
            ("a\r\nb\r\nc\r\n", 3),
            ("a\rb\rc\r", 3),
            ("a\r\rb\nc", 4),
        ] {
            let index = LineIndex::new(src);
            let c = src.find('c').unwrap();
            assert_eq!(index.line_column(c), (line, 1), "{src:?}");
            assert_eq!(index.line_of(c), "c", "{src:?}");
        }
        assert_eq!(LineIndex::new("a\rb").line_of(0), "a");
        assert_eq!(LineIndex::new("a\r\nb").line_of(0), "a");
    }
}
