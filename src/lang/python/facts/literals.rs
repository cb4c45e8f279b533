//! Device strings the flow analysis does not follow: every `"cuda:N"` literal that can reach
//! code (an argument, a default, an attribute, a container), but not one that is only compared,
//! matched, used as a table key or a type, asserted, or printed. Rules turn those the mask
//! renumbers into review findings: silence would call a program that dies on `cuda:1` compliant.

use std::ops::Range;

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, Pattern, Stmt};
use ruff_text_size::Ranged;

/// A `"cuda:N"` literal that may select a device.
#[derive(Debug, Clone)]
pub struct DeviceLiteral {
    pub at: Range<usize>,
    pub index: u64,
    /// The default of a command-line option that names a device (`--device`, `--gpu`): the
    /// option's name and the bytes of N, which a remap rewrites as it does a device call's.
    pub option_default: Option<(String, Range<usize>)>,
}

pub fn device_literals(source: &str, body: &[Stmt]) -> Vec<DeviceLiteral> {
    let mut v = Literals {
        source,
        found: Vec::new(),
    };
    v.visit_body(body);
    v.found
}

struct Literals<'s> {
    source: &'s str,
    found: Vec<DeviceLiteral>,
}

/// `parser.add_argument("--device", default="cuda:1")`: the option's name when it names a
/// device, and the default's literal.
fn option_default(call: &ruff_python_ast::ExprCall) -> Option<(String, &Expr)> {
    let Expr::Attribute(a) = call.func.as_ref() else {
        return None;
    };
    if a.attr.as_str() != "add_argument" {
        return None;
    }
    let name = call.arguments.args.iter().find_map(|arg| match arg {
        Expr::StringLiteral(s) if s.value.to_str().starts_with('-') => {
            Some(s.value.to_str().to_string())
        }
        _ => None,
    })?;
    let lower = name.to_ascii_lowercase();
    if !crate::knowledge::DEVICE_WORDS
        .iter()
        .any(|w| lower.contains(w))
    {
        return None;
    }
    let default = call
        .arguments
        .keywords
        .iter()
        .find(|k| k.arg.as_ref().is_some_and(|n| n.as_str() == "default"))?;
    Some((name, &default.value))
}

fn cuda_index(s: &str) -> Option<u64> {
    s.trim().strip_prefix("cuda:")?.parse().ok()
}

/// `print(...)`, `logger.info(...)`, `logging.warning(...)`: output, not a device.
pub(super) fn is_echo(func: &Expr) -> bool {
    match func {
        Expr::Name(n) => n.id.as_str() == "print",
        Expr::Attribute(a) => matches!(
            a.attr.as_str(),
            "debug"
                | "info"
                | "warning"
                | "warn"
                | "error"
                | "critical"
                | "exception"
                | "log"
                | "write"
                | "echo"
                | "secho"
        ),
        _ => false,
    }
}

impl Literals<'_> {
    /// The bytes of N in a plain one-part literal (`"cuda:1"`, `'cuda:1'`), if it is one.
    fn digits(&self, at: &Range<usize>, value: &str) -> Option<Range<usize>> {
        let text = self.source.get(at.clone())?;
        let inner = text.get(1..text.len().checked_sub(1)?)?;
        if inner != value || !matches!(text.as_bytes()[0], b'"' | b'\'') {
            return None;
        }
        let start = at.start + 1 + value.find(':')? + 1;
        Some(start..at.end - 1)
    }
}

impl<'a> Visitor<'a> for Literals<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Assert(_) => {}
            Stmt::AnnAssign(a) => {
                if let Some(value) = &a.value {
                    self.visit_expr(value);
                }
            }
            _ => walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::StringLiteral(s) => {
                if let Some(index) = cuda_index(s.value.to_str()) {
                    let r = s.range();
                    self.found.push(DeviceLiteral {
                        at: r.start().to_usize()..r.end().to_usize(),
                        index,
                        option_default: None,
                    });
                }
            }
            Expr::Call(c) if option_default(c).is_some() => {
                let (name, default) = option_default(c).expect("checked");
                walk_expr(self, expr);
                if let Expr::StringLiteral(s) = default {
                    let r = s.range();
                    let at = r.start().to_usize()..r.end().to_usize();
                    let digits = self.digits(&at, s.value.to_str());
                    if let (Some(found), Some(digits)) =
                        (self.found.iter_mut().find(|l| l.at == at), digits)
                    {
                        found.option_default = Some((name, digits));
                    }
                }
            }
            Expr::Compare(_) => {}
            Expr::Dict(d) => {
                for item in &d.items {
                    self.visit_expr(&item.value);
                }
            }
            Expr::Subscript(s) => self.visit_expr(&s.value),
            Expr::Call(c) if is_echo(&c.func) => {}
            _ => walk_expr(self, expr),
        }
    }

    fn visit_pattern(&mut self, _pattern: &'a Pattern) {}

    fn visit_annotation(&mut self, _expr: &'a Expr) {}
}
