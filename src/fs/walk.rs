//! Finding the tree root and the files to process: a parallel walk that honours .gitignore
//! and never follows a symlink, over paths confined to the root.

mod default_exclude;
mod ignores;
mod root;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ignore::{WalkBuilder, WalkState};

use crate::fs::write::temp;
use crate::model::lint::PathGlobs;
pub use crate::model::outcome::escape;
use crate::model::outcome::Language;

pub use crate::base::paths::{absolute, normalize, relative_path, relative_to, slash_joined};
pub use root::{find_root, RootError};

/// One path the walk produced.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The path as reached from the user's argument (what messages show).
    pub path: PathBuf,
    /// Relative to the tree root, `/`-separated, bytes that are not UTF-8 escaped as `\xNN`
    /// (what JSON and phases use).
    pub rel: String,
    /// Relative to the tree root, exact bytes (what reads, writes and backups use).
    pub rel_path: PathBuf,
    pub kind: EntryKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    Source(Language),
    /// A symbolic link: never followed, never rewritten.
    Symlink,
    /// A file named on the command line that is not Python or Rust.
    Unsupported,
    /// A FIFO, socket or device with a source file's name: skipped, never opened.
    Special(String),
    /// The walk could not read this path.
    Error(String),
}

/// What a walk found: the files, and the temp files killed runs left behind.
#[derive(Debug, Default)]
pub struct Walk {
    pub entries: Vec<Entry>,
    /// Root-relative paths of `.gpu-homogenize-PID-N.tmp` files.
    pub temp_files: Vec<PathBuf>,
    /// Root-relative paths of the regular files that may hold commands launching Python
    /// programs (shell scripts, Makefiles, Dockerfiles, Procfiles, compose files, READMEs),
    /// and the CI workflows of the root (`.github/workflows/*.yml`, `.gitlab-ci.yml`).
    pub launch_files: Vec<PathBuf>,
    /// The walk ran out of descriptors or memory: the run's error, not a gap in the tree.
    pub exhausted: Option<crate::fs::resources::Exhausted>,
}

pub fn language_of(path: &Path) -> Option<Language> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("py") => Some(Language::Python),
        Some("rs") => Some(Language::Rust),
        _ => None,
    }
}

/// Every Python and Rust file under `paths`, sorted by path, each once. Files named
/// explicitly are always listed (an unsupported one as such); directories are walked;
/// `exclude` (a backup dir inside the tree) is never entered.
pub fn walk(paths: &[PathBuf], root: &Path, threads: usize) -> Vec<Entry> {
    walk_tree(paths, root, threads, &[], PathGlobs::default(), false).entries
}

/// A named path is excluded when it or one of its directories matches, or has a name of the
/// default excludes, as a walk would have pruned it.
fn excluded_by_name(globs: &PathGlobs, rel: &str) -> bool {
    let mut prefix = rel;
    loop {
        let name = prefix.rsplit('/').next().unwrap_or(prefix);
        if default_exclude::excluded(std::ffi::OsStr::new(name))
            || !globs.is_empty() && globs.is_match(prefix)
        {
            return true;
        }
        match prefix.rfind('/') {
            Some(i) => prefix = &prefix[..i],
            None => return false,
        }
    }
}

