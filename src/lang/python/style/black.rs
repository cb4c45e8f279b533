//! Which black the project's CI runs, as far as the tree says: black's stable style changes
//! once a year (January), and one of those changes decides whether a header can go where it
//! must. From black 26.1 the blank lines after an import block that code follows are one,
//! whatever isort's `lines_after_imports` asks (24.x and 25.x keep two).
//!
//! Read in the order that decides what runs: `[tool.black] required-version` (black refuses
//! to run as another major), the pre-commit hook's `rev`, a lock file (`uv.lock`,
//! `poetry.lock`, `pdm.lock`), then the requirements (`black==…`, `black<…` in
//! `pyproject.toml`, `setup.cfg`'s options and extras, `setup.py`'s `setup(…)` lists, and the
//! usual requirement files; poetry's `black = "^24.1"`). A black
//! named with no version, or only a lower bound, is the newest one.

use std::path::Path;

/// The black a project runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlackRelease {
    /// Its major version (the year), `None` when nothing pins it: the newest.
    pub major: Option<u32>,
    /// Where that was read, for a message.
    pub source: &'static str,
}

impl BlackRelease {
    /// Black's stable style puts one blank line, never two, after an import block that code
    /// (not a `def` or `class`) follows.
    pub fn one_line_after_imports(self) -> bool {
        self.major.is_none_or(|m| m >= 26)
    }

    /// The release as a message names it.
    pub fn shown(self) -> String {
        match self.major {
            Some(m) => format!("black {m} ({})", self.source),
            None => format!("black ({}: the newest, 26 or later)", self.source),
        }
    }
}

/// A reader of one file's requirement strings.
type Requirements = fn(&str) -> Vec<String>;

/// The requirement files read besides `pyproject.toml`, at the root.
const REQUIREMENT_FILES: &[&str] = &[
    "requirements.txt",
    "requirements-dev.txt",
    "requirements_dev.txt",
    "dev-requirements.txt",
    "requirements-lint.txt",
    "requirements-test.txt",
    "requirements/dev.txt",
    "requirements/lint.txt",
    "requirements/test.txt",
];

/// Lock files: each holds `[[package]]` tables with `name` and `version` lines.
const LOCK_FILES: &[&str] = &["uv.lock", "poetry.lock", "pdm.lock"];

/// Lock files are larger than settings; they are read within this bound.
const LOCK_LIMIT: u64 = 64 << 20;

