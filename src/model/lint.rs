//! Which rules run on which files, with ruff's names and semantics: `select`, `ignore`,
//! `extend-select`, `exclude`, `extend-exclude`, `per-file-ignores`.

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `[lint]` table (also `[tool.gpu-homogenize.lint]` in pyproject.toml).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct LintSettings {
    /// Rule codes or prefixes to enable (default: `["GH"]`, every rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub select: Option<Vec<String>>,
    pub extend_select: Vec<String>,
    pub ignore: Vec<String>,
    pub exclude: Vec<String>,
    pub extend_exclude: Vec<String>,
    pub per_file_ignores: BTreeMap<String, Vec<String>>,
}

impl LintSettings {
    /// Apply the command line on top: `--select` and `--exclude` replace, the others add.
    pub fn with_overrides(mut self, cli: &LintSettings) -> LintSettings {
        if cli.select.is_some() {
            self.select.clone_from(&cli.select);
        }
        if !cli.exclude.is_empty() {
            self.exclude.clone_from(&cli.exclude);
        }
        self.extend_select.extend(cli.extend_select.iter().cloned());
        self.ignore.extend(cli.ignore.iter().cloned());
        self.extend_exclude
            .extend(cli.extend_exclude.iter().cloned());
        for (glob, codes) in &cli.per_file_ignores {
            self.per_file_ignores
                .entry(glob.clone())
                .or_default()
                .extend(codes.iter().cloned());
        }
        self
    }

    /// Every glob and code checked, so a typo is an error that names it, not a silent no-op.
    pub fn validate(&self) -> Result<(), String> {
        for glob in self
            .exclude
            .iter()
            .chain(&self.extend_exclude)
            .chain(self.per_file_ignores.keys())
        {
            Glob::new(glob).map_err(|e| format!("bad glob `{glob}`: {e}"))?;
        }
        let codes = self
            .select
            .iter()
            .flatten()
            .chain(&self.extend_select)
            .chain(&self.ignore)
            .chain(self.per_file_ignores.values().flatten());
        for code in codes {
            if !is_selector(code) {
                return Err(format!(
                    "`{code}` selects no rule (a code like GH101, a prefix like GH1, or ALL)"
                ));
            }
        }
        Ok(())
    }
}

/// A code, a prefix of one (`GH`, `GH1`), or `ALL`.
fn is_selector(code: &str) -> bool {
    code == "ALL"
        || crate::model::rules::all()
            .iter()
            .any(|r| r.code.starts_with(code))
}

/// How specific the most specific selector matching `code` is (`None`: none matches).
fn specificity(selectors: &[String], code: &str) -> Option<usize> {
    selectors
        .iter()
        .filter_map(|s| match s.as_str() {
            "ALL" => Some(0),
            s if code.starts_with(s) => Some(s.len()),
            _ => None,
        })
        .max()
}

/// A compiled glob list that matches ruff's way: a pattern without `/` matches a name at
/// any depth, one with `/` matches the path relative to the root.
#[derive(Debug, Clone, Default)]
pub struct PathGlobs {
    by_name: GlobSet,
    by_path: GlobSet,
    empty: bool,
}

impl PathGlobs {
    pub fn new<'a>(globs: impl IntoIterator<Item = &'a String>) -> PathGlobs {
        let (mut by_name, mut by_path) = (GlobSetBuilder::new(), GlobSetBuilder::new());
        let mut empty = true;
        for glob in globs {
            let pattern = glob.trim_start_matches("./");
            let Ok(g) = Glob::new(pattern) else { continue };
            empty = false;
            if pattern.contains('/') {
                by_path.add(g);
            } else {
                by_name.add(g);
            }
        }
        PathGlobs {
            by_name: by_name.build().unwrap_or_else(|_| GlobSet::empty()),
            by_path: by_path.build().unwrap_or_else(|_| GlobSet::empty()),
            empty,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// `rel` is root-relative with `/` separators.
    pub fn is_match(&self, rel: &str) -> bool {
        if self.empty {
            return false;
        }
        let name = rel.rsplit('/').next().unwrap_or(rel);
        self.by_path.is_match(rel) || self.by_name.is_match(name)
    }
}

/// The settings compiled: which rules a file gets, which files are left out.
#[derive(Debug, Clone, Default)]
pub struct RuleFilter {
    select: Vec<String>,
    ignore: Vec<String>,
    exclude: PathGlobs,
    per_file: Vec<(PathGlobs, Vec<String>)>,
}

impl RuleFilter {
    pub fn new(settings: &LintSettings) -> RuleFilter {
        let mut select = settings
            .select
            .clone()
            .unwrap_or_else(|| vec!["GH".to_string()]);
        select.extend(settings.extend_select.iter().cloned());
        RuleFilter {
            select,
            ignore: settings.ignore.clone(),
            exclude: PathGlobs::new(settings.exclude.iter().chain(&settings.extend_exclude)),
            per_file: settings
                .per_file_ignores
                .iter()
                .map(|(glob, codes)| (PathGlobs::new([glob]), codes.clone()))
                .collect(),
        }
    }

    /// Whether `code` is reported for the file at `rel`: the most specific of `select` and
    /// `ignore` wins, `ignore` a tie, and a matching `per-file-ignores` always (as in ruff).
    pub fn enabled(&self, code: &str, rel: &str) -> bool {
        let Some(selected) = specificity(&self.select, code) else {
            return false;
        };
        // As in ruff, per-file-ignores apply after selection: they always win.
        let per_file = self
            .per_file
            .iter()
            .any(|(globs, codes)| globs.is_match(rel) && specificity(codes, code).is_some());
        !per_file && specificity(&self.ignore, code).is_none_or(|i| selected > i)
    }

    /// Whether the walk leaves `rel` (a file or a directory, root-relative) out.
    pub fn excluded(&self, rel: &str) -> bool {
        self.exclude.is_match(rel)
    }

    /// The exclusion globs, for the walk.
    pub fn exclude_globs(&self) -> PathGlobs {
        self.exclude.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(select: &[&str], ignore: &[&str]) -> RuleFilter {
        RuleFilter::new(&LintSettings {
            select: Some(select.iter().map(|s| s.to_string()).collect()),
            ignore: ignore.iter().map(|s| s.to_string()).collect(),
            ..LintSettings::default()
        })
    }

    #[test]
    fn the_most_specific_selector_wins() {
        let f = filter(&["GH1"], &["GH"]);
        assert!(f.enabled("GH101", "a.py"));
        let f = filter(&["GH"], &["GH1"]);
        assert!(!f.enabled("GH101", "a.py"));
        assert!(f.enabled("GH001", "a.py"));
        let f = filter(&["GH101"], &["GH101"]);
        assert!(!f.enabled("GH101", "a.py"));
    }

    #[test]
    fn globs_without_a_slash_match_names_at_any_depth() {
        let g = PathGlobs::new(&["docs".to_string(), "sandbox/**".to_string()]);
        assert!(g.is_match("docs"));
        assert!(g.is_match("a/docs"));
        assert!(g.is_match("sandbox/x/y.py"));
        assert!(!g.is_match("a/sandbox/y.py"));
    }
}
