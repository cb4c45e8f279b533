//! Which `fn main` runs when the GPU features are on: the top-level candidates (and those of
//! `cfg_if!` branches), each with its `#[cfg]` evaluated with GPU features on and tests off.
//! A `fn main` inside a module (`mod tests`) is never a candidate.

use std::ops::Range;

use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Attribute, Item, ItemFn, Meta, Token};

use super::range;

/// A three-valued `cfg`: what the predicate is when the GPU features are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tri {
    True,
    False,
    Unknown,
}

impl Tri {
    fn not(self) -> Tri {
        match self {
            Tri::True => Tri::False,
            Tri::False => Tri::True,
            Tri::Unknown => Tri::Unknown,
        }
    }

    fn and(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::False, _) | (_, Tri::False) => Tri::False,
            (Tri::True, Tri::True) => Tri::True,
            _ => Tri::Unknown,
        }
    }

    fn or(self, other: Tri) -> Tri {
        self.not().and(other.not()).not()
    }
}

#[derive(Debug, Clone)]
pub struct MainFn {
    pub is_async: bool,
    /// Just after the body's `{`.
    pub body_start: usize,
    pub body: Range<usize>,
    pub sig: Range<usize>,
    /// The ranges of the body's top-level statements, in order.
    pub stmts: Vec<Range<usize>>,
    /// Where the body's closing `}` starts.
    pub body_close: usize,
    /// The `async` keyword of an async main.
    pub async_token: Option<Range<usize>>,
    /// The name `main`, the return type as written (`-> anyhow::Result<()>`, `None` for `()`)
    /// and the `#[cfg(…)]` attributes: what a sync `main` written next to an async one needs.
    pub ident: Range<usize>,
    pub output: Option<Range<usize>>,
    pub cfgs: Vec<Range<usize>>,
    /// The runtime attribute of an async main (`#[tokio::main(flavor = "current_thread")]`):
    /// its range, its path, and its `name = value` arguments (`None` when they are not all of
    /// that form).
    pub runtime: Option<RuntimeAttr>,
    /// The first attribute of a sync main that is not known to leave it running on the
    /// process's first thread before any other thread exists (`#[show_image::main]` runs it
    /// on a spawned thread): its path as written, and its range. The env cannot be set
    /// soundly in such a main.
    pub foreign: Option<(String, Range<usize>)>,
    /// Its body only prints, panics or exits (`eprintln!("needs the `cuda` feature")`): a
    /// stub compiled when the real program's features are off, which starts nothing on a card.
    pub stub: bool,
}

#[derive(Debug, Clone)]
pub struct RuntimeAttr {
    pub range: Range<usize>,
    pub path: String,
    pub args: Option<Vec<(String, String)>>,
}

/// Attributes that leave a sync `main` as rustc writes it: run on the process's first thread,
/// before any other thread exists. The built-in inert ones (lints, docs, codegen hints) and
/// the tool attributes (`rustfmt::`, `clippy::`); `cfg_attr` when every attribute it adds is
/// one of them. Any other attribute is a macro that may run `main` elsewhere (show_image's
/// runs it on a spawned thread while the event loop keeps the first one).
const INERT_MAIN_ATTRS: &[&str] = &[
    "cfg",
    "allow",
    "warn",
    "deny",
    "forbid",
    "expect",
    "doc",
    "inline",
    "cold",
    "must_use",
    "track_caller",
    "deprecated",
    "no_mangle",
    "optimize",
    "coverage",
];

