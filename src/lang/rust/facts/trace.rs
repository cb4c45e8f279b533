//! Where a device index comes from when it is no literal, `const` or `let` of one: the
//! literals a file hides behind a `const` array, a function that returns one or a struct
//! literal's field, and the values the tool cannot follow to a card (a parsed string, a call
//! it does not know). An index that ends at a literal other than the mask's is for review
//! when no safe edit moves it; one read at run time (an option, the env, a config) is the
//! user's choice.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use syn::visit::{self, Visit};
use syn::{Expr, Stmt};

use super::{index_lits, int_lit, str_lit};

/// An integer literal: its digits and its value.
type IntLit = (Range<usize>, u64);

/// The literals of a file that an index may reach through an item.
#[derive(Debug, Default)]
pub(super) struct FileLiterals {
    /// `const GPUS: [usize; 2] = [1, 2];`: each element that is an integer literal.
    pub arrays: HashMap<String, Vec<Option<IntLit>>>,
    /// `fn gpu() -> usize { 1 }`: a function of no parameter whose value is one literal.
    pub returns: HashMap<String, IntLit>,
    /// `"cuda:1"` bound by a `let` or a `const`: the string, where it is written.
    pub strings: HashMap<String, (Range<usize>, String)>,
    /// `fn parse_device(d: &str) -> Option<i32> { … .parse() … }`: a function of one string
    /// parameter that parses a number out of it.
    pub parsers: HashSet<String>,
}

impl FileLiterals {
    pub(super) fn of(file: &syn::File) -> FileLiterals {
        let mut v = FileLiterals::default();
        v.visit_file(file);
        v
    }

    /// `GPUS[0]` of a `const`/`static` array: the element's literal.
    pub(super) fn element(&self, expr: &Expr) -> Option<IntLit> {
        let Expr::Index(ix) = strip(expr) else {
            return None;
        };
        let Expr::Path(p) = ix.expr.as_ref() else {
            return None;
        };
        let (_, at) = int_lit(&ix.index)?;
        let elems = self.arrays.get(&p.path.get_ident()?.to_string())?;
        elems.get(usize::try_from(at).ok()?).cloned().flatten()
    }
}

impl<'ast> Visit<'ast> for FileLiterals {
    fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
        self.item(&c.ident, &c.expr);
        visit::visit_item_const(self, c);
    }

    fn visit_item_static(&mut self, s: &'ast syn::ItemStatic) {
        if matches!(s.mutability, syn::StaticMutability::None) {
            self.item(&s.ident, &s.expr);
        }
        visit::visit_item_static(self, s);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if parses_its_string(&f.sig, &f.block) {
            self.parsers.insert(f.sig.ident.to_string());
        }
        if f.sig.inputs.is_empty() {
            if let Some(Stmt::Expr(e, None)) = f.block.stmts.last() {
                if let [one] = index_lits(e).as_slice() {
                    self.returns.insert(f.sig.ident.to_string(), one.clone());
                }
            }
        }
        visit::visit_item_fn(self, f);
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        let mut pat = &l.pat;
        if let syn::Pat::Type(t) = pat {
            pat = &t.pat;
        }
        if let (syn::Pat::Ident(id), Some(init)) = (pat, &l.init) {
            if let Some(s) = str_lit(&init.expr) {
                self.strings
                    .insert(id.ident.to_string(), (super::range(&init.expr), s));
            }
        }
        visit::visit_local(self, l);
    }
}

impl FileLiterals {
    fn item(&mut self, ident: &syn::Ident, expr: &Expr) {
        match strip(expr) {
            Expr::Array(a) => {
                let elems = a.elems.iter().map(int_lit).collect();
                self.arrays.insert(ident.to_string(), elems);
            }
            e => {
                if let Some(s) = str_lit(e) {
                    self.strings.insert(ident.to_string(), (super::range(e), s));
                }
            }
        }
    }

