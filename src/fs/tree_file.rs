//! The tree's own files that are not sources: configs (ours, ruff's, isort's, black's,
//! flake8's, `.editorconfig`, ignore files), Cargo and Python packaging files, templates, the
//! journal, the cache and the baseline. A tree may come from a stranger (CI runs on pull
//! requests), so each is read through this one reader: never through a symbolic link, never
//! from outside the root, regular files only (checked on the opened handle, opened without
//! blocking, so a FIFO cannot hang the run), and never more than a documented number of bytes
//! (a link to `/dev/zero` or a huge file is an error, not an allocation). Its errors name the
//! path and never quote the content.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::fs::confine::RootDir;

/// The cap on a settings file (ours, ruff's, `pyproject.toml`, `Cargo.toml`, `setup.cfg`,
/// `.editorconfig`, ignore files) and on a header template. The largest real `pyproject.toml`
/// seen is about 60 KiB.
pub const SETTINGS_LIMIT: u64 = 4 << 20;
/// The cap on the journal: one line per file per run, years of runs of a large tree.
pub const JOURNAL_LIMIT: u64 = 1 << 30;
/// The cap on one file of the content cache (facts and verdicts of every file of the tree).
pub const CACHE_LIMIT: u64 = 1 << 30;
/// The cap on one run's temp registry (a line per temp file it made, ~100 bytes).
pub const REGISTRY_LIMIT: u64 = 256 << 20;
/// The cap on a shard's JSON or SARIF document (`report --merge`).
pub const DOCUMENT_LIMIT: u64 = 1 << 30;
/// The cap on a baseline (one line per accepted finding).
pub const BASELINE_LIMIT: u64 = 256 << 20;

/// Why a file of the tree was not read. Its message names the path (escaped) and the reason,
/// never the content.
#[derive(Debug)]
pub struct TreeFileError {
    pub path: PathBuf,
    pub why: String,
}

impl fmt::Display for TreeFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}",
            crate::model::outcome::display_path(&self.path),
            self.why
        )
    }
}

impl std::error::Error for TreeFileError {}

/// The bytes of `rel` under `root`, or `None` when there is no such file. A link (anywhere
/// in `rel`), a name leaving the root, a special file or one over `limit` is an error.
pub fn read(root: &Path, rel: &Path, limit: u64) -> Result<Option<Vec<u8>>, TreeFileError> {
    let fail = |e: std::io::Error| TreeFileError {
        path: root.join(rel),
        why: e.to_string(),
    };
    let file = match RootDir::open(root).and_then(|r| r.open_regular(rel)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(fail(e)),
    };
    read_capped(file, limit).map(Some).map_err(fail)
}

/// [`read`] as UTF-8 text (a BOM dropped); bytes that are not UTF-8 are an error naming the
/// offset, not a lossy copy.
pub fn read_text(root: &Path, rel: &Path, limit: u64) -> Result<Option<String>, TreeFileError> {
    let Some(bytes) = read(root, rel, limit)? else {
        return Ok(None);
    };
    text(bytes).map(Some).map_err(|why| TreeFileError {
        path: root.join(rel),
        why,
    })
}

