//! The cache on disk: one file per set of settings under `.gpu-homogenize/cache/`, a header
//! line then one record per line, and beside it the records' facts (`….facts.jsonl`, one file
//! per line, each valid only for the bytes of its hash: read only when an index is built).
//! Facts a run makes go to a spool file in the same directory as each file's are made, so that
//! no run holds the whole tree's facts ([`Spool`]). Both files are written to a temp file, a
//! line at a time, and renamed over (concurrent runs: the last rename wins, a reader sees one
//! complete file or the other); a line that does not parse (torn, edited, from another
//! version) is a miss for its file, never an error. Every read and write goes through
//! [`RootDir`]: no link is followed out of the root.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Mutex;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::value::RawValue;

use serde::{Deserialize, Serialize};

use super::record::{Facts, FactsRef, Record};
use super::tree::Snapshot;
use crate::fs::confine::RootDir;
use crate::fs::platform::{self, Dir as OwnedFd, How};
use crate::lang::FactKind;

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

/// The facts stored beside `name`, by file; a line that does not parse is a miss. A file may
/// have a line per language: lines of the same bytes are merged.
pub fn load_facts(place: &Place, name: &str) -> FxHashMap<String, Facts> {
    let mut facts: FxHashMap<String, Facts> = FxHashMap::default();
    for_each_line(place, &facts_name(name), |line| {
        let Ok(f) = serde_json::from_str::<Facts>(line) else {
            return;
        };
        match facts.get_mut(&f.rel) {
            Some(known) if known.hash == f.hash => {
                known.python = known.python.take().or(f.python);
                known.rust = known.rust.take().or(f.rust);
            }
            _ => {
                facts.insert(f.rel.clone(), f);
            }
        }
    });
    facts
}

/// Each line of the cache file `name`, read a line at a time (the file is never held whole),
/// through the root's confinement and within [`crate::fs::tree_file::CACHE_LIMIT`].
fn for_each_line(place: &Place, name: &str, mut each: impl FnMut(&str)) {
    let rel = place.rel.join(name);
    let Ok(file) = RootDir::open(&place.base).and_then(|r| r.open_regular(&rel)) else {
        return;
    };
    let mut lines = BufReader::new(file.take(crate::fs::tree_file::CACHE_LIMIT));
    let mut line = String::new();
    // A line that is not UTF-8 is skipped like one that does not parse.
    while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
        each(line.trim_end_matches('\n'));
        line.clear();
    }
}

const SPOOL_PREFIX: &str = ".spool-";

/// How old a spool must be to be taken for the leftover of a run that died.
const STALE_SPOOL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The facts a run makes, in a file of the cache directory (`.spool-PID-CLOCK.tmp`), a line each as
/// they are made: what the run holds is where each line is, not the facts. Read back by offset
/// when the same run asks again; copied into the facts file when the cache is saved; removed
/// when dropped.
pub struct Spool {
    dir: OwnedFd,
    /// `.spool-PID-CLOCK.tmp`.
    name: String,
    /// `None` once dropped: the file is closed before it is removed (Windows).
    inner: Mutex<Option<SpoolFile>>,
}

struct SpoolFile {
    file: std::fs::File,
    len: u64,
    /// Per file: the hash of the bytes its facts were made from, and where its lines are.
    at: FxHashMap<String, (u64, [Option<Line>; 2])>,
}

/// Where a line of the spool is: its offset and length. One per index ([`slot`]).
type Line = (u64, usize);

fn slot(kind: FactKind) -> usize {
    match kind {
        FactKind::Python => 0,
        FactKind::Rust => 1,
    }
}

