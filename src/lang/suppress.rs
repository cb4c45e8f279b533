//! Suppression comments, as ruff reads them: `# noqa` or `# noqa: GH101, GH102` at the end of
//! the reported line (`// noqa: GH511` in Rust), and a file-level
//! `# gpu-homogenize: skip-file` (`// gpu-homogenize: skip-file`).

use crate::base::edit::Edit;
use crate::lang::Analysis;
use crate::model::finding::Finding;
use crate::model::outcome::Language;

/// The comment marker of a language.
fn marker(language: Language) -> &'static str {
    match language {
        Language::Python => "#",
        Language::Rust => "//",
    }
}

/// A line's `noqa`: every code, or the listed ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Noqa {
    All,
    Codes(Vec<String>),
}

impl Noqa {
    pub fn covers(&self, code: &str) -> bool {
        match self {
            Noqa::All => true,
            Noqa::Codes(codes) => codes.iter().any(|c| c.eq_ignore_ascii_case(code)),
        }
    }
}

/// The `noqa` directives of one line, merged, if it has any.
pub fn noqa_of(line: &str, language: Language) -> Option<Noqa> {
    let marker = marker(language);
    let mut found: Option<Noqa> = None;
    let mut rest = line;
    while let Some(i) = rest.find(marker) {
        rest = &rest[i + marker.len()..];
        let after = rest.trim_start();
        let Some(directive) = directive(after) else {
            continue;
        };
        found = Some(match (found, directive) {
            (Some(Noqa::All), _) | (_, Noqa::All) => Noqa::All,
            (Some(Noqa::Codes(mut a)), Noqa::Codes(b)) => {
                a.extend(b);
                Noqa::Codes(a)
            }
            (None, d) => d,
        });
    }
    found
}

/// `noqa`, `noqa: A, B` at the start of `text` (what follows a comment marker).
fn directive(text: &str) -> Option<Noqa> {
    // `get`: the text may start with a multi-byte character.
    if !text
        .get(..4)
        .is_some_and(|p| p.eq_ignore_ascii_case("noqa"))
    {
        return None;
    }
    let tail = &text[4..];
    let Some(list) = tail.strip_prefix(':') else {
        // `# noqa` alone (or followed by text that is not a code list) covers all.
        return (tail.is_empty() || tail.starts_with(char::is_whitespace)).then_some(Noqa::All);
    };
    let codes: Vec<String> = list
        .split(|c: char| c == ',' || c.is_whitespace())
        .map(str::trim)
        .take_while(|c| c.is_empty() || is_code(c))
        .filter(|c| !c.is_empty())
        .map(str::to_ascii_uppercase)
        .collect();
    Some(if codes.is_empty() {
        Noqa::All
    } else {
        Noqa::Codes(codes)
    })
}

/// The codes a file exempts itself from with `# gpu-homogenize: noqa: GH001` on a line of its
/// own (for findings about the whole file, which have no line of their own).
pub fn file_noqa(text: &str, language: Language) -> Option<Noqa> {
    if !names_the_tool(text) {
        return None;
    }
    let marker = marker(language);
    let mut found = None;
    for line in crate::base::lines::texts(text) {
        let Some(rest) = line.trim_start().strip_prefix(marker) else {
            continue;
        };
        let rest = rest.trim_start();
        if !rest
            .get(..15)
            .is_some_and(|p| p.eq_ignore_ascii_case("gpu-homogenize:"))
        {
            continue;
        }
        if let Some(d) = directive(rest[15..].trim_start()) {
            found = Some(match (found, d) {
                (Some(Noqa::All), _) | (_, Noqa::All) => Noqa::All,
                (Some(Noqa::Codes(mut a)), Noqa::Codes(b)) => {
                    a.extend(b);
                    Noqa::Codes(a)
                }
                (None, d) => d,
            });
        }
    }
    found
}

