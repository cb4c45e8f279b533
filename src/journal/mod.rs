//! The run journal: every `fix` and `check` appends what it did to
//! `.gpu-homogenize/journal.jsonl` at the tree root, one line per file as it is done and one
//! line with the totals at the end, so `report` can say what was validated, on which GPU, and
//! when.

mod read;
mod time;

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::outcome::{CheckStatus, FileOutcome, FileStatus, GpuCheck};
use crate::model::summary::{GpuSummary, Summary};

pub use read::Journal;
pub use time::now_rfc3339;

pub use crate::fs::state::{state_dir, STATE_DIR as JOURNAL_DIR};
pub const JOURNAL_FILE: &str = "journal.jsonl";
/// Bumped when a line's meaning changes; lines of another schema are skipped with a warning.
pub const SCHEMA: u32 = 1;

/// Where the journal of the tree at `root` lives.
pub fn path(root: &Path) -> PathBuf {
    root.join(JOURNAL_DIR).join(JOURNAL_FILE)
}

/// What every line of one run shares.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stamp {
    pub schema: u32,
    pub run_id: String,
    /// RFC 3339, UTC.
    pub at: String,
    pub tool_version: String,
    pub command: String,
    #[serde(default)]
    pub dry_run: bool,
}

/// One file of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileLine {
    #[serde(flatten)]
    pub stamp: Stamp,
    /// Relative to the tree root (the journal's own place): what the report joins on.
    pub path: String,
    /// Relative to the repository, when the tree root is below its top (`svc/app/m.py`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_path: Option<String>,
    #[serde(default)]
    pub phase: Option<String>,
    pub status: FileStatus,
    /// Findings of every severity the run reported for the file.
    #[serde(default)]
    pub findings: usize,
    /// Codes of the violations the file still had after the run.
    #[serde(default)]
    pub rules: Vec<String>,
    #[serde(default)]
    pub cpu_check: Option<CheckStatus>,
    #[serde(default)]
    pub gpu_check: Option<GpuCheck>,
    #[serde(default)]
    pub content_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The totals of one run: the last line it writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunLine {
    #[serde(flatten)]
    pub stamp: Stamp,
    /// Files in scope (GPU code or declared in a phase) that the run looked at.
    #[serde(default)]
    pub files: usize,
    /// Compliant after the run: found compliant plus fixed.
    #[serde(default)]
    pub compliant: usize,
    #[serde(default)]
    pub by_status: BTreeMap<String, usize>,
    #[serde(default)]
    pub violations: usize,
    #[serde(default)]
    pub errors: usize,
    #[serde(default)]
    pub cpu_failed: usize,
    #[serde(default)]
    pub gpu: Option<GpuSummary>,
    #[serde(default)]
    pub interrupted: bool,
}

/// A run's lines, appended to the journal at the tree root as the run goes: each file's once
/// the file is done (its checks included), within [`Writer::EVERY`] (a thread appends what is
/// pending that often, whatever the run is doing), and the totals last ([`Writer::finish`]).
/// A run cut short (an error, a panic, a kill) still leaves the lines of the files it did, but
/// the last second's. A failure to append is a warning, said once, never fatal: the files are
/// already written and the run's own output says what happened.
pub struct Writer {
    stamp: Stamp,
    /// The tree root's place in its repository (`svc/`, or empty).
    prefix: String,
    pending: std::sync::Arc<std::sync::Mutex<Pending>>,
    /// Dropped to stop the thread that appends every [`Writer::EVERY`].
    stop: Option<crossbeam_channel::Sender<()>>,
    ticker: Option<std::thread::JoinHandle<()>>,
    /// Files journalled, and those of them compliant after the run: the totals' line.
    files: usize,
    compliant: usize,
}

/// Lines not appended yet.
struct Pending {
    root: PathBuf,
    text: String,
    failed: bool,
}

