//! The `__probe` child: initialise CUDA (cudarc, driver API) with the environment of one file,
//! report what it sees, allocate and free a buffer on device 0, print one JSON line, exit.

use serde::{Deserialize, Serialize};

use cudarc::driver::{result, sys};

/// A device as CUDA numbers it inside the child.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProbeDevice {
    pub name: String,
    pub pci_bus_id: String,
    pub uuid: String,
    pub memory_mib: f64,
}

/// What the child prints.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProbeReport {
    pub visible: u32,
    pub devices: Vec<ProbeDevice>,
    pub allocated_mib: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `hold_ms`: hold the buffer that long instead of waiting for the parent's answer.
pub fn run(mib: u64, list: bool, hold_ms: Option<u64>) -> i32 {
    let report = probe(mib, list, hold_ms).unwrap_or_else(|error| ProbeReport {
        error: Some(error),
        ..ProbeReport::default()
    });
    let failed = report.error.is_some();
    // The report is the last line: the parent reads every line before it.
    println!("{}", serde_json::to_string(&report).unwrap_or_default());
    if failed {
        3
    } else {
        0
    }
}

fn probe(mib: u64, list_only: bool, hold_ms: Option<u64>) -> Result<ProbeReport, String> {
    // cudarc panics when it cannot load the library: look first, and say which one.
    if !unsafe { sys::is_culib_present() } {
        return Err(format!(
            "no NVIDIA driver: cannot load {}",
            super::nvml::CUDA_LIB
        ));
    }
    result::init().map_err(|e| format!("cuInit: {e}"))?;
    let count = result::device::get_count().map_err(|e| format!("cuDeviceGetCount: {e}"))?;
    let devices = (0..count).map(describe).collect::<Result<Vec<_>, _>>()?;
    let mut report = ProbeReport {
        visible: count.max(0) as u32,
        devices,
        ..ProbeReport::default()
    };
    if !list_only && count > 0 {
        allocate(mib, hold_ms)?;
        report.allocated_mib = mib;
    }
    Ok(report)
}

fn describe(ordinal: i32) -> Result<ProbeDevice, String> {
    let dev = result::device::get(ordinal).map_err(|e| format!("cuDeviceGet({ordinal}): {e}"))?;
    let name = result::device::get_name(dev).map_err(|e| format!("cuDeviceGetName: {e}"))?;
    let uuid = result::device::get_uuid(dev).map_err(|e| format!("cuDeviceGetUuid: {e}"))?;
    let attr = |a| unsafe { result::device::get_attribute(dev, a) }.unwrap_or(0);
    use sys::CUdevice_attribute::*;
    let pci_bus_id = format!(
        "{:04X}:{:02X}:{:02X}.0",
        attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
        attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
        attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)
    );
    let memory =
        unsafe { result::device::total_mem(dev) }.map_err(|e| format!("cuDeviceTotalMem: {e}"))?;
    Ok(ProbeDevice {
        name,
        pci_bus_id,
        uuid: format_uuid(&uuid.bytes),
        memory_mib: memory as f64 / 1048576.0,
    })
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, as NVML prints it.
pub fn format_uuid(bytes: &[std::ffi::c_char; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{:02x}", *b as u8)).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// What the probe prints while it holds its buffer; the parent samples memory, then answers.
pub const HELD: &str = "{\"held\":true}";

/// Tell the parent the buffer is allocated and wait for its answer (or its end), so that
/// the parent's NVML sample sees the allocation however short the probe is.
fn hold(hold_ms: Option<u64>) {
    use std::io::{BufRead, Write};
    if let Some(ms) = hold_ms {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        return;
    }
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "{HELD}");
    let _ = stdout.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
}

/// A context on device 0, a buffer allocated, held, freed, the context released.
fn allocate(mib: u64, hold_ms: Option<u64>) -> Result<(), String> {
    let dev = result::device::get(0).map_err(|e| format!("cuDeviceGet(0): {e}"))?;
    unsafe {
        let ctx = result::primary_ctx::retain(dev)
            .map_err(|e| format!("cuDevicePrimaryCtxRetain: {e}"))?;
        result::ctx::set_current(ctx).map_err(|e| format!("cuCtxSetCurrent: {e}"))?;
        let bytes = (mib as usize).saturating_mul(1024 * 1024).max(1);
        let ptr = result::malloc_sync(bytes).map_err(|e| format!("cuMemAlloc({mib} MiB): {e}"))?;
        hold(hold_ms);
        result::free_sync(ptr).map_err(|e| format!("cuMemFree: {e}"))?;
        result::primary_ctx::release(dev).map_err(|e| format!("cuDevicePrimaryCtxRelease: {e}"))?;
    }
    Ok(())
}
