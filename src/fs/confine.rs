//! Paths under the tree root, opened without ever following a symbolic link: each component
//! is opened relative to its parent's handle with `O_NOFOLLOW`, so no symlink, `..` or race
//! (a directory swapped for a link between read and write) can make a write land outside.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// A handle on the tree root; everything the tool writes is opened through it.
pub struct RootDir {
    fd: OwnedFd,
    /// The mode of the directories it makes (before the umask).
    made_mode: u32,
}

/// A directory under the root and a name in it: where a file is read, swapped and fsynced.
pub struct Parent {
    pub dir: OwnedFd,
    pub name: OsString,
}

impl RootDir {
    /// The root itself may be reached through links (the user chose it); nothing below it is.
    pub fn open(root: &Path) -> io::Result<RootDir> {
        let fd = open_raw(
            libc::AT_FDCWD,
            root.as_os_str(),
            libc::O_DIRECTORY | libc::O_RDONLY,
            0,
        )?;
        Ok(RootDir {
            fd,
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
    pub fn dir(&self, rel: &Path, create: bool) -> io::Result<OwnedFd> {
        let mut current = dup(&self.fd)?;
        for name in components(rel)? {
            current = match open_dir_at(&current, name) {
                Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                    let c = cstring(name)?;
                    let mode = self.made_mode as libc::mode_t;
                    if unsafe { libc::mkdirat(current.as_raw_fd(), c.as_ptr(), mode) } != 0 {
                        let e = io::Error::last_os_error();
                        if e.kind() != io::ErrorKind::AlreadyExists {
                            return Err(e);
                        }
                    }
                    open_dir_at(&current, name)?
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
            fd: dup(&self.fd)?,
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
        let dir = self.dir(rel, false)?;
        let listing = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
        listing.map(|e| e.map(|e| e.file_name())).collect()
    }

    /// Open the regular file `rel` for reading, as [`Parent::open_regular`] does: in one
    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has it (Linux 5.6),
    /// rather than one `openat` per directory. Any failure (no `openat2`, a link, a missing
    /// file) takes the component walk, whose errors name the cause.
    pub fn open_regular(&self, rel: &Path) -> io::Result<File> {
        if let Some(fd) = self.open_beneath(rel) {
            return regular(File::from(fd));
        }
        self.parent(rel, false)?.open_regular()
    }

    #[cfg(target_os = "linux")]
    fn open_beneath(&self, rel: &Path) -> Option<OwnedFd> {
        components(rel).ok()?;
        let c = cstring(rel.as_os_str()).ok()?;
        // SAFETY: `open_how` is plain integers; all zero is its "nothing asked" value.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64;
        how.resolve =
            libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
        // SAFETY: a valid directory fd, a NUL-terminated path and an `open_how` of the size
        // passed; the fd returned is owned by nobody else.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }

    #[cfg(not(target_os = "linux"))]
    fn open_beneath(&self, _rel: &Path) -> Option<OwnedFd> {
        None
    }
}

impl Parent {
    /// Open the file for reading: never a link, never blocking (a FIFO), regular files only.
    pub fn open_regular(&self) -> io::Result<File> {
        let fd = open_raw(
            self.dir.as_raw_fd(),
            &self.name,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0,
        )
        .map_err(symlink_error)?;
        regular(File::from(fd))
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

fn open_dir_at(dir: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
    open_raw(
        dir.as_raw_fd(),
        name,
        libc::O_DIRECTORY | libc::O_RDONLY | libc::O_NOFOLLOW,
        0,
    )
    .map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => io::Error::new(
            e.kind(),
            format!(
                "{} is a symbolic link or not a directory (never followed)",
                Path::new(name).display()
            ),
        ),
        _ => e,
    })
}

pub fn open_raw(dir: i32, name: &OsStr, flags: i32, mode: libc::c_uint) -> io::Result<OwnedFd> {
    let c = cstring(name)?;
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn dup(fd: &OwnedFd) -> io::Result<OwnedFd> {
    fd.try_clone()
}

pub fn cstring(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| invalid("a name with a NUL byte"))
}

pub fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message.to_string())
}

fn symlink_error(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        invalid("is a symbolic link (never followed)")
    } else {
        e
    }
}

/// What a non-regular file is, in words.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn reads_in_one_open_refuse_what_the_walk_refuses() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.py"), "secret").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("pkg")).unwrap();
        std::fs::write(root.path().join("pkg/a.py"), "import torch\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("x.py"), root.path().join("f.py")).unwrap();
        let fifo = cstring(root.path().join("pkg/p.py").as_os_str()).unwrap();
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

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let root = tempfile::tempdir().unwrap();
        let fifo = root.path().join("p.py");
        let c = cstring(fifo.as_os_str()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let r = RootDir::open(root.path()).unwrap();
        let err = r.parent(Path::new("p.py"), false).unwrap().open_regular();
        assert!(err.unwrap_err().to_string().contains("FIFO"));
    }
}