impl Pending {
    fn flush(&mut self) {
        if self.text.is_empty() || self.failed {
            return;
        }
        if let Err(e) = append_under(&self.root, &self.text) {
            self.failed = true;
            eprintln!(
                "warning: {}: could not journal this run: {e}",
                path(&self.root).display()
            );
        }
        self.text.clear();
    }
}

fn lock(pending: &std::sync::Mutex<Pending>) -> std::sync::MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(|e| e.into_inner())
}

impl Writer {
    /// How long a done file's line may wait to be appended.
    pub const EVERY: std::time::Duration = std::time::Duration::from_secs(1);

    pub fn new(root: &Path, command: &str) -> Writer {
        Writer::every(root, command, Writer::EVERY)
    }

    fn every(root: &Path, command: &str, every: std::time::Duration) -> Writer {
        let pending = std::sync::Arc::new(std::sync::Mutex::new(Pending {
            root: root.to_path_buf(),
            text: String::new(),
            failed: false,
        }));
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let shared = std::sync::Arc::clone(&pending);
        let ticker = std::thread::Builder::new()
            .name("journal".into())
            .spawn(move || {
                while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(every)
                {
                    lock(&shared).flush();
                }
            })
            .ok();
        Writer {
            stamp: Stamp {
                schema: SCHEMA,
                run_id: run_id(),
                at: now_rfc3339(),
                tool_version: env!("CARGO_PKG_VERSION").to_string(),
                command: command.trim_end_matches(" --dry-run").to_string(),
                dry_run: command.ends_with("--dry-run"),
            },
            prefix: crate::model::outcome::repository_prefix(root),
            pending,
            stop: Some(stop),
            ticker,
            files: 0,
            compliant: 0,
        }
    }

    /// A file is done: its line, unless it tells the report nothing.
    pub fn file(&mut self, outcome: &FileOutcome) {
        if !journalled(outcome) {
            return;
        }
        self.files += 1;
        self.compliant += usize::from(matches!(
            outcome.status,
            FileStatus::Compliant | FileStatus::Fixed
        ));
        let mut pending = lock(&self.pending);
        push_line(
            &mut pending.text,
            "file",
            &file_line(&self.stamp, &self.prefix, outcome),
        );
        if pending.text.len() >= BLOCK {
            pending.flush();
        }
    }

    /// The run is over: what is pending, and the totals.
    pub fn finish(mut self, summary: &Summary) {
        self.stop_ticker();
        let totals = run_line(&self.stamp, self.files, self.compliant, summary);
        let mut pending = lock(&self.pending);
        push_line(&mut pending.text, "run", &totals);
        pending.flush();
    }

    fn stop_ticker(&mut self) {
        self.stop.take();
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
    }
}

impl Drop for Writer {
    /// A run that ends without its totals keeps the lines of the files it did.
    fn drop(&mut self) {
        self.stop_ticker();
        lock(&self.pending).flush();
    }
}

/// The most a block holds before it is appended, whatever the time.
const BLOCK: usize = 1 << 16;

/// Files without GPU code outside every phase tell the report nothing; leave them out.
fn journalled(outcome: &FileOutcome) -> bool {
    outcome.phase.is_some() || outcome.status != FileStatus::NoGpuCode
}

/// A line as written: its type first, so a person reading the file sees what it is.
#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    line: &'a T,
}

fn push_line<T: Serialize>(out: &mut String, kind: &'static str, line: &T) {
    if let Ok(json) = serde_json::to_string(&Tagged { kind, line }) {
        out.push_str(&json);
        out.push('\n');
    }
}

fn file_line(stamp: &Stamp, prefix: &str, o: &FileOutcome) -> FileLine {
    let mut rules: Vec<String> = o
        .findings
        .iter()
        .filter(|f| f.severity == "violation" && !(f.fixed && o.changed))
        .map(|f| f.rule.clone())
        .collect();
    rules.sort();
    rules.dedup();
    FileLine {
        stamp: stamp.clone(),
        path: o.path.clone(),
        repository_path: (!prefix.is_empty()).then(|| format!("{prefix}{}", o.path)),
        phase: o.phase.clone(),
        status: o.status,
        findings: o.findings.len(),
        rules,
        cpu_check: o.cpu_check.as_ref().map(|c| c.status),
        gpu_check: o.gpu_check.clone(),
        content_hash: o.content_hash.clone(),
        error: o.error.clone(),
    }
}

