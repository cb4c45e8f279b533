//! A child of a check and everything it starts, ended together: on unix its own process group
//! (and `PR_SET_PDEATHSIG` on Linux, so a hung child dies with the tool); on Windows a Job
//! Object with kill-on-close, which the child joins before it runs a single instruction
//! (created suspended, resumed once assigned), and whose last handle, held by the tool, ends
//! the whole tree when the tool ends, however it ends.

use std::process::{Child, Command};

/// How a command line (`--gpu-cmd`) is started: `sh -c LINE` on unix, `cmd /C LINE` on Windows.
#[cfg(unix)]
pub const SHELL: [&str; 2] = ["sh", "-c"];
#[cfg(windows)]
pub const SHELL: [&str; 2] = ["cmd", "/C"];

/// A file's path as one word of that shell's command line.
#[cfg(unix)]
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// A file's path as one word of cmd's command line: in double quotes (a Windows name holds no
/// `"`); `%` doubled is not needed inside `cmd /C` quotes for a name, which holds no `%VAR%`
/// expansion risk beyond the user's own tree.
#[cfg(windows)]
pub fn shell_quote(text: &str) -> String {
    format!("\"{}\"", text.replace('"', ""))
}

/// The driver directory prepended to the library search path a child inherits.
#[cfg(unix)]
pub const LIBRARY_PATH: (&str, char) = ("LD_LIBRARY_PATH", ':');
#[cfg(windows)]
pub const LIBRARY_PATH: (&str, char) = ("PATH", ';');

/// The process tree of one started child.
pub struct Tree {
    #[cfg(unix)]
    pid: i32,
    #[cfg(windows)]
    job: std::os::windows::io::OwnedHandle,
}

/// Set `command` up to start a tree of its own.
#[cfg(unix)]
pub fn prepare(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // Its own process group, so a timeout kills whatever it started too.
    command.process_group(0);
    // If the tool itself is killed, a hung probe must not outlive it.
    #[cfg(target_os = "linux")]
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

#[cfg(windows)]
pub fn prepare(command: &mut Command) {
    use std::os::windows::process::CommandExt;
    use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED};
    command.creation_flags(CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP);
}

/// The tree of `child`, started from a command [`prepare`]d.
#[cfg(unix)]
pub fn adopt(child: &Child) -> std::io::Result<Tree> {
    Ok(Tree {
        pid: i32::try_from(child.id()).map_err(std::io::Error::other)?,
    })
}

#[cfg(windows)]
pub fn adopt(child: &Child) -> std::io::Result<Tree> {
    use std::os::windows::io::AsRawHandle;
    let job = kill_on_close_job()?;
    // SAFETY: a job handle and our own child's process handle.
    let assigned = unsafe {
        windows_sys::Win32::System::JobObjects::AssignProcessToJobObject(
            job.as_raw_handle(),
            child.as_raw_handle(),
        )
    };
    let assigned = if assigned == 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    };
    // Resumed whatever happened: a child never left suspended (a failure is still reported).
    // SAFETY: our own child's process handle.
    let resumed = unsafe { NtResumeProcess(child.as_raw_handle()) };
    assigned?;
    if resumed < 0 {
        return Err(std::io::Error::other(format!(
            "cannot resume the child (NTSTATUS {resumed:#x})"
        )));
    }
    Ok(Tree { job })
}

#[cfg(windows)]
#[link(name = "ntdll")]
extern "system" {
    fn NtResumeProcess(process: windows_sys::Win32::Foundation::HANDLE) -> i32;
}

