//! Bad input: each file gets a clear message with its path, is never modified, and the other
//! files are still processed; the run exits 2.

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;

use crate::common::{self, copy_fixture, gh, python_compiles, run};

#[test]
fn scan_reports_each_bad_file_and_still_scans_the_good_one() {
    let tree = copy_fixture("bad");
    let out = run(gh(tree.path()).args(["scan"]));
    assert_eq!(out.code, 2, "errors exit 2");
    insta::assert_snapshot!("bad_scan_stderr", out.stderr);
    assert!(
        out.stdout.contains("good.py:"),
        "the good file is still scanned: {}",
        out.stdout
    );
}

#[test]
fn fix_never_touches_bad_files_and_fixes_the_good_one() {
    let tree = copy_fixture("bad");
    let before: Vec<(String, Vec<u8>)> = ["syntax_error.py", "not_utf8.py", "binary.py"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read(tree.path().join(f)).unwrap()))
        .collect();
    let out = run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(out.code, 2);
    for (file, bytes) in before {
        assert_eq!(
            std::fs::read(tree.path().join(&file)).unwrap(),
            bytes,
            "{file} untouched"
        );
    }
    let good = std::fs::read_to_string(tree.path().join("good.py")).unwrap();
    assert!(good.contains("\"cuda:0\""), "{good}");
    assert!(out.stdout.contains("Fixed 1 file "), "{}", out.stdout);
}

#[test]
fn json_carries_the_error_of_each_bad_file() {
    let tree = copy_fixture("bad");
    let out = run(gh(tree.path()).args(["scan", "--format", "json"]));
    assert_eq!(out.code, 2);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let error_of = |path: &str| {
        let files = doc["files"].as_array().unwrap();
        let file = files.iter().find(|f| f["path"] == path).unwrap();
        assert_eq!(file["status"], "error");
        file["error"].as_str().unwrap().to_string()
    };
    assert!(
        error_of("syntax_error.py").starts_with("syntax error at 6:1: "),
        "{}",
        error_of("syntax_error.py")
    );
    assert!(error_of("not_utf8.py").contains("not valid UTF-8"));
    assert!(error_of("binary.py").contains("binary file"));
    assert_eq!(doc["summary"]["errors"], 3);
}

#[test]
fn a_read_only_file_is_an_error_for_that_file_only() {
    let tree = copy_fixture("superwhisper-v6");
    let locked = tree.path().join("STT/vad_manager.py");
    let original = std::fs::read(&locked).unwrap();
    #[cfg(unix)]
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o444)).unwrap();
    #[cfg(windows)]
    {
        let mut read_only = std::fs::metadata(&locked).unwrap().permissions();
        read_only.set_readonly(true);
        std::fs::set_permissions(&locked, read_only).unwrap();
    }
    let out = run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains(&format!(
            "error: {}: read-only file; not rewritten",
            common::shown("STT/vad_manager.py")
        )),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read(&locked).unwrap(), original);
    assert!(out.stdout.contains("Fixed 39 files "), "{}", out.stdout);
}

// Unix only: links, FIFOs, modes or signals made through unix calls.
#[cfg(unix)]
#[test]
fn symlinks_are_skipped_not_followed() {
    let tree = copy_fixture("bad");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("outside.py");
    std::fs::write(&target, "import torch\nDEVICE = 'cuda:1'\n").unwrap();
    std::os::unix::fs::symlink(&target, tree.path().join("link.py")).unwrap();
    let out =
        run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let link = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "link.py")
        .unwrap()
        .clone();
    assert_eq!(link["status"], "skipped");
    assert_eq!(link["reason"], "symbolic link (never followed)");
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "import torch\nDEVICE = 'cuda:1'\n"
    );
}

