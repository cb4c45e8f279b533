//! Functions that pass one of their parameters to a device constructor as its index:
//! `pub fn load(path: &str, ordinal: usize) -> Device { Device::new_cuda(ordinal) … }`. The
//! project index finds them in every crate of the tree, and a call to one (`load(p, 1)`,
//! `load(p, args.gpu)` with a `--gpu` default of 1) is a device index where it is written, as
//! a constructor's would be: the command-line default of one crate is followed into the
//! constructor of another.

use syn::visit::{self, Visit};
use syn::{Expr, FnArg, Pat};

use crate::base::line_index::LineIndex;

/// One such function.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexFn {
    /// `load`, or `Model::load` for an associated function (methods taking `self` are not
    /// followed: their receiver's type is not known at the call).
    pub path: String,
    /// Which argument (from 0) is the index.
    pub position: usize,
    /// The constructor it reaches and where: ``Device::new_cuda` (src/model.rs:12)`.
    pub what: String,
    /// What a longer call path may start with to name it (`engine::load`, `crate::engine::gpu::load`):
    /// the tree's crates and modules; a path through any other crate is another function.
    #[serde(skip)]
    pub roots: Vec<String>,
}

/// A function that hands a parameter on to another function (`fn open(gpu) { load(p, gpu) }`):
/// an index function when the callee is one (see [`close`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Forward {
    pub path: String,
    pub position: usize,
    pub callee: Vec<String>,
    pub arg: usize,
    pub at: String,
}

/// A struct field handed to a function (`get_device(args.device)`, `new_cuda(cfg.gpu)`): where
/// a command-line option's default defined in another file goes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FieldArg {
    pub callee: Vec<String>,
    pub arg: usize,
    pub field: String,
    pub at: String,
}

/// Every `const`/`static` named by a path handed to a call in a file (`new_cuda(GPU_INDEX)`,
/// `open(crate::config::GPU)`, `load(super::ORDINAL as usize)`, a `use … as` rename): the
/// item's own name in [`FieldArg::field`]. A name is an item's when it is written as one
/// (upper case, rustc's `non_upper_case_globals`); the file's own items are the file's
/// bindings (see `facts`), so only a name this file does not define is kept.
pub fn const_args(file: &syn::File, rel: &str, text: &str) -> Vec<FieldArg> {
    let mut aliases = std::collections::HashMap::new();
    let mut own = std::collections::HashSet::new();
    let expanded = super::facts::mains::expand_cfg_if(&file.items);
    for item in expanded.as_deref().unwrap_or(&file.items) {
        match item {
            syn::Item::Use(u) => super::facts::collect_use(&u.tree, String::new(), &mut aliases),
            syn::Item::Const(c) => {
                own.insert(c.ident.to_string());
            }
            syn::Item::Static(s) => {
                own.insert(s.ident.to_string());
            }
            _ => {}
        }
    }
    struct V<'r> {
        rel: &'r str,
        lines: &'r LineIndex<'r>,
        aliases: &'r std::collections::HashMap<String, String>,
        own: &'r std::collections::HashSet<String>,
        out: Vec<FieldArg>,
    }
    impl<'a> Visit<'a> for V<'_> {
        fn visit_expr_call(&mut self, call: &'a syn::ExprCall) {
            if let Expr::Path(func) = call.func.as_ref() {
                let callee: Vec<String> = func
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                for (arg, e) in call.args.iter().enumerate() {
                    let Some(path) = const_path(e) else { continue };
                    let segments: Vec<String> =
                        path.segments.iter().map(|s| s.ident.to_string()).collect();
                    let name = match segments.as_slice() {
                        // Through a `use` (renamed or not); a name of this file is its own.
                        [one] if !self.own.contains(one) => self
                            .aliases
                            .get(one)
                            .and_then(|full| full.rsplit("::").next())
                            .map(str::to_string),
                        [.., last] if segments.len() > 1 => Some(last.clone()),
                        _ => None,
                    };
                    let Some(name) = name.filter(|n| item_like(n)) else {
                        continue;
                    };
                    let line = self.lines.line(span_offset(&func.path.segments[0].ident));
                    self.out.push(FieldArg {
                        callee: callee.clone(),
                        arg,
                        field: name,
                        at: format!("{}:{line}", self.rel),
                    });
                }
            }
            visit::visit_expr_call(self, call);
        }
    }
    let lines = LineIndex::new(text);
    let mut v = V {
        rel,
        lines: &lines,
        aliases: &aliases,
        own: &own,
        out: Vec::new(),
    };
    v.visit_file(file);
    v.out
}

