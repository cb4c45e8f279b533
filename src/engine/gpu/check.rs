//! One GPU check: run the probe child with the env the file's header sets, sample NVML
//! memory on the target card before, during (peak) and after, and judge what CUDA selected.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::account::Accountant;
use super::nvml::{child_library_path, same_bus_id, Card, Gpus};
use super::probe::{ProbeReport, HELD};
use super::supervise::ENDED;
use super::{tree, GpuChecker, GpuJob};
use crate::model::outcome::{CheckStatus, GpuCheck, GpuProcess};
use crate::model::policy::{EnvVar, Policy};

/// How often memory is sampled while a child runs.
const SAMPLE_EVERY: Duration = Duration::from_millis(5);
/// How long an apparent leak is re-read before it is booked.
const SETTLE: Duration = Duration::from_millis(250);
/// How long to wait for a finished child's pipes to close.
const PIPE_GRACE: Duration = Duration::from_millis(500);

pub struct ProbeRunner {
    pub gpus: Gpus,
    pub target: Card,
    pub forbidden: Vec<Card>,
    pub policy: Policy,
    pub probe_mib: u64,
    pub timeout: Duration,
    pub gpu_cmd: Option<String>,
    pub exe: PathBuf,
}

/// A finished child: how it ended, its output, and the peak memory seen meanwhile.
struct ChildRun {
    ended: Result<std::process::ExitStatus, String>,
    stdout: String,
    stderr: String,
    peak_mib: f64,
}

impl ProbeRunner {
    /// The child's env: the inherited one without the three variables, plus the file's own.
    fn command(&self, program: &mut Command, env: &[(String, String)]) {
        for var in EnvVar::ALL {
            program.env_remove(var.name());
        }
        for (key, value) in env {
            program.env(key, value);
        }
        if let Some(path) = child_library_path() {
            program.env(tree::LIBRARY_PATH.0, path);
        }
        tree::prepare(program);
        program
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    }

