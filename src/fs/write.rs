//! Compare-and-swap writes under the tree root: nothing is ever lost, nothing outside the
//! root is ever written.
//!
//! The new text goes to a temp file in the file's own directory (opened through
//! [`RootDir`], no symlink followed), with the original's owner, group, mode and xattrs.
//! Then, on Linux, `renameat2(RENAME_EXCHANGE)` swaps it with the target in one step and
//! what was swapped out is compared with what was read: same inode, same bytes. On a
//! difference (an editor saved meanwhile) the swap is undone and the file is reported as
//! changed. Where the exchange is unsupported (another OS, some network file systems) the
//! file is re-read just before a plain rename: an edit in that window of microseconds can
//! still be lost; that is the best portable equivalent. A program that holds the file open for
//! writing, or opens it during the swap, would write to the inode swapped out: on Linux a read
//! lease held across the swap makes the kernel say so (see [`lease`]); the swap is undone, or,
//! when it came after the check, what it wrote is kept aside. Where leases cannot be had
//! (another user's file), the inode swapped out is still re-read after the swap, and what a
//! writer left in it is kept aside; a write that comes later still is lost, as with any
//! editor's own atomic save.

mod backup;
mod output;
pub mod temp;

pub use output::write_output;

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::fs::confine::{Parent, RootDir};
use crate::fs::platform::{self, lease, meta, FileId};

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("changed on disk since it was read; not overwritten (run again)")]
    Changed,
    #[error(
        "changed on disk during the write; the rewrite was undone and the other version \
         kept as {0} (compare it with {1}; to keep it, `mv` it over {1}; then run again)"
    )]
    ChangedKeptAside(String, String),
    #[error(
        "is open for writing in another program; not rewritten, so that what it writes is kept \
         (close it there, then run again)"
    )]
    HeldOpen,
    #[error(
        "was written by another program during the rewrite; the rewrite is in place and the file \
         as that program left it is kept as {0} (compare it with {1}; to keep it, `mv` it over \
         {1}; then run again)"
    )]
    WrittenDuringSwap(String, String),
    #[error("read-only file; not rewritten (make it writable, or leave it out)")]
    ReadOnly,
    #[error("is a symbolic link; not rewritten")]
    Symlink,
    #[error(
        "has {0} hard links; not rewritten, which would split them (--break-hardlinks to allow)"
    )]
    HardLinks(u64),
    #[error("cannot keep its metadata ({0}); not rewritten")]
    Metadata(String),
    #[error("cannot back up to {path}: {source}")]
    Backup { path: String, source: io::Error },
    #[error("{0}; not rewritten")]
    Encoding(String),
    /// Open files or memory ran out: the run's error, and nothing was changed (see
    /// [`crate::fs::resources`]).
    #[error("{0}; not rewritten")]
    Exhausted(crate::fs::resources::Exhausted),
    #[error("cannot write: {0}")]
    Io(io::Error),
}

impl From<io::Error> for WriteError {
    fn from(e: io::Error) -> WriteError {
        match crate::fs::resources::Exhausted::of(&e) {
            Some(what) => WriteError::Exhausted(what),
            None => WriteError::Io(e),
        }
    }
}

/// The file that marks a backup directory (`fix --backup-dir`): no walk enters it.
pub const BACKUP_MARKER: &str = ".gpu-homogenize-backups";

/// How `fix` writes: where originals are kept, and whether hard links may be split.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub backup_dir: Option<PathBuf>,
    pub break_hardlinks: bool,
}

