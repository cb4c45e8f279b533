//! Line and column of byte offsets, without rescanning the text for each one: the starts of
//! the lines once, then a binary search (a file with 32k findings stays linear).

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
        let starts = std::iter::once(0)
            .chain(
                text.bytes()
                    .enumerate()
                    .filter(|&(_, b)| b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .collect();
        LineIndex {
            text,
            starts,
            last: Cell::new((usize::MAX, 0)),
        }
    }

    /// 1-based line and column (in characters) of `offset`, as `finding::line_column`.
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
        self.text[start..end].trim_end_matches('\r')
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::line_column;

    #[test]
    fn agrees_with_the_slow_lookup() {
        let src = "é = 1\nx = 'cuda:1'\r\n\n  y\u{1F600}z = 2";
        let index = LineIndex::new(src);
        for offset in (0..=src.len() + 2).chain((0..src.len()).rev()) {
            assert_eq!(
                index.line_column(offset),
                line_column(src, offset),
                "{offset}"
            );
        }
    }
}
