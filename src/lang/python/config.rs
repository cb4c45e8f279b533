//! The configuration as written: runs of module-level statements that set the managed
//! variables, with the comment banner above them and the prints that echo them, recognised by
//! what they do rather than by the template's wording. A fix replaces the first such block in
//! place and removes the others whole, so nothing is left orphaned.

use std::ops::Range;

use ruff_python_ast::{Expr, Stmt};

use super::facts::{range, EnvKey, Facts};
use super::semantic::Bindings;
use crate::base::lines::{line_start, next_line_start};

mod banner;
use banner::banner_start;

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
    crate::base::lines::blank_before(source, r.start)
        && crate::base::lines::only_comment_after(source, r.end)
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