#[test]
fn files_over_the_size_limit_are_refused() {
    let tree = copy_fixture("bad");
    let out = run(gh(tree.path()).args(["scan", "--max-file-size", "20", "good.py"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("error: good.py: larger than the limit"),
        "{}",
        out.stderr
    );
}

/// From the Rust trial of session 60 (TensorFlow's generated op wrappers, 4.8 and 7.9 MB): a
/// file over the limit is read in chunks through the prefilter, never whole. Without a GPU
/// word in it, it holds no GPU code as surely as a small file without one: `no_gpu_code`, and
/// the run is not an error; with one (a word across two chunks too), it stays an error naming
/// the word.
#[test]
fn a_file_over_the_limit_without_gpu_words_has_no_gpu_code() {
    let dir = crate::common::tree();
    let root = dir.path();
    let mut generated = String::from("// generated\n");
    while generated.len() < 3 << 20 {
        generated.push_str("pub fn op_add(a: i32, b: i32) -> i32 {\n    a + b\n}\n");
    }
    crate::common::write(root, "src/ops.rs", &generated);
    // `set_device(` astride the first 1 MiB chunk's end.
    let call = "\nfn f(o: &mut Op) { o.set_device(\"/gpu:1\"); }\n";
    let before = call.find("set_device").unwrap();
    let mut astride = format!("//{}", "x".repeat((1 << 20) - 5 - before - 2));
    astride.push_str(call);
    assert_eq!(astride.find("set_device"), Some((1 << 20) - 5));
    astride.push_str(&"// padding\n".repeat(200_000));
    crate::common::write(root, "src/raw.rs", &astride);
    crate::common::write(root, "src/lib.rs", "pub mod ops;\npub mod raw;\n");
    let out = run(gh(root).args([
        "scan",
        "--no-cache",
        "--max-file-size",
        "1000000",
        "--format",
        "json",
        "src/ops.rs",
    ]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["files"][0]["status"], "no_gpu_code", "{doc}");
    let out = run(gh(root).args([
        "scan",
        "--no-cache",
        "--max-file-size",
        "1000000",
        "src/raw.rs",
    ]));
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr.contains(&format!(
            "error: {}: larger than the limit",
            common::shown("src/raw.rs")
        )) && out.stderr.contains("it holds `set_device(`"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_missing_path_is_an_error_with_its_name() {
    let tree = copy_fixture("bad");
    let out = run(gh(tree.path()).args(["scan", "nope.py"]));
    assert_eq!(out.code, 2);
    // The system's own words: "No such file or directory" on unix, "(os error 2)" after
    // Windows' (which differ between Windows and Wine).
    #[cfg(unix)]
    let reason = "error: nope.py: No such file or directory";
    #[cfg(windows)]
    let reason = "(os error 2)";
    assert!(
        out.stderr.contains("error: nope.py: ") && out.stderr.contains(reason),
        "{}",
        out.stderr
    );
}

#[test]
fn a_file_that_cannot_be_read_is_an_error_with_its_reason() {
    let tree = copy_fixture("bad");
    let fifo = tree.path().join("pipe.py");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("mkfifo unavailable: skipping");
        return;
    }
    let out = run(gh(tree.path()).args(["scan", "pipe.py", "good.py"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("error: pipe.py: cannot read: not a regular file"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("good.py:"),
        "the other file is still scanned"
    );
}

#[test]
fn rust_lexer_errors_point_at_the_unclosed_token() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(
        dir.path().join("eoi.rs"),
        "fn main() {\n    let d = candle_core::Device::new_cuda(1);\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("lex.rs"),
        "fn main() {\n    let d = candle_core::Device::new_cuda(1);\n    let s = \"open;\n}\n",
    )
    .unwrap();
    let out = run(gh(dir.path()).args(["scan", "."]));
    assert_eq!(out.code, 2);
    for (file, at) in [("eoi.rs", "1:11"), ("lex.rs", "3:13")] {
        assert!(
            out.stderr.contains(&format!(
                "error: {file}: syntax error at {at}: the tokens cannot be read from here"
            )),
            "{}",
            out.stderr
        );
    }
}

#[cfg_attr(
    windows,
    ignore = "runs the Linux python3, which a Windows program under Wine cannot start"
)]
#[test]
fn a_latin1_file_is_fixed_and_written_back_in_latin1() {
    let tree = tempfile::tempdir().unwrap();
    let path = tree.path().join("legacy.py");
    let original = b"# -*- coding: latin-1 -*-\n# r\xe9glage: carte \xab 1 \xbb\nimport torch\nx = torch.zeros(1).cuda(1)\n";
    std::fs::write(&path, original).unwrap();
    let out = run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let bytes = std::fs::read(&path).unwrap();
    // Every byte is one Latin-1 character: the text survives, the header is written in it.
    let text: String = bytes.iter().map(|&b| char::from(b)).collect();
    assert!(
        text.starts_with("# -*- coding: latin-1 -*-\n# réglage: carte « 1 »\n"),
        "{text}"
    );
    assert!(text.contains("# GPU selection (gpu-homogenize)"), "{text}");
    assert!(
        text.ends_with("\nimport torch\nx = torch.zeros(1).cuda(0)\n"),
        "{text}"
    );
    assert!(
        !text.contains('🚨') && std::str::from_utf8(&bytes).is_err(),
        "{text}"
    );
    assert_eq!(python_compiles(tree.path(), &["legacy.py"]), Ok(()));
    let again = run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(again.code, 0, "{}", again.stdout);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "a second fix changes nothing"
    );
}

#[test]
fn an_encoding_the_tool_cannot_write_back_is_an_error_naming_the_file() {
    let tree = tempfile::tempdir().unwrap();
    let original =
        b"# coding: koi8-r\n# \xd4\xc5\xd3\xd4\nimport torch\nx = torch.zeros(1).cuda(1)\n";
    std::fs::write(tree.path().join("cyr.py"), original).unwrap();
    let out = run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("error: cyr.py: declares `coding: koi8-r`, an encoding this tool cannot read and write back"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read(tree.path().join("cyr.py")).unwrap(), original);
}

#[cfg_attr(
    windows,
    ignore = "runs the Linux python3, which a Windows program under Wine cannot start"
)]
#[test]
fn a_future_import_below_a_hand_written_header_is_a_fixable_finding() {
    let tree = tempfile::tempdir().unwrap();
    let path = tree.path().join("train.py");
    std::fs::write(
        &path,
        "\"\"\"Train.\n🚨 CONFIGURATION GPU: RTX 3090 (CUDA:1) OBLIGATOIRE\n\"\"\"\nimport os\n\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nos.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:1024'\n\nfrom __future__ import annotations\nimport torch\n",
    )
    .unwrap();
    assert!(python_compiles(tree.path(), &["train.py"]).is_err());
    let scan = run(gh(tree.path()).args(["scan", "--format", "json"]));
    assert_eq!(scan.code, 1, "{}", scan.stdout);
    let doc: serde_json::Value = serde_json::from_str(&scan.stdout).unwrap();
    let file = &doc["files"][0];
    assert_eq!(file["status"], "non_compliant");
    assert_eq!(file["findings"][0]["rule"], "GH015");
    assert_eq!(file["findings"][0]["line"], 10);
    assert_eq!(file["findings"][0]["fixable"], true);
    let out = run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert!(
        fixed.starts_with("\"\"\"Train.\n🚨 CONFIGURATION GPU: RTX 3090 (CUDA:1) OBLIGATOIRE\n\"\"\"\nfrom __future__ import annotations\nimport os\n"),
        "{fixed}"
    );
    assert!(fixed.ends_with("1024'\n\nimport torch\n"), "{fixed}");
    assert_eq!(python_compiles(tree.path(), &["train.py"]), Ok(()));
    let again = run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal"]));
    assert_eq!(again.code, 0, "{}", again.stdout);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), fixed);
}

