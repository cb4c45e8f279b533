//! `use` items a fix leaves unused: `use std::env;` above the only `env::set_var` the fix takes
//! out would be an `unused_imports` warning (an error under `#![deny(warnings)]`), so the fix
//! takes the import out too — only when every other mention of the name is gone with it.

use std::ops::Range;

use proc_macro2::{TokenStream, TokenTree};

use super::facts::range;
use crate::base::edit::Edit;

/// One name a `use` item binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UseLeaf {
    /// The name code uses (`env`, or the alias of `as`).
    pub name: String,
    /// The whole `use …;` item.
    pub item: Range<usize>,
    /// What to delete to drop this name alone: `None` when it is the item's only name (the
    /// item goes), else the name with its comma.
    pub in_group: Option<Range<usize>>,
}

/// The names bound by private, attribute-free `use` items anywhere in the file (modules and
/// function bodies included). Globs and `pub use` re-exports are never candidates.
pub fn leaves(file: &syn::File) -> Vec<UseLeaf> {
    struct V(Vec<UseLeaf>);
    impl<'a> syn::visit::Visit<'a> for V {
        fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
            if !u.attrs.is_empty() || !matches!(u.vis, syn::Visibility::Inherited) {
                return;
            }
            let mut names = Vec::new();
            tree_leaves(&u.tree, None, &mut names);
            if names.iter().any(|(n, _)| n.is_none()) {
                return; // a glob: which names it brings is not known here
            }
            let sole = names.len() == 1;
            let item = range(u);
            for (name, cut) in names {
                let Some(name) = name else { continue };
                self.0.push(UseLeaf {
                    name,
                    item: item.clone(),
                    in_group: (!sole).then_some(cut).flatten(),
                });
            }
        }
    }
    let mut v = V(Vec::new());
    syn::visit::Visit::visit_file(&mut v, file);
    v.0
}

/// (bound name, what to cut to drop it from its group) for each leaf; `None` name: a glob.
fn tree_leaves(
    tree: &syn::UseTree,
    parent: Option<&syn::Ident>,
    out: &mut Vec<(Option<String>, Option<Range<usize>>)>,
) {
    match tree {
        syn::UseTree::Path(p) => tree_leaves(&p.tree, Some(&p.ident), out),
        syn::UseTree::Name(n) if n.ident == "self" => {
            out.push((parent.map(|p| p.to_string()), None));
        }
        syn::UseTree::Name(n) => out.push((Some(n.ident.to_string()), None)),
        syn::UseTree::Rename(r) => out.push((Some(r.rename.to_string()), None)),
        syn::UseTree::Glob(_) => out.push((None, None)),
        syn::UseTree::Group(g) => {
            let n = g.items.len();
            for (i, pair) in g.items.pairs().enumerate() {
                let mut inner = Vec::new();
                tree_leaves(pair.value(), parent, &mut inner);
                // Only a plain leaf of the group can be cut alone: `a, ` (or `, a` when last).
                let cut = (inner.len() == 1 && n > 1).then(|| {
                    let own = range(*pair.value());
                    match pair.punct() {
                        Some(comma) => own.start..comma.span.byte_range().end,
                        None => {
                            let prev = g.items.pairs().nth(i - 1).and_then(|p| p.punct().copied());
                            prev.map_or(own.clone(), |c| c.span.byte_range().start..own.end)
                        }
                    }
                });
                for (name, _) in inner {
                    out.push((name, cut.clone()));
                }
            }
        }
    }
}

