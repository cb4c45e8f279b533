//! Paths by name: `.` and `..` resolved without the file system, relative to the tree root,
//! `/`-joined and escaped for output and phases.

use std::path::{Component, Path, PathBuf};

/// Resolve `.` and `..` without touching the file system (symlinks stay links).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

pub fn absolute(path: &Path) -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_default();
    normalize(&cwd.join(path))
}

/// `path` relative to `root`, exact bytes; the absolute path itself when outside the root.
pub fn relative_path(root: &Path, path: &Path) -> PathBuf {
    let abs = absolute(path);
    abs.strip_prefix(root)
        .map_or(abs.clone(), Path::to_path_buf)
}

/// `path` relative to `root`, with `/` separators; the path itself when outside the root.
pub fn relative_to(root: &Path, path: &Path) -> String {
    slash_joined(&relative_path(root, path))
}

pub fn slash_joined(rel: &Path) -> String {
    let parts: Vec<String> = rel
        .components()
        .map(|c| crate::base::escape::name(c.as_os_str()))
        .collect();
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_drops_dots() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