    /// Run one child of the check, sampling the target's memory and every card's processes
    /// (into `acct`) until it ends.
    fn run_child(
        &self,
        mut command: Command,
        cancelled: &AtomicBool,
        acct: &mut Accountant,
    ) -> ChildRun {
        let mut peak = self.gpus.used_mib(&self.target).unwrap_or(0.0);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => return failed_spawn(e.to_string(), peak),
        };
        let tree = match tree::adopt(&child) {
            Ok(tree) => tree,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return failed_spawn(e.to_string(), peak);
            }
        };
        let root_pid = child.id();
        let lines = read_lines(child.stdout.take());
        let stderr = read_all(child.stderr.take());
        let mut stdin = child.stdin.take();
        let mut stdout = String::new();
        let deadline = Instant::now() + self.timeout;
        let ended = loop {
            if let Some(used) = self.gpus.used_mib(&self.target) {
                peak = peak.max(used);
            }
            acct.sample(&self.gpus, Some(&tree));
            while let Ok(line) = lines.try_recv() {
                if line == HELD {
                    // The probe holds its buffer until answered: this sample sees it.
                    if let Some(used) = self.gpus.used_mib(&self.target) {
                        peak = peak.max(used);
                    }
                    acct.sample(&self.gpus, Some(&tree));
                    if let Some(mut input) = stdin.take() {
                        let _ = input.write_all(b"release\n");
                    }
                } else if line == ENDED {
                    // The supervised command ended; what it started still runs until answered.
                    acct.book_lingering(&self.gpus, &tree, root_pid);
                    if let Some(mut input) = stdin.take() {
                        let _ = input.write_all(b"go\n");
                    }
                } else {
                    stdout.push_str(&line);
                    stdout.push('\n');
                }
            }
            match child.try_wait() {
                Ok(Some(status)) => {
                    // Leftovers (a `--gpu-cmd` daemon) would skew the next check's memory:
                    // what they hold now is the check's leak, then they are killed.
                    acct.book_lingering(&self.gpus, &tree, root_pid);
                    tree.kill_all();
                    break Ok(status);
                }
                Ok(None) => {}
                Err(e) => break Err(e.to_string()),
            }
            if cancelled.load(Ordering::SeqCst) {
                kill(&mut child, &tree);
                break Err("cancelled (Ctrl-C): the child was killed".into());
            }
            if Instant::now() >= deadline {
                kill(&mut child, &tree);
                break Err(format!(
                    "timed out after {:.0} s: the child was killed",
                    self.timeout.as_secs_f64()
                ));
            }
            std::thread::sleep(SAMPLE_EVERY);
        };
        // The readers end when the pipes close; a stray grandchild holding them open only
        // costs the grace period.
        while let Ok(line) = lines.recv_timeout(PIPE_GRACE) {
            if line != HELD && line != ENDED {
                stdout.push_str(&line);
                stdout.push('\n');
            }
        }
        ChildRun {
            ended,
            stdout,
            stderr: stderr.recv_timeout(PIPE_GRACE).unwrap_or_default(),
            peak_mib: peak,
        }
    }

    fn probe(
        &self,
        job: &GpuJob,
        cancelled: &AtomicBool,
        acct: &mut Accountant,
    ) -> (ChildRun, Result<ProbeReport, String>) {
        let mut command = Command::new(&self.exe);
        command.args(["__probe", "--mib", &self.probe_mib.to_string()]);
        self.command(&mut command, &job.env);
        let run = self.run_child(command, cancelled, acct);
        let report = match &run.ended {
            Err(e) => Err(e.clone()),
            Ok(_) => serde_json::from_str::<ProbeReport>(run.stdout.trim())
                .map_err(|e| format!("unreadable probe output ({e}): {}", tail(&run.stderr)))
                .and_then(|r| match r.error.clone() {
                    Some(error) => Err(error),
                    None => Ok(r),
                }),
        };
        (run, report)
    }

    /// Device 0 must be the target, and no forbidden card visible.
    fn judge(&self, report: &ProbeReport, env: &[(String, String)]) -> Result<(), String> {
        let Some(first) = report.devices.first() else {
            return Err(format!("no CUDA device visible with {}", describe_env(env)));
        };
        let is = |card: &Card, d: &super::probe::ProbeDevice| {
            card.uuid.eq_ignore_ascii_case(&d.uuid) || same_bus_id(&card.pci_bus_id, &d.pci_bus_id)
        };
        if let Some(bad) = report
            .devices
            .iter()
            .find(|d| self.forbidden.iter().any(|f| is(f, d)))
        {
            let position = report.devices.iter().position(|d| d == bad).unwrap_or(0);
            let why = if position == 0 {
                "device 0 is"
            } else {
                "CUDA also sees"
            };
            return Err(format!(
                "{why} {} ({}), a forbidden card, with {}{}",
                bad.name,
                self.gpus.bus_id(&bad.uuid, &bad.pci_bus_id),
                describe_env(env),
                order_hint(env)
            ));
        }
        if !is(&self.target, first) {
            return Err(format!(
                "device 0 is {} ({}), not the target {} ({}), with {}{}",
                first.name,
                self.gpus.bus_id(&first.uuid, &first.pci_bus_id),
                self.target.name,
                self.target.pci_bus_id,
                describe_env(env),
                order_hint(env)
            ));
        }
        Ok(())
    }

    /// `--gpu-cmd`: run the file itself in the slot, with the same env and timeout.
    fn run_file(
        &self,
        cmd: &str,
        job: &GpuJob,
        cancelled: &AtomicBool,
        acct: &mut Accountant,
    ) -> (f64, Result<(), String>) {
        let quoted = tree::shell_quote(&job.path.display().to_string());
        // Through the supervisor: whatever the command starts dies with the check.
        let mut command = Command::new(&self.exe);
        command
            .args(["__supervise", "--"])
            .args(tree::SHELL)
            .arg(cmd.replace("{file}", &quoted));
        self.command(&mut command, &job.env);
        let run = self.run_child(command, cancelled, acct);
        let verdict = match run.ended {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!(
                "`{cmd}` exited with {status}: {}",
                tail(&run.stderr)
            )),
            Err(e) => Err(format!("`{cmd}`: {e}")),
        };
        (run.peak_mib, verdict)
    }
}

