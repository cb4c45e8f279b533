//! The tree as the project indexes see it, in one number: the content hash of every source
//! file of the root and the metadata of the packaging files in their directories. While it is
//! what it was when the cache was written, every index is what it was, and so is what each
//! verdict read from it: the run skips building the indexes (unless a file must be analysed
//! again) and takes each file's `verdict_inputs` from the snapshot.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::record::{FileKey, Record};
use crate::walk::{Entry, EntryKind};

/// What the indexes read besides the source files (and `__init__.py`, which is one).
const PACKAGING: &[&str] = &["Cargo.toml", "pyproject.toml", "setup.py", "setup.cfg"];

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Snapshot {
    pub signature: u64,
    /// Each source file's `verdict_inputs` hash, under that signature.
    pub inputs: HashMap<String, u64>,
}

/// The signature of the tree whose source files are `all`, each file's bytes given by
/// `record_of` (`None` when a file has none: no signature).
pub fn signature<'a>(
    root: &Path,
    all: &'a [Entry],
    started_ns: i64,
    record_of: impl Fn(&'a Entry) -> Option<u64>,
) -> Option<u64> {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut dirs = BTreeSet::new();
    let mut sources = std::collections::HashSet::new();
    for entry in all
        .iter()
        .filter(|e| matches!(e.kind, EntryKind::Source(_)))
    {
        sources.insert(entry.rel_path.as_path());
        let hash = record_of(entry)?;
        hasher.update(entry.rel.as_bytes());
        hasher.update(&[0]);
        hasher.update(&hash.to_le_bytes());
        let mut dir = entry.rel_path.parent();
        while let Some(d) = dir {
            if !dirs.insert(d.to_path_buf()) {
                break;
            }
            dir = d.parent();
        }
    }
    for dir in &dirs {
        for name in PACKAGING {
            // A `setup.py` the walk yields is signed by its bytes already.
            if sources.contains(dir.join(name).as_path()) {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(root.join(dir).join(name)) else {
                continue;
            };
            let key = FileKey::of(&meta);
            // Modified around the start of the run: its metadata says too little.
            if key.trusted_from(started_ns) != key {
                return None;
            }
            hasher.update(dir.as_os_str().as_encoded_bytes());
            hasher.update(name.as_bytes());
            hasher.update(&key.size.to_le_bytes());
            hasher.update(&key.mtime_ns.to_le_bytes());
            hasher.update(&key.ino.to_le_bytes());
        }
    }
    Some(hasher.digest())
}

/// The hash of the record of `entry`'s current bytes among this run's (`new`) and the old ones.
pub fn hash_of(
    new: &HashMap<String, Record>,
    old: &HashMap<String, Record>,
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
