//! `#[tokio::main] async fn main() { BODY }` made a sync `main` that sets the env first and then
//! builds the runtime the attribute built, with its flavor and worker count, to run the body
//! unchanged: `Builder::new_multi_thread().enable_all().build()….block_on(async { BODY })`.
//! Byte edits only: the attribute and the `async` keyword go, the body's braces are wrapped.
//! An attribute with options this does not know is left alone (the finding stays, for review).

use std::ops::Range;

use super::facts::mains::{MainFn, RuntimeAttr};
use crate::edit::Edit;

/// The edits, given the env block (`env`, as it opens a sync main's body) and the indentation
/// of the body's statements; `None` when the runtime or its options are unknown.
pub fn sync_main_edits(
    source: &str,
    main: &MainFn,
    env: &str,
    body_indent: &str,
    nl: &str,
) -> Option<Vec<Edit>> {
    let attr = main.runtime.as_ref()?;
    let runtime = runtime_expr(attr, body_indent, nl)?;
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
    // The body's closing brace on a line of its own: `})` on the line before it.
    let close_line = crate::lines::line_start(source, main.body_close);
    if source[close_line..main.body_close].trim().is_empty() {
        edits.push(Edit::insert(close_line, format!("{body_indent}}}){nl}")));
    } else {
        edits.push(Edit::insert(main.body_close, " })".to_string()));
    }
    Some(edits)
}

/// The attribute's runtime can be rebuilt by hand (`sync_main_edits` makes the main sync).
pub fn convertible(attr: &RuntimeAttr) -> bool {
    runtime_expr(attr, "", "\n").is_some()
}

/// The runtime the attribute builds, as the call that runs a future on it (`….block_on`).
fn runtime_expr(attr: &RuntimeAttr, indent: &str, nl: &str) -> Option<String> {
    let args = attr.args.as_ref()?;
    let step = format!("{nl}{indent}    ");
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
            Some(format!("{rt}::System::new(){step}.block_on"))
        }
        _ => None,
    }
}

/// The attribute's lines when it is alone on them (with their line ending), else its bytes.
fn whole_lines(source: &str, r: Range<usize>) -> Range<usize> {
    let start = crate::lines::line_start(source, r.start);
    let end = crate::lines::next_line_start(source, r.end);
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
