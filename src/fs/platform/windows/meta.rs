//! A rewritten file keeps what made it the user's on Windows: its attributes (hidden, system,
//! archive, not-indexed; a read-only file is never rewritten) and its alternate data streams
//! (a file with any, such as the `Zone.Identifier` a download gets, is not rewritten: the
//! error names them). Its ACL is the directory's inherited one, as any editor's save gives.

use std::fs::{File, Metadata};
use std::os::windows::io::AsRawHandle;

use windows_sys::Win32::Storage::FileSystem as fs;

use super::Dir;

/// May this user write the file `name` of `dir` itself? Not when it is read-only.
pub fn may_write(_: &Dir, _: &std::ffi::OsStr, meta: &Metadata) -> bool {
    !meta.permissions().readonly()
}

/// The attributes a rewrite keeps.
const KEPT: u32 = fs::FILE_ATTRIBUTE_HIDDEN
    | fs::FILE_ATTRIBUTE_SYSTEM
    | fs::FILE_ATTRIBUTE_ARCHIVE
    | fs::FILE_ATTRIBUTE_NOT_CONTENT_INDEXED;

/// Give `to` the attributes of `from` (described by `meta`); refuse a file whose alternate
/// data streams a rewrite would lose.
pub fn copy(from: &File, to: &File, meta: &Metadata) -> Result<(), String> {
    use std::os::windows::fs::MetadataExt;
    let streams = extra_streams(from).map_err(|e| format!("listing its data streams: {e}"))?;
    if !streams.is_empty() {
        return Err(format!(
            "alternate data streams {} would be lost",
            streams.join(", ")
        ));
    }
    let attributes = meta.file_attributes() & KEPT;
    // Zero times mean "unchanged"; the attributes are set as given (NORMAL when none).
    let basic = fs::FILE_BASIC_INFO {
        CreationTime: 0,
        LastAccessTime: 0,
        LastWriteTime: 0,
        ChangeTime: 0,
        FileAttributes: if attributes == 0 {
            fs::FILE_ATTRIBUTE_NORMAL
        } else {
            attributes
        },
    };
    // SAFETY: a handle opened for writing and a struct of the size passed.
    let done = unsafe {
        fs::SetFileInformationByHandle(
            to.as_raw_handle(),
            fs::FileBasicInfo,
            (&basic as *const fs::FILE_BASIC_INFO).cast(),
            std::mem::size_of_val(&basic) as u32,
        )
    };
    if done == 0 {
        return Err(format!(
            "attributes {attributes:#x}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// The names of `file`'s data streams besides its content (`::$DATA`).
fn extra_streams(file: &File) -> std::io::Result<Vec<String>> {
    let mut buf = vec![0u64; 8192];
    // SAFETY: a buffer of the size passed.
    let done = unsafe {
        fs::GetFileInformationByHandleEx(
            file.as_raw_handle(),
            fs::FileStreamInfo,
            buf.as_mut_ptr().cast(),
            (buf.len() * 8) as u32,
        )
    };
    if done == 0 {
        let e = std::io::Error::last_os_error();
        // A file system without streams (FAT) has none to keep; `ERROR_HANDLE_EOF`: none at all.
        return match e.raw_os_error() {
            Some(38) | Some(50) | Some(1) => Ok(Vec::new()),
            _ => Err(e),
        };
    }
    let mut names = Vec::new();
    let mut at = 0usize;
    loop {
        // SAFETY: entries from the start of the buffer, each at NextEntryOffset of the last.
        let entry = unsafe { &*(buf.as_ptr().cast::<u8>().add(at)).cast::<fs::FILE_STREAM_INFO>() };
        let len = entry.StreamNameLength as usize / 2;
        let name = unsafe { std::slice::from_raw_parts(entry.StreamName.as_ptr(), len) };
        let name = String::from_utf16_lossy(name);
        if !name.is_empty() && name != "::$DATA" {
            names.push(name);
        }
        if entry.NextEntryOffset == 0 {
            return Ok(names);
        }
        at += entry.NextEntryOffset as usize;
    }
}