pub(in crate::lang::rust) fn attr_path(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// Whether the attribute leaves `main` on the first thread (see [`INERT_MAIN_ATTRS`]).
fn inert(attr: &Attribute) -> bool {
    let path = attr.path();
    let first = path.segments.first().map(|s| s.ident.to_string());
    if matches!(first.as_deref(), Some("rustfmt" | "clippy")) && path.segments.len() > 1 {
        return true;
    }
    if path.is_ident("cfg_attr") {
        // `cfg_attr(pred, a, b)`: inert when `a` and `b` are.
        let parsed = attr.parse_args_with(|input: ParseStream| {
            input.parse::<Meta>()?;
            let mut inner = Vec::new();
            while input.parse::<Option<Token![,]>>()?.is_some() && !input.is_empty() {
                inner.push(input.parse::<Meta>()?);
            }
            Ok(inner)
        });
        return parsed.is_ok_and(|inner| {
            inner.iter().all(|m| {
                let p = m.path();
                INERT_MAIN_ATTRS.iter().any(|a| p.is_ident(a))
                    || p.segments
                        .first()
                        .is_some_and(|s| s.ident == "rustfmt" || s.ident == "clippy")
            })
        });
    }
    INERT_MAIN_ATTRS.iter().any(|a| path.is_ident(a))
}

/// The first attribute of a sync main that is not inert: its path and range.
fn foreign_attr(attrs: &[Attribute]) -> Option<(String, Range<usize>)> {
    attrs
        .iter()
        .find(|a| !inert(a))
        .map(|a| (attr_path(a.path()), range(a)))
}

fn runtime_attr(attrs: &[Attribute]) -> Option<RuntimeAttr> {
    attrs.iter().find_map(|a| {
        let path = attr_path(a.path());
        if !path.ends_with("::main") {
            return None;
        }
        let args = match &a.meta {
            Meta::Path(_) => Some(Vec::new()),
            Meta::List(_) => a
                .parse_args_with(Punctuated::<syn::MetaNameValue, Token![,]>::parse_terminated)
                .ok()
                .map(|list| {
                    list.iter()
                        .map(|nv| {
                            let value = match &nv.value {
                                syn::Expr::Lit(l) => match &l.lit {
                                    syn::Lit::Str(s) => s.value(),
                                    syn::Lit::Int(i) => i.base10_digits().to_string(),
                                    syn::Lit::Bool(b) => b.value.to_string(),
                                    _ => String::from("?"),
                                },
                                _ => String::from("?"),
                            };
                            (
                                nv.path
                                    .get_ident()
                                    .map_or(String::from("?"), |i| i.to_string()),
                                value,
                            )
                        })
                        .collect()
                }),
            Meta::NameValue(_) => None,
        };
        Some(RuntimeAttr {
            range: range(a),
            path,
            args,
        })
    })
}

/// The main compiled with the GPU features: the first whose cfg surely holds, else the first
/// whose cfg may hold; `None` when every candidate is compiled out (a CPU-only stub).
pub fn choose(items: &[Item]) -> Option<MainFn> {
    let mut maybe = None;
    find(items, Tri::True, &mut maybe).or_else(|| {
        let (mut all, real) = feature_mains(items);
        (!all.is_empty()).then(|| all.swap_remove(real))
    })
}

/// The mains whose cfg may hold but not surely, and which of them is the program's: the first
/// that is not a stub saying which feature it needs (the first when all are).
fn feature_mains(items: &[Item]) -> (Vec<MainFn>, usize) {
    let mut all = Vec::new();
    unknown(items, Tri::True, &mut all);
    let real = all.iter().position(|m| !m.stub).unwrap_or(0);
    (all, real)
}

/// The other mains the GPU build may compile when none surely is (`#[cfg(feature = "x")]`
/// beside `#[cfg(not(feature = "x"))]`, `x` a feature the tool cannot judge): which one runs
/// depends on the build's features, so each needs the env. Empty when a main surely holds.
pub fn alternatives(items: &[Item]) -> Vec<MainFn> {
    let mut maybe = None;
    if find(items, Tri::True, &mut maybe).is_some() {
        return Vec::new();
    }
    let (all, real) = feature_mains(items);
    all.into_iter()
        .enumerate()
        .filter(|(i, _)| *i != real)
        .map(|(_, m)| m)
        .collect()
}

/// Every main whose cfg may hold but not surely, in the file's order.
fn unknown(items: &[Item], outer: Tri, out: &mut Vec<MainFn>) {
    for item in items {
        match item {
            Item::Fn(f) if f.sig.ident == "main" && outer.and(cfg_of(&f.attrs)) == Tri::Unknown => {
                out.push(main_fn(f));
            }
            Item::Macro(m) if is_cfg_if(&m.mac) => {
                for (cond, items) in cfg_if_branches(&m.mac).unwrap_or_default() {
                    unknown(&items, outer.and(cond), out);
                }
            }
            _ => {}
        }
    }
}

/// A statement that only prints, panics or exits: `eprintln!(…)`, `panic!(…)`,
/// `std::process::exit(1)`.
fn stub_stmt(stmt: &syn::Stmt) -> bool {
    const MACROS: &[&str] = &[
        "print",
        "println",
        "eprint",
        "eprintln",
        "panic",
        "todo",
        "unimplemented",
        "unreachable",
        "compile_error",
    ];
    let mac = |m: &syn::Macro| {
        m.path
            .segments
            .last()
            .is_some_and(|s| MACROS.iter().any(|n| s.ident == n))
    };
    match stmt {
        syn::Stmt::Macro(m) => mac(&m.mac),
        syn::Stmt::Expr(syn::Expr::Macro(m), _) => mac(&m.mac),
        syn::Stmt::Expr(syn::Expr::Call(c), _) => match c.func.as_ref() {
            syn::Expr::Path(p) => {
                let names: Vec<String> = p
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                names.ends_with(&["process".to_string(), "exit".to_string()])
            }
            _ => false,
        },
        _ => false,
    }
}

fn main_fn(f: &ItemFn) -> MainFn {
    let body = f.block.brace_token.span.join().byte_range();
    MainFn {
        stub: !f.block.stmts.is_empty() && f.block.stmts.iter().all(stub_stmt),
        is_async: f.sig.asyncness.is_some(),
        body_start: f.block.brace_token.span.open().byte_range().end,
        body,
        sig: range(&f.sig),
        stmts: f.block.stmts.iter().map(range).collect(),
        body_close: f.block.brace_token.span.close().byte_range().start,
        async_token: f.sig.asyncness.map(|t| t.span.byte_range()),
        ident: f.sig.ident.span().byte_range(),
        output: match &f.sig.output {
            syn::ReturnType::Default => None,
            syn::ReturnType::Type(arrow, ty) => {
                Some(arrow.spans[0].byte_range().start..range(ty.as_ref()).end)
            }
        },
        cfgs: f
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("cfg"))
            .map(range)
            .collect(),
        runtime: f
            .sig
            .asyncness
            .is_some()
            .then(|| runtime_attr(&f.attrs))
            .flatten(),
        foreign: f
            .sig
            .asyncness
            .is_none()
            .then(|| foreign_attr(&f.attrs))
            .flatten(),
    }
}

