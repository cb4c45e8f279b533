//! Which code of a library a program runs, item by item: the functions, methods, constants and
//! types its paths into the library name (`lib::embed::Embedder::from_pretrained_cloud`), then
//! every item their bodies name in turn (resolved through each file's `use` lines, `crate::`,
//! `super::`, `self::`, the items of the same module and glob imports), and the methods they
//! call (`.embed(…)`: the receiver's type is not known, so that method of every type the
//! reached code names — a value of a type no reached code constructs, returns or takes cannot
//! be there). A program that builds a library's cloud client does not run the local model's
//! constructor next to it in the same module, which picks the CUDA device. `macro_rules!`
//! bodies are read from their tokens.
//!
//! A name that resolves to no item of its module (an item a macro writes) reaches the whole
//! file it was looked up in: the reach errs towards running more code, never less.

use std::cell::RefCell;
use std::rc::Rc;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use syn::visit::{self, Visit};

/// The item-level facts of one file (kept by the content cache with the rest of the index).
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct Items {
    /// Every `use` of the file (in a body too): the name it binds (`*` for a glob) and the
    /// path as written, with the inline modules around it.
    pub uses: Vec<(Vec<String>, String, Vec<String>)>,
    pub items: Vec<Item>,
    /// The names `extern crate x as y;` binds at the file's top (its `use` is in `uses`): at
    /// a crate's root they are in the extern prelude, named from every module (accel's
    /// `extern crate cuda_driver_sys as cuda;`, then `cuda::cuDeviceGet` in `device.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extern_crates: Vec<String>,
}

/// A function, a method (keyed by its type's or trait's name), a constant, a static or a type,
/// under the inline modules of its file: the paths its code names and the methods it calls.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct Item {
    pub key: Vec<String>,
    /// How many of the key's first segments are inline modules.
    pub inline: usize,
    /// A function, constant or static: a name of the value namespace, never the first
    /// segment of a longer path (`bench::device()` names the crate `bench`, not `fn bench`).
    pub value: bool,
    /// A `macro_rules!` definition (its paths read from its tokens): found by its name wherever
    /// `#[macro_export]` puts it.
    pub mac: bool,
    /// The paths its code names, each joined by `::` (one allocation a path: the index holds
    /// every file's at once).
    pub paths: Vec<Box<str>>,
    /// The paths it names only as types (a signature's, a field's, a bound, a turbofish, an
    /// alias's target): a crate named only so builds nothing of it. A `let`'s, a `const`'s
    /// and a `static`'s type count as values, and an alias's target does where the alias is
    /// named as one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<Box<str>>,
    pub methods: Vec<String>,
    /// Its code chooses a CUDA device: a constructor called or a variant built
    /// (`Device::new_cuda(1)`, `Device::Cuda(0)`, `t.cuda()`), not a type named in a signature
    /// (`&CudaDevice`).
    pub cuda: bool,
    /// A `#[test]` function: an entry of the test binary `cargo test` builds from the crate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test: bool,
    /// A type alias (`type TestDevice = Cuda;`): `TestDevice::default()` runs its target's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub alias: bool,
}

/// A path segment that chooses a CUDA device (`Device::new_cuda`, `Device::Cuda`, a `Cuda`
/// backend). Not burn's `LibTorch` backend: its device is chosen apart, and is the CPU by
/// default (`LibTorchDevice::Cuda(0)` chooses).
pub fn chooses_cuda(segment: &str) -> bool {
    matches!(
        segment,
        "new_cuda"
            | "cuda_if_available"
            | "Cuda"
            | "CudaDevice"
            | "CudaContext"
            | "get_device"
            | "new_cuda_with_stream"
            | "AutoDevice"
    )
}

/// A path in code (a call, a value, a struct built) that chooses a CUDA device:
/// `Device::new_cuda(1)`, `Device::Cuda(0)`, `CudaContext::new(0)`; not `Storage::Cuda(s)`,
/// a value on a device chosen elsewhere.
fn chooses_cuda_in_code(path: &syn::Path) -> bool {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    chooses_cuda_in(&segments)
}

/// A path that chooses a CUDA device: a CUDA word, or a device constructor of the table
/// (accel's `Device::nth`, whose last segment alone is too common a name to count).
fn chooses_cuda_in(segments: &[String]) -> bool {
    segments.iter().enumerate().any(|(i, s)| match s.as_str() {
        // `Device::Cuda(0)`, burn's `LibTorchDevice::Cuda(0)`.
        "Cuda" => i == 0 || segments[i - 1].ends_with("Device"),
        s => chooses_cuda(s),
    }) || crate::knowledge::rust::index_call_of(segments).is_some()
}

/// The paths of a macro's tokens (`a::b::c`, and each lone name that may be an item's), read
/// without parsing: a macro's body is not Rust until it is expanded.
fn scan_tokens(
    tokens: proc_macro2::TokenStream,
    current: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
) {
    use proc_macro2::TokenTree;
    let mut colons = 0;
    for tt in tokens {
        match tt {
            TokenTree::Ident(id) => {
                if colons < 2 && !current.is_empty() {
                    out.push(std::mem::take(current));
                }
                current.push(id.to_string());
                colons = 0;
            }
            TokenTree::Punct(p) if p.as_char() == ':' => colons += 1,
            TokenTree::Group(g) => {
                if !current.is_empty() {
                    out.push(std::mem::take(current));
                }
                scan_tokens(g.stream(), &mut Vec::new(), out);
                colons = 0;
            }
            _ => {
                if !current.is_empty() {
                    out.push(std::mem::take(current));
                }
                colons = 0;
            }
        }
    }
    if !current.is_empty() {
        out.push(std::mem::take(current));
    }
}

/// Read a file's items.
pub fn collect(file: &syn::File) -> Items {
    let mut bound = Bound::default();
    bound.visit_file(file);
    let mut out = Items::default();
    collect_items(&file.items, &mut Vec::new(), &bound.names, &mut out);
    out
}

impl Items {
    /// The same items without the functions named `names` (by their path in the file's
    /// inline modules: `tests::gpt2`).
    pub fn without(&self, names: &[String]) -> Items {
        Items {
            uses: self.uses.clone(),
            extern_crates: self.extern_crates.clone(),
            items: self
                .items
                .iter()
                .filter(|i| !(i.key.len() == i.inline + 1 && names.contains(&i.key.join("::"))))
                .cloned()
                .collect(),
        }
    }

    /// The index holds every file's items at once: each path and method once, and no spare
    /// capacity.
    pub fn slim(&mut self) {
        for item in &mut self.items {
            item.paths.sort();
            item.paths.dedup();
            item.types.retain(|t| item.paths.binary_search(t).is_err());
            item.types.sort();
            item.types.dedup();
            item.types.shrink_to_fit();
            item.methods.sort();
            item.methods.dedup();
            item.paths.shrink_to_fit();
            item.methods.shrink_to_fit();
            item.key.shrink_to_fit();
        }
        self.items.shrink_to_fit();
        self.uses.shrink_to_fit();
    }
}

/// Paths as the index keeps them.
fn joined(paths: Vec<Vec<String>>) -> Vec<Box<str>> {
    paths.into_iter().map(|p| p.join("::").into()).collect()
}

