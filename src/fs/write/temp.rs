//! Temp files of a write: `.gpu-homogenize-PID-N.tmp` next to the target. Each one is recorded
//! when it is made (device, inode and path, in `.gpu-homogenize/temp/PID` under the root), so
//! that a later run removes only what a killed run of this tool made: never a file of the
//! user's that merely has such a name.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::fs::confine::{cstring, open_raw, Parent};

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

/// A new temp file next to `rel` (a file under `root`), recorded as this run's: its name before
/// it exists (a run killed right after creating it leaves an empty file the record names), then
/// its device and inode.
pub fn create_recorded(
    root: &std::path::Path,
    rel: &std::path::Path,
    parent: &Parent,
) -> std::io::Result<TempFile> {
    create_recorded_in(
        root,
        rel.parent().unwrap_or(std::path::Path::new("")),
        parent,
    )
}

/// [`create_recorded`] in the directory `parent` opens, recorded as `dir` (relative to `root`;
/// or absolute: a backup directory outside the tree). Never made unrecorded for want of a
/// descriptor: running out of them is an error here, before anything exists.
pub fn create_recorded_in(
    root: &std::path::Path,
    dir: &std::path::Path,
    parent: &Parent,
) -> std::io::Result<TempFile> {
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = OsString::from(format!("{PREFIX}{}-{n}{SUFFIX}", std::process::id()));
        must_record(record_identity(root, &dir.join(&name), 0, 0))?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        match open_raw(parent.dir.as_raw_fd(), &name, flags, 0o600) {
            Ok(fd) => {
                let file = File::from(fd);
                if let Err(e) = must_record(record(root, &dir.join(&name), &file)) {
                    unlink(parent, &name);
                    return Err(e);
                }
                return Ok(TempFile { file, name });
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

/// Where the temp files of run `pid` are recorded, under the root.
pub fn registry(pid: u32) -> std::path::PathBuf {
    std::path::Path::new(crate::fs::state::STATE_DIR)
        .join("temp")
        .join(pid.to_string())
}

/// A record that failed for want of open files or memory fails the write; any other failure
/// (a state directory that cannot be made) leaves the record out, best effort: a temp file that
/// could not be recorded is reported, never removed, by a later run.
pub fn must_record(recorded: std::io::Result<()>) -> std::io::Result<()> {
    match recorded {
        Err(e) if crate::fs::resources::Exhausted::of(&e).is_some() => Err(e),
        _ => Ok(()),
    }
}

/// Record a temp file just made (`rel`: its path under the root) in this run's registry.
pub fn record(root: &std::path::Path, rel: &std::path::Path, file: &File) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    record_identity(root, rel, meta.dev(), meta.ino())
}

/// Record that the temp name `rel` may hold the inode (`dev`, `ino`): after the exchange it
/// holds the replaced original until it is removed, and a run killed in between leaves it.
pub fn record_identity(
    root: &std::path::Path,
    rel: &std::path::Path,
    dev: u64,
    ino: u64,
) -> std::io::Result<()> {
    use std::io::Write;
    let dir = crate::fs::confine::RootDir::open(root).and_then(|r| {
        crate::fs::state::state_dir(&r)?;
        r.dir(
            &std::path::Path::new(crate::fs::state::STATE_DIR).join("temp"),
            true,
        )
    })?;
    let name = std::process::id().to_string();
    let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NOFOLLOW;
    let fd = open_raw(dir.as_raw_fd(), OsStr::new(&name), flags, 0o600)?;
    let line = format!(
        "{dev} {ino} {}\n",
        crate::base::escape::name(rel.as_os_str())
    );
    File::from(fd).write_all(line.as_bytes())
}

/// The (device, inode) of every temp file run `pid` recorded, by path under the root.
pub fn recorded(root: &std::path::Path, pid: u32) -> Vec<(u64, u64, String)> {
    // Through the confined reader: a registry is a file of the tree, and may be a stranger's.
    let read =
        crate::fs::tree_file::read_text(root, &registry(pid), crate::fs::tree_file::REGISTRY_LIMIT);
    let Ok(Some(text)) = read else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ' ');
            Some((
                parts.next()?.parse().ok()?,
                parts.next()?.parse().ok()?,
                parts.next()?.to_string(),
            ))
        })
        .collect()
}

/// Forget run `pid`'s registry (its temp files are all gone or handled).
pub fn forget(root: &std::path::Path, pid: u32) {
    if let Ok(parent) =
        crate::fs::confine::RootDir::open(root).and_then(|r| r.parent(&registry(pid), false))
    {
        unlink(&parent, &parent.name);
    }
}