/// `GPU`, `config::GPU`, `GPU as usize`, `(GPU)`, `&GPU`: the path given as is.
fn const_path(expr: &Expr) -> Option<&syn::Path> {
    match expr {
        Expr::Path(p) if p.qself.is_none() => Some(&p.path),
        Expr::Cast(c) => const_path(&c.expr),
        Expr::Paren(p) => const_path(&p.expr),
        Expr::Reference(r) => const_path(&r.expr),
        _ => None,
    }
}

/// `GPU_INDEX`, `DEVICE0`: a name written as a `const`/`static` item's.
fn item_like(name: &str) -> bool {
    name.bytes().any(|b| b.is_ascii_uppercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Every field handed to a call in a file.
pub fn field_args(file: &syn::File, rel: &str, text: &str) -> Vec<FieldArg> {
    struct V<'r>(&'r str, &'r LineIndex<'r>, Vec<FieldArg>);
    impl<'a> Visit<'a> for V<'_> {
        fn visit_expr_call(&mut self, call: &'a syn::ExprCall) {
            if let Expr::Path(func) = call.func.as_ref() {
                let callee: Vec<String> = func
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                for (arg, e) in call.args.iter().enumerate() {
                    if let Some(field) = field_name(e) {
                        let line = self.1.line(span_offset(&func.path.segments[0].ident));
                        self.2.push(FieldArg {
                            callee: callee.clone(),
                            arg,
                            field,
                            at: format!("{}:{line}", self.0),
                        });
                    }
                }
            }
            visit::visit_expr_call(self, call);
        }
    }
    let lines = LineIndex::new(text);
    let mut v = V(rel, &lines, Vec::new());
    v.visit_file(file);
    v.2
}

/// The fields whose value reaches a device index: handed to a constructor as its index or
/// to an index function at its position. (field, what it reaches).
pub fn index_fields(args: &[FieldArg], fns: &[IndexFn]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for a in args {
        let constructor = crate::knowledge::rust::index_call_of(&a.callee)
            .filter(|_| a.arg == 0)
            .map(|n| format!("`{n}` ({})", a.at));
        let through = fns
            .iter()
            .find(|d| d.position == a.arg && calls(d, &a.callee))
            .map(|d| format!("{} through `{}` ({})", d.what, d.path, a.at));
        if let Some(what) = constructor.or(through) {
            if !out.iter().any(|(f, _)| *f == a.field) {
                out.push((a.field.clone(), what));
            }
        }
    }
    out
}

/// `args.device`, `&cfg.gpu`, `args.device as usize`: the field's name.
fn field_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Field(f) => match &f.member {
            syn::Member::Named(n) => Some(n.to_string()),
            syn::Member::Unnamed(_) => None,
        },
        Expr::Cast(c) => field_name(&c.expr),
        Expr::Paren(p) => field_name(&p.expr),
        Expr::Reference(r) => field_name(&r.expr),
        _ => None,
    }
}

/// The index functions defined in a file (`rel`: its path, for messages), and the functions
/// that hand a parameter to another.
pub fn collect(file: &syn::File, rel: &str, text: &str) -> (Vec<IndexFn>, Vec<Forward>) {
    let lines = LineIndex::new(text);
    let mut v = Finder {
        rel,
        lines: &lines,
        self_ty: None,
        out: Vec::new(),
        forwards: Vec::new(),
    };
    v.visit_file(file);
    (v.out, v.forwards)
}

/// The index functions reached through forwards, until nothing new is found (bounded).
pub fn close(direct: &mut Vec<IndexFn>, forwards: &[Forward]) {
    for _ in 0..8 {
        let mut new = Vec::new();
        for f in forwards {
            let known = |d: &IndexFn| d.path == f.path && d.position == f.position;
            if direct.iter().any(known) || new.iter().any(known) {
                continue;
            }
            if let Some(def) = direct
                .iter()
                .find(|d| d.position == f.arg && calls(d, &f.callee))
            {
                new.push(IndexFn {
                    path: f.path.clone(),
                    position: f.position,
                    what: format!("{} through `{}` ({})", def.what, def.path, f.at),
                    roots: def.roots.clone(),
                });
            }
        }
        if new.is_empty() {
            return;
        }
        direct.extend(new);
    }
}

/// Whether a call written as `segments` (`load`, `model::load`, `Model::load`) calls `def`.
pub fn calls(def: &IndexFn, segments: &[String]) -> bool {
    let wanted: Vec<&str> = def.path.split("::").collect();
    let longer = segments.len() > wanted.len();
    segments.len() >= wanted.len()
        && segments[segments.len() - wanted.len()..]
            .iter()
            .zip(&wanted)
            .all(|(a, b)| a == b)
        && (!longer
            || ["crate", "self", "super"].contains(&segments[0].as_str())
            || def.roots.contains(&segments[0]))
}

