//! Simple local data flow: where a name used at a device sink gets its value. Module
//! constants, parameter defaults, local and annotated assignments, `self.x = ...` in a class,
//! argparse defaults read back as `args.dest`, dict values read by key or `.get(key, default)`.
//! Only what the code itself shows: a value that comes from outside stays unknown.

use rustc_hash::FxHashMap as HashMap;
use std::ops::Range;

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, Stmt};

use super::range;

/// A function's names: parameters with their defaults, and its local assignments.
#[derive(Debug, Default)]
pub struct FunctionScope<'a> {
    pub range: Range<usize>,
    pub class: Option<String>,
    /// The name the `def` binds.
    pub name: &'a str,
    pub params: HashMap<String, Option<&'a Expr>>,
    /// The parameters a call can pass by position, in order (`self` of a method included).
    pub positional: Vec<&'a str>,
    /// Defined at the module's top, or directly in a class there (a method): not in a
    /// function, nor in a nested class.
    pub top: bool,
    pub assigns: HashMap<String, Vec<&'a Expr>>,
    /// The values of its own `return` statements (not those of a function nested in it).
    pub returns: Vec<&'a Expr>,
}

/// What a load reads: a name, `self.attr`, or `.attr` of anything else (borrowed from the AST:
/// no allocation per load).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoadKey<'a> {
    Name(&'a str),
    SelfAttr(&'a str),
    Attr(&'a str),
}

impl<'a> LoadKey<'a> {
    /// The key of a flow path entry (`x`, `self.x`, `.x`).
    pub fn of_path(key: &'a str) -> LoadKey<'a> {
        if let Some(attr) = key.strip_prefix("self.") {
            LoadKey::SelfAttr(attr)
        } else if let Some(attr) = key.strip_prefix('.') {
            LoadKey::Attr(attr)
        } else {
            LoadKey::Name(key)
        }
    }
}

/// Where a value may be looked up: the module, or a function (index into `functions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Module,
    Function(usize),
}

#[derive(Debug, Default)]
pub struct Scopes<'a> {
    pub module: HashMap<String, Vec<&'a Expr>>,
    pub functions: Vec<FunctionScope<'a>>,
    /// `self.attr = value` per (class, attr), with the scope of the assignment.
    pub self_attrs: HashMap<(String, String), Vec<(&'a Expr, Scope)>>,
    /// Class attributes and dataclass field defaults (`device: str = "cuda:1"`,
    /// `device: str = field(default="cuda:1")`) per (class, attr).
    pub class_attrs: HashMap<(String, String), Vec<&'a Expr>>,
    /// argparse `dest` → default.
    pub argparse: HashMap<String, Vec<&'a Expr>>,
    /// The `dest` of every command-line option the file declares (`add_argument`,
    /// optparse's `add_option`), with a default or not.
    pub options: rustc_hash::FxHashSet<String>,
    /// `a, b, c = value`: each name with its position, the value and its scope.
    pub unpacked: HashMap<String, Vec<(usize, &'a Expr, Scope)>>,
    /// `NAME[key] = value` into a name (a dict being built): name, scope, key, value.
    pub item_stores: Vec<(&'a str, Scope, &'a Expr, &'a Expr)>,
    /// `NAME.update(...)` calls: name, scope, call.
    pub updates: Vec<(&'a str, Scope, &'a ruff_python_ast::ExprCall)>,
    /// `NAME.pop(key)` and `del NAME[key]`: a key taken out of a dict being built (name,
    /// scope, key).
    pub removals: Vec<(&'a str, Scope, &'a Expr)>,
    /// Names that are also rebound in ways we do not follow (loops, `+=`, tuples).
    pub opaque: Vec<String>,
    /// Loop variables over `range(N)` with literal bounds (`for i in range(2)`, comprehensions):
    /// the name, the loop (or comprehension) where it takes its values, and how many it takes.
    pub loops: Vec<(String, Range<usize>, u64)>,
    /// Other loop variables: the name, where it takes its values, and what it iterates over
    /// (`range(args.num_gpus)`, a dict built over such a range).
    pub loop_iters: Vec<(String, Range<usize>, &'a Expr)>,
}

impl<'a> Scopes<'a> {
    /// What a call of the file's own function returns, as its `return` statements write it:
    /// `helper(…)` of a module-level (or nested) function, `self.helper(…)` of a method.
    pub fn returned_by(&self, call: &ruff_python_ast::ExprCall) -> Vec<&'a Expr> {
        let (name, method) = match call.func.as_ref() {
            Expr::Name(n) => (n.id.as_str(), false),
            Expr::Attribute(a) if matches!(a.value.as_ref(), Expr::Name(s) if s.id.as_str() == "self") => {
                (a.attr.as_str(), true)
            }
            _ => return Vec::new(),
        };
        self.functions
            .iter()
            .filter(|f| f.name == name && f.class.is_some() == method)
            .flat_map(|f| f.returns.iter().copied())
            .collect()
    }

    /// What `name`, loaded at `at`, iterates over, as the variable of a loop that holds the load
    /// (a loop over a literal range is [`Self::loop_count`]'s).
    pub fn loop_iter(&self, name: &str, at: usize) -> Option<&'a Expr> {
        self.loop_iters
            .iter()
            .filter(|(n, r, _)| n == name && r.contains(&at))
            .min_by_key(|(_, r, _)| r.len())
            .map(|(_, _, e)| *e)
    }

    /// How many values `name`, loaded at `at`, takes as the variable of a loop over a literal
    /// range that holds the load.
    pub fn loop_count(&self, name: &str, at: usize) -> Option<u64> {
        self.loops
            .iter()
            .find(|(n, r, _)| n == name && r.contains(&at))
            .map(|(_, _, count)| *count)
    }

    pub fn collect(body: &'a [Stmt]) -> Scopes<'a> {
        let mut c = ScopeCollector {
            scopes: Scopes::default(),
            stack: Vec::new(),
            class: Vec::new(),
            class_depth: Vec::new(),
        };
        for stmt in body {
            c.visit_stmt(stmt);
        }
        c.scopes
    }

    /// The innermost function whose range holds `offset`.
    pub fn scope_at(&self, offset: usize) -> Scope {
        self.functions
            .iter()
            .enumerate()
            .filter(|(_, f)| f.range.start <= offset && offset < f.range.end)
            .max_by_key(|(_, f)| f.range.start)
            .map_or(Scope::Module, |(i, _)| Scope::Function(i))
    }

    /// Where `name` is bound as seen from `scope`: the expressions it may hold, and their scope.
    pub fn lookup(&self, name: &str, scope: Scope) -> Option<Vec<(&'a Expr, Scope)>> {
        if let Scope::Function(i) = scope {
            let f = &self.functions[i];
            if let Some(default) = f.params.get(name) {
                return Some(
                    default
                        .map(|d| vec![(d, Scope::Module)])
                        .unwrap_or_default(),
                );
            }
            if let Some(values) = f.assigns.get(name) {
                return Some(values.iter().map(|v| (*v, scope)).collect());
            }
            // An enclosing function, else the module.
            return self.lookup(name, self.enclosing(i));
        }
        if self.opaque.iter().any(|o| o == name) {
            return None;
        }
        self.module
            .get(name)
            .map(|values| values.iter().map(|v| (*v, Scope::Module)).collect())
    }

    /// The function whose parameter `name`, loaded in `scope`, is (a local of the same name, or
    /// a parameter of an enclosing function, as [`Self::lookup`] finds it).
    pub fn param_of(&self, name: &str, scope: Scope) -> Option<usize> {
        let Scope::Function(i) = scope else {
            return None;
        };
        let f = &self.functions[i];
        if f.params.contains_key(name) {
            return Some(i);
        }
        if f.assigns.contains_key(name) {
            return None;
        }
        match self.enclosing(i) {
            Scope::Module => None,
            outer => self.param_of(name, outer),
        }
    }

    /// The function that encloses function `i`, else the module.
    fn enclosing(&self, i: usize) -> Scope {
        let f = &self.functions[i];
        self.functions
            .iter()
            .enumerate()
            .filter(|(j, g)| {
                *j != i && g.range.start <= f.range.start && f.range.end <= g.range.end
            })
            .max_by_key(|(_, g)| g.range.start)
            .map_or(Scope::Module, |(j, _)| Scope::Function(j))
    }

    /// The tuple unpacking that binds `name`, when it is the only binding seen from `scope`.
    pub fn unpacked(&self, name: &str, scope: Scope) -> Option<(usize, &'a Expr, Scope)> {
        let candidates = self.unpacked.get(name)?;
        let here: Vec<_> = candidates.iter().filter(|(_, _, s)| *s == scope).collect();
        match here.as_slice() {
            [one] => Some(**one),
            _ => None,
        }
    }

    /// What `obj.attr` may hold when `obj` is an instance the tool cannot type: the attribute
    /// as every class of the file sets it (class attributes, dataclass defaults, `self.attr =`
    /// in methods). `class`: only that class (`self.attr`, `cls.attr`, `Class.attr`).
    pub fn attr_values(&self, attr: &str, class: Option<&str>) -> Vec<(&'a Expr, Scope)> {
        let mine = |c: &String| class.is_none_or(|k| k == c);
        let mut values: Vec<(&'a Expr, Scope)> = self
            .self_attrs
            .iter()
            .filter(|((c, a), _)| a == attr && mine(c))
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        values.extend(
            self.class_attrs
                .iter()
                .filter(|((c, a), _)| a == attr && mine(c))
                .flat_map(|(_, v)| v.iter().map(|e| (*e, Scope::Module))),
        );
        values.sort_by_key(|(e, _)| range(*e).start);
        values
    }

    /// Whether `name` is a class defined in the file.
    pub fn is_class(&self, name: &str) -> bool {
        self.class_attrs.keys().any(|(c, _)| c == name)
            || self.self_attrs.keys().any(|(c, _)| c == name)
    }

    /// The class of the method holding `scope`, for `self.attr` lookups.
    pub fn class_of(&self, scope: Scope) -> Option<&str> {
        match scope {
            Scope::Function(i) => self.functions[i].class.as_deref(),
            Scope::Module => None,
        }
    }

    /// A module constant holding one string (`KEY = "CUDA_VISIBLE_DEVICES"`).
    pub fn module_string(&self, expr: &Expr) -> Option<String> {
        let Expr::Name(n) = expr else { return None };
        match self.lookup(n.id.as_str(), Scope::Module)?.as_slice() {
            [(Expr::StringLiteral(s), _)] => Some(s.value.to_str().to_string()),
            _ => None,
        }
    }
}

struct ScopeCollector<'a> {
    scopes: Scopes<'a>,
    stack: Vec<usize>,
    class: Vec<String>,
    /// For each enclosing class, the function depth of its body.
    class_depth: Vec<usize>,
}

impl<'a> ScopeCollector<'a> {
    fn bind(&mut self, name: &str, value: &'a Expr) {
        match self.stack.last() {
            Some(&i) => self.scopes.functions[i]
                .assigns
                .entry(name.to_string())
                .or_default()
                .push(value),
            None => self
                .scopes
                .module
                .entry(name.to_string())
                .or_default()
                .push(value),
        }
    }

    fn scope(&self) -> Scope {
        self.stack
            .last()
            .map_or(Scope::Module, |&i| Scope::Function(i))
    }

    /// Directly in a class body (not in one of its methods).
    fn in_class_body(&self) -> bool {
        self.class_depth.last() == Some(&self.stack.len())
    }

    fn target(&mut self, target: &'a Expr, value: &'a Expr) {
        if let (true, Expr::Name(n), Some(class)) =
            (self.in_class_body(), target, self.class.last())
        {
            let value = field_default(value).unwrap_or(value);
            self.scopes
                .class_attrs
                .entry((class.clone(), n.id.as_str().to_string()))
                .or_default()
                .push(value);
            return;
        }
        match target {
            Expr::Name(n) => self.bind(n.id.as_str(), value),
            Expr::Attribute(attr) => {
                let is_self =
                    matches!(attr.value.as_ref(), Expr::Name(n) if n.id.as_str() == "self");
                let class = self
                    .stack
                    .last()
                    .and_then(|&i| self.scopes.functions[i].class.clone());
                if let (true, Some(class)) = (is_self, class) {
                    let scope = self.scope();
                    self.scopes
                        .self_attrs
                        .entry((class, attr.attr.as_str().to_string()))
                        .or_default()
                        .push((value, scope));
                }
            }
            Expr::Tuple(t) if t.elts.iter().all(|e| matches!(e, Expr::Name(_))) => {
                let scope = self.scope();
                for (i, e) in t.elts.iter().enumerate() {
                    if let Expr::Name(n) = e {
                        self.scopes
                            .unpacked
                            .entry(n.id.as_str().to_string())
                            .or_default()
                            .push((i, value, scope));
                    }
                }
            }
            Expr::Subscript(sub) => {
                if let Expr::Name(n) = sub.value.as_ref() {
                    let scope = self.scope();
                    self.scopes
                        .item_stores
                        .push((n.id.as_str(), scope, &sub.slice, value));
                }
            }
            _ => self.opaque_target(target),
        }
    }

    /// `for NAME in range(…)` with literal arguments: the loop variable and its count.
    fn loop_target(&mut self, target: &'a Expr, iter: &'a Expr, within: Range<usize>) {
        if let Expr::Name(n) = target {
            self.scopes
                .loop_iters
                .push((n.id.as_str().to_string(), within.clone(), iter));
        }
        let (Expr::Name(n), Expr::Call(call)) = (target, iter) else {
            return;
        };
        let Expr::Name(f) = call.func.as_ref() else {
            return;
        };
        if f.id.as_str() != "range" || !call.arguments.keywords.is_empty() {
            return;
        }
        let ints: Option<Vec<u64>> = call
            .arguments
            .args
            .iter()
            .map(super::devices::int_literal)
            .collect();
        let count = match ints.as_deref() {
            Some([end]) => *end,
            Some([start, end]) => end.saturating_sub(*start),
            _ => return,
        };
        self.scopes
            .loops
            .push((n.id.as_str().to_string(), within, count));
    }

    fn opaque_target(&mut self, target: &Expr) {
        match target {
            Expr::Name(n) => self.scopes.opaque.push(n.id.as_str().to_string()),
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.opaque_target(e)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.opaque_target(e)),
            Expr::Starred(s) => self.opaque_target(&s.value),
            _ => {}
        }
    }

    fn argparse(&mut self, call: &'a ruff_python_ast::ExprCall) {
        let Expr::Attribute(attr) = call.func.as_ref() else {
            return;
        };
        match attr.attr.as_str() {
            "add_argument" | "add_option" => {
                let kw = |name: &str| {
                    call.arguments
                        .keywords
                        .iter()
                        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == name))
                        .map(|k| &k.value)
                };
                let dest = match kw("dest") {
                    Some(Expr::StringLiteral(s)) => Some(s.value.to_str().to_string()),
                    _ => {
                        let flags: Vec<String> = call
                            .arguments
                            .args
                            .iter()
                            .filter_map(|a| match a {
                                Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
                                _ => None,
                            })
                            .collect();
                        flags
                            .iter()
                            .find(|f| f.starts_with("--"))
                            .or_else(|| flags.first())
                            .map(|f| f.trim_start_matches('-').replace('-', "_"))
                    }
                };
                let Some(dest) = dest else { return };
                self.scopes.options.insert(dest.clone());
                if let Some(default) = kw("default") {
                    self.scopes.argparse.entry(dest).or_default().push(default);
                }
            }
            "set_defaults" => {
                for k in &call.arguments.keywords {
                    if let Some(arg) = &k.arg {
                        self.scopes
                            .argparse
                            .entry(arg.as_str().to_string())
                            .or_default()
                            .push(&k.value);
                    }
                }
            }
            _ => {}
        }
    }
}

impl<'a> Visitor<'a> for ScopeCollector<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::Delete(d) = stmt {
            for target in &d.targets {
                if let Expr::Subscript(sub) = target {
                    if let Expr::Name(n) = sub.value.as_ref() {
                        let scope = self.scope();
                        self.scopes
                            .removals
                            .push((n.id.as_str(), scope, &sub.slice));
                    }
                }
            }
        }
        match stmt {
            Stmt::FunctionDef(def) => {
                let mut scope = FunctionScope {
                    range: range(stmt),
                    class: self.class.last().cloned(),
                    name: def.name.as_str(),
                    positional: def
                        .parameters
                        .posonlyargs
                        .iter()
                        .chain(&def.parameters.args)
                        .map(|p| p.parameter.name.as_str())
                        .collect(),
                    top: self.stack.is_empty() && self.class.len() <= 1,
                    ..FunctionScope::default()
                };
                for p in def.parameters.iter_non_variadic_params() {
                    scope
                        .params
                        .insert(p.parameter.name.as_str().to_string(), p.default.as_deref());
                }
                for p in [&def.parameters.vararg, &def.parameters.kwarg]
                    .into_iter()
                    .flatten()
                {
                    scope.params.insert(p.name.as_str().to_string(), None);
                }
                self.scopes.functions.push(scope);
                self.stack.push(self.scopes.functions.len() - 1);
                // Methods of a class see `self` of that class; nested defs keep it.
                for s in &def.body {
                    self.visit_stmt(s);
                }
                self.stack.pop();
                return;
            }
            Stmt::ClassDef(class) => {
                self.class.push(class.name.as_str().to_string());
                self.class_depth.push(self.stack.len());
                for s in &class.body {
                    self.visit_stmt(s);
                }
                self.class_depth.pop();
                self.class.pop();
                return;
            }
            Stmt::Assign(assign) => {
                for t in &assign.targets {
                    self.target(t, &assign.value);
                }
            }
            Stmt::AnnAssign(ann) => {
                if let Some(value) = &ann.value {
                    self.target(&ann.target, value);
                }
            }
            Stmt::AugAssign(aug) => self.opaque_target(&aug.target),
            Stmt::Return(ret) => {
                if let (Some(value), Some(&i)) = (&ret.value, self.stack.last()) {
                    self.scopes.functions[i].returns.push(value);
                }
            }
            Stmt::For(f) => {
                self.loop_target(&f.target, &f.iter, range(stmt));
                self.opaque_target(&f.target);
            }
            Stmt::With(w) => {
                for item in &w.items {
                    if let Some(v) = &item.optional_vars {
                        self.opaque_target(v);
                    }
                }
            }
            _ => {}
        }
        walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            self.argparse(call);
            if let Expr::Attribute(attr) = call.func.as_ref() {
                if let (Expr::Name(n), "update") = (attr.value.as_ref(), attr.attr.as_str()) {
                    let scope = self.scope();
                    self.scopes.updates.push((n.id.as_str(), scope, call));
                }
                if let (Expr::Name(n), "pop", Some(key)) = (
                    attr.value.as_ref(),
                    attr.attr.as_str(),
                    call.arguments.args.first(),
                ) {
                    let scope = self.scope();
                    self.scopes.removals.push((n.id.as_str(), scope, key));
                }
            }
        }
        let generators = match expr {
            Expr::ListComp(c) => &c.generators[..],
            Expr::SetComp(c) => &c.generators[..],
            Expr::DictComp(c) => &c.generators[..],
            Expr::Generator(c) => &c.generators[..],
            _ => &[],
        };
        for g in generators {
            self.loop_target(&g.target, &g.iter, range(expr));
        }
        if let Expr::Named(named) = expr {
            self.target(&named.target, &named.value);
        }
        walk_expr(self, expr);
    }
}

