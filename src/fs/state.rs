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
pub fn state_dir(root: &crate::fs::confine::RootDir) -> std::io::Result<crate::fs::platform::Dir> {
    use crate::fs::platform::{open_at, How};
    let dir = root.dir(Path::new(STATE_DIR), true)?;
    let name = std::ffi::OsStr::new(".gitignore");
    if let Ok(mut file) = open_at(&dir, name, How::create_new(0o644)) {
        let _ = file.write_all(GITIGNORE.as_bytes());
    }
    Ok(dir)
}