impl Item {
    /// The paths its code names, segment by segment, each with whether it is named only as a
    /// type.
    fn paths(&self) -> impl Iterator<Item = (Vec<String>, bool)> + '_ {
        let split = |p: &str| p.split("::").map(str::to_string).collect();
        let values = self.paths.iter().map(move |p| (split(p), false));
        values.chain(self.types.iter().map(move |p| (split(p), true)))
    }
}

/// The first segment of a path into the standard library (`::core::ffi::c_int`).
pub(super) fn is_std(first: &str) -> bool {
    matches!(first, "std" | "core" | "alloc")
}

/// A value that is some device already: a method's result or a field (`s.device().clone()`,
/// `self.device`), taken as it is or by reference.
fn on_a_device_already(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::MethodCall(m) => m.method != "cuda",
        syn::Expr::Field(_) => true,
        syn::Expr::Reference(r) => on_a_device_already(&r.expr),
        syn::Expr::Paren(p) => on_a_device_already(&p.expr),
        _ => false,
    }
}

/// Names of the standard library's prelude: never an item of the tree unless the file binds
/// the name itself (then it is kept).
pub(super) const PRELUDE: &[&str] = &[
    "Option",
    "Some",
    "None",
    "Result",
    "Ok",
    "Err",
    "Vec",
    "String",
    "Box",
    "Clone",
    "Copy",
    "Send",
    "Sync",
    "Sized",
    "Default",
    "Drop",
    "Fn",
    "FnMut",
    "FnOnce",
    "Iterator",
    "From",
    "Into",
    "TryFrom",
    "TryInto",
    "AsRef",
    "AsMut",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
    "ToString",
    "ToOwned",
    "IntoIterator",
    "Extend",
];

/// Traits of the prelude whose functions build a value of the type the context asks for
/// (`let d: Dev = Default::default();`, `From::from(x)`).
const CONSTRUCTING_TRAITS: &[&str] = &["Default", "From", "TryFrom", "FromIterator", "FromStr"];

/// Names a single-segment path can mean an item by: those bound by a `use` or an item of the
/// file (the rest are local variables).
#[derive(Default)]
struct Bound {
    names: HashSet<String>,
}

impl<'a> Visit<'a> for Bound {
    fn visit_item(&mut self, i: &'a syn::Item) {
        let ident = match i {
            syn::Item::Fn(f) => Some(&f.sig.ident),
            syn::Item::Const(c) => Some(&c.ident),
            syn::Item::Static(s) => Some(&s.ident),
            syn::Item::Struct(s) => Some(&s.ident),
            syn::Item::Enum(e) => Some(&e.ident),
            syn::Item::Union(u) => Some(&u.ident),
            syn::Item::Type(t) => Some(&t.ident),
            syn::Item::Trait(t) => Some(&t.ident),
            syn::Item::Mod(m) => Some(&m.ident),
            syn::Item::Macro(m) => m.ident.as_ref(),
            _ => None,
        };
        if let Some(ident) = ident {
            self.names.insert(ident.to_string());
        }
        visit::visit_item(self, i);
    }

    fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
        let mut flat = Vec::new();
        flatten(&u.tree, &mut Vec::new(), &mut flat);
        self.names.extend(flat.into_iter().map(|(name, _)| name));
    }
}

fn collect_items(
    items: &[syn::Item],
    inline: &mut Vec<String>,
    bound: &HashSet<String>,
    out: &mut Items,
) {
    for item in items {
        let mut body = Body::new(bound, None);
        let (key, value) = match item {
            syn::Item::Mod(m) => match &m.content {
                Some((_, content)) => {
                    inline.push(m.ident.to_string());
                    collect_items(content, inline, bound, out);
                    inline.pop();
                    continue;
                }
                // A child module in its own file: a name of this module.
                None => (vec![m.ident.to_string()], false),
            },
            syn::Item::Use(u) => {
                let mut flat = Vec::new();
                flatten(&u.tree, &mut Vec::new(), &mut flat);
                out.uses
                    .extend(flat.into_iter().map(|(n, p)| (inline.clone(), n, p)));
                continue;
            }
            syn::Item::ExternCrate(c) => {
                let name = c.rename.as_ref().map_or(&c.ident, |(_, r)| r).to_string();
                if inline.is_empty() && c.rename.is_some() {
                    out.extern_crates.push(name.clone());
                }
                out.uses
                    .push((inline.clone(), name, vec![c.ident.to_string()]));
                continue;
            }
            syn::Item::Impl(i) => {
                let ty = type_name(&i.self_ty).unwrap_or_else(|| "_".into());
                let mut body = Body::new(bound, Some(ty.clone()));
                body.visit_type(&i.self_ty);
                if let Some((_, trait_path, _)) = &i.trait_ {
                    body.visit_path(trait_path);
                }
                // The impl's own types and bounds go with each of its items.
                let (shared, shared_types) = (body.paths, body.types);
                for ii in &i.items {
                    let mut b = Body::new(bound, Some(ty.clone()));
                    b.locals
                        .extend(i.generics.type_params().map(|t| t.ident.to_string()));
                    let name = match ii {
                        syn::ImplItem::Fn(f) => {
                            b.visit_impl_item_fn(f);
                            f.sig.ident.to_string()
                        }
                        syn::ImplItem::Const(c) => {
                            b.visit_impl_item_const(c);
                            c.ident.to_string()
                        }
                        _ => continue,
                    };
                    b.paths.extend(shared.iter().cloned());
                    b.types.extend(shared_types.iter().cloned());
                    b.push(inline, vec![ty.clone(), name], true, out);
                }
                continue;
            }
            syn::Item::Trait(t) => {
                let name = t.ident.to_string();
                // The trait itself: its bounds and its items' signatures.
                let mut b = Body::new(bound, Some(name.clone()));
                b.visit_generics(&t.generics);
                for sup in &t.supertraits {
                    b.visit_type_param_bound(sup);
                }
                b.push(inline, vec![name.clone()], false, out);
                for ti in &t.items {
                    if let syn::TraitItem::Fn(f) = ti {
                        let mut b = Body::new(bound, Some(name.clone()));
                        b.in_trait = true;
                        b.locals
                            .extend(t.generics.type_params().map(|t| t.ident.to_string()));
                        b.visit_trait_item_fn(f);
                        b.push(
                            inline,
                            vec![name.clone(), f.sig.ident.to_string()],
                            true,
                            out,
                        );
                    }
                }
                continue;
            }
            syn::Item::Macro(m) => match &m.ident {
                // `macro_rules! test_device { … Device::new_cuda(0) … }`: its tokens.
                Some(name) => {
                    let mut paths = Vec::new();
                    scan_tokens(m.mac.tokens.clone(), &mut Vec::new(), &mut paths);
                    // Lone lower-case names are the macro's variables and keywords.
                    paths.retain(|p| {
                        p.len() > 1 || p[0].starts_with(|c: char| c.is_ascii_uppercase())
                    });
                    let cuda = paths.iter().any(|p| chooses_cuda_in(p));
                    out.items.push(Item {
                        key: [&inline[..], &[name.to_string()]].concat(),
                        inline: inline.len(),
                        value: true,
                        mac: true,
                        paths: joined(paths),
                        types: Vec::new(),
                        methods: Vec::new(),
                        cuda,
                        test: false,
                        alias: false,
                    });
                    continue;
                }
                // An invocation among the items (`test_device!(…)`, `lazy_static! { … }`).
                None => {
                    body.visit_item_macro(m);
                    let name = m.mac.path.segments.last().map(|s| s.ident.to_string());
                    (vec![format!("{}!", name.unwrap_or_default())], true)
                }
            },
            syn::Item::Fn(f) => {
                body.visit_item_fn(f);
                body.push(inline, vec![f.sig.ident.to_string()], true, out);
                if let Some(last) = out.items.last_mut() {
                    last.test = f.attrs.iter().any(super::graph::is_test_attr);
                }
                continue;
            }
            syn::Item::Const(c) => {
                // A value of its type is made.
                body.valued = 1;
                body.visit_item_const(c);
                (vec![c.ident.to_string()], true)
            }
            syn::Item::Static(s) => {
                // A value of its type is made.
                body.valued = 1;
                body.visit_item_static(s);
                (vec![s.ident.to_string()], true)
            }
            syn::Item::Struct(s) => {
                if derives_default(&s.attrs) {
                    // `#[derive(Default)]` writes `default()`, which builds every field with
                    // its type's `default()`: their types are values there (and only there).
                    let mut b = Body::new(bound, Some(s.ident.to_string()));
                    b.valued = 1;
                    b.visit_fields(&s.fields);
                    b.methods.push("default".into());
                    let key = vec![s.ident.to_string(), "default".into()];
                    b.push(inline, key, true, out);
                }
                body.visit_item_struct(s);
                (vec![s.ident.to_string()], false)
            }
            syn::Item::Enum(e) => {
                body.visit_item_enum(e);
                (vec![e.ident.to_string()], false)
            }
            syn::Item::Union(u) => {
                body.visit_item_union(u);
                (vec![u.ident.to_string()], false)
            }
            syn::Item::Type(t) => {
                // Its paths are types; a lookup that names the alias as a value (`let d:
                // TestDevice = …`, `TestDevice::new()`) takes them as values.
                body.visit_item_type(t);
                body.push(inline, vec![t.ident.to_string()], false, out);
                if let Some(last) = out.items.last_mut() {
                    last.alias = true;
                }
                continue;
            }
            _ => continue,
        };
        body.push(inline, key, value, out);
    }
}

