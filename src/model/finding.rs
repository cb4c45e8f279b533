//! What a rule reports: a finding at a byte range, with an optional fix.

use std::ops::Range;

use serde::Serialize;

use crate::base::edit::Edit;

/// How much a finding matters. Only violations make a file non-compliant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Breaks the policy; `fix` rewrites it when it has a fix.
    Violation,
    /// Needs a human (e.g. code that assumes several GPUs); never rewritten.
    Review,
    /// A GPU touchpoint for the map of the code base; not a problem by itself.
    Info,
}

/// How safe a fix is to apply, as ruff's `Applicability`: `fix` applies safe fixes,
/// `--unsafe-fixes` the unsafe ones too; display-only findings are never rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Applicability {
    /// Keeps what the program does (beyond selecting the policy's card).
    Safe,
    /// May change what the program does: applied only with `--unsafe-fixes`.
    Unsafe,
    /// Reported for a human; never rewritten.
    DisplayOnly,
}

/// An entry of the rule registry: what a rule is, its documentation, and its behaviour as typed
/// attributes (no code keys on a rule's code). `gpu-homogenize rule`, SARIF's rule descriptions
/// and `docs/rules/` are generated from these fields. Codes are stable: scripts and configs rely
/// on them.
#[derive(Debug, PartialEq, Eq)]
pub struct Rule {
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    /// One line: what a finding says.
    pub summary: &'static str,
    /// Why it matters: what goes wrong on the machine.
    pub why: &'static str,
    /// Code that triggers it (and, after `->`, what the fix makes of it).
    pub example: &'static str,
    /// How its fix may be applied.
    pub fix: FixSafety,
    /// Why the fix is as safe as `fix` says.
    pub fix_why: &'static str,
    /// What `fix` writes, for a rule with a fix.
    pub rewrite: &'static str,
    /// Whether the fix of a file applies the edits a finding of this rule carries.
    pub edits: RuleEdits,
    /// A finding says the process env is not the policy's: a rewrite that leaves one is
    /// withheld.
    pub env: bool,
    /// What the rule is about, where other code must tell rules apart.
    pub subject: Subject,
}

impl Rule {
    /// The attributes most rules share, for `..Rule::DEFAULT` in a registry entry.
    pub const DEFAULT: Rule = Rule {
        code: "",
        name: "",
        severity: Severity::Review,
        summary: "",
        why: "",
        example: "",
        fix: FixSafety::None,
        fix_why: "",
        rewrite: "",
        edits: RuleEdits::ByHeader,
        env: false,
        subject: Subject::Other,
    };
}

/// How a rule's fix may be applied, as ruff says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixSafety {
    /// `fix` applies it.
    Safe,
    /// Changes what the program does: only with `--unsafe-fixes`.
    Unsafe,
    /// Partly safe: the named part needs `--unsafe-fixes`.
    SafeExcept(&'static str),
    /// Reported, never rewritten.
    None,
}

/// What a rule is about, for the code that must tell rules apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// The file's GPU header: missing, or incomplete.
    Header,
    /// A device index that the mask renumbers and the fix remaps.
    DeviceIndex,
    /// A place of the GPU touchpoint map (`--touchpoints`): shown only when asked for.
    Touchpoint,
    Other,
}

/// How a finding's own edits enter the fix of its file (a typed attribute, so that no code
/// keys on a rule's code to decide it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleEdits {
    /// The finding's edits are not applied on their own: the header's plan (the replaced
    /// block, the removed writes) makes the change.
    ByHeader,
    /// Always applied (a device index remapped, a late `from __future__` moved up).
    Own,
    /// Applied unless the block the header replaces already holds the statement (a
    /// function's or a library's write).
    OwnOutsideHeader,
    /// Its edits are the env itself (an async `main` made sync to set it): holding them back
    /// holds back the whole plan.
    SetsEnv,
}

/// One problem found in one file.
#[derive(Debug, Clone)]
pub struct Finding {
    pub rule: &'static Rule,
    pub range: Range<usize>,
    /// What is wrong where, in one short line (ruff's message).
    pub message: String,
    /// What to do about it here, when that is not `fix` (ruff's help line): the hand edit, the
    /// launcher line with the policy's values, why the fix is withheld. The rule's page
    /// (`rule CODE`) says why the rule exists.
    pub help: Option<String>,
    /// Edits that fix this finding on their own; empty when there is no automatic fix
    /// or when the fix is part of a file-level plan (the header).
    pub edits: Vec<Edit>,
    /// `fix` rewrites it, through its own edits or the file-level plan (the header).
    pub fixable: bool,
    /// How safe its fix is (meaningful when `fixable`).
    pub applicability: Applicability,
}

impl Finding {
    pub fn new(rule: &'static Rule, range: Range<usize>, message: impl Into<String>) -> Finding {
        Finding {
            rule,
            range,
            message: message.into(),
            help: None,
            edits: Vec::new(),
            fixable: false,
            applicability: match rule.severity {
                Severity::Violation => Applicability::Safe,
                _ => Applicability::DisplayOnly,
            },
        }
    }

    /// What to do about it here (see [`Finding::help`]).
    pub fn with_help(mut self, help: impl Into<String>) -> Finding {
        self.help = Some(help.into());
        self
    }

    /// Adds a sentence to its help (a withheld fix's reason after the rule's own advice).
    pub fn add_help(&mut self, more: &str) {
        self.help = Some(match self.help.take() {
            Some(h) => format!("{h}; {more}"),
            None => more.to_string(),
        });
    }

    /// Its fix may change what the program does: only `--unsafe-fixes` applies it.
    pub fn unsafe_fix(mut self) -> Finding {
        self.applicability = Applicability::Unsafe;
        self
    }

    pub fn with_edits(mut self, edits: Vec<Edit>) -> Finding {
        self.fixable = !edits.is_empty();
        self.edits = edits;
        self
    }

    pub fn with_fix(mut self, fixable: bool) -> Finding {
        self.fixable = fixable;
        self
    }

    /// Fixed by the file-level plan rather than by edits of its own.
    pub fn fixed_by_plan(mut self) -> Finding {
        self.fixable = true;
        self
    }

    pub fn is_violation(&self) -> bool {
        self.rule.severity == Severity::Violation
    }
}

/// 1-based line and column (in characters) of a byte offset, by the one line model
/// ([`crate::base::line_index`]: `\n`, `\r\n` and a lone `\r` end a line).
pub use crate::base::line_index::line_column;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let src = "é = 1\nx = 'cuda:1'\n";
        assert_eq!(line_column(src, 0), (1, 1));
        assert_eq!(line_column(src, 3), (1, 3));
        assert_eq!(line_column(src, src.find("'cuda").unwrap()), (2, 5));
        let cr = "import torch\rx = 'cuda:1'\r";
        assert_eq!(line_column(cr, cr.find("'cuda").unwrap()), (2, 5));
    }
}
