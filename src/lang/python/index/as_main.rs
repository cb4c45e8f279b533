//! Code that makes its module a program when it runs: a decorator that runs its function when
//! the module is `__main__` ([`crate::knowledge::python::MAIN_DECORATORS`]), a call that runs a
//! function with the command line ([`crate::knowledge::python::COMMAND_LINE_CALLS`]).

use ruff_python_ast::Expr;

use super::RawImport;

/// The decorator's name (`call_parse`) when `decorator` is one of the table's, as the file's
/// imports bind it: `@call_parse` after `from fastcore.script import call_parse` (or `*`),
/// `@script.call_parse`, `@fastcore.script.call_parse`, `@begin.start` after `import begin`.
pub(super) fn runs_as_main(decorator: &Expr, imports: &[RawImport]) -> Option<&'static str> {
    let callee = match decorator {
        Expr::Call(c) => c.func.as_ref(),
        other => other,
    };
    crate::knowledge::python::MAIN_DECORATORS
        .iter()
        .find(|(module, name)| names(callee, imports, module, name))
        .map(|(_, name)| *name)
}

/// Whether `callee` is one of the calls that run a function with the command line
/// (`fire.Fire(main)`, `typer.run(main)`), as the file's imports bind it.
pub(super) fn reads_command_line(callee: &Expr, imports: &[RawImport]) -> bool {
    crate::knowledge::python::COMMAND_LINE_CALLS
        .iter()
        .any(|(module, name)| names(callee, imports, module, name))
}

/// Whether `callee`, as written, names `module.name` through one of the file's imports.
fn names(callee: &Expr, imports: &[RawImport], module: &str, name: &str) -> bool {
    let Some(written) = super::dotted(callee) else {
        return false;
    };
    let (head, rest) = match written.split_once('.') {
        Some((head, rest)) => (head, Some(rest)),
        None => (written.as_str(), None),
    };
    let full = format!("{module}.{name}");
    imports.iter().filter(|i| i.level == 0).any(|i| {
        let Some(from) = i.module.as_deref() else {
            return false;
        };
        if i.names.is_empty() {
            // `import a.b` binds `a`; `import a.b as c` binds `c` to `a.b`.
            let bound = i.locals.first().map(String::as_str).unwrap_or("");
            let named = if bound.is_empty() {
                written.clone()
            } else if bound == head {
                rest.map_or_else(|| from.to_string(), |r| format!("{from}.{r}"))
            } else {
                return false;
            };
            named == full
        } else {
            i.names.iter().zip(&i.locals).any(|(n, local)| {
                let qualified = if n == "*" {
                    // `from fastcore.script import *` binds the names as written.
                    format!("{from}.{written}")
                } else if local == head {
                    let at = format!("{from}.{n}");
                    rest.map_or(at.clone(), |r| format!("{at}.{r}"))
                } else {
                    return false;
                };
                qualified == full
            })
        }
    })
}
