//! Windows: every entry opened relative to a directory handle (`NtCreateFile` with a root
//! directory and `FILE_OPEN_REPARSE_POINT`), renamed and linked by handle
//! (`NtSetInformationFile`), identified by volume serial number and file index.
//!
//! A reparse point is never followed and always refused as a link: symbolic links, junctions
//! (mount points) and every other tag alike. Directory handles are opened without
//! `FILE_SHARE_DELETE`, so no directory on the way can be renamed or replaced while the tool
//! holds it (the race `O_NOFOLLOW` per component guards against on unix).

pub mod lease;
pub mod meta;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::Path;

use windows_sys::Wdk::Foundation::OBJECT_ATTRIBUTES;
use windows_sys::Wdk::Storage::FileSystem as nt;
use windows_sys::Win32::Foundation as win;
use windows_sys::Win32::Storage::FileSystem as fs;
use windows_sys::Win32::System::IO::IO_STATUS_BLOCK;

use super::{How, Kind, Stat};

/// An open directory.
pub type Dir = OwnedHandle;

const SHARE_ALL: u32 = fs::FILE_SHARE_READ | fs::FILE_SHARE_WRITE | fs::FILE_SHARE_DELETE;
/// Directories on the way: readable and writable by others, never renamed or removed meanwhile.
const SHARE_DIR: u32 = fs::FILE_SHARE_READ | fs::FILE_SHARE_WRITE;
const DIR_ACCESS: u32 =
    fs::FILE_LIST_DIRECTORY | fs::FILE_TRAVERSE | fs::FILE_READ_ATTRIBUTES | fs::SYNCHRONIZE;
const FILE_RENAME_FLAG_REPLACE_IF_EXISTS: u32 = 1;
const FILE_RENAME_FLAG_POSIX_SEMANTICS: u32 = 2;

/// The directory at `path` (links on the way followed: the user chose it).
pub fn open_root(path: &Path) -> io::Result<Dir> {
    use std::os::windows::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .access_mode(DIR_ACCESS)
        .share_mode(SHARE_DIR)
        .custom_flags(fs::FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    if !file.metadata()?.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a directory", path.display()),
        ));
    }
    Ok(OwnedHandle::from(file))
}

/// `NtCreateFile` of the single name `name` relative to `dir`, opening a reparse point itself
/// (`FILE_OPEN_REPARSE_POINT`), never its target.
fn nt_create(
    dir: &Dir,
    name: &OsStr,
    access: u32,
    share: u32,
    disposition: u32,
    options: u32,
) -> io::Result<OwnedHandle> {
    let wide: Vec<u16> = name.encode_wide().collect();
    if wide.is_empty()
        || wide
            .iter()
            .any(|&c| c == b'\\' as u16 || c == b'/' as u16 || c == 0)
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a single name in its directory",
        ));
    }
    let bytes = u16::try_from(wide.len() * 2)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name too long"))?;
    let unicode = win::UNICODE_STRING {
        Length: bytes,
        MaximumLength: bytes,
        Buffer: wide.as_ptr() as *mut u16,
    };
    let attributes = OBJECT_ATTRIBUTES {
        Length: std::mem::size_of::<OBJECT_ATTRIBUTES>() as u32,
        RootDirectory: dir.as_raw_handle(),
        ObjectName: &unicode,
        Attributes: win::OBJ_CASE_INSENSITIVE,
        SecurityDescriptor: std::ptr::null(),
        SecurityQualityOfService: std::ptr::null(),
    };
    let mut handle: win::HANDLE = std::ptr::null_mut();
    // SAFETY: all zero is IO_STATUS_BLOCK's "nothing yet".
    let mut status_block: IO_STATUS_BLOCK = unsafe { std::mem::zeroed() };
    // SAFETY: every pointer is valid for the call; the handle returned is ours alone.
    let status = unsafe {
        nt::NtCreateFile(
            &mut handle,
            access | fs::SYNCHRONIZE | fs::FILE_READ_ATTRIBUTES,
            &attributes,
            &mut status_block,
            std::ptr::null(),
            fs::FILE_ATTRIBUTE_NORMAL,
            share,
            disposition,
            options | nt::FILE_OPEN_REPARSE_POINT | nt::FILE_SYNCHRONOUS_IO_NONALERT,
            std::ptr::null(),
            0,
        )
    };
    if status < 0 {
        return Err(nt_error(status));
    }
    // SAFETY: a handle NtCreateFile just opened.
    Ok(unsafe { OwnedHandle::from_raw_handle(handle) })
}

