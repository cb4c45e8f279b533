//! The command lines a program's code runs (`subprocess.run(["accelerate", "launch", …])`,
//! `os.system("torchrun …")`, a `Popen(cmd, shell=True)` of a command built in a name), as a
//! shell would read them, for `launch.rs`: the program they start is launched as the same
//! command in a shell script would launch it. What the code computes stays a variable
//! (`${lr}`); a name bound to several values gives each command it can make.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, Operator, Stmt};
use ruff_text_size::Ranged;

use crate::knowledge::python::{CHILD_ENV_CALLS, SHELL_CALLS};

/// The most command lines one call may stand for (a name bound in several branches).
const MOST: usize = 8;

/// Each command line the file's code runs, with its 1-based line.
pub(super) fn command_lines(text: &str, body: &[Stmt]) -> Vec<(usize, String)> {
    // Every call that runs a command is named by one of these words (`subprocess.run`,
    // `os.system`, `os.popen`, `os.execve`/`execlp`, `os.spawnve`, a `Popen`,
    // `asyncio.create_subprocess_*`):
    // most files hold none, and their names need no walk.
    const WORDS: &[&str] = &[
        "subprocess",
        "Popen",
        "popen",
        "system",
        "spawn",
        "execv",
        "execl",
    ];
    if !WORDS.iter().any(|w| text.contains(w)) {
        return Vec::new();
    }
    let mut scopes = Scopes::default();
    scopes.visit_body(body);
    let lines = crate::base::line_index::LineIndex::new(text);
    let mut out = Vec::new();
    for (scope, call, arg) in &scopes.calls {
        let reader = Reader {
            scopes: &scopes,
            scope: *scope,
        };
        for command in reader.command(arg, 0) {
            out.push((lines.line(call.to_usize()), command));
        }
    }
    out
}

/// The names each function binds (`0`: the module), the imports' local names, and the calls
/// that run a command: in which scope, where, and the command's expression.
#[derive(Default)]
struct Scopes<'a> {
    bindings: Vec<Vec<(&'a str, &'a Expr)>>,
    parent: Vec<usize>,
    current: usize,
    aliases: Vec<(String, String)>,
    calls: Vec<(usize, ruff_text_size::TextSize, &'a Expr)>,
}

impl<'a> Visitor<'a> for Scopes<'a> {
    fn visit_body(&mut self, body: &'a [Stmt]) {
        if self.bindings.is_empty() {
            self.bindings.push(Vec::new());
            self.parent.push(0);
        }
        visitor::walk_body(self, body);
    }

    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => {
                let outer = self.current;
                self.bindings.push(Vec::new());
                self.parent.push(outer);
                self.current = self.bindings.len() - 1;
                visitor::walk_body(self, &f.body);
                self.current = outer;
                return;
            }
            Stmt::Assign(a) => {
                if let [Expr::Name(n)] = a.targets.as_slice() {
                    self.bindings[self.current].push((n.id.as_str(), &a.value));
                }
            }
            Stmt::AnnAssign(a) => {
                if let (Expr::Name(n), Some(v)) = (a.target.as_ref(), &a.value) {
                    self.bindings[self.current].push((n.id.as_str(), v));
                }
            }
            Stmt::Import(i) => {
                for alias in &i.names {
                    let name = alias.name.to_string();
                    let local = alias.asname.as_ref().map_or_else(
                        || name.split('.').next().unwrap_or("").to_string(),
                        |a| a.to_string(),
                    );
                    let full = if alias.asname.is_some() {
                        name
                    } else {
                        local.clone()
                    };
                    self.aliases.push((local, full));
                }
            }
            Stmt::ImportFrom(i) if i.level == 0 => {
                let module = i.module.as_ref().map_or("", |m| m.as_str());
                for alias in &i.names {
                    let local = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                    self.aliases
                        .push((local, format!("{module}.{}", alias.name)));
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            let name = dotted(&call.func).map(|n| self.qualified(&n));
            let runs = name.as_deref().is_some_and(|n| {
                SHELL_CALLS.contains(&n) || CHILD_ENV_CALLS.contains(&n) || n.ends_with("Popen")
            });
            let command = call.arguments.args.first().or_else(|| {
                call.arguments
                    .keywords
                    .iter()
                    .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "args"))
                    .map(|k| &k.value)
            });
            if let (true, Some(command)) = (runs, command) {
                self.calls.push((self.current, expr.start(), command));
            }
        }
        visitor::walk_expr(self, expr);
    }
}

impl Scopes<'_> {
    /// `sp.run` as `subprocess.run` (`import subprocess as sp`), `Popen` as
    /// `subprocess.Popen` (`from subprocess import Popen`).
    fn qualified(&self, name: &str) -> String {
        let (head, rest) = name.split_once('.').unwrap_or((name, ""));
        match self.aliases.iter().rev().find(|(local, _)| local == head) {
            Some((_, full)) if rest.is_empty() => full.clone(),
            Some((_, full)) => format!("{full}.{rest}"),
            None => name.to_string(),
        }
    }
}