/// A file that cannot be parsed fails CI with something to read in every format: a GitHub
/// annotation, a SARIF tool-execution notification (the run unsuccessful), the text summary
/// ("1 error"). A retired rule code is named as retired.
#[test]
fn an_unparsable_file_is_reported_in_every_format() {
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(tree.path().join("bad.py"), "import torch\ndef f(:\n").unwrap();
    let github = run(gh(tree.path()).args(["scan", "--format", "github", "."]));
    assert_eq!(github.code, 2);
    assert!(
        github.stdout.starts_with(
            "::error title=gpu-homogenize (error),file=bad.py,line=2,col=7::bad.py: syntax error at 2:7"
        ),
        "{}",
        github.stdout
    );
    let sarif = run(gh(tree.path()).args(["scan", "--format", "sarif", "."]));
    let doc: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    let invocation = &doc["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    assert!(
        invocation["toolExecutionNotifications"][0]["message"]["text"]
            .as_str()
            .unwrap()
            .starts_with("bad.py: syntax error")
    );
    let text = run(gh(tree.path()).args(["scan", "."]));
    assert!(
        text.stdout.ends_with("1 file: 1 error.\n"),
        "{}",
        text.stdout
    );
    let retired = run(gh(tree.path()).args(["rule", "GH003"]));
    assert_eq!(retired.code, 2);
    assert!(
        retired.stderr.contains("`GH003` is retired"),
        "{}",
        retired.stderr
    );
}

