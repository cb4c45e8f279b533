//! `gpu-homogenize rule CODE` (what a rule means) and `gpu-homogenize completions SHELL`.

use clap::CommandFactory;

use super::{EXIT_ERROR, EXIT_OK};
use crate::cli::{Cli, CompletionsArgs, RuleArgs};
use crate::model::rules::explain;

pub fn run(args: &RuleArgs) -> anyhow::Result<i32> {
    if args.all {
        for rule in crate::model::rules::all() {
            let safety = crate::model::rules::docs::fix_label(rule.fix);
            out!("{}\t{}\t{safety}\t{}\n", rule.code, rule.name, rule.summary);
        }
        return Ok(EXIT_OK);
    }
    let code = args.code.as_deref().unwrap_or_default();
    match crate::model::rules::by_code(code) {
        Some(rule) => {
            out!("{}", explain(rule));
            Ok(EXIT_OK)
        }
        None if crate::report::sarif::result_only(code).is_some() => {
            out!(
                "{}",
                crate::report::sarif::result_only(code).unwrap_or_default()
            );
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
    out!("{}", completion_script(args.shell));
    Ok(EXIT_OK)
}

/// The rule codes from the registry, then the prefixes of their families (`GH1`), as the shells
/// complete `rule CODE`, `--select`, `--extend-select` and `--ignore`.
fn rule_codes() -> Vec<&'static str> {
    let mut codes: Vec<&'static str> = crate::model::rules::all().iter().map(|r| r.code).collect();
    let mut families: Vec<&'static str> = codes.iter().map(|c| &c[..3]).collect();
    families.sort_unstable();
    families.dedup();
    codes.extend(families);
    codes
}

/// A subcommand whose rule-code arguments complete the registry's codes: only in the script
/// (parsing still takes any prefix, and says which code it does not know).
fn with_rule_codes(sub: clap::Command) -> clap::Command {
    let is_rule = sub.get_name() == "rule";
    sub.mut_args(|arg| {
        let code = arg
            .get_value_names()
            .is_some_and(|names| names.iter().any(|n| n == "RULE_CODE"))
            || (is_rule && arg.get_id() == "code");
        if code {
            arg.value_parser(clap::builder::PossibleValuesParser::new(rule_codes()))
        } else {
            arg
        }
    })
}

/// clap_complete's PowerShell script completes no argument values: `rule <TAB>` is given the
/// registry's codes (with each rule's summary as the tooltip) in the block of the `rule` command.
fn powershell_rule_codes(script: &str) -> String {
    let block = format!("'{BIN};rule' {{\n");
    let Some(at) = script.find(&block).map(|i| i + block.len()) else {
        return script.to_string();
    };
    let mut entries = String::new();
    for rule in crate::model::rules::all() {
        entries.push_str(&format!(
            "            [CompletionResult]::new('{0}', '{0}', [CompletionResultType]::ParameterValue, '{1}')\n",
            rule.code,
            rule.summary.replace('\'', "''")
        ));
    }
    format!("{}{entries}{}", &script[..at], &script[at..])
}

/// The program's name, as users type it.
const BIN: &str = "gpu-homogenize";
/// The name bash's completion functions are generated under (see `completion_script`).
const BASH_NAME: &str = "gpu_homogenize";

/// The completion script for `shell`, for every option of every subcommand a user can type (the
/// hidden `__probe` and `__supervise` left out).
///
/// clap_complete's bash script names its case labels after the binary, and turns the `-` of
/// `gpu-homogenize` into `__` in one place and `__subcmd__` in the other, so no subcommand's
/// label ever matched: the bash functions are generated under a name without `-` and the
/// completion is registered for the real name as well.
pub fn completion_script(shell: clap_complete::Shell) -> String {
    let full = Cli::command();
    let name = match shell {
        clap_complete::Shell::Bash => BASH_NAME,
        _ => BIN,
    };
    let mut visible = clap::Command::new(name)
        .version(env!("CARGO_PKG_VERSION"))
        .about(full.get_about().cloned().unwrap_or_default());
    for arg in full.get_arguments() {
        visible = visible.arg(arg.clone());
    }
    for sub in full.get_subcommands().filter(|s| !s.is_hide_set()) {
        visible = visible.subcommand(with_rule_codes(sub.clone()));
    }
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut visible, name, &mut script);
    let mut script = String::from_utf8_lossy(&script).into_owned();
    if shell == clap_complete::Shell::PowerShell {
        script = powershell_rule_codes(&script);
    }
    if name != BIN {
        // The same registration as the generated one, for the name users type.
        script.push_str(&format!(
            "if [[ \"${{BASH_VERSINFO[0]}}\" -eq 4 && \"${{BASH_VERSINFO[1]}}\" -ge 4 || \"${{BASH_VERSINFO[0]}}\" -gt 4 ]]; then\n    complete -F _{name} -o nosort -o bashdefault -o default {BIN}\nelse\n    complete -F _{name} -o bashdefault -o default {BIN}\nfi\n"
        ));
    }
    script
}
