//! The cache on disk: one file per set of settings under `.gpu-homogenize/cache/`, a header
//! line then one record per line, and beside it the records' facts (`….facts.jsonl`, one file
//! per line, each valid only for the bytes of its hash: read only when an index is built). Written whole to a temp file and renamed over (concurrent
//! runs: the last rename wins, a reader sees one complete file or the other); a line that does
//! not parse (torn, edited, from another version) is a miss for its file, never an error. Every
//! write goes through [`RootDir`]: no link is followed out of the root.

use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::record::{Facts, FactsRef, Record};
use super::tree::Snapshot;
use crate::fs::confine::{cstring, open_raw, RootDir};

/// Under the tree root.
pub const CACHE_DIR: &str = ".gpu-homogenize/cache";
const FORMAT: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Header {
    format: u32,
    settings: String,
    #[serde(default)]
    snapshot: Option<Snapshot>,
}

/// The file the records of one set of settings live in.
pub fn file_name(settings_hash: u64) -> String {
    format!("v{FORMAT}-{settings_hash:016x}.jsonl")
}

/// The facts file beside the records' file `name`.
fn facts_name(name: &str) -> String {
    format!("{}.facts.jsonl", name.trim_end_matches(".jsonl"))
}

/// The facts stored beside `name`, by file; a line that does not parse is a miss.
pub fn load_facts(root: &Path, name: &str) -> rustc_hash::FxHashMap<String, Facts> {
    let rel = Path::new(CACHE_DIR).join(facts_name(name));
    let Ok(Some(text)) =
        crate::fs::tree_file::read_text(root, &rel, crate::fs::tree_file::CACHE_LIMIT)
    else {
        return Default::default();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Facts>(l).ok())
        .map(|f| (f.rel.clone(), f))
        .collect()
}

/// The records stored for `settings` (empty when there are none or the file is not ours), and
/// the tree's snapshot.
pub fn load(
    root: &Path,
    name: &str,
    settings: &str,
) -> (rustc_hash::FxHashMap<String, Record>, Option<Snapshot>) {
    let rel = Path::new(CACHE_DIR).join(name);
    let Ok(Some(text)) =
        crate::fs::tree_file::read_text(root, &rel, crate::fs::tree_file::CACHE_LIMIT)
    else {
        return (Default::default(), None);
    };
    let mut lines = text.lines();
    let header = lines
        .next()
        .and_then(|l| serde_json::from_str::<Header>(l).ok())
        .filter(|h| h.format == FORMAT && h.settings == settings);
    let Some(header) = header else {
        return (Default::default(), None);
    };
    let records: rustc_hash::FxHashMap<String, Record> = lines
        .filter_map(|l| serde_json::from_str::<Record>(l).ok())
        .map(|r| (r.rel.clone(), r))
        .collect();
    // A record lost (a torn line) is a file the snapshot may not speak for.
    let snapshot = header
        .snapshot
        .filter(|s| s.inputs.keys().all(|rel| records.contains_key(rel)));
    (records, snapshot)
}

/// Replace the file `name` with `records`. Best effort: a cache that cannot be written (a
/// read-only tree, a link where the directory should be) is simply not kept.
pub fn save<'a>(
    root: &Path,
    name: &str,
    settings: &str,
    snapshot: Option<&Snapshot>,
    records: impl Iterator<Item = &'a Record>,
) -> std::io::Result<()> {
    let header = Header {
        format: FORMAT,
        settings: settings.to_string(),
        snapshot: snapshot.cloned(),
    };
    let mut out = serde_json::to_vec(&header)?;
    out.push(b'\n');
    let mut facts = Vec::new();
    for record in records {
        serde_json::to_writer(&mut out, record)?;
        out.push(b'\n');
        if record.python.is_some() || record.rust.is_some() {
            let line = FactsRef {
                rel: &record.rel,
                hash: record.hash,
                python: record.python.as_deref(),
                rust: record.rust.as_deref(),
            };
            serde_json::to_writer(&mut facts, &line)?;
            facts.push(b'\n');
        }
    }
    let dir = RootDir::open(root)?.dir(Path::new(CACHE_DIR), true)?;
    ignore_all(&dir);
    // The facts first: records already on disk find theirs by hash, whichever file is newer.
    let written =
        write_whole(&dir, &facts_name(name), &facts).and_then(|()| write_whole(&dir, name, &out));
    prune(&dir);
    written
}

/// `bytes` as the file `name` of `dir`: a temp file renamed over it.
fn write_whole(dir: &OwnedFd, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let temp = format!(".{name}.{}.tmp", std::process::id());
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let mut file = std::fs::File::from(open_raw(dir.as_raw_fd(), OsStr::new(&temp), flags, 0o644)?);
    let written = file.write_all(bytes);
    drop(file);
    let renamed = written.and_then(|()| rename_in(dir, &temp, name));
    if renamed.is_err() {
        unlink_in(dir, OsStr::new(&temp));
    }
    renamed
}

/// The cache files of other settings (another build, other flags) kept: the most recent few
/// (two files each: the records and their facts).
const KEPT: usize = 16;

fn prune(dir: &OwnedFd) {
    let Ok(listing) = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd())) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, std::ffi::OsString)> = listing
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with('v') && name.ends_with(".jsonl")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.file_name())))
        .collect();
    if files.len() <= KEPT {
        return;
    }
    files.sort();
    for (_, name) in &files[..files.len() - KEPT] {
        unlink_in(dir, name);
    }
}

/// The cache directory holds a `.gitignore` of `*`, as ruff's does: never committed.
fn ignore_all(dir: &OwnedFd) {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    if let Ok(fd) = open_raw(dir.as_raw_fd(), OsStr::new(".gitignore"), flags, 0o644) {
        let _ = std::fs::File::from(fd).write_all(b"# Made by gpu-homogenize.\n*\n");
    }
}

fn rename_in(dir: &OwnedFd, from: &str, to: &str) -> std::io::Result<()> {
    let (from, to) = (cstring(OsStr::new(from))?, cstring(OsStr::new(to))?);
    let fd = dir.as_raw_fd();
    // SAFETY: a valid directory fd and NUL-terminated names; both names are in that directory.
    if unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn unlink_in(dir: &OwnedFd, name: &OsStr) -> bool {
    let Ok(c) = cstring(name) else {
        return false;
    };
    // SAFETY: a valid directory fd and a NUL-terminated name in it.
    unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) == 0 }
}

/// `cache clean`: remove every file of the cache directory under `root` (never through a
/// link), then the directory; the number of files removed.
pub fn clean(root: &Path) -> std::io::Result<usize> {
    let root_dir = RootDir::open(root)?;
    let dir = match root_dir.dir(Path::new(CACHE_DIR), false) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    // Listed through the handle (/proc/self/fd), so a directory swapped for a link meanwhile
    // is not the one read.
    let listing = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
    let mut removed = 0;
    for entry in listing.flatten() {
        let name = entry.file_name();
        if entry.file_type().is_ok_and(|t| !t.is_dir()) && unlink_in(&dir, &name) {
            removed += 1;
        }
    }
    let parent = root_dir.dir(Path::new(crate::fs::state::STATE_DIR), false)?;
    if let Ok(c) = cstring(OsStr::new("cache")) {
        // SAFETY: a valid directory fd and a NUL-terminated name in it.
        unsafe { libc::unlinkat(parent.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) };
    }
    Ok(removed)
}