/// ruff's conventions: `--exit-zero` (findings do not fail; errors still do) and
/// `--output-format` as another name of `--format`.
#[test]
fn exit_zero_and_output_format_as_ruff_has_them() {
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(
        tree.path().join("a.py"),
        "import torch\nx = torch.zeros(1).cuda(1)\n",
    )
    .unwrap();
    assert_eq!(run(gh(tree.path()).args(["scan", "."])).code, 1);
    assert_eq!(
        run(gh(tree.path()).args(["scan", "--exit-zero", "."])).code,
        0
    );
    let json = run(gh(tree.path()).args(["scan", "--output-format", "json", "."]));
    assert!(
        serde_json::from_str::<serde_json::Value>(&json.stdout).is_ok(),
        "{}",
        json.stdout
    );
    std::fs::write(tree.path().join("bad.py"), "import torch\ndef f(:\n").unwrap();
    assert_eq!(
        run(gh(tree.path()).args(["scan", "--exit-zero", "."])).code,
        2
    );
}

/// Deep but valid files across a tree: the project indexes parse them in parallel, on threads
/// with the CPU stage's stack (a default thread overflowed and aborted the whole run, exit 134).
#[test]
fn deep_files_in_a_tree_never_abort_the_indexes() {
    let tree = tempfile::tempdir().unwrap();
    let head_rs = "fn main() { let d = \"cuda:1\"; ";
    let files = [
        (
            "generics.rs",
            format!(
                "{head_rs}let x: {}u8{} = todo!(); }}\n",
                "Vec<".repeat(275),
                ">".repeat(275)
            ),
        ),
        (
            "blocks.rs",
            format!("{head_rs}{}{} }}\n", "{".repeat(415), "}".repeat(415)),
        ),
        (
            "not.py",
            format!("import torch\nx = {}1\n", "not ".repeat(200_000)),
        ),
        (
            "power.py",
            format!("import torch\nx = {}2\n", "2**".repeat(200_000)),
        ),
        (
            "parens.py",
            format!(
                "import torch\nx = {}1{}\n",
                "(".repeat(5000),
                ")".repeat(5000)
            ),
        ),
        (
            "lambda.py",
            format!("import torch\nx = {}2\n", "lambda: ".repeat(200_000)),
        ),
    ];
    for (name, text) in &files {
        std::fs::write(tree.path().join(name), text).unwrap();
    }
    std::fs::write(
        tree.path().join("good.py"),
        "import torch\nx = torch.zeros(1).cuda(1)\n",
    )
    .unwrap();
    let out = run(gh(tree.path()).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("overflowed"), "{}", out.stderr);
    assert!(
        std::fs::read_to_string(tree.path().join("good.py"))
            .unwrap()
            .contains("PCI_BUS_ID"),
        "the good file beside them is fixed"
    );
}
