//! The imports around the inserted header: `import os` at its sorted place in the
//! standard-library block (the project's isort options), the blank lines after imports, a later
//! `import os` taken out, and `# noqa: E402` for a flake8-gated project.

use std::ops::Range;

use super::super::facts::TopKind;
use super::FixInput;
use crate::base::edit::Edit;
use crate::base::lines::{line_end, line_start, next_line_start, prev_line_start};

/// The header block, and the edits that import what it uses: `import os` joins the
/// standard-library imports right above the header at its sorted place (as isort and ruff's
/// `I` rules want), or opens the chunk when there are none.
pub(super) fn header_chunk(input: &FixInput, at: usize) -> (String, Vec<Edit>) {
    let nl = input.newline;
    let header = input.ctx.header;
    let mut chunk = String::new();
    let bound_before = |name: &str| {
        input.facts.top.iter().any(|(r, kind)| {
            r.end <= at
                && matches!(kind, TopKind::StdlibImport(names) | TopKind::Import(names) if names.iter().any(|n| n == name))
        })
    };
    let mut imports = String::new();
    let mut edits = Vec::new();
    for module in &header.block_imports {
        if bound_before(module) {
            continue;
        }
        match sorted_import_site(input, at, module) {
            Some((pos, text)) => edits.push(Edit::insert(pos, text)),
            None => imports.push_str(&format!("import {module}{nl}")),
        }
    }
    if !imports.is_empty() {
        chunk.push_str(&imports);
        chunk.push_str(&nl.repeat(blank_lines_after_imports(header)));
    }
    chunk.push_str(&header.block_text(nl));
    (chunk, edits)
}

/// Where `import {module}` goes in the block of standard-library imports that ends right above
/// `at`: before the first plain import that sorts after it, else after the last plain import,
/// else before the first `from` import (the project's isort options change this), with the
/// text to insert there. `None` when no such block ends there.
fn sorted_import_site(input: &FixInput, at: usize, module: &str) -> Option<(usize, String)> {
    let source = input.source;
    // The statements before `at`, last first, while they are standard-library imports each on
    // lines of its own.
    let before: Vec<&(Range<usize>, TopKind)> = input
        .facts
        .top
        .iter()
        .filter(|(r, _)| r.end <= at)
        .collect();
    let mut block: Vec<&Range<usize>> = Vec::new();
    for (r, kind) in before.iter().rev() {
        let alone = source[line_start(source, r.start)..r.start]
            .trim()
            .is_empty()
            && source[r.end..next_line_start(source, r.end)]
                .trim()
                .is_empty();
        if !matches!(kind, TopKind::StdlibImport(_)) || !alone {
            break;
        }
        block.push(r);
    }
    let last = block.first()?;
    // Only a block that ends right above the header (blank lines between are fine).
    if !source[next_line_start(source, last.end)..at]
        .trim()
        .is_empty()
    {
        return None;
    }
    block.reverse();
    let order = input.ctx.header.style.imports;
    let nl = input.newline;
    let plain = |r: &&&Range<usize>| source[(**r).clone()].starts_with("import ");
    // The module an import sorts by: `import a.b` → `a.b`, `from a.b import c` → `a.b`.
    let name = |r: &Range<usize>| {
        let text = &source[r.clone()];
        text.strip_prefix("import ")
            .or_else(|| text.strip_prefix("from "))
            .unwrap_or("")
            .trim_start()
            .split([',', ' '])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase()
    };
    let import = format!("import {module}{nl}");
    if order.force_sort_within_sections {
        // Plain and `from` imports sorted together by module.
        let at = match block.iter().find(|r| name(r).as_str() > module) {
            Some(after) => line_start(source, after.start),
            None => next_line_start(source, block.last()?.end),
        };
        return Some((at, import));
    }
    if let Some(after) = block
        .iter()
        .filter(plain)
        .find(|r| name(r).as_str() > module)
    {
        return Some((line_start(source, after.start), import));
    }
    if let Some(last_plain) = block.iter().rev().find(plain) {
        return Some((next_line_start(source, last_plain.end), import));
    }
    // Only `from` imports: `import os` opens the section, or closes it (`from-first`), with the
    // configured blank lines between the two kinds.
    let gap = nl.repeat(order.lines_between_types);
    if order.from_first {
        let at = next_line_start(source, block.last()?.end);
        return Some((at, format!("{gap}{import}")));
    }
    let at = line_start(source, block.first()?.start);
    Some((at, format!("{import}{gap}")))
}

