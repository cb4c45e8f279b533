//! Atomic writes: a temp file in the same directory, then a rename, permissions kept.
//! A file that changed since it was read, or that is read-only, is never overwritten.

use std::io::Write;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("changed on disk since it was read; not overwritten (run again)")]
    Changed,
    #[error("read-only file; not rewritten (make it writable, or leave it out)")]
    ReadOnly,
    #[error("is a symbolic link; not rewritten")]
    Symlink,
    #[error("cannot back up to {path}: {source}")]
    Backup {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write: {0}")]
    Io(#[from] std::io::Error),
}

/// Replace `path` (whose content was `original` when read) with `new`, keeping a copy of the
/// original under `backup` when given.
pub fn write_atomic(
    path: &Path,
    original: &[u8],
    new: &str,
    backup: Option<&Path>,
) -> Result<(), WriteError> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return Err(WriteError::Symlink);
    }
    if meta.permissions().readonly() {
        return Err(WriteError::ReadOnly);
    }
    if std::fs::read(path)? != original {
        return Err(WriteError::Changed);
    }
    if let Some(backup) = backup {
        let copy = || -> std::io::Result<()> {
            if let Some(parent) = backup.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(backup, original)
        };
        copy().map_err(|source| WriteError::Backup {
            path: backup.display().to_string(),
            source,
        })?;
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new()
        .prefix(".gpu-homogenize-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    temp.write_all(new.as_bytes())?;
    temp.as_file().set_permissions(meta.permissions())?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| WriteError::Io(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn keeps_permissions_and_refuses_changed_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.py");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
        write_atomic(&path, b"old", "new", None).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750);
        assert!(matches!(
            write_atomic(&path, b"old", "x", None),
            Err(WriteError::Changed)
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    }

    #[test]
    fn refuses_read_only_files_and_backs_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.py");
        std::fs::write(&path, "old").unwrap();
        let backup = dir.path().join("bak/sub/a.py");
        write_atomic(&path, b"old", "new", Some(&backup)).unwrap();
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), "old");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        assert!(matches!(
            write_atomic(&path, b"new", "x", None),
            Err(WriteError::ReadOnly)
        ));
    }
}
