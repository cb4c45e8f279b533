//! What every file of a run shares: open file descriptors and memory. Running out of either is
//! the run's error, never a file's: a file whose open failed with EMFILE is not "changed on
//! disk", nor unreadable, and nothing is kept aside or left behind because of it. The run stops
//! taking files, and says what to raise. A file too large for the memory there is, by contrast,
//! that file's own error (see [`headroom`]); a panic while one file is analysed, that file's
//! (see `run/cpu.rs`).

use std::io;
use std::sync::OnceLock;

/// A resource the whole run shares, gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhausted {
    /// EMFILE (this process's limit) or ENFILE (the system's).
    Files,
    /// ENOMEM from the kernel.
    Memory,
}

impl Exhausted {
    /// The shared resource `e` says is gone, if that is what it says.
    pub fn of(e: &io::Error) -> Option<Exhausted> {
        match e.raw_os_error() {
            Some(code) if crate::fs::platform::out_of_files(code) => Some(Exhausted::Files),
            Some(code) if crate::fs::platform::out_of_memory(code) => Some(Exhausted::Memory),
            _ if e.kind() == io::ErrorKind::OutOfMemory => Some(Exhausted::Memory),
            _ => None,
        }
    }
}

impl std::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exhausted::Files => {
                let limit = open_files_limit().map_or(String::new(), |n| format!(", now {n}"));
                write!(
                    f,
                    "too many open files: raise `ulimit -n`{limit} (or lower --jobs), then run again"
                )
            }
            Exhausted::Memory => write!(
                f,
                "out of memory: free some memory or raise `ulimit -v` (or lower --jobs), then run again"
            ),
        }
    }
}

use crate::fs::platform::open_files_limit;

/// The run's stop: set by the first file that found a shared resource gone, with that file;
/// the files not started yet are not processed, and the run ends with [`RunStop::error`].
#[derive(Debug, Default)]
pub struct RunStop(OnceLock<(Exhausted, String)>);

impl RunStop {
    /// `what` ran out while `rel` was processed (the first such file is the one named).
    pub fn stop(&self, what: Exhausted, rel: &str) {
        let _ = self.0.set((what, rel.to_string()));
    }

    pub fn stopped(&self) -> bool {
        self.0.get().is_some()
    }

    /// The run's error, once stopped.
    pub fn error(&self) -> Option<String> {
        self.0.get().map(|(what, rel)| {
            format!(
                "{what} (the run stopped at {}; the files not reached were left as they were)",
                crate::model::outcome::quoted(rel)
            )
        })
    }
}

/// About how many bytes of memory analysing a source of one byte takes at its peak (the bytes,
/// the text, the tokens, the AST and its facts, the rewrite): a 10 MB file of dense Python
/// peaked at 62 times its size, in `scan` and in `fix --dry-run` alike.
pub const ANALYSIS_FACTOR: usize = 64;

/// Whether a source of `len` bytes can be analysed here: that much memory, times
/// [`ANALYSIS_FACTOR`], can be reserved (and is released at once: address space, never touched).
/// Without it, an allocation deep in the parser would abort the whole run.
pub fn headroom(len: usize) -> Result<(), usize> {
    // A small file cannot matter, and a reservation per file would cost a map and an unmap.
    if len < 1 << 20 {
        return Ok(());
    }
    let need = len.saturating_mul(ANALYSIS_FACTOR);
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(need).map_err(|_| need)
}
