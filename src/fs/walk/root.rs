//! The tree root, and keeping the given paths inside it.
//!
//! The root is the directory holding the config (`gpu-homogenize.toml`, or a `pyproject.toml`
//! with `[tool.gpu-homogenize]`), else the repository root (`.git`), else the one given
//! project that holds every given path (the nearest directory with a `pyproject.toml`,
//! `ruff.toml`, `.ruff.toml`, `setup.py` or `setup.cfg`, as ruff finds its project; for a
//! `Cargo.toml`, its workspace's root), else the one given directory that holds every given
//! path, else the directory that holds them all when it lies in the working directory
//! (`scan a/x.py b/y.py` from the tree's top, as ruff takes it). A file named alone keeps its
//! project: `scan pkg/tools/run.py` judges it with the imports of its tree.
//! Never the common ancestor of paths outside the working directory: two files in unrelated
//! trees would make `/` the root.

use std::fs::Metadata;
use std::path::{Path, PathBuf};

use super::absolute;
use crate::model::policy::CONFIG_FILE;

#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("{a} and {b} are in different trees (roots {ra} and {rb}); run once per tree")]
    Unrelated {
        a: String,
        b: String,
        ra: String,
        rb: String,
    },
    #[error(
        "{a} and {b} have no common tree root: no {CONFIG_FILE}, pyproject.toml with \
         [tool.gpu-homogenize] or .git above them, no project (pyproject.toml, setup.py, \
         setup.cfg, ruff.toml, Cargo.toml) holding both, and no given directory holds both; \
         name the directory that holds them, or run once per tree"
    )]
    NoCommonRoot { a: String, b: String },
}

/// The root for `paths` (see the module docs), absolute.
pub fn find_root(paths: &[PathBuf]) -> Result<PathBuf, RootError> {
    let given: Vec<(PathBuf, PathBuf)> = paths
        .iter()
        .map(|p| {
            let abs = absolute(p);
            let start = if abs.is_dir() {
                abs.clone()
            } else {
                abs.parent().map_or_else(|| abs.clone(), Path::to_path_buf)
            };
            (p.clone(), start)
        })
        .collect();
    let Some((first, first_start)) = given.first() else {
        return Ok(absolute(Path::new(".")));
    };
    let marked: Vec<Option<PathBuf>> = given.iter().map(|(_, s)| marked_root(s)).collect();
    if marked.iter().all(Option::is_none) {
        if let Some(project) = common_project(given.iter().map(|(_, s)| s.as_path())) {
            return Ok(project);
        }
        // The shortest start is the only candidate: a given directory, or the one
        // directory every given file sits in.
        let shortest = given
            .iter()
            .min_by_key(|(_, s)| s.components().count())
            .map_or(first_start, |(_, s)| s);
        if let Some((other, _)) = given.iter().find(|(_, s)| !s.starts_with(shortest)) {
            // Files of several folders of the directory the user works in: the folder that
            // holds them all, never above the working directory.
            let cwd = absolute(Path::new("."));
            let common = shortest
                .ancestors()
                .find(|a| given.iter().all(|(_, s)| s.starts_with(a)));
            if let Some(common) = common.filter(|c| c.starts_with(&cwd)) {
                return Ok(common.to_path_buf());
            }
            let holder = given
                .iter()
                .find(|(_, s)| s == shortest)
                .map_or(first, |(p, _)| p);
            return Err(RootError::NoCommonRoot {
                a: holder.display().to_string(),
                b: other.display().to_string(),
            });
        }
        return Ok(shortest.clone());
    }
    let root = marked[0].clone();
    for ((path, start), m) in given.iter().zip(&marked).skip(1) {
        if *m != root {
            let show = |r: &Option<PathBuf>, s: &Path| match r {
                Some(r) => r.display().to_string(),
                None => format!("none found above {}", s.display()),
            };
            return Err(RootError::Unrelated {
                a: first.display().to_string(),
                b: path.display().to_string(),
                ra: show(&root, first_start),
                rb: show(m, start),
            });
        }
    }
    Ok(root.unwrap_or_else(|| first_start.clone()))
}

