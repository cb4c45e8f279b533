//! Command-line options that name a card (`--gpus`, `--gpu-id`, `--cuda`) and whose value selects
//! nothing: never read, or only echoed. After the header replaced the mask write an option fed,
//! the option silently does nothing and its echo lies; the rules report it for a person.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::ops::Range;

use ruff_python_ast::visitor::{walk_expr, Visitor};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

use super::literals::is_echo;

/// A read of a parsed option's value, in any of the forms argparse code writes it: the holder
/// is the namespace (`args.gpu`, `getattr(args, "gpu")`, `vars(args)["gpu"]`,
/// `args.__dict__.get("gpu")`) or, with `dict`, a name that may hold `vars(args)`
/// (`args_dict["gpu"]`, `args_dict.get("gpu")`), which the caller judges.
#[derive(Debug, Clone, Copy)]
pub struct OptionAccess<'e> {
    pub holder: &'e Expr,
    pub dict: bool,
    pub dest: &'e str,
}

pub fn option_access(expr: &Expr) -> Option<OptionAccess<'_>> {
    match expr {
        Expr::Attribute(a) if a.attr.as_str() != "__dict__" => Some(OptionAccess {
            holder: &a.value,
            dict: false,
            dest: a.attr.as_str(),
        }),
        Expr::Subscript(s) => match s.slice.as_ref() {
            Expr::StringLiteral(k) => keyed(&s.value, k.value.to_str()),
            _ => None,
        },
        Expr::Call(c) => {
            let (first, key) = match &c.arguments.args[..] {
                [first, Expr::StringLiteral(k)] | [first, Expr::StringLiteral(k), _] => {
                    (Some(first), k)
                }
                [Expr::StringLiteral(k)] | [Expr::StringLiteral(k), _] => (None, k),
                _ => return None,
            };
            match (c.func.as_ref(), first) {
                (Expr::Name(f), Some(holder)) if f.id.as_str() == "getattr" => Some(OptionAccess {
                    holder,
                    dict: false,
                    dest: key.value.to_str(),
                }),
                (Expr::Attribute(f), None) if f.attr.as_str() == "get" => {
                    keyed(&f.value, key.value.to_str())
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// `D["dest"]`, `D.get("dest")`: the namespace itself when D is `vars(args)`.
fn keyed<'e>(holder: &'e Expr, dest: &'e str) -> Option<OptionAccess<'e>> {
    let (holder, dict) = match namespace_of_dict(holder) {
        Some(ns) => (ns, false),
        None => (holder, true),
    };
    Some(OptionAccess { holder, dict, dest })
}

/// `parser.parse_args()`, `parser.parse_known_args()` (or its first item): the namespace.
pub fn parses_args(expr: &Expr) -> bool {
    let call = match expr {
        Expr::Call(c) => c,
        Expr::Subscript(s) => match s.value.as_ref() {
            Expr::Call(c) => c,
            _ => return false,
        },
        _ => return false,
    };
    matches!(call.func.as_ref(), Expr::Attribute(a) if matches!(a.attr.as_str(), "parse_args" | "parse_known_args"))
}

/// The namespace a dict of it is made from: `vars(args)`, `args.__dict__`.
pub fn namespace_of_dict(expr: &Expr) -> Option<&Expr> {
    match expr {
        Expr::Call(c) if c.arguments.keywords.is_empty() => {
            match (c.func.as_ref(), &c.arguments.args[..]) {
                (Expr::Name(f), [ns]) if f.id.as_str() == "vars" => Some(ns),
                _ => None,
            }
        }
        Expr::Attribute(a) if a.attr.as_str() == "__dict__" => Some(&a.value),
        _ => None,
    }
}

/// A device option whose value reaches nothing but output.
#[derive(Debug, Clone)]
pub struct IdleOption {
    /// The `add_argument(...)` call.
    pub at: Range<usize>,
    pub option: String,
    pub dest: String,
}

pub fn idle_device_options(body: &[Stmt]) -> Vec<IdleOption> {
    let mut v = Options::default();
    v.visit_body(body);
    // The parsed namespace handed on whole to code of another module (`train(args)` with
    // `train` imported): its options may be read there. Handed to a function of this file, its
    // reads are this file's (`main(parser.parse_args())`).
    let elsewhere = v.handed.iter().any(|callee| {
        callee
            .as_ref()
            .is_none_or(|name| !v.local_fns.contains(name))
    });
    let parsed = !v.namespaces.is_empty() || !v.handed.is_empty();
    let bare_elsewhere = v
        .namespaces
        .iter()
        .any(|n| v.bare.contains(n) && !v.handed_names.contains(n));
    if !parsed || elsewhere || bare_elsewhere {
        return Vec::new();
    }
    v.declared
        .into_iter()
        .filter(|o| v.reads.get(&o.dest).copied().unwrap_or(0) == 0)
        .collect()
}

#[derive(Default)]
struct Options {
    declared: Vec<IdleOption>,
    /// Reads of `X.dest` that are not output, by dest.
    reads: HashMap<String, usize>,
    /// Names bound to `….parse_args()` / `….parse_known_args()`.
    namespaces: HashSet<String>,
    /// Names loaded other than as `name.attr`.
    bare: HashSet<String>,
    echo: usize,
    /// Functions defined in the file.
    local_fns: HashSet<String>,
    /// Calls the namespace is handed to whole: the callee's name (`None`: not a plain name).
    handed: Vec<Option<String>>,
    /// Namespace names that are loaded bare only to be handed to a call.
    handed_names: HashSet<String>,
}

fn declared(call: &ruff_python_ast::ExprCall) -> Option<IdleOption> {
    let Expr::Attribute(a) = call.func.as_ref() else {
        return None;
    };
    if a.attr.as_str() != "add_argument" {
        return None;
    }
    let flags: Vec<&str> = call
        .arguments
        .args
        .iter()
        .filter_map(|e| match e {
            Expr::StringLiteral(s) if s.value.to_str().starts_with('-') => Some(s.value.to_str()),
            _ => None,
        })
        .collect();
    let option = flags
        .iter()
        .find(|f| f.starts_with("--"))
        .or(flags.first())?
        .to_string();
    if !flags.iter().any(|f| {
        let f = f.to_ascii_lowercase();
        // A card option (`--gpus`, `--gpu-device-id`, `--cuda`); `--device` also chooses
        // between the CPU and a GPU, and a program may keep it on purpose.
        crate::knowledge::CARD_WORDS.iter().any(|w| f.contains(w))
    }) {
        return None;
    }
    let dest = call
        .arguments
        .keywords
        .iter()
        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "dest"))
        .and_then(|k| match &k.value {
            Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
            _ => None,
        })
        .unwrap_or_else(|| option.trim_start_matches('-').replace('-', "_"));
    let r = call.range();
    Some(IdleOption {
        at: r.start().to_usize()..r.end().to_usize(),
        option,
        dest,
    })
}

impl<'a> Options {
    /// `args["gpu"]`, `args.get("gpu")`, `getattr(args, "gpu")`: a read of the option as
    /// `args.gpu` is, the namespace not handed on.
    fn keyed_read(&mut self, expr: &'a Expr, read: OptionAccess<'a>) {
        if self.echo == 0 {
            *self.reads.entry(read.dest.to_string()).or_default() += 1;
        }
        if !matches!(read.holder, Expr::Name(_)) && !parses_args(read.holder) {
            self.visit_expr(read.holder);
        }
        if let Expr::Call(c) = expr {
            for arg in &c.arguments.args {
                if !std::ptr::eq(arg, read.holder) {
                    self.visit_expr(arg);
                }
            }
        }
    }
}

impl<'a> Visitor<'a> for Options {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::FunctionDef(d) = stmt {
            self.local_fns.insert(d.name.to_string());
        }
        if let Stmt::Assign(a) = stmt {
            // `args = vars(parser.parse_args())`, `d = vars(args)`: a dict of the namespace,
            // whose keys are read as its attributes are.
            let dict_of = namespace_of_dict(&a.value).filter(|ns| {
                parses_args(ns)
                    || matches!(ns, Expr::Name(n) if self.namespaces.contains(n.id.as_str()))
            });
            if dict_of.is_some() {
                for t in &a.targets {
                    if let Expr::Name(n) = t {
                        self.namespaces.insert(n.id.to_string());
                    }
                }
                return;
            }
            if let Expr::Call(c) = a.value.as_ref() {
                if let Expr::Attribute(f) = c.func.as_ref() {
                    if matches!(f.attr.as_str(), "parse_args" | "parse_known_args") {
                        for t in &a.targets {
                            match t {
                                Expr::Name(n) => {
                                    self.namespaces.insert(n.id.to_string());
                                }
                                Expr::Tuple(t) => {
                                    if let Some(Expr::Name(n)) = t.elts.first() {
                                        self.namespaces.insert(n.id.to_string());
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
        ruff_python_ast::visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let (Expr::Subscript(_) | Expr::Call(_), Some(read)) = (expr, option_access(expr)) {
            self.keyed_read(expr, read);
            return;
        }
        match expr {
            Expr::Call(c) => {
                if let Some(option) = declared(c) {
                    self.declared.push(option);
                }
                let echo = is_echo(&c.func);
                // The namespace handed on whole: `f(args)`, `f(parser.parse_args())`.
                let callee = match c.func.as_ref() {
                    Expr::Name(n) => Some(n.id.to_string()),
                    _ => None,
                };
                for arg in &c.arguments.args {
                    match arg {
                        Expr::Name(n) if self.namespaces.contains(n.id.as_str()) => {
                            self.handed.push(callee.clone());
                            self.handed_names.insert(n.id.to_string());
                        }
                        Expr::Call(inner)
                            if matches!(inner.func.as_ref(), Expr::Attribute(f)
                                if matches!(f.attr.as_str(), "parse_args" | "parse_known_args")) =>
                        {
                            self.handed.push(callee.clone());
                        }
                        _ => {}
                    }
                }
                self.visit_expr(&c.func);
                self.echo += usize::from(echo);
                for arg in &c.arguments.args {
                    self.visit_expr(arg);
                }
                for k in &c.arguments.keywords {
                    self.visit_expr(&k.value);
                }
                self.echo -= usize::from(echo);
            }
            Expr::Attribute(a) => {
                if let Expr::Name(_) = a.value.as_ref() {
                    if self.echo == 0 {
                        *self.reads.entry(a.attr.to_string()).or_default() += 1;
                    }
                } else {
                    self.visit_expr(&a.value);
                }
            }
            Expr::Name(n) if n.ctx.is_load() => {
                self.bare.insert(n.id.to_string());
            }
            _ => walk_expr(self, expr),
        }
    }
}
