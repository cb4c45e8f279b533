//! The cards as NVML sees them: physical PCI order, whatever `CUDA_VISIBLE_DEVICES` says.

use std::path::{Path, PathBuf};

use nvml_wrapper::Nvml;
use serde::Serialize;

use crate::model::policy::CardSelector;

/// The variable that points at the directory holding the driver libraries.
pub const DRIVER_DIR_VAR: &str = "GPU_HOMOGENIZE_DRIVER_DIR";
#[cfg(unix)]
pub const NVML_LIB: &str = "libnvidia-ml.so.1";
#[cfg(unix)]
pub const CUDA_LIB: &str = "libcuda.so";
/// The names cudarc and nvml-wrapper load on Windows (from the driver's System32 copy).
#[cfg(windows)]
pub const NVML_LIB: &str = "nvml.dll";
#[cfg(windows)]
pub const CUDA_LIB: &str = "nvcuda.dll";

/// One physical card.
#[derive(Debug, Clone, Serialize)]
pub struct Card {
    /// NVML index (PCI order).
    pub index: u32,
    pub name: String,
    pub memory_mib: f64,
    pub compute_capability: String,
    pub architecture: &'static str,
    pub pci_bus_id: String,
    pub uuid: String,
    /// Its MIG instances, when MIG mode is on (a `MIG-…` mask selects one of them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mig: Vec<MigInstance>,
}

/// One MIG instance of a card, as NVML names it.
#[derive(Debug, Clone, Serialize)]
pub struct MigInstance {
    pub index: u32,
    pub name: String,
    pub memory_mib: f64,
    pub uuid: String,
}

/// The architecture of a compute capability (seed 002's table is wrong: 9.0 is Hopper,
/// 8.6 is Ampere as in the RTX 3090, 10.x and 12.x are Blackwell).
pub fn architecture(major: i32, minor: i32) -> &'static str {
    match (major, minor) {
        (3, _) => "Kepler",
        (5, _) => "Maxwell",
        (6, _) => "Pascal",
        (7, 0) | (7, 2) => "Volta",
        (7, 5) => "Turing",
        (8, 9) => "Ada Lovelace",
        (8, _) => "Ampere",
        (9, _) => "Hopper",
        (10, _) | (11, _) | (12, _) => "Blackwell",
        _ => "unknown",
    }
}

