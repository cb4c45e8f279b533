//! A baseline: the findings a team accepts for now, keyed by file, rule and the text of the
//! line (not its number, so edits above a finding do not revive it), as ruff's noqa and
//! Semgrep's fingerprints key on content. A finding about the whole file (a missing header) has
//! no line of its own: it is keyed by file and rule only, so editing the docstring on line 1
//! does not revive it. `scan --baseline FILE` reports only what is not in it.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::outcome::FileOutcome;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Entry {
    pub path: String,
    pub rule: String,
    /// The reported line, trimmed; empty for a finding about the whole file.
    pub line: String,
    /// About the whole file (version 2): matched by file and rule alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_file: bool,
}

/// The version `render` writes. Version 1 keyed whole-file findings by the text of line 1; its
/// files are still read (and still match as they did).
pub const VERSION: u32 = 2;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct BaselineFile {
    pub version: u32,
    pub findings: Vec<Entry>,
}

/// The baseline as a multiset: each entry absorbs as many findings as it was recorded.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    counts: HashMap<Key, usize>,
}

/// File, rule, line text, whole file.
type Key = (String, String, String, bool);

impl Baseline {
    /// The baseline the user named (`--baseline`): a regular file within
    /// [`crate::fs::tree_file::BASELINE_LIMIT`]; its errors never quote it.
    pub fn load(path: &Path) -> anyhow::Result<Baseline> {
        let text = crate::fs::tree_file::read_named(path, crate::fs::tree_file::BASELINE_LIMIT)
            .map_err(|e| anyhow::anyhow!("cannot read the baseline: {e}"))?;
        let shown = crate::model::outcome::display_path(path);
        let file: BaselineFile = serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{shown}: not a baseline: {}",
                crate::model::policy::excerpt(&e.to_string())
            )
        })?;
        let mut counts = HashMap::new();
        if file.version > VERSION {
            anyhow::bail!(
                "{shown}: a baseline of version {} (this gpu-homogenize reads up to {VERSION}); upgrade it",
                file.version
            );
        }
        for e in file.findings {
            *counts
                .entry((e.path, e.rule, e.line, e.whole_file))
                .or_default() += 1;
        }
        Ok(Baseline { counts })
    }

    /// How many findings of `rule` on a line reading `line` in `path` the baseline absorbs;
    /// `whole_file`: a finding about the whole file, reported on line 1 (`line` is its text, which
    /// a version-1 baseline keyed it by).
    pub fn allowance(&self, path: &str, rule: &str, line: &str, whole_file: bool) -> usize {
        let get = |line: &str, whole: bool| {
            self.counts
                .get(&(path.to_string(), rule.to_string(), line.to_string(), whole))
                .copied()
                .unwrap_or(0)
        };
        let by_line = get(line.trim(), false);
        if whole_file {
            get("", true) + by_line
        } else {
            by_line
        }
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
                    line: if f.whole_file {
                        String::new()
                    } else {
                        f.line_text.trim().to_string()
                    },
                    whole_file: f.whole_file,
                })
        })
        .collect();
    findings.sort_by(|a, b| {
        (&a.path, &a.rule, &a.line, a.whole_file).cmp(&(&b.path, &b.rule, &b.line, b.whole_file))
    });
    let file = BaselineFile {
        version: VERSION,
        findings,
    };
    let mut out = serde_json::to_string_pretty(&file).unwrap_or_default();
    out.push('\n');
    out
}
