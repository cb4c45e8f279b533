//! Temp files that killed runs left next to the files they were rewriting
//! (`.gpu-homogenize-PID-N.tmp`): reported by every run, removed by `fix` once their run is
//! gone — only those the run recorded when it made them (same device, inode and path): a file
//! that merely has such a name is reported and left alone. A live run's are never touched.

use std::path::{Path, PathBuf};

use crate::confine::RootDir;
use crate::walk::escape;
use crate::write::temp;

/// Report (and with `remove`, delete) the temp files of dead runs among `found`.
pub fn handle(root: &Path, found: &[PathBuf], remove: bool) {
    let dead: Vec<&PathBuf> = found
        .iter()
        .filter(|p| {
            p.file_name()
                .and_then(temp::owner_pid)
                .is_some_and(temp::is_dead)
        })
        .collect();
    if dead.is_empty() {
        return;
    }
    let names: Vec<String> = dead.iter().map(|p| escape(p.as_os_str())).collect();
    if !remove {
        crate::output::eprint(&format!(
            "note: {} temp file(s) left by an interrupted run (`fix` removes them): {}\n",
            dead.len(),
            names.join(", ")
        ));
        return;
    }
    let mut removed = Vec::new();
    let mut left = Vec::new();
    let mut runs = std::collections::BTreeSet::new();
    for rel in &dead {
        let pid = rel.file_name().and_then(temp::owner_pid).unwrap_or(0) as u32;
        runs.insert(pid);
        if unlink_recorded(root, rel, pid) {
            removed.push(escape(rel.as_os_str()));
        } else {
            left.push(escape(rel.as_os_str()));
        }
    }
    for pid in runs {
        temp::forget(root, pid);
    }
    if !removed.is_empty() {
        crate::output::eprint(&format!(
            "note: removed {} temp file(s) left by an interrupted run: {}\n",
            removed.len(),
            removed.join(", ")
        ));
    }
    if !left.is_empty() {
        crate::output::eprint(&format!(
            "note: left {} file(s) named like this tool's temp files but not recorded as made by it (remove them by hand if they are leftovers): {}\n",
            left.len(),
            left.join(", ")
        ));
    }
}

/// Remove `rel` when run `pid` recorded making it: same path, device and inode.
fn unlink_recorded(root: &Path, rel: &Path, pid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(parent) = RootDir::open(root).and_then(|r| r.parent(rel, false)) else {
        return false;
    };
    let Ok(file) = parent.open_regular() else {
        return false;
    };
    let Ok(meta) = file.metadata() else {
        return false;
    };
    let shown = escape(rel.as_os_str());
    // Its device and inode as recorded; or, for a file the run was killed right after making,
    // its name recorded ahead (`0 0`) and nothing in it yet.
    let ours = temp::recorded(root, pid).iter().any(|(dev, ino, path)| {
        *path == shown
            && ((*dev, *ino) == (meta.dev(), meta.ino())
                || ((*dev, *ino) == (0, 0) && meta.len() == 0))
    });
    if ours {
        temp::unlink(&parent, &parent.name);
    }
    ours
}

/// The `.gitignore` the registry brought goes with it while no journal is there to commit (a
/// `--no-journal` run leaves no trace); one a person edited, or beside a journal, stays.
fn forget_gitignore(state: i32) {
    use std::io::Read;
    let journal = std::ffi::OsStr::new(crate::journal::JOURNAL_FILE);
    if crate::confine::open_raw(state, journal, libc::O_RDONLY | libc::O_NOFOLLOW, 0).is_ok() {
        return;
    }
    let name = std::ffi::OsStr::new(".gitignore");
    let Ok(fd) = crate::confine::open_raw(state, name, libc::O_RDONLY | libc::O_NOFOLLOW, 0) else {
        return;
    };
    let mut text = String::new();
    let ours = std::fs::File::from(fd)
        .take(4096)
        .read_to_string(&mut text)
        .is_ok()
        && text == crate::journal::GITIGNORE;
    if let (true, Ok(c)) = (ours, crate::confine::cstring(name)) {
        unsafe { libc::unlinkat(state, c.as_ptr(), 0) };
    }
}

/// At the end of a run: its own registry goes (its temp files were renamed or removed), and
/// the registry's directories when nothing else is in them (`--no-journal` leaves no trace).
pub fn forget_own(root: &Path) {
    use std::os::fd::AsRawFd;
    temp::forget(root, std::process::id());
    let Ok(dir) = RootDir::open(root) else { return };
    let state = Path::new(crate::journal::JOURNAL_DIR);
    if let Ok(fd) = dir.dir(state, false) {
        forget_gitignore(fd.as_raw_fd());
    }
    for (parent, name) in [
        (state, "temp"),
        (Path::new(""), crate::journal::JOURNAL_DIR),
    ] {
        let Ok(fd) = dir.dir(parent, false) else {
            return;
        };
        let Ok(c) = crate::confine::cstring(std::ffi::OsStr::new(name)) else {
            return;
        };
        // Fails, harmlessly, when the directory holds anything (a journal, another run's record).
        unsafe { libc::unlinkat(fd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) };
    }
}
