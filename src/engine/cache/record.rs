//! What the cache keeps of one file: the metadata and hash of the bytes it was read from, the
//! facts the project indexes read, and the file's verdict with what the verdict depended on.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::engine::process::{GpuJobSpec, Processed};
use crate::fs::walk::Entry;
use crate::model::outcome::FileOutcome;

/// Size, modification time and inode: when all three are as recorded, the bytes are taken to
/// be too (as ruff and git do); otherwise the content hash decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileKey {
    pub size: u64,
    pub mtime_ns: i64,
    pub ino: u64,
}

/// The modification time of a key that must not be trusted (see [`FileKey::trusted_from`]).
const UNTRUSTED: i64 = i64::MIN;

impl FileKey {
    pub fn of(meta: &std::fs::Metadata) -> FileKey {
        let (mtime_ns, ino) = crate::fs::platform::cache_key(meta);
        FileKey {
            size: meta.len(),
            mtime_ns,
            ino,
        }
    }

    /// A file modified around the start of the run may be modified again within the same
    /// clock tick after it was read (git's "racily clean" entries): its key is recorded so
    /// that it never matches, and the next run compares the hash.
    pub fn trusted_from(self, started_ns: i64) -> FileKey {
        if self.mtime_ns >= started_ns.saturating_sub(2_000_000_000) {
            FileKey {
                mtime_ns: UNTRUSTED,
                ..self
            }
        } else {
            self
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub rel: String,
    pub key: FileKey,
    /// [`crate::fs::source::content_key`] of the bytes everything below was read from.
    pub hash: u64,
    // The facts the indexes read live in a file of their own ([`Facts`]; a run's own in its
    // spool): a warm run that does not build the indexes never reads them.
    /// Boxed: a verdict holds a whole `FileOutcome` (680 bytes inline), and the maps of
    /// records (every file's, in a warm run) hold a record per slot, free slots included:
    /// inline, 100,000 files' map was 100 MB of table, 150 MB while it grew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Box<Verdict>>,
}

/// A file's facts as the facts file keeps them: valid only for the bytes of that hash.
#[derive(Debug, Serialize, Deserialize)]
pub struct Facts {
    pub rel: String,
    pub hash: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rust: Option<Box<RawValue>>,
}

/// The same, borrowed from a record, to be written.
#[derive(Serialize)]
pub struct FactsRef<'a> {
    pub rel: &'a str,
    pub hash: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rust: Option<&'a RawValue>,
}

impl Record {
    pub fn empty(rel: &str, key: FileKey, hash: u64) -> Record {
        Record {
            rel: rel.to_string(),
            key,
            hash,
            verdict: None,
        }
    }
}

/// A file's outcome as the CPU stage left it, and the GPU check it asked for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    /// Hash of the language's `verdict_inputs` (the file's role, imported constants, crate).
    pub inputs: u64,
    pub outcome: FileOutcome,
    /// The texts of the lines findings are on, each once (10,000 findings on one long line
    /// keep it once), and per finding: the index of its line's text and whether it is about
    /// the whole file (neither is in the JSON).
    pub line_texts: Vec<String>,
    pub lines: Vec<(usize, bool)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_env: Option<Vec<(String, String)>>,
}

impl Verdict {
    pub fn of(processed: &Processed, inputs: u64) -> Verdict {
        let outcome = &processed.outcome;
        let mut line_texts: Vec<String> = Vec::new();
        let lines = outcome
            .findings
            .iter()
            .map(|f| {
                // Findings come in line order: the same text is the previous one's.
                if line_texts.last().map(String::as_str) != Some(&*f.line_text) {
                    line_texts.push(f.line_text.to_string());
                }
                (line_texts.len() - 1, f.whole_file)
            })
            .collect();
        Verdict {
            inputs,
            outcome: outcome.clone(),
            line_texts,
            lines,
            diff: outcome.diff.clone(),
            gpu_env: processed.gpu_job.as_ref().map(|job| job.env.clone()),
        }
    }

    /// The outcome for `entry`, as if the CPU stage had just produced it.
    pub fn restore(&self, entry: &Entry) -> Processed {
        let mut outcome = self.outcome.clone();
        outcome.path.clone_from(&entry.rel);
        outcome.display = FileOutcome::new(&entry.path, &entry.rel).display;
        outcome.diff.clone_from(&self.diff);
        let texts: Vec<std::sync::Arc<str>> =
            self.line_texts.iter().map(|t| t.as_str().into()).collect();
        for (finding, &(line, whole)) in outcome.findings.iter_mut().zip(&self.lines) {
            if let Some(text) = texts.get(line) {
                finding.line_text = text.clone();
            }
            finding.whole_file = whole;
        }
        Processed {
            outcome,
            gpu_job: self.gpu_env.as_ref().map(|env| GpuJobSpec {
                path: entry.path.clone(),
                env: env.clone(),
            }),
        }
    }
}

/// Facts as stored: `[FACTS]`, so that facts that are `null` (a file that does not parse) are
/// still facts.
pub fn wrap(facts: &str) -> Option<Box<RawValue>> {
    RawValue::from_string(format!("[{facts}]")).ok()
}

pub fn unwrap(raw: &RawValue) -> Option<String> {
    let text = raw.get();
    Some(text.strip_prefix('[')?.strip_suffix(']')?.to_string())
}
