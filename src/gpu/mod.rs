//! The GPU: NVML, the probe child, doctor.

pub mod doctor;
pub mod probe;

use crate::cli::GpuArgs;
use crate::gpu_stage::{GpuChecker, GpuUnavailable};
use crate::policy::Policy;

pub fn open_checker(
    _policy: &Policy,
    _args: &GpuArgs,
) -> Result<Box<dyn GpuChecker>, GpuUnavailable> {
    Err(GpuUnavailable("the GPU stage is not available yet".into()))
}
