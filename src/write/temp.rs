//! Temp files of a write: `.gpu-homogenize-PID-N.tmp` next to the target, so that a run
//! finding the leftovers of a killed one knows whose they are and may remove them.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::confine::{cstring, open_raw, Parent};

pub const PREFIX: &str = ".gpu-homogenize-";
pub const SUFFIX: &str = ".tmp";

static COUNTER: AtomicU64 = AtomicU64::new(0);

pub struct TempFile {
    pub file: File,
    pub name: OsString,
}

/// A new, empty temp file (mode 0600 until the original's metadata is copied).
pub fn create(parent: &Parent) -> std::io::Result<TempFile> {
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = OsString::from(format!("{PREFIX}{}-{n}{SUFFIX}", std::process::id()));
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        match open_raw(parent.dir.as_raw_fd(), &name, flags, 0o600) {
            Ok(fd) => {
                return Ok(TempFile {
                    file: File::from(fd),
                    name,
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

impl TempFile {
    pub fn remove(&self, parent: &Parent) {
        unlink(parent, &self.name);
    }
}

pub fn unlink(parent: &Parent, name: &OsStr) {
    if let Ok(c) = cstring(name) {
        unsafe { libc::unlinkat(parent.dir.as_raw_fd(), c.as_ptr(), 0) };
    }
}

/// The pid of the run that made a temp file named `name`, if it is one.
pub fn owner_pid(name: &OsStr) -> Option<i32> {
    let text = std::str::from_utf8(name.as_bytes()).ok()?;
    let rest = text.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let (pid, n) = rest.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Whether the process `pid` is gone (so its temp files are leftovers).
pub fn is_dead(pid: i32) -> bool {
    pid > 0
        && unsafe { libc::kill(pid, 0) } != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}