/// `NtCreateFile` of `name` relative to `dir`, never following a reparse point: one is refused
/// as a link.
fn nt_open(
    dir: &Dir,
    name: &OsStr,
    access: u32,
    share: u32,
    disposition: u32,
    options: u32,
) -> io::Result<OwnedHandle> {
    let handle = nt_create(dir, name, access, share, disposition, options)?;
    if attributes_of(&handle)? & fs::FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(link_error());
    }
    Ok(handle)
}

fn nt_error(status: i32) -> io::Error {
    // SAFETY: a pure translation of a status code.
    io::Error::from_raw_os_error(unsafe { win::RtlNtStatusToDosError(status) } as i32)
}

fn link_error() -> io::Error {
    io::Error::from_raw_os_error(win::ERROR_STOPPED_ON_SYMLINK as i32)
}

fn info(handle: &impl AsRawHandle) -> io::Result<fs::BY_HANDLE_FILE_INFORMATION> {
    // SAFETY: plain integers; filled by the call.
    let mut info: fs::BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    if unsafe { fs::GetFileInformationByHandle(handle.as_raw_handle(), &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info)
}

fn attributes_of(handle: &impl AsRawHandle) -> io::Result<u32> {
    Ok(info(handle)?.dwFileAttributes)
}

/// The directory `name` of `dir`; a link, a junction or a non-directory is refused, never
/// followed.
pub fn open_dir_at(dir: &Dir, name: &OsStr) -> io::Result<Dir> {
    nt_open(
        dir,
        name,
        DIR_ACCESS,
        SHARE_DIR,
        nt::FILE_OPEN,
        nt::FILE_DIRECTORY_FILE,
    )
    .map_err(|e| {
        let link = e.raw_os_error() == Some(win::ERROR_STOPPED_ON_SYMLINK as i32)
            || e.raw_os_error() == Some(win::ERROR_DIRECTORY as i32);
        if link {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a symbolic link or not a directory (never followed)",
                    Path::new(name).display()
                ),
            )
        } else {
            e
        }
    })
}

/// Make the directory `name` in `dir` (it inherits its parent's ACL: `mode` is unix's).
pub fn make_dir_at(dir: &Dir, name: &OsStr, _mode: u32) -> io::Result<()> {
    nt_open(
        dir,
        name,
        fs::FILE_LIST_DIRECTORY,
        SHARE_ALL,
        nt::FILE_CREATE,
        nt::FILE_DIRECTORY_FILE,
    )
    .map(drop)
}

/// Open the entry `name` of `dir` as `how` says, never through a link.
pub fn open_at(dir: &Dir, name: &OsStr, how: How) -> io::Result<File> {
    open_shared(dir, name, how, SHARE_ALL)
}

fn open_shared(dir: &Dir, name: &OsStr, how: How, share: u32) -> io::Result<File> {
    let mut access = 0;
    if how.read {
        access |= fs::FILE_GENERIC_READ;
    }
    if how.append {
        // Without FILE_WRITE_DATA: every write goes to the end, as O_APPEND.
        access |= fs::FILE_GENERIC_WRITE & !fs::FILE_WRITE_DATA;
    } else if how.write {
        access |= fs::FILE_GENERIC_WRITE;
    }
    let disposition = match (how.create, how.exclusive, how.truncate) {
        (true, true, _) => nt::FILE_CREATE,
        (true, false, true) => nt::FILE_OVERWRITE_IF,
        (true, false, false) => nt::FILE_OPEN_IF,
        (false, _, true) => nt::FILE_OVERWRITE,
        (false, _, false) => nt::FILE_OPEN,
    };
    let handle = nt_open(
        dir,
        name,
        access,
        share,
        disposition,
        nt::FILE_NON_DIRECTORY_FILE,
    )?;
    Ok(File::from(handle))
}