/// Where `ident` starts, in bytes: its line is read from the file's [`LineIndex`] (syn's own
/// line counts only `\n`).
fn span_offset(ident: &syn::Ident) -> usize {
    ident.span().byte_range().start
}

struct Finder<'r> {
    rel: &'r str,
    lines: &'r LineIndex<'r>,
    self_ty: Option<String>,
    out: Vec<IndexFn>,
    forwards: Vec<Forward>,
}

impl Finder<'_> {
    fn function(&mut self, path: String, sig: &syn::Signature, block: &syn::Block) {
        if sig.inputs.iter().any(|i| matches!(i, FnArg::Receiver(_))) {
            return;
        }
        let params: Vec<Option<String>> = sig
            .inputs
            .iter()
            .map(|i| match i {
                FnArg::Typed(t) => match t.pat.as_ref() {
                    Pat::Ident(id) if id.mutability.is_none() => Some(id.ident.to_string()),
                    _ => None,
                },
                FnArg::Receiver(_) => None,
            })
            .collect();
        let mut sinks = Sinks {
            params: &params,
            found: Vec::new(),
            forwards: Vec::new(),
            locals: Default::default(),
        };
        sinks.visit_block(block);
        for (position, callee, arg, line) in std::mem::take(&mut sinks.forwards) {
            self.forwards.push(Forward {
                path: path.clone(),
                position,
                callee,
                arg,
                at: format!("{}:{}", self.rel, self.lines.line(line)),
            });
        }
        // A parameter that reaches one constructor, the same everywhere it is used.
        sinks.found.sort();
        sinks.found.dedup_by_key(|(p, _, _)| *p);
        for (position, what, line) in sinks.found {
            self.out.push(IndexFn {
                path: path.clone(),
                position,
                what: format!("`{what}` ({}:{})", self.rel, self.lines.line(line)),
                roots: Vec::new(),
            });
        }
    }
}

impl<'a> Visit<'a> for Finder<'_> {
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        if f.sig.ident != "main" {
            self.function(f.sig.ident.to_string(), &f.sig, &f.block);
        }
        visit::visit_item_fn(self, f);
    }

    fn visit_item_impl(&mut self, i: &'a syn::ItemImpl) {
        let outer = self.self_ty.take();
        if i.trait_.is_none() {
            if let syn::Type::Path(p) = i.self_ty.as_ref() {
                self.self_ty = p.path.segments.last().map(|s| s.ident.to_string());
            }
        }
        visit::visit_item_impl(self, i);
        self.self_ty = outer;
    }

    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        if let Some(ty) = self.self_ty.clone() {
            self.function(format!("{ty}::{}", f.sig.ident), &f.sig, &f.block);
        }
        visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, _: &'a syn::TraitItemFn) {}
}

/// The constructor calls of a body whose index is one of the parameters, as they are.
struct Sinks<'p> {
    params: &'p [Option<String>],
    found: Vec<(usize, String, usize)>,
    /// (parameter, the function called, the argument it is, offset of the call).
    forwards: Vec<(usize, Vec<String>, usize, usize)>,
    /// Names the body binds (`let f = …`): a call through one is a closure's or a function
    /// pointer's, never a function of the tree.
    locals: std::collections::HashSet<String>,
}

/// A callee that is never a function of the tree: the standard library's, or a prelude
/// name's (`Some(gpu)`, `Box::new(gpu)`).
fn never_ours(path: &[String]) -> bool {
    use super::items::{is_std, PRELUDE};
    path.first()
        .is_none_or(|first| is_std(first) || PRELUDE.contains(&first.as_str()))
}

