//! Temp files of a write: `.gpu-homogenize-PID-N.tmp` next to the target. Each one is recorded
//! when it is made (device, inode and path, in `.gpu-homogenize/temp/PID` under the root), so
//! that a later run removes only what a killed run of this tool made: never a file of the
//! user's that merely has such a name.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::fs::confine::Parent;
use crate::fs::platform::{self, FileId, How};

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
        match platform::open_at(&parent.dir, &name, How::create_new(0o600)) {
            Ok(file) => return Ok(TempFile { file, name }),
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
        must_record(record_identity(root, &dir.join(&name), (0, 0)))?;
        match platform::open_at(&parent.dir, &name, How::create_new(0o600)) {
            Ok(file) => {
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
    let _ = platform::unlink_at(&parent.dir, name);
}

/// The pid of the run that made a temp file named `name`, if it is one.
pub fn owner_pid(name: &OsStr) -> Option<i32> {
    let text = name.to_str()?;
    let rest = text.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let (pid, n) = rest.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Whether the process `pid` is gone (so its temp files are leftovers).
pub fn is_dead(pid: i32) -> bool {
    pid > 0 && platform::process_gone(pid as u32)
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
    record_identity(root, rel, platform::stat(file)?.id)
}

/// Record that the temp name `rel` may hold the file `(dev, ino)` (on Windows: volume serial,
/// file index): after the exchange it holds the replaced original until it is removed, and a
/// run killed in between leaves it.
pub fn record_identity(
    root: &std::path::Path,
    rel: &std::path::Path,
    (dev, ino): FileId,
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
    let how = How {
        write: true,
        append: true,
        create: true,
        mode: 0o600,
        ..How::READ
    };
    let mut file = platform::open_at(&dir, OsStr::new(&name), how)?;
    let line = format!("{dev} {ino} {}\n", registry_path(rel));
    file.write_all(line.as_bytes())
}

/// A path as the registry holds it, and as the leftovers compare and print them: escaped as a
/// file name is (a unix name's `\` and `"` escaped, git-style), its separators `/` on every
/// platform. On Windows `\` is only ever a separator: escaped, it made every temp file in a
/// directory look like an escaped name, which a later run never removes.
pub fn registry_path(path: &std::path::Path) -> String {
    #[cfg(windows)]
    {
        use std::os::windows::ffi::{OsStrExt, OsStringExt};
        let wide: Vec<u16> = path
            .as_os_str()
            .encode_wide()
            .map(|c| {
                if c == u16::from(b'\\') {
                    u16::from(b'/')
                } else {
                    c
                }
            })
            .collect();
        crate::base::escape::name(&std::ffi::OsString::from_wide(&wide))
    }
    #[cfg(not(windows))]
    crate::base::escape::name(path.as_os_str())
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
