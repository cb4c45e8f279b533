//! `fix --backup-dir`: the original kept, complete or not at all under its name, confined like
//! every write, no wider than the original.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

use super::{fsync_dir, meta, race_hook, read_all, temp, WriteError, BACKUP_MARKER};
use crate::fs::confine::{cstring, Parent, RootDir};

/// Keep the original under `dir`, same relative path with its exact bytes, owner and mode; an
/// older backup is never overwritten (the next free `NAME.~N~` is used, as `cp
/// --backup=numbered`).
pub(super) fn backup(
    root: &Path,
    dir: &Path,
    rel: &Path,
    original: &[u8],
    file: &File,
    before: &std::fs::Metadata,
) -> Result<(), WriteError> {
    let target = dir.join(rel);
    // Where its staged copy is recorded: under the root, relative; outside it, absolute.
    let recorded_dir = match dir.strip_prefix(root) {
        Ok(in_tree) => in_tree.join(rel),
        Err(_) => target.clone(),
    };
    let recorded_dir = recorded_dir.parent().unwrap_or(Path::new("")).to_path_buf();
    // Under the backup dir every directory is opened without following a link (as under the
    // root); the copy is staged in a temp file with the original's owner, mode and xattrs and
    // linked to its name without replacing anything: a killed run leaves a temp file, never a
    // truncated backup under the real name.
    let write = || -> io::Result<()> {
        // In the tree, the backup dir is reached as every write is, no link followed; outside
        // it, it is the user's choice. Below it, no link. The directories it makes are the
        // owner's only (the original may sit in a private directory). Its marker keeps it out of
        // every later walk.
        let base = match dir.strip_prefix(root) {
            Ok(in_tree) => RootDir::open(root)?.below(in_tree)?,
            Err(_) => {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)?;
                RootDir::open(dir)?.private()
            }
        };
        let marker = base.parent(Path::new(BACKUP_MARKER), false)?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW;
        drop(crate::fs::confine::open_raw(
            marker.dir.as_raw_fd(),
            &marker.name,
            flags,
            0o644,
        )?);
        let parent = base.parent(rel, true)?;
        let mut candidate = parent.name.clone();
        for n in 1.. {
            let probe = Parent {
                dir: parent.dir.try_clone()?,
                name: candidate.clone(),
            };
            match probe.open_regular() {
                Ok(mut existing) => {
                    if read_all(&mut existing)? == original {
                        return Ok(());
                    }
                    candidate = parent.name.clone();
                    candidate.push(format!(".~{n}~"));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                Err(e) => return Err(e),
            }
        }
        // Recorded like every temp file, so that the next run removes what a killed one left.
        let temp = temp::create_recorded_in(root, &recorded_dir, &parent)?;
        let staged = (|| -> io::Result<()> {
            (&temp.file).write_all(original)?;
            meta::copy(file, &temp.file, before).map_err(io::Error::other)?;
            temp.file.sync_all()
        })();
        race_hook(
            &Parent {
                dir: parent.dir.try_clone()?,
                name: candidate.clone(),
            },
            "backup",
        );
        let (from, to) = (cstring(&temp.name)?, cstring(&candidate)?);
        let linked = staged.and_then(|()| {
            let d = parent.dir.as_raw_fd();
            if unsafe { libc::linkat(d, from.as_ptr(), d, to.as_ptr(), 0) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
        temp.remove(&parent);
        linked?;
        fsync_dir(&parent.dir)
    };
    write().map_err(
        |source| match crate::fs::resources::Exhausted::of(&source) {
            Some(what) => WriteError::Exhausted(what),
            None => WriteError::Backup {
                path: target.display().to_string(),
                source,
            },
        },
    )
}