impl Spool {
    /// A new spool in the cache directory of `place`; `None` when the directory cannot be
    /// made (the cache will not be kept either).
    pub fn create(place: &Place) -> Option<Spool> {
        let dir = RootDir::open(&place.base)
            .ok()?
            .dir(&place.rel, true)
            .ok()?;
        ignore_all(&dir);
        // Unique to this run, also in a cache directory that runs on several hosts share
        // (`--cache-dir` on a network file system): the pid and the clock.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("{SPOOL_PREFIX}{}-{nanos:x}.tmp", std::process::id());
        let how = How {
            read: true,
            ..How::create_new(0o600)
        };
        let file = platform::open_at(&dir, OsStr::new(&name), how).ok()?;
        Some(Spool {
            dir,
            name,
            inner: Mutex::new(Some(SpoolFile {
                file,
                len: 0,
                at: FxHashMap::default(),
            })),
        })
    }

    /// Keep the facts of `rel` (made from the bytes of `hash`) that one index read.
    pub fn write(&self, rel: &str, hash: u64, kind: FactKind, facts: &RawValue) {
        let (python, rust) = match kind {
            FactKind::Python => (Some(facts), None),
            FactKind::Rust => (None, Some(facts)),
        };
        let line = FactsRef {
            rel,
            hash,
            python,
            rust,
        };
        let Ok(mut bytes) = serde_json::to_vec(&line) else {
            return;
        };
        bytes.push(b'\n');
        let Ok(mut guard) = self.inner.lock() else {
            return;
        };
        let Some(spool) = guard.as_mut() else {
            return;
        };
        let at = spool.len;
        if spool.file.seek(SeekFrom::Start(at)).is_err() || spool.file.write_all(&bytes).is_err() {
            return;
        }
        spool.len += bytes.len() as u64;
        let entry = spool
            .at
            .entry(rel.to_string())
            .or_insert((hash, [None, None]));
        if entry.0 != hash {
            *entry = (hash, [None, None]);
        }
        entry.1[slot(kind)] = Some((at, bytes.len()));
    }

    /// The facts of `rel` that one index read and this run kept, if made from the bytes of
    /// `hash`.
    pub fn read(&self, rel: &str, hash: u64, kind: FactKind) -> Option<Facts> {
        let mut guard = self.inner.lock().ok()?;
        let spool = guard.as_mut()?;
        let (at, len) = spool.at.get(rel).filter(|(h, _)| *h == hash)?.1[slot(kind)]?;
        let mut bytes = vec![0; len];
        spool.file.seek(SeekFrom::Start(at)).ok()?;
        spool.file.read_exact(&mut bytes).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Every line, in the order written, with the file it is about and its hash.
    fn each(
        &self,
        mut each: impl FnMut(&str, u64, &str) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let Ok(mut guard) = self.inner.lock() else {
            return Ok(());
        };
        let Some(spool) = guard.as_mut() else {
            return Ok(());
        };
        let len = spool.len;
        spool.file.seek(SeekFrom::Start(0))?;
        let mut lines = BufReader::new((&spool.file).take(len));
        let mut line = String::new();
        while lines.read_line(&mut line)? > 0 {
            #[derive(Deserialize)]
            struct Head<'a> {
                #[serde(borrow)]
                rel: std::borrow::Cow<'a, str>,
                hash: u64,
            }
            let text = line.trim_end_matches('\n');
            if let Ok(head) = serde_json::from_str::<Head>(text) {
                each(&head.rel, head.hash, text)?;
            }
            line.clear();
        }
        Ok(())
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        if let Ok(spool) = self.inner.get_mut() {
            drop(spool.take());
        }
        unlink_in(&self.dir, OsStr::new(&self.name));
    }
}

/// The records stored for `settings` (empty when there are none or the file is not ours), and
/// the tree's snapshot.
pub fn load(
    place: &Place,
    name: &str,
    settings: &str,
) -> (FxHashMap<String, Record>, Option<Snapshot>) {
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
    let records: FxHashMap<String, Record> = lines
        .filter_map(|l| serde_json::from_str::<Record>(l).ok())
        .map(|r| (r.rel.clone(), r))
        .collect();
    // A record lost (a torn line) is a file the snapshot may not speak for.
    let snapshot = header
        .snapshot
        .filter(|s| s.inputs.keys().all(|rel| records.contains_key(rel)));
    (records, snapshot)
}

