//! The GPU stage against the simulated driver (fixtures/fakegpu): the real cudarc and
//! nvml-wrapper code runs, over a two-card topology where PCI bus 1 is the RTX 5060 Ti
//! (forbidden, and the faster one) and bus 2 the RTX 3090 (the target).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::{self, copy_fixture, run};
use assert_cmd::Command;
use serde_json::Value;

const TOPOLOGY: &str =
    "NVIDIA GeForce RTX 5060 Ti,16,12.0,0000:01:00.0,1;NVIDIA GeForce RTX 3090,24,8.6,0000:02:00.0,2";

/// Build the simulated driver once per test binary.
#[cfg(unix)]
fn fake_library() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let target = root.join("target").join("fakegpu");
        let status = std::process::Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "--locked",
                "-p",
                "fakegpu",
                "--target-dir",
            ])
            .arg(&target)
            .current_dir(root)
            .status()
            .expect("cargo builds fakegpu");
        assert!(status.success(), "building fixtures/fakegpu failed");
        target.join("debug").join("libfakegpu.so")
    })
}

/// The simulated driver built for Windows beforehand: a test under Wine cannot start the
/// Linux `cargo`, so `scripts/windows/test.sh` builds `fakegpu.dll` and names it in
/// `FAKEGPU_DLL`.
#[cfg(windows)]
fn fake_library() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let lib = std::env::var_os("FAKEGPU_DLL").map(PathBuf::from).expect(
            "FAKEGPU_DLL names fakegpu.dll (scripts/windows/test.sh builds it for the GPU tests)",
        );
        assert!(lib.is_file(), "FAKEGPU_DLL: {} not found", lib.display());
        lib
    })
}

/// The names the driver's libraries carry where cudarc and nvml-wrapper look for them.
#[cfg(unix)]
const DRIVER_NAMES: [&str; 3] = ["libcuda.so", "libcuda.so.1", "libnvidia-ml.so.1"];
#[cfg(windows)]
const DRIVER_NAMES: [&str; 2] = ["nvcuda.dll", "nvml.dll"];
/// The names an error message gives NVML and the CUDA driver.
#[cfg(unix)]
const NVML_LIB: &str = "libnvidia-ml.so.1";
#[cfg(unix)]
const CUDA_LIB: &str = "libcuda.so";
#[cfg(windows)]
const NVML_LIB: &str = "nvml.dll";
#[cfg(windows)]
const CUDA_LIB: &str = "nvcuda.dll";

/// A driver directory (the CUDA driver and NVML under their names) and a state file.
struct FakeDriver {
    dir: tempfile::TempDir,
}

impl FakeDriver {
    fn new() -> FakeDriver {
        let dir = tempfile::tempdir().unwrap();
        for name in DRIVER_NAMES {
            std::fs::copy(fake_library(), dir.path().join(name)).unwrap();
        }
        FakeDriver { dir }
    }

    /// The binary in `cwd`, on this driver, with no simulated fault and no inherited mask.
    fn std_command(&self, cwd: &Path) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpu-homogenize"));
        cmd.current_dir(cwd)
            .env("GPU_HOMOGENIZE_DRIVER_DIR", self.dir.path())
            .env("FAKEGPU_DEVICES", TOPOLOGY)
            .env("FAKEGPU_STATE", self.dir.path().join("state"))
            .env_remove("FAKEGPU_LEAK_MIB")
            .env_remove("FAKEGPU_HANG")
            .env_remove("FAKEGPU_PROBE_DELAY_MS")
            .env_remove("FAKEGPU_NO_PROCESS_LIST")
            .env_remove("FAKEGPU_NO_PROCESS_MEMORY")
            .env_remove("FAKEGPU_PID_OFFSET")
            .env_remove("FAKEGPU_RELEASE_MS")
            .env_remove("CUDA_VISIBLE_DEVICES")
            .env_remove("CUDA_DEVICE_ORDER");
        cmd
    }

    fn command(&self, cwd: &Path) -> Command {
        Command::from_std(self.std_command(cwd))
    }
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn mission_checks(doc: &Value) -> Vec<Value> {
    doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["phase"].is_string())
        .map(|f| f["gpu_check"].clone())
        .collect()
}

#[test]
fn the_mission_passes_on_the_target_card_and_checks_never_overlap() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let out = run(driver.command(tree.path()).args([
        "fix",
        "--gpu",
        "require",
        "--format",
        "json",
        "--no-journal",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = json(&out.stdout);
    let fixed = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "fixed")
        .count();
    assert_eq!(fixed, 40);
    let checks = mission_checks(&doc);
    assert_eq!(checks.len(), 40);
    for check in &checks {
        assert_eq!(check["status"], "passed", "{check}");
        assert_eq!(check["device_name"], "NVIDIA GeForce RTX 3090");
        assert_eq!(check["pci_bus_id"], "00000000:02:00.0");
        assert_eq!(check["visible_devices"], 1);
        assert!(
            check["mem_peak_mib"].as_f64().unwrap() >= 300.0,
            "the probe's context shows in the peak: {check}"
        );
        assert_eq!(check["leak_mib"], 0.0);
    }
    let mut spans: Vec<(u64, u64)> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| {
            Some((
                f["gpu_check"]["started_ms"].as_u64()?,
                f["gpu_check"]["finished_ms"].as_u64()?,
            ))
        })
        .collect();
    spans.sort();
    assert_eq!(
        spans.len(),
        41,
        "the compliant file outside the mission is checked too"
    );
    for pair in spans.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "checks overlap: {pair:?}");
    }
    assert_eq!(doc["summary"]["gpu"]["passed"], 41);
    assert_eq!(doc["summary"]["gpu"]["drift_failed"], false);
}

#[test]
fn a_leak_is_reported_per_file_and_fails_the_run() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let out = run(driver
        .command(tree.path())
        .env("FAKEGPU_LEAK_MIB", "200")
        .args([
            "fix",
            "--gpu",
            "require",
            "--format",
            "json",
            "--no-journal",
        ]));
    assert_eq!(out.code, 1, "a leak fails the run");
    let doc = json(&out.stdout);
    for check in mission_checks(&doc) {
        assert_eq!(check["status"], "leak", "{check}");
        let leak = check["leak_mib"].as_f64().unwrap();
        assert!((leak - 200.0).abs() < 0.5, "{check}");
    }
    let gpu = &doc["summary"]["gpu"];
    assert_eq!(gpu["leaks"], 41);
    assert_eq!(gpu["drift_mib"], 8200.0);
    assert_eq!(gpu["drift_failed"], true);
    let text = run(driver
        .command(tree.path())
        .env("FAKEGPU_LEAK_MIB", "200")
        .args([
            "check",
            "--gpu",
            "require",
            "--no-journal",
            "STT/vad_manager.py",
        ]));
    assert!(
        text.stdout.contains(&format!(
            "gpu LEAK: {} on NVIDIA GeForce RTX 3090, leak 200 MiB",
            common::shown("STT/vad_manager.py")
        )),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("drift 200 MiB (fail above 50 MiB): FAILED"),
        "{}",
        text.stdout
    );
}

