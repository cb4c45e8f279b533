//! The GPU: NVML (physical cards), the probe child (what CUDA selects), the check that
//! compares the two, and `doctor`.

pub mod account;
pub mod check;
pub mod nvml;
pub mod probe;
pub mod supervise;
pub mod tree;

use std::time::Duration;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::model::outcome::GpuCheck;
use crate::model::policy::Policy;
use nvml::Gpus;

/// One file's GPU check, as the slot receives it.
#[derive(Debug, Clone)]
pub struct GpuJob {
    /// Index of the file in the run, to put the result back in place.
    pub index: usize,
    pub path: PathBuf,
    /// The env the file's own header sets.
    pub env: Vec<(String, String)>,
}

/// What owns the GPU: runs one check and reports it. `started` is the start of the run,
/// for `started_ms` / `finished_ms`.
pub trait GpuChecker: Send {
    fn check(&mut self, job: &GpuJob, started: Instant, cancelled: &AtomicBool) -> GpuCheck;
    /// The card the checks run on, for the summary.
    fn device(&self) -> Option<String>;
}

/// Why the GPU stage cannot run (no driver, no target card…).
#[derive(Debug, Clone)]
pub struct GpuUnavailable(pub String);

/// How a check runs: the command line's `--probe-mib`, `--gpu-timeout` and `--gpu-cmd`.
#[derive(Debug, Clone)]
pub struct CheckSettings {
    pub probe_mib: u64,
    pub timeout_secs: f64,
    pub gpu_cmd: Option<String>,
}

/// Open the driver and find the policy's target card: the checker the GPU slot owns.
pub fn open_checker(
    policy: &Policy,
    args: &CheckSettings,
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
        timeout: Duration::from_secs_f64(args.timeout_secs.max(0.1)),
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

/// This machine's name, for the checks a coordinator merges from several hosts.
pub fn host_name() -> Option<String> {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: a buffer of the length passed; the name is NUL-terminated when it fits.
        let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
        let end = buf.iter().position(|b| *b == 0)?;
        let name = String::from_utf8_lossy(&buf[..end]).into_owned();
        (ok && !name.is_empty()).then_some(name)
    }
    #[cfg(windows)]
    {
        std::env::var("COMPUTERNAME").ok().filter(|n| !n.is_empty())
    }
}