    /// Why an index that takes `expr` (no literal of its own) must be reviewed: the literal
    /// it hides (a function's return, a parsed string), or a call the tool cannot follow;
    /// `None` for a value read at run time (a field: an option or a config; the env) or a
    /// name (followed through its binding).
    pub(super) fn untraced(&self, expr: &Expr) -> Option<Hidden> {
        let e = strip(expr);
        if let Expr::Call(c) = e {
            if let Expr::Path(p) = c.func.as_ref() {
                if let Some((at, value)) = p
                    .path
                    .get_ident()
                    .filter(|_| c.args.is_empty())
                    .and_then(|f| self.returns.get(&f.to_string()))
                {
                    return Some(Hidden::Returns {
                        name: p.path.segments[0].ident.to_string(),
                        at: at.clone(),
                        value: *value,
                    });
                }
            }
        }
        if let Some((at, text)) = self.parsed_string(e) {
            let value = text
                .rsplit(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|d| d.parse::<u64>().ok());
            return Some(Hidden::Parsed { at, text, value });
        }
        match e {
            _ if run_time(e) => None,
            Expr::Call(_) | Expr::MethodCall(_) | Expr::Macro(_) | Expr::Index(_) => {
                Some(Hidden::Unknown {
                    at: super::range(e),
                })
            }
            _ => None,
        }
    }

    /// `"cuda:1".trim_start_matches("cuda:").parse()`, `spec.parse::<usize>()`: the string
    /// (a literal, or a name bound to one) a chain ending in `parse` reads.
    fn parsed_string(&self, expr: &Expr) -> Option<(Range<usize>, String)> {
        if let Some(arg) = self.parser_arg(expr) {
            return str_lit(strip(arg)).map(|s| (super::range(strip(arg)), s));
        }
        let Expr::MethodCall(m) = expr else {
            return None;
        };
        if m.method != "parse" {
            return None;
        }
        let mut root = m.receiver.as_ref();
        while let Expr::MethodCall(inner) = root {
            root = inner.receiver.as_ref();
        }
        match strip(root) {
            Expr::Path(p) => self.strings.get(&p.path.get_ident()?.to_string()).cloned(),
            e => str_lit(e).map(|s| (super::range(e), s)),
        }
    }
}

impl FileLiterals {
    /// `parse_device(&args.device)`: the argument of a call to one of the file's parsers.
    fn parser_arg<'e>(&self, expr: &'e Expr) -> Option<&'e Expr> {
        let Expr::Call(c) = expr else { return None };
        let Expr::Path(p) = c.func.as_ref() else {
            return None;
        };
        let name = p.path.get_ident()?.to_string();
        match (self.parsers.contains(&name), c.args.first()) {
            (true, Some(arg)) if c.args.len() == 1 => Some(arg),
            _ => None,
        }
    }

    /// `args.device.trim_start_matches("cuda:").parse()`, `parse_device(&args.device)`: a
    /// number parsed from a field (a command-line option whose default may be `"cuda:1"`):
    /// the field's name. `.unwrap_or(…)` of it too, whose literal is another value it takes.
    pub(super) fn parsed_field(&self, expr: &Expr) -> Option<String> {
        let e = match strip(expr) {
            Expr::MethodCall(m) if m.method == "unwrap_or" => strip(&m.receiver),
            e => e,
        };
        let root = match e {
            Expr::MethodCall(m) if m.method == "parse" => {
                let mut root = m.receiver.as_ref();
                while let Expr::MethodCall(inner) = root {
                    root = inner.receiver.as_ref();
                }
                root
            }
            e => self.parser_arg(e)?,
        };
        field_of(root)
    }
}

/// `args.device`, `&args.device`, `args.device.as_str()`, `args.device.clone()`: the field.
fn field_of(expr: &Expr) -> Option<String> {
    match strip(expr) {
        Expr::Field(f) => match &f.member {
            syn::Member::Named(n) => Some(n.to_string()),
            syn::Member::Unnamed(_) => None,
        },
        Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "as_str" | "as_ref" | "clone" | "to_lowercase" | "to_ascii_lowercase" | "trim"
            ) =>
        {
            field_of(&m.receiver)
        }
        _ => None,
    }
}

/// A function of one string parameter (`&str`, `String`, `&String`) whose body parses a
/// number (`.parse()`): what it returns is that number, or a value that holds it.
fn parses_its_string(sig: &syn::Signature, body: &syn::Block) -> bool {
    struct Parses(bool);
    impl<'ast> Visit<'ast> for Parses {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            self.0 |= m.method == "parse";
            visit::visit_expr_method_call(self, m);
        }
    }
    let [syn::FnArg::Typed(param)] = sig.inputs.iter().collect::<Vec<_>>()[..] else {
        return false;
    };
    let mut ty = param.ty.as_ref();
    if let syn::Type::Reference(r) = ty {
        ty = &r.elem;
    }
    let stringy = matches!(ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "str" || s.ident == "String"));
    if !stringy || matches!(sig.output, syn::ReturnType::Default) {
        return false;
    }
    let mut parses = Parses(false);
    parses.visit_block(body);
    parses.0
}

