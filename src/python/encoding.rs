//! The encoding a file declares in its cookie (PEP 263), and inserted text made representable
//! in it: accents folded, symbols and emoji dropped. A file is read as UTF-8, so the cookie only
//! narrows what may be inserted.

use crate::lines::line_ranges;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    /// Only characters up to this code point (0x7F for ASCII, 0xFF for Latin-1).
    Narrow {
        name: String,
        max: u32,
    },
}

impl Encoding {
    /// The cookie of the first two lines; an encoding this tool cannot write is an error naming it.
    pub fn of(source: &str) -> Result<Encoding, String> {
        for (start, end) in line_ranges(source).take(2) {
            let line = source[start..end]
                .trim_start_matches('\u{feff}')
                .trim_start();
            if !line.starts_with('#') {
                // PEP 263: a cookie on line 2 counts only under a comment or blank line 1.
                if line.is_empty() {
                    continue;
                }
                break;
            }
            let Some(pos) = line
                .find("coding")
                .filter(|&p| matches!(line.as_bytes().get(p + 6), Some(b':' | b'=')))
            else {
                continue;
            };
            let name: String = line[pos + 7..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                .collect();
            let norm = name.to_ascii_lowercase().replace('_', "-");
            return match norm.as_str() {
                "utf-8" | "utf8" | "utf-8-sig" => Ok(Encoding::Utf8),
                "ascii" | "us-ascii" | "646" => Ok(Encoding::Narrow { name, max: 0x7f }),
                "latin-1" | "latin1" | "iso-8859-1" | "iso8859-1" | "l1" | "iso-latin-1"
                | "cp819" => Ok(Encoding::Narrow { name, max: 0xff }),
                _ => Ok(Encoding::Narrow { name, max: 0x7f }),
            };
        }
        Ok(Encoding::Utf8)
    }

    /// `text` as this encoding can hold it.
    pub fn render(&self, text: &str) -> Result<String, String> {
        let Encoding::Narrow { max, name } = self else {
            return Ok(text.to_string());
        };
        let mut out = String::with_capacity(text.len());
        let mut dropped = false;
        for c in text.chars() {
            if (c as u32) <= *max {
                // The space after a dropped symbol goes with it.
                if dropped && c == ' ' && !out.ends_with(|p: char| p.is_alphanumeric()) {
                    dropped = false;
                    continue;
                }
                out.push(c);
                dropped = false;
            } else if let Some(folded) = fold(c) {
                out.push(folded);
            } else {
                dropped = true;
            }
        }
        if out.chars().any(|c| (c as u32) > *max) {
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
