//! The tree as the project indexes see it, in one number: the content hash of every source
//! file of the root and the metadata of the packaging files in their directories. While it is
//! what it was when the cache was written, every index is what it was, and so is what each
//! verdict read from it: the run skips building the indexes (unless a file must be analysed
//! again) and takes each file's `verdict_inputs` from the snapshot.

use std::path::Path;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use super::record::{FileKey, Record};
use crate::fs::walk::{Entry, EntryKind};

/// What the indexes and the project's style read besides the source files (and `__init__.py`,
/// which is one): packaging, and the formatter and linter settings the header follows.
const PACKAGING: &[&str] = &[
    "Cargo.toml",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "ruff.toml",
    ".ruff.toml",
    ".editorconfig",
    ".isort.cfg",
    ".flake8",
    "tox.ini",
    ".pre-commit-config.yaml",
];

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Snapshot {
    pub signature: u64,
    /// Each source file's `verdict_inputs` hash, under that signature.
    pub inputs: FxHashMap<String, u64>,
}

/// The signature of the tree whose source files are `all`, each file's bytes given by
/// `record_of` (`None` when a file has none: no signature).
pub fn signature<'a>(
    root: &Path,
    all: &'a [Entry],
    watched: &[std::path::PathBuf],
    started_ns: i64,
    record_of: impl Fn(&'a Entry) -> Option<u64> + Sync,
) -> Option<u64> {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let sources: Vec<&Entry> = all
        .iter()
        .filter(|e| matches!(e.kind, EntryKind::Source(_)))
        .collect();
    // Each file's record (a stat, and a read where the metadata changed) on every core.
    let hashes: Vec<Option<u64>> = sources.par_iter().map(|e| record_of(e)).collect();
    // Directories by their `/`-separated name (cheap to hash), with their path on disk.
    let mut dirs: FxHashMap<&str, &Path> = FxHashMap::default();
    for (entry, hash) in sources.iter().zip(hashes) {
        let hash = hash?;
        hasher.update(entry.rel.as_bytes());
        hasher.update(&[0]);
        hasher.update(&hash.to_le_bytes());
        let (mut rel, mut path) = (entry.rel.as_str(), entry.rel_path.as_path());
        while let Some(parent) = path.parent() {
            rel = rel.rsplit_once('/').map_or("", |(d, _)| d);
            path = parent;
            if dirs.insert(rel, path).is_some() {
                break;
            }
        }
    }
    let sources: FxHashSet<&str> = sources.iter().map(|e| e.rel.as_str()).collect();
    let mut dirs: Vec<(&str, &Path)> = dirs.into_iter().collect();
    dirs.sort_unstable();
    // The packaging files of each directory (most are absent), stat'ed on every core, hashed
    // in the directories' order.
    let packaging: Vec<(String, FileKey)> = dirs
        .par_iter()
        .flat_map_iter(|&(rel, dir)| {
            let sources = &sources;
            PACKAGING.iter().filter_map(move |name| {
                let named = if rel.is_empty() {
                    (*name).to_string()
                } else {
                    format!("{rel}/{name}")
                };
                // A `setup.py` the walk yields is signed by its bytes already.
                if sources.contains(named.as_str()) {
                    return None;
                }
                let meta = std::fs::symlink_metadata(root.join(dir).join(name)).ok()?;
                Some((named, FileKey::of(&meta)))
            })
        })
        .collect();
    // The launch commands the Python index reads (scripts, READMEs, CI workflows).
    let watched = watched.iter().filter_map(|rel| {
        let meta = std::fs::symlink_metadata(root.join(rel)).ok()?;
        Some((crate::fs::walk::slash_joined(rel), FileKey::of(&meta)))
    });
    for (named, key) in packaging.into_iter().chain(watched) {
        // Modified around the start of the run: its metadata says too little.
        if key.trusted_from(started_ns) != key {
            return None;
        }
        hasher.update(named.as_bytes());
        hasher.update(&key.size.to_le_bytes());
        hasher.update(&key.mtime_ns.to_le_bytes());
        hasher.update(&key.ino.to_le_bytes());
    }
    Some(hasher.digest())
}

/// The hash of the record of `entry`'s current bytes among this run's (`new`) and the old ones.
pub fn hash_of(
    new: &FxHashMap<String, Record>,
    old: &FxHashMap<String, Record>,
    rel: &str,
    key: Option<FileKey>,
    started_ns: i64,
) -> Option<u64> {
    let key = key?;
    new.get(rel)
        .filter(|r| r.key == key.trusted_from(started_ns))
        .or_else(|| old.get(rel).filter(|r| r.key == key))
        .map(|r| r.hash)
}
