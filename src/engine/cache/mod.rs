//! The content cache (`.gpu-homogenize/cache/`): per file, the facts the project indexes read
//! and the file's verdict, so that a run over an unchanged tree reads the directory, not the
//! files. A file's record is reused while its size, modification time and inode are as
//! recorded, or, when they changed, while its bytes hash the same; a verdict is reused only
//! when, besides, what it read from the project index is unchanged (a change to an imported
//! module invalidates its importers, and nothing else). The run's settings (tool build, mode,
//! policy, header, rule selection, baseline) name the cache file: other settings, other file.

mod disk;
mod record;
mod tree;

use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use disk::{clean, Place, CACHE_DIR};
pub use record::{FileKey, Record, Verdict};

use crate::engine::process::{Engine, Mode, Processed};
use crate::fs::source::content_key;
use crate::fs::walk::{Entry, EntryKind};
use crate::lang::{FactKind, FactStore, FileInfo};
use crate::model::outcome::{FileStatus, Language};

pub struct Cache {
    root: PathBuf,
    /// Where its files live.
    place: Place,
    settings: String,
    name: String,
    max_file_size: u64,
    started_ns: i64,
    old: FxHashMap<String, Record>,
    /// Each file's key, asked of the file system once per run.
    keys: Mutex<FxHashMap<String, Option<FileKey>>>,
    /// What this run learnt: records replacing the old ones.
    new: Mutex<FxHashMap<String, Record>>,
    /// The indexes' view of the tree when the cache was written.
    snapshot: Option<tree::Snapshot>,
    /// The tree is as the snapshot says: the indexes are built only when a file must be
    /// analysed again.
    unchanged_tree: bool,
    index_built: std::sync::Once,
    /// Each file's `verdict_inputs` hash in this run.
    inputs: Mutex<FxHashMap<String, u64>>,
    /// This run made facts or verdicts (not only found touched files unchanged).
    learnt: std::sync::atomic::AtomicBool,
    /// Verdicts the cache gave, and files analysed again (`GPU_HOMOGENIZE_TRACE=cache`).
    hits: std::sync::atomic::AtomicUsize,
    misses: std::sync::atomic::AtomicUsize,
    /// The facts file, read the first time facts are asked for (an index is built).
    old_facts: std::sync::OnceLock<FxHashMap<String, record::Facts>>,
    /// The facts this run made, on disk as they are made (made at the first).
    spool: std::sync::OnceLock<Option<disk::Spool>>,
    /// The files besides sources and packaging that the indexes read (launch commands).
    watched: Vec<PathBuf>,
}

impl Cache {
    /// The cache of `root`, kept at `place`, for a run with these settings (`settings` names
    /// everything besides the files that a verdict depends on).
    pub fn open(root: &Path, place: Place, settings: String, max_file_size: u64) -> Cache {
        let name = disk::file_name(content_key(settings.as_bytes()));
        let (old, snapshot) = disk::load(&place, &name, &settings);
        let started_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        Cache {
            root: root.to_path_buf(),
            place,
            settings,
            name,
            max_file_size,
            started_ns,
            old,
            keys: Mutex::default(),
            new: Mutex::default(),
            snapshot,
            unchanged_tree: false,
            index_built: std::sync::Once::new(),
            inputs: Mutex::default(),
            learnt: Default::default(),
            hits: Default::default(),
            misses: Default::default(),
            old_facts: std::sync::OnceLock::new(),
            spool: std::sync::OnceLock::new(),
            watched: Vec::new(),
        }
    }

    /// Files besides the sources and packaging files that the indexes read (the launch
    /// commands of the tree): part of the tree's signature.
    pub fn watch(&mut self, files: &[PathBuf]) {
        self.watched = files.to_vec();
    }

    /// The stored facts of `rel`, when they were made from the bytes of `hash`.
    fn old_facts(&self, rel: &str, hash: u64) -> Option<&record::Facts> {
        self.old_facts
            .get_or_init(|| disk::load_facts(&self.place, &self.name))
            .get(rel)
            .filter(|f| f.hash == hash)
    }

    /// Whether the tree (`all`: every file of the root) is as the indexes last saw it; if so,
    /// the caller may leave the indexes unbuilt and hand [`Cache::process`] a way to build
    /// them when a file needs analysing.
    pub fn tree_unchanged(&mut self, all: &[Entry]) -> bool {
        let Some(expected) = self.snapshot.as_ref().map(|s| s.signature) else {
            return false;
        };
        let now = tree::signature(&self.root, all, &self.watched, self.started_ns, |e| {
            self.probe(e).0.map(|r| r.hash)
        });
        self.unchanged_tree = now == Some(expected);
        self.unchanged_tree
    }

    /// The file's key now (no link followed: a link is no regular file).
    fn stat(&self, entry: &Entry) -> Option<FileKey> {
        let meta = std::fs::symlink_metadata(self.root.join(&entry.rel_path)).ok()?;
        meta.is_file().then(|| FileKey::of(&meta))
    }

