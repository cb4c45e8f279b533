//! The configuration as written: runs of module-level statements that set the managed
//! variables, with the comment banner above them and the prints that echo them, recognised by
//! what they do rather than by the template's wording. A fix replaces the first such block in
//! place and removes the others whole, so nothing is left orphaned.

use std::ops::Range;

use ruff_python_ast::{Expr, Stmt};

use super::facts::{range, EnvKey, Facts};
use super::semantic::Bindings;
use crate::lines::{line_start, next_line_start, prev_line_start};

/// One block of configuration lines.
#[derive(Debug, Clone)]
pub struct ConfigBlock {
    /// From the first banner line to the end of the last statement's line (terminator included).
    pub range: Range<usize>,
}

pub fn blocks(source: &str, body: &[Stmt], facts: &Facts, bindings: &Bindings) -> Vec<ConfigBlock> {
    let mut out = Vec::new();
    let mut run: Vec<(Range<usize>, bool)> = Vec::new();
    let flush = |run: &mut Vec<(Range<usize>, bool)>, out: &mut Vec<ConfigBlock>| {
        // Trailing and leading echoes belong to the block only around at least one write.
        if run.iter().any(|(_, write)| *write) {
            let first = run[0].0.start;
            let last = run[run.len() - 1].0.end;
            let start = banner_start(source, line_start(source, first));
            out.push(ConfigBlock {
                range: start..next_line_start(source, last),
            });
        }
        run.clear();
    };
    for stmt in body {
        let r = range(stmt);
        let alone = alone_on_lines(source, &r);
        let write = alone && is_config_stmt(facts, &r);
        let echo = alone && !write && is_echo(stmt, bindings);
        if write || echo {
            run.push((r, write));
        } else {
            flush(&mut run, &mut out);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// A statement made only of writes of the managed variables.
fn is_config_stmt(facts: &Facts, r: &Range<usize>) -> bool {
    let mut effects = facts
        .effects
        .iter()
        .filter(|e| e.stmt == *r && !e.child)
        .peekable();
    effects.peek().is_some()
        && effects
            .all(|e| e.pure && matches!(e.key, Some(EnvKey::Managed(_))) && e.removal.is_some())
}

/// Nothing but blanks before the statement on its first line, and nothing but a comment after
/// it on its last line.
fn alone_on_lines(source: &str, r: &Range<usize>) -> bool {
    crate::lines::blank_before(source, r.start) && crate::lines::only_comment_after(source, r.end)
}

/// The start of the banner directly above `line`: the comment lines right above it (no blank
/// line between; pragmas, licence lines, the shebang and the encoding cookie excluded). One or
/// two lines are the statement's comment; of a longer block, the lines from the topmost one that
/// talks about the GPU (with the rule lines framing it) down: prose above that documents
/// something else stays, and a long block that never mentions the GPU is not the configuration's.
fn banner_start(source: &str, line: usize) -> usize {
    // Bottom-up: the line directly above first.
    let mut lines: Vec<(usize, &str)> = Vec::new();
    let mut start = line;
    while start > 0 {
        let prev = prev_line_start(source, start);
        let text = source[prev..start].trim();
        let text = text.trim_start_matches('\u{feff}');
        let banner =
            text.starts_with('#') && !text.starts_with("#!") && !is_pragma_or_licence(text);
        if !banner {
            break;
        }
        lines.push((prev, text));
        start = prev;
    }
    // One or two comment lines right above are the statement's own comment; a longer block
    // is documentation, of which only the part about the GPU goes.
    if lines.len() <= 2 {
        return lines.last().map_or(line, |(at, _)| *at);
    }
    let Some(mut top) = lines.iter().rposition(|(_, t)| about_gpu(t)) else {
        return line;
    };
    while lines.get(top + 1).is_some_and(|(_, t)| is_rule_line(t)) {
        top += 1;
    }
    lines[top].0
}

/// A comment that talks about the GPU configuration (in English, French or Spanish: the
/// languages of the teams this tool was built with).
fn about_gpu(comment: &str) -> bool {
    let l = comment.to_ascii_lowercase();
    [
        "gpu",
        "cuda",
        "rtx",
        "pci",
        "card",
        "carte",
        "tarjeta",
        "nvidia",
        "geforce",
        "device",
        "visible_devices",
        "alloc_conf",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// `# ====`, `# ----`, `#`: a line that only frames a banner.
fn is_rule_line(comment: &str) -> bool {
    comment
        .trim_start_matches('#')
        .chars()
        .all(|c| c.is_whitespace() || "=-*~_#+".contains(c))
}

pub fn is_pragma_or_licence(comment: &str) -> bool {
    let lower = comment.to_ascii_lowercase();
    [
        "coding:",
        "coding=",
        "spdx",
        "copyright",
        "license",
        "licence",
        "noqa",
        "type:",
        "mypy:",
        "pylint:",
        "ruff:",
        "fmt:",
        "pyright:",
        "isort:",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// A print or log call that only echoes the GPU configuration: its arguments are strings that
/// talk about the GPU or reads of the managed variables.
fn is_echo(stmt: &Stmt, bindings: &Bindings) -> bool {
    let Stmt::Expr(e) = stmt else { return false };
    let Expr::Call(call) = e.value.as_ref() else {
        return false;
    };
    let name = bindings.qualified(&call.func).unwrap_or_default();
    let printer = name == "print"
        || name.starts_with("logging.")
        || name.ends_with(".stdout.write")
        || name.ends_with(".stderr.write")
        || matches!(call.func.as_ref(), Expr::Attribute(a)
            if matches!(a.attr.as_str(), "info" | "debug" | "warning" | "warn" | "error")
            && matches!(a.value.as_ref(), Expr::Name(n) if n.id.as_str().to_ascii_lowercase().contains("log")));
    if !printer || call.arguments.args.is_empty() {
        return false;
    }
    let mut about_gpu = false;
    for arg in &call.arguments.args {
        match echo_arg(arg, bindings) {
            Some(gpu) => about_gpu |= gpu,
            None => return false,
        }
    }
    let allowed_kw = call.arguments.keywords.iter().all(|k| {
        k.arg
            .as_ref()
            .is_some_and(|a| matches!(a.as_str(), "file" | "flush" | "sep" | "end" | "stacklevel"))
    });
    about_gpu && allowed_kw
}

/// `Some(mentions the GPU)` when the argument is only text and env reads; `None` otherwise.
fn echo_arg(arg: &Expr, bindings: &Bindings) -> Option<bool> {
    let gpu_text = |t: &str| {
        let l = t.to_ascii_lowercase();
        l.contains("gpu") || l.contains("cuda") || l.contains("rtx") || l.contains("pci")
    };
    match arg {
        Expr::StringLiteral(s) => Some(gpu_text(s.value.to_str())),
        Expr::FString(f) => {
            let mut gpu = false;
            for part in f.value.iter() {
                match part {
                    ruff_python_ast::FStringPart::Literal(l) => gpu |= gpu_text(l.value.as_ref()),
                    ruff_python_ast::FStringPart::FString(fs) => {
                        for el in fs.elements.iter() {
                            match el {
                                ruff_python_ast::InterpolatedStringElement::Literal(l) => {
                                    gpu |= gpu_text(&l.value)
                                }
                                ruff_python_ast::InterpolatedStringElement::Interpolation(i) => {
                                    gpu |= echo_arg(&i.expression, bindings)?;
                                }
                            }
                        }
                    }
                }
            }
            Some(gpu)
        }
        Expr::Call(call) => {
            let name = bindings.qualified(&call.func).unwrap_or_default();
            let reads_env = matches!(name.as_str(), "os.environ.get" | "os.getenv");
            let key =
                call.arguments.args.first().is_some_and(
                    |k| matches!(k, Expr::StringLiteral(s) if gpu_text(s.value.to_str())),
                );
            (reads_env && key).then_some(true)
        }
        Expr::Subscript(sub) => {
            let environ = bindings.is(&sub.value, "os.environ");
            (environ && matches!(sub.slice.as_ref(), Expr::StringLiteral(s) if gpu_text(s.value.to_str())))
                .then_some(true)
        }
        _ => None,
    }
}