/// Replace the file at `rel` under `root`, whose content was `original` when read, with
/// `new`; keep a copy of the original under the backup dir when asked. `new` text that declares
/// an encoding in its coding cookie is written in it (a file keeps the encoding it was read in).
pub fn write_confined(
    root: &Path,
    rel: &Path,
    original: &[u8],
    new: &[u8],
    options: &WriteOptions,
) -> Result<(), WriteError> {
    let encoded = match std::str::from_utf8(new) {
        Ok(text) => {
            crate::fs::source::codec::encode_declared(text).map_err(WriteError::Encoding)?
        }
        Err(_) => new.to_vec(),
    };
    let new = encoded.as_slice();
    let parent = RootDir::open(root)?.parent(rel, false)?;
    let mut file = parent.open_to_replace().map_err(|e| {
        if e.to_string().contains("symbolic link") {
            WriteError::Symlink
        } else if platform::is_held_open(&e) {
            WriteError::HeldOpen
        } else {
            WriteError::from(e)
        }
    })?;
    let before = file.metadata()?;
    let stat = platform::stat(&file)?;
    if stat.links > 1 && !options.break_hardlinks {
        return Err(WriteError::HardLinks(stat.links));
    }
    if !meta::may_write(&parent.dir, &parent.name, &before) {
        return Err(WriteError::ReadOnly);
    }
    if read_all(&mut file)? != original {
        return Err(WriteError::Changed);
    }
    if let Some(dir) = &options.backup_dir {
        backup::backup(root, dir, rel, original, &file, &before)?;
    }
    let temp = temp::create_recorded(root, rel, &parent)?;
    let temp_rel = rel.parent().unwrap_or(Path::new("")).join(&temp.name);
    // After the exchange the temp name holds the original until it is removed: recorded
    // before, or the swap does not happen (a run killed after it must leave nothing unrecorded).
    let staged = stage(&temp, &file, &before, new).and_then(|()| {
        temp::must_record(temp::record_identity(root, &temp_rel, stat.id)).map_err(Into::into)
    });
    if let Err(e) = staged {
        temp.remove(&parent);
        return Err(e);
    }
    race_hook(&parent, "before-swap");
    let read = ReadFile {
        file,
        meta: &before,
        id: stat.id,
        bytes: original,
    };
    swap(&parent, temp, read)?;
    let _ = platform::sync_dir(&parent.dir);
    Ok(())
}

/// The temp file's content and metadata, synced to disk.
fn stage(
    temp: &temp::TempFile,
    original: &File,
    before: &std::fs::Metadata,
    new: &[u8],
) -> Result<(), WriteError> {
    let mut out = &temp.file;
    out.write_all(new)?;
    meta::copy(original, &temp.file, before).map_err(WriteError::Metadata)?;
    temp.file.sync_all()?;
    Ok(())
}

/// The file as it was read: its handle (still open), metadata, identity and bytes.
struct ReadFile<'a> {
    file: File,
    meta: &'a std::fs::Metadata,
    id: FileId,
    bytes: &'a [u8],
}

/// Exchange the temp file with the target, then check what came out.
fn swap(parent: &Parent, temp: temp::TempFile, read: ReadFile) -> Result<(), WriteError> {
    // Held across the swap: a program that opens the file for writing meanwhile waits, and
    // shows (`broken`); one that holds it open already is refused the lease.
    let Ok(mut lease) = lease::ReadLease::take(&read.file) else {
        temp.remove(parent);
        return Err(WriteError::HeldOpen);
    };
    match platform::exchange_at(&parent.dir, &temp.name, &parent.name) {
        Ok(()) => {}
        Err(e) if platform::unsupported(&e) => {
            drop(lease);
            return swap_by_rename(parent, temp, read);
        }
        Err(e) => {
            temp.remove(parent);
            return Err(e.into());
        }
    }
    race_hook(parent, "swapped");
    // The temp name now holds what was the file: it must be what we read, and no program may be
    // opening it for writing (it would write to the inode just swapped out): else it goes back.
    let held = lease.broken();
    if !held && same_file(parent, &temp.name, &read)? {
        temp.remove(parent);
        let opened = lease.broken();
        lease.release();
        return after_swap(parent, &read, opened);
    }
    platform::exchange_at(&parent.dir, &temp.name, &parent.name)?;
    let ours = platform::stat(&temp.file)?.id;
    if same_inode(parent, &temp.name, ours) {
        temp.remove(parent);
        return Err(if held {
            WriteError::HeldOpen
        } else {
            WriteError::Changed
        });
    }
    // Yet another version arrived during the undo: keep it, never delete it, under a name no
    // cleanup ever looks at and that says what it is.
    let kept = keep_aside(parent, &temp.name).unwrap_or_else(|_| temp.name.clone());
    Err(WriteError::ChangedKeptAside(
        shown(&kept),
        shown(&parent.name),
    ))
}

