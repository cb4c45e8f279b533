//! The Rust fix planner: the comment header after the inner attributes, the env block at
//! the top of `fn main`, and the edits of each fixable finding (removals, indices, child env).

use super::detect::{Binary, Context, Sites};
use super::facts::Facts;
use crate::edit::Edit;
use crate::finding::Finding;

/// Four spaces, or a tab in a file indented with tabs.
pub fn indent_unit(source: &str) -> String {
    let tabs = source
        .lines()
        .find(|l| l.starts_with([' ', '\t']) && !l.trim().is_empty())
        .is_some_and(|l| l.starts_with('\t'));
    if tabs {
        "\t".into()
    } else {
        "    ".into()
    }
}

/// The whitespace that starts the line holding `offset`.
pub fn line_indent(source: &str, offset: usize) -> &str {
    let start = source[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = &source[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

pub fn plan(
    facts: &Facts,
    ctx: &Context,
    sites: &Sites,
    kind: Binary,
    findings: &[Finding],
) -> Vec<Edit> {
    let mut edits: Vec<Edit> = Vec::new();
    let mut push = |e: Edit| {
        if !edits.contains(&e) {
            edits.push(e);
        }
    };
    for f in findings.iter().filter(|f| f.is_violation() && f.fixable) {
        f.edits.iter().cloned().for_each(&mut push);
    }
    if kind != Binary::Settable {
        return edits;
    }
    if sites.comment.is_none() {
        push(comment_edit(facts, ctx));
    }
    if let (Some(main), None) = (&facts.main, &sites.main_env) {
        let text = ctx.header.main_env_text(
            ctx.krate.edition,
            line_indent(ctx.source, main.sig.start),
            &indent_unit(ctx.source),
            ctx.newline,
            super::EnvText {
                alloc: ctx.torch(),
                safety: true,
                respect: ctx.policy.respect_scheduler,
            },
        );
        push(Edit::insert(main.body_start, text));
    }
    edits
}

/// The comment block goes after the inner attributes and `//!` docs (or the shebang).
pub fn comment_edit(facts: &Facts, ctx: &Context) -> Edit {
    let (source, nl) = (ctx.source, ctx.newline);
    let text = ctx.header.comment_text(nl);
    let shebang_end = {
        let body = source.trim_start_matches('\u{feff}');
        if body.starts_with("#!") && !body[2..].trim_start().starts_with('[') {
            Some(source.find('\n').map_or(source.len(), |i| i + 1))
        } else {
            None
        }
    };
    let after = facts.inner_attrs_end.map(|end| {
        source[end..]
            .find('\n')
            .map_or(source.len(), |i| end + i + 1)
    });
    let at = after
        .or(shebang_end)
        .unwrap_or(if source.starts_with('\u{feff}') { 3 } else { 0 });
    // A licence or attribution block that opens the file stays first.
    let licence = (after.is_none()).then(|| licence_end(source, at)).flatten();
    let at = licence.unwrap_or(at);
    let mut chunk = String::new();
    if at == source.len() && !source.is_empty() && !source.ends_with('\n') {
        chunk.push_str(nl);
    }
    if after.is_some() || licence.is_some() {
        chunk.push_str(nl);
    }
    chunk.push_str(&text);
    let next_line = source[at..].split('\n').next().unwrap_or("");
    if at < source.len() && !next_line.trim().is_empty() {
        chunk.push_str(nl);
    }
    Edit::insert(at, chunk)
}

/// The end (start of the next line) of a licence or attribution comment that opens the file at
/// `from`: `//` lines (not `//!` or `///` docs) or a `/* … */` block that mention a copyright,
/// a licence or an SPDX identifier. `None` when the file does not open with one.
fn licence_end(source: &str, from: usize) -> Option<usize> {
    let rest = &source[from..];
    let end = if rest.starts_with("/*") && !rest.starts_with("/*!") && !rest.starts_with("/**") {
        let close = rest.find("*/")? + 2;
        rest[close..]
            .find('\n')
            .map_or(rest.len(), |i| close + i + 1)
    } else {
        let mut end = 0;
        for line in rest.split_inclusive('\n') {
            let t = line.trim_start();
            if !t.starts_with("//") || t.starts_with("//!") || t.starts_with("///") {
                break;
            }
            end += line.len();
        }
        end
    };
    let block = rest[..end].to_ascii_lowercase();
    let licence = [
        "copyright",
        "license",
        "licence",
        "spdx",
        "all rights reserved",
        "(c)",
    ]
    .iter()
    .any(|w| block.contains(w));
    (end > 0 && licence).then_some(from + end)
}
