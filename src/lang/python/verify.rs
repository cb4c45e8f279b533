//! CPU invariants of a rewritten file: checked before anything is written.

use super::facts::TopKind;
use super::Analysis;

/// Problems a rewrite left; empty when the new text is sound. `before` is the analysis of the
/// original, `after` of the rewritten text.
pub fn invariants(old: &str, new: &str, before: &Analysis, after: &Analysis) -> Vec<String> {
    let mut problems = Vec::new();
    // One problem per rule: its first finding's message, and how many more of it are left.
    let mut left: Vec<(&str, &str, usize)> = Vec::new();
    for f in after.findings.iter().filter(|f| f.is_violation()) {
        let unfixable_before = before
            .findings
            .iter()
            .any(|b| b.rule.code == f.rule.code && b.is_violation() && !b.fixable);
        if unfixable_before {
            continue;
        }
        match left.iter_mut().find(|(code, _, _)| *code == f.rule.code) {
            Some((_, _, more)) => *more += 1,
            None => left.push((f.rule.code, &f.message, 0)),
        }
    }
    for (code, message, more) in left {
        let more = match more {
            0 => String::new(),
            n => format!(" (and {n} more)"),
        };
        problems.push(format!(
            "{code} still present after the rewrite: {message}{more}"
        ));
    }
    let mut seen_other = false;
    for (_, kind) in &after.details.top {
        match kind {
            TopKind::Future if seen_other => {
                problems.push("`from __future__` is no longer first".into())
            }
            TopKind::Docstring | TopKind::Future => {}
            _ => seen_other = true,
        }
    }
    if before.details.docstring.is_some() && after.details.docstring.is_none() {
        problems.push("the module docstring is no longer the first statement".into());
    }
    if old.starts_with('\u{feff}') != new.starts_with('\u{feff}') {
        problems.push("the UTF-8 BOM changed".into());
    }
    let first_line = |s: &str| {
        crate::base::lines::texts(s.trim_start_matches('\u{feff}'))
            .next()
            .unwrap_or("")
            .to_string()
    };
    if first_line(old).starts_with("#!") && first_line(old) != first_line(new) {
        problems.push("the shebang is no longer the first line".into());
    }
    let cookie_line = |s: &str| {
        crate::base::lines::texts(s)
            .take(2)
            .position(|l| l.trim_start().starts_with('#') && l.contains("coding"))
    };
    if cookie_line(old).is_some() && cookie_line(old) != cookie_line(new) {
        problems.push("the encoding cookie moved out of the first two lines".into());
    }
    problems
}
