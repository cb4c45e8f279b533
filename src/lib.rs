//! gpu-homogenize: make every file of a code base select its GPU the same way, and prove it.
//!
//! The pipeline (see DESIGN.md): walk → prefilter → parse → detect → plan edits → apply →
//! CPU check → write → GPU slot → outcome → report. `main.rs` only parses the command line.

// Said once, before the errors another target would print: the file-safety layer
// (`fs/platform/`) has a unix and a Windows implementation, but the GPU supervisor
// (`engine/gpu/supervise.rs`) has a Linux one (subreaper, /proc) and a Windows one (Job Objects) only.
#[cfg(not(any(target_os = "linux", windows)))]
compile_error!(
    "gpu-homogenize is built and tested on Linux and on Windows (under Wine here): the GPU supervisor (engine/gpu/supervise.rs) has no port for this system yet"
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
