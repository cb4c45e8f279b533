//! gpu-homogenize: make every file of a code base select its GPU the same way, and prove it.
//!
//! The pipeline (see DESIGN.md): walk → prefilter → parse → detect → plan edits → apply →
//! CPU check → write → GPU slot → outcome → report. `main.rs` only parses the command line.

// Said once, before the hundreds of errors a macOS or Windows build would otherwise print.
#[cfg(not(target_os = "linux"))]
compile_error!(
    "gpu-homogenize is built and tested on Linux only: its file safety (confine.rs: openat2; write.rs: renameat2 RENAME_EXCHANGE and /proc/<pid>/fd; write/lease.rs: F_SETLEASE; cache/disk.rs, leftovers.rs: /proc/self/fd listings; journal/, source.rs: O_NOFOLLOW opens and flock) and its GPU supervisor (gpu/check.rs, gpu/supervise.rs: prctl PDEATHSIG and CHILD_SUBREAPER, /proc/<pid>/stat) use Linux system calls with no macOS or Windows port yet"
);

// The layers, lowest first; a module imports its own layer or those below (tests/it/layout.rs).
pub mod base;
pub mod cli;
pub mod commands;
pub mod engine;
pub mod fs;
pub(crate) mod journal;
pub(crate) mod knowledge;
pub mod lang;
pub mod model;
pub(crate) mod report;
