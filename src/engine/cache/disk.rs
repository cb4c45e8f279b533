//! The cache on disk: one file per set of settings under `.gpu-homogenize/cache/`, a header
//! line then one record per line, and beside it the records' facts (`….facts.jsonl`, one file
//! per line, each valid only for the bytes of its hash: read only when an index is built). Written whole to a temp file and renamed over (concurrent
//! runs: the last rename wins, a reader sees one complete file or the other); a line that does
//! not parse (torn, edited, from another version) is a miss for its file, never an error. Every
//! write goes through [`RootDir`]: no link is followed out of the root.

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::record::{Facts, FactsRef, Record};
use super::tree::Snapshot;
use crate::fs::confine::RootDir;
use crate::fs::platform::{self, Dir as OwnedFd, How};

/// Under the tree root.
pub const CACHE_DIR: &str = ".gpu-homogenize/cache";

/// Where the cache files live: under the tree root (`.gpu-homogenize/cache/`), or below a
/// directory the user names (`--cache-dir DIR`: `DIR/gpu-homogenize/`), for CI caches restored
/// into a fresh checkout. Read and written like the tree's own files, confined to `base`.
#[derive(Debug, Clone)]
pub struct Place {
    pub base: std::path::PathBuf,
    pub rel: std::path::PathBuf,
}

impl Place {
    pub fn in_tree(root: &Path) -> Place {
        Place {
            base: root.to_path_buf(),
            rel: CACHE_DIR.into(),
        }
    }

    pub fn named(dir: &Path) -> Place {
        Place {
            base: dir.to_path_buf(),
            rel: "gpu-homogenize".into(),
        }
    }
}
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
pub fn load_facts(place: &Place, name: &str) -> rustc_hash::FxHashMap<String, Facts> {
    let rel = place.rel.join(facts_name(name));
    let Ok(Some(text)) =
        crate::fs::tree_file::read_text(&place.base, &rel, crate::fs::tree_file::CACHE_LIMIT)
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
    place: &Place,
    name: &str,
    settings: &str,
) -> (rustc_hash::FxHashMap<String, Record>, Option<Snapshot>) {
    let rel = place.rel.join(name);
    let Ok(Some(text)) =
        crate::fs::tree_file::read_text(&place.base, &rel, crate::fs::tree_file::CACHE_LIMIT)
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
    place: &Place,
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
    let dir = RootDir::open(&place.base)?.dir(&place.rel, true)?;
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
    let how = How {
        write: true,
        create: true,
        truncate: true,
        mode: 0o644,
        ..How::READ
    };
    let mut file = platform::open_at(dir, OsStr::new(&temp), how)?;
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
    let Ok(listing) = platform::list(dir) else {
        return;
    };
    let modified = |name: &OsStr| platform::stat_at(dir, name).ok().map(|s| s.modified);
    let mut files: Vec<(std::time::SystemTime, std::ffi::OsString)> = listing
        .into_iter()
        .filter(|name| {
            let name = name.to_string_lossy();
            name.starts_with('v') && name.ends_with(".jsonl")
        })
        .filter_map(|name| Some((modified(&name)?, name)))
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
    if let Ok(mut file) = platform::open_at(dir, OsStr::new(".gitignore"), How::create_new(0o644)) {
        let _ = file.write_all(b"# Made by gpu-homogenize.\n*\n");
    }
}

fn rename_in(dir: &OwnedFd, from: &str, to: &str) -> std::io::Result<()> {
    platform::rename_at(dir, OsStr::new(from), OsStr::new(to))
}

fn unlink_in(dir: &OwnedFd, name: &OsStr) -> bool {
    platform::unlink_at(dir, name).is_ok()
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
    // Listed through the handle, so a directory swapped for a link meanwhile is not the one read.
    let mut removed = 0;
    for name in platform::list(&dir)? {
        let is_dir = platform::stat_at(&dir, &name).is_ok_and(|s| s.kind == platform::Kind::Dir);
        if !is_dir && unlink_in(&dir, &name) {
            removed += 1;
        }
    }
    let parent = root_dir.dir(Path::new(crate::fs::state::STATE_DIR), false)?;
    let _ = platform::remove_dir_at(&parent, OsStr::new("cache"));
    Ok(removed)
}
