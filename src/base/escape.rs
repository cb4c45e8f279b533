//! Text from the tree as every output prints it. A tree under review is a stranger's: its file
//! names, source lines, config values (phase names) and journal are printed by every format,
//! and what a terminal, a CI log or a renderer would act on rather than show is escaped here,
//! once: control characters (a newline, an ANSI escape), characters a reader cannot see or
//! that reorder the text around them (Trojan Source), and the two ways a GitHub Actions log
//! line starts a workflow command.
//!
//! - [`printable`]: free text (a message quoting a source line, a phase name, a config value,
//!   an error); every format passes such text through it.
//! - [`lines`]: the same, line by line, for text the tool lays out over several lines (an
//!   error with a snippet of the file it quotes).
//! - [`name`]: a file name, git-style (reversible: `\` and `"` escaped too, then quoted).
//! - [`write_json`]/[`json`]: JSON (and SARIF) with the same characters as `\uXXXX` escapes:
//!   the same data for a script, nothing raw in a log.

use std::borrow::Cow;
use std::ffi::OsStr;

/// Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): invisible characters,
/// every Bidi_Control character among them (U+061C, U+200E/F, U+202A–E, U+2066–9).
const DEFAULT_IGNORABLE: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),
    ('\u{034F}', '\u{034F}'),
    ('\u{061C}', '\u{061C}'),
    ('\u{115F}', '\u{1160}'),
    ('\u{17B4}', '\u{17B5}'),
    ('\u{180B}', '\u{180F}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2060}', '\u{206F}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{FE00}', '\u{FE0F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFA0}', '\u{FFA0}'),
    ('\u{FFF0}', '\u{FFF8}'),
    ('\u{1BCA0}', '\u{1BCA3}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0000}', '\u{E0FFF}'),
];

/// Whether `c` is never printed as it is: a control character (C0, DEL, C1), a line or
/// paragraph separator, or a Default_Ignorable code point (zero-width, bidi controls, tags).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}')
        || DEFAULT_IGNORABLE
            .iter()
            .any(|&(low, high)| (low..=high).contains(&c))
}

/// Whether the character at byte `i` of `text` would make a workflow command of the log line:
/// the runner reads `::` after leading whitespace (v2) and `##[` anywhere (v1), see
/// actions/runner src/Runner.Common/ActionCommand.cs (TryParseV2: TrimStart, StartsWith "::";
/// TryParse: IndexOf "##[").
fn starts_command(text: &str, i: usize) -> bool {
    let rest = &text[i..];
    let lead = text.len() - text.trim_start().len();
    (i == lead && rest.starts_with("::")) || rest.starts_with("##[")
}

/// What else is escaped: names escape `\` and `"` too (so that an escape is never mistaken for
/// the name's own text); a source line keeps its tabs.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Name,
    Source,
}

/// Whether the character `c` at byte `i` of `text` is written as an escape.
fn escaped(kind: Kind, text: &str, i: usize, c: char) -> bool {
    match c {
        '\t' if kind == Kind::Source => false,
        ':' | '#' => starts_command(text, i),
        c => is_hidden(c),
    }
}

/// Whether `text` prints differently from its bytes.
fn needs_escape(text: &str, kind: Kind) -> bool {
    text.char_indices()
        .any(|(i, c)| escaped(kind, text, i, c) || (kind == Kind::Name && c == '\\'))
}

/// `text` as `kind` is written, into `out`.
fn push_visible(out: &mut String, text: &str, kind: Kind) {
    for (i, c) in text.char_indices() {
        if kind == Kind::Name && matches!(c, '\\' | '"') {
            out.push('\\');
            out.push(c);
        } else if escaped(kind, text, i, c) {
            push_escape(out, c);
        } else {
            out.push(c);
        }
    }
}

/// Text from the tree as every output prints it: its hidden characters ([`is_hidden`]) written
/// as git writes them in a path (`\n`, `\t`, `\033`, `\342\200\256`…), and a workflow command
/// it would start (`::` first, `##[` anywhere) broken by escaping its first character (`\072`,
/// `\043`). Ordinary text is returned as it is.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !needs_escape(text, Kind::Text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    push_visible(&mut out, text, Kind::Text);
    Cow::Owned(out)
}

