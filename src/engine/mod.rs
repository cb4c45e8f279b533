//! The engine layer: a run from start to end. The CPU stage per file, the run's set-up, pool
//! and GPU slot, the content cache, the GPU itself (NVML, the probe, supervised checks),
//! leftovers of killed runs, and baselines.

pub mod baseline;
pub mod cache;
pub mod gpu;
pub mod leftovers;
pub mod process;
pub mod run;
