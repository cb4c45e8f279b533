//! The Rust fix planner: the comment header after the inner attributes, the env block at
//! the top of `fn main`, and the edits of each fixable finding (removals, indices, child env).

use super::detect::{Binary, Context, Sites};
use super::facts::Facts;
use crate::base::edit::Edit;
use crate::model::finding::Finding;

/// The file's indentation step: a tab in a file indented with tabs, else the step all its
/// indentations are multiples of (rustfmt's `tab_spaces`: 2 in a 2-space file), four when
/// there is none (an aligned continuation line of 3 spaces leaves 4).
pub fn indent_unit(source: &str) -> String {
    let indented = || {
        crate::base::lines::texts(source)
            .filter(|l| l.starts_with([' ', '\t']) && !l.trim().is_empty())
            // ` * ` of a block comment is aligned, not indented.
            .filter(|l| !l.trim_start().starts_with('*'))
    };
    if indented().next().is_some_and(|l| l.starts_with('\t')) {
        return "\t".into();
    }
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let step = indented()
        .map(|l| l.len() - l.trim_start_matches(' ').len())
        .fold(0, gcd);
    match step {
        2 | 4 | 8 => " ".repeat(step),
        _ => "    ".into(),
    }
}

/// The indentation step of `main`'s body: its first statement's indentation past `main`'s own
/// (what rustfmt wrote there), else the file's (see [`indent_unit`]).
pub fn main_unit(source: &str, main: &super::facts::MainFn) -> String {
    let base = line_indent(source, main.sig.start);
    main.stmts
        .first()
        .filter(|s| crate::base::lines::line_start(source, s.start) >= main.body_start)
        .and_then(|s| {
            let unit = line_indent(source, s.start).strip_prefix(base)?;
            let plain = unit == "\t" || (!unit.is_empty() && unit.bytes().all(|b| b == b' '));
            plain.then(|| unit.to_string())
        })
        .unwrap_or_else(|| indent_unit(source))
}

/// The whitespace that starts the line holding `offset`.
pub fn line_indent(source: &str, offset: usize) -> &str {
    let start = crate::base::lines::line_start(source, offset);
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
    for f in findings.iter().filter(|f| f.is_violation() && f.fixable) {
        for e in &f.edits {
            if !edits.contains(e) {
                edits.push(e.clone());
            }
        }
    }
    let unused = super::imports::made_unused(ctx.source, &facts.use_leaves, &edits);
    let mut push = |e: Edit| {
        if !edits.contains(&e) {
            edits.push(e);
        }
    };
    unused.into_iter().for_each(&mut push);
    // An indentation put on a line another edit deletes would join the next line.
    let deleted_at: Vec<usize> = edits
        .iter()
        .filter(|e| !e.range.is_empty() && e.replacement.is_empty())
        .map(|e| e.range.start)
        .collect();
    edits.retain(|e| {
        let indentation = e.range.is_empty()
            && !e.replacement.is_empty()
            && e.replacement.chars().all(|c| c == ' ' || c == '\t');
        !(indentation && deleted_at.contains(&e.range.start))
    });
    collapse_emptied_blocks(ctx.source, &mut edits);
    let mut push = |e: Edit| {
        if !edits.contains(&e) {
            edits.push(e);
        }
    };
    if !matches!(kind, Binary::Settable | Binary::Async) {
        return edits;
    }
    // An async main's own edits (the header, its env) are its GH504 fix's, unsafe-tier; the
    // other mains the build may compile instead get theirs here.
    if kind == Binary::Settable && sites.comment.is_none() {
        push(comment_edit(facts, ctx));
    }
    let missing = facts
        .main
        .iter()
        .filter(|_| kind == Binary::Settable && sites.main_env.is_none())
        .chain(
            sites
                .alt_mains_missing
                .iter()
                .map(|&i| &facts.alt_mains[i])
                .filter(|m| !m.is_async && m.foreign.is_none()),
        );
    for main in missing {
        let text = ctx.header.main_env_text(
            ctx.krate.edition,
            line_indent(ctx.source, main.sig.start),
            &main_unit(ctx.source, main),
            ctx.newline,
            super::EnvText {
                alloc: ctx.torch(),
                safety: super::Safety::Lines,
                respect: super::Respect::of(ctx.policy),
            },
        );
        push(Edit::insert(env_at(ctx.source, main.body_start), text));
    }
    edits
}

/// Where `main`'s env block starts: right after its `{`, or after the spaces that end that
/// line, which stay on it (the inserted lines then end clean: `git diff --check`).
pub fn env_at(source: &str, body_start: usize) -> usize {
    let rest = &source[body_start..];
    let blank = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    if rest[blank..].starts_with(['\n', '\r']) {
        body_start + blank
    } else {
        body_start
    }
}

/// A block whose every line the deletions take out becomes `{}`, as rustfmt writes an empty
/// block (`fn init() {}`, `|| {}`): the deletions that empty it become one deletion of its
/// inside. A brace on a line with a comment before it is not trusted to be a brace.
fn collapse_emptied_blocks(source: &str, edits: &mut Vec<Edit>) {
    let mut deletions: Vec<usize> = (0..edits.len())
        .filter(|&i| edits[i].replacement.is_empty() && !edits[i].range.is_empty())
        .collect();
    deletions.sort_by_key(|&i| edits[i].range.start);
    let ws = |c: char| c.is_ascii_whitespace();
    let mut run: Vec<usize> = Vec::new();
    let mut collapsed: Vec<(Vec<usize>, std::ops::Range<usize>)> = Vec::new();
    let mut flush = |run: &mut Vec<usize>| {
        let (Some(&first), Some(&last)) = (run.first(), run.last()) else {
            return;
        };
        let (start, end) = (edits[first].range.start, edits[last].range.end);
        let before = source[..start].trim_end_matches(ws);
        let after_len = source[end..].len() - source[end..].trim_start_matches(ws).len();
        let open_line = &before[crate::base::lines::line_start(before, before.len())..];
        if before.ends_with('{')
            && !before.ends_with("'{")
            && !open_line.contains("//")
            && !open_line.contains("/*")
            && source[end + after_len..].starts_with('}')
        {
            collapsed.push((run.clone(), before.len()..end + after_len));
        }
        run.clear();
    };
    for &i in &deletions {
        if let Some(&prev) = run.last() {
            if edits[prev].range.end != edits[i].range.start {
                flush(&mut run);
            }
        }
        run.push(i);
    }
    flush(&mut run);
    let mut drop: Vec<usize> = Vec::new();
    for (members, inside) in collapsed {
        drop.extend(&members);
        edits.push(Edit::delete(inside));
    }
    let mut i = 0;
    edits.retain(|_| {
        i += 1;
        !drop.contains(&(i - 1))
    });
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
    let next_line = &source[at..crate::base::lines::line_end(source, at)];
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
