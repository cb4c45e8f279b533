//! The tool's own directory in the tree, `.gpu-homogenize`: the journal, the temp registry
//! and the cache live there, each opened below the root like every write.

use std::io::Write;
use std::path::Path;

/// The tool's directory under the tree root.
pub const STATE_DIR: &str = ".gpu-homogenize";

/// What `.gpu-homogenize/.gitignore` says: the journal is committed (it is the coordinator's
/// history, which `report` reads on any clone), the registry of a running fix's temp files and
/// any cache are this machine's only, as ruff's `.ruff_cache/.gitignore` keeps its cache out.
pub const GITIGNORE: &str = "\
# Made by gpu-homogenize. Commit journal.jsonl: it is the coordinator's history (what was fixed
# and validated, on which GPU, and when) that `gpu-homogenize report` reads.
# The registry of the temp files of running fixes and any cache belong to this machine only.
temp/
cache/
";

/// `.gpu-homogenize` under the root (made when missing, no link followed), with its
/// `.gitignore` written when it has none (an existing one is the user's and is kept).
pub fn state_dir(root: &crate::fs::confine::RootDir) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::AsRawFd;
    let dir = root.dir(Path::new(STATE_DIR), true)?;
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    let name = std::ffi::OsStr::new(".gitignore");
    if let Ok(fd) = crate::fs::confine::open_raw(dir.as_raw_fd(), name, flags, 0o644) {
        let _ = std::fs::File::from(fd).write_all(GITIGNORE.as_bytes());
    }
    Ok(dir)
}