/// `#[derive(…, Default, …)]`.
fn derives_default(attrs: &[syn::Attribute]) -> bool {
    use syn::punctuated::Punctuated;
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|a| {
            a.parse_args_with(Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
                .is_ok_and(|paths| {
                    paths
                        .iter()
                        .any(|p| p.segments.last().is_some_and(|s| s.ident == "Default"))
                })
        })
}

/// The last segment of a type's path (`Embedder` for `crate::embed::Embedder<T>`).
fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Paren(p) => type_name(&p.elem),
        syn::Type::Group(g) => type_name(&g.elem),
        _ => None,
    }
}

/// A `use` tree as (the name it binds, its full path) pairs; a glob binds `*` (its path ends in
/// `*`), `self` binds the module's own name.
pub fn flatten(t: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    let with = |prefix: &Vec<String>, last: String| {
        let mut p = prefix.clone();
        p.push(last);
        p
    };
    match t {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) if n.ident == "self" => {
            if let Some(last) = prefix.last() {
                out.push((last.clone(), prefix.clone()));
            }
        }
        syn::UseTree::Name(n) => out.push((n.ident.to_string(), with(prefix, n.ident.to_string()))),
        syn::UseTree::Rename(r) => {
            out.push((r.rename.to_string(), with(prefix, r.ident.to_string())))
        }
        syn::UseTree::Glob(_) => out.push(("*".into(), with(prefix, "*".into()))),
        syn::UseTree::Group(g) => g.items.iter().for_each(|i| flatten(i, prefix, out)),
    }
}

/// The paths and method calls of one item's code (macro arguments that parse as expressions
/// included: `vec![Device::new_cuda(0)?]`).
struct Body<'b> {
    bound: &'b HashSet<String>,
    self_ty: Option<String>,
    paths: Vec<Vec<String>>,
    /// Paths named in a type position (see [`Item::types`]).
    types: Vec<Vec<String>>,
    /// How deep inside a type the visit is (its paths go to `types`).
    in_type: usize,
    /// Inside what makes a value of the types it names (`let x: T = …`, a `const`, a
    /// `static`, `<T as Trait>`): those types are values.
    valued: usize,
    /// Items declared inside its blocks (bindgen's `const UNINIT` in a layout test) and its
    /// type parameters: names of no module, never looked up through a glob.
    locals: HashSet<String>,
    /// A trait's own function: `Self::new()` calls the `new` of whichever type implements it.
    in_trait: bool,
    methods: Vec<String>,
    uses: Vec<(String, Vec<String>)>,
    cuda: bool,
}

impl<'b> Body<'b> {
    fn new(bound: &'b HashSet<String>, self_ty: Option<String>) -> Self {
        Body {
            bound,
            self_ty,
            paths: Vec::new(),
            types: Vec::new(),
            in_type: 0,
            valued: 0,
            locals: HashSet::default(),
            in_trait: false,
            methods: Vec::new(),
            uses: Vec::new(),
            cuda: false,
        }
    }

    /// The function a path calls on a type it does not name: `Default::default()` (the type
    /// is the `let`'s or the field's), `T::new()` of a type parameter, `<T as Trait>::f()`,
    /// `Self::f()` in a trait. Read as a method call: that function of every type the code
    /// names, so a value built this way is built by its type's code.
    fn called_on_some_type(&self, p: &syn::ExprPath) -> Option<String> {
        let segments = &p.path.segments;
        let (first, last) = (segments.first()?, segments.last()?);
        let first = first.ident.to_string();
        let through = p.qself.is_some()
            || CONSTRUCTING_TRAITS.contains(&first.as_str())
            || self.locals.contains(&first)
            || (self.in_trait && first == "Self");
        // `<T>::new()` is one segment after its `<T>`.
        let on_a_type = segments.len() >= 2 || p.qself.is_some();
        (on_a_type && through).then(|| last.ident.to_string())
    }

    fn push(self, inline: &[String], key: Vec<String>, value: bool, out: &mut Items) {
        out.uses
            .extend(self.uses.into_iter().map(|(n, p)| (inline.to_vec(), n, p)));
        out.items.push(Item {
            key: [inline, &key].concat(),
            inline: inline.len(),
            value,
            mac: false,
            paths: joined(self.paths),
            types: joined(self.types),
            methods: self.methods,
            cuda: self.cuda,
            test: false,
            alias: false,
        });
    }
}