pub fn driver_dir() -> Option<PathBuf> {
    std::env::var_os(DRIVER_DIR_VAR)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// Whether the CUDA driver library loads: the probe children need it. The error names the
/// library, the directory and the loader's reason (`invalid ELF header`, a missing symbol…).
pub fn cuda_driver_loads() -> Result<(), String> {
    #[cfg(unix)]
    let names = ["libcuda.so.1", "libcuda.so"];
    #[cfg(windows)]
    let names = [CUDA_LIB];
    let mut reasons = Vec::new();
    for name in names {
        let path = driver_dir().map_or_else(|| PathBuf::from(name), |d| d.join(name));
        if driver_dir().is_some() && !path.exists() {
            continue;
        }
        match load_and_close(&path) {
            Ok(()) => return Ok(()),
            Err(Some(reason)) => reasons.push(reason),
            Err(None) => {}
        }
    }
    let place = driver_dir().map_or_else(
        || "the loader's search path".to_string(),
        |d| d.display().to_string(),
    );
    let why = if reasons.is_empty() {
        "not found".to_string()
    } else {
        reasons.join("; ")
    };
    Err(format!(
        "no usable CUDA driver: cannot load {CUDA_LIB} from {place} ({why})"
    ))
}

/// Load the library at `path` and close it at once; the loader's reason when it cannot.
#[cfg(unix)]
fn load_and_close(path: &Path) -> Result<(), Option<String>> {
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return Err(None);
    };
    // SAFETY: dlopen/dlclose/dlerror with a valid C string; the handle is closed at once.
    unsafe {
        let handle = libc::dlopen(c_path.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if !handle.is_null() {
            libc::dlclose(handle);
            return Ok(());
        }
        let error = libc::dlerror();
        if error.is_null() {
            return Err(None);
        }
        Err(Some(
            std::ffi::CStr::from_ptr(error)
                .to_string_lossy()
                .into_owned(),
        ))
    }
}

#[cfg(windows)]
fn load_and_close(path: &Path) -> Result<(), Option<String>> {
    use std::os::windows::ffi::OsStrExt;
    use windows_sys::Win32::Foundation::FreeLibrary;
    use windows_sys::Win32::System::LibraryLoader::LoadLibraryW;
    let wide: Vec<u16> = path.as_os_str().encode_wide().chain([0]).collect();
    // SAFETY: a NUL-terminated name; the module is freed at once.
    unsafe {
        let module = LoadLibraryW(wide.as_ptr());
        if module.is_null() {
            // Named like dlerror's reason: the file, then why.
            let why = std::io::Error::last_os_error();
            return Err(Some(format!("{}: {why}", path.display())));
        }
        FreeLibrary(module);
    }
    Ok(())
}

/// Where NVML is loaded from: `$GPU_HOMOGENIZE_DRIVER_DIR/libnvidia-ml.so.1`, else the
/// loader's search path.
fn nvml_path() -> PathBuf {
    driver_dir().map_or_else(|| PathBuf::from(NVML_LIB), |d| d.join(NVML_LIB))
}

pub struct Gpus {
    nvml: Nvml,
    pub cards: Vec<Card>,
}

impl Gpus {
    /// Open NVML and list the cards; the error names the library that was not found.
    pub fn open() -> Result<Gpus, String> {
        let path = nvml_path();
        let nvml = Nvml::builder()
            .lib_path(path.as_os_str())
            .init()
            .map_err(|e| format!("no NVIDIA driver: cannot load {} ({e})", path.display()))?;
        let count = nvml.device_count().map_err(|e| format!("NVML: {e}"))?;
        let mut cards = Vec::new();
        for index in 0..count {
            let device = nvml
                .device_by_index(index)
                .map_err(|e| format!("NVML device {index}: {e}"))?;
            let cc = device
                .cuda_compute_capability()
                .map_err(|e| format!("NVML: {e}"))?;
            cards.push(Card {
                index,
                name: device.name().map_err(|e| format!("NVML: {e}"))?,
                memory_mib: device
                    .memory_info()
                    .map_or(0.0, |m| m.total as f64 / 1048576.0),
                compute_capability: format!("{}.{}", cc.major, cc.minor),
                architecture: architecture(cc.major, cc.minor),
                pci_bus_id: device.pci_info().map(|p| p.bus_id).unwrap_or_default(),
                uuid: device.uuid().unwrap_or_default(),
                mig: mig_instances(&device),
            });
        }
        Ok(Gpus { nvml, cards })
    }

    /// MiB in use on a card now.
    pub fn used_mib(&self, card: &Card) -> Option<f64> {
        let device = self.nvml.device_by_index(card.index).ok()?;
        device.memory_info().ok().map(|m| m.used as f64 / 1048576.0)
    }

    /// The processes on a card now, with their memory (none where the driver does not say,
    /// as under Windows' WDDM): NVML's compute and graphics lists, a pid in both once. An error
    /// when the driver cannot list compute processes.
    pub fn processes(&self, card: &Card) -> Result<Vec<(u32, Option<f64>)>, String> {
        use nvml_wrapper::enums::device::UsedGpuMemory;
        let device = self
            .nvml
            .device_by_index(card.index)
            .map_err(|e| format!("NVML device {}: {e}", card.index))?;
        let compute = device
            .running_compute_processes()
            .map_err(|e| format!("NVML cannot list the processes on {}: {e}", card.name))?;
        // Some drivers list no graphics processes (or refuse to): the compute list still holds.
        let graphics = device.running_graphics_processes().unwrap_or_default();
        let mut listed: Vec<(u32, Option<f64>)> = Vec::new();
        for process in compute.into_iter().chain(graphics) {
            let mib = match process.used_gpu_memory {
                UsedGpuMemory::Used(bytes) => Some(bytes as f64 / 1048576.0),
                UsedGpuMemory::Unavailable => None,
            };
            match listed.iter_mut().find(|(pid, _)| *pid == process.pid) {
                Some((_, held)) => {
                    *held = match (*held, mib) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    }
                }
                None => listed.push((process.pid, mib)),
            }
        }
        Ok(listed)
    }

    /// A card CUDA named (its UUID, its PCI bus id in CUDA's short form `0000:02:00.0`) by
    /// NVML's bus id (`00000000:02:00.0`), the form `doctor`, the processes and the policy's
    /// cards give; CUDA's own when NVML lists no such card.
    pub fn bus_id(&self, uuid: &str, cuda_bus_id: &str) -> String {
        self.cards
            .iter()
            .find(|c| {
                (!uuid.is_empty() && c.uuid.eq_ignore_ascii_case(uuid))
                    || same_bus_id(&c.pci_bus_id, cuda_bus_id)
            })
            .map_or_else(|| cuda_bus_id.to_string(), |c| c.pci_bus_id.clone())
    }

    /// The first card the selector matches.
    pub fn find(&self, selector: &CardSelector) -> Option<&Card> {
        self.cards.iter().find(|c| matches(selector, c))
    }
}