#[test]
fn visible_devices_without_pci_order_selects_the_forbidden_card() {
    let driver = FakeDriver::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("trap.py"),
        "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nimport torch\n",
    )
    .unwrap();
    let out = run(driver.command(dir.path()).args([
        "check",
        "--gpu",
        "require",
        "--no-journal",
        "--format",
        "json",
    ]));
    assert_eq!(out.code, 1);
    let check = &json(&out.stdout)["files"][0]["gpu_check"];
    assert_eq!(check["status"], "failed");
    assert_eq!(check["device_name"], "NVIDIA GeForce RTX 5060 Ti");
    let message = check["message"].as_str().unwrap();
    assert!(message.contains("a forbidden card"), "{message}");
    assert!(
        message.contains("without CUDA_DEVICE_ORDER=PCI_BUS_ID"),
        "{message}"
    );
    // In GitLab's report: a `critical` issue of its own, beside the file's findings.
    let out = run(driver.command(dir.path()).args([
        "check",
        "--gpu",
        "require",
        "--no-journal",
        "--format",
        "gitlab",
    ]));
    assert_eq!(out.code, 1);
    let issues = json(&out.stdout);
    let gpu: Vec<&Value> = issues
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["check_name"] == "GH900")
        .collect();
    assert_eq!(gpu.len(), 1, "{}", out.stdout);
    assert_eq!(gpu[0]["severity"], "critical");
    assert_eq!(gpu[0]["location"]["path"], "trap.py");
    let description = gpu[0]["description"].as_str().unwrap();
    assert!(
        description.starts_with("GH900 GPU check failed on NVIDIA GeForce RTX 5060 Ti: ")
            && description.contains("a forbidden card"),
        "{description}"
    );
}

/// `check -`: the piped source gets its GPU check too, with the env its own header sets (the
/// file it is named as is not on disk).
#[test]
fn a_source_from_stdin_is_checked_on_the_gpu() {
    let driver = FakeDriver::new();
    let dir = tempfile::tempdir().unwrap();
    let check = |source: &str| {
        let out = run(driver
            .command(dir.path())
            .args([
                "check",
                "-",
                "--stdin-filename",
                "trap.py",
                "--gpu",
                "require",
            ])
            .args(["--no-journal", "--format", "json"])
            .write_stdin(source));
        (out.code, json(&out.stdout))
    };
    let (code, doc) = check("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nimport torch\n");
    assert_eq!(code, 1);
    let gpu = &doc["files"][0]["gpu_check"];
    assert_eq!(
        (&gpu["status"], &gpu["device_name"]),
        (&"failed".into(), &"NVIDIA GeForce RTX 5060 Ti".into())
    );
    let fixed = run(driver
        .command(dir.path())
        .args(["fix", "-", "--stdin-filename", "trap.py"])
        .write_stdin("import torch\nx = torch.zeros(1).cuda()\n"));
    let (code, doc) = check(&fixed.stdout);
    assert_eq!(code, 0, "{doc}");
    let gpu = &doc["files"][0]["gpu_check"];
    assert_eq!(
        (&gpu["status"], &gpu["device_name"]),
        (&"passed".into(), &"NVIDIA GeForce RTX 3090".into())
    );
    assert_eq!(
        (
            &doc["summary"]["gpu"]["checks"],
            &doc["summary"]["gpu"]["passed"]
        ),
        (&1.into(), &1.into())
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing written"
    );
}

/// `check --shard I/N` on three runners, merged: the GPU verdicts and the leak ledger of one run
/// (each check leaks under the alert, their sum passes the limit: exit 1, though no SARIF result
/// fails), the SARIF byte for byte the unsharded run's.
#[test]
fn merged_check_shards_keep_the_ledger_of_one_run() {
    let driver = FakeDriver::new();
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c", "d", "e"] {
        std::fs::write(
            dir.path().join(format!("{name}.py")),
            "import torch\nx = torch.zeros(1).cuda()\n",
        )
        .unwrap();
    }
    let fixed = run(driver
        .command(dir.path())
        .args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(fixed.code, 0, "{}", fixed.stdout);
    let check = |format: &str, shard: Option<&str>| {
        let mut cmd = driver.command(dir.path());
        cmd.env("FAKEGPU_LEAK_MIB", "30").args([
            "check",
            "--gpu",
            "require",
            "--no-journal",
            "--format",
            format,
        ]);
        if let Some(shard) = shard {
            cmd.args(["--shard", shard]);
        }
        run(&mut cmd)
    };
    let out = tempfile::tempdir().unwrap();
    for format in ["json", "sarif"] {
        let whole = check(format, None);
        assert_eq!(whole.code, 1, "{format}: the drift fails the run");
        let shards: Vec<PathBuf> = ["1/3", "2/3", "3/3"]
            .iter()
            .enumerate()
            .map(|(i, shard)| {
                let path = out.path().join(format!("{i}.{format}"));
                std::fs::write(&path, check(format, Some(shard)).stdout).unwrap();
                path
            })
            .collect();
        let merged = run(driver
            .command(out.path())
            .args(["report", "--merge"])
            .args(&shards));
        assert_eq!(merged.code, 1, "{format}: {}", merged.stderr);
        if format == "sarif" {
            assert_eq!(merged.stdout, whole.stdout);
            continue;
        }
        let (whole, merged) = (json(&whole.stdout), json(&merged.stdout));
        let gpu = |doc: &Value| {
            let mut gpu = doc["summary"]["gpu"].clone();
            let drift = gpu["drift_mib"].as_f64().unwrap();
            gpu["drift_mib"] = ((drift / 10.0).round() * 10.0).into();
            gpu
        };
        assert_eq!(gpu(&merged), gpu(&whole));
        assert_eq!(gpu(&merged)["drift_mib"], 150.0);
        assert_eq!(merged["summary"]["gpu"]["drift_failed"], true);
        let verdicts = |doc: &Value| -> Vec<(Value, Value, Value)> {
            let files = doc["files"].as_array().unwrap();
            let verdict = |f: &Value| {
                (
                    f["path"].clone(),
                    f["status"].clone(),
                    f["gpu_check"]["status"].clone(),
                )
            };
            files.iter().map(verdict).collect()
        };
        assert_eq!(verdicts(&merged), verdicts(&whole));
    }
}