/// A rule code as ruff writes them: letters, then digits (`GH101`, `E402`).
fn is_code(word: &str) -> bool {
    let digits = word.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    digits.len() < word.len() && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

/// Whether the file opts out with `# gpu-homogenize: skip-file` on a line of its own.
/// Whether `text` holds `gpu-homogenize:` in any case: every file-level directive does, and
/// most files have none, so one search spares reading them line by line.
fn names_the_tool(text: &str) -> bool {
    static TOOL: std::sync::LazyLock<aho_corasick::AhoCorasick> = std::sync::LazyLock::new(|| {
        aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(["gpu-homogenize:"])
            .expect("one literal")
    });
    TOOL.is_match(text)
}

pub fn skips_file(text: &str, language: Language) -> bool {
    if !names_the_tool(text) {
        return false;
    }
    let marker = marker(language);
    crate::base::lines::texts(text).any(|line| {
        line.trim_start()
            .strip_prefix(marker)
            .map(str::trim)
            .is_some_and(|rest| rest.eq_ignore_ascii_case("gpu-homogenize: skip-file"))
    })
}

/// Take out the findings `drop` names, with their fixes. Returns the codes taken out.
/// `drop` is asked once per finding (a baseline counts what it absorbs).
pub fn remove_findings(
    analysis: &mut dyn Analysis,
    drop: &dyn Fn(&Finding) -> bool,
) -> Vec<&'static crate::model::finding::Rule> {
    let mask: Vec<bool> = analysis.parts_mut().0.iter().map(drop).collect();
    hold_back_mask(analysis, &mask);
    let (findings, _) = analysis.parts_mut();
    let mut codes = Vec::new();
    let mut i = 0;
    findings.retain(|f| {
        let gone = mask[i];
        i += 1;
        if gone {
            codes.push(f.rule);
        }
        !gone
    });
    codes
}

/// Keep the findings `hold` names but take their fixes out of the plan; returns how many
/// fixes were held back. A finding fixed by the file-level plan (the header) takes the plan
/// with it: only the other findings' own edits stay.
pub fn hold_back_fixes(analysis: &mut dyn Analysis, hold: &dyn Fn(&Finding) -> bool) -> usize {
    let mask: Vec<bool> = analysis.parts_mut().0.iter().map(hold).collect();
    hold_back_mask(analysis, &mask)
}

fn hold_back_mask(analysis: &mut dyn Analysis, mask: &[bool]) -> usize {
    let (held, plan_goes) = hold_back(analysis, mask);
    if plan_goes {
        // The plan's unsafe part goes with the plan.
        analysis.settle_unsafe_edits(false);
    }
    held
}

fn hold_back(analysis: &mut dyn Analysis, mask: &[bool]) -> (usize, bool) {
    let (findings, edits) = analysis.parts_mut();
    let held: Vec<usize> = (0..findings.len())
        .filter(|&i| findings[i].fixable && mask[i])
        .collect();
    if held.is_empty() {
        return (0, false);
    }
    // A finding fixed by the file's plan (no edits of its own), or whose edits are the env
    // itself (an async main made sync), takes the whole plan with it: an index remapped without
    // the env would select the forbidden card.
    let plan_goes = held.iter().any(|&i| {
        findings[i].edits.is_empty()
            || findings[i].rule.edits == crate::model::finding::RuleEdits::SetsEnv
    });
    if plan_goes {
        // Without the file's env plan nothing else may go in: a device index remapped to the
        // masked numbering selects the right card only under the policy's mask.
        edits.clear();
        for f in findings.iter_mut() {
            f.fixable = false;
            f.edits.clear();
        }
    } else {
        let gone: Vec<Edit> = held
            .iter()
            .flat_map(|&i| findings[i].edits.iter().cloned())
            .collect();
        edits.retain(|e| !gone.contains(e));
    }
    for &i in &held {
        findings[i].fixable = false;
        findings[i].edits.clear();
    }
    (held.len(), plan_goes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_codes_and_bare_noqa() {
        let py = Language::Python;
        assert_eq!(noqa_of("x = 1  # noqa", py), Some(Noqa::All));
        assert_eq!(
            noqa_of("x = 'cuda:1'  # noqa: GH101, gh102 because", py),
            Some(Noqa::Codes(vec!["GH101".into(), "GH102".into()]))
        );
        assert!(!noqa_of("import torch  # noqa: E402", py)
            .unwrap()
            .covers("GH301"));
        assert_eq!(noqa_of("x = 1  # noqanope", py), None);
        assert_eq!(
            noqa_of("let d = 1; // noqa: GH511", Language::Rust),
            Some(Noqa::Codes(vec!["GH511".into()]))
        );
    }

    #[test]
    fn comments_with_accents_never_panic() {
        let rust = "//! Lanceur : prépare l'environnement\n/// Ouvre le modèle\n";
        assert_eq!(file_noqa(rust, Language::Rust), None);
        assert_eq!(noqa_of("x = 1  # é noqa", Language::Python), None);
        assert_eq!(noqa_of("x = 1  #é", Language::Python), None);
    }

    #[test]
    fn skip_file_is_a_comment_of_its_own() {
        assert!(skips_file(
            "# gpu-homogenize: skip-file\nimport torch\n",
            Language::Python
        ));
        assert!(!skips_file(
            "x = '# gpu-homogenize: skip-file'\n",
            Language::Python
        ));
    }
}
