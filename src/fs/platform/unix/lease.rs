//! What the kernel knows about other writers of the file being swapped (Linux): a read lease is
//! refused while any program holds the file open for writing, and a program that opens it for
//! writing while the lease is held waits until it is released, which the holder can see. Where
//! leases cannot be had (another user's file, a file system without them, another OS) every
//! answer is "unknown", and the swap relies on its re-reads alone.

use std::fs::File;
use std::os::fd::AsRawFd;

/// A read lease on the file as it was read, held across the swap. Taking a lease makes this
/// process the file's signal owner, and the kernel sends SIGIO when another program opens the
/// file for writing — whose default action ends the process (an editor's append killed a run
/// mid-write in the edits trial): SIGIO is ignored, and [`ReadLease::broken`] asks instead. A
/// breaking open waits until [`ReadLease::release`].
pub struct ReadLease<'a> {
    file: &'a File,
    held: bool,
}

/// Another program holds the file open for writing.
pub struct HeldOpen;

impl<'a> ReadLease<'a> {
    /// `file` must be open read-only. Without leases, a lease that holds nothing.
    pub fn take(file: &'a File) -> Result<ReadLease<'a>, HeldOpen> {
        static IGNORE_SIGIO: std::sync::Once = std::sync::Once::new();
        // SAFETY: setting a signal's disposition to "ignore" has no handler to run.
        IGNORE_SIGIO.call_once(|| unsafe {
            libc::signal(libc::SIGIO, libc::SIG_IGN);
        });
        match set(file, libc::F_RDLCK) {
            Ok(()) => Ok(ReadLease { file, held: true }),
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Err(HeldOpen),
            Err(_) => Ok(ReadLease { file, held: false }),
        }
    }

    /// Whether a program has started opening the file for writing since the lease was taken.
    pub fn broken(&self) -> bool {
        self.held
            && unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_GETLEASE) } != libc::F_RDLCK
    }

    pub fn release(&mut self) {
        if std::mem::take(&mut self.held) {
            let _ = set(self.file, libc::F_UNLCK);
        }
    }
}

impl Drop for ReadLease<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// Wait (up to about two seconds) until no program holds `file` open for writing; false when
/// one still does, or when the kernel cannot say.
pub fn wait_for_writers(file: &File) -> bool {
    for _ in 0..2000 {
        match set(file, libc::F_RDLCK) {
            Ok(()) => {
                let _ = set(file, libc::F_UNLCK);
                return true;
            }
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                std::thread::sleep(std::time::Duration::from_millis(1))
            }
            Err(_) => return false,
        }
    }
    false
}

#[cfg(target_os = "linux")]
fn set(file: &File, kind: libc::c_int) -> std::io::Result<()> {
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, kind) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn set(_: &File, _: libc::c_int) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}