#[test]
fn a_hanging_probe_is_killed_at_its_timeout_and_the_run_goes_on() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let out = run(driver.command(tree.path()).env("FAKEGPU_HANG", "1").args([
        "check",
        "--gpu",
        "require",
        "--gpu-timeout",
        "0.3",
        "--no-journal",
        "--format",
        "json",
        "tools/compliant_example.py",
        "STT/vad_manager.py",
    ]));
    assert_eq!(out.code, 1);
    let doc = json(&out.stdout);
    for file in doc["files"].as_array().unwrap() {
        assert_eq!(file["gpu_check"]["status"], "error", "{file}");
        assert!(
            file["gpu_check"]["message"]
                .as_str()
                .unwrap()
                .starts_with("timed out after 0 s"),
            "{file}"
        );
    }
    assert_eq!(doc["summary"]["gpu"]["errors"], 2);
}

#[test]
fn without_a_driver_auto_notes_it_once_and_require_fails() {
    let tree = copy_fixture("superwhisper-v6");
    let mut auto = common::gh(tree.path());
    auto.env("GPU_HOMOGENIZE_DRIVER_DIR", tree.path().join("no-driver"));
    let out = run(auto.args(["fix", "--no-journal"]));
    assert_eq!(out.code, 0, "exits by the CPU results: {}", out.stderr);
    assert_eq!(
        out.stderr
            .matches("note: GPU checks skipped: no NVIDIA driver")
            .count(),
        1,
        "{}",
        out.stderr
    );
    assert!(
        out.stdout
            .contains("GPU checks skipped: no NVIDIA driver: cannot load"),
        "{}",
        out.stdout
    );

    let mut require = common::gh(tree.path());
    require.env("GPU_HOMOGENIZE_DRIVER_DIR", tree.path().join("no-driver"));
    let out = run(require.args(["check", "--gpu", "require", "--no-journal"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("--gpu require: no NVIDIA driver: cannot load"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(NVML_LIB),
        "names the library: {}",
        out.stderr
    );
}

#[test]
fn doctor_shows_both_orderings_and_what_the_policy_selects() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    // No scheduler or mask of the machine running the tests may leak into the output.
    let doctor = || {
        let mut cmd = driver.command(tree.path());
        for var in gpu_homogenize::commands::SCHEDULER_VARS {
            cmd.env_remove(var);
        }
        cmd.arg("doctor");
        cmd
    };
    let mut cmd = doctor();
    let out = run(&mut cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!("doctor_two_cards", out.stdout);
    // Under Slurm the doctor names what the scheduler assigned and the policy option for it.
    let out = run(doctor().env("SLURM_JOB_GPUS", "1"));
    // Once in a CI run under Wine this output was empty: the status and stderr say why.
    assert!(
        out.stdout.contains("  SLURM_JOB_GPUS=1\n"),
        "exit {}: {}{}",
        out.code,
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("respect_scheduler = true"),
        "{}",
        out.stdout
    );
}

/// Seen on a real one-card machine: a policy whose mask names a card the machine does not have
/// made `doctor` stop with the driver's "no CUDA-capable device"; it must say what the mask
/// selects (nothing) and exit 1.
#[test]
fn doctor_says_when_the_mask_names_no_card_of_the_machine() {
    let driver = FakeDriver::new();
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(
        tree.path().join("gpu-homogenize.toml"),
        "[policy]\nvisible_devices = \"7\"\n",
    )
    .unwrap();
    let mut cmd = driver.command(tree.path());
    for var in gpu_homogenize::commands::SCHEDULER_VARS {
        cmd.env_remove(var);
    }
    let out = run(cmd.arg("doctor"));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        out.stdout
            .matches("device 0 is nothing (the mask names no card of this machine")
            .count(),
        2,
        "{}",
        out.stdout
    );
}

#[test]
fn doctor_without_a_driver_says_which_library() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = common::gh(dir.path());
    cmd.env("GPU_HOMOGENIZE_DRIVER_DIR", dir.path());
    let out = run(cmd.arg("doctor"));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains(NVML_LIB), "{}", out.stderr);
}

#[test]
fn the_report_shows_what_the_gpu_validated() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let fix = run(driver
        .command(tree.path())
        .args(["fix", "--gpu", "require"]));
    assert_eq!(fix.code, 0, "{}", fix.stderr);
    let out = run(driver
        .command(tree.path())
        .args(["report", "--format", "json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = json(&out.stdout);
    let phase = |name: &str| {
        doc["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(phase("Core modules")["gpu_validated"], 13);
    assert_eq!(phase("Test scripts")["gpu_validated"], 27);
    assert_eq!(phase("Test scripts")["leaks"], 0);
    assert!(
        out.stdout.contains("NVIDIA GeForce RTX 3090"),
        "the device the checks ran on"
    );
}

// Unix only: links, FIFOs, modes or signals made through unix calls.
#[cfg(unix)]
#[test]
fn sigterm_kills_the_probe_and_prints_a_partial_summary() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let mut cmd = driver.std_command(tree.path());
    cmd.env("FAKEGPU_HANG", "1")
        .args([
            "check",
            "--gpu",
            "require",
            "--gpu-timeout",
            "60",
            "--no-journal",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    // Long enough for the run to install its handler and reach the hanging probe, even on a busy CI.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed().as_secs() < 10,
        "stops promptly, not at the 60 s timeout"
    );
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Interrupted: the summary above is partial."),
        "{stdout}"
    );
    assert!(
        stdout.contains("cancelled"),
        "the running check says it was cancelled: {stdout}"
    );
}

#[test]
fn rust_binaries_are_checked_with_the_env_their_main_sets() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("rust-mission");
    let out = run(driver.command(tree.path()).args([
        "fix",
        "--gpu",
        "require",
        "--no-journal",
        "--format",
        "json",
    ]));
    let doc = json(&out.stdout);
    let check = |path: &str| {
        let files = doc["files"].as_array().unwrap();
        files.iter().find(|f| f["path"] == path).unwrap()["gpu_check"].clone()
    };
    let cudarc = check("cudarc-bin/src/main.rs");
    assert_eq!(cudarc["status"], "passed", "{cudarc}");
    assert_eq!(cudarc["device_name"], "NVIDIA GeForce RTX 3090");
    // The async main is left for review and stays non-compliant; `check` probes the env it
    // ends with (its hand-written CUDA_VISIBLE_DEVICES=1 alone), and the GPU shows the trap.
    let status = |doc: &serde_json::Value, path: &str| {
        let files = doc["files"].as_array().unwrap();
        files.iter().find(|f| f["path"] == path).unwrap()["status"].clone()
    };
    assert_eq!(status(&doc, "async-bin/src/main.rs"), "non_compliant");
    let checked = run(driver.command(tree.path()).args([
        "check",
        "--gpu",
        "require",
        "--no-journal",
        "--format",
        "json",
    ]));
    let checked = json(&checked.stdout);
    let files = checked["files"].as_array().unwrap();
    let async_main = files
        .iter()
        .find(|f| f["path"] == "async-bin/src/main.rs")
        .unwrap()["gpu_check"]
        .clone();
    assert_eq!(async_main["status"], "failed", "{async_main}");
    assert_eq!(async_main["device_name"], "NVIDIA GeForce RTX 5060 Ti");
    let library = check("gpu-lib/src/lib.rs");
    assert_eq!(library["status"], "skipped");
    assert_eq!(out.code, 1, "a failed GPU check fails the run");
}

/// `--gpu-cmd` lines for each platform's shell (`sh -c`; `cmd /C` on Windows): one that reads
/// the file and passes, one that prints `boom` to stderr and exits 3; and how the exit shows.
#[cfg(unix)]
const READ_FILE_CMD: [&str; 3] = ["test -f {file}", "echo boom >&2; exit 3", "exit status: 3"];
#[cfg(windows)]
const READ_FILE_CMD: [&str; 3] = ["type {file} >nul", "echo boom 1>&2& exit 3", "exit code: 3"];

#[test]
fn gpu_cmd_runs_the_file_itself_in_the_slot() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let file = "tools/compliant_example.py";
    let passed = run(driver.command(tree.path()).args([
        "check",
        "--gpu",
        "require",
        "--no-journal",
        "--format",
        "json",
        // Generous: under Wine on a loaded machine a cmd.exe start alone can take seconds.
        "--gpu-timeout",
        "300",
        "--gpu-cmd",
        READ_FILE_CMD[0],
        file,
    ]));
    assert_eq!(passed.code, 0, "{}{}", passed.stderr, passed.stdout);
    assert_eq!(
        json(&passed.stdout)["files"][0]["gpu_check"]["status"],
        "passed"
    );
    let failed = run(driver.command(tree.path()).args([
        "check",
        "--gpu",
        "require",
        "--no-journal",
        "--format",
        "json",
        // Generous: under Wine on a loaded machine a cmd.exe start alone can take seconds.
        "--gpu-timeout",
        "300",
        "--gpu-cmd",
        READ_FILE_CMD[1],
        file,
    ]));
    assert_eq!(failed.code, 1);
    let check = &json(&failed.stdout)["files"][0]["gpu_check"];
    assert_eq!(check["status"], "failed");
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{}: boom", READ_FILE_CMD[2])),
        "{check}"
    );
}

