//! Unix: every entry opened relative to a directory descriptor with `O_NOFOLLOW` (`*at` calls);
//! on Linux reads in one `openat2(RESOLVE_BENEATH)`, swaps with `renameat2(RENAME_EXCHANGE)`.

pub mod lease;
pub mod meta;

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{How, Kind, Stat};

/// An open directory.
pub type Dir = OwnedFd;

/// The directory at `path` (links on the way followed: the user chose it).
pub fn open_root(path: &Path) -> io::Result<Dir> {
    open_raw(
        libc::AT_FDCWD,
        path.as_os_str(),
        libc::O_DIRECTORY | libc::O_RDONLY,
        0,
    )
}

/// The directory `name` of `dir`; a link or a non-directory is refused, never followed.
pub fn open_dir_at(dir: &Dir, name: &OsStr) -> io::Result<Dir> {
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

/// Make the directory `name` in `dir` (`mode` before the umask).
pub fn make_dir_at(dir: &Dir, name: &OsStr, mode: u32) -> io::Result<()> {
    let c = cstring(name)?;
    if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), mode as libc::mode_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Open the entry `name` of `dir` as `how` says, never through a link.
pub fn open_at(dir: &Dir, name: &OsStr, how: How) -> io::Result<File> {
    let mut flags = libc::O_NOFOLLOW;
    flags |= match (how.read, how.write) {
        (true, true) => libc::O_RDWR,
        (false, true) => libc::O_WRONLY,
        _ => libc::O_RDONLY,
    };
    for (set, flag) in [
        (how.append, libc::O_APPEND),
        (how.create, libc::O_CREAT),
        (how.exclusive, libc::O_EXCL),
        (how.truncate, libc::O_TRUNC),
        (how.nonblock, libc::O_NONBLOCK),
    ] {
        if set {
            flags |= flag;
        }
    }
    open_raw(dir.as_raw_fd(), name, flags, how.mode).map(File::from)
}

/// Open the file `name` of `dir` to be replaced: as [`open_at`] reads it (unix has no share
/// modes; the lease of [`lease`] watches writers instead).
pub fn open_to_replace(dir: &Dir, name: &OsStr) -> io::Result<File> {
    open_at(dir, name, How::READ.nonblocking())
}

/// Did an open fail because another program holds the file open for writing? (Never on unix:
/// nothing refuses an open for that.)
pub fn is_held_open(_: &io::Error) -> bool {
    false
}

/// Did an open fail because the entry is a link?
pub fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// The regular file `rel` below `dir` for reading in one call, where the kernel can refuse
/// every link and `..` on the way (Linux 5.6: `openat2`); `None` where it cannot say.
#[cfg(target_os = "linux")]
pub fn open_beneath(dir: &Dir, rel: &Path) -> Option<File> {
    let c = cstring(rel.as_os_str()).ok()?;
    // SAFETY: `open_how` is plain integers; all zero is its "nothing asked" value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: a valid directory fd, a NUL-terminated path and an `open_how` of the size
    // passed; the fd returned is owned by nobody else.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    (fd >= 0).then(|| File::from(unsafe { OwnedFd::from_raw_fd(fd as i32) }))
}

#[cfg(not(target_os = "linux"))]
pub fn open_beneath(_: &Dir, _: &Path) -> Option<File> {
    None
}

pub fn unlink_at(dir: &Dir, name: &OsStr) -> io::Result<()> {
    let c = cstring(name)?;
    if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Remove the directory `name` of `dir` if it is empty.
pub fn remove_dir_at(dir: &Dir, name: &OsStr) -> io::Result<()> {
    let c = cstring(name)?;
    if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Rename `from` to `to` in `dir`, replacing `to`.
pub fn rename_at(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let (from, to) = (cstring(from)?, cstring(to)?);
    let d = dir.as_raw_fd();
    if unsafe { libc::renameat(d, from.as_ptr(), d, to.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A second name `to` for the file `from` of `dir`; fails (`AlreadyExists`) rather than
/// replace an existing name.
pub fn link_at(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let (from, to) = (cstring(from)?, cstring(to)?);
    let d = dir.as_raw_fd();
    if unsafe { libc::linkat(d, from.as_ptr(), d, to.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Swap the entries `a` and `b` of `dir` in one step.
#[cfg(target_os = "linux")]
pub fn exchange_at(dir: &Dir, a: &OsStr, b: &OsStr) -> io::Result<()> {
    let (a, b) = (cstring(a)?, cstring(b)?);
    let d = dir.as_raw_fd();
    let done = unsafe { libc::renameat2(d, a.as_ptr(), d, b.as_ptr(), libc::RENAME_EXCHANGE) };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn exchange_at(_: &Dir, _: &OsStr, _: &OsStr) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// The exchange is not available here (another OS, some network file systems).
/// A rename over a name fails only because a handle holds that name open: never on unix.
pub fn replace_needs_close(_: &io::Error) -> bool {
    false
}

pub fn unsupported(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported
        || matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS))
}

/// What the entry `name` of `dir` is (a link not followed), through `fstatat`: no descriptor
/// is opened.
pub fn stat_at(dir: &Dir, name: &OsStr) -> io::Result<Stat> {
    let c = cstring(name)?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `fstatat` fills the struct it is given when it returns 0.
    let done = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: initialised by the successful call above.
    let st = unsafe { st.assume_init() };
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Kind::File,
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFLNK => Kind::Link,
        _ => Kind::Other,
    };
    let modified = if st.st_mtime >= 0 {
        std::time::UNIX_EPOCH
            + std::time::Duration::new(st.st_mtime as u64, st.st_mtime_nsec as u32)
    } else {
        std::time::UNIX_EPOCH - std::time::Duration::new(st.st_mtime.unsigned_abs(), 0)
            + std::time::Duration::new(0, st.st_mtime_nsec as u32)
    };
    // Their width differs between targets.
    #[allow(clippy::unnecessary_cast)]
    Ok(Stat {
        id: (st.st_dev as u64, st.st_ino as u64),
        kind,
        links: st.st_nlink as u64,
        modified,
    })
}

/// What the open `file` is.
pub fn stat(file: &File) -> io::Result<Stat> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    Ok(Stat {
        id: (meta.dev(), meta.ino()),
        kind: if meta.is_file() {
            Kind::File
        } else if meta.is_dir() {
            Kind::Dir
        } else {
            Kind::Other
        },
        links: meta.nlink(),
        modified: meta.modified()?,
    })
}

/// Read at `offset` through the descriptor `file` has (no new one, its position untouched).
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    file.read_at(buf, offset)
}

pub fn sync_dir(dir: &Dir) -> io::Result<()> {
    if unsafe { libc::fsync(dir.as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The names in `dir`, listed through the handle (a directory swapped for a link meanwhile is
/// not the one read).
#[cfg(target_os = "linux")]
pub fn list(dir: &Dir) -> io::Result<Vec<OsString>> {
    let listing = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
    listing.map(|e| e.map(|e| e.file_name())).collect()
}

#[cfg(not(target_os = "linux"))]
pub fn list(dir: &Dir) -> io::Result<Vec<OsString>> {
    let fd = dir.try_clone()?;
    // SAFETY: `fdopendir` takes the descriptor over (closed by `closedir`).
    let stream = unsafe { libc::fdopendir(std::os::fd::IntoRawFd::into_raw_fd(fd)) };
    if stream.is_null() {
        return Err(io::Error::last_os_error());
    }
    unsafe { libc::rewinddir(stream) };
    let mut names = Vec::new();
    loop {
        // SAFETY: a stream from `fdopendir`; the entry is read before the next call.
        let entry = unsafe { libc::readdir(stream) };
        if entry.is_null() {
            break;
        }
        let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            names.push(OsStr::from_bytes(name.to_bytes()).to_os_string());
        }
    }
    unsafe { libc::closedir(stream) };
    Ok(names)
}

/// Block until this process holds the exclusive lock of `file` (held until it is closed).
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Whether the process `pid` is gone.
pub fn process_gone(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    pid > 0
        && unsafe { libc::kill(pid, 0) } != 0
        && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// A path that reopens the file `file` has open (the tests' race hook hands it to a script).
pub fn reopen_path(file: &File) -> String {
    format!("/proc/{}/fd/{}", std::process::id(), file.as_raw_fd())
}

/// A path naming the directory `dir` (for a test's script to start in).
#[cfg(debug_assertions)]
pub fn dir_path(dir: &Dir) -> String {
    format!("/proc/self/fd/{}", dir.as_raw_fd())
}

/// Give a new output the permissions a plain create would have given it (the umask's).
pub fn plain_permissions(file: &File) -> io::Result<()> {
    let umask = unsafe { libc::umask(0o022) };
    unsafe { libc::umask(umask) };
    let mode = 0o666 & !umask;
    if unsafe { libc::fchmod(file.as_raw_fd(), mode) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Make the directory `path` and its missing parents, owner-only (a backup dir outside the tree).
pub fn make_private_dirs(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

pub fn open_raw(dir: i32, name: &OsStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let c = cstring(name)?;
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn cstring(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name with a NUL byte"))
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

/// A file the user named (links followed: their choice), opened for reading without blocking.
pub fn open_named(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// The file at `path` for reading, its last component never a link, without blocking.
pub fn open_nofollow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// What the content cache keys a file's metadata by besides its size: the modification time
/// in nanoseconds and the inode.
pub fn cache_key(meta: &std::fs::Metadata) -> (i64, u64) {
    use std::os::unix::fs::MetadataExt;
    (
        meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
        meta.ino(),
    )
}

/// The tool's own binary as the cache names it: size, modification time, inode, device.
pub fn build_identity(exe: &Path) -> io::Result<(u64, i64, i64, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(exe)?;
    Ok((m.len(), m.mtime(), m.mtime_nsec(), m.ino(), m.dev()))
}

/// Does this error code say the process or the system has no file descriptor left?
pub fn out_of_files(code: i32) -> bool {
    code == libc::EMFILE || code == libc::ENFILE
}

/// Does this error code say memory ran out?
pub fn out_of_memory(code: i32) -> bool {
    code == libc::ENOMEM
}

/// The soft limit on open files of this process.
pub fn open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` writes the struct it is given.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0
        && limit.rlim_cur != libc::RLIM_INFINITY)
        .then_some(limit.rlim_cur)
}