/// The nearest ancestor holding the config, else the nearest holding `.git`.
fn marked_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| has_config(d))
        .or_else(|| start.ancestors().find(|d| d.join(".git").exists()))
        .map(Path::to_path_buf)
}

/// Files that mark a directory as a project's top, as the ecosystem's tools find it (ruff:
/// `pyproject.toml`, `ruff.toml`; setuptools: `setup.py`, `setup.cfg`; cargo: `Cargo.toml`).
const PROJECT_MARKERS: [&str; 6] = [
    "pyproject.toml",
    "ruff.toml",
    ".ruff.toml",
    "setup.py",
    "setup.cfg",
    "Cargo.toml",
];

/// The project every start lies in, when they share one (see `project_root`).
fn common_project<'a>(mut starts: impl Iterator<Item = &'a Path>) -> Option<PathBuf> {
    let first = project_root(starts.next()?)?;
    starts
        .all(|s| project_root(s).as_ref() == Some(&first))
        .then_some(first)
}

/// The nearest ancestor with a project marker; when that is a cargo package, the nearest
/// ancestor above it whose `Cargo.toml` declares a `[workspace]` (cargo's own search).
fn project_root(start: &Path) -> Option<PathBuf> {
    let nearest = start
        .ancestors()
        .find(|d| PROJECT_MARKERS.iter().any(|m| is_marker(d, m)))?;
    let only_cargo = PROJECT_MARKERS[..5].iter().all(|m| !is_marker(nearest, m));
    if only_cargo && !declares_workspace(nearest) {
        if let Some(ws) = nearest.ancestors().skip(1).find(|d| declares_workspace(d)) {
            return Some(ws.to_path_buf());
        }
    }
    Some(nearest.to_path_buf())
}

fn is_marker(dir: &Path, name: &str) -> bool {
    std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_file())
}

fn declares_workspace(dir: &Path) -> bool {
    crate::fs::tree_file::read_optional(dir, Path::new("Cargo.toml"), "its manifest")
        .is_some_and(|text| text.lines().any(|l| l.trim() == "[workspace]"))
}

fn has_config(dir: &Path) -> bool {
    if std::fs::symlink_metadata(dir.join(CONFIG_FILE)).is_ok() {
        return true;
    }
    // Each directory read as a root of its own: its `pyproject.toml` itself is never a link.
    crate::fs::tree_file::read_optional(dir, Path::new("pyproject.toml"), "its settings")
        .is_some_and(|text| text.lines().any(|l| l.trim() == "[tool.gpu-homogenize]"))
}

/// The metadata of a given path (not following a final link) when it lies inside `root` as
/// the kernel resolves it; otherwise why not. A path through a symlink or a `..` that the
/// kernel resolves elsewhere is refused, whatever its text says.
pub fn confined(root: &Path, path: &Path) -> Result<Metadata, String> {
    let abs = absolute(path);
    let Ok(rel) = abs.strip_prefix(root) else {
        return Err(format!("outside the tree root {}", root.display()));
    };
    let meta = std::fs::symlink_metadata(&abs).map_err(|e| e.to_string())?;
    let real_root = std::fs::canonicalize(root).map_err(|e| e.to_string())?;
    // The kernel's reading of the path as given (its `..` after a link included), up to
    // the last component, which may itself be a link (then it is reported, not followed).
    let names_a_dir =
        path.as_os_str().as_encoded_bytes().ends_with(b"/") || path.file_name().is_none();
    let (as_given, lexical_dir) = if names_a_dir {
        (path.to_path_buf(), real_root.join(rel))
    } else {
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let lexical = real_root.join(rel);
        (
            parent,
            lexical.parent().map_or(lexical.clone(), Path::to_path_buf),
        )
    };
    let real_dir = std::fs::canonicalize(&as_given).map_err(|e| e.to_string())?;
    if real_dir != lexical_dir {
        return Err(format!(
            "resolves to {} through a symbolic link; never followed (give the path inside the tree)",
            real_dir.display()
        ));
    }
    Ok(meta)
}
