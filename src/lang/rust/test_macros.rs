//! The `#[test]` functions a GPU crate's macro writes (candle's `test_device!`), written out as
//! the macro writes them (`knowledge::rust::TEST_MACROS`), so that the crate graph judges each
//! test as it runs: the CUDA test `test_device!` writes is a GPU test beside a plain CPU one.
//! The written items carry spans of their own text: only readers that use no span see them.

use crate::knowledge::rust::{TestMacro, TEST_MACROS};

/// The items with each known test macro written out, in inline modules too; `None` when there
/// is none.
pub fn expand(items: &[syn::Item]) -> Option<Vec<syn::Item>> {
    // Built only from the first item that changes: most files have no test macro, and a copy
    // of every item of every file costs as much as a tenth of parsing it.
    let mut out: Option<Vec<syn::Item>> = None;
    for (k, item) in items.iter().enumerate() {
        let written = match item {
            syn::Item::Macro(m) if m.ident.is_none() => tests_of(&m.mac),
            syn::Item::Mod(m) => {
                m.content
                    .as_ref()
                    .and_then(|(_, inner)| expand(inner))
                    .map(|inner| {
                        let mut m = m.clone();
                        if let Some((_, content)) = &mut m.content {
                            *content = inner;
                        }
                        vec![syn::Item::Mod(m)]
                    })
            }
            _ => None,
        };
        match (written, &mut out) {
            (Some(written), None) => {
                let mut all = items[..k].to_vec();
                all.extend(written);
                out = Some(all);
            }
            (Some(written), Some(all)) => all.extend(written),
            (None, Some(all)) => all.push(item.clone()),
            (None, None) => {}
        }
    }
    out
}

/// The tests one invocation writes: `None` when it is no known test macro or its arguments
/// are not the names it takes.
fn tests_of(mac: &syn::Macro) -> Option<Vec<syn::Item>> {
    let name = mac.path.segments.last()?.ident.to_string();
    let known: &TestMacro = TEST_MACROS.iter().find(|t| t.name == name)?;
    let args = mac
        .parse_body_with(
            syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated,
        )
        .ok()?;
    let args: Vec<String> = args.iter().map(ToString::to_string).collect();
    let f = args.first()?;
    known
        .tests
        .iter()
        .map(|(at, code)| {
            let text = code.replace("$name", args.get(*at)?).replace("$f", f);
            syn::parse_str::<syn::Item>(&text).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_device_writes_a_test_per_device_in_inline_modules_too() {
        let file: syn::File = syn::parse_str(
            "test_device!(zeros, zeros_cpu, zeros_gpu, zeros_metal);\nmod m { candle::test_device!(a, b, c, d); }\nfn other() {}\n",
        )
        .unwrap();
        let items = expand(&file.items).unwrap();
        let names: Vec<String> = items
            .iter()
            .flat_map(|i| match i {
                syn::Item::Fn(f) => vec![f.sig.ident.to_string()],
                syn::Item::Mod(m) => m
                    .content
                    .as_ref()
                    .unwrap()
                    .1
                    .iter()
                    .filter_map(|i| match i {
                        syn::Item::Fn(f) => Some(format!("m::{}", f.sig.ident)),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        assert_eq!(
            names,
            [
                "zeros_cpu",
                "zeros_gpu",
                "zeros_metal",
                "m::b",
                "m::c",
                "m::d",
                "other"
            ]
        );
        // Another macro, or one with arguments that are not names: left as it is.
        let file: syn::File = syn::parse_str("vec_of!(a, b);\ntest_device!(1 + 2);\n").unwrap();
        assert!(expand(&file.items).is_none());
    }
}