/// The walk; `globs` (the config's `exclude` and `extend-exclude`) prunes what it finds below
/// the given paths, and a path given by name only with `force_exclude` (as ruff).
pub fn walk_tree(
    paths: &[PathBuf],
    root: &Path,
    threads: usize,
    exclude: &[PathBuf],
    globs: PathGlobs,
    force_exclude: bool,
) -> Walk {
    let found = Mutex::new(Walk::default());
    let mut dirs = Vec::new();
    for path in paths {
        if force_exclude && excluded_by_name(&globs, &relative_to(root, path)) {
            continue;
        }
        let kind = match root::confined(root, path) {
            Err(message) => Some(EntryKind::Error(message)),
            Ok(meta) if meta.file_type().is_symlink() => Some(EntryKind::Symlink),
            Ok(meta) if meta.is_dir() => {
                dirs.push(path.clone());
                None
            }
            Ok(meta) if !meta.is_file() => {
                Some(language_of(path).map_or(EntryKind::Unsupported, |_| {
                    let what = crate::fs::confine::kind_of(&meta);
                    EntryKind::Error(format!("cannot read: not a regular file ({what})"))
                }))
            }
            Ok(_) => Some(language_of(path).map_or(EntryKind::Unsupported, EntryKind::Source)),
        };
        if let Some(kind) = kind {
            found.lock().unwrap().entries.push(entry(root, path, kind));
        }
    }
    let exclude: Vec<PathBuf> = exclude.iter().map(|p| absolute(p)).collect();
    if let Some((first, rest)) = dirs.split_first() {
        let mut builder = WalkBuilder::new(first);
        for dir in rest {
            builder.add(dir);
        }
        // Hidden files are walked and the default excludes left out by hand
        // (`default_exclude`), as ruff; ignore files are read by `ignores` (confined), never
        // by the crate.
        builder
            .standard_filters(false)
            .follow_links(false)
            .threads(threads.max(1));
        let root_abs = root.to_path_buf();
        let ignores = ignores::Ignores::new();
        let cwd = std::env::current_dir().unwrap_or_default();
        builder.filter_entry(move |e| {
            let name = e.file_name();
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            if e.depth() > 0 && ignores.ignored(&normalize(&cwd.join(e.path())), is_dir) {
                return false;
            }
            if e.depth() > 0
                && !globs.is_empty()
                && globs.is_match(&relative_to(&root_abs, e.path()))
            {
                return false;
            }
            if e.depth() > 0 && default_exclude::excluded(name) {
                return false;
            }
            // A backup directory (marked when `fix --backup-dir` made it) is never walked: a
            // later plain `fix` must not rewrite the originals it keeps.
            if is_dir && e.depth() > 0 && e.path().join(crate::fs::write::BACKUP_MARKER).is_file() {
                return false;
            }
            !(is_dir && !exclude.is_empty() && exclude.contains(&absolute(e.path())))
        });
        builder.build_parallel().run(|| {
            let found = &found;
            Box::new(move |result| {
                walk_entry(root, result, found);
                WalkState::Continue
            })
        });
    }
    let mut walk = found.into_inner().unwrap_or_default();
    walk.entries.sort_by(|a, b| a.path.cmp(&b.path));
    let mut seen = HashSet::new();
    // `a.py ./a.py /abs/a.py` are one file.
    walk.entries.retain(|e| seen.insert(e.rel_path.clone()));
    walk.temp_files.sort();
    walk.launch_files.extend(ci_files(root));
    walk.launch_files.sort();
    walk.launch_files.dedup();
    walk
}

/// A name that may hold commands that start programs: `*.sh`, `Makefile`, `Dockerfile`,
/// `Procfile`, a compose file, a README.
pub fn is_launch_file(name: &std::ffi::OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let lower = name.to_ascii_lowercase();
    [".sh", ".bash", ".zsh", ".mk", ".dockerfile"]
        .iter()
        .any(|e| lower.ends_with(e))
        || matches!(
            name,
            "Makefile" | "makefile" | "GNUmakefile" | "Procfile" | "Justfile" | "justfile"
        )
        || lower.starts_with("dockerfile")
        || lower.starts_with("containerfile")
        || (lower.starts_with("docker-compose") || lower.starts_with("compose"))
            && (lower.ends_with(".yml") || lower.ends_with(".yaml"))
        || lower.starts_with("readme")
            && [".md", ".rst", ".txt", "readme"]
                .iter()
                .any(|e| lower.ends_with(e))
}

/// The metadata of a package installed in the tree (a vendored `site-packages`, an unpacked
/// wheel): `NAME-VERSION.dist-info/` with its `RECORD`, `top_level.txt` and `entry_points.txt`,
/// which say which packages are installed there and their console scripts. Read with the
/// launch files (and watched like them by the cache).
pub fn is_installed_metadata(path: &Path) -> bool {
    let in_dist_info = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".dist-info"));
    in_dist_info
        && path
            .file_name()
            .is_some_and(|n| n == "RECORD" || n == "top_level.txt" || n == "entry_points.txt")
}