/// The first main, in the file's order, whose cfg surely holds; the first whose cfg may hold
/// goes to `maybe`.
fn find(items: &[Item], outer: Tri, maybe: &mut Option<MainFn>) -> Option<MainFn> {
    for item in items {
        match item {
            Item::Fn(f) if f.sig.ident == "main" => match outer.and(cfg_of(&f.attrs)) {
                Tri::True => return Some(main_fn(f)),
                Tri::Unknown if maybe.is_none() => *maybe = Some(main_fn(f)),
                _ => {}
            },
            Item::Macro(m) if is_cfg_if(&m.mac) => {
                for (cond, items) in cfg_if_branches(&m.mac).unwrap_or_default() {
                    if let Some(main) = find(&items, outer.and(cond), maybe) {
                        return Some(main);
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// The items as the build with the GPU features on sees them: each `cfg_if!` (in inline
/// modules too, nested ones included) replaced by the items of the branches whose condition
/// may hold (a surely false one left out). `None` when there is none to expand. The items keep
/// their spans: byte ranges are the file's.
pub fn expand_cfg_if(items: &[Item]) -> Option<Vec<Item>> {
    fn has(items: &[Item]) -> bool {
        items.iter().any(|item| match item {
            Item::Macro(m) => is_cfg_if(&m.mac),
            Item::Mod(m) => m.content.as_ref().is_some_and(|(_, items)| has(items)),
            _ => false,
        })
    }
    fn expand(items: &[Item], out: &mut Vec<Item>) {
        for item in items {
            match item {
                Item::Macro(m) if is_cfg_if(&m.mac) => match cfg_if_branches(&m.mac) {
                    Ok(branches) => {
                        for (cond, inner) in branches {
                            if cond != Tri::False {
                                expand(&inner, out);
                            }
                        }
                    }
                    Err(_) => out.push(item.clone()),
                },
                Item::Mod(m) if m.content.is_some() => {
                    let mut m = m.clone();
                    if let Some((_, inner)) = &mut m.content {
                        let mut expanded = Vec::new();
                        expand(inner, &mut expanded);
                        *inner = expanded;
                    }
                    out.push(Item::Mod(m));
                }
                _ => out.push(item.clone()),
            }
        }
    }
    if !has(items) {
        return None;
    }
    let mut out = Vec::new();
    expand(items, &mut out);
    Some(out)
}

pub fn is_cfg_if(mac: &syn::Macro) -> bool {
    mac.path
        .segments
        .last()
        .is_some_and(|s| s.ident == "cfg_if")
}

/// The branches of `cfg_if! { if #[cfg(a)] { .. } else if #[cfg(b)] { .. } else { .. } }`,
/// each with the condition under which it is compiled.
pub fn cfg_if_branches(mac: &syn::Macro) -> syn::Result<Vec<(Tri, Vec<Item>)>> {
    let parser = |input: ParseStream| {
        let mut branches = Vec::new();
        let mut earlier = Tri::True; // none of the earlier conditions held
        loop {
            input.parse::<Token![if]>()?;
            let attrs = input.call(Attribute::parse_outer)?;
            let cond = cfg_of(&attrs);
            let items = braced_items(input)?;
            branches.push((earlier.and(cond), items));
            earlier = earlier.and(cond.not());
            if input.is_empty() {
                break;
            }
            input.parse::<Token![else]>()?;
            if !input.peek(Token![if]) {
                branches.push((earlier, braced_items(input)?));
                break;
            }
        }
        Ok(branches)
    };
    parser.parse2(mac.tokens.clone())
}

fn braced_items(input: ParseStream) -> syn::Result<Vec<Item>> {
    let content;
    syn::braced!(content in input);
    let mut items = Vec::new();
    while !content.is_empty() {
        items.push(content.parse()?);
    }
    Ok(items)
}

/// The conjunction of an item's `#[cfg(..)]` attributes.
pub fn cfg_of(attrs: &[Attribute]) -> Tri {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .map(|a| a.parse_args::<Meta>().map_or(Tri::Unknown, |m| eval(&m)))
        .fold(Tri::True, Tri::and)
}

fn eval(meta: &Meta) -> Tri {
    match meta {
        Meta::Path(p) if p.is_ident("test") || p.is_ident("doc") || p.is_ident("miri") => {
            Tri::False
        }
        Meta::Path(p) if p.is_ident("cuda") => Tri::True,
        Meta::NameValue(nv) if nv.path.is_ident("feature") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => feature(&s.value()),
            _ => Tri::Unknown,
        },
        Meta::List(list) => {
            let args = list
                .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .map(|p| p.into_iter().map(|m| eval(&m)).collect::<Vec<_>>());
            let Ok(args) = args else { return Tri::Unknown };
            if list.path.is_ident("not") && args.len() == 1 {
                args[0].not()
            } else if list.path.is_ident("all") {
                args.into_iter().fold(Tri::True, Tri::and)
            } else if list.path.is_ident("any") {
                args.into_iter().fold(Tri::False, Tri::or)
            } else {
                Tri::Unknown
            }
        }
        _ => Tri::Unknown,
    }
}

/// A cargo feature with the GPU features on: CUDA ones are on, the other backends off.
fn feature(name: &str) -> Tri {
    let name = name.to_ascii_lowercase();
    let cuda = crate::knowledge::rust::CUDA_FEATURES;
    if cuda.iter().any(|w| name.contains(w)) || name == "gpu" {
        Tri::True
    } else if [
        "cpu",
        "metal",
        "mkl",
        "accelerate",
        "wgpu",
        "rocm",
        "vulkan",
        "ndarray",
    ]
    .contains(&name.as_str())
    {
        Tri::False
    } else {
        Tri::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen_line(src: &str) -> Option<usize> {
        let file = syn::parse_file(src).unwrap();
        let main = choose(&file.items)?;
        Some(src[..main.body_start].lines().count())
    }

    #[test]
    fn the_gpu_main_wins_over_cpu_stubs_and_test_modules() {
        let src = "#[cfg(not(feature = \"cuda\"))]\nfn main() {}\n#[cfg(feature = \"cuda\")]\nfn main() {}\n";
        assert_eq!(chosen_line(src), Some(4));
        let src = "mod tests {\n    fn main() {}\n}\n#[cfg(test)]\nfn main() {}\nfn main() {}\n";
        assert_eq!(chosen_line(src), Some(6));
        let src = "#[cfg(feature = \"cpu\")]\nfn main() {}\n";
        assert_eq!(chosen_line(src), None);
    }

    #[test]
    fn mains_under_features_the_tool_cannot_judge_are_each_an_alternative() {
        let lines = |src: &str| {
            let file = syn::parse_file(src).unwrap();
            alternatives(&file.items)
                .iter()
                .map(|m| src[..m.body_start].lines().count())
                .collect::<Vec<_>>()
        };
        let src = "#[cfg(not(feature = \"auto-download\"))]\nfn main() {}\n#[cfg(feature = \"auto-download\")]\nfn main() {}\n";
        assert_eq!(chosen_line(src), Some(2));
        assert_eq!(lines(src), vec![4]);
        // A main the GPU build surely compiles has no alternative.
        let src = "#[cfg(not(feature = \"cuda\"))]\nfn main() {}\n#[cfg(feature = \"cuda\")]\nfn main() {}\n";
        assert_eq!(lines(src), Vec::<usize>::new());
        let src = "fn main() {}\n";
        assert_eq!(lines(src), Vec::<usize>::new());
    }

    #[test]
    fn cfg_if_branches_are_followed() {
        let src = "cfg_if::cfg_if! {\n    if #[cfg(feature = \"metal\")] {\n        fn main() {}\n    } else if #[cfg(feature = \"cuda\")] {\n        fn main() {}\n    } else {\n        fn main() {}\n    }\n}\n";
        assert_eq!(chosen_line(src), Some(5));
    }

    #[test]
    fn only_inert_attributes_leave_main_on_the_first_thread() {
        let foreign = |src: &str| {
            let file = syn::parse_file(src).unwrap();
            choose(&file.items).unwrap().foreign.map(|(name, _)| name)
        };
        assert_eq!(
            foreign("#[show_image::main]\nfn main() {}\n").as_deref(),
            Some("show_image::main")
        );
        assert_eq!(
            foreign("#[allow(dead_code)]\n#[paw::main]\nfn main() {}\n").as_deref(),
            Some("paw::main")
        );
        assert_eq!(
            foreign("#[cfg_attr(unix, my::wrap)]\nfn main() {}\n").as_deref(),
            Some("cfg_attr")
        );
        assert_eq!(foreign("#[allow(clippy::all)]\n#[rustfmt::skip]\n#[cfg_attr(unix, allow(unused))]\n/// Docs.\nfn main() {}\n"), None);
        // An async main's attribute is its runtime's (GH504 handles it).
        assert_eq!(foreign("#[tokio::main]\nasync fn main() {}\n"), None);
    }

    #[test]
    fn cfg_if_is_expanded_to_the_branches_the_gpu_build_may_compile() {
        let src = "use a::X;\ncfg_if::cfg_if! {\n    if #[cfg(feature = \"cuda\")] {\n        use cudarc::driver::CudaContext;\n        mod gpu;\n    } else {\n        use cpu::Only;\n    }\n}\nmod inner {\n    cfg_if::cfg_if! {\n        if #[cfg(unix)] {\n            use candle_core::Device;\n        }\n    }\n}\n";
        let file = syn::parse_file(src).unwrap();
        let items = expand_cfg_if(&file.items).unwrap();
        // What each item is: a `use` by its path's first name, a `mod` by its name.
        fn shape(items: &[Item]) -> Vec<String> {
            items
                .iter()
                .map(|i| match i {
                    Item::Use(u) => match &u.tree {
                        syn::UseTree::Path(p) => format!("use {}", p.ident),
                        _ => "use ?".to_string(),
                    },
                    Item::Mod(m) => match &m.content {
                        Some((_, inner)) => format!("mod {} {:?}", m.ident, shape(inner)),
                        None => format!("mod {};", m.ident),
                    },
                    _ => "other".to_string(),
                })
                .collect()
        }
        assert_eq!(
            shape(&items),
            [
                "use a",
                "use cudarc",
                "mod gpu;",
                "mod inner [\"use candle_core\"]"
            ]
        );
        assert!(expand_cfg_if(&syn::parse_file("use a::X;\n").unwrap().items).is_none());
    }
}
