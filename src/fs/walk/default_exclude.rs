//! The directories no walk enters unless named: ruff's default `exclude` (its hidden entries:
//! version control, environments, tools' caches) and what this tool writes. Any other hidden
//! file or directory is walked, as ruff does (a wheel's `.mim/tools/train.py` is a program).

use std::ffi::OsStr;

use crate::fs::write::temp;

/// The hidden names of ruff's default `exclude`. Its other entries (`venv`, `dist`, `_build`,
/// `site-packages`, `node_modules`, `buck-out`, `__pypackages__`) stay walked, as they always
/// were here: a package installed in the tree is judged through its `*.dist-info`.
pub const DEFAULT_EXCLUDE: &[&str] = &[
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    ".vscode",
];

/// The prefix of every name this tool writes in the tree: its state (`.gpu-homogenize/`: journal,
/// cache, kept-aside versions), a backup dir's marker, its temp files.
const OWN_PREFIX: &str = ".gpu-homogenize";

/// Whether the walk leaves the file or directory `name` out: a name of [`DEFAULT_EXCLUDE`], or
/// one of this tool's own but a temp file (which the walk lists for the cleanup).
pub fn excluded(name: &OsStr) -> bool {
    let bytes = name.as_encoded_bytes();
    DEFAULT_EXCLUDE.iter().any(|d| d.as_bytes() == bytes)
        || bytes.starts_with(OWN_PREFIX.as_bytes()) && temp::owner_pid(name).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_names_are_walked_but_the_default_list_and_our_own() {
        for name in [".mim", ".github", ".config", ".hidden.py", ".gitignore"] {
            assert!(!excluded(OsStr::new(name)), "{name}");
        }
        for name in [
            ".git",
            ".venv",
            ".tox",
            ".gpu-homogenize",
            ".gpu-homogenize-backups",
        ] {
            assert!(excluded(OsStr::new(name)), "{name}");
        }
        let temp = format!("{}{}-3{}", temp::PREFIX, std::process::id(), temp::SUFFIX);
        assert!(!excluded(OsStr::new(&temp)), "{temp}");
    }

    #[test]
    fn the_docs_name_every_default_exclude() {
        let docs = include_str!("../../../docs/cli.md");
        for name in DEFAULT_EXCLUDE {
            assert!(
                docs.contains(&format!("`{name}`")),
                "docs/cli.md lacks {name}"
            );
        }
    }
}
