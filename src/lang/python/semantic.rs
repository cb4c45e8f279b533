//! Which local names stand for which modules: `import torch as t`, `from torch import cuda`,
//! `import os as _os`, `from os import environ`. Scopes are merged: a name bound by an import
//! anywhere in the file resolves everywhere, which errs towards finding more.

use rustc_hash::FxHashMap as HashMap;

use ruff_python_ast::visitor::{walk_stmt, Visitor};
use ruff_python_ast::{Expr, Stmt};

/// True for `torch`, `torch.cuda`, `TTS.api`, … but not for `torchmetrics_like`.
pub fn is_gpu_module(module: &str) -> bool {
    let top = module.split('.').next().unwrap_or(module);
    crate::knowledge::python::gpu_frameworks().any(|m| m == top)
}

/// Top-level modules of the standard library (Python 3.11's `sys.stdlib_module_names`, public
/// ones): importing them never starts a GPU, so the header may come after them.
const STDLIB: &[&str] = &[
    "abc",
    "aifc",
    "argparse",
    "array",
    "ast",
    "asynchat",
    "asyncio",
    "asyncore",
    "atexit",
    "audioop",
    "base64",
    "bdb",
    "binascii",
    "bisect",
    "builtins",
    "bz2",
    "cProfile",
    "calendar",
    "cgi",
    "cgitb",
    "chunk",
    "cmath",
    "cmd",
    "code",
    "codecs",
    "codeop",
    "collections",
    "colorsys",
    "compileall",
    "concurrent",
    "configparser",
    "contextlib",
    "contextvars",
    "copy",
    "copyreg",
    "crypt",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "dbm",
    "decimal",
    "difflib",
    "dis",
    "distutils",
    "doctest",
    "email",
    "encodings",
    "ensurepip",
    "enum",
    "errno",
    "faulthandler",
    "fcntl",
    "filecmp",
    "fileinput",
    "fnmatch",
    "fractions",
    "ftplib",
    "functools",
    "gc",
    "genericpath",
    "getopt",
    "getpass",
    "gettext",
    "glob",
    "graphlib",
    "grp",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "imaplib",
    "imghdr",
    "imp",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "lib2to3",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "mailbox",
    "mailcap",
    "marshal",
    "math",
    "mimetypes",
    "mmap",
    "modulefinder",
    "msvcrt",
    "multiprocessing",
    "netrc",
    "nntplib",
    "nt",
    "ntpath",
    "numbers",
    "opcode",
    "operator",
    "optparse",
    "os",
    "ossaudiodev",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "pipes",
    "pkgutil",
    "platform",
    "plistlib",
    "poplib",
    "posix",
    "posixpath",
    "pprint",
    "profile",
    "pstats",
    "pty",
    "pwd",
    "py_compile",
    "pyclbr",
    "pydoc",
    "queue",
    "quopri",
    "random",
    "re",
    "readline",
    "reprlib",
    "resource",
    "rlcompleter",
    "runpy",
    "sched",
    "secrets",
    "select",
    "selectors",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "site",
    "smtplib",
    "sndhdr",
    "socket",
    "socketserver",
    "spwd",
    "sqlite3",
    "ssl",
    "stat",
    "statistics",
    "string",
    "stringprep",
    "struct",
    "subprocess",
    "sunau",
    "symtable",
    "sys",
    "sysconfig",
    "syslog",
    "tabnanny",
    "tarfile",
    "telnetlib",
    "tempfile",
    "termios",
    "textwrap",
    "threading",
    "time",
    "timeit",
    "tkinter",
    "token",
    "tokenize",
    "tomllib",
    "trace",
    "traceback",
    "tracemalloc",
    "tty",
    "types",
    "typing",
    "unicodedata",
    "unittest",
    "urllib",
    "uu",
    "uuid",
    "venv",
    "warnings",
    "wave",
    "weakref",
    "webbrowser",
    "winreg",
    "winsound",
    "wsgiref",
    "xdrlib",
    "xml",
    "xmlrpc",
    "zipapp",
    "zipfile",
    "zipimport",
    "zlib",
    "zoneinfo",
    "__future__",
];

