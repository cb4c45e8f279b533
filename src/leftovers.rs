//! Temp files that killed runs left next to the files they were rewriting
//! (`.gpu-homogenize-PID-N.tmp`): reported by every run, removed by `fix` once their run is
//! gone. A live run's temp files are never touched.

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
    let removed = dead.iter().filter(|rel| unlink(root, rel)).count();
    crate::output::eprint(&format!(
        "note: removed {removed} of {} temp file(s) left by an interrupted run: {}\n",
        dead.len(),
        names.join(", ")
    ));
}

fn unlink(root: &Path, rel: &Path) -> bool {
    let Ok(parent) = RootDir::open(root).and_then(|r| r.parent(rel, false)) else {
        return false;
    };
    temp::unlink(&parent, &parent.name);
    true
}