/// The MIG instances of a card in MIG mode; none when MIG is off or not supported.
fn mig_instances(device: &nvml_wrapper::Device) -> Vec<MigInstance> {
    if !device.mig_mode().is_ok_and(|m| m.current == 1) {
        return Vec::new();
    }
    let slots = device.mig_device_count().unwrap_or(0);
    (0..slots)
        .filter_map(|index| {
            // A slot without an instance is NOT_FOUND.
            let mig = device.mig_device_by_index(index).ok()?;
            Some(MigInstance {
                index,
                name: mig.name().unwrap_or_default(),
                memory_mib: mig
                    .memory_info()
                    .map_or(0.0, |m| m.total as f64 / 1048576.0),
                uuid: mig.uuid().ok()?,
            })
        })
        .collect()
}

pub fn matches(selector: &CardSelector, card: &Card) -> bool {
    let name = selector
        .name
        .as_ref()
        .is_none_or(|n| card.name.contains(n.as_str()));
    let memory = selector
        .min_memory_gib
        .is_none_or(|gib| card.memory_mib >= gib * 1024.0 - 1.0);
    let bus = selector
        .pci_bus_id
        .as_ref()
        .is_none_or(|b| same_bus_id(b, &card.pci_bus_id));
    let uuid = selector.uuid.as_ref().is_none_or(|u| {
        // A card, or one of its MIG instances.
        card.uuid.eq_ignore_ascii_case(u) || card.mig.iter().any(|m| m.uuid.eq_ignore_ascii_case(u))
    });
    name && memory && bus && uuid
}

pub use crate::model::policy::same_bus_id;

/// The dynamic-loader path the probe child gets, so cudarc finds the same driver.
pub fn child_library_path() -> Option<String> {
    let dir = driver_dir()?;
    let (var, separator) = super::tree::LIBRARY_PATH;
    let inherited = std::env::var(var).unwrap_or_default();
    let dir = dir.display().to_string();
    Some(if inherited.is_empty() {
        dir
    } else {
        format!("{dir}{separator}{inherited}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_from_compute_capability() {
        assert_eq!(architecture(8, 6), "Ampere");
        assert_eq!(architecture(8, 9), "Ada Lovelace");
        assert_eq!(architecture(9, 0), "Hopper");
        assert_eq!(architecture(12, 0), "Blackwell");
        assert_eq!(architecture(10, 0), "Blackwell");
        assert_eq!(architecture(7, 5), "Turing");
    }

    #[test]
    fn bus_ids_compare_across_domain_widths() {
        assert!(same_bus_id("0000:02:00.0", "00000000:02:00.0"));
        assert!(same_bus_id("02:00.0", "00000000:02:00.0"));
        assert!(!same_bus_id("0000:01:00.0", "00000000:02:00.0"));
    }
}
