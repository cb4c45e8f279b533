//! `#[tokio::main] async fn main() { BODY }` made a sync `main` that sets the env first and then
//! builds the runtime the attribute built, with its flavor and worker count, to run the body
//! unchanged: `Builder::new_multi_thread().enable_all().build()….block_on(async { BODY })`.
//! Byte edits only: the attribute and the `async` keyword go, the body's braces are wrapped.
//! An attribute with options this does not know is left alone (the finding stays, for review).

use std::ops::Range;

use super::detect::Context;
use super::facts::mains::{MainFn, RuntimeAttr};
use super::facts::{EnvEffect, Place};
use crate::base::edit::Edit;

/// The edits, given the env block (`env`, as it opens a sync main's body) and the indentation
/// of the body's statements; `None` when the runtime or its options are unknown.
pub fn sync_main_edits(
    source: &str,
    main: &MainFn,
    env: &str,
    body_indent: &str,
    unit: &str,
    nl: &str,
) -> Option<Vec<Edit>> {
    let attr = main.runtime.as_ref()?;
    let runtime = runtime_expr(attr, body_indent, unit, nl)?;
    let async_token = main.async_token.clone()?;
    let mut edits = vec![
        Edit::delete(whole_lines(source, attr.range.clone())),
        // `async fn` → `fn`: the keyword and the space after it.
        Edit::delete(async_token.start..skip_spaces(source, async_token.end)),
        Edit::insert(
            main.body_start,
            format!("{env}{nl}{body_indent}{runtime}(async {{"),
        ),
    ];
    // The body's closing brace on a line of its own: `})` on the line before it, and the
    // body one block deeper, as rustfmt lays out `.block_on(async {` (`unit`: the file's own
    // indentation step).
    let close_line = crate::base::lines::line_start(source, main.body_close);
    if source[close_line..main.body_close].trim().is_empty() {
        // A chain on several lines puts `.block_on(` one step in; a call on one line does not.
        let chained = runtime.contains('\n');
        let (deeper, close) = if chained {
            (format!("{unit}{unit}"), format!("{body_indent}{unit}"))
        } else {
            (unit.to_string(), body_indent.to_string())
        };
        edits.extend(reindent(source, main.body_start..main.body_close, &deeper));
        edits.push(Edit::insert(close_line, format!("{close}}}){nl}")));
    } else {
        let space = if source[..main.body_close].ends_with([' ', '\t']) {
            ""
        } else {
            " "
        };
        edits.push(Edit::insert(main.body_close, format!("{space}}}) ")));
    }
    Some(edits)
}

/// The body's own writes of the variables the program reads go, as a sync main's do: once the
/// new `main` sets the env first, a write left inside the runtime would race its threads.
/// A write that is not a statement of its own stays (the rewrite is then not offered).
pub fn body_env_removals(ctx: &Context, env: &[EnvEffect]) -> Vec<Edit> {
    env.iter()
        .filter(|w| w.place != Place::Elsewhere && ctx.reads(w.var))
        .filter_map(|w| w.stmt.clone())
        .filter_map(|stmt| crate::lang::removal::remove_line(ctx.source, stmt, None, "//"))
        .collect()
}

/// The attribute's runtime can be rebuilt by hand (`sync_main_edits` makes the main sync).
pub fn convertible(attr: &RuntimeAttr) -> bool {
    runtime_expr(attr, "", "    ", "\n").is_some()
}

/// The runtime the attribute builds, as the call that runs a future on it (`….block_on`),
/// laid out as rustfmt lays it out (tokio's builder chain on several lines).
fn runtime_expr(attr: &RuntimeAttr, indent: &str, unit: &str, nl: &str) -> Option<String> {
    let args = attr.args.as_ref()?;
    let step = format!("{nl}{indent}{unit}");
    match attr.path.as_str() {
        "tokio::main" => {
            let mut flavor = "multi_thread";
            let mut workers = None;
            for (name, value) in args {
                match name.as_str() {
                    "flavor" if value == "multi_thread" || value == "current_thread" => {
                        flavor = if value == "multi_thread" {
                            "multi_thread"
                        } else {
                            "current_thread"
                        };
                    }
                    "worker_threads" if value.parse::<usize>().is_ok() => {
                        workers = Some(value.clone())
                    }
                    _ => return None,
                }
            }
            let mut chain = format!("tokio::runtime::Builder::new_{flavor}()");
            if let Some(n) = workers {
                chain.push_str(&format!("{step}.worker_threads({n})"));
            }
            chain.push_str(&format!(
                "{step}.enable_all(){step}.build(){step}.expect(\"failed to build the tokio runtime\"){step}.block_on"
            ));
            Some(chain)
        }
        "async_std::main" if args.is_empty() => Some("async_std::task::block_on".to_string()),
        "actix_web::main" | "actix_rt::main" if args.is_empty() => {
            let krate = attr.path.trim_end_matches("::main");
            let rt = if krate == "actix_web" {
                "actix_web::rt"
            } else {
                "actix_rt"
            };
            Some(format!("{rt}::System::new().block_on"))
        }
        _ => None,
    }
}

