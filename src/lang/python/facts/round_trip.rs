//! Device strings a test holds as data: `Namespace(device="cuda:1")` (a call of
//! [`DATA_CONTAINERS`]) in a function that asserts the same string back (`assert cfg.device ==
//! "cuda:1"`, `self.assertEqual(cfg.device, "cuda:1")`), in a file that imports no GPU framework.
//! The string goes through a config and is checked; renumbering it breaks the check (trial 58:
//! lm_eval's CLI tests), and nothing in the file can put anything on a card.

use std::ops::Range;

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, Stmt};

use super::devices::device_string;
use super::range;
use crate::knowledge::python::DATA_CONTAINERS;
use crate::lang::python::semantic::Bindings;

/// The `device=` values of data containers whose string the same function asserts back, and
/// the strings that assert them.
pub fn asserted_data(body: &[Stmt], bindings: &Bindings) -> Vec<Range<usize>> {
    let mut v = RoundTrip {
        bindings,
        function: None,
        asserting: 0,
        stored: Vec::new(),
        asserted: Vec::new(),
    };
    v.visit_body(body);
    let mut out = Vec::new();
    for (f, text, at) in &v.stored {
        let back: Vec<_> = v
            .asserted
            .iter()
            .filter(|(g, t, _)| g == f && t == text)
            .collect();
        if !back.is_empty() {
            out.push(at.clone());
            out.extend(back.into_iter().map(|(_, _, at)| at.clone()));
        }
    }
    out
}

struct RoundTrip<'b> {
    bindings: &'b Bindings,
    /// The start of the innermost function (`None`: the module's code).
    function: Option<usize>,
    /// Inside an `assert` statement or an `assert*` method call.
    asserting: usize,
    /// (function, string, literal) of each device string a data container is given.
    stored: Vec<(Option<usize>, String, Range<usize>)>,
    /// (function, string, literal) of each device string an assertion compares with.
    asserted: Vec<(Option<usize>, String, Range<usize>)>,
}

fn device_literal(expr: &Expr) -> Option<(String, Range<usize>)> {
    let Expr::StringLiteral(s) = expr else {
        return None;
    };
    let text = s.value.to_str();
    device_string(text).map(|_| (text.to_string(), range(expr)))
}

/// The device strings an operand of an assertion is or holds (`in ("cuda:1", "cpu")`).
fn compared(expr: &Expr) -> Vec<(String, Range<usize>)> {
    match expr {
        Expr::Tuple(t) => t.elts.iter().filter_map(device_literal).collect(),
        Expr::List(l) => l.elts.iter().filter_map(device_literal).collect(),
        Expr::Set(s) => s.elts.iter().filter_map(device_literal).collect(),
        _ => device_literal(expr).into_iter().collect(),
    }
}

impl<'a> Visitor<'a> for RoundTrip<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                let outer = self.function.replace(range(stmt).start);
                self.visit_body(&def.body);
                self.function = outer;
            }
            Stmt::Assert(_) => {
                self.asserting += 1;
                walk_stmt(self, stmt);
                self.asserting -= 1;
            }
            _ => walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Compare(cmp) if self.asserting > 0 => {
                let operands = std::iter::once(cmp.left.as_ref()).chain(cmp.comparators.iter());
                for (text, at) in operands.flat_map(compared) {
                    self.asserted.push((self.function, text, at));
                }
            }
            Expr::Call(call) => {
                let assertion = matches!(call.func.as_ref(), Expr::Attribute(a) if a.attr.as_str().starts_with("assert"));
                if assertion {
                    for (text, at) in call.arguments.args.iter().flat_map(compared) {
                        self.asserted.push((self.function, text, at));
                    }
                }
                let container = self
                    .bindings
                    .qualified(&call.func)
                    .is_some_and(|name| DATA_CONTAINERS.contains(&name.as_str()));
                if container {
                    for k in &call.arguments.keywords {
                        let device = k.arg.as_ref().is_some_and(|a| a.as_str() == "device");
                        if let (true, Some((text, at))) = (device, device_literal(&k.value)) {
                            self.stored.push((self.function, text, at));
                        }
                    }
                }
                self.asserting += usize::from(assertion);
                walk_expr(self, expr);
                self.asserting -= usize::from(assertion);
                return;
            }
            _ => {}
        }
        walk_expr(self, expr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(src: &str) -> Vec<String> {
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        let body = &parsed.syntax().body;
        let bindings = Bindings::collect(body);
        let ranges = asserted_data(body, &bindings);
        ranges.into_iter().map(|r| src[r].to_string()).collect()
    }

    #[test]
    fn a_namespace_device_asserted_back_in_the_same_function_is_data() {
        let ns = "from argparse import Namespace\n\n\ndef test_a():\n    ns = Namespace(device=\"cuda:1\")\n    assert ns.device == \"cuda:1\"\n";
        assert_eq!(data(ns), ["\"cuda:1\"", "\"cuda:1\""]);
        let unittest = "import types\n\n\ndef test_b(self):\n    c = types.SimpleNamespace(device='cuda:2')\n    self.assertEqual(load(c).device, 'cuda:2')\n";
        assert_eq!(data(unittest), ["'cuda:2'", "'cuda:2'"]);
        let member = "def test_c():\n    cfg = dict(device=\"cuda:2\")\n    assert cfg[\"device\"] in (\"cuda:2\", \"cpu\")\n";
        assert_eq!(data(member), ["\"cuda:2\"", "\"cuda:2\""]);
    }

    #[test]
    fn a_device_not_asserted_back_or_given_to_another_call_is_not() {
        // Asserted in another function, another string, not in an assertion, not a container.
        let elsewhere = "from argparse import Namespace\n\n\ndef run():\n    main(Namespace(device=\"cuda:1\"))\n\n\ndef test_a():\n    assert x == \"cuda:1\"\n";
        let other = "from argparse import Namespace\nns = Namespace(device=\"cuda:1\")\nassert ns.device != \"cuda:0\"\n";
        let branch = "from argparse import Namespace\nns = Namespace(device=\"cuda:1\")\nif ns.device == \"cuda:1\":\n    run(ns)\n";
        let model =
            "def test_a():\n    m = Model(device=\"cuda:1\")\n    assert m.device == \"cuda:1\"\n";
        for src in [elsewhere, other, branch, model] {
            assert!(data(src).is_empty(), "{src}");
        }
    }
}
