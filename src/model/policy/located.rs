//! Where a value of the config is in its file, and the snippet an error shows of it, as ruff
//! shows one: the line, its number in a gutter, carets under the value.

use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::{bounded, Key, MESSAGE_CHARS};

/// The byte range of the value at `path` (keys below `prefix`, e.g. `tool.gpu-homogenize`) in
/// the TOML `text`; when the value is not written there (a default), the deepest table or key
/// on the way that is. `None` when not even the first key is.
pub fn span_of(text: &str, prefix: &[&'static str], path: &[Key]) -> Option<Range<usize>> {
    let doc = DeTable::parse(text).ok()?;
    let mut table: &DeTable<'_> = doc.get_ref();
    let mut found: Option<Range<usize>> = None;
    let mut keys = prefix
        .iter()
        .map(|k| Key::Name(k))
        .chain(path.iter().copied())
        .peekable();
    let mut value: Option<&Spanned<DeValue<'_>>> = None;
    while let Some(key) = keys.next() {
        let next = match (key, value.map(Spanned::get_ref)) {
            (Key::Name(name), None) => table.get_key_value(name),
            (Key::Name(name), Some(DeValue::Table(t))) => {
                table = t;
                table.get_key_value(name)
            }
            (Key::Index(i), Some(DeValue::Array(items))) => {
                value = items.get(i);
                match value {
                    Some(v) => {
                        found = Some(v.span());
                        continue;
                    }
                    None => break,
                }
            }
            _ => break,
        };
        let Some((k, v)) = next else { break };
        found = Some(if keys.peek().is_some() {
            k.span()
        } else {
            v.span()
        });
        value = Some(v);
    }
    found.filter(|s| s.end <= text.len())
}

/// `line L, column C: message`, then the line with `range` underlined, as ruff prints a config
/// error; the line is escaped and at most [`super::EXCERPT_CHARS`] characters of it are shown.
pub fn located(text: &str, range: Range<usize>, message: &str) -> String {
    let what = bounded(message, MESSAGE_CHARS);
    let index = crate::base::line_index::LineIndex::new(text);
    let (line, column) = index.line_column(range.start);
    let start = crate::base::lines::line_start(text, range.start);
    let end = crate::base::lines::line_end(text, range.start);
    let end_of_mark = range.end.clamp(range.start, end);
    // Long lines: the excerpt starts a little before the value, so the carets stay under it.
    let long = text[start..end].chars().count() > super::EXCERPT_CHARS;
    let window = if long && text[start..range.start].chars().count() > 40 {
        let skip = text[start..range.start].chars().count() - 20;
        let at = text[start..]
            .char_indices()
            .nth(skip)
            .map_or(range.start, |(i, _)| start + i);
        (at, "…")
    } else {
        (start, "")
    };
    let (from, lead) = window;
    let before = format!("{lead}{}", super::printable_text(&text[from..range.start]));
    let marked = super::printable_text(&text[range.start..end_of_mark]);
    let shown = super::excerpt(&format!(
        "{}{}",
        &text[from..range.start],
        &text[range.start..end]
    ));
    let shown = format!("{lead}{shown}");
    let room = super::EXCERPT_CHARS
        .saturating_sub(before.chars().count())
        .max(1);
    let carets = marked.chars().count().clamp(1, room);
    let gutter = " ".repeat(line.to_string().len());
    format!(
        "line {line}, column {column}: {what}\n{gutter} |\n{line} | {shown}\n{gutter} | {}{}",
        " ".repeat(before.chars().count()),
        "^".repeat(carets)
    )
}
