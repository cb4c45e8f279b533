//! gpu-homogenize: make every file of a code base select its GPU the same way, and prove it.
//!
//! The pipeline (see DESIGN.md): walk → prefilter → parse → detect → plan edits → apply →
//! CPU check → write → GPU slot → outcome → report. `main.rs` only parses the command line.

// Said once, before the hundreds of errors a macOS or Windows build would otherwise print.
#[cfg(not(target_os = "linux"))]
compile_error!(
    "gpu-homogenize is built and tested on Linux only: its file safety (confine.rs: openat2; write.rs: renameat2 RENAME_EXCHANGE and /proc/<pid>/fd; write/lease.rs: F_SETLEASE; cache/disk.rs, leftovers.rs: /proc/self/fd listings; journal/, source.rs: O_NOFOLLOW opens and flock) and its GPU supervisor (gpu/check.rs, gpu/supervise.rs: prctl PDEATHSIG and CHILD_SUBREAPER, /proc/<pid>/stat) use Linux system calls with no macOS or Windows port yet"
);

pub mod add_noqa;
pub mod baseline;
pub mod cache;
pub mod cli;
pub mod commands;
pub mod confine;
pub mod edit;
pub mod escape;
pub mod finding;
pub mod gpu;
pub mod journal;
pub mod knowledge;
pub mod lang;
pub mod leftovers;
pub mod line_index;
pub mod lines;
pub mod lint;
pub mod nesting;
pub mod outcome;
pub mod output;
pub mod panics;
pub mod paths;
pub mod policy;
pub mod process;
pub mod python;
pub mod removal;
pub mod report;
pub mod resources;
pub mod rules;
pub mod run;
pub mod rust;
pub mod shard;
pub mod source;
pub mod state;
pub mod summary;
pub mod suppress;
pub mod template;
pub mod tree_file;
pub mod walk;
pub mod write;