fn run_line(stamp: &Stamp, files: usize, compliant: usize, summary: &Summary) -> RunLine {
    RunLine {
        stamp: stamp.clone(),
        files,
        compliant,
        by_status: summary
            .by_status
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        violations: summary.violations,
        errors: summary.errors,
        cpu_failed: summary.cpu_failed,
        gpu: summary.gpu.clone(),
        interrupted: summary.interrupted,
    }
}

/// Append to the journal of the tree at `root`. The directory and the file are opened as
/// every write under the root is ([`crate::fs::confine`]): a `.gpu-homogenize` or
/// `journal.jsonl` that is a symlink is refused, never followed.
pub fn append_under(root: &Path, text: &str) -> std::io::Result<()> {
    use crate::fs::platform::{self, How};
    let dir = state_dir(&crate::fs::confine::RootDir::open(root)?)?;
    let how = How {
        write: true,
        append: true,
        ..How::READ.nonblocking()
    };
    let name = std::ffi::OsStr::new(JOURNAL_FILE);
    let (file, created) = match platform::open_at(&dir, name, how) {
        Ok(file) => (file, false),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let how = How {
                create: true,
                mode: 0o666,
                ..how
            };
            (platform::open_at(&dir, name, how)?, true)
        }
        Err(e) if platform::is_link_error(&e) => {
            return Err(std::io::Error::other(
                "the journal is a symbolic link; never followed (remove it)",
            ))
        }
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("the journal is not a regular file"));
    }
    append_to(file, text)?;
    if created {
        // The new directory entry must survive a crash too.
        let _ = platform::sync_dir(&dir);
    }
    Ok(())
}