impl ProbeRunner {
    /// Memory in use after the child exited. A real driver frees a dead process's memory
    /// lazily, so an apparent leak is re-read for a short while before it is booked.
    fn settled_used_mib(&self, before: Option<f64>) -> Option<f64> {
        let deadline = Instant::now() + SETTLE;
        loop {
            let after = self.gpus.used_mib(&self.target);
            let leaking = before.zip(after).is_some_and(|(b, a)| a > b);
            if !leaking || Instant::now() >= deadline {
                return after;
            }
            std::thread::sleep(SAMPLE_EVERY);
        }
    }
}

impl GpuChecker for ProbeRunner {
    fn check(&mut self, job: &GpuJob, started: Instant, cancelled: &AtomicBool) -> GpuCheck {
        let started_ms = started.elapsed().as_millis() as u64;
        let mut acct = Accountant::new(&self.gpus, &self.target, &self.forbidden);
        acct.sample(&self.gpus, None);
        let before = self.gpus.used_mib(&self.target);
        let foreign_before = acct.foreign_on_target(&self.gpus);
        let (run, report) = self.probe(job, cancelled, &mut acct);
        let mut peak = run.peak_mib;
        let mut verdict = report
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|r| self.judge(r, &job.env))
            .and_then(|()| on_forbidden(&acct));
        let mut status = if verdict.is_ok() {
            CheckStatus::Passed
        } else {
            CheckStatus::Failed
        };
        if report.is_err() {
            status = CheckStatus::Error;
        }
        if let (Ok(()), Some(cmd)) = (&verdict, self.gpu_cmd.clone()) {
            let (cmd_peak, cmd_verdict) = self.run_file(&cmd, job, cancelled, &mut acct);
            peak = peak.max(cmd_peak);
            // A worker on a forbidden card fails the check even when the command succeeded.
            let cmd_verdict = cmd_verdict.and_then(|()| on_forbidden(&acct));
            if cmd_verdict.is_err() {
                status = CheckStatus::Failed;
            }
            verdict = cmd_verdict;
        }
        let after = self.settled_used_mib(before);
        let foreign_after = acct.foreign_on_target(&self.gpus);
        let allocated = report.as_ref().is_ok_and(|r| r.allocated_mib > 0);
        let listing = acct.listing();
        let (processes, unlisted) = acct.finish(allocated);
        let attributed = listing && unlisted.is_none();
        let lingering: Vec<&GpuProcess> = processes
            .iter()
            .filter(|p| p.lingering_mib.is_some_and(|m| m > 0.0))
            .collect();
        let lingering_mib: f64 = lingering.iter().filter_map(|p| p.lingering_mib).sum();
        // What the counters gained that no foreign process explains (memory the driver keeps
        // for no process); without attribution, the counters alone.
        let foreign = if attributed {
            foreign_after - foreign_before
        } else {
            0.0
        };
        let unattributed = before.zip(after).map(|(b, a)| a - b - foreign);
        let leak = unattributed.map(|u| u + lingering_mib);
        if status == CheckStatus::Passed && leak.is_some_and(|l| l > self.policy.leak_alert_mib) {
            status = CheckStatus::Leak;
            let mut parts: Vec<String> = lingering
                .iter()
                .take(3)
                .map(|p| {
                    format!(
                        "{} still held {:.0} MiB on {} when the command ended",
                        p.who(),
                        p.lingering_mib.unwrap_or(0.0),
                        p.card
                    )
                })
                .collect();
            if unattributed.is_some_and(|u| u > 0.5) {
                parts.push(format!(
                    "{:.0} MiB still in use on {} after the check{}",
                    unattributed.unwrap_or(0.0),
                    self.target.name,
                    if attributed {
                        ", held by no process"
                    } else {
                        ""
                    }
                ));
            }
            verdict = Err(format!(
                "{} (alert above {:.0} MiB)",
                parts.join("; "),
                self.policy.leak_alert_mib
            ));
        }
        let first = report
            .as_ref()
            .ok()
            .and_then(|r| r.devices.first().cloned());
        GpuCheck {
            status: Some(status),
            device_name: first.as_ref().map(|d| d.name.clone()),
            pci_bus_id: first
                .as_ref()
                .map(|d| self.gpus.bus_id(&d.uuid, &d.pci_bus_id)),
            uuid: first.as_ref().map(|d| d.uuid.clone()),
            visible_devices: report.as_ref().ok().map(|r| r.visible),
            mem_before_mib: before,
            mem_peak_mib: Some(peak),
            mem_after_mib: after,
            leak_mib: leak,
            started_ms: Some(started_ms),
            finished_ms: Some(started.elapsed().as_millis() as u64),
            message: verdict.err(),
            host: super::host_name(),
            processes,
            processes_unlisted: unlisted,
        }
    }

    fn device(&self) -> Option<String> {
        Some(format!("{} ({})", self.target.name, self.target.pci_bus_id))
    }
}