/// Text the tool lays out over several lines, [`printable`] line by line: its newlines kept, a
/// line of it never starting a workflow command.
pub fn lines(text: &str) -> Cow<'_, str> {
    by_line(text, Kind::Text)
}

/// Lines of a source as a diff shows them: as [`lines`], with their layout kept (a tab, and a
/// CR that ends a line of a CRLF file). A line with an escape no longer applies as a patch;
/// ordinary lines are kept byte for byte.
pub fn source_lines(text: &str) -> Cow<'_, str> {
    by_line(text, Kind::Source)
}

fn by_line(text: &str, kind: Kind) -> Cow<'_, str> {
    if !text
        .split('\n')
        .any(|line| needs_escape(layout(line, kind).0, kind))
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let (body, cr) = layout(line, kind);
        push_visible(&mut out, body, kind);
        out.push_str(cr);
    }
    Cow::Owned(out)
}

/// A line and the CR that ends it, where `kind` keeps one (a source's CRLF line).
fn layout(line: &str, kind: Kind) -> (&str, &str) {
    match line.strip_suffix('\r') {
        Some(body) if kind == Kind::Source => (body, "\r"),
        _ => (line, ""),
    }
}

/// A name as text, escaped the way git quotes paths (`core.quotePath=false`): bytes that are not
/// UTF-8 and hidden characters (a newline, an ANSI escape, a bidi override, which a terminal or a
/// CI log would act on) are written `\n`, `\t`, `\033`, `\377`…, as is the first character of
/// a workflow command ([`printable`]); and then `\` and `"` are escaped too (a name with a `\`
/// always is), so that an escaped name is never mistaken for a plain one. Other text, and a name
/// that needs no escape, is kept as it is.
pub fn name(name: &OsStr) -> String {
    // The bytes themselves on unix; WTF-8 on Windows (UTF-8 for every name that is Unicode).
    let bytes = name.as_encoded_bytes();
    if let Ok(text) = std::str::from_utf8(bytes) {
        if !needs_escape(text, Kind::Name) {
            return text.to_string();
        }
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        push_visible(&mut out, chunk.valid(), Kind::Name);
        for b in chunk.invalid() {
            out.push_str(&format!("\\{b:03o}"));
        }
    }
    out
}

/// A name as a person reads it: in double quotes when it had to be escaped, as git shows it.
pub fn quoted(escaped: &str) -> Cow<'_, str> {
    if escaped.contains('\\') {
        Cow::Owned(format!("\"{escaped}\""))
    } else {
        Cow::Borrowed(escaped)
    }
}

/// `c` as a C escape: git's `\a\b\t\n\v\f\r`, else each of its UTF-8 bytes in octal.
fn push_escape(out: &mut String, c: char) {
    let short = match c {
        '\u{7}' => "\\a",
        '\u{8}' => "\\b",
        '\t' => "\\t",
        '\n' => "\\n",
        '\u{b}' => "\\v",
        '\u{c}' => "\\f",
        '\r' => "\\r",
        c => {
            let mut buf = [0; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\{b:03o}"));
            }
            return;
        }
    };
    out.push_str(short);
}

/// `value` as pretty-printed JSON, with [`write_json`]'s escapes.
pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(128);
    write_json(&mut out, value)?;
    // Only ASCII is added to what serde_json wrote, which is UTF-8.
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// `value` as pretty-printed JSON into `writer`, its strings' hidden characters written
/// `\uXXXX` and `##[` as `#\u0023[`: the same data, nothing a terminal or a CI log acts on
/// (serde_json escapes only C0, `"` and `\`). A line of it never starts with `::`: every line
/// starts with a bracket, a brace or a quote.
pub fn write_json<W: std::io::Write, T: serde::Serialize + ?Sized>(
    writer: W,
    value: &T,
) -> serde_json::Result<()> {
    let formatter = VisibleJson(serde_json::ser::PrettyFormatter::new());
    value.serialize(&mut serde_json::Serializer::with_formatter(
        writer, formatter,
    ))
}

