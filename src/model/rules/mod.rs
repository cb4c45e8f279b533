//! The rule registry: both catalogues (data, one entry per rule) and what `--select`, SARIF
//! and `gpu-homogenize rule` look up. The analyses that emit the rules live with their
//! language and name them from here.

pub mod docs;
pub mod python;
pub mod rust;

use crate::model::finding::Rule;

/// Every rule, Python's then Rust's, in code order.
pub fn all() -> Vec<&'static Rule> {
    let mut rules: Vec<&'static Rule> = python::ALL.to_vec();
    rules.extend(rust::ALL.iter().copied());
    rules
}

/// The rule with this code (case-insensitive), if any.
pub fn by_code(code: &str) -> Option<&'static Rule> {
    all()
        .into_iter()
        .find(|r| r.code.eq_ignore_ascii_case(code))
}

pub use crate::model::finding::FixSafety;

/// A rule's full explanation as plain text: what, why, example, fix safety.
pub fn explain(rule: &Rule) -> String {
    let safety = match rule.fix {
        FixSafety::Safe => format!("Fix is safe. {}", rule.fix_why),
        FixSafety::Unsafe => format!(
            "Fix is unsafe (applied only with --unsafe-fixes). {}",
            rule.fix_why
        ),
        FixSafety::SafeExcept(part) => format!(
            "Fix is safe, except: {part} (applied only with --unsafe-fixes). {}",
            rule.fix_why
        ),
        FixSafety::None => format!("No automatic fix. {}", rule.fix_why),
    };
    let rewrite = match rule.rewrite {
        "" => String::new(),
        text => format!("\nWhat fix writes: {text}.\n"),
    };
    format!(
        "{} ({}): {}.\n\nWhy: {}\n\nExample:\n{}\n\nFix safety: {}\n{rewrite}",
        rule.code,
        rule.name,
        rule.summary,
        rule.why,
        indent(rule.example),
        safety
    )
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use crate::model::finding::{FixSafety, RuleEdits, Severity};

    #[test]
    fn every_rule_is_documented_and_its_attributes_agree() {
        let mut codes = std::collections::BTreeSet::new();
        for rule in super::all() {
            assert!(codes.insert(rule.code), "{} is declared twice", rule.code);
            for (field, text) in [
                ("summary", rule.summary),
                ("why", rule.why),
                ("example", rule.example),
                ("fix_why", rule.fix_why),
            ] {
                assert!(!text.is_empty(), "{} has no {field}", rule.code);
            }
            // Only a violation is rewritten; a finding with its own edits has a fix to apply.
            if rule.severity != Severity::Violation {
                assert_eq!(
                    rule.fix,
                    FixSafety::None,
                    "{} is not a violation",
                    rule.code
                );
            }
            // A rule with a fix says what the fix writes.
            assert_eq!(
                rule.fix == FixSafety::None,
                rule.rewrite.is_empty(),
                "{}: a fix and what it writes go together",
                rule.code
            );
            if matches!(rule.edits, RuleEdits::SetsEnv) {
                assert!(rule.env, "{} sets the env but is no env rule", rule.code);
            }
        }
    }
}