/// Whether a process still runs (a zombie counts as gone).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rfind(')')
                .map(|i| s[i + 1..].trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

fn wait_for_pid(file: &Path) -> i32 {
    for _ in 0..400 {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("the command never wrote {}", file.display());
}

#[cfg_attr(
    windows,
    ignore = "its --gpu-cmd is a sh command line (sleep, $!, case); cmd variants are not written yet"
)]
#[test]
fn no_process_started_by_gpu_cmd_outlives_its_check() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let pid_file = tree.path().join("daemon.pid");
    // A daemon in a session of its own: out of the command's process group.
    let cmd = format!(
        "setsid sleep 300 >/dev/null 2>&1 < /dev/null & echo $! > {}",
        pid_file.display()
    );
    let out = run(driver.command(tree.path()).args([
        "check",
        "--gpu",
        "require",
        "--no-journal",
        "--gpu-cmd",
        &cmd,
        "tools/compliant_example.py",
    ]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let pid = wait_for_pid(&pid_file);
    assert!(!alive(pid), "the setsid daemon {pid} survived the run");
}

#[cfg_attr(
    windows,
    ignore = "its --gpu-cmd is a sh command line (sleep, $!, case); cmd variants are not written yet"
)]
#[test]
fn killing_the_tool_kills_what_gpu_cmd_started() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let pid_file = tree.path().join("sleeper.pid");
    let cmd = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
    let mut tool = driver
        .std_command(tree.path())
        .args([
            "check",
            "--gpu",
            "require",
            "--no-journal",
            "--gpu-cmd",
            &cmd,
            "tools/compliant_example.py",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = wait_for_pid(&pid_file);
    assert!(alive(pid));
    tool.kill().unwrap(); // SIGKILL: no handler of the tool runs.
    tool.wait().unwrap();
    for _ in 0..200 {
        if !alive(pid) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("`sleep` {pid} outlived the killed tool");
}

/// The journal's lines, parsed.
fn journal_lines(root: &Path) -> Vec<Value> {
    std::fs::read_to_string(root.join(".gpu-homogenize/journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[cfg_attr(
    windows,
    ignore = "its --gpu-cmd is a sh command line (sleep, $!, case); cmd variants are not written yet"
)]
#[test]
fn a_checked_file_is_journalled_while_the_run_goes_on_and_stays_when_it_is_killed() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let tools = tree.path().join("tools");
    std::fs::copy(
        tools.join("compliant_example.py"),
        tools.join("zz_hangs.py"),
    )
    .unwrap();
    let pid_file = tree.path().join("hang.pid");
    // The second file's check never ends: the run is killed while it runs.
    let cmd = format!(
        "case {{file}} in *zz_hangs*) echo $$ > {}; sleep 300;; esac",
        pid_file.display()
    );
    let mut tool = driver
        .std_command(tree.path())
        .args([
            "check",
            "--gpu",
            "require",
            "--gpu-cmd",
            &cmd,
            "tools/compliant_example.py",
            "tools/zz_hangs.py",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_pid(&pid_file);
    let first = |lines: &[Value]| {
        lines
            .iter()
            .any(|l| l["type"] == "file" && l["path"] == "tools/compliant_example.py")
    };
    let mut lines = Vec::new();
    for _ in 0..400 {
        lines = journal_lines(tree.path());
        if first(&lines) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let still_running = tool.try_wait().unwrap().is_none();
    tool.kill().unwrap(); // SIGKILL: no handler of the tool runs.
    tool.wait().unwrap();
    assert!(still_running, "the run ended before its second check did");
    assert!(
        first(&lines),
        "the first file, checked, is not journalled while the run goes on: {lines:?}"
    );
    let lines = journal_lines(tree.path());
    let paths: Vec<&str> = lines.iter().filter_map(|l| l["path"].as_str()).collect();
    assert_eq!(paths, ["tools/compliant_example.py"], "{lines:?}");
    assert_eq!(lines[0]["gpu_check"]["status"], "passed", "{}", lines[0]);
    assert!(
        lines.iter().all(|l| l["type"] == "file"),
        "no totals from a killed run: {lines:?}"
    );
    // The report counts the file, and says the run was cut short.
    let report = run(driver
        .command(tree.path())
        .args(["report", "--format", "json"]));
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert!(
        report.stderr.contains("the `check` run begun at ")
            && report
                .stderr
                .contains("journalled 1 file and no totals: it was cut short"),
        "{}",
        report.stderr
    );
    let doc = json(&report.stdout);
    assert!(
        doc["warnings"].to_string().contains("no totals"),
        "{}",
        doc["warnings"]
    );
}

#[test]
fn an_unloadable_cuda_driver_is_named_with_its_directory_and_reason() {
    let driver = FakeDriver::new();
    #[cfg(unix)]
    let (names, reason_of) = (["libcuda.so", "libcuda.so.1"], "libcuda.so.1: ");
    #[cfg(windows)]
    let (names, reason_of) = (["nvcuda.dll"], "nvcuda.dll: ");
    for name in names {
        std::fs::write(driver.dir.path().join(name), "not a library").unwrap();
    }
    let tree = copy_fixture("superwhisper-v6");
    let out = run(driver.command(tree.path()).args([
        "check",
        "--gpu",
        "require",
        "--no-journal",
        "tools/compliant_example.py",
    ]));
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let dir = driver.dir.path().display().to_string();
    assert!(
        out.stderr.contains(&format!(
            "error: --gpu require: no usable CUDA driver: cannot load {CUDA_LIB} from {dir} ("
        )),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains(reason_of), "{}", out.stderr);
}

#[test]
fn leak_drift_keeps_the_mission_from_done_until_the_checks_run_clean() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let fix = run(driver
        .command(tree.path())
        .env("FAKEGPU_LEAK_MIB", "30")
        .args(["fix", "--gpu", "require"]));
    assert_eq!(fix.code, 1, "drift over the limit fails the run");
    assert!(fix.stdout.contains("FAILED"), "{}", fix.stdout);
    let report = |format: &str| {
        let out = run(driver
            .command(tree.path())
            .args(["report", "--format", format]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    let doc = json(&report("json"));
    assert_eq!(doc["mission"]["status"], "attention");
    assert_eq!(
        doc["mission"]["leaks"], 0,
        "30 MiB per check is under the alert"
    );
    assert_eq!(doc["gpu"]["drift_failed"], true);
    assert_eq!(doc["alerts"][0]["kind"], "drift");
    assert!(
        doc["alerts"][0]["run"]
            .as_str()
            .unwrap()
            .starts_with("`fix` run "),
        "{}",
        doc["alerts"][0]
    );
    let md = report("md");
    assert!(!md.contains("✅ done\n\n## Progress"), "{md}");
    assert!(
        md.contains("files compliant (100%)** — ⚠️ needs attention"),
        "{md}"
    );
    assert!(md.contains("| Leak drift (MiB) | ≤ 50 |"), "{md}");

    let check = run(driver
        .command(tree.path())
        .args(["check", "--gpu", "require"]));
    assert_eq!(check.code, 0, "{}", check.stdout);
    let doc = json(&report("json"));
    assert_eq!(doc["gpu"]["drift_failed"], false);
    assert_eq!(doc["mission"]["gpu_validated"], 40);
    assert_eq!(doc["mission"]["status"], "done");
    assert_eq!(doc["alerts"], Value::Array(Vec::new()));
}

/// `init` proposes the cards `doctor` sees: the largest is the target (by its place in PCI bus
/// order, named with its bus id), the others are forbidden; never the seed's names unless the
/// machine has those cards.
#[test]
fn init_proposes_the_cards_of_the_machine() {
    let driver = FakeDriver::new();
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(
        tree.path().join("a.py"),
        "import torch\nx = torch.zeros(1).cuda()\n",
    )
    .unwrap();
    let out = run(driver.command(tree.path()).args(["init", "--stdout"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: toml::Table = out.stdout.parse().expect("the proposal is TOML");
    let policy = doc["policy"].as_table().unwrap();
    assert_eq!(
        policy["visible_devices"].as_str(),
        Some("1"),
        "{}",
        out.stdout
    );
    let target = policy["target"].as_table().unwrap();
    assert_eq!(target["name"].as_str(), Some("RTX 3090"), "{}", out.stdout);
    assert!(target.contains_key("pci_bus_id"), "{}", out.stdout);
    assert!(
        target["uuid"]
            .as_str()
            .is_some_and(|u| u.starts_with("GPU-")),
        "{}",
        out.stdout
    );
    let forbidden = policy["forbidden"].as_array().unwrap();
    assert_eq!(forbidden.len(), 1);
    assert_eq!(forbidden[0]["name"].as_str(), Some("RTX 5060 Ti"));
    assert!(
        out.stdout.contains("-> target (most memory)"),
        "{}",
        out.stdout
    );
}

/// The tool itself as a GPU worker: `__probe` holding `mib` MiB for `ms` on CUDA's device 0.
#[cfg(unix)] // used by the sh-syntax tests only
fn worker(mib: u64, ms: u64) -> String {
    let bin = assert_cmd::cargo::cargo_bin("gpu-homogenize");
    format!(
        "'{}' __probe --mib {mib} --hold-ms {ms} >/dev/null",
        bin.display()
    )
}

/// `check --gpu-cmd CMD` on the mission's compliant example, as JSON: (exit code, gpu_check).
fn check_with(driver: &FakeDriver, root: &Path, cmd: &str, env: &[(&str, &str)]) -> (i32, Value) {
    let mut command = driver.command(root);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = run(command.args([
        "check",
        "--gpu",
        "require",
        "--no-journal",
        "--format",
        "json",
        "--gpu-cmd",
        cmd,
        "tools/compliant_example.py",
    ]));
    let doc = json(&out.stdout);
    (out.code, doc["files"][0]["gpu_check"].clone())
}

fn processes(check: &Value) -> Vec<Value> {
    check["processes"].as_array().cloned().unwrap_or_default()
}

#[test]
#[cfg(unix)] // the `--gpu-cmd` lines are sh syntax
fn a_worker_of_the_check_on_the_forbidden_card_fails_it_by_pid_and_uuid() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    // Two workers: one with the file's env (the target), one that masks the card itself.
    let cmd = format!(
        "{} & CUDA_VISIBLE_DEVICES=0 {}; wait",
        worker(100, 400),
        worker(50, 400)
    );
    let (code, check) = check_with(&driver, tree.path(), &cmd, &[]);
    assert_eq!(code, 1, "{check}");
    assert_eq!(check["status"], "failed", "{check}");
    let message = check["message"].as_str().unwrap();
    assert!(
        message.starts_with("a process of the check ran on a forbidden card: pid "),
        "{message}"
    );
    assert!(
        message.contains("NVIDIA GeForce RTX 5060 Ti (00000000:01:00.0, GPU-"),
        "{message}"
    );
    let listed = processes(&check);
    let ours: Vec<&Value> = listed.iter().filter(|p| p["origin"] == "check").collect();
    let bad: Vec<&&Value> = ours.iter().filter(|p| p["forbidden"] == true).collect();
    assert_eq!(bad.len(), 1, "{check}");
    assert_eq!(bad[0]["card"], "NVIDIA GeForce RTX 5060 Ti");
    assert_eq!(bad[0]["card_index"], 0);
    assert!(bad[0]["uuid"].as_str().unwrap().starts_with("GPU-"));
    assert!(
        bad[0]["command"]
            .as_str()
            .unwrap()
            .contains("__probe --mib 50"),
        "{check}"
    );
    assert!(
        bad[0]["peak_mib"].as_f64().unwrap() >= 350.0,
        "context and buffer: {check}"
    );
    let on_target: Vec<&&Value> = ours
        .iter()
        .filter(|p| p["card"] == "NVIDIA GeForce RTX 3090")
        .collect();
    assert!(
        on_target.len() >= 2,
        "the probe and the first worker: {check}"
    );
    assert!(check["processes_unlisted"].is_null());
    assert!(check["host"].as_str().is_some_and(|h| !h.is_empty()));
}

/// Windows: the same through `cmd /C`: a worker with the file's env and one that masks the
/// forbidden card itself, one after the other, both processes of the check's Job Object.
/// Windows tells a process's image, not its arguments: the command shown is the executable's
/// path. (A worker started with `start /b` was never listed under Wine 8; the background case is
/// the unix test's.)
#[test]
#[cfg(windows)]
fn a_worker_of_the_check_under_cmd_on_the_forbidden_card_fails_it_by_pid_and_uuid() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let bin = assert_cmd::cargo::cargo_bin("gpu-homogenize");
    let worker = |mib: u64| {
        format!(
            "\"{}\" __probe --mib {mib} --hold-ms 1500 >nul",
            bin.display()
        )
    };
    let cmd = format!(
        "{} & set CUDA_VISIBLE_DEVICES=0& {}",
        worker(100),
        worker(50)
    );
    let (code, check) = check_with(&driver, tree.path(), &cmd, &[]);
    assert_eq!(code, 1, "{check}");
    assert_eq!(check["status"], "failed", "{check}");
    let message = check["message"].as_str().unwrap();
    assert!(
        message.starts_with("a process of the check ran on a forbidden card: pid "),
        "{message}"
    );
    assert!(
        message.contains("NVIDIA GeForce RTX 5060 Ti (00000000:01:00.0, GPU-"),
        "{message}"
    );
    let listed = processes(&check);
    let ours: Vec<&Value> = listed.iter().filter(|p| p["origin"] == "check").collect();
    let bad: Vec<&&Value> = ours.iter().filter(|p| p["forbidden"] == true).collect();
    assert_eq!(bad.len(), 1, "{check}");
    assert_eq!(bad[0]["card_index"], 0);
    assert!(
        bad[0]["command"]
            .as_str()
            .unwrap()
            .ends_with("gpu-homogenize.exe"),
        "{check}"
    );
    let on_target = ours
        .iter()
        .filter(|p| p["card"] == "NVIDIA GeForce RTX 3090")
        .count();
    assert!(on_target >= 2, "the probe and the first worker: {check}");
    assert!(check["processes_unlisted"].is_null());
}

/// Start a process of another user: the tool's probe holding memory on a card, outside any check.
#[cfg(unix)] // used by the sh-syntax tests only
fn foreign(driver: &FakeDriver, root: &Path, visible: &str) -> std::process::Child {
    let state = driver.dir.path().join("state");
    let child = driver
        .std_command(root)
        .args(["__probe", "--mib", "500", "--hold-ms", "60000"])
        .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        .env("CUDA_VISIBLE_DEVICES", visible)
        .env("LD_LIBRARY_PATH", driver.dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let needle = format!("{} ", child.id());
    for _ in 0..400 {
        let text = std::fs::read_to_string(&state).unwrap_or_default();
        if text.lines().any(|l| l.starts_with(&needle)) {
            return child;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let mut child = child;
    let _ = child.kill();
    let _ = child.wait();
    panic!("the foreign process never allocated");
}

#[test]
#[cfg(unix)] // the `--gpu-cmd` lines are sh syntax
fn foreign_processes_are_shown_and_never_fail_the_check_or_count_as_its_leak() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let mut on_target = foreign(&driver, tree.path(), "1");
    let mut on_forbidden = foreign(&driver, tree.path(), "0");
    let (code, check) = check_with(&driver, tree.path(), &worker(64, 200), &[]);
    let _ = on_target.kill();
    let _ = on_forbidden.kill();
    let _ = on_target.wait();
    let _ = on_forbidden.wait();
    assert_eq!(code, 0, "{check}");
    assert_eq!(check["status"], "passed", "{check}");
    assert_eq!(check["leak_mib"], 0.0, "{check}");
    let listed = processes(&check);
    let foreign_pids: Vec<u64> = listed
        .iter()
        .filter(|p| p["origin"] == "foreign")
        .map(|p| p["pid"].as_u64().unwrap())
        .collect();
    assert!(foreign_pids.contains(&u64::from(on_target.id())), "{check}");
    assert!(
        foreign_pids.contains(&u64::from(on_forbidden.id())),
        "{check}"
    );
    assert!(
        listed
            .iter()
            .filter(|p| p["origin"] == "foreign")
            .all(|p| p["command"].is_null()),
        "another user's command line is not read: {check}"
    );
    assert!(listed.iter().any(|p| p["origin"] == "check"), "{check}");
}

/// A worker left running when its command ends, on a driver that tears a dead process's context
/// down with `env`: booked once, at what it held, then killed.
#[cfg(unix)] // the `--gpu-cmd` lines are sh syntax
fn assert_lingering_worker_booked_once(env: &[(&str, &str)]) {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    // The command returns once its worker holds memory; the worker goes on holding it.
    let cmd = format!(
        "{} & w=$!; for i in $(seq 400); do grep -q \"^$w \" \"$FAKEGPU_STATE\" && break; sleep 0.05; done",
        worker(128, 60000)
    );
    let (code, check) = check_with(&driver, tree.path(), &cmd, env);
    assert_eq!(code, 1, "{check}");
    assert_eq!(check["status"], "leak", "{check}");
    let lingering: Vec<Value> = processes(&check)
        .into_iter()
        .filter(|p| p["lingering_mib"].is_number())
        .collect();
    assert_eq!(lingering.len(), 1, "{check}");
    // 128 MiB and the context's 300: booked when the command ended and again when its
    // supervisor exited, it is still what the process held, never the sum of the two.
    assert_eq!(lingering[0]["lingering_mib"], 428.0, "{check}");
    assert_eq!(lingering[0]["peak_mib"], 428.0, "{check}");
    let pid = lingering[0]["pid"].as_u64().unwrap() as i32;
    assert!(
        !alive(pid),
        "the lingering worker {pid} was killed after it was booked"
    );
    let message = check["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("pid {pid} (`"))
            && message
                .contains("still held 428 MiB on NVIDIA GeForce RTX 3090 when the command ended"),
        "{message}"
    );
}

#[test]
#[cfg(unix)] // the `--gpu-cmd` lines are sh syntax
fn a_child_still_holding_memory_when_the_command_ends_is_the_leak() {
    assert_lingering_worker_booked_once(&[]);
}

/// A real driver (an H200, driver 580) still lists a killed process while its context is torn
/// down: the check's second sample saw it again, and the leak was once booked twice.
#[test]
#[cfg(unix)] // the `--gpu-cmd` lines are sh syntax
fn a_lingering_child_still_listed_while_its_context_is_torn_down_is_booked_once() {
    assert_lingering_worker_booked_once(&[("FAKEGPU_RELEASE_MS", "150")]);
}

#[test]
#[cfg(unix)] // the `--gpu-cmd` lines are sh syntax
fn a_driver_that_cannot_list_processes_is_said_not_passed_over() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let (code, check) = check_with(
        &driver,
        tree.path(),
        &worker(64, 100),
        &[("FAKEGPU_NO_PROCESS_LIST", "1")],
    );
    assert_eq!(code, 0, "{check}");
    assert!(processes(&check).is_empty(), "{check}");
    let why = check["processes_unlisted"].as_str().unwrap();
    assert!(
        why.starts_with("NVML cannot list the processes on NVIDIA GeForce RTX 5060 Ti"),
        "{why}"
    );
    // Another PID namespace: listed, but never as the check's.
    let (_, check) = check_with(
        &driver,
        tree.path(),
        &worker(64, 100),
        &[("FAKEGPU_PID_OFFSET", "3000000")],
    );
    let why = check["processes_unlisted"].as_str().unwrap();
    assert!(why.contains("another PID namespace"), "{why}");
    assert!(processes(&check).is_empty(), "{check}");
}

#[test]
#[cfg(unix)] // the `--gpu-cmd` lines are sh syntax
fn without_memory_per_process_the_processes_are_still_attributed() {
    let driver = FakeDriver::new();
    let tree = copy_fixture("superwhisper-v6");
    let cmd = format!("CUDA_VISIBLE_DEVICES=0 {}", worker(64, 300));
    let (code, check) = check_with(
        &driver,
        tree.path(),
        &cmd,
        &[("FAKEGPU_NO_PROCESS_MEMORY", "1")],
    );
    assert_eq!(code, 1, "{check}");
    let bad: Vec<Value> = processes(&check)
        .into_iter()
        .filter(|p| p["forbidden"] == true)
        .collect();
    assert_eq!(bad.len(), 1, "{check}");
    assert!(bad[0]["peak_mib"].is_null(), "{check}");
}

/// The tree's journal with the host of every GPU check set to `host`, as if it ran there.
#[cfg(unix)] // used by the sh-syntax tests only
fn journal_as_host(root: &Path, host: &str) -> String {
    let mut out = String::new();
    for mut line in journal_lines(root) {
        if let Some(check) = line.get_mut("gpu_check").filter(|c| c.is_object()) {
            check["host"] = Value::from(host);
        }
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

#[test]
#[cfg(unix)] // the `--gpu-cmd` line is sh syntax
fn journals_of_three_hosts_merge_into_one_report_with_each_hosts_failures_apart() {
    let driver = FakeDriver::new();
    let file = "tools/compliant_example.py";
    let collected = tempfile::tempdir().unwrap();
    let mut journals = Vec::new();
    // Three checkouts of the mission, one per host; node-c's command puts a worker on the
    // forbidden card, and runs first: the later passes on node-a and node-b do not resolve it.
    for (host, cmd) in [
        (
            "node-c",
            format!("CUDA_VISIBLE_DEVICES=0 {}", worker(32, 200)),
        ),
        ("node-a", worker(32, 50)),
        ("node-b", worker(32, 50)),
    ] {
        let tree = copy_fixture("superwhisper-v6");
        let out = run(driver.command(tree.path()).args([
            "check",
            "--gpu",
            "require",
            "--gpu-cmd",
            &cmd,
            file,
        ]));
        assert_eq!(
            out.code,
            i32::from(host == "node-c"),
            "{host}: {}{}",
            out.stdout,
            out.stderr
        );
        let path = collected.path().join(format!("{host}.jsonl"));
        std::fs::write(&path, journal_as_host(tree.path(), host)).unwrap();
        journals.push(path);
    }
    let tree = copy_fixture("superwhisper-v6");
    let report = |format: &str| {
        let out = run(driver
            .command(tree.path())
            .args(["report", "--format", format, "--journal"])
            .args(&journals));
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    let doc = json(&report("json"));
    let hosts = doc["hosts"].as_array().unwrap();
    let names: Vec<&str> = hosts.iter().map(|h| h["host"].as_str().unwrap()).collect();
    assert_eq!(names, ["node-a", "node-b", "node-c"]);
    for h in &hosts[..2] {
        assert_eq!(
            (h["checked"].as_u64(), h["passed"].as_u64()),
            (Some(1), Some(1)),
            "{h}"
        );
        assert!(h["failures"].as_array().unwrap().is_empty());
        let cards = h["cards"].as_object().unwrap();
        assert_eq!(cards.len(), 1, "{h}");
        let (uuid, name) = cards.iter().next().unwrap();
        assert!(uuid.starts_with("GPU-"), "{h}");
        assert_eq!(name, "NVIDIA GeForce RTX 3090 (00000000:02:00.0)");
    }
    let c = &hosts[2];
    assert_eq!(
        (c["checked"].as_u64(), c["failed"].as_u64()),
        (Some(1), Some(1)),
        "{c}"
    );
    let failure = &c["failures"][0];
    assert_eq!(failure["path"], file);
    assert!(
        failure["message"]
            .as_str()
            .unwrap()
            .contains("on NVIDIA GeForce RTX 5060 Ti (00000000:01:00.0, GPU-"),
        "{failure}"
    );
    let checks = c["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 1, "{c}");
    let bad: Vec<&Value> = checks[0]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["forbidden"] == true)
        .collect();
    assert_eq!(bad.len(), 1, "{c}");
    assert_eq!(bad[0]["card"], "NVIDIA GeForce RTX 5060 Ti");
    let md = report("md");
    assert!(md.contains("## GPU checks per host"), "{md}");
    assert!(
        md.contains("<details><summary>Processes per program on node-c (1 checks)</summary>"),
        "{md}"
    );
    assert!(
        md.lines().any(|l| l.starts_with("  - pid ")
            && l.contains("on NVIDIA GeForce RTX 5060 Ti (00000000:01:00.0, GPU-")
            && l.contains("(FORBIDDEN card)")),
        "{md}"
    );
    assert!(md.contains("| ❌ node-c |"), "{md}");
    assert!(md.contains("| node-a |"), "{md}");
    assert!(md.contains("Failed on node-c:\n\n- `tools/compliant_example.py` (failed): a process of the check ran on a forbidden card"), "{md}");
    let html = report("html");
    assert!(html.contains("<h2>GPU checks per host</h2>"), "{html}");
    assert!(html.contains("<h3>Failed on node-c</h3>"), "{html}");
    // The mission view: the file's GPU check is failed (node-c) until node-c passes it again.
    assert!(
        doc["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["path"] == file
                && a["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("forbidden card")),
        "{}",
        doc["alerts"]
    );
}

/// A tree of one GPU program under a policy whose mask is `mask`.
fn uuid_tree(mask: &str) -> tempfile::TempDir {
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(
        tree.path().join("gpu-homogenize.toml"),
        format!(
            "[policy]\nvisible_devices = \"{mask}\"\ndevice_order = \"PCI_BUS_ID\"\n\
             target = {{ name = \"RTX 3090\" }}\nforbidden = [{{ name = \"RTX 5060 Ti\" }}]\n"
        ),
    )
    .unwrap();
    std::fs::write(
        tree.path().join("train.py"),
        "import torch\n\nif __name__ == \"__main__\":\n    x = torch.zeros(1).cuda()\n",
    )
    .unwrap();
    tree
}

/// `fix --gpu require --format json --no-journal` in `root`: (exit code, the first file's check).
fn fix_json(driver: &FakeDriver, root: &Path, env: &[(&str, &str)]) -> (i32, Value, String) {
    let mut command = driver.command(root);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = run(command.args([
        "fix",
        "--gpu",
        "require",
        "--format",
        "json",
        "--no-journal",
    ]));
    let check = json(&out.stdout)["files"][0]["gpu_check"].clone();
    (out.code, check, out.stderr)
}

/// The cards of the simulated machine as `doctor --format json` gives them.
fn doctor_cards(driver: &FakeDriver, env: &[(&str, &str)]) -> Vec<Value> {
    let scratch = tempfile::tempdir().unwrap();
    let mut cmd = driver.command(scratch.path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(cmd.args(["doctor", "--format", "json"]));
    json(&out.stdout)["cards"].as_array().unwrap().clone()
}

#[test]
fn a_policy_mask_by_uuid_is_written_and_proved_and_a_uuid_of_no_card_fails() {
    let driver = FakeDriver::new();
    let cards = doctor_cards(&driver, &[]);
    let uuid = cards[1]["uuid"].as_str().unwrap().to_string();
    assert_eq!(cards[1]["name"], "NVIDIA GeForce RTX 3090");
    let tree = uuid_tree(&uuid);
    let (code, check, stderr) = fix_json(&driver, tree.path(), &[]);
    assert_eq!(code, 0, "{check} {stderr}");
    assert_eq!(check["status"], "passed", "{check}");
    assert_eq!(check["uuid"], uuid.as_str());
    let text = std::fs::read_to_string(tree.path().join("train.py")).unwrap();
    assert!(
        text.contains(&format!(
            "# UUID mask (the order does not apply): the RTX 3090 becomes cuda:0.\n\
             os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"{uuid}\"\n"
        )),
        "{text}"
    );
    // A UUID no card has: CUDA sees no device, and the check cannot pass.
    let tree = uuid_tree("GPU-00000000-1111-2222-3333-444444444444");
    let (code, check, _) = fix_json(&driver, tree.path(), &[]);
    assert_ne!(code, 0, "{check}");
    assert_ne!(check["status"], "passed", "{check}");
}

#[test]
fn mig_instances_are_listed_by_doctor_and_a_mig_mask_lands_on_their_card() {
    let driver = FakeDriver::new();
    let mig = [("FAKEGPU_MIG", "1:2")];
    let cards = doctor_cards(&driver, &mig);
    let instances = cards[1]["mig"].as_array().unwrap();
    assert_eq!(instances.len(), 2, "{}", cards[1]);
    assert!(cards[0].get("mig").is_none(), "no MIG on the other card");
    let id = instances[0]["uuid"].as_str().unwrap().to_string();
    assert!(id.starts_with("MIG-"), "{id}");
    assert_eq!(instances[0]["name"], "NVIDIA GeForce RTX 3090 MIG 1g.12gb");
    assert_eq!(instances[0]["memory_mib"], 12288.0);
    let tree = uuid_tree(&id);
    let out = run(driver
        .command(tree.path())
        .env("FAKEGPU_MIG", "1:2")
        .arg("doctor"));
    assert!(
        out.stdout
            .contains(&format!("       MIG 0  NVIDIA GeForce RTX 3090 MIG 1g.12gb   12.0 GiB  {id}  <- the mask selects it\n")),
        "{}",
        out.stdout
    );
    let (code, check, stderr) = fix_json(&driver, tree.path(), &mig);
    assert_eq!(code, 0, "{check} {stderr}");
    assert_eq!(check["status"], "passed", "{check}");
    assert_eq!(check["device_name"], "NVIDIA GeForce RTX 3090");
}

#[test]
fn a_hand_written_uuid_mask_is_said_to_select_its_card_whatever_the_order() {
    let driver = FakeDriver::new();
    let cards = doctor_cards(&driver, &[]);
    let target = cards[1]["uuid"].as_str().unwrap();
    let forbidden = cards[0]["uuid"].as_str().unwrap();
    let tree = uuid_tree("1");
    std::fs::write(
        tree.path().join("gpu-homogenize.toml"),
        format!(
            "[policy]\nvisible_devices = \"1\"\ndevice_order = \"PCI_BUS_ID\"\n\
             target = {{ name = \"RTX 3090\", uuid = \"{target}\" }}\n\
             forbidden = [{{ name = \"RTX 5060 Ti\", uuid = \"{forbidden}\" }}]\n"
        ),
    )
    .unwrap();
    for (name, mask) in [("a.py", &target[..13]), ("b.py", forbidden)] {
        std::fs::write(
            tree.path().join(name),
            format!("import os\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"{mask}\"\nimport torch\nx = torch.zeros(1).cuda()\n"),
        )
        .unwrap();
    }
    let out = run(driver.command(tree.path()).args(["scan", "a.py", "b.py"]));
    assert!(
        out.stdout.contains(&format!("CUDA_VISIBLE_DEVICES is '{}' (the RTX 3090 by UUID, whatever `CUDA_DEVICE_ORDER` says)", &target[..13])),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!("CUDA_VISIBLE_DEVICES is '{forbidden}' (the forbidden RTX 5060 Ti by UUID, whatever `CUDA_DEVICE_ORDER` says)")),
        "{}",
        out.stdout
    );
}