/// True for `os`, `os.path`, `json`, … : a standard-library module.
pub fn is_stdlib_module(module: &str) -> bool {
    let top = module.split('.').next().unwrap_or(module);
    STDLIB.contains(&top)
}

#[derive(Debug, Default)]
pub struct Bindings {
    names: HashMap<String, String>,
}

impl Bindings {
    pub fn collect(body: &[Stmt]) -> Bindings {
        let mut collector = Collector::default();
        collector.visit_body(body);
        let mut bindings = Bindings {
            names: collector.names,
        };
        // `env = os.environ`: an alias of the environment (a copy, `dict(os.environ)`, is not).
        // `tc = torch.cuda`, `cuda = t.cuda`: an alias of what an import binds, when the name
        // is bound nowhere else (a module, a function of one).
        let mut aliases = Vec::new();
        for (alias, value) in collector.assigned {
            if bindings.is(value, "os.environ") {
                bindings.names.insert(alias, "os.environ".into());
                continue;
            }
            let root = {
                let mut at = value;
                while let Expr::Attribute(a) = at {
                    at = &a.value;
                }
                match at {
                    Expr::Name(n) => n.id.as_str(),
                    _ => continue,
                }
            };
            let once = collector.bound.get(&alias) == Some(&1);
            if once && bindings.names.contains_key(root) && !bindings.names.contains_key(&alias) {
                if let Some(q) = bindings.qualified(value) {
                    aliases.push((alias, q));
                }
            }
        }
        bindings.names.extend(aliases);
        bindings
    }

    /// The dotted name an expression refers to: `t.cuda.set_device` → `torch.cuda.set_device`.
    /// Names not bound by an import resolve to themselves, so builtins and locals still match
    /// by their plain name.
    /// Whether `expr` is `dotted` (`qualified(expr) == Some(dotted)`), without building the
    /// name: asked of every assignment target and subscript.
    pub fn is(&self, expr: &Expr, dotted: &str) -> bool {
        match expr {
            Expr::Name(name) => {
                let id = name.id.as_str();
                self.names.get(id).map_or(id, String::as_str) == dotted
            }
            Expr::Attribute(attr) => dotted
                .strip_suffix(attr.attr.as_str())
                .and_then(|rest| rest.strip_suffix('.'))
                .is_some_and(|base| self.is(&attr.value, base)),
            _ => false,
        }
    }

    /// The dotted names the file's imports bind (`torch`, `argparse.Namespace`).
    pub fn imported(&self) -> impl Iterator<Item = &str> {
        self.names.values().map(String::as_str)
    }

    pub fn qualified(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Name(name) => {
                let id = name.id.as_str();
                Some(
                    self.names
                        .get(id)
                        .cloned()
                        .unwrap_or_else(|| id.to_string()),
                )
            }
            Expr::Attribute(attr) => {
                let base = self.qualified(&attr.value)?;
                Some(format!("{base}.{}", attr.attr.as_str()))
            }
            _ => None,
        }
    }
}

#[derive(Default)]
struct Collector<'a> {
    names: HashMap<String, String>,
    assigned: Vec<(String, &'a Expr)>,
    /// How many times each name is bound by an assignment, a loop, a `with`, a parameter.
    bound: HashMap<String, usize>,
}

impl Collector<'_> {
    fn bind(&mut self, target: &Expr) {
        match target {
            Expr::Name(n) => *self.bound.entry(n.id.to_string()).or_default() += 1,
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.bind(e)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.bind(e)),
            Expr::Starred(st) => self.bind(&st.value),
            _ => {}
        }
    }
}