/// Open the file `name` of `dir` to be replaced: no other program may hold it open for
/// writing (the open fails with a sharing violation, [`is_held_open`]) nor open it so while
/// this handle lives; renaming over it stays allowed.
pub fn open_to_replace(dir: &Dir, name: &OsStr) -> io::Result<File> {
    let share = fs::FILE_SHARE_READ | fs::FILE_SHARE_DELETE;
    open_shared(dir, name, How::READ, share)
}

/// Did an open fail because another program holds the file open for writing?
pub fn is_held_open(e: &io::Error) -> bool {
    e.raw_os_error() == Some(win::ERROR_SHARING_VIOLATION as i32)
}

/// Did an open fail because the entry is a link (any reparse point)?
pub fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(win::ERROR_STOPPED_ON_SYMLINK as i32)
}

/// Windows has no one-call confined open: the component walk does it.
pub fn open_beneath(_: &Dir, _: &Path) -> Option<File> {
    None
}

/// Mark the entry for deletion by its handle; POSIX semantics (the name goes at once) where
/// the file system has them.
fn delete(handle: &OwnedHandle) -> io::Result<()> {
    let ex = fs::FILE_DISPOSITION_INFO_EX {
        Flags: fs::FILE_DISPOSITION_FLAG_DELETE | fs::FILE_DISPOSITION_FLAG_POSIX_SEMANTICS,
    };
    // SAFETY: a valid handle and a struct of the size passed.
    let done = unsafe {
        fs::SetFileInformationByHandle(
            handle.as_raw_handle(),
            fs::FileDispositionInfoEx,
            (&ex as *const fs::FILE_DISPOSITION_INFO_EX).cast(),
            std::mem::size_of_val(&ex) as u32,
        )
    };
    if done != 0 {
        return Ok(());
    }
    let plain = fs::FILE_DISPOSITION_INFO { DeleteFile: true };
    // SAFETY: as above.
    let done = unsafe {
        fs::SetFileInformationByHandle(
            handle.as_raw_handle(),
            fs::FileDispositionInfo,
            (&plain as *const fs::FILE_DISPOSITION_INFO).cast(),
            std::mem::size_of_val(&plain) as u32,
        )
    };
    if done == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Remove the entry `name` of `dir` (a link itself, never what it points to).
pub fn unlink_at(dir: &Dir, name: &OsStr) -> io::Result<()> {
    let handle = open_entry(dir, name, fs::DELETE, nt::FILE_NON_DIRECTORY_FILE)?;
    delete(&handle)
}

/// Remove the directory `name` of `dir` if it is empty.
pub fn remove_dir_at(dir: &Dir, name: &OsStr) -> io::Result<()> {
    let handle = open_entry(dir, name, fs::DELETE, nt::FILE_DIRECTORY_FILE)?;
    delete(&handle)
}

/// The entry itself, a reparse point included (to delete, rename or stat it).
fn open_entry(dir: &Dir, name: &OsStr, access: u32, options: u32) -> io::Result<OwnedHandle> {
    match nt_open(dir, name, access, SHARE_ALL, nt::FILE_OPEN, options) {
        Err(e) if is_link_error(&e) => {
            // The link itself is what is asked for: open it again, keeping the handle.
            nt_open_link(dir, name, access, options)
        }
        other => other,
    }
}

/// Like [`nt_open`] but accepting a reparse point (the entry itself is opened, never its target).
fn nt_open_link(dir: &Dir, name: &OsStr, access: u32, options: u32) -> io::Result<OwnedHandle> {
    nt_create(dir, name, access, SHARE_ALL, nt::FILE_OPEN, options)
}

/// `FILE_RENAME_INFORMATION` and `FILE_LINK_INFORMATION` (the same layout): `to` in `dir`.
fn name_info(dir: &Dir, to: &OsStr, flags: u32) -> Vec<u64> {
    let wide: Vec<u16> = to.encode_wide().collect();
    let head = std::mem::offset_of!(fs::FILE_RENAME_INFO, FileName);
    let size = head + wide.len() * 2;
    // u64 words: aligned for the struct's handle.
    let mut buf = vec![0u64; size.div_ceil(8) + 1];
    let info = buf.as_mut_ptr().cast::<fs::FILE_RENAME_INFO>();
    // SAFETY: the buffer holds the header and the name after it.
    unsafe {
        (*info).Anonymous.Flags = flags;
        (*info).RootDirectory = dir.as_raw_handle();
        (*info).FileNameLength = (wide.len() * 2) as u32;
        std::ptr::copy_nonoverlapping(
            wide.as_ptr(),
            std::ptr::addr_of_mut!((*info).FileName).cast::<u16>(),
            wide.len(),
        );
    }
    buf
}

fn set_name(handle: &OwnedHandle, info: &[u64], class: i32) -> Result<(), i32> {
    // SAFETY: as in `nt_open`.
    let mut status_block: IO_STATUS_BLOCK = unsafe { std::mem::zeroed() };
    let status = unsafe {
        nt::NtSetInformationFile(
            handle.as_raw_handle(),
            &mut status_block,
            info.as_ptr().cast(),
            (info.len() * 8) as u32,
            class,
        )
    };
    if status < 0 {
        return Err(status);
    }
    Ok(())
}

/// Rename `from` to `to` in `dir`, replacing `to` (POSIX semantics where the file system has
/// them: an open handle on `to` does not stop it).
pub fn rename_at(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let handle = open_entry(dir, from, fs::DELETE, 0)?;
    let flags = FILE_RENAME_FLAG_REPLACE_IF_EXISTS | FILE_RENAME_FLAG_POSIX_SEMANTICS;
    let ex = name_info(dir, to, flags);
    match set_name(&handle, &ex, nt::FileRenameInformationEx) {
        Ok(()) => Ok(()),
        Err(_) => {
            // Older Windows and Wine: the classic rename (flags' first byte is ReplaceIfExists).
            let plain = name_info(dir, to, 1);
            set_name(&handle, &plain, nt::FileRenameInformation).map_err(nt_error)
        }
    }
}

/// A second name `to` for the file `from` of `dir`; fails (`AlreadyExists`) rather than
/// replace an existing name.
pub fn link_at(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let handle = open_entry(dir, from, 0, nt::FILE_NON_DIRECTORY_FILE)?;
    let info = name_info(dir, to, 0);
    set_name(&handle, &info, nt::FileLinkInformation).map_err(nt_error)
}

/// Windows has no atomic exchange of two names.
pub fn exchange_at(_: &Dir, _: &OsStr, _: &OsStr) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// The classic rename refused to replace a name some handle holds open (`Access denied`, as
/// Windows without POSIX rename semantics and Wine answer); closing the caller's own handle may
/// let it through.
pub fn replace_needs_close(e: &io::Error) -> bool {
    e.raw_os_error() == Some(win::ERROR_ACCESS_DENIED as i32)
}

pub fn unsupported(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported
}

fn filetime(t: win::FILETIME) -> std::time::SystemTime {
    let ticks = (u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime);
    // 100 ns ticks since 1601-01-01.
    const UNIX_EPOCH_TICKS: u64 = 116_444_736_000_000_000;
    let since = std::time::Duration::from_nanos(ticks.abs_diff(UNIX_EPOCH_TICKS) * 100);
    if ticks >= UNIX_EPOCH_TICKS {
        std::time::UNIX_EPOCH + since
    } else {
        std::time::UNIX_EPOCH - since
    }
}

fn stat_of(info: &fs::BY_HANDLE_FILE_INFORMATION) -> Stat {
    let attributes = info.dwFileAttributes;
    let kind = if attributes & fs::FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        Kind::Link
    } else if attributes & fs::FILE_ATTRIBUTE_DEVICE != 0 {
        Kind::Other
    } else if attributes & fs::FILE_ATTRIBUTE_DIRECTORY != 0 {
        Kind::Dir
    } else {
        Kind::File
    };
    Stat {
        id: (
            u64::from(info.dwVolumeSerialNumber),
            (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
        ),
        kind,
        links: u64::from(info.nNumberOfLinks),
        modified: filetime(info.ftLastWriteTime),
    }
}

/// What the entry `name` of `dir` is (a link not followed). Windows has no stat by name
/// relative to a handle: the entry is opened for its attributes only, which no share mode
/// refuses.
pub fn stat_at(dir: &Dir, name: &OsStr) -> io::Result<Stat> {
    let handle = open_entry(dir, name, 0, 0)?;
    Ok(stat_of(&info(&handle)?))
}

/// What the open `file` is.
pub fn stat(file: &File) -> io::Result<Stat> {
    Ok(stat_of(&info(file)?))
}

/// Read at `offset` through the handle `file` has (no new one).
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::windows::fs::FileExt;
    file.seek_read(buf, offset)
}