/// The black the project at `root` runs, when it runs one (`configured`: `[tool.black]` or a
/// `black` pre-commit hook).
pub fn release(
    root: &Path,
    pyproject: Option<&toml::Table>,
    pre_commit: Option<&str>,
    configured: bool,
) -> Option<BlackRelease> {
    let found = |major: Option<u32>, source| Some(BlackRelease { major, source });
    let required = pyproject
        .and_then(|p| p.get("tool")?.get("black")?.get("required-version"))
        .and_then(|v| match v {
            toml::Value::String(s) => major_of(s),
            toml::Value::Integer(n) => u32::try_from(*n).ok(),
            _ => None,
        });
    if required.is_some() {
        return found(required, "`required-version` in pyproject.toml");
    }
    if let Some(rev) = pre_commit.and_then(pre_commit_rev) {
        return found(Some(rev), ".pre-commit-config.yaml");
    }
    for name in LOCK_FILES {
        // Through the confined reader, as every settings file: a link or a special file is
        // named in a warning and read as absent.
        let text = match crate::fs::tree_file::read_text(root, Path::new(name), LOCK_LIMIT) {
            Ok(text) => text,
            Err(e) => {
                crate::fs::tree_file::warn_once(&format!("{e}; its pinned black not read"));
                None
            }
        };
        if let Some(major) = text.as_deref().and_then(locked) {
            return found(Some(major), name);
        }
    }
    if let Some(pin) = pyproject.and_then(pyproject_pin) {
        return found(pin.major, "pyproject.toml");
    }
    // setuptools' own declarations: `setup.cfg`'s options, `setup.py`'s `setup(…)` literals.
    let declared: [(&'static str, Requirements); 2] = [
        ("setup.cfg", super::requirements::setup_cfg),
        ("setup.py", super::requirements::setup_py),
    ];
    for (name, read) in declared {
        let text = crate::fs::tree_file::read_optional(root, Path::new(name), "its requirements");
        if let Some(pin) = text
            .as_deref()
            .map(read)
            .and_then(|reqs| reqs.iter().find_map(|r| requirement(r)))
        {
            return found(pin.major, name);
        }
    }
    for name in REQUIREMENT_FILES {
        let text = crate::fs::tree_file::read_optional(root, Path::new(name), "its requirements");
        if let Some(pin) = text
            .as_deref()
            .and_then(|t| t.lines().find_map(requirement))
        {
            return found(pin.major, name);
        }
    }
    configured.then_some(BlackRelease {
        major: None,
        source: "no version pinned",
    })
}

/// The first number of a version (`24.8.0`, `v24`, `24.*`).
fn major_of(version: &str) -> Option<u32> {
    let digits: String = version
        .trim()
        .trim_start_matches(['v', '^', '~', '='])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The `rev` of the hook repository that runs black (`psf/black`,
/// `psf/black-pre-commit-mirror`): the next `rev:` after its `repo:` line, before another.
fn pre_commit_rev(text: &str) -> Option<u32> {
    let mut in_black = false;
    for line in text.lines() {
        let line = line.trim().trim_start_matches("- ").trim();
        if let Some(url) = line.strip_prefix("repo:") {
            let url = url.trim().trim_matches(['"', '\'']).trim_end_matches('/');
            let name = url.rsplit('/').next().unwrap_or("");
            in_black = matches!(name, "black" | "black-pre-commit-mirror");
        } else if let (true, Some(rev)) = (in_black, line.strip_prefix("rev:")) {
            return major_of(rev.trim().trim_matches(['"', '\'']));
        }
    }
    None
}

/// The version a lock file holds for black: the `version` line of the table whose `name` is
/// `black`.
fn locked(text: &str) -> Option<u32> {
    let mut in_black = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_black = false;
        } else if let Some(value) = line.strip_prefix("name") {
            let value = value.trim_start().strip_prefix('=').map(str::trim);
            in_black = value.is_some_and(|v| v.trim_matches('"') == "black");
        } else if let (true, Some(value)) = (in_black, line.strip_prefix("version")) {
            let value = value
                .trim_start()
                .strip_prefix('=')?
                .trim()
                .trim_matches('"');
            return major_of(value);
        }
    }
    None
}

/// A requirement of black, and the newest major it allows (`None`: no upper bound).
#[derive(Debug, PartialEq)]
struct Pin {
    major: Option<u32>,
}

/// `black==24.8.0`, `black[jupyter]~=24.1`, `black>=23,<25`, `black`: the pin; `None` when
/// the line is not a requirement of black.
fn requirement(line: &str) -> Option<Pin> {
    let line = line.split('#').next()?.split(';').next()?.trim();
    let rest = line
        .strip_prefix("black")
        .or_else(|| line.strip_prefix("Black"))?;
    let rest = match rest.strip_prefix('[') {
        Some(extras) => &extras[extras.find(']')? + 1..],
        None => rest,
    };
    let rest = rest.trim();
    if !(rest.is_empty() || rest.starts_with(['=', '<', '>', '~', '!', '('])) {
        return None;
    }
    let rest = rest.trim_start_matches('(').trim_end_matches(')');
    let mut major = None;
    for spec in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let op_len = spec
            .find(|c: char| c.is_ascii_digit() || c == 'v')
            .unwrap_or(spec.len());
        let (op, version) = (spec[..op_len].trim(), &spec[op_len..]);
        let Some(m) = major_of(version) else { continue };
        let bound = match op {
            "==" | "===" | "~=" | "<=" => Some(m),
            // `<25` and `<25.0` allow 24 at most; `<25.1` allows 25.0.
            "<" => {
                let exact = version
                    .split('.')
                    .skip(1)
                    .all(|p| p.trim_matches('*') == "0" || p.is_empty());
                Some(if exact { m.saturating_sub(1) } else { m })
            }
            _ => None,
        };
        if let Some(b) = bound {
            major = Some(major.map_or(b, |old: u32| old.min(b)));
        }
    }
    Some(Pin { major })
}