impl<'a> Visit<'a> for Body<'_> {
    fn visit_path(&mut self, p: &'a syn::Path) {
        let mut path: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if path.first().map(String::as_str) == Some("Self") {
            match &self.self_ty {
                Some(ty) => path[0] = ty.clone(),
                None => {
                    path.remove(0);
                }
            }
        }
        let keep = match path.as_slice() {
            [] => false,
            [one] if self.locals.contains(one) => false,
            [one] => {
                self.bound.contains(one)
                    || (one.starts_with(|c: char| c.is_ascii_uppercase())
                        && !PRELUDE.contains(&one.as_str()))
            }
            // The standard library's paths (`::core::ffi::c_int`) reach no crate of the tree.
            [first, ..] => !is_std(first),
        };
        if keep && self.in_type > 0 {
            self.types.push(path);
        } else if keep {
            self.paths.push(path);
        }
        visit::visit_path(self, p);
    }

    fn visit_type(&mut self, t: &'a syn::Type) {
        let typed = self.valued == 0;
        self.in_type += usize::from(typed);
        visit::visit_type(self, t);
        self.in_type -= usize::from(typed);
    }

    /// `fn f<Storage>(s: Storage)`: a type parameter, no item of a module.
    fn visit_type_param(&mut self, t: &'a syn::TypeParam) {
        self.locals.insert(t.ident.to_string());
        visit::visit_type_param(self, t);
    }

    /// `let s: Session = Default::default();`: a value of that type is made here.
    fn visit_local(&mut self, l: &'a syn::Local) {
        self.valued += 1;
        visit::visit_local(self, l);
        self.valued -= 1;
    }

    /// `<Session as Default>::default()`.
    fn visit_qself(&mut self, q: &'a syn::QSelf) {
        self.valued += 1;
        visit::visit_qself(self, q);
        self.valued -= 1;
    }

    /// A closure's or a block's code inside a `let` is code, not the `let`'s type.
    fn visit_block(&mut self, b: &'a syn::Block) {
        for stmt in &b.stmts {
            let ident = match stmt {
                syn::Stmt::Item(syn::Item::Const(c)) => &c.ident,
                syn::Stmt::Item(syn::Item::Static(s)) => &s.ident,
                _ => continue,
            };
            self.locals.insert(ident.to_string());
        }
        let (valued, in_type) = (self.valued, self.in_type);
        (self.valued, self.in_type) = (0, 0);
        visit::visit_block(self, b);
        (self.valued, self.in_type) = (valued, in_type);
    }

    fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
        // `load(…)`: a call by a single name, whatever bound it.
        if let syn::Expr::Path(p) = c.func.as_ref() {
            if let Some(id) = p.path.get_ident() {
                self.paths.push(vec![id.to_string()]);
            }
            // `Device::Cuda(storage.device().clone())`: the device something already is on,
            // wrapped again (an accessor), not a choice; `Device::Cuda(0)` and
            // `Device::Cuda(CudaDevice::new(0)?)` choose.
            let rewrapped = p.path.segments.last().is_some_and(|s| s.ident == "Cuda")
                && !c.args.is_empty()
                && c.args.iter().all(on_a_device_already);
            if rewrapped {
                // The variant's path is named (the reach follows it) but chooses nothing; the
                // arguments are read as any code.
                let before = self.cuda;
                self.visit_expr(&c.func);
                self.cuda = before;
                c.args.iter().for_each(|a| self.visit_expr(a));
                return;
            }
        }
        visit::visit_expr_call(self, c);
    }

    fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
        self.cuda |= chooses_cuda_in_code(&p.path);
        if let Some(f) = self.called_on_some_type(p) {
            self.methods.push(f);
        }
        visit::visit_expr_path(self, p);
    }

    fn visit_expr_struct(&mut self, e: &'a syn::ExprStruct) {
        self.cuda |= chooses_cuda_in_code(&e.path);
        visit::visit_expr_struct(self, e);
    }

    fn visit_type_path(&mut self, t: &'a syn::TypePath) {
        // A backend chosen by its type (burn's `Cuda`; dfdx's `AutoDevice`).
        let last = t.path.segments.last().map(|s| s.ident.to_string());
        self.cuda |= matches!(last.as_deref(), Some("Cuda" | "AutoDevice"));
        visit::visit_type_path(self, t);
    }

    fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
        self.cuda |= m.method == "cuda";
        self.methods.push(m.method.to_string());
        visit::visit_expr_method_call(self, m);
    }

    fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
        flatten(&u.tree, &mut Vec::new(), &mut self.uses);
    }

    fn visit_macro(&mut self, m: &'a syn::Macro) {
        use syn::punctuated::Punctuated;
        // `stringify!(Reserved)` writes a string: it names nothing.
        if m.path.is_ident("stringify") {
            return;
        }
        if let Ok(args) =
            m.parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
        {
            for arg in &args {
                self.visit_expr(arg);
            }
        }
        visit::visit_macro(self, m);
    }
}

/// What the reached code names: the first segments of the paths it names outside its crate
/// (the crates it uses), every segment and method name (entry points), and the paths into
/// other crates (`other::load`), by crate.
#[derive(Debug, Default)]
pub struct Reached {
    pub names: HashSet<String>,
    /// The crates of `names` it names other than as a type: it may build something of them.
    pub values: HashSet<String>,
    pub segments: HashSet<String>,
    pub external: Vec<Vec<String>>,
    /// Those of `external` it names only as types (a field's, a signature's, a cast's), never
    /// as a value.
    pub external_types: HashSet<Vec<String>>,
    /// Those of `external` it names as values.
    pub external_values: HashSet<Vec<String>>,
    pub methods: HashSet<String>,
    /// Some of it chooses a CUDA device.
    pub cuda: bool,
    /// The reach stopped before its end (a library too large to follow item by item).
    pub incomplete: bool,
}

/// A library: its crate name, its files with their module paths, each file's items.
pub struct Library<'a> {
    pub name: &'a str,
    pub modules: &'a [(String, Vec<String>)],
    pub items: &'a dyn Fn(&str) -> Option<&'a Items>,
}

/// What one module of a file (the file's own, or an inline one) can name: its items (all of
/// them, and those of the type namespace), its `use` bindings and its glob imports.
#[derive(Default)]
struct Scope<'a> {
    all: HashSet<&'a str>,
    types: HashSet<&'a str>,
    bound: HashMap<&'a str, Vec<&'a [String]>>,
    globs: Vec<&'a [String]>,
}

impl<'a> Scope<'a> {
    fn of(items: &'a Items, inline: &[String]) -> Self {
        let mut scope = Scope::default();
        for i in &items.items {
            if i.key.len() > inline.len() && i.key.starts_with(inline) {
                let name = i.key[inline.len()].as_str();
                scope.all.insert(name);
                if i.key.len() > inline.len() + 1 || !i.value {
                    scope.types.insert(name);
                }
            }
        }
        for (at, name, target) in &items.uses {
            if inline.starts_with(at) {
                if name == "*" {
                    scope.globs.push(&target[..target.len() - 1]);
                } else {
                    scope.bound.entry(name).or_default().push(target);
                }
            }
        }
        scope
    }

    /// The module's own names a path can start with: a single name any item, a longer path a
    /// module or a type (`bench::device()` names the crate `bench`, not `fn bench`).
    fn defines(&self, path: &[String]) -> bool {
        let names = if path.len() == 1 {
            &self.all
        } else {
            &self.types
        };
        names.contains(path[0].as_str())
    }
}