    fn key_of(&self, entry: &Entry) -> Option<FileKey> {
        if let Some(known) = self.keys.lock().ok()?.get(&entry.rel) {
            return *known;
        }
        let key = self.stat(entry);
        self.keys.lock().ok()?.insert(entry.rel.clone(), key);
        key
    }

    /// The record of the file's current bytes, if there is one; and the bytes, when they had
    /// to be read to know.
    fn probe(&self, entry: &Entry) -> (Option<Cow<'_, Record>>, Option<Vec<u8>>) {
        let Some(key) = self.key_of(entry) else {
            return (None, None);
        };
        // What this run already read of the file (the index read it before the CPU stage).
        let seen = self
            .new
            .lock()
            .ok()
            .and_then(|m| m.get(&entry.rel).cloned());
        if let Some(seen) = seen.filter(|r| r.key == key.trusted_from(self.started_ns)) {
            return (Some(Cow::Owned(seen)), None);
        }
        let Some(old) = self.old.get(&entry.rel) else {
            return (None, None);
        };
        if old.key == key {
            return (Some(Cow::Borrowed(old)), None);
        }
        let read = crate::fs::source::read_under(&self.root, &entry.rel_path, self.max_file_size);
        let Ok(bytes) = read else {
            return (None, None);
        };
        if content_key(&bytes) != old.hash {
            return (None, Some(bytes));
        }
        // Touched, not changed: recorded under its new key, so the next run need not read it.
        let refreshed = self.update(&entry.rel, key, old.hash, |_| {});
        (Some(Cow::Owned(refreshed)), Some(bytes))
    }

    /// Change this run's record of `rel` (made from the old one when the bytes are the same);
    /// returns it.
    fn update(
        &self,
        rel: &str,
        key: FileKey,
        hash: u64,
        change: impl FnOnce(&mut Record),
    ) -> Record {
        let key = key.trusted_from(self.started_ns);
        let fresh = || match self.old.get(rel) {
            Some(old) if old.hash == hash => Record { key, ..old.clone() },
            _ => Record::empty(rel, key, hash),
        };
        let Ok(mut new) = self.new.lock() else {
            return Record::empty(rel, key, hash);
        };
        let record = new.entry(rel.to_string()).or_insert_with(fresh);
        if record.hash != hash || record.key != key {
            *record = fresh();
        }
        change(record);
        record.clone()
    }

    /// The CPU stage for one file, through the cache: a verdict still valid is given back
    /// without reading the file; any other is computed and kept (unless the run wrote the
    /// file, or the outcome depends on more than the bytes: an error of `fix`).
    pub fn process(
        &self,
        engine: &Engine,
        entry: &Entry,
        build_index: &(dyn Fn() + Sync),
    ) -> Processed {
        let EntryKind::Source(language) = &entry.kind else {
            return engine.process(entry);
        };
        let support = match language {
            Language::Python => engine.python.as_ref(),
            Language::Rust => engine.rust.as_ref(),
        };
        let info = FileInfo {
            path: &entry.path,
            rel: &entry.rel,
            in_phase: engine.phases.phase_of(&entry.rel).is_some(),
        };
        let from_snapshot = self
            .snapshot
            .as_ref()
            .filter(|_| self.unchanged_tree)
            .and_then(|s| s.inputs.get(&entry.rel).copied());
        let (record, bytes) = self.probe(entry);
        let cached = |inputs: u64| {
            record
                .as_ref()
                .and_then(|r| r.verdict.as_ref())
                .filter(|v| v.inputs == inputs)
                .map(|v| v.restore(entry))
        };
        let count = |n: &std::sync::atomic::AtomicUsize| {
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        };
        if let Some(hit) = from_snapshot.and_then(cached) {
            self.note_inputs(&entry.rel, from_snapshot);
            count(&self.hits);
            return hit;
        }
        // Analysed again: the indexes must be there (built once, by whichever file asks first).
        if self.unchanged_tree {
            self.index_built.call_once(build_index);
        }
        let inputs = content_key(support.verdict_inputs(&info).as_bytes());
        self.note_inputs(&entry.rel, Some(inputs));
        if let Some(hit) = cached(inputs) {
            count(&self.hits);
            return hit;
        }
        count(&self.misses);
        let Some(key) = self.key_of(entry) else {
            return engine.process(entry);
        };
        let bytes = match bytes {
            Some(bytes) => bytes,
            None => {
                match crate::fs::source::read_under(&self.root, &entry.rel_path, self.max_file_size)
                {
                    Ok(bytes) => bytes,
                    Err(_) => return engine.process(entry),
                }
            }
        };
        let hash = content_key(&bytes);
        let processed = engine.process_read(entry, Some(bytes));
        let writes = engine.mode == Mode::Fix { dry_run: false };
        let keep = match processed.outcome.status {
            FileStatus::Error => !writes,
            FileStatus::Fixed => false,
            _ => !writes || self.stat(entry) == Some(key),
        };
        if keep {
            self.learnt
                .store(true, std::sync::atomic::Ordering::Relaxed);
            self.update(&entry.rel, key, hash, |r| {
                r.verdict = Some(Box::new(Verdict::of(&processed, inputs)));
            });
        }
        processed
    }

