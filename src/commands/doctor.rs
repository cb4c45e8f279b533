//! `gpu-homogenize doctor`: the cards NVML sees, the CUDA index each gets under each
//! ordering (asked of the CUDA driver itself, in probe children), and what the policy selects.

use std::process::Command;

use serde::Serialize;

use super::{EXIT_ERROR, EXIT_FINDINGS, EXIT_OK};
use crate::cli::{DoctorArgs, DoctorFormat};
use crate::engine::gpu::nvml::{child_library_path, same_bus_id, Card, Gpus};
use crate::engine::gpu::probe::ProbeReport;
use crate::engine::run::setup;
use crate::model::policy::{EnvVar, Policy};

const ORDERS: [&str; 2] = ["FASTEST_FIRST", "PCI_BUS_ID"];

#[derive(Serialize)]
struct CardReport {
    #[serde(flatten)]
    card: Card,
    fastest_first_index: Option<usize>,
    pci_bus_id_index: Option<usize>,
    role: &'static str,
}

#[derive(Serialize)]
struct Selection {
    order: &'static str,
    device_0: Option<String>,
    selects_target: bool,
}

#[derive(Serialize)]
struct Doctor {
    cards: Vec<CardReport>,
    visible_devices: String,
    selections: Vec<Selection>,
    /// Variables of a scheduler that assigns cards, and masks inherited from the caller.
    scheduler: Vec<(String, String)>,
}

/// Variables through which Slurm, Ray, Kubernetes (NVIDIA's device plugin), PBS or LSF tell a
/// process which cards it got, and the masks it inherits.
pub const SCHEDULER_VARS: &[&str] = &[
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
    "SLURM_GPUS_ON_NODE",
    "GPU_DEVICE_ORDINAL",
    "RAY_ADDRESS",
    "NVIDIA_VISIBLE_DEVICES",
    "KUBERNETES_SERVICE_HOST",
    "PBS_JOBID",
    "LSB_JOBID",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
];

fn scheduler_env() -> Vec<(String, String)> {
    SCHEDULER_VARS
        .iter()
        .filter_map(|v| std::env::var(v).ok().map(|value| (v.to_string(), value)))
        .collect()
}

pub fn run(args: &DoctorArgs) -> anyhow::Result<i32> {
    let input = crate::engine::run::RunInput {
        paths: Vec::new(),
        config: args.config.clone(),
        max_file_size: 0,
        jobs: None,
        stdin_filename: None,
        no_cache: true,
        shard: None,
        ..Default::default()
    };
    let policy = setup(&input)?.config.policy;
    let gpus = match Gpus::open() {
        Ok(gpus) => gpus,
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!(
                "hint: set {} to the directory holding the driver libraries",
                crate::engine::gpu::nvml::DRIVER_DIR_VAR
            );
            return Ok(EXIT_ERROR);
        }
    };
    let mut doctor = examine(&gpus, &policy)?;
    doctor.scheduler = scheduler_env();
    match args.format {
        DoctorFormat::Json => println!("{}", crate::base::escape::json(&doctor)?),
        // The policy's values come from the tree's config: each line printable.
        DoctorFormat::Text => print!("{}", crate::base::escape::lines(&render(&doctor, &policy))),
    }
    let good = doctor
        .selections
        .iter()
        .any(|s| s.order == "PCI_BUS_ID" && s.selects_target);
    Ok(if good { EXIT_OK } else { EXIT_FINDINGS })
}

fn examine(gpus: &Gpus, policy: &Policy) -> anyhow::Result<Doctor> {
    let mut orders = Vec::new();
    for order in ORDERS {
        orders.push(list(&[("CUDA_DEVICE_ORDER", order)])?);
    }
    let target = gpus.find(&policy.target);
    let cards = gpus
        .cards
        .iter()
        .map(|card| CardReport {
            card: card.clone(),
            fastest_first_index: position(&orders[0], card),
            pci_bus_id_index: position(&orders[1], card),
            role: role(card, target, policy),
        })
        .collect();
    let mut selections = Vec::new();
    for order in ORDERS {
        // A mask naming no card of this machine is what doctor is for: the driver reports no
        // device (CUDA_ERROR_NO_DEVICE), and the policy selects nothing here.
        let seen = match list(&[
            ("CUDA_DEVICE_ORDER", order),
            ("CUDA_VISIBLE_DEVICES", &policy.visible_devices),
        ]) {
            Err(e) if e.to_string().contains("CUDA_ERROR_NO_DEVICE") => ProbeReport::default(),
            other => other?,
        };
        let first = seen.devices.first();
        selections.push(Selection {
            order,
            device_0: first
                .map(|d| format!("{} ({})", d.name, gpus.bus_id(&d.uuid, &d.pci_bus_id))),
            selects_target: first
                .zip(target)
                .is_some_and(|(d, t)| same_bus_id(&d.pci_bus_id, &t.pci_bus_id)),
        });
    }
    Ok(Doctor {
        cards,
        visible_devices: policy.visible_devices.clone(),
        selections,
        scheduler: Vec::new(),
    })
}