/// The edits that take out the imports `edits` leave unused: a name mentioned in the file
/// before and only inside deleted bytes after (its own `use` aside).
pub fn made_unused(source: &str, leaves: &[UseLeaf], edits: &[Edit]) -> Vec<Edit> {
    let deleted: Vec<&Range<usize>> = edits
        .iter()
        .filter(|e| e.replacement.trim().is_empty() && !e.range.is_empty())
        .map(|e| &e.range)
        .collect();
    if deleted.is_empty() || leaves.is_empty() {
        return Vec::new();
    }
    let Ok(tokens) = source.parse::<TokenStream>() else {
        return Vec::new();
    };
    let mut idents = Vec::new();
    mentions(tokens, &mut idents);
    let inside = |r: &Range<usize>, at: usize| r.start <= at && at < r.end;
    let mut out: Vec<Edit> = Vec::new();
    let mut whole: Vec<Range<usize>> = Vec::new();
    for leaf in leaves {
        let (mut gone, mut kept) = (0, 0);
        for (name, at) in &idents {
            if *name != leaf.name || inside(&leaf.item, *at) {
                continue;
            }
            if deleted.iter().any(|d| inside(d, *at)) {
                gone += 1;
            } else {
                kept += 1;
            }
        }
        if gone == 0 || kept > 0 {
            continue;
        }
        match &leaf.in_group {
            None => whole.push(leaf.item.clone()),
            Some(cut) => {
                // `env, fs` → `fs`: the spaces after the comma go too.
                let mut end = cut.end;
                if source[cut.clone()].ends_with(',') {
                    end += source[end..].len() - source[end..].trim_start_matches(' ').len();
                }
                out.push(Edit::delete(cut.start..end));
            }
        }
    }
    // A group all of whose names go loses the whole item instead.
    for leaf in leaves.iter().filter(|l| l.in_group.is_some()) {
        let all = leaves.iter().filter(|o| o.item == leaf.item).all(|o| {
            o.in_group
                .as_ref()
                .is_some_and(|c| out.iter().any(|e| e.range.start == c.start))
        });
        if all && !whole.contains(&leaf.item) {
            whole.push(leaf.item.clone());
        }
    }
    out.retain(|e| {
        !whole
            .iter()
            .any(|w| w.start <= e.range.start && e.range.end <= w.end)
    });
    for item in whole {
        if let Some(e) = crate::lang::removal::remove_line(source, item, None, "//") {
            out.push(e);
        }
    }
    out.retain(|e| !edits.iter().any(|o| overlaps(&o.range, &e.range)));
    out
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

/// Every identifier of the file with its offset, macro bodies included; a macro's own name
/// (`env!`) is not a mention of a module.
fn mentions(tokens: TokenStream, out: &mut Vec<(String, usize)>) {
    let mut iter = tokens.into_iter().peekable();
    while let Some(t) = iter.next() {
        match t {
            TokenTree::Ident(id) => {
                let bang = matches!(iter.peek(), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                if !bang {
                    out.push((id.to_string(), id.span().byte_range().start));
                }
            }
            TokenTree::Group(g) => mentions(g.stream(), out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix(source: &str, delete: &str) -> String {
        let file = syn::parse_file(source).unwrap();
        let start = source.find(delete).unwrap();
        let edits = vec![Edit::delete(start..start + delete.len())];
        let mut all = made_unused(source, &leaves(&file), &edits);
        all.extend(edits);
        crate::base::edit::apply(source, &all).unwrap()
    }

    #[test]
    fn an_import_used_only_by_the_removed_write_goes_with_it() {
        let src = "use std::env;\nuse std::fs;\n\nfn main() {\n    env::set_var(\"A\", \"1\");\n    fs::read(\"x\").ok();\n}\n";
        assert_eq!(
            fix(src, "    env::set_var(\"A\", \"1\");\n"),
            "use std::fs;\n\nfn main() {\n    fs::read(\"x\").ok();\n}\n"
        );
    }

    #[test]
    fn an_import_still_used_elsewhere_stays() {
        let src = "use std::env;\nfn main() {\n    env::set_var(\"A\", \"1\");\n    let _ = env::args();\n}\n";
        assert_eq!(
            fix(src, "    env::set_var(\"A\", \"1\");\n"),
            "use std::env;\nfn main() {\n    let _ = env::args();\n}\n"
        );
    }

    #[test]
    fn a_name_in_a_group_goes_alone_and_a_mention_in_a_macro_counts() {
        let src = "use std::{env, fs};\nfn main() {\n    env::set_var(\"A\", \"1\");\n    println!(\"{:?}\", fs::metadata(\"x\").is_ok());\n}\n";
        assert_eq!(
            fix(src, "    env::set_var(\"A\", \"1\");\n"),
            "use std::{fs};\nfn main() {\n    println!(\"{:?}\", fs::metadata(\"x\").is_ok());\n}\n"
        );
        let src = "use std::env::{set_var, var};\nfn main() {\n    set_var(\"A\", \"1\");\n    println!(\"{:?}\", var(\"B\"));\n}\n";
        assert_eq!(
            fix(src, "    set_var(\"A\", \"1\");\n"),
            "use std::env::{var};\nfn main() {\n    println!(\"{:?}\", var(\"B\"));\n}\n"
        );
    }

    #[test]
    fn re_exports_globs_and_unused_before_are_left() {
        for src in [
            "pub use std::env;\nfn main() {\n    env::set_var(\"A\", \"1\");\n}\n",
            "use std::env::*;\nfn main() {\n    set_var(\"A\", \"1\");\n}\n",
            "use std::fs;\nfn main() {\n    std::env::set_var(\"A\", \"1\");\n}\n",
        ] {
            let line = src.lines().nth(2).unwrap();
            let line = format!("{line}\n");
            let out = fix(src, &line);
            assert_eq!(out.lines().next(), src.lines().next(), "{src}");
        }
    }
}