/// The CI workflows of the root, whose names are no launch file's (and a `--force-exclude` or an
/// ignore file may keep the walk out of `.github/`):
/// `.github/workflows/*.yml` listed through the root's handle, and `.gitlab-ci.yml`. Each is
/// read later through the confined reader (a link is refused there).
fn ci_files(root: &Path) -> Vec<PathBuf> {
    let Ok(dir) = crate::fs::confine::RootDir::open(root) else {
        return Vec::new();
    };
    let workflows = Path::new(".github/workflows");
    let mut out: Vec<PathBuf> = dir
        .list(workflows)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| {
            let n = n.to_string_lossy();
            n.ends_with(".yml") || n.ends_with(".yaml")
        })
        .map(|n| workflows.join(n))
        .collect();
    if std::fs::symlink_metadata(root.join(".gitlab-ci.yml")).is_ok() {
        out.push(PathBuf::from(".gitlab-ci.yml"));
    }
    out
}

fn walk_entry(root: &Path, result: Result<ignore::DirEntry, ignore::Error>, found: &Mutex<Walk>) {
    let dirent = match result {
        Ok(d) => d,
        Err(err) => {
            if let Some(what) = err.io_error().and_then(crate::fs::resources::Exhausted::of) {
                found.lock().unwrap().exhausted.get_or_insert(what);
                return;
            }
            let path = error_path(&err).unwrap_or_else(|| PathBuf::from("."));
            let e = entry(root, &path, EntryKind::Error(err.to_string()));
            found.lock().unwrap().entries.push(e);
            return;
        }
    };
    let path = dirent.path();
    let Some(file_type) = dirent.file_type() else {
        return;
    };
    if file_type.is_file() && temp::owner_pid(dirent.file_name()).is_some() {
        found
            .lock()
            .unwrap()
            .temp_files
            .push(relative_path(root, path));
        return;
    }
    let Some(language) = language_of(path) else {
        if file_type.is_file()
            && (is_launch_file(dirent.file_name()) || is_installed_metadata(path))
        {
            found
                .lock()
                .unwrap()
                .launch_files
                .push(relative_path(root, path));
        }
        return;
    };
    let kind = if file_type.is_symlink() {
        EntryKind::Symlink
    } else if file_type.is_file() {
        EntryKind::Source(language)
    } else if file_type.is_dir() {
        return;
    } else {
        let what = dirent
            .metadata()
            .map_or("a special file", |m| crate::fs::confine::kind_of(&m));
        EntryKind::Special(format!("{what}, not a regular file (never opened)"))
    };
    found.lock().unwrap().entries.push(entry(root, path, kind));
}

fn entry(root: &Path, path: &Path, kind: EntryKind) -> Entry {
    let rel_path = relative_path(root, path);
    Entry {
        path: path.to_path_buf(),
        rel: slash_joined(&rel_path),
        rel_path,
        kind,
    }
}

/// The path an error of the walk is about, through the depth and line wrappers `ignore` puts
/// around it: a walk error names its directory, never the current one.
fn error_path(err: &ignore::Error) -> Option<PathBuf> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Partial(errs) => errs.iter().find_map(error_path),
        _ => None,
    }
}

#[cfg(test)]
mod error_path_tests {
    use super::*;

    #[test]
    fn a_walk_error_names_its_directory_through_the_wrappers() {
        let io = ignore::Error::Io(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        let with_path = ignore::Error::WithPath {
            path: PathBuf::from("/t/sub"),
            err: Box::new(io),
        };
        let nested = ignore::Error::WithDepth {
            depth: 1,
            err: Box::new(with_path),
        };
        assert_eq!(error_path(&nested), Some(PathBuf::from("/t/sub")));
        let bare = ignore::Error::Io(std::io::Error::from(std::io::ErrorKind::Other));
        assert_eq!(error_path(&bare), None);
    }
}
