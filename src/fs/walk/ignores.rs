//! The walk's ignore files (`.ignore`, `.gitignore`, `.git/info/exclude`, git's global
//! excludes), matched as the `ignore` crate matches them, but read through the confined reader
//! (`tree_file`): the crate opens them with `File::open`, which follows a committed link to
//! `/dev/zero` until memory runs out and blocks for ever on a FIFO. Git itself never follows a
//! linked `.gitignore` either; such a file is named in a warning and not read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

/// What one directory contributes.
struct DirRules {
    dir: PathBuf,
    ignore: Gitignore,
    git_ignore: Gitignore,
    git_exclude: Gitignore,
    has_git: bool,
}

impl DirRules {
    fn is_empty(&self) -> bool {
        self.ignore.is_empty()
            && self.git_ignore.is_empty()
            && self.git_exclude.is_empty()
            && !self.has_git
    }
}

/// The rules of a directory and of its ancestors that have any, nearest first.
type Chain = Arc<Vec<Arc<DirRules>>>;

/// The ignore rules of every directory the walk enters, read once each.
pub struct Ignores {
    chains: RwLock<HashMap<PathBuf, Chain>>,
    global: Gitignore,
}

impl Ignores {
    pub fn new() -> Ignores {
        Ignores {
            chains: RwLock::default(),
            // The user's own settings (`core.excludesFile`), outside any tree a stranger writes.
            global: Gitignore::global().0,
        }
    }

    /// Whether `path` (absolute, normalized) is ignored by the rules of its directories, with
    /// the `ignore` crate's precedence: `.ignore` over `.gitignore` over `.git/info/exclude`
    /// over the global excludes, the nearest directory first; git's files count only inside
    /// a repository and stop at its top.
    pub fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        let Some(parent) = path.parent() else {
            return false;
        };
        let chain = self.chain(parent);
        let any_git = chain.iter().any(|d| d.has_git);
        let (mut m_ignore, mut m_gi, mut m_ex) = (Match::None, Match::None, Match::None);
        let mut saw_git = false;
        for rules in chain.iter() {
            if m_ignore.is_none() {
                m_ignore = rules.ignore.matched(path, is_dir);
            }
            if any_git && !saw_git {
                if m_gi.is_none() {
                    m_gi = rules.git_ignore.matched(path, is_dir);
                }
                if m_ex.is_none() {
                    m_ex = rules.git_exclude.matched(path, is_dir);
                }
            }
            saw_git |= rules.has_git;
        }
        let m_global = if any_git {
            self.global.matched(path, is_dir)
        } else {
            Match::None
        };
        m_ignore.or(m_gi).or(m_ex).or(m_global).is_ignore()
    }

    fn chain(&self, dir: &Path) -> Chain {
        if let Some(chain) = self.read_lock().get(dir) {
            return chain.clone();
        }
        let above = match dir.parent() {
            Some(parent) => self.chain(parent),
            None => Arc::new(Vec::new()),
        };
        let own = read_dir_rules(dir);
        let chain = if own.is_empty() {
            above
        } else {
            let mut list = Vec::with_capacity(above.len() + 1);
            list.push(Arc::new(own));
            list.extend(above.iter().cloned());
            Arc::new(list)
        };
        self.chains
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(dir.to_path_buf(), chain.clone());
        chain
    }

    fn read_lock(&self) -> std::sync::RwLockReadGuard<'_, HashMap<PathBuf, Chain>> {
        self.chains.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for Ignores {
    fn default() -> Self {
        Ignores::new()
    }
}

/// The ignore files of `dir`, each read with `dir` as the root (the file itself is never a
/// link, a FIFO or over the settings limit).
fn read_dir_rules(dir: &Path) -> DirRules {
    let git = std::fs::symlink_metadata(dir.join(".git")).ok();
    let has_git = git.is_some();
    // `.git/info/exclude` of a repository's own `.git` directory (never through a link).
    let git_exclude = match git {
        Some(meta) if meta.is_dir() => matcher(dir, &Path::new(".git").join("info/exclude")),
        _ => Gitignore::empty(),
    };
    DirRules {
        dir: dir.to_path_buf(),
        ignore: matcher(dir, Path::new(".ignore")),
        git_ignore: matcher(dir, Path::new(".gitignore")),
        git_exclude,
        has_git,
    }
}

fn matcher(dir: &Path, rel: &Path) -> Gitignore {
    let Some(text) = crate::fs::tree_file::read_optional(dir, rel, "its ignore patterns") else {
        return Gitignore::empty();
    };
    let from = dir.join(rel);
    let mut builder = GitignoreBuilder::new(dir);
    for line in text.lines() {
        // A bad glob is skipped, as the crate skips it.
        let _ = builder.add_line(Some(from.clone()), line);
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

impl std::fmt::Debug for DirRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DirRules({})", self.dir.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_and_repository_bounds_are_the_crates() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        std::fs::create_dir(root.join(".git")).unwrap();
        write(".gitignore", "*.log\nbuild/\n!keep.log\n");
        write("sub/.gitignore", "!b.log\n");
        write("sub/.ignore", "x.py\n");
        write(".git/info/exclude", "secret.py\n");
        let ig = Ignores::new();
        let at = |rel: &str, is_dir: bool| ig.ignored(&root.join(rel), is_dir);
        assert!(at("a.log", false));
        assert!(!at("keep.log", false));
        assert!(at("build", true));
        assert!(!at("build", false));
        assert!(!at("sub/b.log", false));
        assert!(at("sub/c.log", false));
        assert!(at("sub/x.py", false));
        assert!(!at("x.py", false));
        assert!(at("secret.py", false));
        assert!(!at("a.py", false));
    }

    // Unix only: links, FIFOs, modes or signals made through unix calls.
    #[cfg(unix)]
    #[test]
    fn a_linked_or_special_ignore_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join(".gitignore")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let fifo = crate::fs::platform::cstring(root.join("sub/.gitignore").as_os_str()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let ig = Ignores::new();
        assert!(!ig.ignored(&root.join("a.py"), false));
        assert!(!ig.ignored(&root.join("sub/a.py"), false));
    }
}