/// Insert `by` at the start of every line of the body that holds code, except the lines
/// that begin inside a string literal spanning lines (their bytes are the program's data).
/// A line another edit deletes gets nothing (see `fix::plan`).
fn reindent(source: &str, body: Range<usize>, by: &str) -> Vec<Edit> {
    let text = &source[body.clone()];
    let mut literals = Vec::new();
    if let Ok(tokens) = text.parse::<proc_macro2::TokenStream>() {
        multiline_literals(tokens, &mut literals);
    }
    let mut out = Vec::new();
    for (at, end) in crate::base::lines::line_ranges(text).skip(1) {
        let line = &text[at..end];
        if line.trim().is_empty()
            || literals
                .iter()
                .any(|r: &Range<usize>| r.start < at && at < r.end)
        {
            continue;
        }
        out.push(Edit::insert(body.start + at, by));
    }
    out
}

fn multiline_literals(tokens: proc_macro2::TokenStream, out: &mut Vec<Range<usize>>) {
    for t in tokens {
        match t {
            proc_macro2::TokenTree::Literal(l) => {
                let r = l.span().byte_range();
                out.push(r);
            }
            proc_macro2::TokenTree::Group(g) => multiline_literals(g.stream(), out),
            _ => {}
        }
    }
}

/// The attribute's lines when it is alone on them (with their line ending), else its bytes.
fn whole_lines(source: &str, r: Range<usize>) -> Range<usize> {
    let start = crate::base::lines::line_start(source, r.start);
    let end = crate::base::lines::next_line_start(source, r.end);
    let alone = source[start..r.start].trim().is_empty() && source[r.end..end].trim().is_empty();
    if alone {
        start..end
    } else {
        r
    }
}

fn skip_spaces(source: &str, at: usize) -> usize {
    at + source[at..].len() - source[at..].trim_start_matches([' ', '\t']).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: &str = "\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");";

    /// The file as the fix leaves it; `None` when the fix is not offered.
    fn fixed(source: &str) -> Option<String> {
        let file = super::super::parse(source).unwrap();
        let main = super::super::facts::mains::choose(&file.items).unwrap();
        let edits = sync_main_edits(source, &main, ENV, "    ", "    ", "\n")?;
        Some(crate::base::edit::apply(source, &edits).unwrap())
    }

    #[test]
    fn a_plain_tokio_main_gets_the_default_multi_thread_runtime() {
        let source = "#[tokio::main]\nasync fn main() {\n    serve().await;\n}\n";
        assert_eq!(
            fixed(source).unwrap(),
            "fn main() {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n    tokio::runtime::Builder::new_multi_thread()\n        .enable_all()\n        .build()\n        .expect(\"failed to build the tokio runtime\")\n        .block_on(async {\n            serve().await;\n        })\n}\n"
        );
    }

    #[test]
    fn a_current_thread_flavor_keeps_its_runtime_and_a_one_line_body_its_line() {
        let source =
            "#[tokio::main(flavor = \"current_thread\")]\nasync fn main() { serve().await }\n";
        assert_eq!(
            fixed(source).unwrap(),
            "fn main() {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n    tokio::runtime::Builder::new_current_thread()\n        .enable_all()\n        .build()\n        .expect(\"failed to build the tokio runtime\")\n        .block_on(async { serve().await }) }\n"
        );
    }

    #[test]
    fn worker_threads_and_the_return_type_docs_and_other_attributes_survive() {
        let source = "/// Serves.\n#[tokio::main(flavor = \"multi_thread\", worker_threads = 4)]\n#[allow(unused)]\nasync fn main() -> anyhow::Result<()> {\n    let x = run().await?; // the server\n    Ok(())\n}\n";
        assert_eq!(
            fixed(source).unwrap(),
            "/// Serves.\n#[allow(unused)]\nfn main() -> anyhow::Result<()> {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n    tokio::runtime::Builder::new_multi_thread()\n        .worker_threads(4)\n        .enable_all()\n        .build()\n        .expect(\"failed to build the tokio runtime\")\n        .block_on(async {\n            let x = run().await?; // the server\n            Ok(())\n        })\n}\n"
        );
    }

    #[test]
    fn other_runtimes_are_rebuilt_and_unknown_options_are_not_guessed() {
        let std_main =
            fixed("#[async_std::main]\nasync fn main() {\n    go().await;\n}\n").unwrap();
        assert!(
            std_main
                .contains("    async_std::task::block_on(async {\n        go().await;\n    })\n}"),
            "{std_main}"
        );
        let actix = fixed("#[actix_web::main]\nasync fn main() {\n    go().await;\n}\n").unwrap();
        assert!(
            actix.contains(
                "    actix_web::rt::System::new().block_on(async {\n        go().await;\n    })\n}"
            ),
            "{actix}"
        );
        for unknown in [
            "#[tokio::main(start_paused = true)]",
            "#[tokio::main(flavor = \"local\")]",
            "#[tokio::main(worker_threads = N)]",
            "#[async_std::main(threads = 2)]",
            "#[my_rt::main]",
        ] {
            let source = format!("{unknown}\nasync fn main() {{\n    go().await;\n}}\n");
            assert_eq!(fixed(&source), None, "{unknown}");
        }
    }
}