/// Past what does not change the value: parentheses, casts, `&`, `?`, `.unwrap()`,
/// `.expect(…)`.
pub(super) fn strip(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        Expr::Cast(c) => strip(&c.expr),
        Expr::Reference(r) => strip(&r.expr),
        Expr::Try(t) => strip(&t.expr),
        Expr::MethodCall(m)
            if m.method == "unwrap" || m.method == "expect" || m.method == "into" =>
        {
            strip(&m.receiver)
        }
        e => e,
    }
}

/// A value read at run time: a field (a command-line option, a config), a name (followed
/// through its own binding), or anything that reads the env or an option.
fn run_time(expr: &Expr) -> bool {
    struct Reads(bool);
    impl<'ast> Visit<'ast> for Reads {
        fn visit_expr_field(&mut self, _: &'ast syn::ExprField) {
            self.0 = true;
        }
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            let last = p.path.segments.last().map(|s| s.ident.to_string());
            if matches!(last.as_deref(), Some("var" | "var_os" | "args" | "args_os")) {
                self.0 = true;
            }
            visit::visit_expr_path(self, p);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            // `matches.get_one::<usize>("gpu")`, `cfg.get("device")`: an option's value; a
            // string parsed (not a literal's, see `parsed_string`): a spec read at run time.
            let name = m.method.to_string();
            if name.starts_with("get") || name == "value_of" || name == "parse" {
                self.0 = true;
            }
            visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            // `Default::default()`, `CudaDevice::default()`: a type's first device.
            if matches!(c.func.as_ref(), Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "default"))
            {
                self.0 = true;
            }
            visit::visit_expr_call(self, c);
        }
    }
    if matches!(expr, Expr::Path(_) | Expr::Field(_)) {
        return true;
    }
    let mut reads = Reads(false);
    reads.visit_expr(expr);
    reads.0
}

fn line(source: &str, offset: usize) -> usize {
    crate::model::finding::line_column(source, offset).0
}

/// A device index the tool follows to no card it can remap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hidden {
    /// `gpu()` of `fn gpu() -> usize { 1 }`.
    Returns {
        name: String,
        at: Range<usize>,
        value: u64,
    },
    /// `"cuda:1".trim_start_matches("cuda:").parse()`.
    Parsed {
        at: Range<usize>,
        text: String,
        value: Option<u64>,
    },
    /// `c.gpu` of `Cfg { gpu: 1 }`: a field no option sets, given a literal in this file.
    Field {
        name: String,
        at: Range<usize>,
        value: u64,
    },
    /// A parameter of a method taking `self`, whose calls are not followed.
    Param { name: String, of: String },
    /// A call or an element the tool does not know.
    Unknown { at: Range<usize> },
}

impl Hidden {
    /// The literal it ends at, when one.
    pub fn value(&self) -> Option<u64> {
        match self {
            Hidden::Returns { value, .. } | Hidden::Field { value, .. } => Some(*value),
            Hidden::Parsed { value, .. } => *value,
            Hidden::Param { .. } | Hidden::Unknown { .. } => None,
        }
    }

    /// What the index is, for a message.
    pub fn describe(&self, source: &str) -> String {
        match self {
            Hidden::Returns { name, at, value } => {
                format!(
                    "`{name}()`, which returns {value} (line {})",
                    line(source, at.start)
                )
            }
            Hidden::Parsed { at, text, .. } => format!(
                "a number parsed from the string \"{}\" (line {})",
                text.escape_debug(),
                line(source, at.start)
            ),
            Hidden::Field { name, at, value } => format!(
                "the field `{name}`, which a struct literal sets to {value} (line {})",
                line(source, at.start)
            ),
            Hidden::Param { name, of } => {
                format!("`{name}`, a parameter of {of}, whose calls the tool does not follow")
            }
            Hidden::Unknown { at } => {
                let text = source.get(at.clone()).unwrap_or("");
                let shown: String = text.chars().take(40).collect();
                let more = if shown.len() < text.len() { "…" } else { "" };
                format!("`{shown}{more}`, a value the tool cannot follow to a card")
            }
        }
    }
}