fn role(card: &Card, target: Option<&Card>, policy: &Policy) -> &'static str {
    if target.is_some_and(|t| t.uuid == card.uuid) {
        "target"
    } else if policy
        .forbidden
        .iter()
        .any(|f| crate::engine::gpu::nvml::matches(f, card))
    {
        "forbidden"
    } else {
        "-"
    }
}

fn position(report: &ProbeReport, card: &Card) -> Option<usize> {
    report
        .devices
        .iter()
        .position(|d| same_bus_id(&d.pci_bus_id, &card.pci_bus_id))
}

/// Ask the CUDA driver, in a child with exactly this env, which devices it sees in which order.
fn list(env: &[(&str, &str)]) -> anyhow::Result<ProbeReport> {
    let mut command = Command::new(std::env::current_exe()?);
    command.args(["__probe", "--list"]);
    for var in EnvVar::ALL {
        command.env_remove(var.name());
    }
    command.envs(env.iter().copied());
    if let Some(path) = child_library_path() {
        command.env(crate::engine::gpu::tree::LIBRARY_PATH.0, path);
    }
    let out = command.output()?;
    let report: ProbeReport = serde_json::from_slice(&out.stdout).map_err(|e| {
        anyhow::anyhow!(
            "the CUDA probe failed ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    if let Some(error) = report.error {
        anyhow::bail!("{error}");
    }
    Ok(report)
}

fn render(d: &Doctor, policy: &Policy) -> String {
    let mut out = String::from("GPUs (NVML, PCI order):\n");
    out.push_str("  idx  name                          memory     cc    arch           PCI bus id        FASTEST_FIRST  PCI_BUS_ID  role       UUID\n");
    for c in &d.cards {
        let idx = |i: Option<usize>| i.map_or("-".to_string(), |i| format!("cuda:{i}"));
        out.push_str(&format!(
            "  {:<4} {:<29} {:>6.1} GiB  {:<5} {:<14} {:<17} {:<14} {:<11} {:<10} {}\n",
            c.card.index,
            c.card.name,
            c.card.memory_mib / 1024.0,
            c.card.compute_capability,
            c.card.architecture,
            c.card.pci_bus_id,
            idx(c.fastest_first_index),
            idx(c.pci_bus_id_index),
            c.role,
            c.card.uuid
        ));
        for m in &c.card.mig {
            let selected = d.visible_devices.split(',').any(|e| {
                e.starts_with("MIG-")
                    && m.uuid
                        .to_ascii_lowercase()
                        .starts_with(&e.to_ascii_lowercase())
            });
            out.push_str(&format!(
                "       MIG {:<2} {:<26} {:>6.1} GiB  {}{}\n",
                m.index,
                m.name,
                m.memory_mib / 1024.0,
                m.uuid,
                if selected {
                    "  <- the mask selects it"
                } else {
                    ""
                }
            ));
        }
    }
    out.push_str(&format!(
        "\nPolicy: target {}, forbidden {}; CUDA_VISIBLE_DEVICES='{}'\n",
        policy.target.label(),
        if policy.forbidden.is_empty() {
            "none".to_string()
        } else {
            policy
                .forbidden
                .iter()
                .map(|f| f.label())
                .collect::<Vec<_>>()
                .join(", ")
        },
        d.visible_devices
    ));
    for s in &d.selections {
        out.push_str(&format!(
            "  with CUDA_DEVICE_ORDER={:<13} device 0 is {} -> {}\n",
            s.order,
            s.device_0
                .as_deref()
                .unwrap_or("nothing (the mask names no card of this machine: CUDA sees no device)"),
            if s.selects_target {
                "the target"
            } else {
                "NOT the target"
            }
        ));
    }
    out.push_str("\nScheduler and inherited masks:");
    if d.scheduler.is_empty() {
        out.push_str(" none seen\n");
        return out;
    }
    out.push('\n');
    for (name, value) in &d.scheduler {
        out.push_str(&format!("  {name}={value}\n"));
    }
    let assigned = d
        .scheduler
        .iter()
        .any(|(n, _)| !n.starts_with("CUDA_") && n != "KUBERNETES_SERVICE_HOST");
    if assigned && !policy.respect_scheduler {
        out.push_str("  note: a scheduler assigns cards here; with `respect_scheduler = true` the header only sets variables that are unset, so its mask wins\n");
    }
    out
}
