//! The Rust fix planner: the comment header after the inner attributes, the env block at
//! the top of `fn main`, old writes removed, device indices masked.

use super::detect::{removes, Context, Sites};
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

pub fn plan(facts: &Facts, ctx: &Context, sites: &Sites, findings: &[Finding]) -> Vec<Edit> {
    let mut edits: Vec<Edit> = Vec::new();
    let mut push = |e: Edit| {
        if !edits.contains(&e) {
            edits.push(e);
        }
    };
    for f in findings.iter().filter(|f| f.rule.code == "GH511") {
        f.edits.iter().cloned().for_each(&mut push);
    }
    for w in &facts.env_writes {
        if removes(facts, ctx, sites, w) {
            if let Some(edit) = crate::removal::remove_line(ctx.source, w.stmt.clone(), None, "//")
            {
                push(edit);
            }
        }
    }
    let in_scope = findings
        .iter()
        .any(|f| f.rule.code == "GH501" || f.rule.code == "GH502");
    if in_scope && sites.comment.is_none() {
        push(comment_edit(facts, ctx));
    }
    if let Some(main) = facts.main.as_ref().filter(|m| !m.is_async) {
        if sites.main_env.is_none() && findings.iter().any(|f| f.rule.code == "GH502") {
            let text = ctx
                .header
                .main_env_text(ctx.edition, &indent_unit(ctx.source), ctx.newline);
            push(Edit::insert(main.body_start, text));
        }
    }
    edits
}

/// The comment block goes after the inner attributes and `//!` docs (or the shebang).
fn comment_edit(facts: &Facts, ctx: &Context) -> Edit {
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
    let mut chunk = String::new();
    if at == source.len() && !source.is_empty() && !source.ends_with('\n') {
        chunk.push_str(nl);
    }
    if after.is_some() {
        chunk.push_str(nl);
    }
    chunk.push_str(&text);
    let next_line = source[at..].split('\n').next().unwrap_or("");
    if at < source.len() && !next_line.trim().is_empty() {
        chunk.push_str(nl);
    }
    Edit::insert(at, chunk)
}