/// The swap is done and the old inode unlinked: re-read it (through the handle it was read
/// with). A program that opened it for writing before the swap (`opened`: it was waiting on the
/// lease) or wrote to it since would lose what it wrote: that version is kept aside.
fn after_swap(parent: &Parent, read: &ReadFile, opened: bool) -> Result<(), WriteError> {
    race_hook_with(parent, "released", &platform::reopen_path(&read.file));
    let writers_done = lease::wait_for_writers(&read.file);
    let now = read_at_start(&read.file)?;
    if now == read.bytes && (writers_done || !opened) {
        return Ok(());
    }
    let kept = keep_copy(parent, &now, &read.file, read.meta)?;
    Err(WriteError::WrittenDuringSwap(
        shown(&kept),
        shown(&parent.name),
    ))
}

/// A name in a message, as git quotes paths: never lossily, never a raw control character.
fn shown(name: &std::ffi::OsStr) -> String {
    crate::model::outcome::quoted(&crate::model::outcome::escape(name)).into_owned()
}

/// Write `bytes` to a new `TARGET.edit-kept-by-gpu-homogenize-PID-N` (never over a file) with
/// the original's metadata; its name.
fn keep_copy(
    parent: &Parent,
    bytes: &[u8],
    from: &File,
    before: &std::fs::Metadata,
) -> Result<std::ffi::OsString, WriteError> {
    let temp = temp::create(parent)?;
    let staged = (|| -> io::Result<()> {
        (&temp.file).write_all(bytes)?;
        // Best effort: what matters is that the bytes are kept.
        let _ = meta::copy(from, &temp.file, before);
        temp.file.sync_all()
    })();
    if let Err(e) = staged {
        temp.remove(parent);
        return Err(e.into());
    }
    Ok(keep_aside(parent, &temp.name)?)
}

/// Without an atomic exchange: re-read, then rename over (see the module docs).
fn swap_by_rename(parent: &Parent, temp: temp::TempFile, read: ReadFile) -> Result<(), WriteError> {
    if lease::ReadLease::take(&read.file).is_err() {
        temp.remove(parent);
        return Err(WriteError::HeldOpen);
    }
    if let Err(e) = unchanged(parent, &read) {
        temp.remove(parent);
        return Err(e);
    }
    match platform::rename_at(&parent.dir, &temp.name, &parent.name) {
        Ok(()) => return Ok(()),
        Err(e) if platform::replace_needs_close(&e) => {}
        Err(e) => {
            temp.remove(parent);
            return Err(e.into());
        }
    }
    // The classic rename (Windows on FAT, exFAT and some network shares, and Wine) replaces no
    // name that any handle holds open, the tool's own included: it is closed, the file checked
    // once more by a handle of its own, then the rename made. In between, no handle keeps a
    // writer out (see SECURITY.md).
    let ReadFile {
        file, id, bytes, ..
    } = read;
    drop(file);
    let check =
        platform::open_at(&parent.dir, &parent.name, platform::How::READ).and_then(|mut again| {
            Ok(platform::stat(&again)?.id == id && read_all(&mut again)? == bytes)
        });
    match check {
        Ok(true) => {}
        Ok(false) => {
            temp.remove(parent);
            return Err(WriteError::Changed);
        }
        Err(e) => {
            temp.remove(parent);
            return Err(e.into());
        }
    }
    if let Err(e) = platform::rename_at(&parent.dir, &temp.name, &parent.name) {
        temp.remove(parent);
        return Err(e.into());
    }
    Ok(())
}

/// `Changed` unless the entry is still the file read, with the bytes read.
fn unchanged(parent: &Parent, read: &ReadFile) -> Result<(), WriteError> {
    if same_file(parent, &parent.name, read)? {
        Ok(())
    } else {
        Err(WriteError::Changed)
    }
}

