//! Macro bodies: `cfg_if!` branches are items, well-known macros (`vec!`, `assert!`,
//! `println!`, `matches!` …) are parsed as expressions and visited like code; any other body
//! (`lazy_static!`, a crate's own macro) is scanned token by token for the constructors, env
//! calls and NVML indices, which are then reported without a removable statement.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::visit::Visit;
use syn::{Expr, Token};

use super::{mains, Arg, DeviceSink, EnvEffect, EnvOp, FactVisitor, Place};
use crate::model::policy::EnvVar;

/// Macros whose arguments are comma-separated expressions.
const EXPR_MACROS: &[&str] = &[
    "vec",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "dbg",
    "Some",
    "Box",
];

/// Format macros: their arguments are expressions, and only shown.
const FORMAT_MACROS: &[&str] = &[
    "println",
    "print",
    "eprintln",
    "eprint",
    "format",
    "format_args",
    "write",
    "writeln",
    "panic",
    "todo",
    "unreachable",
    "unimplemented",
    "info",
    "warn",
    "error",
    "debug",
    "trace",
    "bail",
    "anyhow",
    "ensure",
];

pub(super) fn visit_body(v: &mut FactVisitor, mac: &syn::Macro) {
    let name = mac
        .path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    if mains::is_cfg_if(mac) {
        if let Ok(branches) = mains::cfg_if_branches(mac) {
            for item in branches.iter().flat_map(|(_, items)| items) {
                v.visit_item(item);
            }
            return;
        }
    }
    if name == "matches" && parse_matches(v, mac) {
        return;
    }
    let format = FORMAT_MACROS.contains(&name.as_str());
    if format || EXPR_MACROS.contains(&name.as_str()) {
        if let Some(exprs) = parse_exprs(mac.tokens.clone()) {
            if name == "assert" || name == "debug_assert" {
                v.facts.probes.extend(exprs.first().and_then(probe));
            }
            v.display += usize::from(format);
            for e in &exprs {
                v.visit_expr(e);
            }
            v.display -= usize::from(format);
            return;
        }
    }
    scan(v, mac.tokens.clone());
}

/// `Device::nth(129).is_err()`: the call a test expects to fail.
fn probe(expr: &Expr) -> Option<std::ops::Range<usize>> {
    match expr {
        Expr::MethodCall(m) if m.method == "is_err" => match m.receiver.as_ref() {
            Expr::Call(c) => Some(super::range(c)),
            _ => None,
        },
        Expr::Paren(p) => probe(&p.expr),
        _ => None,
    }
}

fn parse_exprs(tokens: TokenStream) -> Option<Vec<Expr>> {
    let list = Punctuated::<Expr, Token![,]>::parse_terminated.parse2(tokens.clone());
    if let Ok(list) = list {
        return Some(list.into_iter().collect());
    }
    // `vec![elem; n]`
    let repeat = |input: ParseStream| {
        let elem: Expr = input.parse()?;
        input.parse::<Token![;]>()?;
        let n: Expr = input.parse()?;
        Ok(vec![elem, n])
    };
    repeat.parse2(tokens).ok()
}

/// `matches!(expr, pattern)`: the pattern is a pattern (never a constructor to rewrite).
fn parse_matches(v: &mut FactVisitor, mac: &syn::Macro) -> bool {
    let parser = |input: ParseStream| {
        let e: Expr = input.parse()?;
        input.parse::<Token![,]>()?;
        let pat = syn::Pat::parse_multi_with_leading_vert(input)?;
        let guard = if input.parse::<Option<Token![if]>>()?.is_some() {
            Some(input.parse::<Expr>()?)
        } else {
            None
        };
        input.parse::<Option<Token![,]>>()?;
        Ok((e, pat, guard))
    };
    let Ok((e, pat, guard)) = parser.parse2(mac.tokens.clone()) else {
        return false;
    };
    v.visit_expr(&e);
    v.visit_pat(&pat);
    if let Some(g) = &guard {
        v.visit_expr(g);
    }
    true
}

/// Token-level reading of a body that is not Rust syntax on its own.
fn scan(v: &mut FactVisitor, tokens: TokenStream) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in tokens.iter().enumerate() {
        match tree {
            TokenTree::Ident(id) => {
                v.facts
                    .uses
                    .push((id.to_string(), id.span().byte_range(), false));
            }
            TokenTree::Group(g) => {
                if g.delimiter() == Delimiter::Parenthesis {
                    call(v, &tokens[..i], g);
                }
                scan(v, g.stream());
            }
            _ => {}
        }
    }
}