/// A black requirement anywhere in `pyproject.toml`: a string of an array (the project's
/// dependencies, optional dependencies, dependency groups, uv's and pdm's dev dependencies),
/// or poetry's `black = "^24.1"` / `black = { version = "…" }`.
fn pyproject_pin(pyproject: &toml::Table) -> Option<Pin> {
    fn walk(value: &toml::Value) -> Option<Pin> {
        match value {
            toml::Value::Array(items) => items.iter().find_map(|v| match v {
                toml::Value::String(s) => requirement(s),
                other => walk(other),
            }),
            toml::Value::Table(table) => table.iter().find_map(|(k, v)| {
                let version = match (k.as_str(), v) {
                    ("black", toml::Value::String(s)) => Some(s.as_str()),
                    ("black", toml::Value::Table(t)) => t.get("version").and_then(|v| v.as_str()),
                    _ => None,
                };
                version.map(poetry).or_else(|| walk(v))
            }),
            _ => None,
        }
    }
    // `[tool.black]` itself holds no requirement.
    pyproject
        .iter()
        .filter(|(k, _)| *k != "tool")
        .find_map(|(_, v)| walk(v))
        .or_else(|| {
            let tool = pyproject.get("tool")?.as_table()?;
            tool.iter()
                .filter(|(k, _)| *k != "black")
                .find_map(|(_, v)| walk(v))
        })
}

/// Poetry's constraint: `^24.1`, `~24.1`, `24.8.0`, `>=23,<25`, `*`.
fn poetry(version: &str) -> Pin {
    let version = version.trim();
    if version.starts_with(['^', '~']) || version.starts_with(|c: char| c.is_ascii_digit()) {
        return Pin {
            major: major_of(version),
        };
    }
    requirement(&format!("black{version}")).unwrap_or(Pin { major: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_give_the_newest_major_they_allow() {
        let major = |line: &str| requirement(line).map(|p| p.major);
        assert_eq!(major("black==24.8.0"), Some(Some(24)));
        assert_eq!(major("black[jupyter]~=24.1  # formatter"), Some(Some(24)));
        assert_eq!(major("black>=23,<25"), Some(Some(24)));
        assert_eq!(major("black<25.1"), Some(Some(25)));
        assert_eq!(major("black>=22.3"), Some(None));
        assert_eq!(major("black"), Some(None));
        assert_eq!(major("black ; python_version >= '3.9'"), Some(None));
        assert_eq!(major("blacken-docs==1.16"), None);
        assert_eq!(major("flake8==7.0"), None);
        assert_eq!(poetry("^24.1"), Pin { major: Some(24) });
        assert_eq!(poetry("*"), Pin { major: None });
        assert_eq!(poetry(">=23,<26"), Pin { major: Some(25) });
    }

    #[test]
    fn the_hook_rev_and_the_lock_file_name_the_release() {
        let hooks = "repos:\n  - repo: https://github.com/pycqa/isort\n    rev: 5.13.2\n    hooks:\n      - id: isort\n  - repo: https://github.com/psf/black-pre-commit-mirror\n    rev: \"24.8.0\"\n    hooks:\n      - id: black\n";
        assert_eq!(pre_commit_rev(hooks), Some(24));
        assert_eq!(
            pre_commit_rev("repos:\n- repo: https://github.com/psf/black/\n  rev: 26.1.0\n"),
            Some(26)
        );
        assert_eq!(
            pre_commit_rev("repos:\n- repo: local\n  hooks:\n  - id: black\n"),
            None
        );
        let lock = "[[package]]\nname = \"attrs\"\nversion = \"23.2.0\"\n\n[[package]]\nname = \"black\"\nversion = \"25.1.0\"\nsource = { registry = \"https://pypi.org/simple\" }\n";
        assert_eq!(locked(lock), Some(25));
        assert_eq!(
            locked("[[package]]\nname = \"blackd\"\nversion = \"1.0\"\n"),
            None
        );
    }

    #[test]
    fn pyproject_requirements_are_found_wherever_they_are_declared() {
        let pin = |text: &str| pyproject_pin(&text.parse().unwrap()).map(|p| p.major);
        assert_eq!(
            pin("[project]\nname = \"x\"\n[dependency-groups]\nlint = [\"ruff\", \"black==24.10.0\"]\n"),
            Some(Some(24))
        );
        assert_eq!(
            pin("[project.optional-dependencies]\ndev = [\"black>=23\"]\n"),
            Some(None)
        );
        assert_eq!(
            pin("[tool.poetry.group.dev.dependencies]\nblack = { version = \"^25.1\" }\n"),
            Some(Some(25))
        );
        assert_eq!(pin("[tool.black]\nline-length = 100\n"), None);
    }
}
