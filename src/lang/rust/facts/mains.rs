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
    /// The runtime attribute of an async main (`#[tokio::main(flavor = "current_thread")]`):
    /// its range, its path, and its `name = value` arguments (`None` when they are not all of
    /// that form).
    pub runtime: Option<RuntimeAttr>,
}

#[derive(Debug, Clone)]
pub struct RuntimeAttr {
    pub range: Range<usize>,
    pub path: String,
    pub args: Option<Vec<(String, String)>>,
}

fn runtime_attr(attrs: &[Attribute]) -> Option<RuntimeAttr> {
    attrs.iter().find_map(|a| {
        let path = a
            .path()
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect::<Vec<_>>()
            .join("::");
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
    find(items, Tri::True, &mut maybe).or(maybe)
}

fn main_fn(f: &ItemFn) -> MainFn {
    let body = f.block.brace_token.span.join().byte_range();
    MainFn {
        is_async: f.sig.asyncness.is_some(),
        body_start: f.block.brace_token.span.open().byte_range().end,
        body,
        sig: range(&f.sig),
        stmts: f.block.stmts.iter().map(range).collect(),
        body_close: f.block.brace_token.span.close().byte_range().start,
        async_token: f.sig.asyncness.map(|t| t.span.byte_range()),
        runtime: f
            .sig
            .asyncness
            .is_some()
            .then(|| runtime_attr(&f.attrs))
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
    fn cfg_if_branches_are_followed() {
        let src = "cfg_if::cfg_if! {\n    if #[cfg(feature = \"metal\")] {\n        fn main() {}\n    } else if #[cfg(feature = \"cuda\")] {\n        fn main() {}\n    } else {\n        fn main() {}\n    }\n}\n";
        assert_eq!(chosen_line(src), Some(5));
    }
}