impl<'a> Visitor<'a> for Collector<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Assign(a) => a.targets.iter().for_each(|t| self.bind(t)),
            Stmt::AnnAssign(a) => self.bind(&a.target),
            Stmt::AugAssign(a) => self.bind(&a.target),
            Stmt::For(f) => self.bind(&f.target),
            Stmt::With(w) => w
                .items
                .iter()
                .filter_map(|i| i.optional_vars.as_deref())
                .for_each(|v| self.bind(v)),
            Stmt::FunctionDef(d) => {
                for p in d.parameters.iter() {
                    *self.bound.entry(p.name().to_string()).or_default() += 2;
                }
            }
            _ => {}
        }
        match stmt {
            Stmt::Assign(assign)
                if matches!(assign.value.as_ref(), Expr::Name(_) | Expr::Attribute(_)) =>
            {
                for t in &assign.targets {
                    if let Expr::Name(n) = t {
                        self.assigned
                            .push((n.id.as_str().to_string(), &assign.value));
                    }
                }
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    let module = alias.name.as_str();
                    match &alias.asname {
                        Some(asname) => {
                            self.names.insert(asname.as_str().into(), module.into());
                        }
                        None => {
                            let top = module.split('.').next().unwrap_or(module);
                            self.names.insert(top.into(), top.into());
                        }
                    }
                }
            }
            Stmt::ImportFrom(from) if from.level == 0 => {
                if let Some(module) = &from.module {
                    for alias in &from.names {
                        let local = alias.asname.as_ref().unwrap_or(&alias.name).as_str();
                        let full = format!("{}.{}", module.as_str(), alias.name.as_str());
                        self.names.insert(local.into(), full);
                    }
                }
            }
            _ => {}
        }
        walk_stmt(self, stmt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_python_ast::Stmt;

    fn qualified_of_last_expr(src: &str) -> Option<String> {
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        let body = &parsed.syntax().body;
        let bindings = Bindings::collect(body);
        match body.last() {
            Some(Stmt::Expr(e)) => match e.value.as_ref() {
                Expr::Call(call) => bindings.qualified(&call.func),
                other => bindings.qualified(other),
            },
            _ => None,
        }
    }

    #[test]
    fn follows_aliases() {
        assert_eq!(
            qualified_of_last_expr("import torch as t\nt.cuda.set_device(1)\n").as_deref(),
            Some("torch.cuda.set_device")
        );
        assert_eq!(
            qualified_of_last_expr("from torch import cuda\ncuda.set_device(1)\n").as_deref(),
            Some("torch.cuda.set_device")
        );
        assert_eq!(
            qualified_of_last_expr("import os as _os\n_os.putenv('A', 'b')\n").as_deref(),
            Some("os.putenv")
        );
        assert_eq!(
            qualified_of_last_expr("def f():\n    import torch.cuda\ntorch.cuda.device(1)\n")
                .as_deref(),
            Some("torch.cuda.device")
        );
        // An assignment that names what an import binds is an alias; one rebound is not.
        assert_eq!(
            qualified_of_last_expr("import torch as t\ntc = t.cuda\ntc.set_device(1)\n").as_deref(),
            Some("torch.cuda.set_device")
        );
        assert_eq!(
            qualified_of_last_expr("import torch\ntc = torch.cuda\ntc = None\ntc.set_device(1)\n")
                .as_deref(),
            Some("tc.set_device")
        );
    }

    #[test]
    fn is_agrees_with_qualified() {
        let src = "import os as _os\nfrom os import environ as E\nimport os.path\nenv = _os.environ\n_os.environ\nE\nenv\nos.path.join\nenviron\nos.environ.x\nf().environ\n";
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        let body = &parsed.syntax().body;
        let bindings = Bindings::collect(body);
        let exprs: Vec<&Expr> = body
            .iter()
            .filter_map(|s| match s {
                Stmt::Expr(e) => Some(e.value.as_ref()),
                _ => None,
            })
            .collect();
        let environ: Vec<bool> = exprs.iter().map(|e| bindings.is(e, "os.environ")).collect();
        assert_eq!(
            environ,
            [true, true, true, false, false, false, false],
            "{src}"
        );
        for e in &exprs {
            for dotted in ["os.environ", "os.path.join", "environ", "os", "_os.environ"] {
                assert_eq!(
                    bindings.is(e, dotted),
                    bindings.qualified(e).as_deref() == Some(dotted),
                    "{dotted}"
                );
            }
        }
    }

    #[test]
    fn gpu_modules_match_on_the_top_package() {
        assert!(is_gpu_module("torch.cuda"));
        assert!(is_gpu_module("TTS.api"));
        assert!(!is_gpu_module("torchmetrics"));
        assert!(!is_gpu_module("os"));
    }
}
