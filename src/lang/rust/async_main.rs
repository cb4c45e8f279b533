//! `#[tokio::main] async fn main() { BODY }` made a sync `main` that sets the env first and then
//! builds the runtime the attribute built, with its flavor and worker count, to run the async
//! function unchanged: the attribute goes, `main` is renamed (`async fn async_main() { BODY }`,
//! not one byte of its body moved or re-indented), and after it comes
//! `fn main() { ENV Builder::new_multi_thread().enable_all().build()….block_on(async_main()) }`
//! with the same return type and `#[cfg]`, laid out as rustfmt lays it out: a file rustfmt
//! accepted before, it accepts after (no line of the body gets longer).
//! An attribute with options this does not know is left alone (the finding stays, for review).

use std::ops::Range;

use super::detect::Context;
use super::facts::mains::{MainFn, RuntimeAttr};
use super::facts::{EnvEffect, Place};
use crate::base::edit::Edit;

/// The edits, given the env block (`env`, as it opens a sync main's body), the indentation of
/// `main`'s own line (`base`) and the file's indentation step; `None` when the runtime or its
/// options are unknown.
pub fn sync_main_edits(
    source: &str,
    main: &MainFn,
    env: &str,
    base: &str,
    unit: &str,
    nl: &str,
) -> Option<Vec<Edit>> {
    let attr = main.runtime.as_ref()?;
    let body_indent = format!("{base}{unit}");
    let runtime = runtime_expr(attr, &body_indent, unit, nl)?;
    main.async_token.as_ref()?;
    let name = async_name(source);
    let output = main
        .output
        .as_ref()
        .map_or(String::new(), |r| format!(" {}", &source[r.clone()]));
    let cfgs: String = main
        .cfgs
        .iter()
        .map(|r| format!("{base}{}{nl}", &source[r.clone()]))
        .collect();
    let sync_main = format!(
        "{nl}{nl}{cfgs}{base}fn main(){output} {{{env}{nl}{body_indent}{runtime}({name}()){nl}{base}}}"
    );
    Some(vec![
        Edit::delete(whole_lines(source, attr.range.clone())),
        Edit::replace(main.ident.clone(), name),
        // After the async function's closing brace.
        Edit::insert(main.body_close + 1, sync_main),
    ])
}

/// The async function's new name: `async_main`, or another the file does not use.
fn async_name(source: &str) -> String {
    let used = |name: &str| {
        source.match_indices(name).any(|(at, _)| {
            let before = source[..at].chars().next_back();
            let after = source[at + name.len()..].chars().next();
            let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !ident(before) && !ident(after)
        })
    };
    ["async_main", "main_async", "run_async_main"]
        .into_iter()
        .map(str::to_string)
        .chain((2..).map(|n| format!("async_main{n}")))
        .find(|n| !used(n))
        .unwrap_or_else(|| "async_main".to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: &str = "\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");";

    /// The file as the fix leaves it; `None` when the fix is not offered.
    fn fixed(source: &str) -> Option<String> {
        let file = super::super::parse(source).unwrap();
        let main = super::super::facts::mains::choose(&file.items).unwrap();
        let edits = sync_main_edits(source, &main, ENV, "", "    ", "\n")?;
        Some(crate::base::edit::apply(source, &edits).unwrap())
    }

    #[test]
    fn a_plain_tokio_main_gets_the_default_multi_thread_runtime() {
        let source = "#[tokio::main]\nasync fn main() {\n    serve().await;\n}\n";
        assert_eq!(
            fixed(source).unwrap(),
            "async fn async_main() {\n    serve().await;\n}\n\nfn main() {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n    tokio::runtime::Builder::new_multi_thread()\n        .enable_all()\n        .build()\n        .expect(\"failed to build the tokio runtime\")\n        .block_on(async_main())\n}\n"
        );
    }

    #[test]
    fn a_current_thread_flavor_keeps_its_runtime_and_a_one_line_body_its_line() {
        let source =
            "#[tokio::main(flavor = \"current_thread\")]\nasync fn main() { serve().await }\n";
        assert_eq!(
            fixed(source).unwrap(),
            "async fn async_main() { serve().await }\n\nfn main() {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n    tokio::runtime::Builder::new_current_thread()\n        .enable_all()\n        .build()\n        .expect(\"failed to build the tokio runtime\")\n        .block_on(async_main())\n}\n"
        );
    }

    #[test]
    fn worker_threads_the_return_type_cfg_docs_and_other_attributes_survive() {
        let source = "/// Serves.\n#[cfg(feature = \"cuda\")]\n#[tokio::main(flavor = \"multi_thread\", worker_threads = 4)]\n#[allow(unused)]\nasync fn main() -> anyhow::Result<()> {\n    let x = run().await?; // the server\n    Ok(())\n}\n";
        assert_eq!(
            fixed(source).unwrap(),
            "/// Serves.\n#[cfg(feature = \"cuda\")]\n#[allow(unused)]\nasync fn async_main() -> anyhow::Result<()> {\n    let x = run().await?; // the server\n    Ok(())\n}\n\n#[cfg(feature = \"cuda\")]\nfn main() -> anyhow::Result<()> {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n    tokio::runtime::Builder::new_multi_thread()\n        .worker_threads(4)\n        .enable_all()\n        .build()\n        .expect(\"failed to build the tokio runtime\")\n        .block_on(async_main())\n}\n"
        );
    }

    #[test]
    fn a_name_the_file_uses_is_not_taken() {
        let source =
            "fn async_main() {}\n#[async_std::main]\nasync fn main() {\n    go().await;\n}\n";
        let out = fixed(source).unwrap();
        assert!(
            out.contains("async fn main_async() {\n    go().await;\n}\n\nfn main() {"),
            "{out}"
        );
        assert!(
            out.contains("    async_std::task::block_on(main_async())\n}"),
            "{out}"
        );
    }

    #[test]
    fn other_runtimes_are_rebuilt_and_unknown_options_are_not_guessed() {
        let std_main =
            fixed("#[async_std::main]\nasync fn main() {\n    go().await;\n}\n").unwrap();
        assert!(
            std_main.ends_with("    async_std::task::block_on(async_main())\n}\n"),
            "{std_main}"
        );
        let actix = fixed("#[actix_web::main]\nasync fn main() {\n    go().await;\n}\n").unwrap();
        assert!(
            actix.ends_with("    actix_web::rt::System::new().block_on(async_main())\n}\n"),
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
