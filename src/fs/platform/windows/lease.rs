//! Other writers of the file being swapped (Windows). There are no leases; the share mode does
//! the lease's work, more strictly: the file is opened to be replaced without
//! `FILE_SHARE_WRITE` ([`super::open_to_replace`]), so the open fails while any program holds
//! it open for writing (the write is then refused as "held open"), and no program can open it
//! for writing while the tool holds it, through the swap and the re-read after it. So a lease
//! is never broken, and no writer is ever waited for.

use std::fs::File;

/// The share mode's promise, held for as long as the handle it was taken on is open.
pub struct ReadLease<'a> {
    _file: &'a File,
}

/// Another program holds the file open for writing.
pub struct HeldOpen;

impl<'a> ReadLease<'a> {
    /// `file` must come from [`super::open_to_replace`]: its share mode already refused or
    /// excludes every writer.
    pub fn take(file: &'a File) -> Result<ReadLease<'a>, HeldOpen> {
        Ok(ReadLease { _file: file })
    }

    /// No program can have opened the file for writing: the share mode refuses it.
    pub fn broken(&self) -> bool {
        false
    }

    pub fn release(&mut self) {}
}

/// No program holds `file` open for writing: the share mode it was opened with refuses any.
pub fn wait_for_writers(_: &File) -> bool {
    true
}