/// `a.b.c` of a name or an attribute chain.
fn dotted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(format!("{}.{}", dotted(&a.value)?, a.attr)),
        _ => None,
    }
}

/// Reads the values of expressions in one scope.
struct Reader<'s, 'a> {
    scopes: &'s Scopes<'a>,
    scope: usize,
}

impl<'a> Reader<'_, 'a> {
    /// The values a name is bound to in the scope, else in the scopes around it.
    fn bound(&self, name: &str) -> Vec<&'a Expr> {
        let mut scope = self.scope;
        loop {
            let found: Vec<&Expr> = self.scopes.bindings[scope]
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, v)| *v)
                .collect();
            if !found.is_empty() || scope == 0 {
                return found;
            }
            scope = self.scopes.parent[scope];
        }
    }

    /// The command lines an expression may be: a string, or a list of words joined.
    fn command(&self, expr: &'a Expr, depth: usize) -> Vec<String> {
        if depth > 4 {
            return Vec::new();
        }
        match expr {
            Expr::Name(n) => {
                let mut out: Vec<String> = (self.bound(n.id.as_str()).into_iter())
                    .flat_map(|v| self.command(v, depth + 1))
                    .collect();
                out.truncate(MOST);
                out
            }
            Expr::List(_) | Expr::Tuple(_) | Expr::BinOp(_) => match self.words(expr, depth) {
                Some(words) => vec![joined(&words)],
                None => self.text(expr, depth),
            },
            _ => self.text(expr, depth),
        }
    }

    /// The words of a list of them (`["torchrun", "--nproc_per_node", "2", script]`), lists
    /// added together; a word computed is a variable.
    fn words(&self, expr: &'a Expr, depth: usize) -> Option<Vec<String>> {
        match expr {
            Expr::List(l) => Some(l.elts.iter().map(|e| self.word(e, depth)).collect()),
            Expr::Tuple(t) => Some(t.elts.iter().map(|e| self.word(e, depth)).collect()),
            Expr::BinOp(b) if b.op == Operator::Add => {
                let mut left = self.words(&b.left, depth)?;
                left.extend(
                    self.words(&b.right, depth)
                        .unwrap_or_else(|| vec!["${…}".into()]),
                );
                Some(left)
            }
            Expr::Name(n) if depth < 4 => match self.bound(n.id.as_str()).as_slice() {
                [one] => self.words(one, depth + 1),
                _ => None,
            },
            _ => None,
        }
    }

    fn word(&self, expr: &'a Expr, depth: usize) -> String {
        if dotted(expr).is_some_and(|d| self.scopes.qualified(&d) == "sys.executable") {
            return "python".into();
        }
        match self.text(expr, depth + 1).as_slice() {
            [one] => one.clone(),
            _ => placeholder(expr),
        }
    }

    /// The strings an expression may be: literals, f-strings and `+` with their names read,
    /// `" ".join([…])`, a path built around a literal file (`files("pkg").joinpath("x.py")`).
    fn text(&self, expr: &'a Expr, depth: usize) -> Vec<String> {
        if depth > 4 {
            return vec![placeholder(expr)];
        }
        match expr {
            Expr::StringLiteral(s) => vec![s.value.to_str().to_string()],
            Expr::FString(f) => {
                let mut out = vec![String::new()];
                for part in f.value.iter() {
                    let pieces = match part {
                        ruff_python_ast::FStringPart::Literal(l) => vec![l.value.to_string()],
                        ruff_python_ast::FStringPart::FString(f) => {
                            self.fstring(&f.elements, depth)
                        }
                    };
                    out = product(&out, &pieces);
                }
                out
            }
            Expr::BinOp(b) if b.op == Operator::Add => product(
                &self.text(&b.left, depth + 1),
                &self.text(&b.right, depth + 1),
            ),
            Expr::Name(n) => {
                let bound = self.bound(n.id.as_str());
                if bound.is_empty() {
                    return vec![placeholder(expr)];
                }
                let mut out: Vec<String> = bound
                    .into_iter()
                    .flat_map(|v| self.text(v, depth + 1))
                    .collect();
                out.dedup();
                out.truncate(MOST);
                out
            }
            Expr::Call(c) => {
                let space_join = matches!(c.func.as_ref(), Expr::Attribute(a) if a.attr.as_str() == "join"
                    && matches!(a.value.as_ref(), Expr::StringLiteral(s) if s.value.to_str() == " "));
                let join = space_join
                    || dotted(&c.func).is_some_and(|d| self.scopes.qualified(&d) == "shlex.join");
                match (join, c.arguments.args.first()) {
                    (true, Some(list)) => match self.words(list, depth) {
                        Some(w) => vec![joined(&w)],
                        None => vec![placeholder(expr)],
                    },
                    _ => vec![path_around_file(expr).unwrap_or_else(|| placeholder(expr))],
                }
            }
            Expr::If(e) => {
                let mut out = self.text(&e.body, depth + 1);
                out.extend(self.text(&e.orelse, depth + 1));
                out.truncate(MOST);
                out
            }
            Expr::BinOp(b) if b.op == Operator::Div => {
                vec![path_around_file(expr).unwrap_or_else(|| placeholder(expr))]
            }
            _ => vec![placeholder(expr)],
        }
    }

    fn fstring(
        &self,
        elements: &'a ruff_python_ast::InterpolatedStringElements,
        depth: usize,
    ) -> Vec<String> {
        let mut out = vec![String::new()];
        for element in elements.iter() {
            let pieces = match element {
                ruff_python_ast::InterpolatedStringElement::Literal(l) => {
                    vec![l.value.to_string()]
                }
                ruff_python_ast::InterpolatedStringElement::Interpolation(i) => {
                    self.text(&i.expression, depth + 1)
                }
            };
            out = product(&out, &pieces);
        }
        out
    }
}

