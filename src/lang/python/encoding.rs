//! The encoding a file declares in its cookie (PEP 263), and inserted text made representable
//! in it: accents folded, symbols and emoji dropped. The file was decoded from that encoding
//! and is written back in it (`source::codec`), so the cookie only narrows what may be inserted.

use crate::fs::source::codec::{Codec, Cookie};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    /// Only the characters `codec` holds (ASCII, Latin-1, Windows-1252).
    Narrow {
        name: String,
        codec: Codec,
    },
}

impl Encoding {
    /// The cookie of the first two lines; a name this tool cannot write narrows to ASCII (such
    /// a file is refused when read).
    pub fn of(source: &str) -> Result<Encoding, String> {
        Ok(match Cookie::of(source.as_bytes()) {
            Cookie::None
            | Cookie::Known {
                codec: Codec::Utf8, ..
            } => Encoding::Utf8,
            Cookie::Known { name, codec } => Encoding::Narrow { name, codec },
            Cookie::Unknown(name) => Encoding::Narrow {
                name,
                codec: Codec::Ascii,
            },
        })
    }

    /// `text` as this encoding can hold it.
    pub fn render(&self, text: &str) -> Result<String, String> {
        let Encoding::Narrow { codec, name } = self else {
            return Ok(text.to_string());
        };
        let mut out = String::with_capacity(text.len());
        let mut dropped = false;
        for c in text.chars() {
            if codec.holds(c) {
                // The space after a dropped symbol goes with it.
                if dropped && c == ' ' && !out.ends_with(|p: char| p.is_alphanumeric()) {
                    dropped = false;
                    continue;
                }
                out.push(c);
                dropped = false;
            } else if let Some(folded) = fold(c).filter(|&f| codec.holds(f)) {
                out.push(folded);
            } else {
                dropped = true;
            }
        }
        if out.chars().any(|c| !codec.holds(c)) {
            return Err(format!(
                "the file declares `coding: {name}`, which cannot hold the header's text"
            ));
        }
        Ok(out)
    }
}

/// A letter with its accent taken off.
fn fold(c: char) -> Option<char> {
    let base = match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
        'ç' => 'c',
        'è' | 'é' | 'ê' | 'ë' => 'e',
        'ì' | 'í' | 'î' | 'ï' => 'i',
        'ñ' => 'n',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' => 'o',
        'ù' | 'ú' | 'û' | 'ü' => 'u',
        'ý' | 'ÿ' => 'y',
        'À' | 'Á' | 'Â' | 'Ã' | 'Ä' | 'Å' => 'A',
        'Ç' => 'C',
        'È' | 'É' | 'Ê' | 'Ë' => 'E',
        'Ì' | 'Í' | 'Î' | 'Ï' => 'I',
        'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ö' => 'O',
        'Ù' | 'Ú' | 'Û' | 'Ü' => 'U',
        '–' | '—' => '-',
        '’' | '‘' => '\'',
        '“' | '”' => '"',
        _ => return None,
    };
    Some(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_narrows_inserted_text() {
        let latin = Encoding::of("# -*- coding: latin-1 -*-\nimport os\n").unwrap();
        assert_eq!(
            latin.render("# 🚨 CONFIGURATION é").unwrap(),
            "# CONFIGURATION é"
        );
        let ascii =
            Encoding::of("#!/usr/bin/env python\n# vim: set fileencoding=ascii :\n").unwrap();
        assert_eq!(
            ascii.render("print(\"🎮 GPU forcée\")").unwrap(),
            "print(\"GPU forcee\")"
        );
        assert_eq!(Encoding::of("# coding: utf-8\n").unwrap(), Encoding::Utf8);
        assert_eq!(
            Encoding::of("import os\n# coding: ascii\n").unwrap(),
            Encoding::Utf8
        );
    }
}
