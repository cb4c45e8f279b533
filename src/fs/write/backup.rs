//! `fix --backup-dir`: the original kept, complete or not at all under its name, confined like
//! every write, no wider than the original.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use super::{race_hook, read_all, temp, WriteError, BACKUP_MARKER};
use crate::fs::confine::{Parent, RootDir};
use crate::fs::platform::{self, meta};

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
                platform::make_private_dirs(dir)?;
                RootDir::open(dir)?.private()
            }
        };
        let marker = base.parent(Path::new(BACKUP_MARKER), false)?;
        let how = platform::How {
            write: true,
            create: true,
            mode: 0o644,
            ..platform::How::READ
        };
        drop(platform::open_at(&marker.dir, &marker.name, how)?);
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
        let linked = staged.and_then(|()| platform::link_at(&parent.dir, &temp.name, &candidate));
        temp.remove(&parent);
        linked?;
        platform::sync_dir(&parent.dir)
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