    fn note_inputs(&self, rel: &str, inputs: Option<u64>) {
        if let (Some(inputs), Ok(mut seen)) = (inputs, self.inputs.lock()) {
            seen.insert(rel.to_string(), inputs);
        }
    }

    /// The snapshot to keep: the tree's signature now, with every source file's inputs.
    fn snapshot_now(
        &self,
        tree: &[Entry],
        new: &FxHashMap<String, Record>,
    ) -> Option<tree::Snapshot> {
        let mut inputs = self.inputs.lock().ok()?.clone();
        let signature = match (&self.snapshot, self.unchanged_tree) {
            (Some(old), true) => {
                for (rel, i) in &old.inputs {
                    inputs.entry(rel.clone()).or_insert(*i);
                }
                old.signature
            }
            _ => tree::signature(&self.root, tree, &self.watched, self.started_ns, |e| {
                tree::hash_of(new, &self.old, &e.rel, self.key_of(e), self.started_ns)
            })?,
        };
        let sources = tree
            .iter()
            .filter(|e| matches!(e.kind, EntryKind::Source(_)));
        let complete = sources.clone().all(|e| inputs.contains_key(&e.rel));
        complete.then(|| tree::Snapshot {
            signature,
            inputs: sources
                .filter_map(|e| Some((e.rel.clone(), *inputs.get(&e.rel)?)))
                .collect(),
        })
    }

    /// Write the records of the files the run walked (`tree`: the root's, for the index;
    /// `checked`: what it processed, which may lie outside the root's walk): this run's, then
    /// the old ones still valid for all it knows.
    pub fn persist(self, tree: &[Entry], checked: &[Entry]) {
        if std::env::var("GPU_HOMOGENIZE_TRACE").is_ok_and(|t| t.split(',').any(|t| t == "cache")) {
            eprintln!(
                "cache: {} verdict(s) from the cache, {} file(s) analysed, at {}",
                self.hits.load(std::sync::atomic::Ordering::Relaxed),
                self.misses.load(std::sync::atomic::Ordering::Relaxed),
                crate::model::outcome::display_path(&self.place.base.join(&self.place.rel))
            );
        }
        let new = std::mem::take(&mut *self.new.lock().unwrap_or_else(|e| e.into_inner()));
        let present: FxHashSet<&str> = tree.iter().chain(checked).map(|e| e.rel.as_str()).collect();
        // Nothing learnt and nothing gone: the file on disk says it all already. Files touched
        // but unchanged are hashed again by the next run rather than the whole cache rewritten,
        // while they are few.
        let learnt = self.learnt.load(std::sync::atomic::Ordering::Relaxed);
        if !learnt
            && new.len() <= self.old.len() / 10
            && self.unchanged_tree
            && self.old.keys().all(|rel| present.contains(rel.as_str()))
        {
            return;
        }
        let snapshot = self.snapshot_now(tree, &new);
        let mut records: Vec<&Record> = new
            .values()
            .chain(self.old.values().filter(|r| !new.contains_key(&r.rel)))
            .filter(|r| present.contains(r.rel.as_str()))
            .collect();
        records.sort_by(|a, b| a.rel.cmp(&b.rel));
        let _ = disk::save(
            &self.place,
            &self.name,
            &self.settings,
            snapshot.as_ref(),
            &records,
            self.spool.get().and_then(Option::as_ref),
        );
    }
}

impl FactStore for Cache {
    fn load(&self, entry: &Entry, kind: FactKind) -> Option<String> {
        let (record, _) = self.probe(entry);
        let record = record?;
        let pick = |facts: &record::Facts| {
            let raw = match kind {
                FactKind::Python => &facts.python,
                FactKind::Rust => &facts.rust,
            };
            raw.as_deref().and_then(record::unwrap)
        };
        let spooled = self.spool.get().and_then(Option::as_ref);
        spooled
            .and_then(|s| s.read(&record.rel, record.hash, kind))
            .and_then(|f| pick(&f))
            .or_else(|| pick(self.old_facts(&record.rel, record.hash)?))
    }

    fn save(&self, entry: &Entry, hash: u64, kind: FactKind, facts: String) {
        let Some(key) = self.key_of(entry) else {
            return;
        };
        self.learnt
            .store(true, std::sync::atomic::Ordering::Relaxed);
        // The record says which bytes the file was read as; the facts go to the spool.
        self.update(&entry.rel, key, hash, |_| {});
        let (Some(spool), Some(facts)) = (
            self.spool.get_or_init(|| disk::Spool::create(&self.place)),
            record::wrap(&facts),
        ) else {
            return;
        };
        spool.write(&entry.rel, hash, kind, &facts);
    }
}
