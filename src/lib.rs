//! gpu-homogenize: make every file of a code base select its GPU the same way, and prove it.
//!
//! The pipeline (see DESIGN.md): walk → prefilter → parse → detect → plan edits → apply →
//! CPU check → write → GPU slot → outcome → report. `main.rs` only parses the command line.

// Said once, before the hundreds of errors a Windows build would otherwise print.
#[cfg(not(unix))]
compile_error!(
    "gpu-homogenize needs a Unix (it is built and tested on Linux): its file safety (confine.rs, write/, journal/, cache/, leftovers.rs, source.rs: O_NOFOLLOW opens and *at() calls on directory handles, rename swaps, inode identity, flock) and its GPU supervisor (gpu/check.rs, gpu/supervise.rs: process groups, kill, waitpid, dlopen) use std::os::unix and libc with no Windows counterpart yet"
);

pub mod add_noqa;
pub mod baseline;
pub mod cache;
pub mod cli;
pub mod commands;
pub mod confine;
pub mod edit;
pub mod finding;
pub mod gpu;
pub mod index;
pub mod journal;
pub mod lang;
pub mod leftovers;
pub mod line_index;
pub mod lines;
pub mod lint;
pub mod nesting;
pub mod outcome;
pub mod output;
pub mod policy;
pub mod process;
pub mod python;
pub mod removal;
pub mod report;
pub mod rules;
pub mod run;
pub mod rust;
pub mod shard;
pub mod source;
pub mod summary;
pub mod suppress;
pub mod template;
pub mod walk;
pub mod write;
