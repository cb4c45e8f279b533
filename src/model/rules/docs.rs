//! The rule documentation, generated from the registry: one Markdown page per rule
//! (`docs/rules/GH001.md`) and an index (`docs/rules/README.md`). `tests/it/rule_docs.rs`
//! fails when the checked-in pages differ from what the registry says, and rewrites them with
//! `GH_UPDATE_RULE_DOCS=1`.

use std::fmt::Write as _;

use crate::model::finding::{FixSafety, Rule, Severity};

/// The language whose catalogue holds `rule`.
pub fn language(rule: &Rule) -> &'static str {
    if super::rust::ALL.iter().any(|r| std::ptr::eq(*r, rule)) {
        "Rust"
    } else {
        "Python"
    }
}

/// The fix's safety in a few words.
pub fn fix_label(fix: FixSafety) -> &'static str {
    match fix {
        FixSafety::Safe => "safe fix",
        FixSafety::Unsafe => "unsafe fix",
        FixSafety::SafeExcept(_) => "safe fix, one unsafe part",
        FixSafety::None => "no fix",
    }
}

fn severity(rule: &Rule) -> &'static str {
    match rule.severity {
        Severity::Violation => "violation (the file is non-compliant)",
        Severity::Review => "review (the file needs a person; never green)",
        Severity::Info => "info (a touchpoint; not a problem by itself)",
    }
}

/// The page name of `rule` under `docs/rules/`.
pub fn file_name(rule: &Rule) -> String {
    format!("{}.md", rule.code)
}

/// The page of one rule.
pub fn page(rule: &Rule) -> String {
    let fence = match language(rule) {
        "Rust" => "rust",
        _ => "python",
    };
    let mut out = String::new();
    let _ = writeln!(out, "# {} ({})\n", rule.name, rule.code);
    let _ = writeln!(
        out,
        "{} · {} · {}\n",
        language(rule),
        severity(rule),
        fix_label(rule.fix)
    );
    let _ = writeln!(out, "## What it finds\n\n{}.\n", capitalised(rule.summary));
    let _ = writeln!(out, "## Why it matters\n\n{}\n", rule.why);
    let _ = writeln!(out, "## Example\n");
    match rule.example.split_once("  ->  ") {
        Some((before, after)) => {
            let _ = writeln!(out, "```{fence}\n{before}\n```\n\nAfter the fix:\n");
            let _ = writeln!(out, "```{fence}\n{after}\n```\n");
        }
        None => {
            let _ = writeln!(out, "```{fence}\n{}\n```\n", rule.example);
        }
    }
    let _ = writeln!(out, "## Fix\n");
    let safety = match rule.fix {
        FixSafety::Safe => "Safe: `fix` applies it.".to_string(),
        FixSafety::Unsafe => "Unsafe: applied only with `--unsafe-fixes`.".to_string(),
        FixSafety::SafeExcept(part) => {
            format!("Safe, except one part that needs `--unsafe-fixes`: {part}.")
        }
        FixSafety::None => "None: reported, never rewritten.".to_string(),
    };
    let _ = writeln!(out, "{safety} {}", rule.fix_why);
    if !rule.rewrite.is_empty() {
        let _ = writeln!(out, "\nWhat `fix` writes: {}.", rule.rewrite);
    }
    let comment = match language(rule) {
        "Rust" => "//",
        _ => "#",
    };
    let _ = writeln!(
        out,
        "\nTo accept one finding, end its line with `{comment} noqa: {code}` and say why on it. \
         `gpu-homogenize rule {code}` prints this page as text.",
        code = rule.code
    );
    out
}

/// The index of every rule, as a table linking to the pages.
pub fn index() -> String {
    let mut out = String::from(
        "# Rules\n\nGenerated from the rule registry (`src/model/rules/`); do not edit by hand: \
         `GH_UPDATE_RULE_DOCS=1 cargo test --test it rule_docs` rewrites these pages.\n\n\
         | code | name | language | severity | fix | what it finds |\n|---|---|---|---|---|---|\n",
    );
    for rule in super::all() {
        let severity = match rule.severity {
            Severity::Violation => "violation",
            Severity::Review => "review",
            Severity::Info => "info",
        };
        let _ = writeln!(
            out,
            "| [{code}]({file}) | {name} | {lang} | {severity} | {fix} | {summary} |",
            code = rule.code,
            file = file_name(rule),
            name = rule.name,
            lang = language(rule),
            fix = fix_label(rule.fix),
            summary = rule.summary.replace('|', "\\|"),
        );
    }
    out
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
