//! Helpers shared by the CLI tests: fixture copies and running the binary.

pub mod mutants;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// A temp copy of a fixture tree; the copy is what tests rewrite.
pub fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture(name), dir.path());
    dir
}

/// Copy a tree, leaving out a journal a developer's own runs may have left in the fixture.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == ".gpu-homogenize" {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `root`, relative, sorted.
pub fn files_under(root: &Path, ext: &str) -> Vec<String> {
    let mut out = Vec::new();
    collect(root, root, ext, &mut out);
    out.sort();
    out
}

fn collect(root: &Path, dir: &Path, ext: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != ".gpu-homogenize") {
                collect(root, &path, ext, out);
            }
        } else if path.extension().is_some_and(|e| e == ext) {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push(rel);
        }
    }
}

/// An empty temp tree with a `.git`, so the binary takes it as the root.
pub fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    dir
}

/// Write `text` at `rel` under `root`, making the directories above it.
pub fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Each file's status in the JSON document a command printed.
pub fn statuses(json: &str) -> std::collections::BTreeMap<String, String> {
    let doc: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The rule codes of one file's findings in a JSON report (an object of `files[]`), in order.
pub fn rule_codes(file: &serde_json::Value) -> Vec<String> {
    file["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings: {file}"))
        .iter()
        .map(|f| f["rule"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The object of one file in a JSON report (`files[]`), by its path; the test fails naming the
/// report when the file is not there.
pub fn file_in(report: &serde_json::Value, rel: &str) -> serde_json::Value {
    report["files"]
        .as_array()
        .and_then(|files| files.iter().find(|f| f["path"] == rel))
        .unwrap_or_else(|| panic!("{rel} is not in the report: {report}"))
        .clone()
}

/// The rules of a file's findings in a JSON report, in order.
pub fn rules_of(report: &serde_json::Value, rel: &str) -> Vec<String> {
    file_in(report, rel)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

/// The binary, run in `cwd`, with no GPU driver visible and no journal.
pub fn gh(cwd: &Path) -> Command {
    let mut cmd = Command::cargo_bin("gpu-homogenize").unwrap();
    cmd.current_dir(cwd)
        .env_remove("GPU_HOMOGENIZE_DRIVER_DIR")
        .env("LD_LIBRARY_PATH", "/nonexistent");
    cmd
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(cmd: &mut Command) -> Run {
    let out = output(cmd);
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The command's output, its start tried again where it failed before anything of the tool ran:
/// Wine 8 under load fails to start a process at all ("Internal error.", OS error 1359, seen in
/// CI with four tests starting the binary at once); and on Linux a binary a test has just copied
/// is refused with ETXTBSY ("Text file busy", seen in CI) while another test's child, forked
/// while the copy's write descriptor was open, has not yet reached its `exec`.
pub fn output(cmd: &mut Command) -> std::process::Output {
    let mut tries = 0;
    loop {
        match cmd.output() {
            Err(e)
                if ((cfg!(windows) && e.raw_os_error() == Some(1359))
                    || e.kind() == std::io::ErrorKind::ExecutableFileBusy)
                    && tries < 5 =>
            {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            other => break other.expect("run gpu-homogenize"),
        }
    }
}

/// CPython's verdict on each file, read as bytes (so its coding cookie counts): `Err` with
/// Python's message for the first that does not compile. Never writes `__pycache__`.
pub fn python_compiles(dir: &Path, files: &[&str]) -> Result<(), String> {
    let script =
        "import sys\nfor f in sys.argv[1:]:\n    compile(open(f, 'rb').read(), f, 'exec')\n";
    let out = std::process::Command::new("python3")
        .current_dir(dir)
        .arg("-c")
        .arg(script)
        .args(files)
        .output()
        .expect("python3 runs");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Run `body` as the test `name` (its path in this binary, `module::test`) in a child process of
/// this test binary, for a test whose in-process run changes what the process passes on to the
/// programs the other tests start: a lease taken in process ignores SIGIO, and an ignored signal
/// stays ignored across `exec`, so the binary's own handling of it would go unchecked.
pub fn in_own_process(name: &str, body: impl FnOnce()) {
    const CHILD: &str = "GPU_HOMOGENIZE_IT_CHILD";
    if std::env::var_os(CHILD).is_some_and(|n| n == name) {
        return body();
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads", "1"])
        .env(CHILD, name)
        .output()
        .expect("the test binary runs");
    // Shown only when this test fails; prefixed, so no `test result:` line is counted twice.
    for line in String::from_utf8_lossy(&out.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&out.stderr).lines())
    {
        println!("[{name}] {line}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\nrunning 1 test\n"),
        "{name} is not one test of this binary"
    );
    assert!(out.status.success(), "{name} failed in its own process");
}

/// A relative path as text output prints it: `/`-joined on unix, `\`-joined on Windows (as a
/// Windows user reads it; JSON and SARIF keep `/`).
pub fn shown(rel: &str) -> String {
    if cfg!(windows) {
        rel.replace('/', "\\")
    } else {
        rel.to_string()
    }
}

/// Text output with its paths `/`-joined, as a snapshot of the Linux output holds them: on
/// Windows every `\` becomes `/` (for output whose Linux form has no `\` of its own); the
/// text itself on unix.
pub fn unix_paths(text: &str) -> String {
    if cfg!(windows) {
        text.replace('\\', "/")
    } else {
        text.to_string()
    }
}

/// Text output with the path of each location (`path:LINE:COL: ` leading a line, after its
/// indent) `/`-joined, as the Linux output prints it; the rest of each line as it is (a quoted
/// source line or a diff keeps its own `\`). The text itself on unix.
pub fn unix_locations(text: &str) -> String {
    if !cfg!(windows) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        match location_end(body) {
            Some(end) if !body[..end].contains(": ") => {
                out.push_str(indent);
                out.push_str(&body[..end].replace('\\', "/"));
                out.push_str(&body[end..]);
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// Where the path of a `path:LINE:COL: ` at the start of `line` ends.
fn location_end(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    for (i, _) in line.match_indices(':') {
        let digits = |from: usize| {
            bytes[from..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count()
        };
        let line_digits = digits(i + 1);
        if line_digits == 0 || bytes.get(i + 1 + line_digits) != Some(&b':') {
            continue;
        }
        let col = i + 2 + line_digits;
        let col_digits = digits(col);
        if col_digits > 0 && line[col + col_digits..].starts_with(": ") {
            return Some(i);
        }
    }
    None
}

/// `text` with every form in which a command prints the directory `root` replaced by `with`:
/// as the platform writes it, JSON-escaped (on Windows each `\` doubled) and as the path of a
/// `file://` URI (on Windows `/C:/…`). On unix the three are one.
pub fn redact_path(text: &str, root: &Path, with: &str) -> String {
    let plain = root.to_str().expect("a UTF-8 temp path");
    let json = serde_json::to_string(plain).unwrap();
    let json = &json[1..json.len() - 1];
    let uri = if cfg!(windows) {
        format!("/{}", plain.replace('\\', "/"))
    } else {
        plain.to_string()
    };
    let text = text
        .replace(json, with)
        .replace(plain, with)
        .replace(&uri, with);
    if cfg!(windows) {
        // The separator right after the root, as on unix: `[REPO]\\svc` is `[REPO]/svc`.
        text.replace(&format!("{with}\\\\"), &format!("{with}/"))
            .replace(&format!("{with}\\"), &format!("{with}/"))
    } else {
        text
    }
}

/// `cargo <args> --offline --quiet` in the workspace at `ws`, its crates.io dependencies
/// patched with the stub crates of `fixtures/rust-stubs` (`stubs`: which), the target dir
/// under `target`: the output, or the failure with cargo's stderr. A warning fails it too
/// (a rewrite stays warning-free).
pub fn cargo_with_stubs(ws: &Path, target: &Path, stubs: &[&str], args: &[&str]) -> String {
    let manifest = std::fs::read_to_string(ws.join("Cargo.toml")).unwrap();
    if !manifest.contains("[patch.crates-io]") {
        let patch: String = stubs
            .iter()
            .map(|c| {
                let at = fixture("rust-stubs").join(c);
                format!("{c} = {{ path = {:?} }}\n", at.to_string_lossy())
            })
            .collect();
        std::fs::write(
            ws.join("Cargo.toml"),
            format!("{manifest}\n[patch.crates-io]\n{patch}"),
        )
        .unwrap();
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(args)
        .args(["--offline", "--quiet"])
        .current_dir(ws)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("CUDA_DEVICE_ORDER")
        .env_remove("PYTORCH_CUDA_ALLOC_CONF")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "cargo {args:?}: {stderr}");
    let warnings = stderr.lines().filter(|l| l.starts_with("warning"));
    assert_eq!(warnings.count(), 0, "cargo {args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// `fix` on the tree (no GPU check, no journal, no cache), as its JSON report and exit status.
pub fn fix_json(root: &Path) -> (serde_json::Value, i32) {
    let out = run(gh(root).args([
        "fix",
        "--gpu",
        "off",
        "--no-journal",
        "--no-cache",
        "--format",
        "json",
        ".",
    ]));
    let doc = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    (doc, out.code)
}