/// A Job Object that kills every process in it when its last handle is closed.
#[cfg(windows)]
pub fn kill_on_close_job() -> std::io::Result<std::os::windows::io::OwnedHandle> {
    use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
    use windows_sys::Win32::System::JobObjects as jobs;
    // SAFETY: an anonymous job with default security.
    let job = unsafe { jobs::CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if job.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the handle just created, owned here.
    let job = unsafe { OwnedHandle::from_raw_handle(job) };
    // SAFETY: all zero is "no limit" for every field.
    let mut limits: jobs::JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
    limits.BasicLimitInformation.LimitFlags = jobs::JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: a struct of the size passed.
    let set = unsafe {
        jobs::SetInformationJobObject(
            job.as_raw_handle(),
            jobs::JobObjectExtendedLimitInformation,
            (&limits as *const jobs::JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
            std::mem::size_of_val(&limits) as u32,
        )
    };
    if set == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(job)
}

impl Tree {
    /// Whether `pid` belongs to the tree. On unix: the tree's process group, or (on Linux) a
    /// descendant of its root, `setsid` daemons of a supervised command included. On Windows:
    /// a process of the tree's Job Object (children inherit it).
    pub fn contains(&self, pid: u32) -> bool {
        #[cfg(unix)]
        {
            let Ok(pid) = i32::try_from(pid) else {
                return false;
            };
            // SAFETY: getpgid only reads another process's group id.
            if unsafe { libc::getpgid(pid) } == self.pid {
                return true;
            }
            #[cfg(target_os = "linux")]
            {
                let mut at = pid;
                for _ in 0..64 {
                    match linux_parent(at) {
                        Some(parent) if parent == self.pid => return true,
                        Some(parent) if parent > 1 => at = parent,
                        _ => return false,
                    }
                }
            }
            false
        }
        #[cfg(windows)]
        {
            use std::os::windows::io::AsRawHandle;
            use windows_sys::Win32::Foundation::CloseHandle;
            use windows_sys::Win32::System::JobObjects::IsProcessInJob;
            use windows_sys::Win32::System::Threading::{
                OpenProcess, PROCESS_QUERY_INFORMATION, PROCESS_QUERY_LIMITED_INFORMATION,
            };
            // Windows asks either right of `IsProcessInJob`; Wine asks the full one. The
            // limited one is what a process of another user grants.
            // SAFETY: handles opened for a query only, closed below.
            let mut process = unsafe { OpenProcess(PROCESS_QUERY_INFORMATION, 0, pid) };
            if process.is_null() {
                // SAFETY: as above.
                process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
            }
            if process.is_null() {
                return false;
            }
            let mut inside = 0;
            // SAFETY: a live process handle and our job handle.
            let asked = unsafe { IsProcessInJob(process, self.job.as_raw_handle(), &mut inside) };
            // SAFETY: the handle opened above.
            unsafe { CloseHandle(process) };
            asked != 0 && inside != 0
        }
    }

    /// Ask the child to stop (a supervisor then kills what its command left). Windows has no
    /// such request for a console program: the caller's kill that follows ends the tree.
    pub fn ask_to_stop(&self) {
        #[cfg(unix)]
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(self.pid, libc::SIGTERM);
        }
    }

    /// Kill every process of the tree.
    pub fn kill_all(&self) {
        #[cfg(unix)]
        // SAFETY: signalling our own child's process group.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
        #[cfg(windows)]
        // SAFETY: a job handle of ours.
        unsafe {
            use std::os::windows::io::AsRawHandle;
            windows_sys::Win32::System::JobObjects::TerminateJobObject(self.job.as_raw_handle(), 1);
        }
    }
}

/// The parent of a live process, from `/proc/PID/stat` (the fields after the name's last `)`).
#[cfg(target_os = "linux")]
fn linux_parent(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// A process's command line, at most `MAX` characters, control characters replaced, for the
/// check's own processes. `None` where the system does not say.
pub fn command_line(pid: u32) -> Option<String> {
    const MAX: usize = 200;
    let text: String = command_line_raw(pid)?
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut line: String = text.chars().take(MAX).collect();
    if text.chars().count() > MAX {
        line.push('…');
    }
    Some(line)
}

#[cfg(target_os = "linux")]
fn command_line_raw(pid: u32) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(format!("/proc/{pid}/cmdline"))
        .ok()?
        .take(4096)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).replace('\0', " "))
}

#[cfg(windows)]
fn command_line_raw(pid: u32) -> Option<String> {
    use windows_sys::Win32::Foundation::CloseHandle;
    use windows_sys::Win32::System::Threading::{
        OpenProcess, QueryFullProcessImageNameW, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: a handle opened for a query only, closed below.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        return None;
    }
    let mut name = [0u16; 1024];
    let mut len = name.len() as u32;
    // SAFETY: a buffer of `len` UTF-16 units.
    let ok = unsafe { QueryFullProcessImageNameW(process, 0, name.as_mut_ptr(), &mut len) };
    // SAFETY: the handle opened above.
    unsafe { CloseHandle(process) };
    (ok != 0).then(|| String::from_utf16_lossy(&name[..len as usize]))
}

#[cfg(all(unix, not(target_os = "linux")))]
fn command_line_raw(_pid: u32) -> Option<String> {
    None
}
