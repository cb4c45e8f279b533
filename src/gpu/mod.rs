//! The GPU: NVML (physical cards), the probe child (what CUDA selects), the check that
//! compares the two, and `doctor`.

pub mod check;
pub mod doctor;
pub mod nvml;
pub mod probe;
pub mod supervise;

use std::time::Duration;

use crate::cli::GpuArgs;
use crate::gpu_stage::{GpuChecker, GpuUnavailable};
use crate::policy::Policy;
use nvml::Gpus;

/// Open the driver and find the policy's target card: the checker the GPU slot owns.
pub fn open_checker(
    policy: &Policy,
    args: &GpuArgs,
) -> Result<Box<dyn GpuChecker>, GpuUnavailable> {
    let gpus = Gpus::open().map_err(GpuUnavailable)?;
    nvml::cuda_driver_loads().map_err(GpuUnavailable)?;
    let target = gpus.find(&policy.target).cloned().ok_or_else(|| {
        GpuUnavailable(format!(
            "no GPU matches the policy's target ({})",
            describe_cards(&gpus)
        ))
    })?;
    let forbidden = gpus
        .cards
        .iter()
        .filter(|c| policy.forbidden.iter().any(|f| nvml::matches(f, c)) && c.uuid != target.uuid)
        .cloned()
        .collect();
    let exe = std::env::current_exe()
        .map_err(|e| GpuUnavailable(format!("cannot find this program: {e}")))?;
    Ok(Box::new(check::ProbeRunner {
        gpus,
        target,
        forbidden,
        policy: policy.clone(),
        probe_mib: args.probe_mib,
        timeout: Duration::from_secs_f64(args.gpu_timeout.max(0.1)),
        gpu_cmd: args.gpu_cmd.clone(),
        exe,
    }))
}

fn describe_cards(gpus: &Gpus) -> String {
    if gpus.cards.is_empty() {
        return "NVML sees no GPU".into();
    }
    let names: Vec<String> = gpus
        .cards
        .iter()
        .map(|c| format!("{} {}", c.index, c.name))
        .collect();
    format!("NVML sees {}", names.join(", "))
}