/// Replace the file `name` with `records` (sorted by path), and its facts file with the facts
/// of those records: this run's (`spool`), else the stored ones made from the same bytes. Both
/// are written a line at a time. Best effort: a cache that cannot be written (a read-only tree,
/// a link where the directory should be) is simply not kept.
pub fn save(
    place: &Place,
    name: &str,
    settings: &str,
    snapshot: Option<&Snapshot>,
    records: &[&Record],
    spool: Option<&Spool>,
) -> std::io::Result<()> {
    let header = Header {
        format: FORMAT,
        settings: settings.to_string(),
        snapshot: snapshot.cloned(),
    };
    let dir = RootDir::open(&place.base)?.dir(&place.rel, true)?;
    ignore_all(&dir);
    let hash_of: FxHashMap<&str, u64> = records.iter().map(|r| (r.rel.as_str(), r.hash)).collect();
    // The facts first: records already on disk find theirs by hash, whichever file is newer.
    let facts = write_with(&dir, &facts_name(name), |out| {
        let mut spooled: FxHashSet<String> = FxHashSet::default();
        if let Some(spool) = spool {
            spool.each(|rel, hash, line| {
                if hash_of.get(rel) != Some(&hash) {
                    return Ok(());
                }
                spooled.insert(rel.to_string());
                out.write_all(line.as_bytes())?;
                out.write_all(b"\n")
            })?;
        }
        let mut result = Ok(());
        for_each_line(place, &facts_name(name), |line| {
            if result.is_err() {
                return;
            }
            let Ok(f) = serde_json::from_str::<Facts>(line) else {
                return;
            };
            if hash_of.get(f.rel.as_str()) == Some(&f.hash) && !spooled.contains(&f.rel) {
                result = out
                    .write_all(line.as_bytes())
                    .and_then(|()| out.write_all(b"\n"));
            }
        });
        result
    });
    let written = facts.and_then(|()| {
        write_with(&dir, name, |out| {
            serde_json::to_writer(&mut *out, &header)?;
            out.write_all(b"\n")?;
            for record in records {
                serde_json::to_writer(&mut *out, record)?;
                out.write_all(b"\n")?;
            }
            Ok(())
        })
    });
    prune(&dir);
    written
}