/// A library's items by where a name can find them.
pub struct LibraryIndex<'a> {
    lib: &'a Library<'a>,
    files: Vec<Option<&'a Items>>,
    /// Module path → its file.
    module_file: HashMap<&'a [String], usize>,
    /// (file, first segment of the key) → the items.
    by_head: HashMap<(usize, &'a str), Vec<usize>>,
    /// Method (or associated) name → the items of that name, whatever their type.
    by_method: HashMap<&'a str, Vec<(usize, usize)>>,
    /// Type (or trait) name → its methods.
    by_type: HashMap<&'a str, Vec<(usize, usize)>>,
    /// `macro_rules!` name → its definitions (`#[macro_export]` puts one at the crate's root).
    by_macro: HashMap<&'a str, Vec<(usize, usize)>>,
    /// (file, inline modules) → what code there can name.
    scopes: HashMap<(usize, &'a [String]), Scope<'a>>,
    /// What looking up a path and reading an item do, worked out once for every reach (a
    /// crate's unit tests reach it once per file).
    memo: RefCell<Memo>,
}

/// The steps of a lookup or a read, independent of what a reach has seen: a reach replays them
/// in order, so its result is the one of working each out again.
#[derive(Default)]
struct Memo {
    /// A path of the library (and whether a miss is expected, whether it is named only as a
    /// type) → its id.
    ids: [HashMap<Rc<[String]>, u32>; 4],
    paths: Vec<(Rc<[String]>, bool, bool)>,
    lookups: Vec<Option<Rc<[Op]>>>,
    reads: HashMap<(usize, usize), Rc<[Op]>>,
}

impl Memo {
    fn id(&mut self, path: Vec<String>, guess: bool, typed: bool) -> u32 {
        let kind = usize::from(guess) + 2 * usize::from(typed);
        if let Some(&id) = self.ids[kind].get(path.as_slice()) {
            return id;
        }
        let id = u32::try_from(self.paths.len()).expect("fewer paths than u32::MAX");
        let path: Rc<[String]> = path.into();
        self.ids[kind].insert(path.clone(), id);
        self.paths.push((path, guess, typed));
        self.lookups.push(None);
        id
    }

    /// A path taken: one of the library's to look up (longer ones never are), or another
    /// crate's; `typed`: named only as a type.
    fn take(&mut self, path: Path, guess: bool, typed: bool, ops: &mut Vec<Op>) {
        match path {
            Path::Internal(p) if p.len() > MAX_SEGMENTS => {}
            Path::Internal(p) => ops.push(Op::Lookup(self.id(p, guess, typed))),
            Path::External(p) if typed => ops.push(Op::TypeExternal(p.into())),
            Path::External(p) => ops.push(Op::External(p.into())),
        }
    }
}

/// One step of a reach.
enum Op {
    /// The code read chooses a CUDA device.
    Cuda,
    Item(usize, usize),
    /// Every item of a file.
    Whole(usize),
    /// The segments of a path the code names.
    Name(Box<[String]>),
    /// The segments of a path that names only another crate's items (`Sequence::new` with
    /// `use tokenizers::…::Sequence`): entry points of that crate, never this one's types.
    Foreign(Box<[String]>),
    /// A method called on a value.
    Method(Box<str>),
    /// A path of the library to look up.
    Lookup(u32),
    /// A path into another crate.
    External(Box<[String]>),
    /// A path into another crate named only as a type.
    TypeExternal(Box<[String]>),
}

/// Longer paths are never looked up (no crate nests modules this deep).
const MAX_SEGMENTS: usize = 24;

/// Paths looked up in one reach before it gives up (and its caller reads the whole library).
const MAX_PATHS: usize = 200_000;

/// Methods Rust calls under another name: `x.into()` runs a `from`, `s.parse()` a `from_str`.
const IMPLIED: &[(&str, &str)] = &[
    ("into", "from"),
    ("try_into", "try_from"),
    ("parse", "from_str"),
    ("collect", "from_iter"),
    ("to_string", "fmt"),
];

impl<'a> LibraryIndex<'a> {
    pub fn new(lib: &'a Library<'a>) -> Self {
        let files: Vec<Option<&Items>> = lib.modules.iter().map(|(f, _)| (lib.items)(f)).collect();
        let mut index = LibraryIndex {
            lib,
            files: files.clone(),
            module_file: HashMap::default(),
            by_head: HashMap::default(),
            by_method: HashMap::default(),
            by_type: HashMap::default(),
            by_macro: HashMap::default(),
            scopes: HashMap::default(),
            memo: RefCell::default(),
        };
        for (fi, (_, module)) in lib.modules.iter().enumerate() {
            index.module_file.entry(module.as_slice()).or_insert(fi);
        }
        for (fi, items) in files.iter().enumerate() {
            let Some(items) = items else { continue };
            index.scopes.insert((fi, &[]), Scope::of(items, &[]));
            // An inline module that only re-exports (`pub mod prelude { pub use … }`).
            for (at, _, _) in &items.uses {
                index
                    .scopes
                    .entry((fi, at.as_slice()))
                    .or_insert_with(|| Scope::of(items, at));
            }
            for (ii, item) in items.items.iter().enumerate() {
                index
                    .by_head
                    .entry((fi, item.key[0].as_str()))
                    .or_default()
                    .push(ii);
                if item.mac {
                    let name = item.key.last().map_or("", String::as_str);
                    index.by_macro.entry(name).or_default().push((fi, ii));
                }
                let inline = &item.key[..item.inline];
                index
                    .scopes
                    .entry((fi, inline))
                    .or_insert_with(|| Scope::of(items, inline));
                if item.key.len() > item.inline + 1 {
                    let n = item.key.len();
                    index
                        .by_method
                        .entry(item.key[n - 1].as_str())
                        .or_default()
                        .push((fi, ii));
                    index
                        .by_type
                        .entry(item.key[n - 2].as_str())
                        .or_default()
                        .push((fi, ii));
                }
            }
        }
        // The crate root's `extern crate x as y;`: `y::…` names `x` in every module that
        // binds no `y` of its own.
        let root = index.module_file.get(&[][..]).copied();
        if let Some(items) = root.and_then(|fi| files[fi]) {
            let prelude: Vec<(&str, &[String])> = items
                .uses
                .iter()
                .filter(|(at, name, _)| at.is_empty() && items.extern_crates.contains(name))
                .map(|(_, name, target)| (name.as_str(), target.as_slice()))
                .collect();
            for scope in index.scopes.values_mut() {
                for &(name, target) in &prelude {
                    if !scope.bound.contains_key(name) && !scope.all.contains(name) {
                        scope.bound.insert(name, vec![target]);
                    }
                }
            }
        }
        index
    }

    /// The code reached from `entry` (paths relative to the library root, its name taken off;
    /// `true`: a guess) and the methods called on the library's values.
    pub fn reach(&self, entry: &[(Vec<String>, bool)], methods: &[String]) -> Reached {
        let mut queue = Vec::with_capacity(entry.len());
        {
            let mut memo = self.memo.borrow_mut();
            for (path, guess) in entry {
                if path.len() <= MAX_SEGMENTS {
                    queue.push(memo.id(path.clone(), *guess, false));
                }
            }
        }
        let mut walk = Walk {
            index: self,
            queue,
            items: Vec::new(),
            seen_paths: HashSet::default(),
            seen_items: HashSet::default(),
            seen_methods: HashSet::default(),
            whole: HashSet::default(),
            local: HashSet::default(),
            out: Reached::default(),
        };
        for (path, _) in entry {
            walk.name(path);
        }
        for m in methods {
            walk.method(m);
        }
        walk.run();
        walk.out
    }

    /// The file of the longest module `path` starts with (the root when none), and its length.
    fn module_of(&self, path: &[String]) -> Option<(usize, usize)> {
        (0..=path.len())
            .rev()
            .find_map(|k| self.module_file.get(&path[..k]).map(|&fi| (fi, k)))
    }

    /// The steps of looking up the path `id`.
    fn lookup(&self, id: u32) -> Rc<[Op]> {
        let mut memo = self.memo.borrow_mut();
        if let Some(ops) = &memo.lookups[id as usize] {
            return ops.clone();
        }
        let (path, guess, typed) = memo.paths[id as usize].clone();
        let mut ops = Vec::new();
        self.plan_lookup(&path, (guess, typed), &mut memo, &mut ops);
        let ops: Rc<[Op]> = ops.into();
        memo.lookups[id as usize] = Some(ops.clone());
        ops
    }

    fn plan_lookup(
        &self,
        path: &[String],
        (guess, typed): (bool, bool),
        memo: &mut Memo,
        ops: &mut Vec<Op>,
    ) {
        let Some((fi, depth)) = self.module_of(path) else {
            return;
        };
        let module = &self.lib.modules[fi].1;
        let rest = &path[depth..];
        let Some(items) = self.files[fi] else {
            return;
        };
        if rest.is_empty() {
            return;
        }
        let heads = self.by_head.get(&(fi, rest[0].as_str()));
        let mut found = false;
        for &ii in heads.into_iter().flatten() {
            let item = &items.items[ii];
            if rest.starts_with(&item.key) {
                found = true;
                ops.push(Op::Item(fi, ii));
                if item.alias && !typed {
                    // `let dev: TestDevice = …` of `type TestDevice = Cuda;`: a `Cuda` is
                    // built, as if named itself.
                    self.take_paths(fi, item, Some(false), memo, ops);
                }
                // `TestDevice::default()`: the function of that name of the types the code
                // names (an alias's target's impl is elsewhere).
                if item.alias && rest.len() == item.key.len() + 1 {
                    ops.push(Op::Method(rest[item.key.len()].as_str().into()));
                }
            }
        }
        // `Type::method` where the impl is in another file of the library.
        if rest.len() >= 2 {
            for &(fj, jj) in self.by_method.get(rest[1].as_str()).into_iter().flatten() {
                let key = &self.files[fj].unwrap().items[jj].key;
                if key[key.len() - 2] == rest[0] {
                    found = true;
                    ops.push(Op::Item(fj, jj));
                }
            }
        }
        // A macro, by its name: `#[macro_export]` puts it at the crate's root.
        if !found && rest.len() == 1 {
            for &(fj, jj) in self.by_macro.get(rest[0].as_str()).into_iter().flatten() {
                found = true;
                ops.push(Op::Item(fj, jj));
            }
        }
        if found {
            return;
        }
        // The inline modules of the file the path goes through, and what is left of it.
        let mut inline = 0;
        while inline + 1 < rest.len() && self.scopes.contains_key(&(fi, &rest[..=inline])) {
            inline += 1;
        }
        let (at, name) = (&rest[..inline], &rest[inline..]);
        let Some(scope) = self.scopes.get(&(fi, at)) else {
            return;
        };
        let here: Vec<String> = [&module[..], at].concat();
        // A name the module imports or re-exports (`pub use error::Error;`), or a guess through
        // its glob imports.
        if let Some(targets) = scope.bound.get(name[0].as_str()) {
            for target in targets {
                let full = [target, &name[1..]].concat();
                memo.take(
                    classify(self.lib.name, &here, &full, Some(scope)),
                    guess,
                    typed,
                    ops,
                );
            }
            return;
        }
        for glob in &scope.globs {
            let full = [glob, name].concat();
            memo.take(
                classify(self.lib.name, &here, &full, Some(scope)),
                true,
                typed,
                ops,
            );
        }
        if guess {
            return;
        }
        if name.len() >= 2 {
            // `Trait::method(x)`, `Default::default()`: every method of that name.
            ops.push(Op::Method(name[name.len() - 1].as_str().into()));
        } else {
            // An item the index does not see (a macro writes it): all of the file.
            ops.push(Op::Whole(fi));
        }
    }

    /// The steps of reading an item's code: what it names and calls.
    fn read(&self, fi: usize, ii: usize) -> Rc<[Op]> {
        let mut memo = self.memo.borrow_mut();
        if let Some(ops) = memo.reads.get(&(fi, ii)) {
            return ops.clone();
        }
        let item = &self.files[fi].unwrap().items[ii];
        let mut ops = Vec::new();
        if item.cuda {
            ops.push(Op::Cuda);
        }
        if self.take_paths(fi, item, None, &mut memo, &mut ops) {
            for m in &item.methods {
                ops.push(Op::Name(Box::new([m.clone()])));
                ops.push(Op::Method(m.as_str().into()));
            }
        }
        let ops: Rc<[Op]> = ops.into();
        memo.reads.insert((fi, ii), ops.clone());
        ops
    }

    /// The steps of taking the paths an item of file `fi` names, resolved where it is
    /// written: each as a type's or a value's as the code names it, or all as `typed` says.
    /// False when its module is not known.
    fn take_paths(
        &self,
        fi: usize,
        item: &Item,
        typed: Option<bool>,
        memo: &mut Memo,
        ops: &mut Vec<Op>,
    ) -> bool {
        let inline = &item.key[..item.inline];
        let Some(scope) = self.scopes.get(&(fi, inline)) else {
            return false;
        };
        let here: Vec<String> = [&self.lib.modules[fi].1[..], inline].concat();
        for (p, as_type) in item.paths() {
            let resolved = resolve(self.lib.name, scope, &here, &p);
            if resolved.iter().all(|(r, _)| matches!(r, Path::External(_))) {
                ops.push(Op::Foreign(p.into()));
            } else {
                ops.push(Op::Name(p.into()));
            }
            for (path, guess) in resolved {
                memo.take(path, guess, typed.unwrap_or(as_type), ops);
            }
        }
        true
    }
}

struct Walk<'i, 'a> {
    index: &'i LibraryIndex<'a>,
    /// Paths to look up (by id).
    queue: Vec<u32>,
    /// Items reached, their code not read yet.
    items: Vec<(usize, usize)>,
    seen_paths: HashSet<u32>,
    seen_items: HashSet<(usize, usize)>,
    seen_methods: HashSet<String>,
    whole: HashSet<usize>,
    /// The segments of the paths the reached code names in this crate (or may: a guess):
    /// the types whose methods a call on a value can run.
    local: HashSet<String>,
    out: Reached,
}

impl Walk<'_, '_> {
    fn run(&mut self) {
        loop {
            if let Some((fi, ii)) = self.items.pop() {
                let ops = self.index.read(fi, ii);
                self.apply(&ops);
                continue;
            }
            let Some(id) = self.queue.pop() else {
                break;
            };
            if self.seen_paths.len() > MAX_PATHS {
                // Too much to follow: the caller takes the whole library instead.
                self.out.incomplete = true;
                break;
            }
            if !self.seen_paths.insert(id) {
                continue;
            }
            let ops = self.index.lookup(id);
            self.apply(&ops);
        }
    }

    fn apply(&mut self, ops: &[Op]) {
        for op in ops {
            match op {
                Op::Cuda => self.out.cuda = true,
                Op::Item(fi, ii) => self.item(*fi, *ii),
                Op::Whole(fi) => self.whole_file(*fi),
                Op::Name(p) => self.name(p),
                Op::Foreign(p) => self.foreign(p),
                Op::Method(m) => self.method(m),
                Op::Lookup(id) => self.queue.push(*id),
                Op::External(p) => {
                    self.out.names.insert(p[0].clone());
                    self.out.values.insert(p[0].clone());
                    self.foreign(p);
                    self.out.external.push(p.to_vec());
                    self.out.external_types.remove(&p[..]);
                    self.out.external_values.insert(p.to_vec());
                }
                Op::TypeExternal(p) => {
                    self.out.names.insert(p[0].clone());
                    self.foreign(p);
                    self.out.external.push(p.to_vec());
                    if !self.out.external_values.contains(&p[..]) {
                        self.out.external_types.insert(p.to_vec());
                    }
                }
            }
        }
    }

    fn whole_file(&mut self, fi: usize) {
        if !self.whole.insert(fi) {
            return;
        }
        if let Some(items) = self.index.files[fi] {
            for ii in 0..items.items.len() {
                self.item(fi, ii);
            }
        }
    }

    /// A method called on a value: the methods of that name of every type (or trait) the
    /// code reached so far names — a value of a type no reached code names (constructs,
    /// returns, takes) cannot be there.
    fn method(&mut self, name: &str) {
        let mut names = vec![name];
        names.extend(IMPLIED.iter().filter(|(m, _)| *m == name).map(|(_, f)| *f));
        for name in names {
            if !self.seen_methods.insert(name.to_string()) {
                continue;
            }
            self.out.methods.insert(name.to_string());
            for &(fi, ii) in self.index.by_method.get(name).into_iter().flatten() {
                let key = &self.index.files[fi].unwrap().items[ii].key;
                if self.local.contains(&key[key.len() - 2]) {
                    self.item(fi, ii);
                }
            }
        }
    }

    /// The segments of a path the reached code names: a type named now brings in its methods
    /// already called.
    fn name(&mut self, path: &[String]) {
        for s in path {
            if !self.local.insert(s.clone()) {
                continue;
            }
            self.out.segments.insert(s.clone());
            for &(fi, ii) in self.index.by_type.get(s.as_str()).into_iter().flatten() {
                let key = &self.index.files[fi].unwrap().items[ii].key;
                if self.seen_methods.contains(&key[key.len() - 1]) {
                    self.item(fi, ii);
                }
            }
        }
    }

    /// The segments of a path into another crate: its entry points, not this crate's types (a
    /// `HashMap::insert` is not the crate's own `Sequence::insert` because `tokenizers`' type
    /// is also named `Sequence`).
    fn foreign(&mut self, path: &[String]) {
        for s in path {
            if !self.out.segments.contains(s) {
                self.out.segments.insert(s.clone());
            }
        }
    }

    fn item(&mut self, fi: usize, ii: usize) {
        if self.seen_items.insert((fi, ii)) {
            self.items.push((fi, ii));
        }
    }
}

enum Path {
    /// Relative to the library's root.
    Internal(Vec<String>),
    /// In another crate: its first segment is the crate's name as the code writes it.
    External(Vec<String>),
}

/// What a path written in module `here` means: through the module's `use` lines, its own
/// items, or its glob imports (a guess, flagged `true`).
fn resolve(krate: &str, scope: &Scope, here: &[String], path: &[String]) -> Vec<(Path, bool)> {
    let first = path[0].as_str();
    if matches!(first, "crate" | "self" | "super") || first == krate {
        return vec![(classify(krate, here, path, None), false)];
    }
    if let Some(targets) = scope.bound.get(first) {
        return targets
            .iter()
            .map(|target| {
                let mut full = [target, &path[1..]].concat();
                // `use candle_core as candle; use candle::Device;`: a use of a use.
                for _ in 0..4 {
                    let Some(again) = scope.bound.get(full[0].as_str()) else {
                        break;
                    };
                    match again.first() {
                        Some(t) if t[..] != full[..1] && full[0] != first => {
                            full = [t, &full[1..]].concat();
                        }
                        _ => break,
                    }
                }
                (classify(krate, here, &full, Some(scope)), false)
            })
            .collect();
    }
    if scope.defines(path) {
        return vec![(Path::Internal([here, path].concat()), false)];
    }
    let mut out: Vec<(Path, bool)> = scope
        .globs
        .iter()
        .map(|glob| {
            let full = [glob, path].concat();
            (classify(krate, here, &full, Some(scope)), true)
        })
        .collect();
    // Nothing of this crate that the index sees (`std`, a dependency, a macro's item).
    out.push((Path::Internal([here, path].concat()), true));
    if path.len() > 1 {
        out.push((Path::External(path.to_vec()), false));
    }
    out
}

/// A full path (a `use` target, a glob's name, a path written with `crate::`): this crate's,
/// relative to its root, or another crate's. A path of edition 2018 starting with a module or
/// item of this one (`use models::x`) is relative to it.
fn classify(krate: &str, here: &[String], path: &[String], scope: Option<&Scope>) -> Path {
    match path.first().map(String::as_str) {
        Some("crate") => Path::Internal(path[1..].to_vec()),
        Some(s) if s == krate => Path::Internal(path[1..].to_vec()),
        Some("self") => Path::Internal([here, &path[1..]].concat()),
        Some("super") => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = &here[..here.len().saturating_sub(ups)];
            Path::Internal([base, &path[ups..]].concat())
        }
        _ if scope.is_some_and(|s| s.types.contains(path[0].as_str())) => {
            Path::Internal([here, path].concat())
        }
        _ => Path::External(path.to_vec()),
    }
}

