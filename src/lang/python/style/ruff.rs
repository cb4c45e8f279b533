//! ruff's settings for a directory, found as ruff finds them: the nearest `.ruff.toml`,
//! `ruff.toml` or `pyproject.toml` with a `[tool.ruff]` table (in that order within a
//! directory), its `extend = "…"` chain followed (paths relative to the file that names them),
//! each file's options over those it extends.

use std::path::{Path, PathBuf};

use toml::{Table, Value};

/// ruff's settings at `dir`, looking up to `root` (inclusive); `None` when no config is there.
#[cfg(test)]
pub fn settings(root: &Path, dir: &Path) -> Option<Table> {
    settings_with(root, dir, &mut |d| own_config(root, d))
}

/// ruff's settings at `dir`, looking up to `root` (inclusive), each directory's own config as
/// `own` gives it ([`own_config`]: a caller asking for many directories reads each one's once);
/// `None` when no config is there.
pub fn settings_with(
    root: &Path,
    dir: &Path,
    own: &mut dyn FnMut(&Path) -> Option<Table>,
) -> Option<Table> {
    let mut at = Some(dir);
    while let Some(d) = at {
        if let Some(table) = own(d) {
            return Some(table);
        }
        if d == root || !d.starts_with(root) {
            return None;
        }
        at = d.parent();
    }
    None
}

/// The config file of `dir` itself, extended.
pub fn own_config(root: &Path, dir: &Path) -> Option<Table> {
    [".ruff.toml", "ruff.toml", "pyproject.toml"]
        .iter()
        .find_map(|name| load(root, &dir.join(name), 0))
}

/// The ruff table of `path` (a `ruff.toml`, or the `[tool.ruff]` of a `pyproject.toml`) over
/// the settings it extends. Every file is read inside `root` (an `extend` leaving the tree is
/// not followed: the tree's settings come from the tree).
fn load(root: &Path, path: &Path, depth: usize) -> Option<Table> {
    let path = &crate::base::paths::absolute(path);
    let Ok(rel) = path.strip_prefix(crate::base::paths::absolute(root)) else {
        crate::fs::tree_file::warn_once(&format!(
            "{}: outside the tree root (never read); ruff's settings not read",
            crate::model::outcome::display_path(path)
        ));
        return None;
    };
    let text = crate::fs::tree_file::read_optional(root, rel, "ruff's settings")?;
    let table: Table = text.parse().ok()?;
    let mut own = if path.file_name().is_some_and(|n| n == "pyproject.toml") {
        table.get("tool")?.get("ruff")?.as_table()?.clone()
    } else {
        table
    };
    // A cycle or an unreadable parent leaves the file's own settings.
    if let Some(parent) = own
        .remove("extend")
        .and_then(|v| v.as_str().map(PathBuf::from))
    {
        let base = path.parent().unwrap_or(Path::new("."));
        if depth < 16 {
            if let Some(mut merged) = load(root, &base.join(expand_home(&parent)), depth + 1) {
                overlay(&mut merged, own);
                return Some(merged);
            }
        }
    }
    Some(own)
}

fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    }
}

/// `child`'s options over `base`'s, table by table (an array or a value replaces).
fn overlay(base: &mut Table, child: Table) {
    for (key, value) in child {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(b)), Value::Table(c)) => overlay(b, c),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// A lint option, under `lint` or at the top level (ruff's older layout).
pub fn lint<'a>(settings: &'a Table, path: &[&str]) -> Option<&'a Value> {
    let under = |start: Option<&'a Value>| path.iter().try_fold(start?, |v, key| v.get(key));
    under(settings.get("lint")).or_else(|| {
        let (first, rest) = path.split_first()?;
        rest.iter()
            .try_fold(settings.get(*first)?, |v, key| v.get(key))
    })
}

/// A top-level or nested option.
pub fn get<'a>(settings: &'a Table, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(settings.get(*first)?, |v, key| v.get(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_config_wins_and_extends_its_base() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("base.toml"),
            "line-length = 100\n[format]\nquote-style = \"single\"\n[lint.isort]\nforce-sort-within-sections = true\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("app/sub")).unwrap();
        std::fs::write(
            root.join("app/pyproject.toml"),
            "[tool.ruff]\nextend = \"../base.toml\"\nline-length = 120\n",
        )
        .unwrap();
        std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
        let s = settings(root, &root.join("app/sub")).unwrap();
        assert_eq!(get(&s, &["line-length"]).unwrap().as_integer(), Some(120));
        assert_eq!(
            get(&s, &["format", "quote-style"]).unwrap().as_str(),
            Some("single")
        );
        assert_eq!(
            lint(&s, &["isort", "force-sort-within-sections"])
                .unwrap()
                .as_bool(),
            Some(true)
        );
        // A pyproject.toml without `[tool.ruff]` is not a ruff config.
        assert!(settings(root, root).is_none());
    }

    #[test]
    fn a_cycle_of_extends_ends() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ruff.toml"), "extend = \"ruff.toml\"\n").unwrap();
        assert!(settings(dir.path(), dir.path()).is_some());
    }
}
