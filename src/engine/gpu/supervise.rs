//! The supervisor of a `--gpu-cmd` run: a child of the tool that runs the command and kills
//! every process the command left behind when the command ends, when the tool asks and when the
//! tool dies, so no process outlives a check, even after `kill -9` of the tool.
//!
//! On Linux it becomes a subreaper and kills its descendants, `setsid` daemons included (it
//! notices the tool's death by being reparented). On Windows the command runs in a Job Object
//! of its own with kill-on-close, nested in the check's (see [`super::tree`]): the job ends
//! whatever the command started when the command ends, and the check's job ends the supervisor
//! and everything below it when the tool ends. The command line is handed to `cmd /C` as it was
//! written (never re-quoted), as a cmd prompt would run it.

#[cfg(target_os = "linux")]
pub use linux::run;

/// What the supervisor prints when the command has ended and before it kills what the command
/// left: the check samples the lingering processes' memory (the check's leak), then answers a
/// line on the supervisor's stdin (or closes it). The command itself reads no stdin.
pub const ENDED: &str = "{\"command_ended\":true}";

/// Say the command ended and wait (a bounded while) for the check's answer.
fn announce_end() {
    use std::io::{BufRead, Write};
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "{ENDED}");
    let _ = stdout.flush();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        let _ = tx.send(());
    });
    let _ = rx.recv_timeout(std::time::Duration::from_secs(2));
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::process::Command;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// Run `command` under supervision; the exit code is the command's.
    pub fn run(command: &[String]) -> i32 {
        let parent = std::os::unix::process::parent_id();
        // SAFETY: prctl with these options only changes this process's own attributes.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
            // Watched by polling below: a signal here could end this process before it cleans up.
            libc::prctl(libc::PR_SET_PDEATHSIG, 0, 0, 0, 0);
        }
        let stop = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            let _ = signal_hook::flag::register(signal, Arc::clone(&stop));
        }
        // The tool died before the parent-death signal was armed.
        if std::os::unix::process::parent_id() != parent {
            return 2;
        }
        let Some((program, rest)) = command.split_first() else {
            eprintln!("__supervise: no command");
            return 2;
        };
        let mut child = match Command::new(program)
            .args(rest)
            .stdin(std::process::Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(e) => {
                eprintln!("{program}: {e}");
                return 127;
            }
        };
        let mut stopped = false;
        let code = loop {
            match child.try_wait() {
                Ok(Some(status)) => break exit_code(status),
                Ok(None) => {}
                Err(_) => break 2,
            }
            // The tool asked (SIGTERM), or died: this process was reparented.
            if stop.load(Ordering::SeqCst) || std::os::unix::process::parent_id() != parent {
                stopped = true;
                break 128 + libc::SIGTERM;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Stopped by the tool (or orphaned): nobody samples, kill at once.
        if !stopped {
            super::announce_end();
        }
        kill_descendants();
        code
    }

    fn exit_code(status: std::process::ExitStatus) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
    }

    /// Kill and reap every descendant of this process until none is left (a dying process's
    /// children are reparented here, this process being their subreaper).
    fn kill_descendants() {
        let me = std::process::id() as i32;
        for _ in 0..100 {
            let left = descendants(me);
            if left.is_empty() {
                break;
            }
            for pid in left {
                // SAFETY: sending a signal to a pid we found as our descendant.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            reap();
            std::thread::sleep(Duration::from_millis(10));
        }
        reap();
    }

    fn reap() {
        loop {
            let mut status = 0;
            // SAFETY: waitpid with WNOHANG on any child of ours.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
        }
    }

    /// Live descendants of `root`, from the parent links in /proc.
    fn descendants(root: i32) -> Vec<i32> {
        let mut parent_of: HashMap<i32, i32> = HashMap::new();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // The command name may hold spaces and parentheses: fields follow the last ')'.
            let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                continue;
            };
            let mut fields = after.split_whitespace();
            let state = fields.next().unwrap_or("");
            let ppid = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            if state != "Z" {
                parent_of.insert(pid, ppid);
            }
        }
        parent_of
            .keys()
            .copied()
            .filter(|&pid| {
                let mut at = pid;
                for _ in 0..64 {
                    match parent_of.get(&at) {
                        Some(&p) if p == root => return true,
                        Some(&p) if p > 1 => at = p,
                        _ => return false,
                    }
                }
                false
            })
            .collect()
    }
}

/// cmd's arguments for `/C LINE`: `/S /C "LINE"` (anything else as given).
#[cfg(any(windows, test))]
fn cmd_arguments(rest: &[String]) -> String {
    match rest.split_first() {
        Some((c, line)) if c.eq_ignore_ascii_case("/C") => format!("/S /C \"{}\"", line.join(" ")),
        _ => rest.join(" "),
    }
}

/// Run `command` (`cmd /C LINE`) under supervision; the exit code is the command's.
#[cfg(windows)]
pub fn run(command: &[String]) -> i32 {
    use std::os::windows::process::CommandExt;
    let Some((program, rest)) = command.split_first() else {
        eprintln!("__supervise: no command");
        return 2;
    };
    let mut child = std::process::Command::new(program);
    // The line as the user wrote it: cmd parses it, not the MSVC argument rules. `/S /C "LINE"`:
    // cmd then removes exactly the outer pair of quotes, so a line that starts and ends with
    // its own (a quoted program, `{file}` last) keeps them; with a bare `/C` it would lose both.
    child.raw_arg(cmd_arguments(rest));
    child.stdin(std::process::Stdio::null());
    super::tree::prepare(&mut child);
    let mut child = match child.spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("{program}: {e}");
            return 127;
        }
    };
    // Without nested jobs (before Windows 8) the command stays in the check's job alone, which
    // still ends it with the check; the child is resumed either way.
    let tree = super::tree::adopt(&child).ok();
    let code = match child.wait() {
        Ok(status) => status.code().unwrap_or(2),
        Err(_) => 2,
    };
    announce_end();
    if let Some(tree) = tree {
        tree.kill_all();
    }
    code
}

#[cfg(test)]
mod cmd_tests {
    use super::cmd_arguments;

    #[test]
    fn a_line_keeps_its_own_quotes_under_cmd() {
        let line = |l: &str| cmd_arguments(&["/C".to_string(), l.to_string()]);
        assert_eq!(
            line(r#""C:\Program Files\Python\python.exe" "C:\tree\x.py""#),
            r#"/S /C ""C:\Program Files\Python\python.exe" "C:\tree\x.py"""#
        );
        assert_eq!(
            line("python x.py & echo done"),
            r#"/S /C "python x.py & echo done""#
        );
    }
}