/// serde_json's pretty formatter, with [`write_json`]'s escapes in strings.
struct VisibleJson<'a>(serde_json::ser::PrettyFormatter<'a>);

impl serde_json::ser::Formatter for VisibleJson<'_> {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        // A fragment ends only where serde_json escapes a character, so `##[` is never split.
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            let command =
                c == '#' && fragment[..i].ends_with('#') && fragment[i..].starts_with("#[");
            if !(is_hidden(c) || command) {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[start..i])?;
            let mut units = [0; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            start = i + c.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_text_is_kept() {
        for text in [
            "a.py",
            "Core modules",
            "plain \"é\" ✅ 日本",
            "a::b",
            "# [x]",
            "#[cfg]",
        ] {
            assert!(matches!(printable(text), Cow::Borrowed(_)), "{text}");
            assert_eq!(name(OsStr::new(text)), text);
        }
    }

    #[test]
    fn hidden_characters_are_written_as_escapes() {
        assert_eq!(
            printable("a\u{202E}b\u{200B}c"),
            "a\\342\\200\\256b\\342\\200\\213c"
        );
        assert_eq!(printable("x\x1b[31my\n"), "x\\033[31my\\n");
        assert_eq!(
            printable("\u{FEFF}\u{E0041}\u{2028}"),
            "\\357\\273\\277\\363\\240\\201\\201\\342\\200\\250"
        );
        assert_eq!(printable("\u{9b}"), "\\302\\233");
    }

    #[test]
    fn no_workflow_command_survives() {
        assert_eq!(printable("::error::x"), "\\072:error::x");
        assert_eq!(
            printable("  ::warning file=a::b"),
            "  \\072:warning file=a::b"
        );
        assert_eq!(
            printable("a ##[error]b ###[c"),
            "a \\043#[error]b #\\043#[c"
        );
        assert_eq!(printable("x\n::error::y"), "x\\n::error::y");
        assert_eq!(
            lines("TOML error\n  |\n1 | ::error::y\n::add-mask::z"),
            "TOML error\n  |\n1 | ::error::y\n\\072:add-mask::z"
        );
    }

    #[test]
    fn source_lines_keep_their_layout() {
        let diff = "@@ -1 +1 @@\n-\tx = 1\r\n+\tx = 2\r\n";
        assert!(matches!(source_lines(diff), Cow::Borrowed(_)));
        assert_eq!(
            source_lines(" ::error::x\r\n+a\u{1b}[1m\t##[b]\n"),
            " \\072:error::x\r\n+a\\033[1m\t\\043#[b]\n"
        );
    }

    #[test]
    fn names_are_quoted_as_git_does() {
        #[cfg(unix)]
        assert_eq!(
            name(std::os::unix::ffi::OsStrExt::from_bytes(b"a\xffb.py")),
            "a\\377b.py"
        );
        assert_eq!(
            name(OsStr::new("a\u{202E}\"b.py")),
            "a\\342\\200\\256\\\"b.py"
        );
        assert_eq!(
            name(OsStr::new("::error file=x::p.py")),
            "\\072:error file=x::p.py"
        );
        assert_eq!(quoted(&name(OsStr::new("a\\b"))), "\"a\\\\b\"");
        assert_eq!(
            name(OsStr::new("a\n\u{1b}[1m\"\\.py")),
            "a\\n\\033[1m\\\"\\\\.py"
        );
        assert_eq!(name(OsStr::new("plain \"é\".py")), "plain \"é\".py");
    }

    #[test]
    fn json_keeps_the_data_and_escapes_what_a_log_would_act_on() {
        let value = serde_json::json!({"k": "a\u{202E}\u{7f}##[error]\u{1F600}\u{E0041}\"\n"});
        let text = json(&value).unwrap();
        assert_eq!(
            text,
            "{\n  \"k\": \"a\\u202e\\u007f#\\u0023[error]\u{1F600}\\udb40\\udc41\\\"\\n\"\n}"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
    }
}