/// The file `name` of `dir`, written by `write` into a temp file renamed over it.
fn write_with(
    dir: &OwnedFd,
    name: &str,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let temp = format!(".{name}.{}.tmp", std::process::id());
    let how = How {
        write: true,
        create: true,
        truncate: true,
        mode: 0o644,
        ..How::READ
    };
    let file = platform::open_at(dir, OsStr::new(&temp), how)?;
    let mut out = std::io::BufWriter::new(file);
    let written = write(&mut out).and_then(|()| out.flush());
    drop(out);
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
    // The spools of runs that died (a live run's is younger than a day).
    for name in &listing {
        let stale = modified(name)
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age > STALE_SPOOL);
        if name.to_string_lossy().starts_with(SPOOL_PREFIX) && stale {
            unlink_in(dir, name);
        }
    }
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
    // Windows removes no directory a handle holds open (Wine refuses it; Windows leaves it
    // pending until the handle closes): this run's handle goes first.
    drop(dir);
    let parent = root_dir.dir(Path::new(crate::fs::state::STATE_DIR), false)?;
    match platform::remove_dir_at(&parent, OsStr::new("cache")) {
        Ok(()) => Ok(removed),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(removed),
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!("removed {removed} file(s), but not the directory itself: {e}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cache::record::{FileKey, Record};

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    fn record(rel: &str, hash: u64) -> Record {
        let key = FileKey {
            size: 1,
            mtime_ns: 1,
            ino: 1,
        };
        Record::empty(rel, key, hash)
    }

    fn names(place: &Place) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(place.base.join(&place.rel))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A run's facts live in its spool until the cache is saved: read back by offset (for the
    /// bytes they were made from only), merged with the stored facts still valid into the facts
    /// file, and the spool is gone once dropped.
    #[test]
    fn facts_go_through_the_spool_into_the_facts_file() {
        let dir = tempfile::tempdir().unwrap();
        let place = Place::in_tree(dir.path());
        let name = file_name(7);
        // Stored by an earlier run: `a.py` (bytes since changed), `b.rs` (unchanged), `gone.py`.
        let old = [record("a.py", 1), record("b.rs", 2), record("gone.py", 3)];
        let spool = Spool::create(&place).unwrap();
        let kinds = [FactKind::Python, FactKind::Rust, FactKind::Python];
        for (r, kind) in old.iter().zip(kinds) {
            spool.write(&r.rel, r.hash, kind, &raw(&format!("[\"old {}\"]", r.rel)));
        }
        let refs: Vec<&Record> = old.iter().collect();
        save(&place, &name, "s", None, &refs, Some(&spool)).unwrap();
        drop(spool);
        assert_eq!(names(&place), [".gitignore", &facts_name(&name), &name]);

        // Another run's spool (live: young), and one of a run that died two days ago.
        let cache_dir = place.base.join(&place.rel);
        std::fs::write(cache_dir.join(".spool-1-0.tmp"), "").unwrap();
        let dead = std::fs::File::create(cache_dir.join(".spool-2-0.tmp")).unwrap();
        let two_days = std::time::Duration::from_secs(2 * 24 * 3600);
        dead.set_modified(std::time::SystemTime::now() - two_days)
            .unwrap();
        drop(dead);

        // This run: `a.py` changed (hash 10), `c.rs` is new, `gone.py` is gone.
        let spool = Spool::create(&place).unwrap();
        spool.write("a.py", 10, FactKind::Python, &raw("[\"new a\"]"));
        spool.write("c.rs", 4, FactKind::Rust, &raw("[\"new c\"]"));
        let back = spool.read("a.py", 10, FactKind::Python).unwrap();
        assert_eq!(back.python.unwrap().get(), "[\"new a\"]");
        assert!(
            spool.read("a.py", 1, FactKind::Python).is_none(),
            "facts of other bytes"
        );
        assert!(
            spool.read("a.py", 10, FactKind::Rust).is_none(),
            "the other language"
        );
        assert!(
            spool.read("b.rs", 2, FactKind::Rust).is_none(),
            "not made by this run"
        );
        assert!(names(&place).iter().any(|n| n.starts_with(".spool-")));
        let now = [record("a.py", 10), record("b.rs", 2), record("c.rs", 4)];
        let refs: Vec<&Record> = now.iter().collect();
        save(&place, &name, "s", None, &refs, Some(&spool)).unwrap();
        drop(spool);
        let left = [".gitignore", ".spool-1-0.tmp", &facts_name(&name), &name];
        assert_eq!(
            names(&place),
            left,
            "the live run's spool kept, the dead run's removed"
        );

        let facts = load_facts(&place, &name);
        let fact = |rel: &str| {
            let f = &facts[rel];
            let raw = f.python.as_ref().or(f.rust.as_ref()).unwrap();
            (f.hash, raw.get().to_string())
        };
        assert_eq!(fact("a.py"), (10, "[\"new a\"]".to_string()));
        assert_eq!(fact("b.rs"), (2, "[\"old b.rs\"]".to_string()));
        assert_eq!(fact("c.rs"), (4, "[\"new c\"]".to_string()));
        assert_eq!(facts.len(), 3, "{:?}", facts.keys());
        let (records, _) = load(&place, &name, "s");
        assert_eq!(records.len(), 3);
    }
}
