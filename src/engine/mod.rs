//! The engine layer: a run from start to end. The CPU stage per file, the run's set-up, pool
//! and GPU slot, the content cache, the GPU itself (NVML, the probe, supervised checks),
//! leftovers of killed runs, and baselines.

pub(crate) mod baseline;
pub(crate) mod cache;
pub(crate) mod gpu;
pub(crate) mod leftovers;
pub mod process;
pub mod run;
