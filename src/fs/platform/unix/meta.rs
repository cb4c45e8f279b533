//! A rewritten file keeps what made it the user's: owner, group, mode and xattrs (and gets no
//! ACL the original did not have). When the owner or group cannot be kept (another user's
//! file), the file is not rewritten: the error says why.

use std::fs::{File, Metadata};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

use super::{cstring, Dir};

/// May this user write the file `name` of `dir` itself (not only its directory)? Mode bits with
/// no write permission for anyone also count as read-only, even for root.
pub fn may_write(dir: &Dir, name: &std::ffi::OsStr, meta: &Metadata) -> bool {
    if meta.mode() & 0o222 == 0 {
        return false;
    }
    let Ok(name) = cstring(name) else {
        return false;
    };
    let flags = libc::AT_EACCESS | libc::AT_SYMLINK_NOFOLLOW;
    unsafe { libc::faccessat(dir.as_raw_fd(), name.as_ptr(), libc::W_OK, flags) == 0 }
}

/// Give `to` the owner, group, mode and xattrs of `from` (described by `meta`).
pub fn copy(from: &File, to: &File, meta: &Metadata) -> Result<(), String> {
    let fd = to.as_raw_fd();
    let owner_kept = unsafe { libc::fchown(fd, meta.uid(), meta.gid()) } == 0;
    let group_kept = owner_kept || unsafe { libc::fchown(fd, u32::MAX, meta.gid()) } == 0;
    // A rewrite that would change who owns the file (and, with it, drop setuid/setgid) is not
    // made: the file stays as it is, and the error names what could not be kept.
    if !owner_kept {
        return Err(format!(
            "its owner (uid {}) could not be kept: a rewrite by this user would own it{}; run as its owner",
            meta.uid(),
            if meta.mode() & (libc::S_ISUID | libc::S_ISGID) != 0 {
                " and lose its setuid/setgid bit"
            } else {
                ""
            }
        ));
    }
    let mode = meta.mode() & 0o7777;
    if !group_kept {
        return Err(format!("its group (gid {}) could not be kept", meta.gid()));
    }
    // After fchown, which clears setuid/setgid.
    if unsafe { libc::fchmod(fd, mode) } != 0 {
        return Err(format!("mode {mode:o}: {}", io::Error::last_os_error()));
    }
    copy_xattrs(from, to)
}

#[cfg(target_os = "linux")]
fn copy_xattrs(from: &File, to: &File) -> Result<(), String> {
    let names = list_xattrs(from).map_err(|e| format!("listing xattrs: {e}"))?;
    // What the new file got from its directory (a default ACL) and the original did not have
    // goes: a rewrite adds no permission.
    let theirs: Vec<&[u8]> = names.split(|&b| b == 0).filter(|n| !n.is_empty()).collect();
    let inherited = list_xattrs(to).map_err(|e| format!("listing xattrs: {e}"))?;
    for name in inherited.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        if theirs.contains(&name) {
            continue;
        }
        if let Ok(cname) = std::ffi::CString::new(name) {
            if unsafe { libc::fremovexattr(to.as_raw_fd(), cname.as_ptr()) } != 0 {
                let e = io::Error::last_os_error();
                return Err(format!(
                    "xattr {} inherited from the directory: {e}",
                    String::from_utf8_lossy(name)
                ));
            }
        }
    }
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let shown = String::from_utf8_lossy(name).into_owned();
        let Ok(cname) = std::ffi::CString::new(name) else {
            continue;
        };
        let value = get_xattr(from, &cname).map_err(|e| format!("xattr {shown}: {e}"))?;
        let set = unsafe {
            libc::fsetxattr(
                to.as_raw_fd(),
                cname.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        if set != 0 {
            let e = io::Error::last_os_error();
            return Err(format!("xattr {shown}: {e}"));
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn copy_xattrs(_: &File, _: &File) -> Result<(), String> {
    Ok(())
}

#[cfg(target_os = "linux")]
fn list_xattrs(file: &File) -> io::Result<Vec<u8>> {
    read_sized(|buf: &mut [u8]| unsafe {
        libc::flistxattr(file.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len())
    })
}

#[cfg(target_os = "linux")]
fn get_xattr(file: &File, name: &std::ffi::CStr) -> io::Result<Vec<u8>> {
    read_sized(|buf: &mut [u8]| unsafe {
        libc::fgetxattr(
            file.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    })
}

/// The size-then-read dance of the xattr calls, retried when the value grows meanwhile.
#[cfg(target_os = "linux")]
fn read_sized(mut call: impl FnMut(&mut [u8]) -> isize) -> io::Result<Vec<u8>> {
    for _ in 0..8 {
        let size = call(&mut []);
        if size < 0 {
            let e = io::Error::last_os_error();
            // A file system without xattrs has none to keep.
            if e.raw_os_error() == Some(libc::ENOTSUP) {
                return Ok(Vec::new());
            }
            return Err(e);
        }
        let mut buf = vec![0u8; size as usize];
        let got = call(&mut buf);
        if got >= 0 {
            buf.truncate(got as usize);
            return Ok(buf);
        }
        if io::Error::last_os_error().raw_os_error() != Some(libc::ERANGE) {
            return Err(io::Error::last_os_error());
        }
    }
    Err(io::Error::other("xattrs kept changing"))
}
