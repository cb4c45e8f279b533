//! The encodings a Python file may declare in its coding cookie (PEP 263) that this tool reads
//! and writes back byte for byte: UTF-8, ASCII, Latin-1 and Windows-1252. One byte is one
//! character in the last three, so a file decoded and encoded again is the same bytes.

/// An encoding this tool reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Utf8,
    Ascii,
    Latin1,
    Cp1252,
}

/// What the cookie of the first two lines names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cookie {
    /// No cookie: the file is UTF-8.
    None,
    Known {
        name: String,
        codec: Codec,
    },
    /// A name this tool cannot read (CPython may know it, or not).
    Unknown(String),
}

/// Windows-1252 at 0x80..=0x9F (the rest is Latin-1); `None`: a byte CPython refuses too.
const CP1252_HIGH: [Option<char>; 32] = [
    Some('€'),
    None,
    Some('‚'),
    Some('ƒ'),
    Some('„'),
    Some('…'),
    Some('†'),
    Some('‡'),
    Some('ˆ'),
    Some('‰'),
    Some('Š'),
    Some('‹'),
    Some('Œ'),
    None,
    Some('Ž'),
    None,
    None,
    Some('‘'),
    Some('’'),
    Some('“'),
    Some('”'),
    Some('•'),
    Some('–'),
    Some('—'),
    Some('˜'),
    Some('™'),
    Some('š'),
    Some('›'),
    Some('œ'),
    None,
    Some('ž'),
    Some('Ÿ'),
];

impl Cookie {
    /// The cookie of the first two lines of `bytes`: a comment naming `coding:` or `coding=`
    /// on line 1, or on line 2 under a comment or blank line 1 (PEP 263).
    pub fn of(bytes: &[u8]) -> Cookie {
        let mut rest = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
        for _ in 0..2 {
            let (line, next) = split_line(rest);
            rest = next;
            let line = String::from_utf8_lossy(line);
            let line = line.trim_start_matches([' ', '\t', '\x0c']);
            if !line.starts_with('#') {
                if line.is_empty() {
                    continue;
                }
                break;
            }
            if let Some(name) = cookie_name(line) {
                return Cookie::named(name);
            }
        }
        Cookie::None
    }

    fn named(name: String) -> Cookie {
        match Codec::named(&name) {
            Some(codec) => Cookie::Known { name, codec },
            None => Cookie::Unknown(name),
        }
    }
}

/// The first line (without its ending) and what follows it; `\n`, `\r\n` and `\r` end a line.
fn split_line(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
        Some(i) if bytes[i..].starts_with(b"\r\n") => (&bytes[..i], &bytes[i + 2..]),
        Some(i) => (&bytes[..i], &bytes[i + 1..]),
        None => (bytes, &[]),
    }
}

