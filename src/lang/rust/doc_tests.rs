//! The doc examples rustdoc runs (`cargo test --doc`): the fenced code blocks of a library's
//! doc comments (`///`, `//!`, `#[doc = "…"]`) whose info string names Rust or nothing, and
//! none of `ignore`, `no_run`, `compile_fail`. Each is a program of its own, compiled in a
//! `main` rustdoc writes (unless the code has one), its hidden lines (`# let ctx = …;`)
//! included: what it constructs runs on whatever card the environment of `cargo test` leaves.
//! A README a crate includes as its docs (`#![doc = include_str!("../README.md")]`) is not
//! read.

use syn::spanned::Spanned;
use syn::visit::{self, Visit};

/// Info-string words of a block rustdoc runs; any other word (`text`, `toml`, `ignore`,
/// `no_run`, `compile_fail`, a language) makes it a block it does not run.
const RUN_WORDS: &[&str] = &[
    "rust",
    "should_panic",
    "test_harness",
    "edition2015",
    "edition2018",
    "edition2021",
    "edition2024",
];

/// Every doc line of the file, in order: its line and its text.
#[derive(Default)]
struct DocLines(Vec<(usize, String)>);

impl<'a> Visit<'a> for DocLines {
    fn visit_attribute(&mut self, attr: &'a syn::Attribute) {
        if attr.path().is_ident("doc") {
            if let syn::Meta::NameValue(nv) = &attr.meta {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &nv.value
                {
                    let line = attr.span().start().line;
                    for (k, text) in s.value().split('\n').enumerate() {
                        self.0.push((line + k, text.to_string()));
                    }
                }
            }
        }
        visit::visit_attribute(self, attr);
    }
}

/// The examples rustdoc runs: the line of each opening fence and the example's code.
pub fn examples(file: &syn::File) -> Vec<(u32, String)> {
    let mut lines = DocLines::default();
    lines.visit_file(file);
    blocks(&lines.0)
}

/// The runnable blocks of doc lines (consecutive lines are one comment; a block never runs
/// across two comments).
fn blocks(lines: &[(usize, String)]) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    // The open block: its fence (the characters and their count), its line, whether it runs,
    // and its code.
    let mut open: Option<(String, usize, bool, String)> = None;
    let mut previous: Option<usize> = None;
    for (line, text) in lines {
        if previous.is_some_and(|p| *line > p + 1) {
            open = None;
        }
        previous = Some(*line);
        let trimmed = text.trim_start();
        let fence: String = trimmed
            .chars()
            .take_while(|c| *c == '`' || *c == '~')
            .collect();
        let is_fence = fence.len() >= 3
            && fence
                .chars()
                .all(|c| c == fence.chars().next().unwrap_or('`'));
        match &mut open {
            Some((f, start, runs, code)) => {
                if is_fence
                    && fence.starts_with(f.as_str())
                    && trimmed[fence.len()..].trim().is_empty()
                {
                    if *runs {
                        out.push((*start as u32, std::mem::take(code)));
                    }
                    open = None;
                } else {
                    code.push_str(&shown(trimmed));
                    code.push('\n');
                }
            }
            None if is_fence => {
                let info = &trimmed[fence.len()..];
                let runs = info
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|w| !w.is_empty())
                    .all(|w| RUN_WORDS.contains(&w) || w.starts_with("ignore-"));
                open = Some((fence, *line, runs, String::new()));
            }
            None => {}
        }
    }
    out
}

/// A line as rustdoc compiles it: a hidden line (`# code`) without its `# `.
fn shown(line: &str) -> String {
    if line == "#" {
        String::new()
    } else if let Some(rest) = line.strip_prefix("# ") {
        rest.to_string()
    } else if let Some(rest) = line.strip_prefix("##") {
        format!("#{rest}")
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runnable_blocks_with_their_hidden_lines() {
        let file: syn::File = syn::parse_str(
            "/// Opens a context.\n///\n/// ```\n/// # use cudarc::driver::CudaContext;\n/// let ctx = CudaContext::new(0).unwrap();\n/// ```\n///\n/// ```no_run\n/// let x = 1;\n/// ```\n///\n/// ```text\n/// not code\n/// ```\npub fn open() {}\n\n/** A block comment.\n\n```rust,should_panic\nlet y = 2;\n```\n*/\npub fn other() {}\n",
        )
        .unwrap();
        let got = examples(&file);
        assert_eq!(
            got,
            vec![
                (
                    3,
                    "use cudarc::driver::CudaContext;\nlet ctx = CudaContext::new(0).unwrap();\n"
                        .to_string()
                ),
                (19, "let y = 2;\n".to_string()),
            ]
        );
    }
}