/// `… name(args)` where the tokens before the group end with `name` (and maybe `Type ::`).
fn call(v: &mut FactVisitor, before: &[TokenTree], group: &proc_macro2::Group) {
    let ident = |t: Option<&TokenTree>| match t {
        Some(TokenTree::Ident(id)) => Some(id.to_string()),
        _ => None,
    };
    let Some(name) = ident(before.last()) else {
        return;
    };
    let n = before.len();
    let owner = (n >= 4 && is_path_sep(&before[n - 3..n - 1]))
        .then(|| ident(before.get(n - 4)))
        .flatten();
    let method = n >= 2 && matches!(&before[n - 2], TokenTree::Punct(p) if p.as_char() == '.');
    let args: Vec<TokenTree> = group.stream().into_iter().collect();
    let start = before[n - 1].span().byte_range().start;
    let at = start..group.span().byte_range().end;
    match name.as_str() {
        "set_var" | "remove_var" => env_call(v, &name, &args, at),
        "device_by_index" if method => {
            if let [TokenTree::Literal(l)] = args.as_slice() {
                if let syn::Lit::Int(i) = syn::Lit::new(l.clone()) {
                    if let Ok(n) = i.base10_parse() {
                        v.facts.nvml_indices.push((at, n));
                    }
                }
            }
        }
        _ => {
            let qualified = owner
                .map(|o| format!("{o}::{name}"))
                .unwrap_or(name.clone());
            let known = super::INDEX_CALLS.iter().find(|c| {
                qualified.ends_with(*c)
                    || (c.ends_with(&format!("::{name}"))
                        && matches!(name.as_str(), "new_cuda" | "cuda_if_available"))
            });
            let what = match known {
                Some(c) => format!("{c}(…)"),
                None if name == "with_device_id" && method => ".with_device_id(…)".into(),
                None => return,
            };
            let arg = match args.as_slice() {
                [TokenTree::Literal(l)] => match syn::Lit::new(l.clone()) {
                    syn::Lit::Int(i) => match super::int_token(&i) {
                        Some((digits, value)) => Arg::Lit { digits, value },
                        None => return,
                    },
                    _ => return,
                },
                [TokenTree::Ident(id)] => Arg::Name {
                    name: id.to_string(),
                    at: id.span().byte_range(),
                },
                _ => return,
            };
            let expr = match &arg {
                Arg::Lit { digits: at, .. }
                | Arg::Name { at, .. }
                | Arg::Field { at, .. }
                | Arg::Opaque { at, .. } => at.start,
            };
            v.facts.sinks.push(DeviceSink {
                what,
                arg,
                scope: v.scope.clone(),
                expr,
            });
        }
    }
}

fn is_path_sep(t: &[TokenTree]) -> bool {
    matches!(t, [TokenTree::Punct(a), TokenTree::Punct(b)] if a.as_char() == ':' && b.as_char() == ':')
}

fn env_call(v: &mut FactVisitor, name: &str, args: &[TokenTree], at: std::ops::Range<usize>) {
    let string = |t: Option<&TokenTree>| match t {
        Some(TokenTree::Literal(l)) => match syn::Lit::new(l.clone()) {
            syn::Lit::Str(s) => Some(s.value()),
            _ => None,
        },
        Some(TokenTree::Ident(id)) => v.str_consts.get(&id.to_string()).cloned(),
        _ => None,
    };
    let Some(var) = string(args.first()).and_then(|k| EnvVar::from_name(&k)) else {
        return;
    };
    let op = if name == "set_var" {
        let comma = args
            .iter()
            .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','));
        let value = comma.and_then(|c| match &args[c + 1..] {
            [one] | [one, TokenTree::Punct(_)] => string(Some(one)),
            _ => None,
        });
        EnvOp::Set(value)
    } else {
        EnvOp::Remove
    };
    if v.handled_calls.contains(&at.start) {
        return;
    }
    v.handled_calls.push(at.start);
    v.facts.env.push(EnvEffect {
        var,
        op,
        at,
        stmt: None,
        place: Place::Elsewhere,
    });
}