/// Windows cannot flush a directory through a read handle; NTFS logs the entries it changes
/// in its own journal, which is what a directory fsync gives on unix.
pub fn sync_dir(_: &Dir) -> io::Result<()> {
    Ok(())
}

/// The names in `dir`, listed through the handle.
pub fn list(dir: &Dir) -> io::Result<Vec<OsString>> {
    let mut names = Vec::new();
    let mut buf = vec![0u64; 8192];
    let mut class = fs::FileIdBothDirectoryRestartInfo;
    loop {
        // SAFETY: a directory handle with FILE_LIST_DIRECTORY and a buffer of the size passed.
        let done = unsafe {
            fs::GetFileInformationByHandleEx(
                dir.as_raw_handle(),
                class,
                buf.as_mut_ptr().cast(),
                (buf.len() * 8) as u32,
            )
        };
        if done == 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(win::ERROR_NO_MORE_FILES as i32) {
                return Ok(names);
            }
            return Err(e);
        }
        class = fs::FileIdBothDirectoryInfo;
        let mut at = 0usize;
        loop {
            // SAFETY: the call filled entries from the start, each at NextEntryOffset of the last.
            let entry = unsafe {
                &*(buf.as_ptr().cast::<u8>().add(at)).cast::<fs::FILE_ID_BOTH_DIR_INFO>()
            };
            let len = entry.FileNameLength as usize / 2;
            let name = unsafe { std::slice::from_raw_parts(entry.FileName.as_ptr(), len) };
            let name = OsString::from_wide(name);
            if name != "." && name != ".." {
                names.push(name);
            }
            if entry.NextEntryOffset == 0 {
                break;
            }
            at += entry.NextEntryOffset as usize;
        }
    }
}

