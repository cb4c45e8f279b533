//! The requirements a setuptools project declares outside `pyproject.toml`: `setup.py`'s
//! `setup(install_requires=…, extras_require=…, tests_require=…, setup_requires=…)` and
//! `setup.cfg`'s `[options]` and `[options.extras_require]`, as written (one requirement a
//! string), for the pins of the tools a project runs (`black~=23.1` in a `quality` extra).

use ruff_python_ast::{Expr, Operator, Stmt};

/// The keywords of `setup()` that hold requirements.
const SETUP_KEYWORDS: [&str; 4] = [
    "install_requires",
    "extras_require",
    "tests_require",
    "setup_requires",
];

/// How many names a value is followed through (`extras_require={"quality": QUALITY}`).
const MAX_DEPTH: usize = 8;

/// The requirement strings of `setup.py`'s `setup(…)` call: literals only, through the
/// module-level names its lists are kept in (`QUALITY = ["black~=23.1"]`) and `+` of lists.
/// Nothing when the file does not parse.
pub(super) fn setup_py(text: &str) -> Vec<String> {
    let Ok(parsed) = ruff_python_parser::parse_module(text) else {
        return Vec::new();
    };
    let body = &parsed.syntax().body;
    let mut out = Vec::new();
    for call in setup_calls(body) {
        for keyword in &call.arguments.keywords {
            let named = keyword
                .arg
                .as_ref()
                .is_some_and(|a| SETUP_KEYWORDS.contains(&a.as_str()));
            if named {
                strings(body, &keyword.value, 0, &mut out);
            }
        }
    }
    out
}

/// The calls of `setup` (`setup(…)`, `setuptools.setup(…)`) anywhere in the module.
pub(crate) fn setup_calls(body: &[Stmt]) -> Vec<&ruff_python_ast::ExprCall> {
    #[derive(Default)]
    struct Calls<'a>(Vec<&'a ruff_python_ast::ExprCall>);
    impl<'a> ruff_python_ast::visitor::Visitor<'a> for Calls<'a> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Call(c) = expr {
                let is_setup = match c.func.as_ref() {
                    Expr::Name(n) => n.id.as_str() == "setup",
                    Expr::Attribute(a) => a.attr.as_str() == "setup",
                    _ => false,
                };
                if is_setup {
                    self.0.push(c);
                }
            }
            ruff_python_ast::visitor::walk_expr(self, expr);
        }
    }
    let mut calls = Calls::default();
    ruff_python_ast::visitor::Visitor::visit_body(&mut calls, body);
    calls.0
}

/// The string literals `value` holds as requirements: a list, tuple or set of them, a dict's
/// values (extras), a `+` of such, a module-level name assigned one.
fn strings(body: &[Stmt], value: &Expr, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Expr::StringLiteral(s) => out.push(s.value.to_str().to_string()),
        Expr::List(l) => l.elts.iter().for_each(|e| strings(body, e, depth, out)),
        Expr::Tuple(t) => t.elts.iter().for_each(|e| strings(body, e, depth, out)),
        Expr::Set(s) => s.elts.iter().for_each(|e| strings(body, e, depth, out)),
        Expr::Starred(s) => strings(body, &s.value, depth, out),
        Expr::Dict(d) => d
            .items
            .iter()
            .for_each(|item| strings(body, &item.value, depth, out)),
        Expr::BinOp(b) if b.op == Operator::Add => {
            strings(body, &b.left, depth, out);
            strings(body, &b.right, depth, out);
        }
        Expr::Name(n) => {
            for assigned in module_values(body, n.id.as_str()) {
                strings(body, assigned, depth + 1, out);
            }
        }
        _ => {}
    }
}

/// The values the module's top level assigns to `name` (`NAME = …`, `NAME: list = …`).
fn module_values<'a>(body: &'a [Stmt], name: &str) -> Vec<&'a Expr> {
    let is_name = |t: &Expr| matches!(t, Expr::Name(n) if n.id.as_str() == name);
    body.iter()
        .filter_map(|stmt| match stmt {
            Stmt::Assign(a) if a.targets.iter().any(is_name) => Some(a.value.as_ref()),
            Stmt::AnnAssign(a) if is_name(&a.target) => a.value.as_deref(),
            _ => None,
        })
        .collect()
}

/// The requirements of `setup.cfg`: `[options]` `install_requires`, `tests_require`,
/// `setup_requires`, and every extra of `[options.extras_require]`, one a line.
pub(super) fn setup_cfg(text: &str) -> Vec<String> {
    let option = ini::ParseOption {
        enabled_quote: false,
        enabled_escape: false,
        enabled_indented_mutiline_value: true,
        ..ini::ParseOption::default()
    };
    let Ok(ini) = ini::Ini::load_from_str_opt(text, option) else {
        return Vec::new();
    };
    let mut values: Vec<&str> = Vec::new();
    if let Some(options) = ini.section(Some("options")) {
        values.extend(
            options
                .iter()
                .filter(|(k, _)| SETUP_KEYWORDS[..].contains(&k.trim()))
                .map(|(_, v)| v),
        );
    }
    if let Some(extras) = ini.section(Some("options.extras_require")) {
        values.extend(extras.iter().map(|(_, v)| v));
    }
    values
        .iter()
        .flat_map(|v| v.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(['#', ';']))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_py_requirements_are_read_through_names_and_sums() {
        let text = "from setuptools import setup\n\nQUALITY = [\"black~=23.1\", \"ruff==0.1.5\"]\nTESTS = [\"pytest\"] + QUALITY\n\nsetup(name=\"pkg\", install_requires=[\"torch\"], extras_require={\"quality\": QUALITY, \"tests\": TESTS})\n";
        let found = setup_py(text);
        assert!(found.contains(&"black~=23.1".to_string()), "{found:?}");
        assert!(found.contains(&"torch".to_string()), "{found:?}");
        assert!(found.contains(&"pytest".to_string()), "{found:?}");
        assert!(setup_py("setup(\n").is_empty());
    }

    #[test]
    fn setup_cfg_requirements_are_read_from_options_and_extras() {
        let text = "[metadata]\nname = pkg\n\n[options]\ninstall_requires =\n    torch\n\n[options.extras_require]\nquality =\n    black~=23.1\n    ruff\n";
        assert_eq!(setup_cfg(text), ["torch", "black~=23.1", "ruff"]);
    }
}
