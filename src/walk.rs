//! Finding the tree root and the files to process: a parallel walk that honours .gitignore
//! and never follows a symlink.

use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use ignore::{WalkBuilder, WalkState};

use crate::outcome::Language;
use crate::policy::CONFIG_FILE;

/// One path the walk produced.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The path as reached from the user's argument (what messages show).
    pub path: PathBuf,
    /// Relative to the tree root, `/`-separated (what JSON and phases use).
    pub rel: String,
    pub kind: EntryKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    Source(Language),
    /// A symbolic link: never followed, never rewritten.
    Symlink,
    /// A file named on the command line that is not Python or Rust.
    Unsupported,
    /// The walk could not read this path.
    Error(String),
}

pub fn language_of(path: &Path) -> Option<Language> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("py") => Some(Language::Python),
        Some("rs") => Some(Language::Rust),
        _ => None,
    }
}

/// The tree root: the nearest ancestor of the paths holding `gpu-homogenize.toml`, else their
/// common ancestor. Returned absolute.
pub fn find_root(paths: &[PathBuf]) -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let absolute: Vec<PathBuf> = paths.iter().map(|p| normalize(&cwd.join(p))).collect();
    let dirs: Vec<PathBuf> = absolute
        .iter()
        .map(|p| {
            if p.is_dir() {
                p.clone()
            } else {
                p.parent().map_or_else(|| p.clone(), Path::to_path_buf)
            }
        })
        .collect();
    let common = dirs
        .iter()
        .skip(1)
        .fold(dirs.first().cloned().unwrap_or(cwd.clone()), |acc, d| {
            common_ancestor(&acc, d)
        });
    common
        .ancestors()
        .find(|dir| dir.join(CONFIG_FILE).is_file())
        .map(Path::to_path_buf)
        .unwrap_or(common)
}

fn common_ancestor(a: &Path, b: &Path) -> PathBuf {
    a.components()
        .zip(b.components())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

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

/// `path` relative to `root`, with `/` separators; the path itself when outside the root.
pub fn relative_to(root: &Path, path: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    let abs = normalize(&cwd.join(path));
    let rel = abs.strip_prefix(root).unwrap_or(&abs);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// Every Python and Rust file under `paths`, sorted by path. Files named explicitly are
/// always listed (an unsupported one as such); directories are walked.
pub fn walk(paths: &[PathBuf], root: &Path, threads: usize) -> Vec<Entry> {
    let found = Mutex::new(Vec::new());
    let mut dirs = Vec::new();
    for path in paths {
        match std::fs::symlink_metadata(path) {
            Err(e) => {
                found
                    .lock()
                    .unwrap()
                    .push(entry(root, path, EntryKind::Error(e.to_string())))
            }
            Ok(meta) if meta.file_type().is_symlink() => {
                found
                    .lock()
                    .unwrap()
                    .push(entry(root, path, EntryKind::Symlink))
            }
            Ok(meta) if meta.is_dir() => dirs.push(path.clone()),
            Ok(_) => {
                let kind = language_of(path).map_or(EntryKind::Unsupported, EntryKind::Source);
                found.lock().unwrap().push(entry(root, path, kind));
            }
        }
    }
    if let Some((first, rest)) = dirs.split_first() {
        let mut builder = WalkBuilder::new(first);
        for dir in rest {
            builder.add(dir);
        }
        builder.follow_links(false).threads(threads.max(1));
        builder.filter_entry(|e| e.file_name() != ".gpu-homogenize");
        builder.build_parallel().run(|| {
            let found = &found;
            Box::new(move |result| {
                if let Some(e) = walk_entry(root, result) {
                    found.lock().unwrap().push(e);
                }
                WalkState::Continue
            })
        });
    }
    let mut entries = found.into_inner().unwrap_or_default();
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    entries.dedup_by(|a, b| a.path == b.path);
    entries
}

fn walk_entry(root: &Path, result: Result<ignore::DirEntry, ignore::Error>) -> Option<Entry> {
    let dirent = match result {
        Ok(d) => d,
        Err(err) => {
            let path = match &err {
                ignore::Error::WithPath { path, .. } => path.clone(),
                _ => PathBuf::from("."),
            };
            return Some(entry(root, &path, EntryKind::Error(err.to_string())));
        }
    };
    let path = dirent.path();
    let file_type = dirent.file_type()?;
    let language = language_of(path)?;
    if file_type.is_symlink() {
        return Some(entry(root, path, EntryKind::Symlink));
    }
    file_type
        .is_file()
        .then(|| entry(root, path, EntryKind::Source(language)))
}

fn entry(root: &Path, path: &Path, kind: EntryKind) -> Entry {
    Entry {
        path: path.to_path_buf(),
        rel: relative_to(root, path),
        kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_ancestor_of_siblings() {
        assert_eq!(
            common_ancestor(Path::new("/a/b/c"), Path::new("/a/b/d/e")),
            PathBuf::from("/a/b")
        );
    }

    #[test]
    fn normalize_drops_dots() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