/// Append to the journal file at `target` (the tests; runs use [`append_under`]).
#[cfg(test)]
fn append(target: &Path, text: &str) -> std::io::Result<()> {
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let root = dir.parent().unwrap_or(Path::new("."));
    if dir.file_name() == Some(std::ffi::OsStr::new(JOURNAL_DIR))
        && target.file_name() == Some(std::ffi::OsStr::new(JOURNAL_FILE))
    {
        return append_under(root, text);
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(target)?;
    append_to(file, text)
}

/// One `write` of every line with O_APPEND under an exclusive lock, then fsync: concurrent
/// runs never interleave, and a crash leaves at most a torn last line, which the reader skips.
fn append_to(mut file: std::fs::File, text: &str) -> std::io::Result<()> {
    // Held until `file` is closed; blocks while another run appends.
    crate::fs::platform::lock_exclusive(&file)?;
    let mut buf = String::with_capacity(text.len() + 1);
    if !ends_with_newline(&mut file)? {
        // A torn line left by a crash must not swallow this run's first line.
        buf.push('\n');
    }
    buf.push_str(text);
    file.write_all(buf.as_bytes())?;
    file.sync_all()
}

fn ends_with_newline(file: &mut std::fs::File) -> std::io::Result<bool> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// Unique per run: the time in milliseconds and the process id.
fn run_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("{millis:x}-{:x}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::outcome::{CpuCheck, FindingRecord};

    fn outcome(path: &str, status: FileStatus) -> FileOutcome {
        let mut o = FileOutcome::new(Path::new(path), path);
        o.status = status;
        o.phase = Some("Core modules".into());
        o.content_hash = Some("abc".into());
        o.cpu_check = Some(CpuCheck {
            status: CheckStatus::Passed,
            problems: Vec::new(),
        });
        o
    }

    fn finding(rule: &str, fixed: bool) -> FindingRecord {
        FindingRecord {
            rule: rule.into(),
            name: "n".into(),
            severity: "violation".into(),
            line: 1,
            column: 1,
            message: "m".into(),
            help: None,
            fixable: true,
            applicability: None,
            fixed,
            line_text: "".into(),
            whole_file: false,
        }
    }

    #[test]
    fn a_run_reads_back_as_written() {
        let root = tempfile::tempdir().unwrap();
        let mut fixed = outcome("a.py", FileStatus::Fixed);
        fixed.changed = true;
        fixed.findings = vec![finding("GH001", true), finding("GH201", false)];
        let mut plain = outcome("tools/x.py", FileStatus::NoGpuCode);
        plain.phase = None;
        let outcomes = [fixed, outcome("b.py", FileStatus::Compliant), plain];
        let mut writer = Writer::new(root.path(), "fix");
        outcomes.iter().for_each(|o| writer.file(o));
        writer.finish(&Summary::of(&outcomes, None, false));
        let j = Journal::read(root.path());
        assert!(j.warnings.is_empty(), "{:?}", j.warnings);
        let paths: Vec<&str> = j.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            ["a.py", "b.py"],
            "no GPU code outside phases: not journalled"
        );
        assert_eq!(j.files[0].rules, ["GH201"], "fixed violations are gone");
        assert_eq!(j.files[0].cpu_check, Some(CheckStatus::Passed));
        assert_eq!((j.runs[0].files, j.runs[0].compliant), (2, 2));
        assert_eq!(j.runs[0].stamp.run_id, j.files[0].stamp.run_id);
    }

    #[test]
    fn a_done_file_is_journalled_while_the_run_goes_on_and_kept_when_it_is_cut_short() {
        let root = tempfile::tempdir().unwrap();
        let mut writer = Writer::every(root.path(), "fix", std::time::Duration::from_millis(20));
        writer.file(&outcome("a.py", FileStatus::Fixed));
        // Nothing else happens in the run: the line is appended all the same.
        let mut on_disk = 0;
        for _ in 0..500 {
            on_disk = Journal::read(root.path()).files.len();
            if on_disk == 1 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(
            on_disk, 1,
            "the done file's line is on disk before the run ends"
        );
        writer.file(&outcome("b.py", FileStatus::Compliant));
        drop(writer);
        let j = Journal::read(root.path());
        assert_eq!(j.warnings.len(), 1, "{:?}", j.warnings);
        assert!(
            j.warnings[0].contains("journalled 2 files and no totals: it was cut short"),
            "{:?}",
            j.warnings
        );
        let paths: Vec<&str> = j.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.py", "b.py"], "cut short: no totals, every line");
        assert!(j.runs.is_empty());
    }

    #[test]
    fn appending_after_a_torn_line_starts_a_new_line() {
        let dir = tempfile::tempdir().unwrap();
        let target = path(dir.path());
        append(&target, "{\"complete\":1}\n").unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&target)
            .unwrap()
            .write_all(b"{\"torn\":")
            .unwrap();
        append(&target, "{\"next\":2}\n").unwrap();
        let text = std::fs::read_to_string(&target).unwrap();
        assert_eq!(text, "{\"complete\":1}\n{\"torn\":\n{\"next\":2}\n");
    }

    #[test]
    fn concurrent_appends_never_tear_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let root = root.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let line =
                            format!("{{\"t\":{t},\"i\":{i},\"pad\":\"{}\"}}\n", "x".repeat(3000));
                        append_under(&root, &line.repeat(3)).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = std::fs::read_to_string(path(&root)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 8 * 50 * 3);
        for line in lines {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
    }

    // Unix only: links, FIFOs, modes or signals made through unix calls.
    #[cfg(unix)]
    #[test]
    fn a_journal_symlink_is_never_followed() {
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "keep\n").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(JOURNAL_DIR)).unwrap();
        std::os::unix::fs::symlink(&victim, path(root.path())).unwrap();
        assert!(append_under(root.path(), "{}\n").is_err());
        let dir_link = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir_link.path().join(JOURNAL_DIR)).unwrap();
        assert!(append_under(dir_link.path(), "{}\n").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
        assert!(!outside.path().join(JOURNAL_FILE).exists());
    }
}
