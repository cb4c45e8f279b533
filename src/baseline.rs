//! A baseline: the findings a team accepts for now, keyed by file, rule and the text of the
//! line (not its number, so edits above a finding do not revive it). `scan --baseline FILE`
//! reports only what is not in it.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::outcome::FileOutcome;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Entry {
    pub path: String,
    pub rule: String,
    /// The reported line, trimmed.
    pub line: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct BaselineFile {
    pub version: u32,
    pub findings: Vec<Entry>,
}

/// The baseline as a multiset: each entry absorbs as many findings as it was recorded.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    counts: HashMap<(String, String, String), usize>,
}

impl Baseline {
    pub fn load(path: &Path) -> anyhow::Result<Baseline> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("{}: cannot read the baseline: {e}", path.display()))?;
        let file: BaselineFile = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: not a baseline: {e}", path.display()))?;
        let mut counts = HashMap::new();
        for e in file.findings {
            *counts.entry((e.path, e.rule, e.line)).or_default() += 1;
        }
        Ok(Baseline { counts })
    }

    /// How many findings of `rule` on a line reading `line` in `path` the baseline absorbs.
    pub fn allowance(&self, path: &str, rule: &str, line: &str) -> usize {
        self.counts
            .get(&(path.to_string(), rule.to_string(), line.trim().to_string()))
            .copied()
            .unwrap_or(0)
    }
}

/// The baseline of a run's findings (violations and findings for review), sorted.
pub fn render(outcomes: &[FileOutcome]) -> String {
    let mut findings: Vec<Entry> = outcomes
        .iter()
        .flat_map(|o| {
            o.findings
                .iter()
                .filter(|f| f.severity != "info")
                .map(move |f| Entry {
                    path: o.path.clone(),
                    rule: f.rule.clone(),
                    line: f.line_text.trim().to_string(),
                })
        })
        .collect();
    findings.sort_by(|a, b| (&a.path, &a.rule, &a.line).cmp(&(&b.path, &b.rule, &b.line)));
    let file = BaselineFile {
        version: 1,
        findings,
    };
    let mut out = serde_json::to_string_pretty(&file).unwrap_or_default();
    out.push('\n');
    out
}