/// Every string of `left` followed by every one of `right`, at most [`MOST`].
fn product(left: &[String], right: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for l in left {
        for r in right {
            if out.len() < MOST {
                out.push(format!("{l}{r}"));
            }
        }
    }
    out
}

/// A value the code computes, as a shell variable: a word the launch parser never reads as
/// a count or a path of the tree.
fn placeholder(expr: &Expr) -> String {
    match expr {
        Expr::Name(n) => format!("${{{}}}", n.id),
        _ => "${…}".to_string(),
    }
}

/// A path built from literals around a Python file (`os.path.join(ROOT, "tools", "train.py")`,
/// `Path(__file__).parent / "train.py"`, `files("pkg").joinpath("train/x.py")`): its literal
/// parts, joined (the folders it starts from are found by the file's tail).
fn path_around_file(expr: &Expr) -> Option<String> {
    fn literals<'e>(expr: &'e Expr, out: &mut Vec<&'e str>) {
        match expr {
            Expr::StringLiteral(s) => out.push(s.value.to_str()),
            Expr::Call(c) => {
                literals(&c.func, out);
                for a in c.arguments.args.iter() {
                    literals(a, out);
                }
            }
            Expr::Attribute(a) => literals(&a.value, out),
            Expr::BinOp(b) if matches!(b.op, Operator::Div | Operator::Add) => {
                literals(&b.left, out);
                literals(&b.right, out);
            }
            _ => {}
        }
    }
    let mut parts = Vec::new();
    literals(expr, &mut parts);
    let last = parts.last()?;
    if !last.ends_with(".py") || parts.iter().any(|p| p.contains(char::is_whitespace)) {
        return None;
    }
    let path: Vec<&str> = parts
        .iter()
        .flat_map(|p| p.split('/'))
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    Some(path.join("/"))
}

/// Words as one command line, a word with a space quoted.
fn joined(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if w.contains(char::is_whitespace) || w.is_empty() {
                format!("'{w}'")
            } else {
                w.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(source: &str) -> Vec<(usize, String)> {
        let parsed = ruff_python_parser::parse_module(source).unwrap();
        command_lines(source, &parsed.syntax().body)
    }

    #[test]
    fn the_command_lines_code_runs() {
        assert_eq!(
            lines("import subprocess\nsubprocess.run([\"accelerate\", \"launch\", \"x.py\", \"--lr\", lr])\n"),
            vec![(2, "accelerate launch x.py --lr ${lr}".to_string())]
        );
        assert_eq!(
            lines("import os\nos.system(\"torchrun --nproc_per_node 2 train.py\")\n"),
            vec![(2, "torchrun --nproc_per_node 2 train.py".to_string())]
        );
        assert_eq!(
            lines("import subprocess as sp\nF = \"train.py\"\n\ndef go(lr):\n    cmd = f'accelerate launch \"{F}\" --lr {lr}'\n    return sp.Popen(cmd, shell=True)\n"),
            vec![(6, "accelerate launch \"train.py\" --lr ${lr}".to_string())]
        );
        assert_eq!(
            lines("from subprocess import Popen\nfrom importlib.resources import files\nT = str(files(\"pkg\").joinpath(\"train/x.py\"))\n\ndef go(p):\n    if p:\n        a = f\"--mixed_precision={p}\"\n    else:\n        a = \"\"\n    Popen(f\"accelerate launch {a} {T}\")\n    Popen(\" \".join([\"torchrun\", \"--nproc_per_node\", n, T]))\n"),
            vec![
                (10, "accelerate launch --mixed_precision=${p} pkg/train/x.py".to_string()),
                (10, "accelerate launch  pkg/train/x.py".to_string()),
                (11, "torchrun --nproc_per_node ${n} pkg/train/x.py".to_string()),
            ]
        );
    }
}