/// Block until this process holds the exclusive lock of `file` (held until it is closed).
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    // SAFETY: zero is OVERLAPPED's "from offset 0".
    let mut overlapped: windows_sys::Win32::System::IO::OVERLAPPED = unsafe { std::mem::zeroed() };
    // SAFETY: a valid handle; the whole range, blocking.
    let done = unsafe {
        fs::LockFileEx(
            file.as_raw_handle(),
            fs::LOCKFILE_EXCLUSIVE_LOCK,
            0,
            u32::MAX,
            u32::MAX,
            &mut overlapped,
        )
    };
    if done == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the process `pid` is gone (no such process, or it has exited).
pub fn process_gone(pid: u32) -> bool {
    use windows_sys::Win32::System::Threading as th;
    // SAFETY: a query-only handle, closed below.
    let handle = unsafe { th::OpenProcess(th::PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if handle.is_null() {
        return io::Error::last_os_error().raw_os_error()
            == Some(win::ERROR_INVALID_PARAMETER as i32);
    }
    // SAFETY: the handle just opened.
    let handle = unsafe { OwnedHandle::from_raw_handle(handle) };
    let mut code = 0u32;
    // SAFETY: a process handle with query rights.
    let known = unsafe { th::GetExitCodeProcess(handle.as_raw_handle(), &mut code) } != 0;
    known && code != win::STILL_ACTIVE as u32
}

fn final_path(handle: &impl AsRawHandle) -> String {
    let mut buf = vec![0u16; 1024];
    // SAFETY: a buffer of the length passed.
    let n = unsafe {
        fs::GetFinalPathNameByHandleW(
            handle.as_raw_handle(),
            buf.as_mut_ptr(),
            buf.len() as u32,
            fs::FILE_NAME_NORMALIZED,
        )
    } as usize;
    String::from_utf16_lossy(&buf[..n.min(buf.len())])
}

/// A path that reopens the file `file` has open (the tests' race hook hands it to a script).
pub fn reopen_path(file: &File) -> String {
    final_path(file)
}

/// A path naming the directory `dir` (for a test's script to start in).
#[cfg(debug_assertions)]
pub fn dir_path(dir: &Dir) -> String {
    final_path(dir)
}

/// A new output gets its directory's inherited ACL, as a plain create gives it: nothing to do.
pub fn plain_permissions(_: &File) -> io::Result<()> {
    Ok(())
}

/// Make the directory `path` and its missing parents (they inherit their parent's ACL).
pub fn make_private_dirs(path: &Path) -> io::Result<()> {
    std::fs::create_dir_all(path)
}

/// What a non-regular file is, in words.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// A file the user named (links followed: their choice), opened for reading.
pub fn open_named(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// The file at `path` for reading, its last component never a link (nor a junction).
pub fn open_nofollow(path: &Path) -> io::Result<File> {
    use std::os::windows::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(fs::FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)?;
    if attributes_of(&file)? & fs::FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(link_error());
    }
    Ok(file)
}

/// What the content cache keys a file's metadata by besides its size: the last write time in
/// nanoseconds since 1970 and, for want of the file index in `Metadata`, the creation time
/// (a file replaced by an editor's save gets a new one, except within NTFS's 15-second
/// "tunnelling" of a name deleted and made again; the hash is compared whenever the key differs).
pub fn cache_key(meta: &std::fs::Metadata) -> (i64, u64) {
    use std::os::windows::fs::MetadataExt;
    let ns = (meta.last_write_time() as i64 - 116_444_736_000_000_000).saturating_mul(100);
    (ns, meta.creation_time())
}

/// The tool's own binary as the cache names it: size, modification time, file index, volume.
pub fn build_identity(exe: &Path) -> io::Result<(u64, i64, i64, u64, u64)> {
    let file = File::open(exe)?;
    let stat = stat(&file)?;
    let since = stat
        .modified
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Ok((
        file.metadata()?.len(),
        since.as_secs() as i64,
        i64::from(since.subsec_nanos()),
        stat.id.1,
        stat.id.0,
    ))
}

/// Does this error code say no handle is left (`ERROR_TOO_MANY_OPEN_FILES`)?
pub fn out_of_files(code: i32) -> bool {
    code == win::ERROR_TOO_MANY_OPEN_FILES as i32
}

/// Does this error code say memory ran out?
pub fn out_of_memory(code: i32) -> bool {
    code == win::ERROR_NOT_ENOUGH_MEMORY as i32 || code == win::ERROR_OUTOFMEMORY as i32
}

/// Windows has no per-process limit on handles that a user raises.
pub fn open_files_limit() -> Option<u64> {
    None
}
