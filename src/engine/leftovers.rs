//! Temp files that killed runs left next to the files they were rewriting
//! (`.gpu-homogenize-PID-N.tmp`), and the copies they were staging in a backup directory:
//! reported by every run, removed by `fix` once their run is gone — only those the run recorded
//! when it made them (same device, inode and path): a file that merely has such a name is
//! reported and left alone. A live run's are never touched. A dead run's registry is read whole,
//! so that a temp file no walk reaches (in the backup directory, which the walk leaves out) goes
//! too; one outside the tree only under this run's own `--backup-dir`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::fs::confine::{Parent, RootDir};
use crate::fs::write::temp;

/// Report (and with `remove`, delete) the temp files of dead runs: those among `found` (the
/// walk's), and those their registries name (in the tree, or under `backup_dir`).
pub fn handle(root: &Path, found: &[PathBuf], remove: bool, backup_dir: Option<&Path>) {
    let owner = |p: &PathBuf| p.file_name().and_then(temp::owner_pid);
    let dead_found: Vec<&PathBuf> = found
        .iter()
        .filter(|p| owner(p).is_some_and(temp::is_dead))
        .collect();
    let mut runs: BTreeSet<u32> = dead_found
        .iter()
        .filter_map(|p| owner(p))
        .map(|pid| pid as u32)
        .collect();
    runs.extend(registered_runs(root));
    if runs.is_empty() {
        return;
    }
    let mut ours: Vec<(String, Parent)> = Vec::new();
    for &pid in &runs {
        let mut out_of_reach = false;
        for (dev, ino, path) in temp::recorded(root, pid) {
            match recorded_temp(root, &path, pid, backup_dir) {
                Reach::Here(parent) => {
                    let listed = ours.iter().any(|(p, _)| *p == path);
                    if !listed && is_recorded(&parent, dev, ino) {
                        ours.push((path, parent));
                    }
                }
                Reach::Elsewhere => out_of_reach = true,
                Reach::Never => {}
            }
        }
        // A backup directory this run was not given keeps its run's registry for a later one.
        if remove && !out_of_reach {
            temp::forget(root, pid);
        }
    }
    let unrecorded: Vec<String> = dead_found
        .iter()
        .map(|p| temp::registry_path(p))
        .filter(|shown| !ours.iter().any(|(path, _)| path == shown))
        .collect();
    let shown_ours: Vec<String> = ours.iter().map(|(path, _)| path.clone()).collect();
    if !remove {
        let all: Vec<String> = shown_ours.into_iter().chain(unrecorded).collect();
        if !all.is_empty() {
            crate::base::output::eprint(&format!(
                "note: {} temp file(s) left by an interrupted run (`fix` removes them): {}\n",
                all.len(),
                all.join(", ")
            ));
        }
        return;
    }
    for (_, parent) in &ours {
        temp::unlink(parent, &parent.name);
    }
    if !shown_ours.is_empty() {
        crate::base::output::eprint(&format!(
            "note: removed {} temp file(s) left by an interrupted run: {}\n",
            shown_ours.len(),
            shown_ours.join(", ")
        ));
    }
    if !unrecorded.is_empty() {
        crate::base::output::eprint(&format!(
            "note: left {} file(s) named like this tool's temp files but not recorded as made by it (remove them by hand if they are leftovers): {}\n",
            unrecorded.len(),
            unrecorded.join(", ")
        ));
    }
}

/// The runs, gone now, whose registries are still under the root.
fn registered_runs(root: &Path) -> Vec<u32> {
    let dir = Path::new(crate::fs::state::STATE_DIR).join("temp");
    // Listed below the root without following a link, as the registries are read.
    let Ok(names) = RootDir::open(root).and_then(|r| r.list(&dir)) else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(|name| name.to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id() && temp::is_dead(pid as i32))
        .collect()
}

/// Where a recorded temp file is, when this run may remove it.
enum Reach {
    /// Its directory, opened without following a link, and its name.
    Here(Parent),
    /// Outside the tree, in a backup directory this run was not given.
    Elsewhere,
    /// Gone, not one of that run's temp names, or a path this run cannot read back.
    Never,
}

/// `path` as run `pid` recorded it: under the root when relative; when absolute, only under
/// `backup_dir`. Only a name of that run's temp files is ever reached.
fn recorded_temp(root: &Path, path: &str, pid: u32, backup_dir: Option<&Path>) -> Reach {
    // An escaped path (a name that is not plain text) is matched against the walk's only.
    if path.contains('\\') {
        return Reach::Never;
    }
    let path = Path::new(path);
    let ours = path
        .file_name()
        .and_then(temp::owner_pid)
        .is_some_and(|owner| owner as u32 == pid);
    if !ours {
        return Reach::Never;
    }
    let parent = if path.is_absolute() {
        match backup_dir {
            Some(dir) if path.starts_with(dir) => {
                let rel = path.strip_prefix(dir).unwrap_or(path);
                RootDir::open(dir).and_then(|d| d.parent(rel, false))
            }
            _ => return Reach::Elsewhere,
        }
    } else {
        RootDir::open(root).and_then(|r| r.parent(path, false))
    };
    parent.map_or(Reach::Never, Reach::Here)
}

/// Whether the file `parent` names is the one recorded: same device and inode; or, for a file
/// the run was killed right after making, its name recorded ahead (`0 0`) and nothing in it yet.
fn is_recorded(parent: &Parent, dev: u64, ino: u64) -> bool {
    let Ok((meta, stat)) = parent.open_regular().and_then(|f| {
        let stat = crate::fs::platform::stat(&f)?;
        Ok((f.metadata()?, stat))
    }) else {
        return false;
    };
    (dev, ino) == stat.id || ((dev, ino) == (0, 0) && meta.len() == 0)
}

/// The `.gitignore` the registry brought goes with it while no journal is there to commit (a
/// `--no-journal` run leaves no trace); one a person edited, or beside a journal, stays.
fn forget_gitignore(state: &crate::fs::platform::Dir) {
    use crate::fs::platform::{open_at, How};
    use std::io::Read;
    let journal = std::ffi::OsStr::new(crate::journal::JOURNAL_FILE);
    if open_at(state, journal, How::READ).is_ok() {
        return;
    }
    let name = std::ffi::OsStr::new(".gitignore");
    let Ok(file) = open_at(state, name, How::READ) else {
        return;
    };
    let mut text = String::new();
    let ours =
        file.take(4096).read_to_string(&mut text).is_ok() && text == crate::fs::state::GITIGNORE;
    if ours {
        let _ = crate::fs::platform::unlink_at(state, name);
    }
}

/// At the end of a run: its own registry goes (its temp files were renamed or removed), and
/// the registry's directories when nothing else is in them (`--no-journal` leaves no trace).
pub fn forget_own(root: &Path) {
    temp::forget(root, std::process::id());
    let Ok(dir) = RootDir::open(root) else { return };
    let state = Path::new(crate::fs::state::STATE_DIR);
    if let Ok(fd) = dir.dir(state, false) {
        forget_gitignore(&fd);
    }
    for (parent, name) in [
        (state, "temp"),
        (Path::new(""), crate::fs::state::STATE_DIR),
    ] {
        let Ok(fd) = dir.dir(parent, false) else {
            return;
        };
        // Fails, harmlessly, when the directory holds anything (a journal, another run's record).
        let _ = crate::fs::platform::remove_dir_at(&fd, std::ffi::OsStr::new(name));
    }
}
