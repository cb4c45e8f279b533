use super::*;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;

fn tree(content: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.py");
    std::fs::write(&path, content).unwrap();
    (dir, path)
}

fn write(
    dir: &tempfile::TempDir,
    original: &[u8],
    new: &str,
    options: &WriteOptions,
) -> Result<(), WriteError> {
    write_confined(
        dir.path(),
        Path::new("a.py"),
        original,
        new.as_bytes(),
        options,
    )
}

// Unix only: modes.
#[cfg(unix)]
#[test]
fn keeps_permissions_and_refuses_changed_files() {
    let (dir, path) = tree("old");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    write(&dir, b"old", "new", &WriteOptions::default()).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o750);
    assert!(matches!(
        write(&dir, b"old", "x", &WriteOptions::default()),
        Err(WriteError::Changed)
    ));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    // The run's record of its temp files (`.gpu-homogenize/temp/PID`) is the run's to forget.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name() != ".gpu-homogenize")
        .collect();
    assert_eq!(names.len(), 1, "no temp file left behind");
}

#[test]
fn refuses_read_only_files_and_backs_up_without_overwriting() {
    let (dir, path) = tree("old");
    let backups = dir.path().join("bak");
    let options = WriteOptions {
        backup_dir: Some(backups.clone()),
        ..WriteOptions::default()
    };
    write(&dir, b"old", "new", &options).unwrap();
    write(&dir, b"new", "newer", &options).unwrap();
    assert_eq!(
        std::fs::read_to_string(backups.join("a.py")).unwrap(),
        "old"
    );
    assert_eq!(
        std::fs::read_to_string(backups.join("a.py.~1~")).unwrap(),
        "new"
    );
    #[cfg(unix)]
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    #[cfg(windows)]
    {
        let mut read_only = std::fs::metadata(&path).unwrap().permissions();
        read_only.set_readonly(true);
        std::fs::set_permissions(&path, read_only).unwrap();
    }
    assert!(matches!(
        write(&dir, b"newer", "x", &WriteOptions::default()),
        Err(WriteError::ReadOnly)
    ));
}

#[test]
fn refuses_hard_links_unless_asked() {
    let (dir, path) = tree("old");
    std::fs::hard_link(&path, dir.path().join("b.py")).unwrap();
    assert!(matches!(
        write(&dir, b"old", "new", &WriteOptions::default()),
        Err(WriteError::HardLinks(2))
    ));
    let options = WriteOptions {
        break_hardlinks: true,
        ..WriteOptions::default()
    };
    write(&dir, b"old", "new", &options).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.py")).unwrap(),
        "old"
    );
}

// Unix only: links, FIFOs, modes or signals made through unix calls.
#[cfg(unix)]
#[test]
fn never_writes_through_a_symlinked_directory() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("a.py"), "old").unwrap();
    let root = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
    for rel in ["link/a.py", "link/../a.py"] {
        let r = write_confined(
            root.path(),
            Path::new(rel),
            b"old",
            b"new",
            &WriteOptions::default(),
        );
        assert!(r.is_err(), "{rel}");
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("a.py")).unwrap(),
        "old"
    );
}

// Unix only: links, FIFOs, modes or signals made through unix calls.
#[cfg(unix)]
#[test]
fn keeps_xattrs() {
    let (dir, path) = tree("old");
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let set = unsafe { libc::setxattr(c.as_ptr(), c"user.k".as_ptr(), b"v".as_ptr().cast(), 1, 0) };
    if set != 0 {
        eprintln!("no user xattrs here: skipping");
        return;
    }
    write(&dir, b"old", "new", &WriteOptions::default()).unwrap();
    let mut buf = [0u8; 8];
    let got = unsafe { libc::getxattr(c.as_ptr(), c"user.k".as_ptr(), buf.as_mut_ptr().cast(), 8) };
    assert_eq!(&buf[..got.max(0) as usize], b"v");
}

#[test]
fn temp_names_carry_the_pid() {
    assert_eq!(
        temp::owner_pid(std::ffi::OsStr::new(".gpu-homogenize-42-7.tmp")),
        Some(42)
    );
    assert_eq!(
        temp::owner_pid(std::ffi::OsStr::new(".gpu-homogenize-abcdef.tmp")),
        None
    );
}