/// `latin-1` in `# -*- coding: latin-1 -*-`.
fn cookie_name(line: &str) -> Option<String> {
    let pos = line
        .match_indices("coding")
        .map(|(p, _)| p)
        .find(|&p| matches!(line.as_bytes().get(p + 6), Some(b':' | b'=')))?;
    let name: String = line[pos + 7..]
        .trim_start_matches([' ', '\t'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    (!name.is_empty()).then_some(name)
}

impl Codec {
    /// CPython's names and aliases of the four encodings (its tokenizer also reads any
    /// `utf-8-…` or `latin-1-…` name as the encoding it starts with).
    pub fn named(name: &str) -> Option<Codec> {
        let norm = name.to_ascii_lowercase().replace('_', "-");
        let starts = |p: &str| norm == p || norm.starts_with(&format!("{p}-"));
        if starts("utf-8") || norm == "utf8" || norm == "u8" || norm == "utf" {
            return Some(Codec::Utf8);
        }
        if starts("latin-1") || starts("iso-8859-1") || starts("iso-latin-1") {
            return Some(Codec::Latin1);
        }
        match norm.as_str() {
            "ascii" | "us-ascii" | "646" | "us" => Some(Codec::Ascii),
            "latin1" | "latin" | "l1" | "iso8859-1" | "8859" | "cp819" | "iso-ir-100"
            | "csisolatin1" => Some(Codec::Latin1),
            "cp1252" | "windows-1252" | "1252" => Some(Codec::Cp1252),
            _ => None,
        }
    }

    /// Whether the encoding can hold `c`.
    pub fn holds(self, c: char) -> bool {
        match self {
            Codec::Utf8 => true,
            Codec::Ascii => c.is_ascii(),
            Codec::Latin1 => (c as u32) <= 0xff,
            Codec::Cp1252 => cp1252_byte(c).is_some(),
        }
    }

    /// The text, or the offset of the first byte that is not in the encoding.
    pub fn decode(self, bytes: &[u8]) -> Result<String, usize> {
        match self {
            Codec::Utf8 => std::str::from_utf8(bytes)
                .map(str::to_string)
                .map_err(|e| e.valid_up_to()),
            _ => bytes
                .iter()
                .enumerate()
                .map(|(i, &b)| self.char_of(b).ok_or(i))
                .collect(),
        }
    }

    /// The bytes, or the first character the encoding cannot hold.
    pub fn encode(self, text: &str) -> Result<Vec<u8>, char> {
        match self {
            Codec::Utf8 => Ok(text.as_bytes().to_vec()),
            Codec::Ascii => text.chars().map(|c| ascii_byte(c).ok_or(c)).collect(),
            Codec::Latin1 => text
                .chars()
                .map(|c| u8::try_from(c).map_err(|_| c))
                .collect(),
            Codec::Cp1252 => text.chars().map(|c| cp1252_byte(c).ok_or(c)).collect(),
        }
    }

    fn char_of(self, b: u8) -> Option<char> {
        match (self, b) {
            (_, 0..=0x7f) | (Codec::Latin1, _) | (Codec::Cp1252, 0xa0..) => Some(char::from(b)),
            (Codec::Cp1252, _) => CP1252_HIGH[usize::from(b - 0x80)],
            _ => None,
        }
    }
}

fn ascii_byte(c: char) -> Option<u8> {
    c.is_ascii().then_some(c as u8)
}

fn cp1252_byte(c: char) -> Option<u8> {
    match u8::try_from(c) {
        Ok(b) if !(0x80..0xa0).contains(&b) => Some(b),
        _ => CP1252_HIGH
            .iter()
            .position(|&h| h == Some(c))
            .map(|i| 0x80 + i as u8),
    }
}

/// The bytes of `text` in the encoding its own cookie declares: a file is written back in the
/// encoding it was read in. An error names the encoding and the first character it cannot hold.
pub fn encode_declared(text: &str) -> Result<Vec<u8>, String> {
    let Cookie::Known { name, codec } = Cookie::of(text.as_bytes()) else {
        return Ok(text.as_bytes().to_vec());
    };
    codec.encode(text).map_err(|c| {
        let line = crate::base::line_index::line_of_offset(text, text.find(c).unwrap_or(0));
        format!("the file declares `coding: {name}`, which cannot hold `{c}` (line {line})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_names_the_codec() {
        let known = |src: &[u8]| match Cookie::of(src) {
            Cookie::Known { codec, .. } => Some(codec),
            _ => None,
        };
        assert_eq!(known(b"# -*- coding: latin-1 -*-\n"), Some(Codec::Latin1));
        assert_eq!(
            known(b"#!/usr/bin/python\r\n# vim: set fileencoding=cp1252 :\r\n"),
            Some(Codec::Cp1252)
        );
        assert_eq!(known(b"\n# coding=ISO_8859_1\n"), Some(Codec::Latin1));
        assert_eq!(known(b"# coding: utf-8\n"), Some(Codec::Utf8));
        // Line 2 counts only under a comment or a blank line; line 3 never.
        assert_eq!(Cookie::of(b"import os\n# coding: latin-1\n"), Cookie::None);
        assert_eq!(Cookie::of(b"#\n#\n# coding: latin-1\n"), Cookie::None);
        assert_eq!(
            Cookie::of(b"# coding: koi8-r\n"),
            Cookie::Unknown("koi8-r".into())
        );
    }

    #[test]
    fn one_byte_codecs_round_trip() {
        let all: Vec<u8> = (1..=255).collect();
        let latin = Codec::Latin1.decode(&all).unwrap();
        assert_eq!(Codec::Latin1.encode(&latin).unwrap(), all);
        // CPython's cp1252 refuses 0x81, 0x8D, 0x8F, 0x90 and 0x9D.
        assert_eq!(Codec::Cp1252.decode(b"a\x80\x81"), Err(2));
        let cp: Vec<u8> = all
            .iter()
            .copied()
            .filter(|b| ![0x81, 0x8d, 0x8f, 0x90, 0x9d].contains(b))
            .collect();
        let text = Codec::Cp1252.decode(&cp).unwrap();
        assert!(text.starts_with('\u{1}') && text.contains("€‚ƒ") && text.ends_with("þÿ"));
        assert_eq!(Codec::Cp1252.encode(&text).unwrap(), cp);
        assert_eq!(Codec::Ascii.decode(b"ab\xe9"), Err(2));
        assert_eq!(Codec::Latin1.encode("é🚨"), Err('🚨'));
    }

    #[test]
    fn text_is_written_in_the_encoding_it_declares() {
        assert_eq!(
            encode_declared("# coding: latin-1\n# é\n").unwrap(),
            b"# coding: latin-1\n# \xe9\n"
        );
        assert_eq!(encode_declared("# é\n").unwrap(), "# é\n".as_bytes());
        assert_eq!(
            encode_declared("# coding: latin-1\nx = 1\n# 🚨\n").unwrap_err(),
            "the file declares `coding: latin-1`, which cannot hold `🚨` (line 3)"
        );
    }
}