/// For a project gated by flake8: `# noqa: E402` on the module-level imports after the header,
/// up to the first statement after which pycodestyle reports them anyway (those were E402
/// already): a `try`/`if`/`with` block or a dunder assignment between imports is not one.
/// The marker goes right after the statement, before a comment the line already has; a line
/// with a `noqa` of its own is left as it is.
pub(super) fn noqa_e402(input: &FixInput, at: usize, edits: &mut Vec<Edit>) {
    let source = input.source;
    let mut seen_string = input.facts.docstring.is_some();
    for (r, kind) in input.facts.top.iter().filter(|(r, _)| r.start >= at) {
        if !matches!(kind, TopKind::Import(_) | TopKind::StdlibImport(_)) {
            if imports_may_follow(&source[r.clone()], &mut seen_string) {
                continue;
            }
            break;
        }
        let end = line_end(source, r.end);
        let rest = source[r.end..end].trim();
        let single_line = !source[r.clone()].contains('\n');
        // An import the plan takes out (a later `import os` the header brings up) needs none.
        let removed = edits
            .iter()
            .any(|e| e.range.start <= r.start && r.end <= e.range.end);
        if removed {
            continue;
        }
        if !single_line {
            // `from .const import (` … `)`: flake8 reports E402 on the first line, and black
            // and isort keep a comment right after the opening bracket there.
            let first_end = line_end(source, r.start);
            let first = &source[r.start..first_end];
            if first.trim_end().ends_with('(') {
                edits.push(Edit::insert(
                    r.start + first.trim_end().len(),
                    "  # noqa: E402".to_string(),
                ));
            }
            continue;
        }
        let width = source[line_start(source, r.start)..end].chars().count();
        // A formatter splits a `from` import the marker makes too long, and its comment then
        // ends on the closing bracket, where flake8 does not look: written split already, the
        // marker after the opening bracket, where black and isort keep it.
        let overflows = |w: usize| width + "  # noqa: E402".len() > w;
        if rest.is_empty() && input.ctx.header.style.format_width.is_some_and(overflows) {
            if let Some(split) = split_from_import(source, r.clone(), input.newline) {
                edits.extend(split);
                continue;
            }
        }
        // isort wraps a `from` import the marker makes longer than its `line_length` (the
        // comment counts): written as it writes it, the marker where it keeps it.
        let style = &input.ctx.header.style;
        if let Some(wrap) = style
            .isort_wrap
            .filter(|w| rest.is_empty() && overflows(w.line_length))
        {
            if let Some(edit) =
                isort_wrapped(source, r.clone(), wrap, style.max_line, input.newline)
            {
                edits.push(edit);
                continue;
            }
        }
        if (rest.is_empty() || rest.starts_with('#')) && !rest.contains("noqa") {
            // The marker must not make the line too long for flake8's E501 either.
            let too_long = input
                .ctx
                .header
                .style
                .max_line
                .is_some_and(|max| width + "  # noqa: E402".len() > max);
            let marker = if too_long {
                "  # noqa: E402,E501"
            } else {
                "  # noqa: E402"
            };
            // After a comment another tool reads: mypy reads `# type: ignore` only as the first
            // comment, and a `# pragma:`/`# fmt:`/`# isort:` comment keeps its place; flake8 and
            // ruff find `# noqa` anywhere on the line. Before a comment of prose.
            let at = if reads_first(rest) {
                r.end + source[r.end..end].trim_end().len()
            } else {
                r.end
            };
            edits.push(Edit::insert(at, marker.to_string()));
        }
    }
}

/// pycodestyle's E402 test (`module_imports_on_top_of_file`) for a module-level statement that
/// is not an import: imports after it stay "at the top" when it opens with one of its keywords
/// (as a prefix, as pycodestyle reads it), assigns a dunder (`__all__ = …`), or is the first
/// string (a docstring; the header's own lines are not one).
fn imports_may_follow(stmt: &str, seen_string: &mut bool) -> bool {
    const KEYWORDS: [&str; 7] = ["try", "except", "else", "finally", "with", "if", "elif"];
    if KEYWORDS.iter().any(|k| stmt.starts_with(k)) || is_dunder_assignment(stmt) {
        return true;
    }
    let unprefixed = stmt.strip_prefix(['u', 'U', 'b', 'B']).unwrap_or(stmt);
    let unprefixed = unprefixed.strip_prefix(['r', 'R']).unwrap_or(unprefixed);
    if unprefixed.starts_with(['"', '\'']) && !*seen_string {
        *seen_string = true;
        return true;
    }
    false
}

/// `__all__ = …`, `__version__: str = …` (pycodestyle's `^__([^\s]+)__(?::\s*[a-zA-Z.]+)? = `).
fn is_dunder_assignment(stmt: &str) -> bool {
    let Some(rest) = stmt.strip_prefix("__") else {
        return false;
    };
    let name_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    // The longest `__name__` the regex's greedy `[^\s]+` can take, then the annotation.
    (3..=name_end)
        .rev()
        .filter(|&i| rest.is_char_boundary(i) && rest[..i].ends_with("__"))
        .any(|i| {
            let after = &rest[i..];
            let after = match after.strip_prefix(':') {
                Some(a) => a
                    .trim_start()
                    .trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '.'),
                None => after,
            };
            after.starts_with(" = ")
        })
}