/// `rel` with its `.` and `..` resolved by name, when it stays below the root (a `..` past
/// the root is `None`, never clamped to the root).
pub fn below_root(rel: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in rel.components() {
        match c {
            std::path::Component::Normal(name) => out.push(name),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

/// A file the user named on the command line (`--config`, `report --journal`): it may lie
/// outside the tree and be reached through links the user chose, but it must still be a
/// regular file (opened without blocking) within `limit`.
pub fn read_named(path: &Path, limit: u64) -> Result<String, TreeFileError> {
    let fail = |e: std::io::Error| TreeFileError {
        path: path.to_path_buf(),
        why: e.to_string(),
    };
    let file = crate::fs::platform::open_named(path).map_err(fail)?;
    let meta = file.metadata().map_err(fail)?;
    if !meta.is_file() {
        return Err(fail(crate::fs::confine::invalid(&format!(
            "not a regular file ({})",
            crate::fs::confine::kind_of(&meta)
        ))));
    }
    let bytes = read_capped(file, limit).map_err(fail)?;
    text(bytes).map_err(|why| TreeFileError {
        path: path.to_path_buf(),
        why,
    })
}

/// At most `limit` bytes of `file`, refused (not truncated) when it holds more; the buffer is
/// reserved fallibly, so a file the memory cannot hold is an error, never an abort.
fn read_capped(file: std::fs::File, limit: u64) -> std::io::Result<Vec<u8>> {
    let size = file.metadata()?.len();
    if size > limit {
        return Err(too_large(limit));
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(size as usize + 1)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::OutOfMemory, "out of memory"))?;
    // A file that grows while read (or reports no size) is still cut at the limit.
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

fn too_large(limit: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::FileTooLarge,
        format!(
            "larger than {} MiB, the limit for this file (never read)",
            limit >> 20
        ),
    )
}

fn text(mut bytes: Vec<u8>) -> Result<String, String> {
    if bytes.starts_with(b"\xef\xbb\xbf") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// A file the tool reads for settings it can do without (a linter's config, a manifest of
/// another package): read when it can be, else `None` with one warning on stderr naming it
/// and why, so a refused link or FIFO is seen, never silently taken for "no settings".
pub fn read_optional(root: &Path, rel: &Path, what: &str) -> Option<String> {
    match read_text(root, rel, SETTINGS_LIMIT) {
        Ok(text) => text,
        Err(e) => {
            warn_once(&format!("{e}; {what} not read"));
            None
        }
    }
}

/// Print `message` as a warning, once per run.
pub fn warn_once(message: &str) {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if seen
        .get_or_insert_with(HashSet::new)
        .insert(message.to_string())
    {
        crate::base::output::eprint(&format!("warning: {message}\n"));
    }
}

// Its one case makes links and FIFOs through unix calls.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let c = crate::fs::platform::cstring(path.as_os_str()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    // Unix only: links, FIFOs, modes or signals made through unix calls.
    #[cfg(unix)]
    #[test]
    fn refuses_links_special_files_and_what_is_too_large() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "TOKEN=hunter2\n").unwrap();
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::write(r.join("ok.toml"), "\u{feff}a = 1\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), r.join("link.toml")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", r.join("zero.toml")).unwrap();
        std::os::unix::fs::symlink(outside.path(), r.join("dir")).unwrap();
        mkfifo(&r.join("fifo.toml"));
        std::fs::write(r.join("big.toml"), vec![b'#'; 2048]).unwrap();
        std::fs::write(r.join("latin.toml"), b"a = \"\xe9\"\n").unwrap();
        assert_eq!(
            read_text(r, Path::new("ok.toml"), 100).unwrap().unwrap(),
            "a = 1\n"
        );
        assert!(read_text(r, Path::new("none.toml"), 100).unwrap().is_none());
        for (name, why) in [
            ("link.toml", "symbolic link"),
            ("zero.toml", "symbolic link"),
            ("dir/secret", "symbolic link"),
            ("../secret", "not below the tree root"),
            ("fifo.toml", "FIFO"),
            ("big.toml", "larger than"),
            ("latin.toml", "offset 5"),
        ] {
            let err = read_text(r, Path::new(name), 1024)
                .expect_err(name)
                .to_string();
            assert!(err.contains(why), "{name}: {err}");
            assert!(!err.contains("hunter2"), "{name}: {err}");
        }
        let err = read_named(&r.join("fifo.toml"), 1024)
            .unwrap_err()
            .to_string();
        assert!(err.contains("FIFO"), "{err}");
        assert!(read_named(Path::new("/dev/zero"), 1024).is_err());
    }
}
