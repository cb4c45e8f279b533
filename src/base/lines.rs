//! Lines as Python (and the editors) see them: `\n`, `\r\n` and a lone `\r` all end a line,
//! so a CR-only file is edited line by line like any other.

/// The line ending the file uses (its first one), so inserted text matches it.
pub fn newline_of(source: &str) -> &'static str {
    let bytes = source.as_bytes();
    match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
        Some(i) if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') => "\r\n",
        Some(i) if bytes[i] == b'\r' => "\r",
        _ => "\n",
    }
}

/// Start of the line holding `offset`.
pub fn line_start(source: &str, offset: usize) -> usize {
    let offset = floor_char_boundary(source, offset);
    source[..offset].rfind(['\n', '\r']).map_or(0, |i| i + 1)
}

/// End of the line holding `offset`: the offset of its line ending (or the end of the text).
pub fn line_end(source: &str, offset: usize) -> usize {
    let offset = floor_char_boundary(source, offset);
    source[offset..]
        .find(['\n', '\r'])
        .map_or(source.len(), |i| offset + i)
}

fn floor_char_boundary(source: &str, mut offset: usize) -> usize {
    offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Only blanks (spaces, tabs, a BOM) between the start of its line and `at`. Scans back only
/// over those blanks: statements joined by `;` on one long line cost O(1) each, not O(line).
pub fn blank_before(source: &str, at: usize) -> bool {
    for c in source[..floor_char_boundary(source, at)].chars().rev() {
        match c {
            '\n' | '\r' => return true,
            ' ' | '\t' | '\u{feff}' => {}
            _ => return false,
        }
    }
    true
}

/// Nothing but blanks, then a comment or the line's end, from `at` on. Scans forward only over
/// the blanks (see [`blank_before`]).
pub fn only_comment_after(source: &str, at: usize) -> bool {
    for c in source[floor_char_boundary(source, at)..].chars() {
        match c {
            '\n' | '\r' | '#' => return true,
            c if c.is_whitespace() => {}
            _ => return false,
        }
    }
    true
}

/// Start of the line after the one holding `offset` (the end of the text on the last line).
pub fn next_line_start(source: &str, offset: usize) -> usize {
    let end = line_end(source, offset);
    let bytes = source.as_bytes();
    match bytes.get(end) {
        Some(b'\r') if bytes.get(end + 1) == Some(&b'\n') => end + 2,
        Some(_) => end + 1,
        None => end,
    }
}

/// Start of the line that ends right before `at` (a line start), line ending included.
pub fn prev_line_start(source: &str, at: usize) -> usize {
    let before = &source[..at];
    let body = before
        .strip_suffix("\r\n")
        .or_else(|| before.strip_suffix('\n'))
        .or_else(|| before.strip_suffix('\r'))
        .unwrap_or(before);
    line_start(source, body.len())
}

/// The lines of `source` as (start, end-without-terminator) ranges, lazily.
pub fn line_ranges(source: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= source.len() {
            return None;
        }
        let start = at;
        let end = line_end(source, at);
        at = next_line_start(source, at);
        if at == start {
            at = source.len();
        }
        Some((start, end))
    })
}

/// The text of each line of `source`, without its ending (`str::lines`, with a lone `\r` an
/// ending too).
pub fn texts(source: &str) -> impl Iterator<Item = &str> + '_ {
    line_ranges(source).map(move |(start, end)| &source[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_ending_counts() {
        assert_eq!(newline_of("a\r\nb"), "\r\n");
        assert_eq!(newline_of("a\rb\r"), "\r");
        assert_eq!(newline_of("a\nb"), "\n");
        assert_eq!(newline_of("a"), "\n");
        let src = "a = 1\rb = 2\rc = 3";
        assert_eq!(line_start(src, 8), 6);
        assert_eq!(line_end(src, 6), 11);
        assert_eq!(next_line_start(src, 6), 12);
        assert_eq!(
            line_ranges(src).collect::<Vec<_>>(),
            vec![(0, 5), (6, 11), (12, 17)]
        );
        assert_eq!(
            line_ranges("x\r\ny\r\n").collect::<Vec<_>>(),
            vec![(0, 1), (3, 4)]
        );
        assert_eq!(prev_line_start("ab\r\ncd\r\n\r\nef", 8), 4);
        assert_eq!(prev_line_start("ab\rcd\r", 3), 0);
        assert_eq!(texts("a\rb\r\nc\n").collect::<Vec<_>>(), ["a", "b", "c"]);
    }

    #[test]
    fn blanks_around_a_statement_are_read_only_up_to_the_line_ends() {
        let src = "a = 1\n  b = 2  # c\nd = 3; e = 4\r\u{feff}f\n";
        assert!(blank_before(src, 0));
        assert!(blank_before(src, 8));
        assert!(!blank_before(src, 26));
        assert!(blank_before(src, 35));
        assert!(only_comment_after(src, 13));
        assert!(!only_comment_after(src, 24));
        assert!(only_comment_after(src, 31));
        assert!(only_comment_after(src, src.len()));
    }
}