/// `from m import a, b as c` written as black writes it when it is too long, with the marker
/// after the opening bracket: `from m import (  # noqa: E402`, one name a line with a trailing
/// comma, `)`. The edits go between the names the parser finds; `None` for any other import
/// (a bracket already, a star).
fn split_from_import(source: &str, r: std::ops::Range<usize>, newline: &str) -> Option<Vec<Edit>> {
    use ruff_text_size::Ranged;
    let text = &source[r.clone()];
    let parsed = ruff_python_parser::parse_module(text).ok()?;
    let [ruff_python_ast::Stmt::ImportFrom(from)] = parsed.syntax().body.as_slice() else {
        return None;
    };
    let names: Vec<std::ops::Range<usize>> = from
        .names
        .iter()
        .map(|a| r.start + a.range().start().to_usize()..r.start + a.range().end().to_usize())
        .collect();
    let (first, last) = (names.first()?, names.last()?);
    if text.contains('(') || from.names.iter().any(|a| a.name.as_str() == "*") {
        return None;
    }
    let indent = format!("{newline}    ");
    let mut edits = vec![Edit::insert(
        first.start,
        format!("(  # noqa: E402{indent}"),
    )];
    for pair in names.windows(2) {
        edits.push(Edit::replace(
            pair[0].end..pair[1].start,
            format!(",{indent}"),
        ));
    }
    edits.push(Edit::insert(last.end, format!(",{newline})")));
    Some(edits)
}

/// `from m import a, b as c` as isort writes it past its line length with the `noqa` marker:
/// GRID (its default) fills each line and aligns the rest under the first name, the marker on
/// the first line (`noqa: E402,E501` when that line is still too long for flake8);
/// VERTICAL_HANGING_INDENT (the `black` profile) one name a line after `(  # noqa: E402`.
/// `None` for an import isort writes otherwise (one name, a bracket already, a star), or where
/// its GRID would still pass the line length (it then picks another mode).
fn isort_wrapped(
    source: &str,
    r: Range<usize>,
    wrap: crate::lang::python::style::IsortWrap,
    max_line: Option<usize>,
    newline: &str,
) -> Option<Edit> {
    let text = &source[r.clone()];
    let parsed = ruff_python_parser::parse_module(text).ok()?;
    let [ruff_python_ast::Stmt::ImportFrom(from)] = parsed.syntax().body.as_slice() else {
        return None;
    };
    if text.contains(['(', '\\'])
        || from.names.len() < 2
        || from.names.iter().any(|a| a.name.as_str() == "*")
    {
        return None;
    }
    let names: Vec<String> = from
        .names
        .iter()
        .map(|a| match &a.asname {
            Some(alias) => format!("{} as {alias}", a.name),
            None => a.name.to_string(),
        })
        .collect();
    let module = format!(
        "{}{}",
        ".".repeat(from.level as usize),
        from.module.as_ref().map_or("", |m| m.as_str())
    );
    let start = format!("from {module} import ");
    let comma = if wrap.include_trailing_comma { "," } else { "" };
    if wrap.vertical_hanging_indent {
        let body = names.join(&format!(",{newline}    "));
        let written = format!("{start}(  # noqa: E402{newline}    {body}{comma}{newline})");
        return Some(Edit::replace(r, written));
    }
    let grid =
        |comment: &str| isort_grid(&start, &names, comment, wrap.line_length, comma, newline);
    let mut written = grid("noqa: E402");
    let first_len = written
        .split(newline)
        .next()
        .map_or(0, |l| l.chars().count());
    if max_line.is_some_and(|max| first_len > max) {
        written = grid("noqa: E402,E501");
    }
    let fits = written
        .split(newline)
        .all(|l| l.chars().count() <= wrap.line_length);
    (fits && written.contains(newline)).then(|| Edit::replace(r, written))
}

