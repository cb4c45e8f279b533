//! Paths under the tree root, opened without ever following a symbolic link: each component
//! is opened relative to its parent's handle with `O_NOFOLLOW`, so no symlink, `..` or race
//! (a directory swapped for a link between read and write) can make a write land outside.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::fs::platform::{self, Dir};

pub use crate::fs::platform::kind_of;

/// A handle on the tree root; everything the tool writes is opened through it.
pub struct RootDir {
    fd: Dir,
    /// The mode of the directories it makes (before the umask).
    made_mode: u32,
}

/// A directory under the root and a name in it: where a file is read, swapped and fsynced.
pub struct Parent {
    pub dir: Dir,
    pub name: OsString,
}

impl RootDir {
    /// The root itself may be reached through links (the user chose it); nothing below it is.
    pub fn open(root: &Path) -> io::Result<RootDir> {
        Ok(RootDir {
            fd: platform::open_root(root)?,
            made_mode: 0o777,
        })
    }

    /// The same directory, making only owner-only directories below it: a backup in them is
    /// no more reachable than its original, whatever directories kept the original private.
    pub fn private(self) -> RootDir {
        RootDir {
            made_mode: 0o700,
            ..self
        }
    }

    /// The directory `rel` below the root, every component a real directory; missing ones
    /// are created when `create` is set.
    pub fn dir(&self, rel: &Path, create: bool) -> io::Result<Dir> {
        let mut current = self.fd.try_clone()?;
        for name in components(rel)? {
            current = match platform::open_dir_at(&current, name) {
                Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                    if let Err(e) = platform::make_dir_at(&current, name, self.made_mode) {
                        if e.kind() != io::ErrorKind::AlreadyExists {
                            return Err(e);
                        }
                    }
                    platform::open_dir_at(&current, name)?
                }
                other => other?,
            };
        }
        Ok(current)
    }

    /// The directory `rel` below the root as a root of its own (made when missing, owner-only,
    /// no link followed) that makes owner-only directories: where backups are kept when the
    /// backup dir is in the tree.
    pub fn below(&self, rel: &Path) -> io::Result<RootDir> {
        let private = RootDir {
            fd: self.fd.try_clone()?,
            made_mode: 0o700,
        };
        Ok(RootDir {
            fd: private.dir(rel, true)?,
            made_mode: 0o700,
        })
    }

    /// The parent directory of the file `rel` and its name.
    pub fn parent(&self, rel: &Path, create: bool) -> io::Result<Parent> {
        let mut parts = components(rel)?;
        let name = parts
            .pop()
            .ok_or_else(|| invalid("the root itself is not a file"))?
            .to_os_string();
        let dir_rel: PathBuf = parts.iter().collect();
        Ok(Parent {
            dir: self.dir(&dir_rel, create)?,
            name,
        })
    }
}

impl RootDir {
    /// The names in the directory `rel` below the root (no link followed on the way; the
    /// entries themselves may be links), listed through the opened handle.
    pub fn list(&self, rel: &Path) -> io::Result<Vec<OsString>> {
        platform::list(&self.dir(rel, false)?)
    }

    /// Open the regular file `rel` for reading, as [`Parent::open_regular`] does: in one
    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has it (Linux 5.6),
    /// rather than one `openat` per directory. Any failure (no `openat2`, a link, a missing
    /// file) takes the component walk, whose errors name the cause.
    pub fn open_regular(&self, rel: &Path) -> io::Result<File> {
        if components(rel).is_ok() {
            if let Some(file) = platform::open_beneath(&self.fd, rel) {
                return regular(file);
            }
        }
        self.parent(rel, false)?.open_regular()
    }
}

impl Parent {
    /// Open the file for reading: never a link, never blocking (a FIFO), regular files only.
    pub fn open_regular(&self) -> io::Result<File> {
        let file = platform::open_at(&self.dir, &self.name, platform::How::READ.nonblocking())
            .map_err(symlink_error)?;
        regular(file)
    }

    /// Open the file to replace it: as [`Parent::open_regular`], and on Windows no other
    /// program may open it for writing while it is held (see `fs::write`).
    pub fn open_to_replace(&self) -> io::Result<File> {
        let file = platform::open_to_replace(&self.dir, &self.name).map_err(symlink_error)?;
        regular(file)
    }
}

/// The file, if it is a regular one (a FIFO or a device opened without blocking is refused).
fn regular(file: File) -> io::Result<File> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(invalid(&format!("not a regular file ({})", kind_of(&meta))));
    }
    Ok(file)
}

/// `rel` as names under the root: no absolute part, no `..`.
fn components(rel: &Path) -> io::Result<Vec<&OsStr>> {
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            _ => {
                return Err(invalid(&format!(
                    "{} is not below the tree root",
                    rel.display()
                )))
            }
        }
    }
    Ok(out)
}

pub fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message.to_string())
}

fn symlink_error(e: io::Error) -> io::Error {
    if platform::is_link_error(&e) {
        invalid("is a symbolic link (never followed)")
    } else {
        e
    }
}

// Every case here makes links or FIFOs through unix calls; the Windows ones are in
// `fs::platform::windows`'s tests.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    // Unix only: links, FIFOs, modes or signals made through unix calls.
    #[cfg(unix)]
    #[test]
    fn never_follows_a_link_below_the_root() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.py"), "secret").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        let r = RootDir::open(root.path()).unwrap();
        assert!(r.parent(Path::new("link/x.py"), false).is_err());
        assert!(r.parent(Path::new("link/../x.py"), false).is_err());
        assert!(r.parent(Path::new("/etc/passwd"), false).is_err());
        std::os::unix::fs::symlink(outside.path().join("x.py"), root.path().join("f.py")).unwrap();
        let p = r.parent(Path::new("f.py"), false).unwrap();
        assert!(p.open_regular().is_err());
    }

    // Unix only: links, FIFOs, modes or signals made through unix calls.
    #[cfg(unix)]
    #[test]
    fn reads_in_one_open_refuse_what_the_walk_refuses() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.py"), "secret").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("pkg")).unwrap();
        std::fs::write(root.path().join("pkg/a.py"), "import torch\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("x.py"), root.path().join("f.py")).unwrap();
        let fifo = crate::fs::platform::cstring(root.path().join("pkg/p.py").as_os_str()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let r = RootDir::open(root.path()).unwrap();
        let read = |rel: &str| {
            r.open_regular(Path::new(rel)).map(|mut f| {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut f, &mut text).unwrap();
                text
            })
        };
        assert_eq!(read("pkg/a.py").unwrap(), "import torch\n");
        assert_eq!(read("./pkg/a.py").unwrap(), "import torch\n");
        for (rel, why) in [
            ("link/x.py", "symbolic link"),
            ("f.py", "symbolic link"),
            ("pkg/../../x.py", "not below the tree root"),
            ("/etc/passwd", "not below the tree root"),
            ("pkg/p.py", "FIFO"),
        ] {
            let err = read(rel).expect_err(rel).to_string();
            assert!(err.contains(why), "{rel}: {err}");
        }
    }

    // Unix only: links, FIFOs, modes or signals made through unix calls.
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let root = tempfile::tempdir().unwrap();
        let fifo = root.path().join("p.py");
        let c = crate::fs::platform::cstring(fifo.as_os_str()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let r = RootDir::open(root.path()).unwrap();
        let err = r.parent(Path::new("p.py"), false).unwrap().open_regular();
        assert!(err.unwrap_err().to_string().contains("FIFO"));
    }
}