/// Rename the temp file `name` to `TARGET.edit-kept-by-gpu-homogenize-PID-N`, never over an
/// existing file; the new name.
fn keep_aside(parent: &Parent, name: &std::ffi::OsStr) -> io::Result<std::ffi::OsString> {
    for n in 0.. {
        let mut kept = parent.name.clone();
        kept.push(format!(
            ".edit-kept-by-gpu-homogenize-{}-{n}",
            std::process::id()
        ));
        // A link fails rather than replace an existing name; then the temp name goes.
        match platform::link_at(&parent.dir, name, &kept) {
            Ok(()) => {
                let _ = platform::unlink_at(&parent.dir, name);
                return Ok(kept);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    unreachable!()
}

/// Is the entry `name` the file we read (`read.file`, still open): same identity, same bytes?
/// Asked without opening anything on unix: once the swap is done, a failure to open (no
/// descriptor left) must never read as "another version".
fn same_file(parent: &Parent, name: &std::ffi::OsStr, read: &ReadFile) -> io::Result<bool> {
    match platform::stat_at(&parent.dir, name) {
        Ok(stat) if stat.id == read.id => Ok(read_at_start(&read.file)? == read.bytes),
        Ok(_) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

fn same_inode(parent: &Parent, name: &std::ffi::OsStr, want: FileId) -> bool {
    platform::stat_at(&parent.dir, name).is_ok_and(|stat| stat.id == want)
}

/// The whole content of `file` from its start, through the descriptor it has (no new one).
fn read_at_start(file: &File) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = platform::read_at(file, &mut chunk, bytes.len() as u64)?;
        if n == 0 {
            return Ok(bytes);
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
}

/// Tests inject a race here, deterministically: in debug builds, the shell command in
/// `GPU_HOMOGENIZE_TEST_RACE` runs in the file's directory with its name as `$1` and the
/// stage as `$2` (`backup`: a backup staged, not yet linked; `before-swap`; `swapped`;
/// `released`: swapped, the old inode unlinked, `$3` a path that reopens it). On Windows it
/// runs under `cmd /C`, which has no `$1`: the name, the stage, the third argument and the
/// tool's pid are `%GPU_HOMOGENIZE_RACE_FILE%`, `…_STAGE%`, `…_EXTRA%` and `…_PID%` (set on
/// unix too).
fn race_hook(parent: &Parent, stage: &str) {
    race_hook_with(parent, stage, "");
}

/// [`race_hook`] with a third argument (`released`: a path that reopens the old inode).
fn race_hook_with(parent: &Parent, stage: &str, extra: &str) {
    #[cfg(debug_assertions)]
    if let Some(command) = std::env::var_os("GPU_HOMOGENIZE_TEST_RACE") {
        #[cfg(unix)]
        let mut hook = {
            let mut hook = std::process::Command::new("sh");
            hook.arg("-c")
                .arg(command)
                .arg("sh")
                .arg(&parent.name)
                .arg(stage)
                .arg(extra);
            hook
        };
        // cmd has no positional arguments: the same values are in the environment below.
        #[cfg(windows)]
        let mut hook = {
            use std::os::windows::process::CommandExt;
            let mut hook = std::process::Command::new("cmd");
            hook.arg("/C").raw_arg(command);
            hook
        };
        let _ = hook
            .env("GPU_HOMOGENIZE_RACE_FILE", &parent.name)
            .env("GPU_HOMOGENIZE_RACE_STAGE", stage)
            .env("GPU_HOMOGENIZE_RACE_EXTRA", extra)
            .env("GPU_HOMOGENIZE_RACE_PID", std::process::id().to_string())
            .current_dir(platform::dir_path(&parent.dir))
            .status();
    }
    #[cfg(not(debug_assertions))]
    let _ = (parent, stage, extra);
}

fn read_all(file: &mut File) -> io::Result<Vec<u8>> {
    use std::io::Seek;
    file.seek(io::SeekFrom::Start(0))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests;