/// The paths a program file's code names in other crates (through its `use` lines and globs:
/// a guess is flagged `true`), and the methods it calls: where it enters its libraries.
pub fn entries(items: &Items) -> (Vec<(Vec<String>, bool)>, Vec<String>) {
    let mut paths = Vec::new();
    let mut methods = Vec::new();
    let mut scopes: HashMap<&[String], Scope> = HashMap::default();
    for item in &items.items {
        let inline = &item.key[..item.inline];
        let scope = scopes
            .entry(inline)
            .or_insert_with(|| Scope::of(items, inline));
        for (p, _) in item.paths() {
            for (resolved, guess) in resolve("", scope, inline, &p) {
                if let Path::External(p) = resolved {
                    paths.push((p, guess));
                }
            }
        }
        methods.extend(item.methods.iter().cloned());
    }
    (paths, methods)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(text: &str) -> Items {
        collect(&syn::parse_file(text).unwrap())
    }

    fn p(s: &str) -> (Vec<String>, bool) {
        (s.split("::").map(str::to_string).collect(), false)
    }

    /// Reach `entry` in a library of (file, module path, text).
    fn reach(files: &[(&str, &str, &str)], entry: &[&str], methods: &[&str]) -> Reached {
        let parsed: HashMap<String, Items> = files
            .iter()
            .map(|(f, _, text)| (f.to_string(), items(text)))
            .collect();
        let modules: Vec<(String, Vec<String>)> = files
            .iter()
            .map(|(f, m, _)| {
                let path = m.split("::").filter(|s| !s.is_empty());
                (f.to_string(), path.map(str::to_string).collect())
            })
            .collect();
        let get = |f: &str| parsed.get(f);
        let lib = Library {
            name: "lib",
            modules: &modules,
            items: &get,
        };
        let entry: Vec<_> = entry.iter().map(|e| p(e)).collect();
        let methods: Vec<String> = methods.iter().map(|m| m.to_string()).collect();
        LibraryIndex::new(&lib).reach(&entry, &methods)
    }

    #[test]
    fn a_device_is_chosen_by_a_call_or_a_variant_never_by_a_type_in_a_signature() {
        let found = items("fn a(d: &CudaDevice, s: Storage) -> Storage { match s { Storage::Cuda(c) => Storage::Cuda(c), o => o } }\nfn b() { let _ = Device::Cuda(0); }\nfn c() { let _ = CudaContext::new(1); }\nfn d() { let _m = Model::<Cuda>::new(); }\nfn e(t: Tensor) { t.cuda(); }\n");
        let cuda: Vec<bool> = found.items.iter().map(|i| i.cuda).collect();
        assert_eq!(cuda, [false, true, true, true, true]);
        // The device a tensor's storage is on, wrapped again (candle's `Storage::device()`): no
        // choice; a device built there is one.
        let found = items("fn f(s: &CudaStorage) -> Device { Device::Cuda(s.device().clone()) }\nfn g(&self) -> Device { Device::Cuda(self.dev) }\nfn h() -> Device { Device::Cuda(CudaDevice::new(0).unwrap()) }\nfn i(s: &S) -> Device { Device::Cuda(s.device().cuda()) }\n");
        let cuda: Vec<bool> = found.items.iter().map(|i| i.cuda).collect();
        assert_eq!(cuda, [false, false, true, true]);
    }

    #[test]
    fn methods_of_a_type_no_reached_code_names_are_not_run() {
        let lib = [
            ("lib.rs", "", "pub mod embed;\nmod device;\npub use embed::Embedder;\n"),
            ("device.rs", "device", "pub fn select() -> Device { Device::new_cuda(0).unwrap() }\n"),
            ("embed.rs", "embed", "use crate::device::select;\npub struct Embedder;\npub struct Cloud;\npub struct Local;\nimpl Embedder {\n    pub fn cloud() -> Cloud { Cloud }\n    pub fn local() -> Local { Local::load() }\n}\nimpl Cloud { pub fn embed(&self) {} }\nimpl Local {\n    fn load() -> Self { let _d = select(); Local }\n    pub fn embed(&self) {}\n}\n"),
        ];
        let cloud = reach(&lib, &["Embedder::cloud"], &["embed"]);
        assert!(!cloud.cuda, "{:?}", cloud.segments);
        let local = reach(&lib, &["Embedder::local"], &["embed"]);
        assert!(local.cuda);
        // A name the root re-exports, a whole module's function by its crate path.
        assert!(reach(&lib, &["device::select"], &[]).cuda);
    }

    #[test]
    fn an_inline_module_that_only_re_exports_is_followed() {
        let lib = [
            ("lib.rs", "", "pub mod tensor;\npub mod prelude {\n    pub use crate::tensor::*;\n}\n"),
            ("tensor.rs", "tensor", "pub type AutoDevice = Cuda;\npub struct Cuda;\nimpl Default for Cuda {\n    fn default() -> Self { let _c = CudaContext::new(0); Cuda }\n}\n"),
        ];
        let r = reach(&lib, &["prelude::AutoDevice::default"], &[]);
        assert!(r.cuda, "{:?}", r.segments);
    }

    #[test]
    fn an_exported_macro_is_found_by_its_name_and_read_from_its_tokens() {
        let lib = [
            ("lib.rs", "", "pub mod test_utils;\n"),
            ("test_utils.rs", "test_utils", "#[macro_export]\nmacro_rules! test_device {\n    ($f: ident, $cpu: ident, $gpu: ident) => {\n        fn $cpu() { $f(&Device::Cpu) }\n        fn $gpu() { $f(&Device::new_cuda(0).unwrap()) }\n    };\n}\n"),
        ];
        assert!(reach(&lib, &["test_device"], &[]).cuda);
        // A program's invocation among its items is where it enters the library.
        let program = items("use lib_core as lib;\nuse lib::test_device;\nfn layout(_d: &Device) {}\ntest_device!(layout, layout_cpu, layout_gpu);\n");
        let (paths, _) = entries(&program);
        assert!(
            paths.iter().any(|(p, _)| p == &["lib_core", "test_device"]),
            "{paths:?}"
        );
    }

    #[test]
    fn glob_imports_of_modules_that_import_each_other_end() {
        let lib = [
            ("lib.rs", "", "pub mod result;\npub use result::*;\n"),
            ("result.rs", "result", "use super::*;\nmod io {\n    use super::*;\n    pub fn go() -> Missing { Missing }\n}\npub use self::io::*;\n"),
        ];
        let r = reach(&lib, &["go", "Missing", "result::io::go"], &[]);
        assert!(!r.cuda);
    }

    #[test]
    fn a_type_named_only_as_a_type_builds_nothing_and_one_built_does() {
        let lib = [
            (
                "lib.rs",
                "",
                "pub mod dev;
pub mod util;
#[cfg(test)]
pub mod tests {
    pub type TestDevice = crate::dev::Gpu;
}
",
            ),
            (
                "dev.rs",
                "dev",
                "use cudarc::driver::CudaStream;
pub struct Gpu {
    s: CudaStream,
}
impl Default for Gpu {
    fn default() -> Self { Gpu::seed(0) }
}
impl Gpu {
    pub fn seed(o: usize) -> Self { Gpu { s: cudarc::driver::CudaContext::new(o).stream() } }
}
",
            ),
            (
                "util.rs",
                "util",
                "use crate::tests::TestDevice;
pub fn size() -> usize { std::mem::size_of::<TestDevice>() }
pub fn width(_d: &TestDevice) -> usize { 0 }
pub fn annotated() { let _d: TestDevice = Default::default(); }
pub fn returned() -> TestDevice { Default::default() }
pub fn seeded() { let _d = TestDevice::seed(1); }
pub fn make<D: Default>() -> D { D::default() }
pub fn generic() { let _d = make::<TestDevice>(); }
pub fn qualified() -> TestDevice { <TestDevice as Default>::default() }
pub fn bare() -> TestDevice { <TestDevice>::default() }
#[derive(Default)]
pub struct Held { d: TestDevice }
pub fn held() { let _h = Held::default(); }
",
            ),
        ];
        let values = |entry: &str| reach(&lib, &[entry], &[]).values.contains("cudarc");
        for typed in ["util::size", "util::width"] {
            let r = reach(&lib, &[typed], &[]);
            assert!(r.names.contains("cudarc") && !values(typed), "{typed}");
        }
        for built in [
            "util::annotated",
            "util::returned",
            "util::seeded",
            "util::generic",
            "util::qualified",
            "util::bare",
            "util::held",
        ] {
            assert!(values(built), "{built}");
        }
    }

    #[test]
    fn a_longer_path_starts_with_a_module_or_a_type_never_a_function() {
        // `bench::device()` in a program whose own `fn bench` exists names the crate `bench`.
        let program = items("use criterion::Criterion;\nfn bench(c: &mut Criterion) {\n    let _d = bench::device();\n}\n");
        let (paths, _) = entries(&program);
        assert!(
            paths.iter().any(|(p, _)| p == &["bench", "device"]),
            "{paths:?}"
        );
    }
}
