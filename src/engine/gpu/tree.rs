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
