//! The operating system's file handles behind one interface, one implementation per family:
//! `unix.rs` (Linux, and the portable POSIX calls macOS has) and `windows.rs`. Everything
//! above (`confine`, `write`, `journal`, the cache, leftovers) names files only as an entry of
//! an open directory handle, never by a path that a link could redirect.
//!
//! What each implementation must keep:
//! - [`open_dir_at`], [`open_at`], [`stat_at`] never follow a link: on unix `O_NOFOLLOW`; on
//!   Windows the entry is opened with `FILE_FLAG_OPEN_REPARSE_POINT` relative to the directory
//!   handle (`NtCreateFile` with a root directory), and any reparse point (a symbolic link, a
//!   junction, any other) is refused as a link;
//! - [`FileId`] names one file for as long as it exists: device and inode on unix, volume
//!   serial number and file index on Windows;
//! - [`exchange_at`] swaps two names atomically, or says `Unsupported` (Windows has no such
//!   call; `write.rs` then checks and renames, see SECURITY.md);
//! - [`lock_exclusive`] blocks until no other process holds the lock (`flock`, `LockFileEx`).

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// How [`open_at`] opens an entry (never through a link).
#[derive(Debug, Clone, Copy, Default)]
pub struct How {
    pub read: bool,
    pub write: bool,
    pub append: bool,
    pub create: bool,
    /// Fail when the entry exists.
    pub exclusive: bool,
    pub truncate: bool,
    /// A FIFO is opened without waiting for a writer (unix; Windows has no FIFO in a tree).
    #[cfg_attr(windows, allow(dead_code))]
    pub nonblock: bool,
    /// The mode of a file it creates, before the umask (unix; Windows: the inherited ACL).
    #[cfg_attr(windows, allow(dead_code))]
    pub mode: u32,
}

impl How {
    /// Read an existing entry.
    pub const READ: How = How {
        read: true,
        write: false,
        append: false,
        create: false,
        exclusive: false,
        truncate: false,
        nonblock: false,
        mode: 0,
    };

    /// A new file, `mode` before the umask; fails when the name exists.
    pub const fn create_new(mode: u32) -> How {
        How {
            read: false,
            write: true,
            create: true,
            exclusive: true,
            mode,
            ..How::READ
        }
    }

    pub const fn nonblocking(self) -> How {
        How {
            nonblock: true,
            ..self
        }
    }
}

/// What an entry is, its link not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    /// A symbolic link; on Windows any reparse point (a junction too).
    Link,
    /// A FIFO, a socket, a device (on Windows, an entry with `FILE_ATTRIBUTE_DEVICE`).
    Other,
}

/// One file for as long as it exists: (device, inode), or (volume serial, file index).
pub type FileId = (u64, u64);

/// What [`stat_at`] and [`stat`] say of a file.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub id: FileId,
    pub kind: Kind,
    pub links: u64,
    /// The last modification (of the link itself, for a link).
    pub modified: std::time::SystemTime,
}