/// `field(default=X)`, `dataclasses.field(default=X)`, pydantic's `Field(X)` /
/// `Field(default=X)`: the default a dataclass or model field takes.
fn field_default(value: &Expr) -> Option<&Expr> {
    let Expr::Call(call) = value else { return None };
    let name = match call.func.as_ref() {
        Expr::Name(n) => n.id.as_str(),
        Expr::Attribute(a) => a.attr.as_str(),
        _ => return None,
    };
    if !matches!(name, "field" | "Field") {
        return None;
    }
    let keyword = call
        .arguments
        .keywords
        .iter()
        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "default"))
        .map(|k| &k.value);
    keyword.or_else(|| {
        (name == "Field")
            .then(|| call.arguments.args.first())
            .flatten()
    })
}

/// Every load of the given keys (a name, `self.x`, `.x`) outside print and log calls: walked
/// only for the few names a device literal flows through.
pub fn loads_of<'a>(
    body: &'a [Stmt],
    keys: &[LoadKey<'a>],
) -> HashMap<LoadKey<'a>, Vec<Range<usize>>> {
    let mut finder = LoadFinder {
        keys,
        found: HashMap::default(),
        display: 0,
    };
    for stmt in body {
        finder.visit_stmt(stmt);
    }
    finder.found
}