impl<'a> Visit<'a> for Sinks<'_> {
    fn visit_local(&mut self, l: &'a syn::Local) {
        let mut pat = &l.pat;
        if let Pat::Type(t) = pat {
            pat = &t.pat;
        }
        if let Pat::Ident(id) = pat {
            self.locals.insert(id.ident.to_string());
        }
        visit::visit_local(self, l);
    }

    fn visit_expr_call(&mut self, call: &'a syn::ExprCall) {
        if let (Expr::Path(func), Some(first)) = (call.func.as_ref(), call.args.first()) {
            let path: Vec<String> = func
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            let constructor = crate::knowledge::rust::index_call_of(&path);
            let line = span_offset(&func.path.segments[0].ident);
            let param = |e: &Expr| {
                let name = plain_name(e)?;
                self.params
                    .iter()
                    .position(|p| p.as_deref() == Some(name.as_str()))
            };
            match constructor {
                Some(name) => {
                    if let Some(position) = param(first) {
                        self.found.push((position, name.to_string(), line));
                    }
                }
                None if never_ours(&path) => {}
                None if path.len() == 1 && self.locals.contains(&path[0]) => {}
                None => {
                    for (arg, e) in call.args.iter().enumerate() {
                        if let Some(position) = param(e) {
                            self.forwards.push((position, path.clone(), arg, line));
                        }
                    }
                }
            }
        }
        visit::visit_expr_call(self, call);
    }

    // A closure or nested function has parameters of its own.
    fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
    fn visit_item_fn(&mut self, _: &'a syn::ItemFn) {}
}

/// `ordinal`, `ordinal as usize`, `(ordinal)`: the name given as is.
fn plain_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        Expr::Cast(c) => plain_name(&c.expr),
        Expr::Paren(p) => plain_name(&p.expr),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(src: &str) -> Vec<(String, usize)> {
        let file = syn::parse_file(src).unwrap();
        let (mut direct, forwards) = collect(&file, "lib.rs", src);
        close(&mut direct, &forwards);
        direct.into_iter().map(|f| (f.path, f.position)).collect()
    }

    #[test]
    fn parameters_given_to_a_constructor_are_found_free_and_associated() {
        let src = "use candle_core::Device;\npub fn load(path: &str, ordinal: usize) -> Device {\n    Device::new_cuda(ordinal as usize).unwrap()\n}\npub struct Model;\nimpl Model {\n    pub fn open(gpu: usize) -> Self {\n        let _c = cudarc::driver::CudaContext::new(gpu);\n        Model\n    }\n    pub fn to(&self, gpu: usize) {\n        let _ = Device::new_cuda(gpu);\n    }\n}\npub fn shadow(gpu: usize) {\n    let f = |gpu: usize| Device::new_cuda(gpu);\n    f(0);\n}\npub fn other(n: usize) -> usize {\n    n + 1\n}\npub fn by_name(i: usize) -> Device {\n    load(\"x\", i)\n}\npub fn twice(j: usize) -> Device {\n    by_name(j)\n}\n";
        assert_eq!(
            found(src),
            [
                ("load".to_string(), 1),
                ("Model::open".to_string(), 0),
                ("by_name".to_string(), 0),
                ("twice".to_string(), 0)
            ]
        );
    }

    #[test]
    fn a_call_names_a_function_by_its_last_segments() {
        let def = IndexFn {
            path: "Model::open".into(),
            position: 0,
            what: String::new(),
            roots: vec!["engine".into(), "model".into()],
        };
        let seg = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
        assert!(calls(&def, &seg("Model::open")));
        assert!(calls(&def, &seg("crate::model::Model::open")));
        assert!(calls(&def, &seg("engine::Model::open")));
        assert!(!calls(&def, &seg("open")));
        assert!(!calls(&def, &seg("Other::open")));
        // Another crate's function of the same name is another function.
        let load = IndexFn {
            path: "load".into(),
            ..def
        };
        assert!(calls(&load, &seg("load")));
        assert!(calls(&load, &seg("engine::load")));
        assert!(!calls(&load, &seg("safetensors::load")));
    }

    #[test]
    fn items_of_other_files_handed_to_a_call_are_found_by_their_own_name() {
        let src = "use crate::config::GPU_INDEX as IDX;\nuse conf::SPARE;\nconst LOCAL: usize = 1;\nfn f(gpu: usize) {\n    let _ = Device::new_cuda(IDX);\n    let _ = Device::new_cuda(super::limits::OTHER as usize);\n    let _ = load(\"p\", &SPARE);\n    let _ = Device::new_cuda(LOCAL);\n    let _ = Device::new_cuda(gpu);\n    let _ = Device::new_cuda(Default::default());\n}\n";
        let file = syn::parse_file(src).unwrap();
        let found: Vec<(String, usize, String)> = const_args(&file, "a.rs", src)
            .into_iter()
            .map(|a| (a.callee.join("::"), a.arg, a.field))
            .collect();
        let want = |c: &str, a: usize, f: &str| (c.to_string(), a, f.to_string());
        assert_eq!(
            found,
            [
                want("Device::new_cuda", 0, "GPU_INDEX"),
                want("Device::new_cuda", 0, "OTHER"),
                want("load", 1, "SPARE"),
            ]
        );
    }
}
