//! The tool's outputs (`baseline`, `report --out`, `init --force`), written as a rewrite is.

use std::path::Path;

use crate::fs::tree_file::TreeFileError;

/// Write an output file (`baseline`, `report --out`, `scan --out`) as a rewrite is written:
/// a temp file made next to it (never through a link), then renamed over it, so that a link
/// planted where the output goes is never followed. A path inside the tree at `root` is
/// opened component by component below it (no link anywhere on the way); a path outside the
/// tree is the user's choice, but its last component is still never a link, a FIFO or a
/// device.
pub fn write_output(root: &Path, path: &Path, bytes: &[u8]) -> Result<(), TreeFileError> {
    let fail = |e: std::io::Error| TreeFileError {
        path: path.to_path_buf(),
        why: e.to_string(),
    };
    let abs = crate::base::paths::absolute(path);
    let (parent, rel) = match abs.strip_prefix(crate::base::paths::absolute(root)) {
        Ok(rel) => (
            crate::fs::confine::RootDir::open(root)
                .and_then(|r| r.parent(rel, false))
                .map_err(fail)?,
            Some(rel.to_path_buf()),
        ),
        Err(_) => {
            let dir = abs.parent().unwrap_or(Path::new("/"));
            let name = abs.file_name().ok_or_else(|| {
                fail(crate::fs::confine::invalid("names a directory, not a file"))
            })?;
            let fd = crate::fs::platform::open_root(dir).map_err(fail)?;
            (
                crate::fs::confine::Parent {
                    dir: fd,
                    name: name.to_os_string(),
                },
                None,
            )
        }
    };
    refuse_non_regular(&parent).map_err(fail)?;
    let temp = match &rel {
        Some(rel) => super::temp::create_recorded(root, rel, &parent),
        None => super::temp::create(&parent),
    }
    .map_err(fail)?;
    let written = (|| {
        use std::io::Write;
        let mut file = &temp.file;
        file.write_all(bytes)?;
        // The output gets the mode a plain `create` would have given it (the umask's).
        crate::fs::platform::plain_permissions(file)?;
        file.sync_all()?;
        crate::fs::platform::rename_at(&parent.dir, &temp.name, &parent.name)
    })();
    if written.is_err() {
        temp.remove(&parent);
    }
    // The caller forgets the record once its outputs are written (`leftovers::forget_own`).
    written.map_err(fail)
}

/// An existing output that is a link, a FIFO or a device is not replaced: it was put there on
/// purpose, by the user or by someone else, and either way the tool does not decide.
fn refuse_non_regular(parent: &crate::fs::confine::Parent) -> std::io::Result<()> {
    use crate::fs::platform::Kind;
    match crate::fs::platform::stat_at(&parent.dir, &parent.name) {
        Ok(stat) if stat.kind == Kind::File => Ok(()),
        Ok(stat) if stat.kind == Kind::Link => Err(crate::fs::confine::invalid(
            "a symbolic link; an output is never written through one (remove it)",
        )),
        Ok(_) => Err(crate::fs::confine::invalid(
            "not a regular file; an output never replaces one",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}