struct LoadFinder<'k, 'a> {
    keys: &'k [LoadKey<'a>],
    found: HashMap<LoadKey<'a>, Vec<Range<usize>>>,
    /// Inside the arguments of a print or log call: what is read there is only shown.
    display: usize,
}

impl<'a> Visitor<'a> for LoadFinder<'_, 'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            if is_display_call(call) {
                self.display += 1;
                walk_expr(self, expr);
                self.display -= 1;
                return;
            }
        }
        let key = match expr {
            _ if self.display > 0 => None,
            Expr::Name(n) if n.ctx.is_load() => Some(LoadKey::Name(n.id.as_str())),
            Expr::Attribute(a) if a.ctx.is_load() => Some(match a.value.as_ref() {
                Expr::Name(n) if n.id.as_str() == "self" => LoadKey::SelfAttr(a.attr.as_str()),
                _ => LoadKey::Attr(a.attr.as_str()),
            }),
            _ => None,
        };
        if let Some(key) = key.filter(|k| self.keys.contains(k)) {
            self.found.entry(key).or_default().push(range(expr));
        }
        walk_expr(self, expr);
    }
}

/// `print(...)`, `logger.info(...)`, `logging.warning(...)`: values read there are only shown.
fn is_display_call(call: &ruff_python_ast::ExprCall) -> bool {
    match call.func.as_ref() {
        Expr::Name(n) => n.id.as_str() == "print",
        Expr::Attribute(a) => {
            matches!(
                a.attr.as_str(),
                "debug" | "info" | "warning" | "warn" | "error" | "exception" | "critical"
            ) && matches!(a.value.as_ref(), Expr::Name(n) if {
                let l = n.id.as_str().to_ascii_lowercase();
                l.contains("log")
            })
        }
        _ => false,
    }
}