/// The check fails when a process of its tree ran on a forbidden card.
fn on_forbidden(acct: &Accountant) -> Result<(), String> {
    let bad = acct.on_forbidden();
    if bad.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = bad.iter().take(3).map(|p| p.describe()).collect();
    let more = if bad.len() > 3 {
        format!(" and {} more", bad.len() - 3)
    } else {
        String::new()
    };
    Err(format!(
        "a process of the check ran on a forbidden card: {}{more}",
        lines.join("; ")
    ))
}

fn failed_spawn(error: String, peak: f64) -> ChildRun {
    ChildRun {
        ended: Err(format!("cannot start the probe: {error}")),
        stdout: String::new(),
        stderr: String::new(),
        peak_mib: peak,
    }
}

/// Kill the child and everything it started (its own process group).
/// Ask first (a supervisor then kills what its command left), then kill the whole group.
fn kill(child: &mut Child, tree: &tree::Tree) {
    tree.ask_to_stop();
    let deadline = Instant::now() + Duration::from_millis(500);
    while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
        std::thread::sleep(Duration::from_millis(10));
    }
    tree.kill_all();
    let _ = child.kill();
    let _ = child.wait();
}

/// Lines of the child's stdout, as they come.
fn read_lines(out: Option<std::process::ChildStdout>) -> crossbeam_channel::Receiver<String> {
    let (tx, rx) = crossbeam_channel::unbounded();
    if let Some(out) = out {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

/// All of the child's stderr, read on a thread so a chatty child never blocks on its pipe.
fn read_all(err: Option<std::process::ChildStderr>) -> crossbeam_channel::Receiver<String> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut err) = err {
            let _ = err.read_to_string(&mut text);
        }
        let _ = tx.send(text);
    });
    rx
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

fn describe_env(env: &[(String, String)]) -> String {
    let get = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let visible = get("CUDA_VISIBLE_DEVICES").map_or("CUDA_VISIBLE_DEVICES unset".into(), |v| {
        format!("CUDA_VISIBLE_DEVICES='{v}'")
    });
    let order = get("CUDA_DEVICE_ORDER").map_or("no CUDA_DEVICE_ORDER".into(), |v| {
        format!("CUDA_DEVICE_ORDER='{v}'")
    });
    format!("{visible} and {order}")
}

fn order_hint(env: &[(String, String)]) -> &'static str {
    match env.iter().find(|(k, _)| k == "CUDA_DEVICE_ORDER") {
        Some((_, v)) if v == "PCI_BUS_ID" => "",
        _ => ": without CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA numbers the cards fastest first",
    }
}
