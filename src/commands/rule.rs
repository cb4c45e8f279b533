//! `gpu-homogenize rule CODE` (what a rule means) and `gpu-homogenize completions SHELL`.

use clap::CommandFactory;

use super::{EXIT_ERROR, EXIT_OK};
use crate::cli::{Cli, CompletionsArgs, RuleArgs};
use crate::rules::{explain, explanation, FixSafety};

pub fn run(args: &RuleArgs) -> anyhow::Result<i32> {
    if args.all {
        for rule in crate::rules::all() {
            let safety = match explanation(rule.code).safety {
                FixSafety::Safe => "safe fix",
                FixSafety::Unsafe => "unsafe fix",
                FixSafety::SafeExcept(_) => "safe fix, one unsafe part",
                FixSafety::None => "no fix",
            };
            out!("{}\t{}\t{safety}\t{}\n", rule.code, rule.name, rule.summary);
        }
        return Ok(EXIT_OK);
    }
    let code = args.code.as_deref().unwrap_or_default();
    match crate::rules::by_code(code) {
        Some(rule) => {
            out!("{}", explain(rule));
            Ok(EXIT_OK)
        }
        None if RETIRED.contains(&code.to_ascii_uppercase().as_str()) => {
            err!("error: `{code}` is retired (never reused): a configuration is judged by its effect, and the docstring marker and validation function are part of the header fix; `gpu-homogenize rule --all` lists the rules\n");
            Ok(EXIT_ERROR)
        }
        None => {
            err!("error: `{code}` is not a rule; `gpu-homogenize rule --all` lists them\n");
            Ok(EXIT_ERROR)
        }
    }
}

/// Codes that were rules once: never reused, and named as retired.
const RETIRED: &[&str] = &["GH003", "GH004", "GH007", "GH008", "GH009"];

pub fn completions(args: &CompletionsArgs) -> anyhow::Result<i32> {
    let mut script = Vec::new();
    clap_complete::generate(
        args.shell,
        &mut Cli::command(),
        "gpu-homogenize",
        &mut script,
    );
    out!("{}", String::from_utf8_lossy(&script));
    Ok(EXIT_OK)
}