/// isort's GRID mode (`wrap_modes.grid`): names after `(` while a line with the comment (on
/// the first line only) stays under the length, the rest aligned under the first name.
fn isort_grid(
    start: &str,
    names: &[String],
    comment: &str,
    line_length: usize,
    comma: &str,
    newline: &str,
) -> String {
    let white_space = " ".repeat(start.chars().count() + 1);
    let mut statement = format!("{start}({}", names[0]);
    let mut comment = Some(comment);
    let with_comment = |line: String, comment: Option<&str>| match comment {
        Some(c) => format!("{line}  # {c}"),
        None => line,
    };
    for next in &names[1..] {
        let candidate = with_comment(format!("{statement}, {next}"), comment);
        let last = candidate.rsplit(newline).next().unwrap_or("");
        if last.chars().count() + 1 > line_length {
            let mut parts = next.split(' ');
            let mut lines = vec![format!("{white_space}{}", parts.next().unwrap_or(""))];
            for part in parts {
                let joined = format!("{} {part}", lines[lines.len() - 1]);
                if joined.chars().count() + 1 > line_length {
                    lines.push(format!("{white_space}{part}"));
                } else {
                    if let Some(last) = lines.last_mut() {
                        *last = joined;
                    }
                }
            }
            statement = format!(
                "{}{newline}{}",
                with_comment(format!("{statement},"), comment),
                lines.join(newline)
            );
            comment = None;
        } else {
            statement = format!("{statement}, {next}");
        }
    }
    // Every name on the first line: the comment goes after the bracket's close.
    with_comment(format!("{statement}{comma})"), comment)
}

/// A trailing comment that is a directive of another tool (`# type: ignore`, `# pragma: no
/// cover`, `# fmt: skip`, `# isort: skip`, `# pylint: disable=…`, `# nosec`): it stays first.
fn reads_first(comment: &str) -> bool {
    let Some(text) = comment.strip_prefix('#') else {
        return false;
    };
    let text = text.trim_start().to_ascii_lowercase();
    [
        "type:",
        "pragma",
        "fmt:",
        "isort:",
        "pylint:",
        "mypy:",
        "pyright:",
        "nosec",
        "nosemgrep",
        "pyre-",
        "yapf:",
    ]
    .iter()
    .any(|p| text.starts_with(p))
}

/// A plain `import os` further down goes when the header brings its own: one import, on top.
pub(super) fn drop_later_imports(
    input: &FixInput,
    at: usize,
    edits: &mut Vec<Edit>,
    covered: &[Range<usize>],
) {
    for module in &input.ctx.header.block_imports {
        let bound_before = input.facts.top.iter().any(|(r, kind)| {
            r.end <= at
                && matches!(kind, TopKind::StdlibImport(n) | TopKind::Import(n) if n.iter().any(|x| x == module))
        });
        if bound_before {
            continue;
        }
        for (r, kind) in &input.facts.top {
            let alone = matches!(kind, TopKind::StdlibImport(n) if n.len() == 1 && &n[0] == module)
                && input.source[r.clone()] == *format!("import {module}");
            if !alone
                || r.start < at
                || covered.iter().any(|c| c.start <= r.start && r.end <= c.end)
            {
                continue;
            }
            if let Some(edit) = crate::lang::removal::removal_edit(input.source, r.clone(), false) {
                edits.push(edit);
            }
        }
    }
}

/// Blank lines around an inserted chunk, as the surrounding text needs: after an import, the
/// number the project's isort settings ask for.
pub(super) fn padded(input: &FixInput, at: usize, chunk: String) -> String {
    let (source, nl) = (input.source, input.newline);
    let mut out = String::new();
    let bom = if source.starts_with('\u{feff}') { 3 } else { 0 };
    if at > bom {
        if !(source[..at].ends_with('\n') || source[..at].ends_with('\r')) {
            out.push_str(nl);
        }
        let prev = prev_line_start(source, at);
        if !source[prev..at].trim().is_empty() {
            let after_import = input.facts.top.iter().any(|(r, kind)| {
                matches!(kind, TopKind::StdlibImport(_) | TopKind::Import(_))
                    && r.end <= at
                    && next_line_start(source, r.end) >= at
            });
            let blank = if after_import {
                blank_lines_after_imports(input.ctx.header)
            } else {
                1
            };
            out.push_str(&nl.repeat(blank));
        }
    }
    out.push_str(&chunk);
    // Code right after: one blank line; a top-level `def`, `class` or decorator: two (E302,
    // and black and ruff format put them there).
    let mut blank = 0;
    let mut line = at;
    while line < source.len() && source[line..line_end(source, line)].trim().is_empty() {
        blank += 1;
        line = next_line_start(source, line);
    }
    if line < source.len() {
        let text = &source[line..line_end(source, line)];
        let definition = ["def ", "async def ", "class ", "@"]
            .iter()
            .any(|k| text.starts_with(k));
        let want: usize = if definition { 2 } else { 1 };
        out.push_str(&nl.repeat(want.saturating_sub(blank)));
    }
    out
}

/// isort's and ruff's `lines-after-imports` before code (automatic: one).
fn blank_lines_after_imports(header: &crate::lang::python::header::PythonHeader) -> usize {
    header.style.imports.lines_after_imports.unwrap_or(1)
}
